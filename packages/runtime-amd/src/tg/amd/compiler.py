"""The AMD compiler: LLVM IR for amdgcn -> a relocatable object (clang-19) -> a loadable code object (ld.lld-19)."""
from __future__ import annotations
import functools, os, shutil, subprocess, tempfile
from tg.codegen.device import Compiler

TOOLS = {"clang": ("TG_CLANG", ("clang-19", "clang")), "lld": ("TG_LLD", ("ld.lld-19", "ld.lld"))}
PACKAGES = "clang-19 lld-19 llvm-19"

def find_tool(kind: str) -> str:
  """A tool from its env var (TG_CLANG / TG_LLD), else the first of its names on PATH."""
  env, names = TOOLS[kind]
  cands = [os.environ[env]] if os.environ.get(env) else list(names)
  for n in cands:
    if path := shutil.which(n): return path
  raise RuntimeError(f"the AMD compiler needs LLVM 19: none of {', '.join(cands)} found (set {env}, or on Debian: apt-get install {PACKAGES})")

# LLVM may move a kernel's private arrays into LDS, which needs the workgroup size from the dispatch packet (a user SGPR the
# runtime doesn't pass: tg's kernels get their sizes as hidden arguments); they stay in registers or scratch instead
CLANG_FLAGS = ("-x", "ir", "-c", "-O3", "-nogpulib", "-target", "amdgcn-amd-amdhsa", "-mllvm", "-disable-promote-alloca-to-lds")

class AMDCompiler(Compiler):
  """Compiles for one gfx target (gfx1100, gfx1200). clang runs LLVM's -O3 pipeline on the IR (mem2reg for the
  accumulators, loop opts) before the amdgcn backend; ld.lld links the object into a shared code object."""
  def __init__(self, arch: str): self.arch = arch
  @functools.cached_property
  def tools(self) -> tuple[str, str]: return find_tool("clang"), find_tool("lld")
  @functools.cached_property
  def cachekey(self) -> str:
    clang, lld = self.tools
    version = subprocess.run([clang, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return f"amd {self.arch}\n{clang}\n{lld}\n{version}\n{' '.join(CLANG_FLAGS)}"
  def compile(self, src: str) -> bytes:
    clang, lld = self.tools
    with tempfile.TemporaryDirectory() as tmp:
      obj, out = os.path.join(tmp, "k.o"), os.path.join(tmp, "k.hsaco")
      r = subprocess.run([clang, *CLANG_FLAGS, f"-mcpu={self.arch}", "-", "-o", obj],
                         input=src, capture_output=True, text=True)
      if r.returncode != 0: raise RuntimeError(f"clang failed to compile for {self.arch}:\n{r.stderr}\n--- source ---\n{src}")
      r = subprocess.run([lld, "-shared", "--no-undefined", obj, "-o", out], capture_output=True, text=True)
      if r.returncode != 0: raise RuntimeError(f"ld.lld failed to link the code object:\n{r.stderr}")
      with open(out, "rb") as f: return f.read()
