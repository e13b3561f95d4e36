"""The user-space driver above the narrow KFD interface: topology, memory, signals, PM4 compute and SDMA copy queues.

The same code drives a real GPU (HostKFD) and the virtual one (MockKFD): it only speaks through `KFD`."""
from __future__ import annotations
import ctypes, time
from dataclasses import dataclass
from tg.uop import cdiv, round_up
from tg.amd import hw
from tg.amd.kfd import (KFD, TOPOLOGY, FaultingWave, AcquireVM, AllocMemory, CreateEvent, CreateQueue, DestroyQueue, EventData, FreeMemory,
                        MapMemory, WaitEvents, HW_EXCEPTION_ECC, HW_EXCEPTION_GPU_HANG, EVENT_HW_EXCEPTION, EVENT_MEMORY, MEM_GTT, MEM_VRAM,
                        MEM_WRITABLE, MEM_EXECUTABLE, MEM_PUBLIC,
                        MEM_COHERENT, MEM_UNCACHED, MAP_ANONYMOUS, MAP_FIXED, MAP_NORESERVE, MAP_PRIVATE, MAP_SHARED, PROT_NONE, PROT_READ,
                        PROT_WRITE, QUEUE_TYPE_COMPUTE, QUEUE_TYPE_SDMA)

PAGE = 0x1000
WAVE32 = 32

def parse_properties(text: str) -> dict[str, int]:
  return {k: int(v) for k, v in (line.split() for line in text.splitlines() if len(line.split()) == 2)}

@dataclass
class KFDAlloc:
  """One KFD allocation (AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, mapped on this GPU): `va` is its GPU virtual address, also where the
  host sees it when `host` (one address space), `handle` KFD's name for it. Not a tg.codegen Buffer (a device-independent
  tensor buffer): an AMD Buffer's opaque is a KFDAlloc, or a slice of one (AMDAllocator.offset)."""
  va: int
  size: int
  handle: int
  host: bool
  def view(self, offset: int = 0, size: int | None = None) -> memoryview:
    if not self.host: raise RuntimeError(f"GPU memory at {self.va:#x} is not mapped on the host")
    n = self.size - offset if size is None else size
    return memoryview((ctypes.c_uint8 * n).from_address(self.va + offset)).cast("B")
  def write_dwords(self, words: list[int], offset: int = 0) -> None:
    """Packets (or any 32-bit words) into host-visible GPU memory."""
    view = self.view(offset, len(words) * 4).cast("I")
    for i, w in enumerate(words): view[i] = w & 0xFFFFFFFF

