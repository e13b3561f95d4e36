"""Symbolic sizes: a shrink to a bound variable runs the same kernels for every value, plainly and under TinyJit."""
import numpy as np
import pytest
from tg.uop import UOp
from tg.tensor import Tensor, Counters
from tg.tensor.jit import TinyJit
from tensor_helpers import DEVICES

rng = np.random.default_rng(5)

def n(k: int) -> UOp: return UOp.variable("n", 1, 8).bind(k)

@pytest.mark.parametrize("device", DEVICES)
def test_symbolic_shrink_sum(device):
  x, m = rng.standard_normal(8).astype(np.float32), rng.standard_normal((8, 3)).astype(np.float32)
  tx, tm = Tensor(x, device).realize(), Tensor(m, device).realize()
  for i, k in enumerate((3, 8, 1, 5)):
    Counters.reset()
    np.testing.assert_allclose((tx.shrink(((0, n(k)),)) * 2).sum().numpy(), (x[:k] * 2).sum(), rtol=1e-5)
    np.testing.assert_allclose(tm.shrink(((0, n(k)), None)).sum(0).numpy(), m[:k].sum(0), rtol=1e-5)
    if i: assert Counters.compiled == 0, f"n={k} reuses the kernels compiled for another n"

def test_symbolic_shape_limits():
  x = Tensor(np.arange(8, dtype=np.float32)).realize()
  with pytest.raises(ValueError, match="out of bounds"): x.shrink(((0, UOp.variable("n", 1, 9).bind(3)),))
  with pytest.raises(NotImplementedError, match="symbolic shape"): (x.shrink(((0, n(3)),)) + 1).realize()

def test_jit_symbolic_replays_without_recapture():
  x = rng.standard_normal(8).astype(np.float32)
  tx = Tensor(x).realize()
  @TinyJit
  def f(t: Tensor, v: UOp) -> Tensor: return (t.shrink(((0, v),)) * 2).sum()
  for i, k in enumerate((2, 7, 8, 1, 4)):
    Counters.reset()
    np.testing.assert_allclose(f(tx, n(k)).numpy(), (x[:k] * 2).sum(), rtol=1e-5, err_msg=f"n={k}")
    if i >= 2: assert (Counters.scheduled, Counters.compiled, Counters.kernels) == (0, 0, 1), "a replay only launches the kernel"
  assert len(f.steps) == 1

@pytest.mark.parametrize("device", DEVICES)
def test_symbolic_sizes_that_cancel_are_ints(device):
  """A KV cache's update: the first start_pos rows, the new row cat after them, padded by max - start_pos - 1, is max
  long whatever start_pos is: an int shape, realized by one kernel for every value (its pad's symbolic amounts raised
  in the index math, and the shape's start_pos terms did not cancel)."""
  cache = Tensor.zeros(8, 2, device=device).contiguous().realize()
  want = np.zeros((8, 2), np.float32)
  for i, k in enumerate((1, 2, 5)):
    Counters.reset()
    v = UOp.variable("start_pos", 1, 7).bind(k)
    row = Tensor(np.full((1, 2), k, np.float32), device=device).realize()
    new = cache.shrink(((0, v), None)).cat(row).pad(((0, 7 - v), None))
    assert new.shape == (8, 2)
    cache.assign(new).realize()
    want[k] = k
    np.testing.assert_array_equal(cache.numpy(), want)
    if i: assert Counters.compiled == 0, f"start_pos={k} reuses the kernel compiled for another value"
