"""MOCKGPU: a virtual KFD device behind the narrow interface (tg.amd.kfd.KFD), in-process.

It answers sysfs topology and IP-discovery reads for an RDNA3 (gfx1100) or RDNA4 (gfx1200) part (MOCKGPU_ARCH), keeps a
GPU virtual-address map (tg.amd_emu.AddressSpace over real anonymous host mappings at the same addresses, as a GPU with a
shared VA space would see them), and implements queues: a doorbell write runs the queue's new packets through a PM4
processor or an SDMA engine that parse the real packet formats. Dispatches run on tg.amd_emu; an access outside every
mapping becomes a KFD memory-exception event, delivered through WAIT_EVENTS as on hardware, and stops the queue; a runaway
wave (the emulator's instruction budget) or an illegal instruction becomes a hardware-exception event (a hang the GPU reset)
and stops it too. `faulting_wave()` says which wave stopped where, which KFD alone can't. Dispatches get their scratch from
the backing the driver programmed (COMPUTE_TMPRING_SIZE, COMPUTE_DISPATCH_SCRATCH_BASE); a setup that isn't backed by
mapped memory faults, as the hardware would.
With SQTT=1 (or PROFILE=1) each dispatch also writes a thread trace of one shader engine (tg.amd_emu.sqtt's timing
model) to `thread_traces`."""
from __future__ import annotations
import ctypes, os, struct, weakref
from dataclasses import dataclass, field
from typing import Any
from tg.uop import cdiv, getenv
from tg.amd import hw
from tg.amd_emu.emu import MemoryFault, WaveStop
from tg.amd.driver import ScratchLayout
from tg.amd.kfd import (IOCTLS, TOPOLOGY, EventData, FaultingWave, HostKFD, QUEUE_TYPE_COMPUTE, QUEUE_TYPE_SDMA, EVENT_HW_EXCEPTION,
                        EVENT_MEMORY, HW_EXCEPTION_GPU_HANG, HW_EXCEPTION_PER_ENGINE_RESET, WAIT_COMPLETE, WAIT_TIMEOUT, MAP_ANONYMOUS,
                        MAP_FIXED, MAP_PRIVATE, PROT_READ, PROT_WRITE)

ARCHS = {"rdna3": {"gfx_target_version": 110000, "gc": (11, 0, 0), "sdma": (6, 0, 0), "nbif": (4, 3, 0)},
         "rdna4": {"gfx_target_version": 120000, "gc": (12, 0, 0), "sdma": (6, 0, 0), "nbif": (6, 3, 1)}}
BASES = {"gc": [0x1260, 0xA000, 0x1C000, 0x2402C00], "sdma": [0x1260, 0xA000, 0x1C000, 0x2402C00],
         "nbif": [0x0, 0x14, 0xD20, 0x10400, 0x241B000, 0x4040000]}
GPU_ID, RENDER_MINOR, KFD_FD, DRM_FD = 0x4A3B, 128, 1000, 1001
DOORBELL_OFFSET = 0x1 << 62  # the mmap offset space KFD uses for doorbells (type bits in the high bits)

# The machine's bus: the virtual GPUs of this process that have acquired their VM, by (the machine's GPU list, gpu_id). A buffer
# mapped to another GPU (MAP_MEMORY_TO_GPU naming a peer) is mapped into that GPU's address space through it, so its copy
# engine and kernels reach the memory directly, as GPUs on one PCIe bus do; without that mapping the peer faults.
BUS: weakref.WeakValueDictionary[tuple[tuple[str, ...], int], MockKFD] = weakref.WeakValueDictionary()

class MockError(RuntimeError):
  """Something a real GPU would also reject: a malformed packet, an unknown ioctl."""

@dataclass
class MockQueue:
  qtype: int
  ring: int
  ring_size: int
  rptr_addr: int
  regs: dict[int, int] = field(default_factory=dict)
  wptr: int = 0       # the last value rung (dwords for PM4, bytes for SDMA)
  dead: bool = False  # a fault stopped it; only destroying it helps

@dataclass
class MockEvent:
  type: int
  signaled: bool = False
  data: Any = None