@dataclass(frozen=True)
class ScratchLayout:
  """A compute queue's scratch (private segment) backing: `waves` slots per shader engine on `ses` engines, `wave_bytes` each
  (one wave's 32 work-items). COMPUTE_TMPRING_SIZE describes it to the GPU; both the driver and the virtual GPU read it here."""
  waves: int
  ses: int
  wave_bytes: int
  @property
  def nbytes(self) -> int: return self.waves * self.ses * self.wave_bytes
  @property
  def lane_bytes(self) -> int: return self.wave_bytes // WAVE32
  @property
  def tmpring(self) -> int: return self.waves | self.wave_bytes // hw.SCRATCH_UNIT << hw.TMPRING_WAVESIZE_SHIFT

  @classmethod
  def for_lanes(cls, props: dict[str, int], gc_version: tuple[int, ...], lane_bytes: int) -> ScratchLayout:
    """Room for `lane_bytes` per work-item in every wave slot the GPU has (CUs x scratch slots per CU), the most WAVES holds."""
    wave_bytes = round_up(lane_bytes * WAVE32, hw.SCRATCH_UNIT)
    if wave_bytes // hw.SCRATCH_UNIT >= 1 << hw.TMPRING_WAVESIZE_BITS[gc_version]:
      raise ValueError(f"a kernel needs {lane_bytes} bytes of scratch per work-item, more than COMPUTE_TMPRING_SIZE can describe "
                       f"({((1 << hw.TMPRING_WAVESIZE_BITS[gc_version]) - 1) * hw.SCRATCH_UNIT // WAVE32} bytes): use less private memory")
    ses = hw.shader_engines(props)
    cus = max(props.get("simd_count", 2) // max(props.get("simd_per_cu", 2), 1), 1)
    waves = cdiv(cus * props.get("max_slots_scratch_cu", 32), ses)
    return cls(min(waves, (1 << hw.TMPRING_WAVES_BITS) - 1), ses, wave_bytes)

  @classmethod
  def from_tmpring(cls, tmpring: int, ses: int, gc_version: tuple[int, ...]) -> ScratchLayout:
    size = tmpring >> hw.TMPRING_WAVESIZE_SHIFT & ((1 << hw.TMPRING_WAVESIZE_BITS[gc_version]) - 1)
    return cls(tmpring & ((1 << hw.TMPRING_WAVES_BITS) - 1), ses, size * hw.SCRATCH_UNIT)

class GPUFault(RuntimeError):
  """The GPU reported a fault (KFD memory or hardware exception event): `kind` (memory, hang, illegal, exception), the address of
  a memory fault, and where, when known: kernel name, pc offset from its entry, instruction text, wave, workgroup."""
  def __init__(self, msg: str, kind: str, address: int | None = None, kernel: str | None = None, pc: int | None = None,
               inst: str | None = None, wave: int | None = None, workgroup: tuple[int, int, int] | None = None):
    super().__init__(msg)
    self.kind, self.address, self.kernel, self.pc, self.inst, self.wave, self.workgroup = kind, address, kernel, pc, inst, wave, workgroup

@dataclass(frozen=True)
class LoadedCode:
  """A kernel's code in GPU memory, so a fault's pc can be named: [lo, hi) holds `code` (the loaded text), `entry` its start."""
  name: str
  lo: int
  entry: int
  code: bytes
  @property
  def hi(self) -> int: return self.lo + len(self.code)

WHAT = {"memory": "memory fault", "hang": "hang", "illegal": "illegal instruction", "badpc": "jump to an address that is no instruction"}

class KFDDevice:
  """One GPU: KFD and render-node file descriptors, its VM, events, and its gfx target from the topology."""
  def __init__(self, kfd: KFD, index: int = 0):
    self.kfd = kfd
    nodes = []
    for n in sorted(kfd.listdir(TOPOLOGY), key=int):
      props = parse_properties(kfd.read(f"{TOPOLOGY}/{n}/properties"))
      gpu_id = int(kfd.read(f"{TOPOLOGY}/{n}/gpu_id").strip() or 0)
      if gpu_id and props.get("gfx_target_version", 0): nodes.append((gpu_id, props))
    if index >= len(nodes): raise RuntimeError(f"no AMD GPU #{index}: KFD lists {len(nodes)} GPU node(s)")
    self.gpu_id, self.props = nodes[index]
    ver = self.props["gfx_target_version"]
    self.target = f"gfx{ver // 10000}{ver // 100 % 100:x}{ver % 100:x}"
    self.kfd_fd = kfd.open("/dev/kfd")
    self.drm_fd = kfd.open(f"/dev/dri/renderD{self.props['drm_render_minor']}")
    kfd.ioctl(self.kfd_fd, "ACQUIRE_VM", AcquireVM(drm_fd=self.drm_fd, gpu_id=self.gpu_id))
    self.gc_version, self.gc_base = self.ip_info(hw.GC_HWID)
    if self.gc_version not in hw.COMPUTE_REGS: raise RuntimeError(f"unsupported GC IP version {self.gc_version} ({self.target})")
    self._gpu_ids = (ctypes.c_uint32 * 1)(self.gpu_id)
    self.fault_events = [self.create_event(EVENT_MEMORY), self.create_event(EVENT_HW_EXCEPTION)]
    self.doorbell_page = 0
    self.code: dict[int, LoadedCode] = {}  # by lo
    self.peers: dict[int, set[int]] = {}  # BO handle -> the other GPUs it is mapped to
    self.arch = "rdna3" if self.gc_version[0] == 11 else "rdna4"

  def ip_info(self, hwid: int) -> tuple[tuple[int, ...], list[int]]:
    """(major, minor, revision) and the register segment bases of an IP block, from sysfs IP discovery."""
    d = f"/sys/class/drm/renderD{self.props['drm_render_minor']}/device/ip_discovery/die/0/{hwid}/0"
    version = tuple(int(self.kfd.read(f"{d}/{k}").strip()) for k in ("major", "minor", "revision"))
    return version, [int(x, 0) for x in self.kfd.read(f"{d}/base_addr").split()]

  def reg(self, name: str) -> int:
    """A compute register's offset for SET_SH_REG (relative to the SH register window)."""
    off, base_index = hw.COMPUTE_REGS[self.gc_version][name]
    return self.gc_base[base_index] + off - hw.PACKET3_SET_SH_REG_START

  def create_event(self, event_type: int) -> int:
    return self.kfd.ioctl(self.kfd_fd, "CREATE_EVENT", CreateEvent(event_type=event_type, auto_reset=1, node_id=0)).event_id

  def check_faults(self, timeout_ms: int = 0) -> None:
    """Wait up to timeout_ms for a fault event; raise GPUFault naming it if one fired."""
    evs = (EventData * len(self.fault_events))()
    for e, eid in zip(evs, self.fault_events): e.event_id = eid
    r = self.kfd.ioctl(self.kfd_fd, "WAIT_EVENTS", WaitEvents(events_ptr=ctypes.addressof(evs), num_events=len(evs), wait_for_all=0,
                                                              timeout=timeout_ms))
    if r.wait_result != 0: return
    wave = self.kfd.faulting_wave()
    mem = evs[0].memory_exception_data
    if mem.va or mem.failure.NotPresent or mem.failure.ReadOnly or mem.failure.NoExecute:
      why = "page not present" if mem.failure.NotPresent else "write to read-only page" if mem.failure.ReadOnly else \
            "execute of a no-execute page" if mem.failure.NoExecute else "access"
      raise self.fault("memory", f"address {mem.va:#x}, {why}{' (imprecise)' if mem.failure.imprecise else ''}", wave, mem.va)
    hwx = evs[1].hw_exception_data
    kind = wave.kind if wave is not None else "hang" if hwx.reset_cause == HW_EXCEPTION_GPU_HANG else "exception"
    cause = {HW_EXCEPTION_GPU_HANG: "hang", HW_EXCEPTION_ECC: "ECC error"}.get(hwx.reset_cause, f"cause {hwx.reset_cause}")
    hint = " (a runaway loop?)" if kind == "hang" else ""
    raise self.fault(kind, f"the GPU stopped the queue ({cause}, {'engine' if hwx.reset_type else 'whole GPU'} reset){hint}", wave)

  def register_code(self, code: LoadedCode) -> None: self.code[code.lo] = code
  def unregister_code(self, lo: int) -> None: self.code.pop(lo, None)

  def fault(self, kind: str, detail: str, wave: FaultingWave | None, address: int | None = None) -> GPUFault:
    """A GPUFault naming the kernel, the pc as an offset from its entry and the instruction there, the wave and workgroup."""
    what = f"GPU {WHAT.get(kind, 'hardware exception')}"
    code = next((c for c in self.code.values() if wave is not None and c.lo <= wave.pc < c.hi), None)
    if wave is None or code is None:
      at = "" if wave is None else f" at pc {wave.pc:#x} (in no loaded kernel)"
      return GPUFault(f"{what} on {self.target}{at}: {detail}", kind, address)
    from tg.amd_emu.decode import decode
    at = wave.pc - code.lo
    try: inst = decode(code.code, self.arch, at).disasm()
    except ValueError: inst = f"undecodable word {code.code[at:at + 4][::-1].hex()}"
    off = wave.pc - code.entry
    where = f" in kernel {code.name} at pc {'-' if off < 0 else ''}{abs(off):#x} ({inst}), wave {wave.wave}"
    where += f", workgroup {wave.workgroup}" if wave.workgroup is not None else ""
    return GPUFault(f"{what}{where}: {detail} ({self.target})", kind, address, code.name, off, inst, wave.wave, wave.workgroup)

  # ***** memory *****

  def alloc(self, size: int, vram: bool = True, host: bool = True, uncached: bool = False, executable: bool = False) -> KFDAlloc:
    """A buffer object at a GPU virtual address reserved in the process's address space (so the host mapping, when wanted,
    sits at the same address)."""
    size = round_up(max(size, 1), PAGE)
    va = self.kfd.mmap(0, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
    flags = MEM_WRITABLE | (MEM_VRAM | (MEM_PUBLIC if host else 0) if vram else MEM_GTT | MEM_COHERENT)
    flags |= (MEM_UNCACHED if uncached else 0) | (MEM_EXECUTABLE if executable else 0)
    a = self.kfd.ioctl(self.kfd_fd, "ALLOC_MEMORY_OF_GPU", AllocMemory(va_addr=va, size=size, gpu_id=self.gpu_id, flags=flags))
    if host: self.kfd.mmap(va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, self.drm_fd, a.mmap_offset)
    m = self.kfd.ioctl(self.kfd_fd, "MAP_MEMORY_TO_GPU", MapMemory(handle=a.handle, device_ids_array_ptr=ctypes.addressof(self._gpu_ids),
                                                                   n_devices=1))
    if m.n_success != 1: raise RuntimeError(f"mapping {size:#x} bytes at {va:#x} to the GPU failed")
    return KFDAlloc(va, size, a.handle, host)

  def map_peer(self, mem: KFDAlloc, gpu_id: int) -> None:
    """Map the buffer object holding `mem` into another GPU's address space too (once), so that GPU reads it directly."""
    if gpu_id in (peers := self.peers.setdefault(mem.handle, set())): return
    ids = (ctypes.c_uint32 * 1)(gpu_id)
    m = self.kfd.ioctl(self.kfd_fd, "MAP_MEMORY_TO_GPU", MapMemory(handle=mem.handle, device_ids_array_ptr=ctypes.addressof(ids), n_devices=1))
    if m.n_success != 1: raise RuntimeError(f"mapping {mem.va:#x} to GPU {gpu_id:#x} (a peer of {self.target}) failed")
    peers.add(gpu_id)

  def free(self, mem: KFDAlloc) -> None:
    ids = (ctypes.c_uint32 * (1 + len(peers := self.peers.pop(mem.handle, set()))))(self.gpu_id, *peers)
    self.kfd.ioctl(self.kfd_fd, "UNMAP_MEMORY_FROM_GPU", MapMemory(handle=mem.handle, device_ids_array_ptr=ctypes.addressof(ids),
                                                                   n_devices=len(ids)))
    self.kfd.ioctl(self.kfd_fd, "FREE_MEMORY_OF_GPU", FreeMemory(handle=mem.handle))
    self.kfd.munmap(mem.va, mem.size)

  def map_doorbell(self, offset: int) -> int:
    """The host address of a queue's doorbell (the doorbell page is mapped from /dev/kfd once)."""
    if not self.doorbell_page:
      self.doorbell_page = self.kfd.mmap(0, 0x2000, PROT_READ | PROT_WRITE, MAP_SHARED, self.kfd_fd, offset & ~0x1FFF)
    return self.doorbell_page + (offset & 0x1FFF)

class Signal:
  """A timeline semaphore: a 64-bit value in host-visible memory that queues write (RELEASE_MEM, SDMA FENCE) and wait on
  (WAIT_REG_MEM, POLL_REGMEM). Values are compared in 32 bits, as the GPU's waits do."""
  def __init__(self, dev: KFDDevice, mem: KFDAlloc, offset: int):
    self.dev, self.va = dev, mem.va + offset
    self._v = ctypes.c_uint64.from_address(self.va)
  @property
  def value(self) -> int: return self._v.value
  @value.setter
  def value(self, v: int) -> None: self._v.value = v
  def wait(self, value: int, timeout: float = 30.0) -> None:
    """Block until value >= `value`; a GPU fault reported meanwhile raises GPUFault, no progress in `timeout` s TimeoutError."""
    deadline = time.monotonic() + timeout
    while (self.value & 0xFFFFFFFF) < value:
      self.dev.check_faults(timeout_ms=1)
      if (self.value & 0xFFFFFFFF) >= value: break
      if time.monotonic() > deadline: raise TimeoutError(f"signal at {self.va:#x} is {self.value}, waited {timeout}s for {value}")
    self.dev.check_faults(timeout_ms=0)

class HWQueue:
  """A ring of dwords with read/write pointers in host memory and a doorbell; `submit` copies packets in and rings."""
  def __init__(self, dev: KFDDevice, queue_type: int, ring_size: int = 1 << 18):
    self.dev, self.queue_type = dev, queue_type
    self.ring = dev.alloc(ring_size, vram=False, uncached=True)
    self.ptrs = dev.alloc(PAGE, vram=False, uncached=True)  # rptr at 0, wptr at 8
    self.eop = dev.alloc(PAGE, vram=True, host=False) if queue_type == QUEUE_TYPE_COMPUTE else None
    self.ring_dwords = ring_size // 4
    self.words = (ctypes.c_uint32 * self.ring_dwords).from_address(self.ring.va)
    self.rptr, self.wptr_mem = ctypes.c_uint64.from_address(self.ptrs.va), ctypes.c_uint64.from_address(self.ptrs.va + 8)
    self.create()

  def create(self) -> None:
    """Create (or re-create, after a fault killed it) the KFD queue on the same ring, empty."""
    self.wptr = self.rptr.value = self.wptr_mem.value = 0
    cwsr = self.ctx_save_size() if self.queue_type == QUEUE_TYPE_COMPUTE else 0
    self.ctx = self.dev.alloc(cwsr, vram=True, host=False) if cwsr else None
    args = CreateQueue(ring_base_address=self.ring.va, ring_size=self.ring.size, gpu_id=self.dev.gpu_id, queue_type=self.queue_type,
                       queue_percentage=100, queue_priority=7, write_pointer_address=self.ptrs.va + 8, read_pointer_address=self.ptrs.va,
                       eop_buffer_address=self.eop.va if self.eop else 0, eop_buffer_size=self.eop.size if self.eop else 0,
                       ctx_save_restore_address=self.ctx.va if self.ctx else 0, ctx_save_restore_size=cwsr,
                       ctl_stack_size=self.ctl_stack_size() if cwsr else 0)
    q = self.dev.kfd.ioctl(self.dev.kfd_fd, "CREATE_QUEUE", args)
    self.queue_id, self.doorbell = q.queue_id, self.dev.map_doorbell(q.doorbell_offset)

  def ctl_stack_size(self) -> int: return round_up(self.waves() * 8 + 8 + 40, PAGE)
  def waves(self) -> int: return max(self.dev.props.get("simd_count", 2) // 2, 1) * 32
  def ctx_save_size(self) -> int:
    """Compute wave save/restore area (CWSR): control stack plus per-CU VGPR, SGPR, LDS and hardware-register state."""
    cus = max(self.dev.props.get("simd_count", 2) // 2, 1)
    return self.ctl_stack_size() + round_up(cus * (0x60000 + 0x400 + 0x10000 + 0x1000), PAGE)

  def reset(self) -> None:
    self.dev.kfd.ioctl(self.dev.kfd_fd, "DESTROY_QUEUE", DestroyQueue(queue_id=self.queue_id))
    if self.ctx is not None: self.dev.free(self.ctx)
    self.create()

  def submit(self, dwords: list[int]) -> None:
    n = len(dwords)
    deadline = time.monotonic() + 30
    while self.wptr + n - self.consumed() > self.ring_dwords:  # ring full: wait for the GPU to read
      self.dev.check_faults(timeout_ms=1)
      if time.monotonic() > deadline: raise TimeoutError("the GPU stopped reading a full queue")
    for k, d in enumerate(dwords): self.words[(self.wptr + k) % self.ring_dwords] = d & 0xFFFFFFFF
    self.wptr += n
    self.wptr_mem.value = self.pointer(self.wptr)
    self.dev.kfd.ring(self.doorbell, self.pointer(self.wptr))

  def pointer(self, dwords: int) -> int: return dwords * 4 if self.queue_type == QUEUE_TYPE_SDMA else dwords  # SDMA counts bytes
  def consumed(self) -> int: return self.rptr.value // 4 if self.queue_type == QUEUE_TYPE_SDMA else self.rptr.value

class PM4Queue(HWQueue):
  """Compute queue commands: PM4 type-3 packets. The queue owns the scratch backing its dispatches use."""
  def __init__(self, dev: KFDDevice):
    super().__init__(dev, QUEUE_TYPE_COMPUTE)
    self.scratch: KFDAlloc | None = None
    self.scratch_layout = ScratchLayout(0, hw.shader_engines(dev.props), 0)

  def set_scratch(self, lane_bytes: int) -> None:
    """Back `lane_bytes` of private segment per work-item for every wave slot. The queue must be idle: the old backing is freed."""
    layout = ScratchLayout.for_lanes(self.dev.props, self.dev.gc_version, lane_bytes)
    if self.scratch is not None: self.dev.free(self.scratch)
    self.scratch, self.scratch_layout = self.dev.alloc(layout.nbytes, vram=True, host=False), layout

  @staticmethod
  def pkt(opcode: int, *body: int) -> list[int]: return [hw.pm4_header(opcode, len(body)), *body]

  def set_regs(self, reg: str, *vals: int) -> list[int]: return self.pkt(hw.PACKET3_SET_SH_REG, self.dev.reg(reg), *vals)

  def acquire_mem(self) -> list[int]:
    """Invalidate the instruction, scalar, vector, L1 and L2 caches before a kernel reads memory others wrote."""
    g = hw.GCR_CNTL
    gcr = g["GLI_INV"] | g["GLK_INV"] | g["GLV_INV"] | g["GL1_INV"] | g["GL2_INV"] | g["GLM_INV"]
    return self.pkt(hw.PACKET3_ACQUIRE_MEM, 0, 0xFFFFFFFF, 0xFFFFFF, 0, 0, 0xA, gcr)

  def release_mem(self, va: int, value: int) -> list[int]:
    """At end of pipe: write back caches, then write `value` (64 bits) to `va` and interrupt."""
    g = hw.RELEASE_MEM_GCR
    gcr = g["GLM_WB"] | g["GLM_INV"] | g["GLV_INV"] | g["GL1_INV"] | g["GL2_WB"] | g["SEQ"]
    dw1 = hw.CACHE_FLUSH_AND_INV_TS_EVENT | hw.EVENT_INDEX_EOP << 8 | gcr
    dw2 = hw.DATA_SEL_64 << 29 | hw.INT_SEL_AFTER_WRITE << 24
    return self.pkt(hw.PACKET3_RELEASE_MEM, dw1, dw2, va & 0xFFFFFFFF, va >> 32, value & 0xFFFFFFFF, value >> 32, 0)

  def wait_mem(self, va: int, value: int) -> list[int]:
    """Stall the queue until the 32-bit value at va is >= value."""
    return self.pkt(hw.PACKET3_WAIT_REG_MEM, hw.WAIT_FUNC_GEQ | hw.WAIT_MEM_SPACE_MEMORY << 4, va & 0xFFFFFFFF, va >> 32, value, 0xFFFFFFFF, 0x4)

  def scratch_regs(self) -> list[int]:
    """The queue's scratch backing for the dispatches that follow (registers keep their values, also into indirect buffers)."""
    base = self.scratch.va >> hw.SCRATCH_BASE_SHIFT if self.scratch is not None else 0
    return self.set_regs("COMPUTE_TMPRING_SIZE", self.scratch_layout.tmpring) + \
      self.set_regs("COMPUTE_DISPATCH_SCRATCH_BASE_LO", base & 0xFFFFFFFF, base >> 32)

  def barrier(self) -> list[int]:
    """Wait until the dispatches before have finished (CS_PARTIAL_FLUSH), so the next one reads what they wrote."""
    return self.pkt(hw.PACKET3_EVENT_WRITE, hw.CS_PARTIAL_FLUSH | hw.EVENT_INDEX_CS_PARTIAL_FLUSH << 8)

  def indirect(self, va: int, ndwords: int) -> list[int]:
    """Run `ndwords` of packets at `va` (an indirect buffer), then continue here."""
    if not 0 < ndwords <= hw.INDIRECT_BUFFER_SIZE_MASK:
      raise ValueError(f"an indirect buffer of {ndwords} dwords: it holds 1 to {hw.INDIRECT_BUFFER_SIZE_MASK}")
    return self.pkt(hw.PACKET3_INDIRECT_BUFFER, va & 0xFFFFFFFC, va >> 32, ndwords | hw.INDIRECT_BUFFER_VALID)

  def dispatch(self, pgm: int, rsrc: tuple[int, int, int], user: list[int], grid: tuple[int, int, int], block: tuple[int, int, int]) -> list[int]:
    """A kernel launch (after scratch_regs: the scratch setup is the queue's, not the kernel's)."""
    out = self.acquire_mem()
    out += self.set_regs("COMPUTE_PGM_LO", pgm >> 8 & 0xFFFFFFFF, pgm >> 40)
    out += self.set_regs("COMPUTE_PGM_RSRC1", rsrc[0], rsrc[1])
    out += self.set_regs("COMPUTE_PGM_RSRC3", rsrc[2])
    out += self.set_regs("COMPUTE_RESOURCE_LIMITS", 0)
    out += self.set_regs("COMPUTE_START_X", 0, 0, 0)
    out += self.set_regs("COMPUTE_NUM_THREAD_X", *block)
    if user: out += self.set_regs("COMPUTE_USER_DATA_0", *user)
    d = hw.DISPATCH_INITIATOR
    return out + self.pkt(hw.PACKET3_DISPATCH_DIRECT, *grid, d["compute_shader_en"] | d["force_start_at_000"] | d["cs_w32_en"])

class SDMAQueue(HWQueue):
  """Copy queue commands: SDMA packets."""
  def __init__(self, dev: KFDDevice): super().__init__(dev, QUEUE_TYPE_SDMA)

  @staticmethod
  def copy(dst: int, src: int, nbytes: int) -> list[int]:
    out: list[int] = []
    for off in range(0, nbytes, hw.SDMA_COPY_MAX):
      n = min(hw.SDMA_COPY_MAX, nbytes - off)
      s, d = src + off, dst + off
      out += [hw.SDMA_OP_COPY | hw.SDMA_SUBOP_COPY_LINEAR << 8, n - 1, 0, s & 0xFFFFFFFF, s >> 32, d & 0xFFFFFFFF, d >> 32]
    return out

  @staticmethod
  def fence(va: int, value: int) -> list[int]: return [hw.SDMA_OP_FENCE, va & 0xFFFFFFFF, va >> 32, value & 0xFFFFFFFF, hw.SDMA_OP_TRAP, 0]

  @staticmethod
  def wait_mem(va: int, value: int) -> list[int]:
    return [hw.SDMA_OP_POLL_REGMEM | hw.POLL_FUNC_GEQ << 28 | 1 << 31, va & 0xFFFFFFFF, va >> 32, value, 0xFFFFFFFF, 10 | 0xFFF << 16]
