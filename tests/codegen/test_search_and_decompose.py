"""BEAM search (times candidates, caches its choice on disk) and the integer decompositions (magic-number division)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.uop import UOp, Ops, AxisType, KernelInfo, dtypes, Context, exec_uop
from tg.codegen.pipeline import get_program, CompiledRunner
from tg.codegen.device import Device, Buffer, diskcache_get
from tg.codegen.lower.decompositions import magic_divide, fast_mod
from tg.codegen.renderer.cstyle import CRenderer

def matmul(n: int) -> UOp:
  C, A, B = (UOp.param(i, dtypes.float, (n, n)) for i in range(3))
  i, j, k = UOp.range(n, 0), UOp.range(n, 1), UOp.range(n, 2, AxisType.REDUCE)
  return C[i, j].store((A[i, k] * B[k, j]).reduce(k, arg=Ops.ADD)).end(i, j).sink(arg=KernelInfo(name="mm"))

def test_beam_search_times_picks_and_caches(tmp_path, monkeypatch):
  monkeypatch.setenv("CACHEDB", str(tmp_path / "cache.db"))
  import tg.codegen.pipeline as pipeline
  timed = []
  real = pipeline.time_kernel
  monkeypatch.setattr(pipeline, "time_kernel", lambda k, ren, runs=3: timed.append(k) or real(k, ren, runs))
  with Context(BEAM=2):
    p = get_program(matmul(16), Device["CPU"].renderer)
    n_timed = len(timed)
    assert n_timed > 1, "candidates were timed"
    assert get_program(matmul(16), Device["CPU"].renderer).applied_opts == p.applied_opts
    assert len(timed) == n_timed, "the second search came from the disk cache"
    with Context(IGNORE_BEAM_CACHE=1): get_program(matmul(16), Device["CPU"].renderer)
    assert len(timed) > n_timed, "IGNORE_BEAM_CACHE=1 (tinygrad's switch, a Context variable as there) searched again"
  a, b = np.random.rand(16, 16).astype(np.float32), np.random.rand(16, 16).astype(np.float32)
  bufs = [Buffer("CPU", 256, dtypes.float).allocate() for _ in range(3)]
  bufs[1].copyin(memoryview(a)); bufs[2].copyin(memoryview(b))
  CompiledRunner(p)(bufs, {}, wait=True)
  np.testing.assert_allclose(bufs[0].numpy().reshape(16, 16), a @ b, rtol=1e-5)
  assert diskcache_get("beam", "not-a-key") is None

def test_beam_actions_cover_every_opt():
  """On a GPU renderer (locals and shared memory) the search can try every OptOps, each applying to a 20x20 matmul (but TC,
  which needs half or bfloat16 inputs: tests/amd/test_amd_tc.py checks the search offers it for those)."""
  from tg.codegen.opt.search import actions, globalize
  from tg.codegen.opt.kernel import OptOps, apply_opt, KernelOptError
  from tg.codegen.renderer.llvmir import AMDGPURenderer
  ren, k = AMDGPURenderer("gfx1100", "NULL"), globalize(matmul(20))
  applied = set()
  for a in actions(k, ren):
    try: apply_opt(k, a, ren)
    except KernelOptError: continue
    applied.add(a.op)
  assert applied == set(OptOps) - {OptOps.TC}

def test_beam_reports_a_failing_candidate(monkeypatch, capsys):
  """A candidate that fails to build is inf and, at DEBUG>=2, printed with its opts and the error (it was silent)."""
  import tg.codegen.pipeline as pipeline
  from tg.codegen.pipeline import time_kernel
  def broken(*a, **kw): raise RuntimeError("clang exploded\nlong log")
  monkeypatch.setattr(pipeline, "get_program", broken)
  with Context(DEBUG=2): assert time_kernel(matmul(4), Device["CPU"].renderer) == float("inf")
  assert "BEAM candidate () failed: RuntimeError: clang exploded" in capsys.readouterr().out
  with Context(DEBUG=0): time_kernel(matmul(4), Device["CPU"].renderer)
  assert capsys.readouterr().out == ""

@settings(max_examples=200, deadline=None)
@given(c=st.integers(2, 5000), vmax=st.integers(1, 2**31 - 1))
def test_magic_division_is_exact_over_the_whole_range(c, vmax):
  x = UOp.variable("x", 0, vmax)
  q, r = magic_divide(x, c), fast_mod(x, c)
  xs = np.unique(np.concatenate([np.arange(0, min(vmax, 2000) + 1), np.random.default_rng(c).integers(0, vmax + 1, 2000), [vmax]]))
  for v in xs[:: max(1, len(xs) // 300)]:  # the interpreter is per value: a spread of values incl. both ends
    assert exec_uop(q, {x: int(v)}) == v // c
    assert exec_uop(r, {x: int(v)}) == v % c

def test_magic_division_refuses_negative_ranges():
  assert magic_divide(UOp.variable("x", -5, 100), 7) is None

class NoIntDivide(CRenderer):
  native_ops = CRenderer.native_ops - {Ops.IDIV, Ops.MOD}

def test_a_device_without_integer_division_gets_multiplies_and_shifts():
  out, a = UOp.param(0, dtypes.int32, (1000,)), UOp.param(1, dtypes.int32, (7000,))
  i = UOp.range(1000, 0)
  ast = out[i].store(a[i * 7 // 3 + i % 10]).end(i).sink(arg=KernelInfo(name="idx", opts_to_apply=()))
  p = get_program(ast, NoIntDivide())
  assert "/" not in p.src.split("{", 1)[1].replace("/n_cores", "") and "%" not in p.src
  x = np.arange(7000, dtype=np.int32)
  bufs = [Buffer("CPU", 1000, dtypes.int32).allocate(), Buffer("CPU", 7000, dtypes.int32).allocate()]
  bufs[1].copyin(memoryview(x))
  CompiledRunner(p)(bufs, {}, wait=True)
  idx = np.arange(1000)
  np.testing.assert_array_equal(bufs[0].numpy(), x[idx * 7 // 3 + idx % 10])

class FloatOnly(CRenderer):
  supported_dtypes = frozenset({dtypes.float32, dtypes.int32, dtypes.index, dtypes.bool})

def test_unsupported_dtype_is_named():
  out, a = UOp.param(0, dtypes.float64, (4,)), UOp.param(1, dtypes.float64, (4,))
  i = UOp.range(4, 0)
  with pytest.raises(TypeError, match="float64"):
    get_program(out[i].store(a[i] + 1.0).end(i).sink(arg=KernelInfo(opts_to_apply=())), FloatOnly())
