"""tg.tensor.ordering: sort, argsort, topk and the running max/min/product/logsumexp against numpy, with gradients."""
from unittest.mock import patch
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.tensor import Tensor, dtypes, ordering
from tensor_helpers import DEVICES, check, rand
from test_autograd import check_grad

def _np_cumext(x, axis, largest):
  """PyTorch's cummax/cummin: the running extreme and the last index where it was reached; a NaN is the extreme from
  where it is on (each later NaN moves the index)."""
  x = np.moveaxis(x, axis, -1)
  vals, idx = np.empty_like(x), np.empty(x.shape, np.int32)
  for pos in np.ndindex(x.shape[:-1]):
    best, at = None, 0
    for i, v in enumerate(x[pos]):
      if best is None or np.isnan(v) or (v >= best if largest else v <= best): best, at = v, i
      vals[pos + (i,)], idx[pos + (i,)] = best, at
  return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)

@settings(max_examples=10, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3), st.integers(0, 2**31), st.booleans(), st.data())
def test_sort_is_numpys_stable_sort(shape, seed, descending, data):
  x = np.random.default_rng(seed).integers(-3, 4, shape).astype(np.float32)  # many ties
  axis = data.draw(st.integers(-len(shape), len(shape) - 1))
  order = np.argsort(-x if descending else x, axis=axis, kind="stable").astype(np.int32)
  vals, idx = Tensor(x).sort(axis, descending)
  np.testing.assert_array_equal(idx.numpy(), order)
  np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(x, order, axis))
  np.testing.assert_array_equal(Tensor(x).argsort(axis, descending).numpy(), order)

@pytest.mark.parametrize("device", DEVICES)
def test_sort_topk_dtypes_and_nan(device):
  x = np.array([3.0, np.nan, -1.0, np.inf, -np.inf, 2.0], np.float32)
  v, i = Tensor(x, device=device).sort()
  np.testing.assert_array_equal(v.numpy(), np.sort(x))  # NaN last, as numpy and PyTorch
  np.testing.assert_array_equal(i.numpy(), np.argsort(x, kind="stable"))
  v, i = Tensor(x, device=device).sort(descending=True)
  assert np.isnan(v.numpy()[0]) and v.numpy()[1:].tolist() == [np.inf, 3.0, 2.0, -1.0, -np.inf]  # NaN first descending
  ints = np.array([[5, -2, 7, 7], [0, 1, -9, 3]], np.int32)
  check(lambda t: t.sort(1)[0], lambda a: np.sort(a, 1), ints, device=device)
  vals, idx = Tensor(ints, device=device).topk(2, dim=1)
  assert vals.dtype == dtypes.int32 and vals.tolist() == [[7, 7], [3, 1]] and idx.tolist() == [[2, 3], [3, 1]]
  vals, idx = Tensor(ints, device=device).topk(1, dim=0, largest=False)
  assert vals.tolist() == [[0, -2, -9, 3]] and idx.tolist() == [[1, 0, 1, 1]]
  r = Tensor(ints, device=device).topk(3)
  assert r.values.shape == r.indices.shape == (2, 3)
  with pytest.raises(ValueError, match="topk k=5 is out of range"): Tensor(ints).topk(5)
  assert Tensor([True, False, True]).sort()[0].tolist() == [False, True, True]

def test_sort_topk_grads():
  x = rand(3, 5, dtype=np.float64, seed=2)
  check_grad(lambda t: t.sort(1)[0], [x])
  check_grad(lambda t: t.sort(0, descending=True)[0], [x])
  check_grad(lambda t: t.topk(2, dim=1)[0], [x])

