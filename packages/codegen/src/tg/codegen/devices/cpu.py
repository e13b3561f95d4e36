"""CPU: C source compiled by the system C compiler into a shared object, loaded with ctypes and run on host threads."""
from __future__ import annotations
import ctypes, functools, os, shutil, subprocess, tempfile, time
from typing import Any
from tg.codegen.device import Buffer, Compiled, Compiler, MallocAllocator, OutOfBoundsError
from tg.uop import getenv
from tg.codegen.devices.cpu_pool import MAX_THREADS, Batch, run_parallel
from tg.codegen.renderer import Renderer

class CompilerError(RuntimeError):
  """The C compiler is missing or rejected a source."""

class ClangCompiler(Compiler):
  """C -> shared object bytes, by clang or gcc. -ffp-contract=on fuses a*b+c only inside one C expression, which the C
  renderer writes for MULACC alone (every other op is its own statement, so stays two IEEE roundings; gcc before 14 fuses
  nothing); -fno-math-errno lets sqrt be an instruction; -fwrapv gives signed integers the wraparound the C renderer relies on.
  `family_flags` are one compiler's own: -fno-slp-vectorize because clang 19's SLP vectorizer miscompiles some of the kernels
  (the renderer writes the vectors itself); gcc rejects that flag."""
  flags: tuple[str, ...] = ("-O2", "-march=native", "-shared", "-fPIC", "-ffp-contract=on", "-fno-math-errno", "-fwrapv")
  family_flags: dict[str, tuple[str, ...]] = {"clang": ("-fno-slp-vectorize",), "gcc": ()}
  @functools.cached_property
  def cc(self) -> str:
    """CC from the environment, else clang, clang-19 or gcc, whichever is installed first."""
    names = [os.environ["CC"]] if os.environ.get("CC") else ["clang", "clang-19", "gcc", "cc"]
    for n in names:
      if path := shutil.which(n): return path
    raise CompilerError(f"no C compiler found (looked for {', '.join(names)}): install one with `apt-get install clang` (or gcc), "
                        "or set DEV=PYTHON to run on the interpreter, which needs none (slowly)")
  @functools.cached_property
  def version(self) -> str:
    try: return subprocess.run([self.cc, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    except OSError as e: raise CompilerError(f"C compiler {self.cc} doesn't run: {e}") from None
  @functools.cached_property
  def family(self) -> str:
    """'clang' or 'gcc' from the --version banner (Debian's cc is gcc), '' for another compiler (common flags only)."""
    first = self.version.partition("\n")[0].lower()
    return "clang" if "clang" in first else "gcc" if "gcc" in first or "free software foundation" in self.version.lower() else ""
  @property
  def all_flags(self) -> tuple[str, ...]: return self.flags + self.family_flags.get(self.family, ())
  @functools.cached_property
  def cachekey(self) -> str: return f"{self.cc}\n{self.version}\n{' '.join(self.all_flags)}"
  def compile(self, src: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
      out = os.path.join(tmp, "kernel.so")
      r = subprocess.run([self.cc, *self.all_flags, "-x", "c", "-", "-o", out], input=src, capture_output=True, text=True)
      if r.returncode != 0: raise CompilerError(f"{os.path.basename(self.cc)} failed to compile:\n{r.stderr}\n--- source ---\n{src}")
      with open(out, "rb") as f: return f.read()

def cpu_threads() -> int:
  """CPU_THREADS, else one per core; at most MAX_THREADS (the pool's workers and the caller)."""
  return getenv("CPU_THREADS", min(os.cpu_count() or 1, MAX_THREADS), lo=1, hi=MAX_THREADS)

def load_library(lib: bytes) -> ctypes.CDLL:
  with tempfile.NamedTemporaryFile(suffix=".so") as f:  # dlopen maps the file: it may go once loaded
    f.write(lib)
    f.flush()
    return ctypes.CDLL(f.name)

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
  return CRenderer(threads=cpu_threads)

def _address(b: Buffer) -> int: return ctypes.addressof(b.ensure_allocated()._buf)

class CPUGraph:
  """CPU kernels launched in order by one call into C (cpu_pool.Batch), each on its own number of threads."""
  def __init__(self, runs: list[tuple[Any, list[Buffer]]]):
    self.bufs = [list(bufs) for _, bufs in runs]  # alive as long as the rows hold their addresses
    self.vars = [(k, len(bufs) + i, v.arg[0]) for k, (r, bufs) in enumerate(runs) for i, v in enumerate(r.p.vars)]
    self.batch = Batch([(r._prg.job, [_address(b) for b in bufs] + [0] * len(r.p.vars), r.p.global_size[0]) for r, bufs in runs])
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
