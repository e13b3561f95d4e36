"""diag, diagonal, unfold, meshgrid (views), masked_select, nonzero and scatter_reduce against numpy, with gradients."""
import numpy as np
import pytest
from tg.tensor import Tensor
from tensor_helpers import DEVICES, check, rand
from test_autograd import check_grad

@pytest.mark.parametrize("device", DEVICES)
def test_diag_diagonal(device):
  a = rand(3, 4, 5)
  for off, d1, d2 in ((0, 0, 1), (1, 0, 1), (-2, 0, 1), (2, 2, 0), (-1, -1, 1), (7, 0, 1), (-9, 1, 2)):
    check(lambda t, o=off, p=d1, q=d2: t.diagonal(o, p, q), lambda x, o=off, p=d1, q=d2: np.diagonal(x, o, p, q), a, device=device)
  m = rand(4, 4)
  check(Tensor.diagonal, np.diagonal, m, device=device)
  v = np.array([1, 2, 3], np.int32)
  for k in (0, 1, -2):
    check(lambda t, k=k: t.diag(k), lambda x, k=k: np.diag(x, k), v, device=device)
    check(lambda t, k=k: t.diag(k), lambda x, k=k: np.diag(x, k), m, device=device)
  with pytest.raises(ValueError, match="diag takes a 1-d or 2-d tensor"): Tensor.ones(2, 2, 2).diag()
  with pytest.raises(ValueError, match="diagonal dims must differ"): Tensor.ones(2, 2).diagonal(0, 1, -1)

def test_unfold_meshgrid():
  x = rand(3, 8, 2)
  for dim, size, step in ((1, 3, 2), (1, 8, 1), (0, 2, 1), (-1, 1, 1), (1, 3, 5)):
    def ref(a, dim=dim, size=size, step=step):
      w = np.lib.stride_tricks.sliding_window_view(a, size, axis=dim)
      return np.take(w, range(0, w.shape[dim], step), axis=dim)
    check(lambda t, dim=dim, size=size, step=step: t.unfold(dim, size, step), ref, x)
  assert Tensor.ones(3, 4).unfold(1, 0, 2).shape == (3, 3, 0)
  with pytest.raises(ValueError, match="unfold size 9 is larger than dim 1"): Tensor(x).unfold(1, 9, 1)
  with pytest.raises(ValueError, match="step > 0"): Tensor(x).unfold(1, 2, 0)
  a, b, c = np.arange(3, dtype=np.float32), np.arange(4, dtype=np.float32) * 10, np.array([7, 8], np.float32)
  for ix in ("ij", "xy"):
    got = Tensor(a).meshgrid(Tensor(b), Tensor(c), indexing=ix)
    for g, w in zip(got, np.meshgrid(a, b, c, indexing=ix)): np.testing.assert_array_equal(g.numpy(), w)
  got = Tensor.meshgrid(Tensor(a), Tensor(b))  # also callable as a function of tensors, as torch.meshgrid
  for g, w in zip(got, np.meshgrid(a, b, indexing="ij")): np.testing.assert_array_equal(g.numpy(), w)
  with pytest.raises(ValueError, match="meshgrid indexing is 'ij' or 'xy'"): Tensor(a).meshgrid(Tensor(b), indexing="yx")

def test_view_grads():
  x = rand(3, 4, dtype=np.float64)
  check_grad(lambda t: t.diagonal(1), [x])
  check_grad(lambda t: t.unfold(1, 2, 1), [x])
  check_grad(lambda t: t.diag(1), [rand(3, dtype=np.float64)])
  check_grad(lambda t: t.masked_select(Tensor(x > 0)), [x])

