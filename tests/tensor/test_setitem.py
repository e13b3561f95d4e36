"""__setitem__ and assigns into views, against numpy (whose views share memory as PyTorch's do)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.tensor import Tensor

def realized(n: np.ndarray) -> Tensor: return Tensor(n.copy()).realize()

VIEWS = [(lambda x: x.T, lambda n: n.T), (lambda x: x[:, 1], lambda n: n[:, 1]), (lambda x: x[1:, ::2], lambda n: n[1:, ::2]),
         (lambda x: x.flip(1), lambda n: n[:, ::-1]), (lambda x: x[1], lambda n: n[1]), (lambda x: x.T[::-2], lambda n: n.T[::-2]),
         (lambda x: x[::2, 1::3], lambda n: n[::2, 1::3]), (lambda x: x.reshape(4, 3)[1:], lambda n: n.reshape(4, 3)[1:])]

@pytest.mark.parametrize("view", VIEWS, ids=["T", "column", "strided", "flipped", "row", "T reversed strided", "two strides", "reshaped"])
def test_assign_into_view_reaches_source(view):
  """x.T.assign(v) writes x (tinygrad's assign, PyTorch's copy_): it wrote v flat into x's buffer, or into a copy."""
  n = np.arange(12, dtype=np.float32).reshape(3, 4)
  x = realized(n)
  vt, vn = view[0](x), view[1](n)
  new = -np.arange(vn.size, dtype=np.float32).reshape(vn.shape)
  vt.assign(Tensor(new))
  vn[...] = new
  np.testing.assert_array_equal(x.numpy(), n)
  np.testing.assert_array_equal(vt.numpy(), new)

def test_inplace_op_on_permuted_view():
  """tinygrad's test_permuted_assignment: a = a.permute(1, 0); a += b writes a's buffer."""
  n = np.arange(16, dtype=np.float32).reshape(4, 4)
  x = realized(n)
  a = x.permute(1, 0)
  a += Tensor(n)
  np.testing.assert_array_equal(a.numpy(), n.T + n)
  np.testing.assert_array_equal(x.numpy(), (n.T + n).T)

def test_assign_into_view_of_lazy_tensor():
  """The viewed tensor is realized first, so it sees the write; an earlier lazy reader keeps the old value."""
  z = Tensor.arange(6).reshape(2, 3).float() + 1
  before = z * 1
  zt = z.T
  zt.assign(Tensor.full((3, 2), 100.0))
  np.testing.assert_array_equal(z.numpy(), np.full((2, 3), 100))
  np.testing.assert_array_equal(before.numpy(), [[1, 2, 3], [4, 5, 6]])

@pytest.mark.parametrize("write", [lambda x: x[0].__setitem__(2, -1), lambda x: x.reshape(4, 3).__setitem__(1, 7),
                                   lambda x: x[:2].__setitem__((1, slice(1, 3)), 5), lambda x: x[0, :2].__setitem__(1, 8)],
                         ids=["first row", "reshape", "prefix rows", "prefix of a row"])
def test_setitem_into_contiguous_view_reaches_source(write):
  """A view that is its buffer's first elements takes a setitem, written through (tinygrad's and PyTorch's)."""
  n = np.arange(12, dtype=np.float32).reshape(3, 4)
  x = realized(n)
  write(x)
  write(n)
  np.testing.assert_array_equal(x.numpy(), n)

@pytest.mark.parametrize("target", [lambda: realized(np.zeros((3, 4), np.float32)).T, lambda: realized(np.zeros((3, 4), np.float32))[1],
                                    lambda: realized(np.zeros((3, 4), np.float32))[:, ::2], lambda: Tensor.ones(4),
                                    lambda: realized(np.zeros(3, np.float32)).pad(((1, 1),))],
                         ids=["T", "second row", "strided", "broadcast constant", "pad"])
def test_setitem_into_noncontiguous_raises(target):
  """tinygrad's rule (PyTorch writes through any view): not silently into a copy."""
  with pytest.raises(RuntimeError, match="contiguous"): target()[0] = 5

def test_assign_into_a_view_of_a_pad():
  """A view that shows a pad's padding raises (its write went into a copy and was lost, silently; tinygrad fails too);
  one inside the padding writes the source, as tinygrad's; the padded tensor itself, or made one by contiguous(), takes
  any write."""
  n = np.arange(6, dtype=np.float32).reshape(2, 3)
  x = realized(n)
  with pytest.raises(RuntimeError, match="padding"): x.pad(((1, 1), (0, 0)))[0].assign(Tensor.full((3,), 9.0))
  x.pad(((1, 1), (0, 0)))[1].assign(Tensor.full((3,), 9.0))
  np.testing.assert_array_equal(x.numpy(), [[9, 9, 9], [3, 4, 5]])
  y = realized(n).pad(((1, 1), (0, 0))).contiguous()
  y[0].assign(Tensor.full((3,), 7.0))
  np.testing.assert_array_equal(y.numpy(), [[7, 7, 7], [0, 1, 2], [3, 4, 5], [0, 0, 0]])
  z = realized(n).pad(((1, 0), (0, 0)))
  z.assign(Tensor.ones(3, 3))
  np.testing.assert_array_equal(z.numpy(), np.ones((3, 3)))

def test_write_into_expanded_view_raises():
  """Several of its elements are one element of the source (PyTorch's rule)."""
  x = realized(np.arange(3, dtype=np.float32))
  with pytest.raises(RuntimeError, match="expanded view"): x.reshape(1, 3).expand(2, 3).assign(Tensor.ones(2, 3))

