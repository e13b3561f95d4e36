"""Index math in 32 bits where vmin/vmax prove it fits (the AMD renderer's index32): a node narrows only when its value and
all its index sources fit int32, so an intermediate that may overflow keeps 64 bits even when the result is small; the
generated IR multiplies in i32 for a small kernel and in i64 for one whose addresses pass 2**31."""
import numpy as np
from hypothesis import given, settings, strategies as st
from tg.uop import UOp, Ops, graph_rewrite, dtypes
from tg.codegen.lower.index32 import pm_index32
from tg.codegen.pipeline import get_program
from tg.codegen.renderer.llvmir import AMDGPURenderer
from tg.tensor import Tensor

def test_small_expression_is_int32():
  r = UOp.range(1000, 0)
  e = r * 3 + 7
  out = graph_rewrite(e.sink(), pm_index32).src[0]
  assert out.dtype == dtypes.int32 and all(u.dtype == dtypes.int32 for u in out.toposort() if u.op is not Ops.SINK)

def test_overflowing_intermediate_stays_int64():
  """(r * 70000) // 70000 < 70000, but r * 70000 reaches 4.9e9: it, and the division reading it, stay 64-bit."""
  r = UOp.range(70000, 0)
  out = graph_rewrite(((r * 70000) // 70000 + 1).sink(), pm_index32).src[0]
  ops = {u.op: u.dtype for u in out.toposort()}
  assert ops[Ops.MUL] == dtypes.index and ops[Ops.IDIV] == dtypes.index and ops[Ops.RANGE] == dtypes.int32
  assert any(u.op is Ops.CAST and u.src[0].op is Ops.RANGE for u in out.toposort())  # the narrowed range widens into the multiply

@settings(max_examples=60, deadline=None)
@given(st.integers(1, 2**17), st.integers(-2**16, 2**16), st.integers(-2**20, 2**20), st.integers(1, 300))
def test_narrowing_keeps_every_value(n, a, b, d):
  """For every value of the range, the rewritten expression (int32 where narrowed, wrapping like the hardware) equals the
  index arithmetic, checked by evaluating both in numpy int64/int32."""
  r = UOp.range(n, 0)
  e = (r * a + b) // d + (r % 7) * a
  out = graph_rewrite(e.sink(), pm_index32).src[0]
  xs = np.array(sorted({0, n - 1, n // 2, n // 3}), dtype=np.int64)
  assert np.array_equal(evaluate(out, xs), evaluate(e, xs))

def evaluate(e: UOp, xs: np.ndarray) -> np.ndarray:
  """The expression for range values xs, each node in its own dtype's width (int32 wraps; C division toward zero)."""
  vals: dict[UOp, np.ndarray] = {}
  for u in e.toposort():
    w = np.int32 if u.dtype.scalar() == dtypes.int32 else np.int64
    s = [vals[x] for x in u.src]
    if u.op is Ops.RANGE: v = xs
    elif u.op is Ops.CONST: v = np.full(len(xs), u.arg)
    elif u.op is Ops.CAST: v = s[0]
    elif u.op is Ops.ADD: v = s[0] + s[1]
    elif u.op is Ops.MUL: v = s[0] * s[1]
    elif u.op is Ops.IDIV: v = np.trunc(s[0] / s[1]).astype(np.int64)  # exact: |values| < 2**53
    elif u.op is Ops.MOD: v = np.fmod(s[0], s[1])
    elif u.op is Ops.NEG: v = -s[0]
    else: raise AssertionError(f"no rule for {u.op}")
    vals[u] = np.asarray(v, np.int64).astype(w).astype(np.int64)
  return vals[e]

def ir(shape: tuple[int, ...]) -> str:
  (k,) = [ei for ei in (Tensor.empty(*shape, device="NULL") * 2).schedule() if ei.ast.op is Ops.SINK]
  src = get_program(k.ast, AMDGPURenderer("gfx1100", "NULL")).src
  return src[src.index("define "):]  # the kernel, not the data layout string

def test_generated_ir_width():
  small, big = ir((64, 33)), ir((2**16, 2**15 + 1))
  assert "i64" not in small
  assert "mul i64" in big or "add i64" in big or "i64 %" in big
