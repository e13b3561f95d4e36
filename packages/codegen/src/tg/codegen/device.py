"""The device interface: buffers and their allocators, compilers with an on-disk cache, the Compiled device base
class, and the Device registry that finds devices through the `tg.devices` entry points."""
from __future__ import annotations
import concurrent.futures, contextlib, ctypes, functools, hashlib, importlib.metadata, mmap, os
from typing import Any, Callable, Iterator, Protocol
from tg.uop import DType, ContextVar, getenv
from tg.codegen.renderer import Renderer
from tg.codegen.diskcache import diskcache_get, diskcache_put

CHECK_OOB = ContextVar("CHECK_OOB", 0)  # CPU kernels check every global load/store and raise OutOfBoundsError (PYTHON always does)

class OutOfBoundsError(IndexError):
  """A kernel read or wrote outside a buffer: the same message from every device that checks."""
  def __init__(self, kernel: str, what: str, index: int, slot: int, size: int):
    super().__init__(f"kernel {kernel!r}: out of bounds: {what} at element {index} of buffer {slot} ({size} elements)")

# ***** memory *****

class Allocator:
  """A device's memory. Subclasses implement _alloc/_free, copyin/copyout and offset; freed buffers are kept by size
  and handed out again (most recently freed first), because allocating device memory is slow and sizes repeat."""
  def __init__(self) -> None: self.cache: dict[int, list[Any]] = {}
  def alloc(self, nbytes: int) -> Any:
    if reuse := self.cache.get(nbytes): return reuse.pop()
    try: return self._alloc(nbytes)
    except MemoryError:
      self.free_cache()
      return self._alloc(nbytes)
  def free(self, opaque: Any, nbytes: int) -> None: self.cache.setdefault(nbytes, []).append(opaque)
  def free_cache(self) -> None:
    """Really free every cached buffer."""
    for nbytes, opaques in self.cache.items():
      for o in opaques: self._free(o, nbytes)
    self.cache.clear()
  def _alloc(self, nbytes: int) -> Any: raise NotImplementedError(f"{type(self).__name__} can't allocate")
  def _free(self, opaque: Any, nbytes: int) -> None: pass
  def copyin(self, dest: Any, src: memoryview) -> None: raise NotImplementedError(f"{type(self).__name__} can't copy in")
  def copyout(self, dest: memoryview, src: Any) -> None: raise NotImplementedError(f"{type(self).__name__} can't copy out")
  def offset(self, opaque: Any, nbytes: int, offset: int) -> Any:
    """A handle to `nbytes` bytes at byte `offset` inside `opaque`, sharing its memory."""
    raise NotImplementedError(f"{type(self).__name__} has no buffer views")
  def host_view(self, opaque: Any) -> memoryview | None:
    """The buffer's bytes themselves, when the host can address them (a copy between devices then writes or reads them
    directly); None when it can't."""
    return None
  def transfer(self, dest: Any, src: Buffer) -> bool:
    """Copy all of src (a buffer on another device) into dest with this device's own means (a copy engine); False when
    it has none for src's device, and the copy goes through host memory."""
    return False

HUGE_PAGE = 2 << 20  # x86-64's transparent huge page

