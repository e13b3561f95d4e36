"""tg.codegen's C API for other packages (tg.codegen.clib): a final-form UOp graph as one named C function, C compiled
at a chosen -O level into a loaded library, and the compiler found and probed once per process."""
import ctypes
import subprocess
import numpy as np
import pytest
from tg.uop import UOp, Ops, dtypes, AxisType
from tg.codegen import CFunctionError, CLibrary, CompilerError, c_compiler_id, compile_c, render_c_function
from tg.codegen.devices import clang

def axpy_graph() -> UOp:
  """out[i] = x[i] * 3 + k for i < 5: a loop, two buffers, a variable (float math, checked against numpy)."""
  out, x = UOp.param(0, dtypes.float32, 5), UOp.param(1, dtypes.float32, 5)
  k = UOp.variable("k", -100, 100)
  i = UOp.range(5, 0, AxisType.LOOP)
  val = UOp(Ops.LOAD, dtypes.float32, (UOp(Ops.INDEX, dtypes.float32, (x, i)),)) * UOp.const(dtypes.float32, 3.0) + k.cast(dtypes.float32)
  return UOp.sink(UOp(Ops.INDEX, dtypes.float32, (out, i)).store(val).end(i))

def test_rendered_function_runs_with_its_own_signature():
  fn = render_c_function(axpy_graph(), "axpy")
  assert fn.params == (0, 1) and fn.variables == ("k",)
  assert fn.src.startswith("static void axpy(float* restrict data0, float* restrict data1, long long k)") and "core_id" not in fn.src
  # a caller wraps the static function in its own exported entry
  lib = CLibrary(compile_c("\n".join([*fn.prelude, fn.src, "void entry(float* o, float* x, long long k) { axpy(o, x, k); }"]), 0, cache=False))
  f = lib.function("entry", [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong])
  x, out = np.array([1.5, -2.0, 0.25, 1e30, -0.0], np.float32), np.zeros(5, np.float32)
  f(out.ctypes.data, x.ctypes.data, -7)
  np.testing.assert_array_equal(out, x * np.float32(3) + np.float32(-7))
  assert lib.address("entry") == ctypes.cast(lib.lib.entry, ctypes.c_void_p).value != 0

@pytest.mark.parametrize("graph, match", [
  (lambda: UOp.const(dtypes.float32, 1.0), "takes a SINK"),
  (lambda: UOp.sink(UOp(Ops.INDEX, dtypes.float32.vec(2), (UOp.param(0, dtypes.float32.vec(2), 4), UOp.const(dtypes.index, 0)))
                    .store(UOp.const(dtypes.float32.vec(2), 1.0))), "vectors need lowering"),
  (lambda: UOp.sink(UOp(Ops.REDUCE, dtypes.float32, (UOp.const(dtypes.float32, 1.0),), Ops.ADD)), "REDUCE needs lowering"),
])
def test_graph_outside_the_contract_is_a_clear_error(graph, match: str):
  with pytest.raises(CFunctionError, match=match): render_c_function(graph(), "f")

def test_bad_name_and_opt_level():
  with pytest.raises(CFunctionError, match="not a C identifier"): render_c_function(axpy_graph(), "2fast")
  with pytest.raises(ValueError, match="opt_level 5"): compile_c("int x;", 5)

def test_opt_levels_are_different_compilers():
  assert c_compiler_id(0) != c_compiler_id(2) and "-O0" in c_compiler_id(0) and "-O2" in c_compiler_id(2)

def test_compiler_probed_once_per_process(monkeypatch):
  """`cc --version` cost ~35 ms per emulated program when every program made its own compiler (issue 15)."""
  clang.cc_version.cache_clear()
  calls, real = [], subprocess.run
  def counting(args, *a, **k):
    if "--version" in args: calls.append(args)
    return real(args, *a, **k)
  monkeypatch.setattr(clang.subprocess, "run", counting)
  for level in (0, 2, 0):
    assert clang.ClangCompiler(level).family in ("clang", "gcc")
  assert len(calls) == 1

def test_missing_compiler_from_compile_c(monkeypatch):
  monkeypatch.setenv("CC", "/nonexistent/cc")
  with pytest.raises(CompilerError, match="no C compiler found"): compile_c("int x;", 1, cache=False)
