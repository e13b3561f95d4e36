"""CPU: C source compiled by the system C compiler (devices.clang) into a shared object, loaded with ctypes and run on host
threads (devices.cpu_pool)."""
from __future__ import annotations
import ctypes, os, time
from typing import Any
from tg.codegen.device import Buffer, Compiled, Device, MallocAllocator, OutOfBoundsError
from tg.uop import getenv
from tg.codegen.devices.clang import ClangCompiler, load_library
from tg.codegen.devices.cpu_pool import MAX_THREADS, Batch, Lanes, run_parallel
from tg.codegen.renderer import Renderer

def cpu_threads() -> int:
  """CPU_THREADS, else one per core; at most MAX_THREADS (the pool's workers and the caller)."""
  return getenv("CPU_THREADS", min(os.cpu_count() or 1, MAX_THREADS), lo=1, hi=MAX_THREADS)

class CPUProgram:
  """A kernel of a shared object. ABI: void NAME(T0* data0, ..., long long var_a, ..., int core_id, int n_cores);
  it runs on global_size[0] host threads, thread i with core_id=i, through NAME_job (see cpu_pool) when that is more than 1."""
  def __init__(self, name: str, lib: bytes):
    self.name, self.lib = name, load_library(lib)
    self.fxn = getattr(self.lib, name)
    self.fxn.restype = None
    self.job = getattr(self.lib, f"{name}_job", None)
    try: self.oob: ctypes.Array | None = (ctypes.c_longlong * 3).in_dll(self.lib, "tg_oob")  # built with CHECK_OOB=1
    except ValueError: self.oob = None
  def __call__(self, *bufs: ctypes.Array, global_size: tuple[int, int, int] = (1, 1, 1), local_size: tuple[int, int, int] = (1, 1, 1),
               vals: tuple[int, ...] = (), wait: bool = False) -> float | None:
    n = global_size[0]
    st = time.perf_counter()
    if n == 1: self.fxn(*bufs, *(ctypes.c_longlong(v) for v in vals), ctypes.c_int(0), ctypes.c_int(1))
    elif self.job is None: raise RuntimeError(f"{self.name} can't run on {n} threads: the library has no {self.name}_job (see cpu_pool)")
    else: run_parallel(self.job, [ctypes.addressof(b) for b in bufs] + list(vals), n)
    if self.oob is not None and self.oob[0]: self._raise_oob()
    return time.perf_counter() - st if wait else None
  def _raise_oob(self) -> None:
    assert self.oob is not None
    access, index = self.oob[1], self.oob[2]
    self.oob[0] = 0
    info = (ctypes.c_char_p * (access + 1)).in_dll(self.lib, "tg_oob_info")[access]
    what, slot, size = info.decode().split("|")  # type: ignore[union-attr]
    raise OutOfBoundsError(self.name, what, index, int(slot), int(size))

def c_renderer() -> Renderer:
  """The C renderer, imported on first use (NULL shares it, to generate inspectable code)."""
  from tg.codegen.renderer.cstyle import CRenderer
  from tg.codegen.devices.host import host_isa
  return CRenderer(threads=cpu_threads, isa=host_isa)

def _address(b: Buffer) -> int: return ctypes.addressof(b.ensure_allocated()._buf)

def _lane_waits(runs: list[tuple[Any, list[Buffer]]], lanes: list[int]) -> list[list[int]]:
  """For each kernel, the last kernel of every other lane it must wait for: one before it that writes memory it reads or
  writes, or reads memory it writes (a lane runs in order, so waiting for its last such kernel covers the earlier ones)."""
  writer: dict[int, int] = {}
  readers: dict[int, list[int]] = {}
  out = []
  for k, (r, bufs) in enumerate(runs):
    deps = [writer[b] for j in r.p.ins + r.p.outs if (b := id(bufs[j].base)) in writer]
    for j in r.p.outs: deps += readers.pop(id(bufs[j].base), [])
    for j in r.p.ins: readers.setdefault(id(bufs[j].base), []).append(k)
    for j in r.p.outs: writer[id(bufs[j].base)] = k
    last: dict[int, int] = {}
    for d in deps:
      if lanes[d] != lanes[k]: last[lanes[d]] = max(last.get(lanes[d], -1), d)
    out.append(sorted(last.values()))
  return out

class CPUGraph:
  """CPU kernels launched in order by one call into C (cpu_pool.Batch), each on its own number of threads; kernels of
  several CPU devices in lanes instead (cpu_pool.Lanes: a device per lane, a core per device), see CPUDevice.graph_many."""
  def __init__(self, runs: list[tuple[Any, list[Buffer]]], devices: tuple[str, ...] = ()):
    self.bufs = [list(bufs) for _, bufs in runs]  # alive as long as the rows hold their addresses
    self.vars = [(k, len(bufs) + i, v.arg[0]) for k, (r, bufs) in enumerate(runs) for i, v in enumerate(r.p.vars)]
    words = [[_address(b) for b in bufs] + [0] * len(r.p.vars) for r, bufs in runs]
    if devices:
      lanes = [devices.index(bufs[0].device) for _, bufs in runs]
      self.batch: Batch = Lanes([(r._prg.job, w, lane) for (r, _), w, lane in zip(runs, words, lanes)], _lane_waits(runs, lanes))
    else: self.batch = Batch([(r._prg.job, w, r.p.global_size[0]) for (r, _), w in zip(runs, words)])
  def update(self, k: int, slot: int, buf: Buffer) -> None:
    self.bufs[k][slot] = buf
    self.batch.set(k, slot, _address(buf))
  def __call__(self, var_vals: dict[str, int]) -> None:
    for k, i, name in self.vars: self.batch.set(k, i, var_vals[name])
    self.batch()

class CPUDevice(Compiled):
  def __init__(self, device: str = "CPU"): super().__init__(device, MallocAllocator(), ClangCompiler(), CPUProgram, c_renderer)
  def graph(self, runs: list[tuple[Any, list[Buffer]]]) -> CPUGraph | None:
    return CPUGraph(runs) if all(r._prg.job is not None for r, _ in runs) else None
  def graph_many(self, runs: list[tuple[Any, list[Buffer]]]) -> CPUGraph | None:
    """Kernels of several CPU devices side by side, a device per core, when there is a core for each device and no second
    one (each device's kernels on their own core beat all the cores on every kernel of one device after the other: no
    kernel waits for the other cores at its end, and the devices' work overlaps). Else None."""
    devices = tuple(dict.fromkeys(bufs[0].device for _, bufs in runs))
    if not all(isinstance(Device[d], CPUDevice) for d in devices) or not len(devices) <= cpu_threads() < 2 * len(devices): return None
    return CPUGraph(runs, devices) if all(r._prg.job is not None for r, _ in runs) else None
