"""C for other packages: a UOp graph rendered as one named C function, and C source compiled to a loaded library.

The AMD emulator builds its instructions this way (tg.amd_emu.shape_c and .waveprog); this is its documented way into
tg.codegen, so it never cuts rendered kernels apart nor subclasses the CPU compiler. The compiler is found and its
version probed once per process (tg.codegen.devices.clang.find_cc, cc_version)."""
from __future__ import annotations
import ctypes
import functools
from dataclasses import dataclass
from typing import Any
from tg.uop import UOp, Ops, GroupOp
from tg.codegen.devices.clang import ClangCompiler, load_library
from tg.codegen.lower.linearize import linearize

class CFunctionError(ValueError):
  """A graph outside render_c_function's input contract."""

# what a function graph may hold: stores and loads through PARAM buffers, loops, ordering, scalar arithmetic
FUNCTION_OPS = frozenset({Ops.SINK, Ops.GROUP, Ops.NOOP, Ops.PARAM, Ops.DEFINE_VAR, Ops.CONST, Ops.RANGE, Ops.END, Ops.AFTER,
                          Ops.INDEX, Ops.CAST, Ops.BITCAST, Ops.LOAD, Ops.STORE}) | GroupOp.ALU

@dataclass(frozen=True)
class CFunction:
  """A rendered function: `src` defines `static void NAME(T0* restrict data0, ..., long long var, ...)` (the PARAM slots
  `params` in order, then the variables `variables` by name); `prelude` holds the typedefs and helpers it needs, each line
  the same text for every function that needs it (so a file of many functions keeps one copy of each)."""
  name: str
  src: str
  prelude: tuple[str, ...]
  params: tuple[int, ...]
  variables: tuple[str, ...]

def render_c_function(sink: UOp, name: str) -> CFunction:
  """One C function from a graph that is already in final form: a SINK of STOREs into INDEXed PARAM buffers (a NOOP for
  none), RANGE loops closed by END, AFTER for order, scalar dtypes, DEFINE_VAR variables. It is linearized and rendered as
  it is: no optimization, no lowering passes (kernels that need those go through get_program)."""
  if sink.op is not Ops.SINK: raise CFunctionError(f"render_c_function takes a SINK, got {sink.op}")
  if not name.isidentifier(): raise CFunctionError(f"function name {name!r} is not a C identifier")
  for u in sink.toposort():
    if u.op not in FUNCTION_OPS: raise CFunctionError(f"{u.op} needs lowering first (use get_program): a function graph holds {_ops()}")
    if u.dtype.count > 1: raise CFunctionError(f"{u.op} of {u.dtype}: vectors need lowering first (use get_program)")
  uops = linearize(sink)
  from tg.codegen.renderer.cstyle import CRenderer
  prelude, fn, _ = CRenderer().render_parts(uops, name, cpu_abi=False)
  return CFunction(name, "\n".join(["static " + fn[0], *fn[1:]]), tuple(prelude), tuple(sorted(u.arg for u in uops if u.op is Ops.PARAM)),
                   tuple(sorted(u.arg[0] for u in uops if u.op is Ops.DEFINE_VAR)))

def _ops() -> str: return ", ".join(sorted(o.name for o in FUNCTION_OPS - GroupOp.ALU)) + " and ALU ops"

@functools.cache
def c_compiler(opt_level: int = 2) -> ClangCompiler:
  """The CPU device's C compiler at -O{opt_level} (one per level per process)."""
  return ClangCompiler(opt_level)

def c_compiler_id(opt_level: int = 2) -> str:
  """The identity of compile_c's compiler at that level (path, version, flags): part of the key of a binary cached elsewhere."""
  return c_compiler(opt_level).cachekey

def compile_c(src: str, opt_level: int = 2, cache: bool = True) -> bytes:
  """C source -> a shared object, with the CPU device's compiler and flags at -O{opt_level}; through the disk cache unless
  `cache` is False (for a caller that keeps the binaries itself). Raises CompilerError with the compiler's message."""
  comp = c_compiler(opt_level)
  return comp.compile_cached(src) if cache else comp.compile(src)

class CLibrary:
  """A loaded shared object (from compile_c): its functions by name, typed, and their addresses."""
  def __init__(self, lib: bytes): self.lib = load_library(lib)
  def function(self, name: str, argtypes: list[Any], restype: Any = None) -> Any:
    fn = getattr(self.lib, name)
    fn.argtypes, fn.restype = argtypes, restype
    return fn
  def address(self, name: str) -> int:
    """The address of the function `name` (for tables of function pointers built by the caller)."""
    return ctypes.cast(getattr(self.lib, name), ctypes.c_void_p).value or 0
