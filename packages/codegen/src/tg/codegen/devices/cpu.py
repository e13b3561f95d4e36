"""CPU: C source compiled by the system C compiler into a shared object, loaded with ctypes and run on host threads."""
from __future__ import annotations
import concurrent.futures, ctypes, functools, os, shutil, subprocess, tempfile, time
from tg.codegen.device import Compiled, Compiler, MallocAllocator
from tg.codegen.renderer import Renderer

class ClangCompiler(Compiler):
  """C -> shared object bytes. -ffp-contract=on fuses a*b+c only inside one C expression, which the C renderer writes
  for MULACC alone (every other op is its own statement, so stays two IEEE roundings); -fno-math-errno lets sqrt be an
  instruction; -fwrapv gives signed integers the wraparound the C renderer relies on; -fno-slp-vectorize because clang 19's SLP
  vectorizer miscompiles some of the kernels (the renderer writes the vectors itself)."""
  flags = ("-O2", "-march=native", "-shared", "-fPIC", "-ffp-contract=on", "-fno-math-errno", "-fwrapv", "-fno-slp-vectorize")
  @functools.cached_property
  def cc(self) -> str:
    """CC from the environment, else clang, clang-19 or gcc, whichever is installed first."""
    names = [os.environ["CC"]] if os.environ.get("CC") else ["clang", "clang-19", "gcc", "cc"]
    for n in names:
      if path := shutil.which(n): return path
    raise RuntimeError(f"no C compiler found (looked for {', '.join(names)}): install one with `apt-get install clang` (or gcc)")
  @functools.cached_property
  def cachekey(self) -> str:
    version = subprocess.run([self.cc, "--version"], capture_output=True, text=True).stdout.strip()
    return f"{self.cc}\n{version}\n{' '.join(self.flags)}"
  def compile(self, src: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
      out = os.path.join(tmp, "kernel.so")
      r = subprocess.run([self.cc, *self.flags, "-x", "c", "-", "-o", out], input=src, capture_output=True, text=True)
      if r.returncode != 0: raise RuntimeError(f"{os.path.basename(self.cc)} failed to compile:\n{r.stderr}\n--- source ---\n{src}")
      with open(out, "rb") as f: return f.read()

@functools.cache
def _pool(workers: int) -> concurrent.futures.ThreadPoolExecutor:
  return concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="tg-cpu")

def cpu_threads() -> int: return int(os.environ.get("CPU_THREADS") or os.cpu_count() or 1)

class CPUProgram:
  """A kernel of a shared object. ABI: void NAME(T0* data0, ..., long long var_a, ..., int core_id, int n_cores);
  it runs on global_size[0] host threads (ctypes releases the GIL), thread i with core_id=i."""
  def __init__(self, name: str, lib: bytes):
    self.name = name
    with tempfile.NamedTemporaryFile(suffix=".so") as f:  # dlopen maps the file: it may go once loaded
      f.write(lib)
      f.flush()
      self.lib = ctypes.CDLL(f.name)
    self.fxn = getattr(self.lib, name)
    self.fxn.restype = None
  def __call__(self, *bufs: ctypes.Array, global_size: tuple[int, int, int] = (1, 1, 1), local_size: tuple[int, int, int] = (1, 1, 1),
               vals: tuple[int, ...] = (), wait: bool = False) -> float | None:
    args = (*bufs, *(ctypes.c_longlong(v) for v in vals))
    n = global_size[0]
    st = time.perf_counter()
    if n == 1: self.fxn(*args, ctypes.c_int(0), ctypes.c_int(1))
    else:  # the calling thread runs part 0 itself: one thread fewer to wake
      futures = [_pool(n).submit(self.fxn, *args, ctypes.c_int(i), ctypes.c_int(n)) for i in range(1, n)]
      self.fxn(*args, ctypes.c_int(0), ctypes.c_int(n))
      for fut in futures: fut.result()
    return time.perf_counter() - st if wait else None

def c_renderer() -> Renderer:
  """The C renderer, imported on first use (NULL shares it, to generate inspectable code)."""
  from tg.codegen.renderer.cstyle import CRenderer
  return CRenderer()

class CPUDevice(Compiled):
  def __init__(self, device: str = "CPU"): super().__init__(device, MallocAllocator(), ClangCompiler(), CPUProgram, c_renderer)
