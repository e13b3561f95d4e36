"""The AMD device: buffers in VRAM copied through SDMA, kernels from LLVM code objects launched on a PM4 compute queue,
each queue with a timeline signal of its own: a copy waits only for the kernels that use its buffers (tg.amd.timeline).
MOCKGPU=1 swaps the kernel interface for the virtual GPU; nothing else changes."""
from __future__ import annotations
import dataclasses, functools, os, sys, time
from typing import Any, Sequence
from tg.uop import getenv, round_up
from tg.codegen.device import Allocator, Buffer, Compiled
from tg.codegen.renderer import Renderer
from tg.amd.compiler import AMDCompiler
from tg.amd.driver import PAGE, GPUFault, KFDAlloc, KFDDevice, LoadedCode, PM4Queue, SDMAQueue, Signal
from tg.amd.kfd import KFD, HostKFD
from tg.amd_emu.codeobj import hidden_args, load_image, read
from tg.amd.profile import profiler
from tg.amd.timeline import Fence, Timeline

KFD_PATH = "/dev/kfd"

class NoGPUError(RuntimeError):
  """DEV=AMD on a machine where KFD can't be opened: says why and how to use the virtual GPU instead."""

def open_kfd() -> KFD:
  """The virtual GPU with MOCKGPU=1, else the kernel's KFD (a NoGPUError naming /dev/kfd and MOCKGPU=1 when it isn't usable)."""
  if getenv("MOCKGPU", False):
    from tg.amd.mockgpu import MockKFD
    return MockKFD()
  fix = "set MOCKGPU=1 to run on tg's virtual GPU (MOCKGPU_ARCH=rdna3 or rdna4) instead"
  if not os.path.exists(KFD_PATH):
    raise NoGPUError(f"no AMD GPU: {KFD_PATH} does not exist (no AMD GPU, or the amdgpu kernel driver isn't loaded); {fix}")
  if not os.access(KFD_PATH, os.R_OK | os.W_OK):
    raise NoGPUError(f"no AMD GPU: {KFD_PATH} exists but this user can't open it read/write (join the 'render' group); {fix}")
  return HostKFD()

class SlabPool:
  """GPU memory where small pieces are carved from shared 2 MiB allocations (one slab per power-of-two size class, each piece
  aligned to its size, at least 256 bytes) and big ones are allocations of their own: a GPU maps each allocation, and a
  program of many small buffers or kernels would otherwise need a mapping for each."""
  SLAB, SMALLEST, LARGEST = 2 << 20, 256, 64 << 10
  def __init__(self, kfd: KFDDevice, **flags: bool):
    self.kfd, self.flags = kfd, flags
    self.slots: dict[int, list[KFDAlloc]] = {}  # size class -> free slots
    self.slabs: dict[int, KFDAlloc] = {}        # handle -> slab
  def alloc(self, nbytes: int) -> KFDAlloc:
    if nbytes > self.LARGEST: return self.kfd.alloc(nbytes, **self.flags)
    size = max(self.SMALLEST, 1 << (nbytes - 1).bit_length())
    if not self.slots.get(size):
      slab = self.kfd.alloc(self.SLAB, **self.flags)
      self.slabs[slab.handle] = slab
      self.slots[size] = [dataclasses.replace(slab, va=slab.va + off, size=size) for off in reversed(range(0, self.SLAB, size))]
    return self.slots[size].pop()
  def free(self, mem: KFDAlloc) -> None:
    if mem.handle in self.slabs: self.slots[mem.size].append(mem)
    else: self.kfd.free(mem)