@pytest.mark.parametrize("device", DEVICES)
def test_masked_select_nonzero(device):
  x = rand(3, 4)
  m = np.array([True, False, True, True])
  check(lambda t: t.masked_select(Tensor(m, device=device)), lambda a: a[np.broadcast_to(m, a.shape)], x, device=device)
  check(lambda t: t.masked_select(t > 0.5), lambda a: a[a > 0.5], x, device=device)
  with pytest.raises(TypeError, match="masked_select needs a bool mask"): Tensor(x).masked_select(Tensor([1, 0, 1, 1]))
  z = np.array([[0.0, 1.5, 0.0], [np.nan, 0.0, -2.0]], np.float32)
  check(Tensor.nonzero, lambda a: np.argwhere(a != 0).astype(np.int32), z, device=device)
  assert Tensor.zeros(2, 3).nonzero().shape == (0, 2)

def _np_scatter_reduce(x, dim, index, src, reduce, include_self):
  out, groups = x.copy(), {}
  for pos in np.ndindex(index.shape):
    tgt = list(pos)
    tgt[dim] = index[pos]
    groups.setdefault(tuple(tgt), []).append(src[pos])
  for tgt, vals in groups.items():
    vals = ([x[tgt]] if include_self else []) + vals
    out[tgt] = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce](vals)
  return out

@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
  x, src = rand(4, 5), rand(3, 5, seed=1)
  index = np.array([[0, 1, 3, 3, 0], [0, 1, 3, 1, 0], [2, 1, 0, 3, 0]], np.int32)  # repeats, and row 3 col 4 unhit
  want = _np_scatter_reduce(x, 0, index, src, reduce, include_self)
  got = Tensor(x).scatter_reduce(0, Tensor(index), Tensor(src), reduce, include_self=include_self).numpy()
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
  idx1 = np.array([[2, 2], [0, 1], [1, 1], [0, 0]], np.int32)
  src1 = rand(4, 3, seed=2)  # larger than the index: only its leading part is used
  want = _np_scatter_reduce(x, 1, idx1, src1[:, :2], reduce, include_self)
  np.testing.assert_allclose(Tensor(x).scatter_reduce(1, Tensor(idx1), Tensor(src1), reduce, include_self=include_self).numpy(), want,
                             rtol=1e-5, atol=1e-6)
  check_grad(lambda a, s: a.scatter_reduce(0, Tensor(index), s, reduce, include_self=include_self),
             [x.astype(np.float64), src.astype(np.float64) + np.arange(15).reshape(3, 5) * 1e-3])  # no ties for amax/amin

def test_scatter_add_sums_repeated_indices():
  """PyTorch's scatter_add against a loop adding each src value at its index (a repeated index adds every value)."""
  x, src = rand(4, 5), rand(3, 5, seed=3)
  index = np.array([[0, 1, 3, 3, 0], [0, 1, 3, 1, 0], [2, 1, 0, 3, 0]], np.int32)
  want = x.copy()
  for i, j in np.ndindex(index.shape): want[index[i, j], j] += src[i, j]
  np.testing.assert_allclose(Tensor(x).scatter_add(0, Tensor(index), Tensor(src)).numpy(), want, rtol=1e-5, atol=1e-6)

def test_scatter_reduce_ints_and_errors():
  x, index, src = np.array([10, 20, 30], np.int32), np.array([0, 0, 2, 2], np.int32), np.array([1, 2, 3, -8], np.int32)
  assert Tensor(x).scatter_reduce(0, Tensor(index), Tensor(src), "mean").tolist() == [4, 20, 8]  # floor(13 / 3), floor(25 / 3)
  assert Tensor(x).scatter_reduce(0, Tensor(index), Tensor(src), "amax", include_self=False).tolist() == [2, 20, 3]
  with pytest.raises(ValueError, match="scatter_reduce reduce is 'sum', 'prod', 'mean', 'amax' or 'amin', not 'max'"):
    Tensor(x).scatter_reduce(0, Tensor(index), Tensor(src), "max")
  with pytest.raises(RuntimeError, match="scatter_reduce index of shape"): Tensor(x).scatter_reduce(0, Tensor([[0]]), Tensor(src), "sum")
