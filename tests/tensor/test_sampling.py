"""tg.tensor.sampling: *_like, randperm and multinomial, checked by their distributions (fixed seeds)."""
import numpy as np
import pytest
from tg.tensor import Tensor, dtypes

def test_like():
  Tensor.manual_seed(1)
  x = Tensor.zeros(3, 400, dtype=dtypes.float16)
  r, n = x.rand_like(), x.randn_like()
  assert r.shape == n.shape == (3, 400) and r.dtype == n.dtype == dtypes.float16
  rv, nv = r.numpy().astype(np.float64), n.numpy().astype(np.float64)
  assert rv.min() >= 0 and rv.max() < 1 and abs(rv.mean() - 0.5) < 0.03
  assert abs(nv.mean()) < 0.06 and abs(nv.std() - 1) < 0.06
  assert Tensor.ones(2, dtype=dtypes.int32).rand_like().dtype == dtypes.default_float
  assert x.rand_like(dtype=dtypes.float32).dtype == dtypes.float32

def test_randperm():
  Tensor.manual_seed(2)
  perms = [Tensor.randperm(50).numpy() for _ in range(3)]
  for p in perms: assert p.dtype == np.int32 and sorted(p.tolist()) == list(range(50))
  assert not np.array_equal(perms[0], perms[1])  # later draws differ
  Tensor.manual_seed(2)
  np.testing.assert_array_equal(Tensor.randperm(50).numpy(), perms[0])  # and the seed reproduces them
  assert Tensor.randperm(0).shape == (0,) and Tensor.randperm(4, dtype=dtypes.int64).dtype == dtypes.int64
  # each value is equally likely first: over 200 permutations of 4, about 50 times each (3 sigma ~ 18)
  Tensor.manual_seed(3)
  first = np.bincount([Tensor.randperm(4).numpy()[0] for _ in range(200)], minlength=4)
  assert first.min() > 30 and first.max() < 70

def test_multinomial_with_replacement():
  Tensor.manual_seed(4)
  w = np.array([[1.0, 2.0, 0.0, 5.0], [0.0, 0.0, 1.0, 0.0]], np.float32)
  s = Tensor(w).multinomial(4000, replacement=True).numpy()
  assert s.shape == (2, 4000) and s.dtype == np.int32
  freq = np.bincount(s[0], minlength=4) / 4000
  np.testing.assert_allclose(freq, w[0] / w[0].sum(), atol=0.03)  # 3 sigma is ~0.02
  assert (s[1] == 2).all()
  assert Tensor([0.2, 0.8]).multinomial().shape == (1,)

def test_multinomial_without_replacement():
  Tensor.manual_seed(5)
  w = np.array([1.0, 0.0, 3.0, 4.0, 2.0], np.float32)
  draws = Tensor(np.tile(w, (2000, 1))).multinomial(3).numpy()
  assert all(len(set(r)) == 3 and 1 not in r for r in draws.tolist())  # distinct, never a zero weight
  np.testing.assert_allclose(np.bincount(draws[:, 0], minlength=5) / 2000, w / w.sum(), atol=0.035)  # the first draw is weighted
  with pytest.raises(ValueError, match="can't draw 6 classes out of 5"): Tensor(w).multinomial(6)
  with pytest.raises(ValueError, match="weights of shape"): Tensor.ones(2, 2, 2).multinomial()

def test_rand_like_on_another_device_draws_the_same_numbers():
  """rand_like(device=...) makes the tensor there; threefry gives the same bits on every device for the same seed."""
  x = Tensor.ones(2, 3)
  Tensor.manual_seed(3)
  py = x.rand_like(device="PYTHON")
  Tensor.manual_seed(3)
  cpu = x.rand_like()
  assert py.device == "PYTHON" and py.shape == (2, 3)
  np.testing.assert_array_equal(py.numpy(), cpu.numpy())