class AMDAllocator(Allocator):
  """VRAM buffers from a SlabPool. Host data moves through two host-visible staging halves and the SDMA engine: the host
  waits only for the copy that last used a half, and a copy only for the kernels that use its device buffer, so copies run
  while kernels do."""
  def __init__(self, dev: AMDDevice):
    super().__init__()
    self.dev = dev
    self.pool = SlabPool(dev.kfd, vram=True, host=False)
    self.stage_done: list[Fence | None] = [None, None]  # the copy after which each staging half is free
  def _alloc(self, nbytes: int) -> KFDAlloc: return self.pool.alloc(nbytes)
  def _free(self, opaque: KFDAlloc, nbytes: int) -> None:
    self.dev.synchronize()
    self.pool.free(opaque)
  def offset(self, opaque: KFDAlloc, nbytes: int, offset: int) -> KFDAlloc: return dataclasses.replace(opaque, va=opaque.va + offset, size=nbytes)
  def transfer(self, dest: KFDAlloc, src: Buffer) -> bool:
    """A copy from another AMD GPU (or this one) by this GPU's SDMA engine, reading the source GPU's memory directly (mapped
    into this GPU's address space as a peer), after the source's queued work on it; it returns once the copy is done, so the
    source may be written again."""
    if not isinstance(src.allocator, AMDAllocator): return False
    sdev, mem = src.allocator.dev, src._buf
    sdev.finish([mem])
    if sdev is not self.dev: sdev.kfd.map_peer(mem, self.dev.kfd.gpu_id)
    self.dev.wait(self.dev.submit(self.dev.sdma, SDMAQueue.copy(dest.va, mem.va, src.nbytes), [dest]))
    return True
  def _stage(self, k: int) -> KFDAlloc:
    """Staging half k, once the copy that last used it is done."""
    half = self.dev.staging.size // 2
    if (done := self.stage_done[k]) is not None: self.dev.wait(done)
    return dataclasses.replace(self.dev.staging, va=self.dev.staging.va + k * half, size=half)
  def copyin(self, dest: KFDAlloc, src: memoryview) -> None:
    half = self.dev.staging.size // 2
    for i, off in enumerate(range(0, src.nbytes, half)):
      stage, n = self._stage(i % 2), min(half, src.nbytes - off)
      stage.view(0, n)[:] = src[off:off + n]
      self.stage_done[i % 2] = self.dev.submit(self.dev.sdma, SDMAQueue.copy(dest.va + off, stage.va, n), [dest])
  def copyout(self, dest: memoryview, src: KFDAlloc) -> None:
    half = self.dev.staging.size // 2
    for off in range(0, dest.nbytes, half):
      stage, n = self._stage(0), min(half, dest.nbytes - off)
      self.stage_done[0] = done = self.dev.submit(self.dev.sdma, SDMAQueue.copy(stage.va, src.va + off, n), [src])
      self.dev.wait(done)
      dest[off:off + n] = stage.view(0, n)

class AMDProgram:
  """A kernel of a code object, loaded into GPU memory; a call writes its kernel arguments and queues a dispatch."""
  def __init__(self, dev: AMDDevice, name: str, lib: bytes):
    co = read(lib)
    if name not in co.kernels: raise RuntimeError(f"no kernel {name!r} in the code object (it has {', '.join(co.kernels)})")
    self.dev, self.name, self.kernel, self.codeobj = dev, name, co.kernels[name], co
    kd = self.kernel.descriptor
    unsupported = set(kd.user_sgprs) - {"kernarg_segment_ptr"}
    if unsupported: raise RuntimeError(f"{name}: kernels that need {', '.join(sorted(unsupported))} are not supported")
    image = load_image(lib)
    self.mem = dev.code_pool.alloc(len(image))
    self.mem.view(0, len(image))[:] = image
    self.pgm = self.mem.va + co.text_addr + self.kernel.code_offset
    self.code = LoadedCode(name, self.mem.va + co.text_addr, self.pgm, co.text)
    dev.kfd.register_code(self.code)
    self.args = sorted(self.kernel.args, key=lambda a: a[".offset"])
    self.kernarg_size = max(kd.kernarg_size, 16)
    self.rsrc = (kd.rsrc1, kd.rsrc2 | (kd.private_segment_size > 0), kd.rsrc3)
    if kd.private_segment_size: dev.ensure_scratch(kd.private_segment_size)
    if getenv("PROFILE", False): profiler().add_program(self)
  def __del__(self, finalizing=sys.is_finalizing) -> None:  # bound now: at exit the module's globals are gone
    if finalizing(): return  # the process is going: its GPU memory goes with it (and ctypes may be gone already)
    if hasattr(self, "code"): self.dev.kfd.unregister_code(self.code.lo)
    if hasattr(self, "mem"): self.dev.code_pool.free(self.mem)
  def fill_args(self, kernarg: memoryview, bufs: Sequence[KFDAlloc], global_size: tuple[int, int, int], local_size: tuple[int, int, int],
                vals: Sequence[int]) -> None:
    """Write the kernel arguments: buffer addresses and values in argument order, the hidden launch sizes, zeros elsewhere."""
    kernarg[:] = bytes(len(kernarg))
    hidden = hidden_args(global_size, local_size)
    it_bufs, it_vals = iter(bufs), iter(vals)
    for a in self.args:
      kind, off, size = a.get(".value_kind", ""), a[".offset"], a[".size"]
      if kind == "global_buffer": v = next(it_bufs).va
      elif kind == "by_value": v = next(it_vals)
      elif kind in hidden: v = hidden[kind]
      else: continue  # other hidden arguments stay zero
      kernarg[off:off + size] = (v % (1 << (8 * size))).to_bytes(size, "little")

  def __call__(self, *bufs: KFDAlloc, global_size: tuple[int, int, int] = (1, 1, 1), local_size: tuple[int, int, int] = (1, 1, 1),
               vals: tuple[int, ...] = (), wait: bool = False) -> float | None:
    kernarg, va = self.dev.kernargs(self.kernarg_size)
    self.fill_args(kernarg, bufs, global_size, local_size, vals)
    st = time.perf_counter()
    q = self.dev.compute
    self.dev.submit(q, q.scratch_regs() + q.dispatch(self.pgm, self.rsrc, [va & 0xFFFFFFFF, va >> 32], global_size, local_size), bufs)
    if not wait: return None
    self.dev.synchronize()
    return time.perf_counter() - st