@pytest.mark.parametrize("device", DEVICES)
def test_cumulative(device):
  x = np.array([[1, 3, 2, 3, -1], [0, -2, -2, 4, 1]], np.float32)
  for largest, name in ((True, "cummax"), (False, "cummin")):
    for axis in (0, 1, -1):
      vals, idx = getattr(Tensor(x, device=device), name)(axis)
      want_v, want_i = _np_cumext(x, axis, largest)
      np.testing.assert_array_equal(vals.numpy(), want_v)
      np.testing.assert_array_equal(idx.numpy(), want_i)
  nan = np.array([[1, np.nan, -np.inf, 3, np.nan, 0], [2, 1, -1, 5, -np.inf, np.nan]], np.float32)  # was 0 after a NaN
  for largest, name in ((True, "cummax"), (False, "cummin")):
    vals, idx = getattr(Tensor(nan, device=device), name)(1)
    want_v, want_i = _np_cumext(nan, 1, largest)
    np.testing.assert_array_equal(vals.numpy(), want_v)
    np.testing.assert_array_equal(idx.numpy(), want_i)
  i32 = np.array([5, -2**31, 7, -2**31, 2**31 - 1], np.int32)  # INT_MIN: negating it overflows
  assert Tensor(i32).cummin(0).values.tolist() == [5, -2**31, -2**31, -2**31, -2**31] and Tensor(i32).cummin(0).indices.tolist() == [0, 1, 1, 3, 3]
  u = np.array([3, 1, 200, 7], np.uint8)
  assert Tensor(u).cummin(0).values.tolist() == [3, 1, 1, 1] and Tensor(u).cummax(0).indices.tolist() == [0, 0, 2, 2]
  a = rand(3, 4, low=-1.5, high=1.5)
  check(lambda t: t.cumprod(1), lambda t: np.cumprod(t, 1), a, device=device)
  check(lambda t: t.cumprod(0), lambda t: np.cumprod(t, 0), np.array([2, -3, 0, 5], np.int32), device=device)
  check(lambda t: t.logcumsumexp(0), lambda t: np.logaddexp.accumulate(t, 0), a, device=device)
  big = np.array([-1000.0, 0.0, 1000.0, 1000.0], np.float32)  # a global shift would turn the first into -inf
  check(lambda t: t.logcumsumexp(0), lambda t: np.logaddexp.accumulate(t.astype(np.float64)).astype(np.float32), big, device=device)
  assert Tensor(2.0).cumprod(0).shape == () and Tensor(2.0).cummax(0).values.item() == 2.0

def test_cumulative_grads():
  x = rand(3, 4, dtype=np.float64, seed=5)
  check_grad(lambda t: t.cummax(1).values, [x])
  check_grad(lambda t: t.cummin(0).values, [x])
  check_grad(lambda t: t.cumprod(1), [x])
  check_grad(lambda t: t.logcumsumexp(1), [x])

def test_cumulative_axis_errors():
  with pytest.raises(IndexError, match="axis 2 is out of range"): Tensor.ones(2, 2).cumprod(2)
  with pytest.raises(IndexError, match="axis -3 is out of range"): Tensor.ones(2, 2).cummax(-3)

def test_sort_keeps_the_sign_of_zero():
  """-0.0 sorts as -0.0 (numpy's and PyTorch's: the values are the elements moved); picking it by a one-hot sum made it +0.0."""
  a = np.array([-0.0, 0.0, -1.0, 1.0, -0.0, np.nan, -np.inf], np.float32)
  vals, idx = Tensor(a).sort()
  want = np.sort(a, kind="stable")
  np.testing.assert_array_equal(vals.numpy(), want)
  assert (np.signbit(vals.numpy()) == np.signbit(want)).all() and idx.tolist() == np.argsort(a, kind="stable").tolist()
  assert np.signbit(Tensor(a).cummin(0).values.numpy()[0])

@settings(max_examples=6, deadline=None)
@given(n=st.integers(17, 1500), kind=st.sampled_from(["ties", "nan", "int32", "uint8", "bool"]), seed=st.integers(0, 2**16))
def test_long_running_extremes_run_in_blocks(n, kind, seed):
  """Past a small scan (ordering._direct) cummax/cummin combine each block with the blocks before: values and PyTorch's indices (the
  last place the extreme was reached, a NaN the extreme from where it is) as the element-by-element reference."""
  r = np.random.default_rng(seed)
  x = {"ties": lambda: r.integers(-3, 4, (2, n)).astype(np.float32),
       "int32": lambda: r.integers(-2**31, 2**31, (2, n), dtype=np.int64).astype(np.int32),
       "nan": lambda: np.where(r.random((2, n)) < 0.01, np.nan, r.standard_normal((2, n))).astype(np.float32),
       "uint8": lambda: r.integers(0, 256, (2, n)).astype(np.uint8), "bool": lambda: r.random((2, n)) < 0.02}[kind]()
  for largest, name in ((True, "cummax"), (False, "cummin")):
    vals, idx = getattr(Tensor(x), name)(1)
    want_v, want_i = _np_cumext(x, 1, largest)
    np.testing.assert_array_equal(vals.numpy(), want_v)
    np.testing.assert_array_equal(idx.numpy(), want_i)