def test_setitem_is_seen_at_once():
  """Every view of the buffer sees a setitem at once (tinygrad realizes it), a reshape too."""
  x = realized(np.zeros(6, np.float32))
  r = x.reshape(2, 3)
  r[1] = 4
  np.testing.assert_array_equal(x.numpy(), [0, 0, 0, 4, 4, 4])

def test_setitem_with_grad_raises():
  """tinygrad's rule (PyTorch records the write in the graph)."""
  w = Tensor.ones(3, requires_grad=True)
  with pytest.raises(NotImplementedError): w[0] = 2
  x = realized(np.zeros(3, np.float32))
  with pytest.raises(NotImplementedError): x[0] = w[1]

def test_tensor_index_setitem_is_not_quadratic():
  """A tensor-indexed write builds a one-hot over the indexed axis only: 4096 rows of a 4096 x 256 matrix would be
  a 1M x 4096 one-hot over every element (minutes); here it is 4096 x 4096 x 256 multiply-adds."""
  n = np.zeros((4096, 256), np.float32)
  rows = np.random.default_rng(0).permutation(4096)[:1000].astype(np.int32)
  vals = np.random.default_rng(1).standard_normal((1000, 256)).astype(np.float32)
  x = realized(n)
  x[Tensor(rows)] = Tensor(vals)
  n[rows] = vals
  np.testing.assert_array_equal(x.numpy(), n)

def test_repeated_index_writes_the_last():
  x = realized(np.zeros(5, np.float32))
  x[Tensor([1, 3, 1])] = Tensor([5.0, 7.0, 2.0])
  np.testing.assert_array_equal(x.numpy(), [0, 2, 0, 7, 0])

@st.composite
def _indexing(draw):
  shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
  key = []
  for n in shape:
    kind = draw(st.sampled_from(["slice", "int", "tensor", "all"]))
    if kind == "slice":
      key.append(slice(draw(st.integers(-n, n)), draw(st.integers(-n, n)), draw(st.sampled_from([1, 2, -1, -2, 3]))))
    elif kind == "int": key.append(draw(st.integers(-n, n - 1)))
    elif kind == "tensor": key.append(np.array(draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3)), np.int32))
    else: key.append(slice(None))
  tensors = [k for k in key if isinstance(k, np.ndarray)]
  if len({len(k) for k in tensors}) > 1:  # indices broadcast together: give them one length
    m = min(len(k) for k in tensors)
    key = [k[:m] if isinstance(k, np.ndarray) else k for k in key]
  if draw(st.booleans()): key.insert(draw(st.integers(0, len(key))), None)
  return shape, tuple(key), draw(st.booleans())

@settings(max_examples=60, deadline=None)
@given(_indexing())
def test_setitem_matches_numpy(case):
  """Any mix of ints, slices (steps, negatives), tensor indices and new axes; a scalar or a value of the target's shape.
  Distinct values, so which write wins a repeated index shows (numpy's last). Ints are basic indices, applied first
  (PyTorch's and tinygrad's rule: numpy counts an int among the tensor indices, and x[:, 0, None, idx] has idx's axis
  first there)."""
  shape, key, scalar = case
  n = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
  view, rest = _ints_first(n, key)
  target = view[rest]
  if target.size == 0: return
  positions = _ints_first(np.arange(n.size).reshape(shape), key)
  if len(np.unique(positions[0][positions[1]])) != target.size: return  # a repeated position (its own test)
  v = -1.0 if scalar else -np.arange(1, target.size + 1, dtype=np.float32).reshape(target.shape)
  x = realized(n)
  got = x[tuple(Tensor(k) if isinstance(k, np.ndarray) else k for k in key)]
  assert got.shape == target.shape, key
  x[tuple(Tensor(k) if isinstance(k, np.ndarray) else k for k in key)] = v if scalar else Tensor(v)
  view[rest] = v  # (a view of n: basic indexing)
  np.testing.assert_array_equal(x.numpy(), n)

def _ints_first(n: np.ndarray, key: tuple) -> tuple[np.ndarray, tuple]:
  """The view of n that key's ints select (and the rest of the key, for it): numpy under PyTorch's rule."""
  ints = tuple(k if isinstance(k, int) else slice(None) for k in key if k is not None)
  return n[(*ints, ...)], tuple(k for k in key if not isinstance(k, int))  # (the Ellipsis: a 0-d view, not a copied scalar)

def test_setitem_on_an_int_and_a_tensor_index():
  """x[:, 1, idx] = v: the gated load of a view's index once lost its gate to a rewrite that swapped a negated
  condition's branches, and the kernel rendered Invalid as a value (TypeError)."""
  a = np.arange(4, dtype=np.float32).reshape(1, 2, 2)
  x = realized(a)
  x[:, 1, Tensor(np.array([0, 1], np.int32))] = Tensor(np.full((1, 2), 9.0, np.float32))
  a[:, 1, [0, 1]] = 9.0
  np.testing.assert_array_equal(x.numpy(), a)

def test_assign_broadcasts_and_casts_up():
  """tinygrad's test_assign_broadcast: t.assign(arange(5)) on a (3, 5) float tensor fills each row (it raised on the
  shape and on the int dtype), as PyTorch's copy_; a dtype that doesn't promote to the target's still raises (tinygrad)."""
  t = Tensor.zeros(3, 5)
  t.assign(Tensor.arange(5))
  np.testing.assert_array_equal(t.numpy(), np.broadcast_to(np.arange(5, dtype=np.float32), (3, 5)))
  with pytest.raises(TypeError, match="cast first"): Tensor.zeros(3, dtype="int32").contiguous().realize().assign(Tensor([1.5, 2.0, 3.0]))
  with pytest.raises(ValueError, match=r"assign of shape \(4,\)"): Tensor.zeros(3, 5).assign(Tensor.ones(4))
