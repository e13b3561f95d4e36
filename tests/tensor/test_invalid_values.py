"""tinygrad's Invalid as a tensor value: `mask.where(x, Invalid)` is x where mask holds and nothing elsewhere, so a write
of it leaves the other elements as they were. Math on it keeps the gaps (x + 1, a cast, a comparison, sqrt, another
where); a reduce over them raises. Checked against numpy on the elements written, and on the old values kept."""
import numpy as np
import pytest
from tg.tensor import Tensor, dtypes
from tg.uop import Invalid

OLD = np.array([9.0, 8.0, 7.0, 6.0], np.float32)
X = np.array([1.0, 4.0, 9.0, 16.0], np.float32)
MASK = np.arange(4) < 2

def written(value: Tensor, old: np.ndarray = OLD) -> np.ndarray:
  t = Tensor(old).realize()
  t.assign(value).realize()
  return t.numpy()

@pytest.mark.parametrize("name,make,want", [
  ("x where mask", lambda m, x: m.where(x, Invalid), np.where(MASK, X, OLD)),
  ("x where not mask", lambda m, x: m.where(Invalid, x), np.where(MASK, OLD, X)),
  ("plus", lambda m, x: m.where(x, Invalid) + Tensor([1.0, 2.0, 3.0, 4.0]), np.where(MASK, X + [1, 2, 3, 4], OLD)),
  ("sqrt", lambda m, x: m.where(x, Invalid).sqrt(), np.where(MASK, np.sqrt(X), OLD)),
  ("where of where", lambda m, x: (Tensor.arange(4) > 0).where(m.where(x, Invalid), Invalid), np.where(MASK & (np.arange(4) > 0), X, OLD)),
  ("where with a value", lambda m, x: (Tensor.arange(4) > 2).where(Tensor.full((4,), 5.0), m.where(x, Invalid)),
   np.where(np.arange(4) > 2, 5.0, np.where(MASK, X, OLD))),
])
def test_invalid_elements_are_not_written(name, make, want):
  np.testing.assert_allclose(written(make(Tensor.arange(4) < 2, Tensor(X))), want, rtol=1e-6)

def test_invalid_through_a_cast_and_a_comparison():
  m = Tensor.arange(4) < 2
  np.testing.assert_equal(written(m.where(Tensor(X), Invalid).cast(dtypes.int32), np.array([5, 5, 5, 5], np.int32)), [1, 4, 5, 5])
  np.testing.assert_equal(written(m.where(Tensor(X), Invalid) > 2, np.array([True, False, False, True])), [False, True, False, True])

def test_a_fresh_tensor_has_its_valid_elements():
  out = (Tensor.arange(6).reshape(2, 3) < 3).where(Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)), Invalid)
  np.testing.assert_equal(out.numpy()[0], [0.0, 1.0, 2.0])

def test_a_reduce_over_invalid_elements_raises():
  with pytest.raises(ValueError, match="reduce over Invalid"):
    ((Tensor.arange(4) < 2).where(Tensor(X), Invalid)).sum().item()