def _np_stable_order(x: np.ndarray, descending: bool) -> np.ndarray:
  """numpy's stable argsort along the last axis; descending as PyTorch's stable sort: the ascending order of the axis
  reversed, read backwards (equal values keep their order, NaN first)."""
  if not descending: return np.argsort(x, -1, kind="stable")
  n = x.shape[-1]
  return n - 1 - np.argsort(x[..., ::-1], -1, kind="stable")[..., ::-1]

def _long_rows(kind: str, rows: int, n: int, r: np.random.Generator) -> np.ndarray:
  if kind == "float32": return np.where(r.random((rows, n)) < 0.1, r.choice(np.array([np.nan, -0.0, 0.0, np.inf, -np.inf], np.float32), (rows, n)),
                                        r.integers(-20, 20, (rows, n)).astype(np.float32) / 4)  # ties, NaN, both zeros, infinities
  if kind == "float16": return (r.standard_normal((rows, n)) * 100).astype(np.float16)
  if kind == "float64": return np.where(r.random((rows, n)) < 0.1, -0.0, r.integers(-5, 5, (rows, n)) * np.pi)
  if kind == "bool": return r.random((rows, n)) < 0.5
  info = np.iinfo(kind)
  a = r.integers(info.min, info.max, (rows, n), dtype=kind, endpoint=True)
  a[:, ::3] = r.choice(np.array([info.min, info.max, 0], dtype=kind), (rows, len(range(0, n, 3))))  # the limits, tied
  return a

@settings(max_examples=12, deadline=None)
@given(n=st.integers(65, 700), rows=st.integers(1, 3), descending=st.booleans(),
       kind=st.sampled_from(["float32", "float16", "float64", "int8", "uint8", "int32", "uint32", "int64", "uint64", "bool"]),
       seed=st.integers(0, 2**16))
def test_long_sorts_run_a_network_and_stay_stable(n, rows, descending, kind, seed):
  """Past ordering.SORT_DIRECT pairs (set to 0 here) the sort is a bitonic network over keys built from the values'
  bits and their indices: values (with the sign of zero) and indices equal numpy's stable sort for every dtype, at the
  ends of its range."""
  a = _long_rows(kind, rows, n, np.random.default_rng(seed))
  order = _np_stable_order(a, descending)
  with patch.object(ordering, "SORT_DIRECT", 0): vals, idx = Tensor(a).sort(-1, descending)
  assert vals.dtype == Tensor(a).dtype and idx.dtype == dtypes.int32
  np.testing.assert_array_equal(idx.numpy(), order)
  want = np.take_along_axis(a, order, -1)
  np.testing.assert_array_equal(vals.numpy(), want)
  if a.dtype.kind == "f": assert (np.signbit(vals.numpy()) == np.signbit(want)).all()
  k = n // 3
  with patch.object(ordering, "SORT_DIRECT", 0): top = Tensor(a).topk(k, largest=descending)  # the first k of the same order
  np.testing.assert_array_equal(top.indices.numpy(), order[..., :k])
  np.testing.assert_array_equal(top.values.numpy(), want[..., :k])

def test_a_long_sort_is_n_log_n_squared_work_with_gradients():
  """16384 floats along the first of two axes: the estimated operations stay within 4 n log2(n)^2 (every pair compared
  was n^2 each), and the gradient of the sorted values goes back to where each came from."""
  from tg.codegen import GlobalCounters
  r = np.random.default_rng(3)
  a = r.permutation(32768).reshape(16384, 2).astype(np.float32)
  x = Tensor(a).realize()
  GlobalCounters.reset()
  vals, idx = x.sort(0)
  np.testing.assert_array_equal(vals.numpy(), np.sort(a, 0))
  assert GlobalCounters.global_ops < 4 * 32768 * 14 ** 2, GlobalCounters.global_ops
  np.testing.assert_array_equal(idx.numpy(), np.argsort(a, 0))
  t = Tensor(a, requires_grad=True)
  g = r.standard_normal(a.shape).astype(np.float32)
  (t.sort(0, descending=True)[0] * Tensor(g)).sum().backward()
  want = np.zeros_like(a)
  np.put_along_axis(want, np.argsort(-a, 0), g, 0)
  np.testing.assert_array_equal(t.grad.numpy(), want)
