"""The host C compiler (clang or gcc, found once per process) and loading what it builds: what the CPU device, its thread
pool and other packages' C (tg.codegen.clib) compile with."""
from __future__ import annotations
import ctypes, ctypes.util, functools, os, shutil, subprocess, tempfile
from tg.codegen.device import Compiler

class CompilerError(RuntimeError):
  """The C compiler is missing or rejected a source."""

class ClangCompiler(Compiler):
  """C -> shared object bytes, by clang or gcc. -ffp-contract=on fuses a*b+c only inside one C expression, which the C
  renderer writes for MULACC alone (every other op is its own statement, so stays two IEEE roundings; gcc before 14 fuses
  nothing); -mprefer-vector-width=512 keeps the renderer's 16-float vectors whole (tuned for an Intel server core, both
  compilers split them into 256-bit halves: a matmul's 16 accumulators then spilled, 1024 matmul 155 -> 316 GFLOP/s on a
  2-core Sapphire Rapids; nothing changes where AVX-512 is missing or already preferred, as on Zen 5); -fno-math-errno lets
  sqrt be an instruction; -fwrapv gives signed integers the wraparound the C renderer relies on. `family_flags` are one
  compiler's own: -fno-slp-vectorize because clang 19's SLP vectorizer miscompiles some of the kernels (the renderer writes
  the vectors itself); gcc rejects that flag. With glibc's vector math library (has_vector_math) a kernel links it when it
  calls it (--as-needed)."""
  common_flags: tuple[str, ...] = ("-march=native", "-mprefer-vector-width=512", "-shared", "-fPIC", "-ffp-contract=on", "-fno-math-errno", "-fwrapv")
  flags: tuple[str, ...] = ("-O2", *common_flags)
  family_flags: dict[str, tuple[str, ...]] = {"clang": ("-fno-slp-vectorize",), "gcc": ()}
  def __init__(self, opt_level: int = 2):
    if opt_level not in (0, 1, 2, 3): raise ValueError(f"opt_level {opt_level!r}: the C compiler takes 0, 1, 2 or 3 (-O0 ... -O3)")
    self.flags = (f"-O{opt_level}", *self.common_flags)
  @property
  def cc(self) -> str:
    """CC from the environment, else clang, clang-19 or gcc, whichever is installed first (looked up once per process per CC)."""
    return find_cc(os.environ.get("CC", ""))
  @property
  def version(self) -> str: return cc_version(self.cc)
  @property
  def family(self) -> str:
    """'clang' or 'gcc' from the --version banner (Debian's cc is gcc), '' for another compiler (common flags only)."""
    first = self.version.partition("\n")[0].lower()
    return "clang" if "clang" in first else "gcc" if "gcc" in first or "free software foundation" in self.version.lower() else ""
  @property
  def all_flags(self) -> tuple[str, ...]: return self.flags + self.family_flags.get(self.family, ())
  @property
  def libs(self) -> tuple[str, ...]: return ("-Wl,--as-needed", "-lmvec") if has_vector_math() else ()  # after the source
  @property
  def cachekey(self) -> str: return f"{self.cc}\n{self.version}\n{' '.join(self.all_flags + self.libs)}"
  def compile(self, src: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
      out = os.path.join(tmp, "kernel.so")
      r = subprocess.run([self.cc, *self.all_flags, "-x", "c", "-", "-o", out, *self.libs], input=src, capture_output=True, text=True)
      if r.returncode != 0: raise CompilerError(f"{os.path.basename(self.cc)} failed to compile:\n{r.stderr}\n--- source ---\n{src}")
      with open(out, "rb") as f: return f.read()

@functools.cache
def vector_math_lanes() -> int:
  """The float32 lanes of glibc's vector math library calls on this host (0: none): 16 where the CPU has AVX-512 and
  libmvec its 16-lane exp2f, log2f and sinf (_ZGVeN16v_*, glibc 2.35 on; 0.46 vs 0.80 ns an exp2 as two 8-lane calls),
  else 8 with AVX2 (_ZGVdN8v_*). One width for every call of a process: the two widths' exp2f and log2f differ in the
  last bit for 1.4% and 0.3% of inputs, and a kernel's vector and scalar lanes must agree (see CRenderer.render_alu)."""
  try:
    with open("/proc/cpuinfo") as f: flags = next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())
  except OSError: return 0
  if "avx2" not in flags or (path := ctypes.util.find_library("mvec")) is None: return 0
  lib = ctypes.CDLL(path)
  return 16 if "avx512f" in flags and all(hasattr(lib, f"_ZGVeN16v_{f}") for f in ("exp2f", "log2f", "sinf")) else 8

def has_vector_math() -> bool: return vector_math_lanes() > 0

def vector_math_call(fn: str) -> str:
  """The libmvec symbol of float32 function fn (exp2f, log2f, sinf) at this host's width."""
  return f"_ZGVeN16v_{fn}" if vector_math_lanes() == 16 else f"_ZGVdN8v_{fn}"

@functools.cache
def find_cc(cc_env: str) -> str:
  """The C compiler's path: cc_env (the CC variable) if set, else the first installed of clang, clang-19, gcc, cc."""
  names = [cc_env] if cc_env else ["clang", "clang-19", "gcc", "cc"]
  for n in names:
    if path := shutil.which(n): return path
  raise CompilerError(f"no C compiler found (looked for {', '.join(names)}): install one with `apt-get install clang` (or gcc), "
                      "or set DEV=PYTHON to run on the interpreter, which needs none (slowly)")

@functools.cache
def cc_version(path: str) -> str:
  """`path --version`, run once per process per compiler (a process start costs tens of ms)."""
  try: return subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
  except OSError as e: raise CompilerError(f"C compiler {path} doesn't run: {e}") from None

def load_library(lib: bytes) -> ctypes.CDLL:
  with tempfile.NamedTemporaryFile(suffix=".so") as f:  # dlopen maps the file: it may go once loaded
    f.write(lib)
    f.flush()
    return ctypes.CDLL(f.name)