class MockKFD:
  """The virtual KFD + render node + GPU. Only this object is different from the hardware path."""
  def __init__(self, arch: str | None = None):
    from tg.amd_emu.emu import AddressSpace
    self.archs = (arch or os.environ.get("MOCKGPU_ARCH") or "rdna3").split(",")  # one virtual GPU per entry
    if bad := [a for a in self.archs if a not in ARCHS]: raise ValueError(f"MOCKGPU_ARCH: unknown {bad}, expected {', '.join(ARCHS)}")
    self.arch = self.archs[0]  # of the GPU whose VM this process acquires
    self.gpu_id = GPU_ID
    self.host = HostKFD()  # for real anonymous memory
    self.memory = AddressSpace()
    self.bos: dict[int, tuple[int, int]] = {}  # handle -> (va, size)
    self.queues: dict[int, MockQueue] = {}
    self.events: dict[int, MockEvent] = {}
    self.props: list[dict[str, int]] = []
    self.files = self._sysfs()
    self.doorbell_page = 0
    self.thread_traces: list[tuple[int, bytes]] = []  # SQTT=1 or PROFILE=1: (kernel entry, SE 0's SQTT stream) per dispatch
    self.stopped_wave: FaultingWave | None = None
    self.executed = 0  # wave-instructions run by all dispatches (bench/amd.py: a fair cost figure where the emulator's wall time isn't)

  def _sysfs(self) -> dict[str, str]:
    files = {f"{TOPOLOGY}/0/properties": "cpu_cores_count 8\nsimd_count 0\n", f"{TOPOLOGY}/0/gpu_id": "0\n"}
    for i, arch in enumerate(self.archs):
      a = ARCHS[arch]
      props = {"cpu_cores_count": 0, "simd_count": 192, "max_waves_per_simd": 16, "lds_size_in_kb": 64, "wave_front_size": 32,
               "array_count": 12, "simd_arrays_per_engine": 2, "simd_per_cu": 2, "max_slots_scratch_cu": 32, "vendor_id": 0x1002,
               "gfx_target_version": a["gfx_target_version"], "drm_render_minor": RENDER_MINOR + i, "num_sdma_engines": 2,
               "num_cp_queues": 8}
      self.props.append(props)
      files[f"{TOPOLOGY}/{i + 1}/properties"] = "".join(f"{k} {v}\n" for k, v in props.items())
      files[f"{TOPOLOGY}/{i + 1}/gpu_id"] = f"{GPU_ID + i}\n"
      disc = f"/sys/class/drm/renderD{RENDER_MINOR + i}/device/ip_discovery/die/0"
      for name, hwid in (("gc", hw.GC_HWID), ("sdma", hw.SDMA0_HWID), ("nbif", hw.NBIF_HWID)):
        for k, v in zip(("major", "minor", "revision"), a[name]): files[f"{disc}/{hwid}/0/{k}"] = f"{v}\n"
        files[f"{disc}/{hwid}/0/base_addr"] = "".join(f"0x{b:08x}\n" for b in BASES[name])
    return files

  def gpu_index(self, gpu_id: int) -> int:
    if not 0 <= gpu_id - GPU_ID < len(self.archs): raise MockError(f"unknown gpu_id {gpu_id:#x}")
    return gpu_id - GPU_ID

  # ***** the narrow interface *****

  def open(self, path: str) -> int:
    if path == "/dev/kfd": return KFD_FD
    if path in (f"/dev/dri/renderD{RENDER_MINOR + i}" for i in range(len(self.archs))): return DRM_FD
    raise FileNotFoundError(f"MOCKGPU: no device file {path}")
  def close(self, fd: int) -> None: pass
  def read(self, path: str) -> str:
    if path not in self.files: raise FileNotFoundError(f"MOCKGPU: no sysfs file {path}")
    return self.files[path]
  def listdir(self, path: str) -> list[str]:
    names = {p[len(path) + 1:].split("/")[0] for p in self.files if p.startswith(path + "/")}
    if not names: raise FileNotFoundError(f"MOCKGPU: no sysfs directory {path}")
    return sorted(names)

  def mmap(self, addr: int, size: int, prot: int, flags: int, fd: int, offset: int) -> int:
    if fd == -1: return self.host.mmap(addr, size, prot, flags, fd, offset)  # address-space reservations
    if fd == DRM_FD:  # a BO's host mapping: the BO already lives at its VA
      if not any(va == addr and offset == h for h, (va, _) in self.bos.items()): raise MockError(f"mmap of an unknown BO at {addr:#x}")
      return addr
    if fd == KFD_FD:
      if offset & ~0x1FFF != DOORBELL_OFFSET: raise MockError(f"mmap of /dev/kfd at unknown offset {offset:#x}")
      self.doorbell_page = self.host.mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
      return self.doorbell_page
    raise MockError(f"mmap of unknown fd {fd}")
  def munmap(self, addr: int, size: int) -> None: self.host.munmap(addr, size)

  def ioctl(self, fd: int, name: str, args: ctypes.Structure) -> ctypes.Structure:
    if name not in IOCTLS or not isinstance(args, IOCTLS[name][1]): raise MockError(f"MOCKGPU: bad ioctl {name} with {type(args).__name__}")
    if fd != KFD_FD: raise MockError(f"MOCKGPU: ioctl {name} on fd {fd}, not /dev/kfd")
    getattr(self, f"_{name.lower()}")(args)
    return args

  def ring(self, doorbell: int, value: int) -> None:
    ctypes.c_uint64.from_address(doorbell).value = value
    q = self.queues.get((doorbell - self.doorbell_page) // 8)
    if q is None or not self.doorbell_page: raise MockError(f"doorbell write at {doorbell:#x} that belongs to no queue")
    q.wptr = value
    self.run(q)

  # ***** ioctls *****

  def _get_version(self, a: Any) -> None: a.major_version, a.minor_version = 1, 11
  def _acquire_vm(self, a: Any) -> None:
    if a.drm_fd != DRM_FD: raise MockError(f"ACQUIRE_VM with fd {a.drm_fd}, not the render node")
    self.arch, self.gpu_id = self.archs[self.gpu_index(a.gpu_id)], a.gpu_id
    BUS[(tuple(self.archs), a.gpu_id)] = self
  def vm(self, gpu_id: int) -> Any:
    """The address space of GPU gpu_id: this one's, or a peer's on the bus."""
    self.gpu_index(gpu_id)
    if gpu_id == self.gpu_id: return self.memory
    if (peer := BUS.get((tuple(self.archs), gpu_id))) is None: raise MockError(f"MAP_MEMORY_TO_GPU: GPU {gpu_id:#x} is not open in this process")
    return peer.memory
  def gpus(self, a: Any) -> list[int]: return list((ctypes.c_uint32 * a.n_devices).from_address(a.device_ids_array_ptr))
  def _alloc_memory_of_gpu(self, a: Any) -> None:
    self.gpu_index(a.gpu_id)
    if a.va_addr % 4096 or a.size % 4096 or not a.size: raise MockError(f"ALLOC_MEMORY_OF_GPU: unaligned {a.va_addr:#x}+{a.size:#x}")
    self.host.mmap(a.va_addr, a.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
    a.handle = a.mmap_offset = a.va_addr
    self.bos[a.handle] = (a.va_addr, a.size)
  def _free_memory_of_gpu(self, a: Any) -> None: self.bos.pop(a.handle)
  def _map_memory_to_gpu(self, a: Any) -> None:
    va, size = self.bos[a.handle]
    for mem in map(self.vm, self.gpus(a)):
      if not any(lo == va for lo, *_ in mem.ranges): mem.map(va, size, (ctypes.c_uint8 * size).from_address(va))
    a.n_success = a.n_devices
  def _unmap_memory_from_gpu(self, a: Any) -> None:
    for mem in map(self.vm, self.gpus(a)): mem.unmap(self.bos[a.handle][0])
    a.n_success = a.n_devices

  def _create_queue(self, a: Any) -> None:
    if a.queue_type not in (QUEUE_TYPE_COMPUTE, QUEUE_TYPE_SDMA): raise MockError(f"unsupported queue type {a.queue_type}")
    if a.ring_size & (a.ring_size - 1) or a.ring_size < 1024: raise MockError(f"queue ring size {a.ring_size} is not a power of two >= 1024")
    qid = len(self.queues) and max(self.queues) + 1
    a.queue_id, a.doorbell_offset = qid, DOORBELL_OFFSET | qid * 8
    self.queues[qid] = MockQueue(a.queue_type, a.ring_base_address, a.ring_size, a.read_pointer_address)
  def _destroy_queue(self, a: Any) -> None: self.queues.pop(a.queue_id)

  def _create_event(self, a: Any) -> None:
    a.event_id = len(self.events) + 1
    self.events[a.event_id] = MockEvent(a.event_type)
  def _destroy_event(self, a: Any) -> None: self.events.pop(a.event_id)
  def _wait_events(self, a: Any) -> None:
    for q in self.queues.values(): self.run(q)  # the GPU makes progress while the host waits
    evs = (EventData * a.num_events).from_address(a.events_ptr)
    fired = [e for e in evs if self.events[e.event_id].signaled]
    for e in fired:
      ev = self.events[e.event_id]
      if ev.data is not None: setattr(e, "memory_exception_data" if ev.type == EVENT_MEMORY else "hw_exception_data", ev.data)
      ev.signaled = False
    a.wait_result = WAIT_COMPLETE if fired and (not a.wait_for_all or len(fired) == a.num_events) else WAIT_TIMEOUT

  # ***** the GPU *****

  def run(self, q: MockQueue) -> None:
    if q.dead: return
    unit = 4 if q.qtype == QUEUE_TYPE_SDMA else 1  # SDMA pointers count bytes, PM4 dwords
    rptr = ctypes.c_uint64.from_address(q.rptr_addr)
    ndw = q.ring_size // 4
    ring = self.memory.view(q.ring, q.ring_size).view("<u4")
    while rptr.value < q.wptr:
      start = rptr.value // unit
      avail = q.wptr // unit - start
      words = ring_words(ring, start, min(avail, 16), ndw)
      used = (self.pm4 if q.qtype == QUEUE_TYPE_COMPUTE else self.sdma)(q, words, avail, ring, start, ndw)
      if used == 0: return  # stalled on a wait
      if used < 0:
        q.dead = True
        return
      rptr.value += used * unit

  def faulting_wave(self) -> FaultingWave | None: return self.stopped_wave

  def fault(self, q: MockQueue, err: MemoryFault | WaveStop) -> int:
    """A memory fault, through the KFD memory-exception event; a runaway or illegal wave, through the hardware-exception event
    (a hang the GPU reset). Either stops the queue, as the hardware does."""
    gpu_id = GPU_ID + self.archs.index(self.arch)
    if isinstance(err, MemoryFault):
      data: Any = type(EventData().memory_exception_data)(va=err.address, gpu_id=gpu_id)
      data.failure.NotPresent = 1
    else: data = type(EventData().hw_exception_data)(reset_type=HW_EXCEPTION_PER_ENGINE_RESET, reset_cause=HW_EXCEPTION_GPU_HANG, gpu_id=gpu_id)
    kind = "memory" if isinstance(err, MemoryFault) else "hang" if err.kind == "budget" else err.kind
    self.stopped_wave = FaultingWave(err.pc, err.wave or 0, err.workgroup, kind) if err.pc is not None else None
    for ev in self.events.values():
      if ev.type == (EVENT_MEMORY if isinstance(err, MemoryFault) else EVENT_HW_EXCEPTION): ev.signaled, ev.data = True, data
    return -1

  def pm4(self, q: MockQueue, w: list[int], avail: int, ring: Any, start: int, ndw: int) -> int:
    h = w[0]
    if h == 0x80000000: return 1  # type-2 filler
    if h >> 30 != 3: raise MockError(f"PM4: packet header {h:#010x} at ring dword {start} is not type 3")
    count, op = (h >> 16 & 0x3FFF) + 1, h >> 8 & 0xFF
    if count + 1 > avail: raise MockError(f"PM4: packet {op:#x} of {count + 1} dwords runs past the write pointer")
    body = ring_words(ring, start + 1, count, ndw)
    need = {hw.PACKET3_DISPATCH_DIRECT: 4, hw.PACKET3_RELEASE_MEM: 7, hw.PACKET3_ACQUIRE_MEM: 7, hw.PACKET3_WAIT_REG_MEM: 6,
            hw.PACKET3_INDIRECT_BUFFER: 3, hw.PACKET3_EVENT_WRITE: 1}
    if op in need and count != need[op]: raise MockError(f"PM4: packet {op:#x} has {count} body dwords, expected {need[op]}")
    if op == hw.PACKET3_NOP: pass
    elif op == hw.PACKET3_SET_SH_REG:
      if count < 2 or body[0] + count - 1 > hw.PACKET3_SET_SH_REG_END - hw.PACKET3_SET_SH_REG_START:
        raise MockError(f"PM4: SET_SH_REG at offset {body[0]:#x} with {count - 1} values is outside the SH register window")
      for k, v in enumerate(body[1:]): q.regs[hw.PACKET3_SET_SH_REG_START + body[0] + k] = v
    elif op in (hw.PACKET3_ACQUIRE_MEM, hw.PACKET3_EVENT_WRITE): pass  # caches are coherent, dispatches run one after another
    elif op == hw.PACKET3_INDIRECT_BUFFER:
      if self.indirect(q, body[0] | body[1] << 32, body[2]) < 0: return -1
    elif op == hw.PACKET3_WAIT_REG_MEM:
      if body[0] >> 4 & 3 != hw.WAIT_MEM_SPACE_MEMORY: raise MockError("PM4: WAIT_REG_MEM on a register is not supported")
      val = struct.unpack("<I", self.memory.read(body[1] | body[2] << 32, 4))[0] & body[4]
      if not compare(body[0] & 7, val, body[3]): return 0
    elif op == hw.PACKET3_RELEASE_MEM:
      sel, addr = body[1] >> 29, body[2] | body[3] << 32
      if sel == hw.DATA_SEL_32: self.memory.write(addr, struct.pack("<I", body[4]))
      elif sel == hw.DATA_SEL_64: self.memory.write(addr, struct.pack("<II", body[4], body[5]))
      elif sel != hw.DATA_SEL_NONE: raise MockError(f"PM4: RELEASE_MEM data_sel {sel} is not supported")
    elif op == hw.PACKET3_DISPATCH_DIRECT:
      try: self.dispatch(q, body[:3])
      except (MemoryFault, WaveStop) as e: return self.fault(q, e)
    else: raise MockError(f"PM4: unsupported packet opcode {op:#x}")
    return count + 1

  def indirect(self, q: MockQueue, va: int, ctl: int) -> int:
    """Run an indirect buffer's packets to its end (-1 if one faulted). A wait inside one that isn't met yet is not supported."""
    n = ctl & hw.INDIRECT_BUFFER_SIZE_MASK
    if not ctl & hw.INDIRECT_BUFFER_VALID or va % 4 or n == 0: raise MockError(f"PM4: INDIRECT_BUFFER at {va:#x} ({ctl:#x}) is not valid")
    try: words, pos = self.memory.view(va, n * 4).view("<u4"), 0
    except MemoryFault as e: return self.fault(q, e)
    while pos < n:
      used = self.pm4(q, ring_words(words, pos, min(n - pos, 16), n), n - pos, words, pos, n)
      if used < 0: return used
      if used == 0: raise MockError(f"PM4: a wait inside the indirect buffer at {va:#x} (dword {pos}) is not met: unsupported")
      pos += used
    return n

  def dispatch(self, q: MockQueue, grid: list[int]) -> None:
    from tg.amd_emu.codeobj import KernelDescriptor
    from tg.amd_emu.emu import dispatch
    from tg.amd_emu.sqtt.record import Recorder
    reg = {name: hw.PACKET3_SET_SH_REG_START + BASES["gc"][bi] + off - hw.PACKET3_SET_SH_REG_START
           for name, (off, bi) in hw.COMPUTE_REGS[ARCHS[self.arch]["gc"]].items()}
    r = lambda name, k=0: q.regs.get(reg[name] + k, 0)  # noqa: E731
    pgm = (r("COMPUTE_PGM_LO") | r("COMPUTE_PGM_HI") << 32) << 8
    rsrc1, rsrc2, rsrc3 = r("COMPUTE_PGM_RSRC1"), r("COMPUTE_PGM_RSRC2"), r("COMPUTE_PGM_RSRC3")
    user = [r("COMPUTE_USER_DATA_0", k) for k in range(rsrc2 >> 1 & 0x1F)]
    if any(user[4:]): raise MockError(f"dispatch with user SGPRs {user}: the virtual GPU loads at most 4 nonzero ones")
    user += [0] * (4 - len(user))
    props = 1 << 10 | 1 << 1 | 1 << 3  # wave32; the emulator loads the 'dispatch_ptr' and 'kernarg' pairs in order: s0..s3 verbatim
    kd = KernelDescriptor(rsrc1=rsrc1, rsrc2=rsrc2, rsrc3=rsrc3, properties=props)
    block = [r("COMPUTE_NUM_THREAD_X", k) & 0xFFFF for k in range(3)]
    base = (r("COMPUTE_DISPATCH_SCRATCH_BASE_LO") | (r("COMPUTE_DISPATCH_SCRATCH_BASE_HI") & 0xFF) << 32) << hw.SCRATCH_BASE_SHIFT
    nwaves = cdiv(block[0] * block[1] * block[2], 32)
    scratch = self.scratch(base, r("COMPUTE_TMPRING_SIZE"), nwaves) if rsrc2 & hw.RSRC2_SCRATCH_EN else (0, 0)
    code = self.code_at(pgm)
    trace = Recorder() if getenv("SQTT", False) or getenv("PROFILE", False) else None
    self.executed += dispatch(self.memory, code, pgm, kd, user[2] | user[3] << 32, grid, block, self.arch, code_addr=pgm,
                              dispatch_ptr=user[0] | user[1] << 32, scratch=scratch, trace=trace)
    if trace is not None: self.thread_traces.append((pgm, trace.stream(self.arch)))

  def scratch(self, base: int, tmpring: int, nwaves: int) -> tuple[int, int]:
    """(host address, bytes per work-item) of a dispatch's scratch: the backing COMPUTE_TMPRING_SIZE describes at the scratch base.
    Backing that isn't one mapping faults at its first byte outside (the hardware would, at the first access); with no room
    (WAVESIZE 0) every scratch access faults; fewer slots than the workgroup's waves would never start, so that faults too."""
    layout = ScratchLayout.from_tmpring(tmpring, hw.shader_engines(self.props[self.archs.index(self.arch)]), ARCHS[self.arch]["gc"])
    if layout.wave_bytes == 0: return (0, 0)
    if layout.waves * layout.ses < nwaves:
      raise MemoryFault(f"memory fault: scratch for {nwaves} waves, COMPUTE_TMPRING_SIZE has {layout.waves * layout.ses} slots", base)
    hi = next((hi for lo, hi, _, _ in self.memory.ranges if lo <= base < hi), None)
    if hi is None or hi < base + layout.nbytes:  # the backing is one buffer: running into a neighbour is as wrong as no mapping
      at = base if hi is None else hi
      raise MemoryFault(f"memory fault: scratch backing {base:#x}+{layout.nbytes:#x} is not mapped at {at:#x}", at)
    return (self.memory.view(base, 1).ctypes.data, layout.lane_bytes)

  def code_at(self, pgm: int) -> bytes:
    """The code the program counter starts at: the rest of its mapping (at most 64 KiB)."""
    for lo, hi, _, _ in self.memory.ranges:
      if lo <= pgm < hi: return self.memory.read(pgm, min(hi - pgm, 0x10000))
    raise MemoryFault(f"memory fault: instruction fetch at {pgm:#x}, no mapping", pgm)

  def sdma(self, q: MockQueue, w: list[int], avail: int, ring: Any, start: int, ndw: int) -> int:
    op = w[0] & 0xFF
    if op not in hw.SDMA_PKT_DWORDS: raise MockError(f"SDMA: unsupported opcode {op} (header {w[0]:#010x}) at ring dword {start}")
    n = hw.SDMA_PKT_DWORDS[op]
    if n > avail: raise MockError(f"SDMA: packet op {op} of {n} dwords runs past the write pointer")
    try:
      if op == hw.SDMA_OP_COPY:
        if w[0] >> 8 & 0xFF != hw.SDMA_SUBOP_COPY_LINEAR: raise MockError(f"SDMA: copy sub-op {w[0] >> 8 & 0xFF} is not supported")
        nbytes = (w[1] & 0x3FFFFF) + 1
        src, dst = w[3] | w[4] << 32, w[5] | w[6] << 32
        self.memory.view(dst, nbytes)[:] = self.memory.view(src, nbytes)
      elif op == hw.SDMA_OP_FENCE: self.memory.write(w[1] | w[2] << 32, struct.pack("<I", w[3]))
      elif op == hw.SDMA_OP_POLL_REGMEM:
        if not w[0] >> 31: raise MockError("SDMA: POLL_REGMEM on a register is not supported")
        val = struct.unpack("<I", self.memory.read(w[1] | w[2] << 32, 4))[0] & w[4]
        if not compare(w[0] >> 28 & 7, val, w[3]): return 0
    except MemoryFault as e: return self.fault(q, e)
    return n

def ring_words(ring: Any, start: int, n: int, ndw: int) -> list[int]:
  """n dwords of a ring from dword `start`, wrapping around its end."""
  start %= ndw
  if start + n <= ndw: return ring[start:start + n].tolist()
  return ring[start:].tolist() + ring[:start + n - ndw].tolist()

def compare(func: int, val: int, ref: int) -> bool:
  """The WAIT_REG_MEM / POLL_REGMEM compare functions."""
  ops = {0: lambda: True, 1: lambda: val < ref, 2: lambda: val <= ref, 3: lambda: val == ref, 4: lambda: val != ref, 5: lambda: val >= ref,
         6: lambda: val > ref}
  if func not in ops: raise MockError(f"wait compare function {func} is reserved")
  return ops[func]()