class AMDDevice(Compiled):
  """An AMD GPU through KFD (or the virtual one with MOCKGPU=1)."""
  def __init__(self, device: str = "AMD"):
    index = int(device.partition(":")[2] or 0)
    self.kfd = KFDDevice(open_kfd(), index)
    self.target = self.kfd.target
    self.compute, self.sdma = PM4Queue(self.kfd), SDMAQueue(self.kfd)
    self.signals = self.kfd.alloc(PAGE, vram=False, uncached=True)
    self.timelines = {q: Timeline(q, Signal(self.kfd, self.signals, 8 * i)) for i, q in enumerate((self.compute, self.sdma))}
    self.kernarg_mem, self.kernarg_off = self.kfd.alloc(1 << 20, vram=False), 0
    self.staging = self.kfd.alloc(2 << 20, vram=False)
    self.code_pool = SlabPool(self.kfd, vram=True, host=True, executable=True)  # kernels' loaded images
    self.submissions = 0  # command streams submitted to the queues (bench/amd.py counts them per jitted step)
    super().__init__(device, AMDAllocator(self), AMDCompiler(self.target), functools.partial(AMDProgram, self),
                     functools.partial(amd_renderer, self.target, device))
    if getenv("PROFILE", False): profiler().add_device(self)

  def submit(self, q: PM4Queue | SDMAQueue, cmds: list[int], bufs: Sequence[KFDAlloc] = ()) -> Fence:
    """Queue commands after the queue's earlier work and after the other queue's unfinished work on `bufs` (the buffers they
    touch); returns the fence that marks them done."""
    self.submissions += 1
    return self.timelines[q].submit(cmds, bufs, next(t for k, t in self.timelines.items() if k is not q))

  def kernargs(self, size: int) -> tuple[memoryview, int]:
    """Room for one dispatch's kernel arguments in the kernarg ring (waits for the GPU before reusing it)."""
    size = round_up(size, 64)
    if self.kernarg_off + size > self.kernarg_mem.size:
      self.synchronize()
      self.kernarg_off = 0
    off, self.kernarg_off = self.kernarg_off, self.kernarg_off + size
    view = self.kernarg_mem.view(off, size)
    view[:] = bytes(size)
    return view, self.kernarg_mem.va + off

  def ensure_scratch(self, lane_bytes: int) -> None:
    """Grow the compute queue's scratch to `lane_bytes` per work-item if it is smaller (after the queue drains)."""
    if lane_bytes <= self.compute.scratch_layout.lane_bytes: return
    self.synchronize()
    self.compute.set_scratch(lane_bytes)

  def graph(self, runs: list[tuple[Any, list[Any]]]) -> Any:
    from tg.amd.graph import AMDGraph
    return AMDGraph(self, runs)

  def synchronize(self, timeout: float = 60.0) -> None:
    """Wait for all queued work on both queues (see wait)."""
    for t in self.timelines.values(): self.wait(t.fence(), timeout)

  def finish(self, bufs: Sequence[KFDAlloc]) -> None:
    """Wait for the work queued so far that touches `bufs` (see wait)."""
    for t in self.timelines.values():
      if (f := t.touching(bufs)) is not None: self.wait(f)

  def wait(self, fence: Fence, timeout: float = 60.0) -> None:
    """Wait for the work up to `fence`. A GPU fault, or no progress within `timeout` s, resets both queues (the work queued
    after it is lost) and raises (GPUFault naming the kernel and where, or TimeoutError); work queued afterwards runs."""
    try: fence.signal.wait(fence.value, timeout)
    except (GPUFault, TimeoutError):
      for t in self.timelines.values(): t.reset()
      raise

def amd_renderer(target: str, device: str) -> Renderer:
  from tg.codegen.renderer.llvmir import AMDGPURenderer
  return AMDGPURenderer(target, device)