def host_memory(nbytes: int) -> ctypes.Array:
  """nbytes of zeroed host memory as a ctypes byte array. From one huge page on it is its own mapping, starting at a huge
  page and advised to be backed by huge pages (MADV_HUGEPAGE, as numpy does for its big arrays): with 4 KB pages a
  streaming read of 64 MB on the 2-core EPYC VM ran at 8-17 GB/s, with the advice at 22-24 (bench/cpu.py's limit)."""
  if nbytes < HUGE_PAGE or not hasattr(mmap, "MADV_HUGEPAGE"): return (ctypes.c_uint8 * nbytes)()
  try: m = mmap.mmap(-1, nbytes + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # private: shared memory ignores the advice
  except OSError as e: raise MemoryError(f"can't map {nbytes} bytes of host memory: {e}") from e  # Allocator.alloc frees its cache and retries
  start = -ctypes.addressof(ctypes.c_uint8.from_buffer(m)) % HUGE_PAGE
  m.madvise(mmap.MADV_HUGEPAGE)
  return (ctypes.c_uint8 * nbytes).from_buffer(m, start)  # keeps m alive; unmapped when the last view is gone

class MallocAllocator(Allocator):
  """Host memory as ctypes byte arrays: C kernels take them as pointers, Python reads them through memoryviews."""
  def _alloc(self, nbytes: int) -> ctypes.Array: return host_memory(nbytes)
  def copyin(self, dest: ctypes.Array, src: memoryview) -> None: memoryview(dest).cast("B")[:] = src.cast("B")
  def copyout(self, dest: memoryview, src: ctypes.Array) -> None: dest.cast("B")[:] = memoryview(src).cast("B")
  def offset(self, opaque: ctypes.Array, nbytes: int, offset: int) -> ctypes.Array: return (ctypes.c_uint8 * nbytes).from_buffer(opaque, offset)
  def host_view(self, opaque: ctypes.Array) -> memoryview: return memoryview(opaque).cast("B")

class GlobalCounters:
  """tinygrad's counters. Since reset(): kernel_count launches, global_ops estimated ALU ops and global_mem bytes loaded
  and stored by them, time_sum_s their time when launches are timed (DEBUG >= 2). mem_used: bytes of device memory
  allocated now (buffers the device allocated, not views nor wrapped memory), exact and never reset; mem_peak: the most
  mem_used has been since reset() (which sets it to mem_used), to see what a computation needs at its high point."""
  global_ops = 0
  global_mem = 0
  kernel_count = 0
  time_sum_s = 0.0
  mem_used = 0
  mem_peak = 0
  @classmethod
  def reset(cls) -> None: cls.global_ops, cls.global_mem, cls.kernel_count, cls.time_sum_s, cls.mem_peak = 0, 0, 0, 0.0, cls.mem_used
  @classmethod
  @contextlib.contextmanager
  def kept(cls) -> Iterator[None]:
    """The launch counters (not the memory ones) as they were before the block: what ran in it isn't counted."""
    was = cls.global_ops, cls.global_mem, cls.kernel_count, cls.time_sum_s
    try: yield
    finally: cls.global_ops, cls.global_mem, cls.kernel_count, cls.time_sum_s = was

class Buffer:
  """`size` elements of `dtype` on a device. A view (base given) is `size` elements at byte `offset` of its base's memory.
  `_buf` is the allocator's opaque handle, what a Program takes."""
  def __init__(self, device: str, size: int, dtype: DType, opaque: Any = None, base: Buffer | None = None, offset: int = 0):
    if base is not None and base._base is not None: base, offset = base._base, base.offset + offset  # views of views share the root
    self.device, self.size, self.dtype, self.offset, self._base = Device.canonicalize(device), size, dtype, offset, base
    if base is not None and (base.device != self.device or offset < 0 or offset + self.nbytes > base.nbytes):
      raise ValueError(f"view of {self.nbytes} bytes at offset {offset} doesn't fit in a {base.nbytes}-byte buffer on {base.device}")
    self._owned, self._allocator = False, None
    if opaque is not None: self.allocate(opaque)
  @property
  def base(self) -> Buffer: return self._base if self._base is not None else self
  @property
  def nbytes(self) -> int: return self.size * self.dtype.itemsize
  @property
  def allocator(self) -> Allocator:
    """The device's allocator, found on first use (a Buffer opens no device until then; not a cached_property: on Python
    3.11 its first read takes a lock, and most buffers are read once, a tiny op's output)."""
    if (a := self._allocator) is None: a = self._allocator = Device[self.device].allocator
    return a
  @allocator.setter
  def allocator(self, a: Allocator) -> None: self._allocator = a  # (this buffer's own: memory the host can't address, in tests)
  @property
  def is_allocated(self) -> bool: return hasattr(self, "_buf")
  def allocate(self, opaque: Any = None) -> Buffer:
    if self.is_allocated: raise RuntimeError(f"{self} is already allocated")
    if self._base is not None:
      if not self._base.is_allocated: self._base.allocate()
      self._buf = self.allocator.offset(self._base._buf, self.nbytes, self.offset)
    else:
      self._buf, self._owned = (opaque, False) if opaque is not None else (self.allocator.alloc(self.nbytes), True)
      if self._owned:
        GlobalCounters.mem_used += self.nbytes
        GlobalCounters.mem_peak = max(GlobalCounters.mem_peak, GlobalCounters.mem_used)
    return self
  def ensure_allocated(self) -> Buffer: return self if self.is_allocated else self.allocate()
  def deallocate(self) -> None:
    if self._owned:
      self.allocator.free(self._buf, self.nbytes)
      GlobalCounters.mem_used -= self.nbytes
    if self.is_allocated: del self._buf
    self._owned = False
  def __del__(self) -> None:
    if getattr(self, "_owned", False): self.deallocate()
  def view(self, size: int, dtype: DType, offset: int) -> Buffer:
    """`size` elements of `dtype` at byte `offset` of this buffer, sharing its memory."""
    return Buffer(self.device, size, dtype, base=self, offset=offset)
  def copyin(self, mv: memoryview) -> Buffer:
    if (mv := mv.cast("B")).nbytes != self.nbytes: raise ValueError(f"copyin of {mv.nbytes} bytes into a {self.nbytes}-byte buffer")
    self.ensure_allocated().allocator.copyin(self._buf, mv)
    return self
  def copyout(self, mv: memoryview) -> memoryview:
    if (mv := mv.cast("B")).nbytes != self.nbytes: raise ValueError(f"copyout of a {self.nbytes}-byte buffer into {mv.nbytes} bytes")
    self.ensure_allocated().allocator.copyout(mv, self._buf)
    return mv
  def copy_from(self, src: Buffer) -> Buffer:
    """self = src, across devices: by this device's copy engine when it has one for src's, else one memcpy when either
    side's memory is host memory, else through a host bounce buffer."""
    if src.nbytes != self.nbytes: raise ValueError(f"copy of a {src.nbytes}-byte buffer into a {self.nbytes}-byte one")
    dst_buf = self.ensure_allocated()._buf
    if self.allocator.transfer(dst_buf, src.ensure_allocated()): return self
    if (mv := src.allocator.host_view(src._buf)) is not None: return self.copyin(mv)
    if (mv := self.allocator.host_view(dst_buf)) is not None: src.copyout(mv)
    else: self.copyin(src.copyout(memoryview(bytearray(src.nbytes))))
    return self
  def numpy(self) -> Any:
    """A numpy copy of the contents. numpy is imported only here (the `numpy` extra: `pip install "tg-codegen[numpy]"`)."""
    try: import numpy as np
    except ModuleNotFoundError: raise ModuleNotFoundError('Buffer.numpy() needs numpy: pip install "tg-codegen[numpy]"', name="numpy") from None
    if self.dtype.fmt is None: raise TypeError(f"numpy has no {self.dtype}: copyout the raw bytes instead")
    return np.frombuffer(self.copyout(memoryview(bytearray(self.nbytes))), dtype=np.dtype(self.dtype.fmt)).copy()
  def __repr__(self) -> str:
    return f"<Buffer {self.device} {self.size} {self.dtype}" + (f" view at {self.offset} of {self._base!r}" if self._base is not None else "") + ">"
  def __reduce__(self) -> tuple:
    """A buffer pickles as its device, size and dtype with its bytes when it holds any (a view as its base and offset),
    and unpickles into memory of its own: its handle means nothing in another process."""
    data = bytes(self.copyout(memoryview(bytearray(self.nbytes)))) if self._base is None and self.is_allocated else None
    return (_unpickle_buffer, (self.device, self.size, self.dtype, self._base, self.offset, data))

def _unpickle_buffer(device: str, size: int, dtype: DType, base: Buffer | None, offset: int, data: bytes | None) -> Buffer:
  b = Buffer(device, size, dtype, base=base, offset=offset)
  return b if data is None else b.copyin(memoryview(data))

# ***** compilers and the disk cache *****

class Compiler:
  """Source text -> the binary a device's runtime loads. The base one passes the source through as bytes."""
  @property
  def cachekey(self) -> str | None:
    """The compiler's identity (path, version, flags) for the disk cache; None: don't cache (compiling is cheap)."""
    return None
  def compile(self, src: str) -> bytes: return src.encode()
  def compile_cached(self, src: str) -> bytes:
    """compile(), through the disk cache keyed by the source and the compiler's identity (DISABLE_COMPILER_CACHE=1 turns it off)."""
    return self.compile_cached_many([src])[0]
  def compile_cached_many(self, srcs: list[str]) -> list[bytes]:
    """compile_cached of each source; those the cache lacks compile at the same time, one thread per core (a C compiler
    is a process of its own: a schedule's new kernels took 80 ms each, one after another)."""
    if self.cachekey is None or getenv("DISABLE_COMPILER_CACHE", False): return _each(self.compile, srcs)
    keys = [hashlib.sha256(f"{self.cachekey}\0{src}".encode()).hexdigest() for src in srcs]
    libs = [diskcache_get("compile_v1", key) for key in keys]
    missing = [i for i, lib in enumerate(libs) if lib is None]
    for i, lib in zip(missing, _each(self.compile, [srcs[i] for i in missing])): libs[i] = diskcache_put("compile_v1", keys[i], lib)
    return libs  # type: ignore[return-value]

def _each(fn: Callable[[str], bytes], srcs: list[str]) -> list[bytes]:
  """fn of each source, on as many threads as there are cores (and sources)."""
  if len(srcs) <= 1 or (cores := os.cpu_count() or 1) == 1: return [fn(src) for src in srcs]
  with concurrent.futures.ThreadPoolExecutor(min(cores, len(srcs))) as pool: return list(pool.map(fn, srcs))

# ***** devices *****

class Program(Protocol):
  """A loaded kernel: called with the buffers' opaque handles and the variable values; returns seconds taken when wait=True."""
  def __call__(self, *bufs: Any, global_size: tuple[int, int, int] = (1, 1, 1), local_size: tuple[int, int, int] = (1, 1, 1),
               vals: tuple[int, ...] = (), wait: bool = False) -> float | None: ...

class Graph(Protocol):
  """A batch of kernels launched by one call: `update(k, slot, buf)` swaps kernel k's buffer in a slot (kept for later
  calls), calling it launches them all with the variables' values."""
  def update(self, k: int, slot: int, buf: Buffer) -> None: ...
  def __call__(self, var_vals: dict[str, int]) -> None: ...

class Compiled:
  """A device that compiles kernels: `runtime(name, lib)` loads one. The renderer is built on first use, so that a device
  whose renderer needs something missing (a compiler's headers, another package) can still hold buffers."""
  def __init__(self, device: str, allocator: Allocator, compiler: Compiler, runtime: Callable[[str, bytes], Program],
               renderer: Callable[[], Renderer]):
    self.device, self.allocator, self.compiler, self.runtime, self._make_renderer = device, allocator, compiler, runtime, renderer
  @functools.cached_property
  def renderer(self) -> Renderer: return self._make_renderer()
  def synchronize(self) -> None:
    """Wait for all queued work (host devices run synchronously)."""
  def graph(self, runs: list[tuple[Any, list[Buffer]]]) -> Graph | None:
    """Kernels (CompiledRunner, buffers in slot order) to launch together in order with one call, when the device can:
    what a TinyJit replay uses to cut launch cost. None: launch them one by one."""
    return None
  def graph_many(self, runs: list[tuple[Any, list[Buffer]]]) -> Graph | None:
    """graph() of kernels on several devices, this one among them (in an order their dependencies allow), when the
    device can launch them all together; None: per device."""
    return None
  def __repr__(self) -> str: return f"<{type(self).__name__} {self.device}>"

@functools.lru_cache(maxsize=256)  # called for every buffer and device node made: a tiny op's realize makes several
def _canonical_name(name: str) -> str:
  base, _, num = name.partition(":")
  return base.upper() + (f":{num}" if num not in ("", "0") else "")

class _Device:
  """The registry: `Device["CPU"]` is the (cached) device; names come from the `tg.devices` entry points."""
  @functools.cached_property
  def _entries(self) -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name.upper(): ep for ep in importlib.metadata.entry_points(group="tg.devices")}
  @property
  def available(self) -> list[str]: return sorted(self._entries)
  def canonicalize(self, name: str) -> str:
    """'cpu' and 'CPU:0' -> 'CPU'; 'amd:1' -> 'AMD:1'."""
    return _canonical_name(name)
  def __getitem__(self, name: str) -> Compiled: return self._open(self.canonicalize(name))
  @functools.cache
  def _open(self, name: str) -> Compiled:
    if (ep := self._entries.get(name.partition(":")[0])) is None:
      raise RuntimeError(f"unknown device {name!r}; available: {', '.join(self.available)} (install the package that provides it)")
    return ep.load()(name)
  @functools.cached_property
  def DEFAULT(self) -> str:
    """DEV from the environment, else CPU (assign to change it)."""
    name = self.canonicalize(os.environ.get("DEV") or "CPU")
    self[name]  # fail early on an unknown DEV
    return name
  @property
  def default(self) -> Compiled:
    """The default device itself (tinygrad's `Device.default`): `Device[Device.DEFAULT]`."""
    return self[self.DEFAULT]
Device = _Device()
