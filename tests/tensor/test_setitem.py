"""__setitem__ and assigns into views, against numpy (whose views share memory as PyTorch's do)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.tensor import Tensor, dtypes
from tg.tensor.errors import TensorDtypeError

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

@pytest.mark.parametrize("view", VIEWS, ids=["T", "column", "strided", "flipped", "row", "T reversed strided", "two strides", "reshaped"])
def test_setitem_into_view_reaches_source(view):
  """x.T[0] = v writes x, as x.T.assign() does (tinygrad's and PyTorch's): it raised "setitem target needs to be contiguous"."""
  n = np.arange(12, dtype=np.float32).reshape(3, 4)
  x = realized(n)
  vt, vn = view[0](x), view[1](n)
  vt[0] = -1
  vn[0] = -1
  np.testing.assert_array_equal(x.numpy(), n)
  np.testing.assert_array_equal(vt.numpy(), vn)

@pytest.mark.parametrize("write", [lambda t: t[1].__setitem__(2, 5), lambda t: t.T.__setitem__((1, 0), 5),
                                   lambda t: t[::-1].__setitem__(0, 5), lambda t: t[:, 1].__setitem__(2, 5),
                                   lambda t: t[1:][0].__setitem__(slice(1, None), 5), lambda t: t.T[1].__setitem__(0, 5)],
                         ids=["t[1][2]", "t.T[1, 0]", "t[::-1][0]", "t[:, 1][2]", "t[1:][0][1:]", "t.T[1][0]"])
def test_setitem_chained_index_writes_the_tensor(write):
  """PyTorch's most common idiom, t[1][2] = 5, and tinygrad's other view targets: written into t (numpy's views agree)."""
  t, n = Tensor.zeros(3, 3).contiguous().realize(), np.zeros((3, 3), np.float32)
  write(t)
  write(n)
  np.testing.assert_array_equal(t.numpy(), n)

def test_setitem_into_view_of_lazy_tensor():
  """The viewed tensor is realized, then written (PyTorch's: its memory is written; tinygrad drops the write)."""
  t = Tensor.ones(3, 3) + 1
  t[1][2] = 5
  np.testing.assert_array_equal(t.numpy(), [[2, 2, 2], [2, 2, 5], [2, 2, 2]])

def test_setitem_into_a_value_writes_it():
  """A broadcast constant, and a pad, are values of their own: written, as in PyTorch (tinygrad writes the first too)."""
  c = Tensor.ones(4)
  c[0] = 5
  np.testing.assert_array_equal(c.numpy(), [5, 1, 1, 1])
  x = realized(np.zeros(3, np.float32))
  p = x.pad(((1, 1),))
  p[0] = 5
  np.testing.assert_array_equal(p.numpy(), [5, 0, 0, 0, 0])
  np.testing.assert_array_equal(x.numpy(), [0, 0, 0])

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

def test_assign_broadcasts():
  """tinygrad's test_assign_broadcast: t.assign(arange(5.)) on a (3, 5) float tensor fills each row (it raised on the
  shape), as PyTorch's copy_; a shape that doesn't broadcast raises."""
  t = Tensor.zeros(3, 5)
  t.assign(Tensor.arange(5.0))
  np.testing.assert_array_equal(t.numpy(), np.broadcast_to(np.arange(5, dtype=np.float32), (3, 5)))
  with pytest.raises(ValueError, match=r"assign of shape \(4,\)"): Tensor.zeros(3, 5).assign(Tensor.ones(4))

# writes through bitcast(): numpy's view(dtype) shares memory as PyTorch's view(dtype) does, little-endian as tg's bitcast
BITCASTS = [
  ("same size", np.array([1, 2, 3, 4], np.float32), lambda x: x.bitcast(dtypes.uint32), lambda n: n.view(np.uint32),
   np.array([0x40800000, 0x40400000, 0x40000000, 0x3F800000], np.uint32)),
  ("uint8 as int64", np.arange(1, 17, dtype=np.uint8), lambda x: x.bitcast(dtypes.int64), lambda n: n.view(np.int64),
   np.array([0x0102030405060708, -0x1112131415161718], np.int64)),
  ("shrink then bitcast", np.array([1, 2, 3, 4], np.float32), lambda x: x[1:3].bitcast(dtypes.uint32), lambda n: n[1:3].view(np.uint32),
   np.array([0x40800000, 0x40400000], np.uint32)),
  ("shrink then resized", np.arange(8, dtype=np.uint16), lambda x: x[2:6].bitcast(dtypes.uint32), lambda n: n[2:6].view(np.uint32),
   np.array([0x00110022, 0x00330044], np.uint32)),
  ("double bitcast", np.array([1, 2, 3, 4], np.float32), lambda x: x.bitcast(dtypes.uint32).bitcast(dtypes.int32),
   lambda n: n.view(np.uint32).view(np.int32), np.array([0x40800000, 0x40400000, 0x40000000, 0x3F800000], np.int32)),
  ("double resized", np.array([1, 2], np.float32), lambda x: x.bitcast(dtypes.uint8).bitcast(dtypes.int16),
   lambda n: n.view(np.uint8).view(np.int16), np.array([0, 0x4040, 0, 0x4080], np.int16)),
  ("bitcast then slice", np.array([1, 2], np.float32), lambda x: x.bitcast(dtypes.uint8)[4:8], lambda n: n.view(np.uint8)[4:8],
   np.array([0, 0, 0x80, 0x40], np.uint8)),
  ("resized then transposed", np.arange(8, dtype=np.uint8).reshape(2, 4), lambda x: x.bitcast(dtypes.uint16).T[1],
   lambda n: n.view(np.uint16).T[1], np.array([0xAABB, 0xCCDD], np.uint16)),
]

@pytest.mark.parametrize("case", BITCASTS, ids=[c[0] for c in BITCASTS])
def test_assign_through_bitcast_reaches_source(case):
  """a.bitcast(dt).assign(v) writes a's bytes (tinygrad's, and PyTorch's a.view(dt).copy_(v)): the write went into a copy of
  the bitcast, and a kept its values."""
  _, n, view, nview, v = case
  x = realized(n)
  view(x).assign(Tensor(v)).realize()
  nview(n)[...] = v
  np.testing.assert_array_equal(x.numpy(), n)

def test_setitem_through_bitcast_reaches_source():
  n = np.array([1, 2], np.float32)
  x = realized(n)
  x.bitcast(dtypes.uint16)[1] = 0x4000
  n.view(np.uint16)[1] = 0x4000
  np.testing.assert_array_equal(x.numpy(), n)  # [2, 2]: the high half of 1.0's bits

def test_assign_through_bitcast_of_lazy_tensor():
  """The lazy tensor is realized, then written through the bitcast (PyTorch writes its memory)."""
  c = Tensor([1.0, 2.0]) * 2
  c.bitcast(dtypes.uint32).assign(Tensor(np.array([1.0, 5.0], np.float32).view(np.uint32))).realize()
  np.testing.assert_array_equal(c.numpy(), [1, 5])

def test_bitcast_view_shows_later_writes():
  """A bitcast of a realized buffer shares its memory after its own assign, as a view does."""
  n = np.array([1, 2], np.float32)
  a = realized(n)
  b = a.bitcast(dtypes.int32)
  b.assign(Tensor(np.array([3, 4], np.float32).view(np.int32))).realize()
  a.assign(a + 1).realize()
  np.testing.assert_array_equal(b.numpy(), np.array([4, 5], np.float32).view(np.int32))

# writes through detach(): it shares its source's memory (PyTorch's and tinygrad's)
DETACHES = [("detach", lambda t: t.detach(), lambda n: n), ("detach then T", lambda t: t.detach().T, lambda n: n.T),
            ("T then detach", lambda t: t.T.detach(), lambda n: n.T), ("row of detach", lambda t: t.detach()[1], lambda n: n[1])]

@pytest.mark.parametrize("case", DETACHES, ids=[c[0] for c in DETACHES])
def test_assign_through_detach_reaches_source(case):
  """t.detach().assign(v) writes t: the write went into a copy of the detached tensor."""
  _, view, nview = case
  n = np.arange(6, dtype=np.float32).reshape(2, 3)
  t = realized(n)
  target = nview(n)
  v = -np.arange(target.size, dtype=np.float32).reshape(target.shape)
  view(t).assign(Tensor(v)).realize()
  target[...] = v
  np.testing.assert_array_equal(t.numpy(), n)

def test_setitem_through_detach_reaches_source():
  t = Tensor.zeros(3, 3).contiguous().realize()
  t.detach()[1, 2] = 5
  np.testing.assert_array_equal(t.numpy(), [[0, 0, 0], [0, 0, 5], [0, 0, 0]])
  c = Tensor.ones(3) * 2  # of a lazy tensor: it is realized and written
  d = c.detach()
  d[1] = 7
  np.testing.assert_array_equal(c.numpy(), [2, 7, 2])
  np.testing.assert_array_equal(d.numpy(), [2, 7, 2])

def test_realized_detach_shares_memory():
  """d = t.detach(); d.realize() copied d into a buffer of its own: a write into d no longer reached t."""
  t = realized(np.array([1, 2, 3], np.float32))
  d = t.detach()
  d.realize()
  d.assign(Tensor([9.0, 9.0, 9.0])).realize()
  np.testing.assert_array_equal(t.numpy(), [9, 9, 9])

@pytest.mark.parametrize("view", VIEWS, ids=["T", "column", "strided", "flipped", "row", "T reversed strided", "two strides", "reshaped"])
@pytest.mark.parametrize("own_write", [False, True], ids=["realized", "assigned"])
def test_view_stays_a_view_after_realize(view, own_write):
  """p = o.T; p.assign(p + 1).realize() (or p.realize()) copied p into a buffer of its own, and o's next assign didn't show in
  p (tinygrad's view stays one, PyTorch's too)."""
  n = np.arange(12, dtype=np.float32).reshape(3, 4)
  o = realized(n)
  p, pn = view[0](o), view[1](n)
  if own_write:
    p.assign(p + 1).realize()
    pn += 1
  else: p.realize()
  o.assign(o + 100).realize()
  n += 100
  np.testing.assert_array_equal(p.numpy(), pn)
  np.testing.assert_array_equal(o.numpy(), n)

def test_transpose_assigned_then_its_source_assigned():
  """The case as reported: p = o.T after its own assign gave [[2, 4], [3, 5]], o's update lost."""
  o = Tensor([[1.0, 2.0], [3.0, 4.0]]).realize()
  p = o.T
  p.assign(p + 1).realize()
  o.assign(o + 100).realize()
  assert p.tolist() == [[102, 104], [103, 105]]

# dtypes: tinygrad's assign and setitem don't cast a tensor (PyTorch's copy_ does): TensorDtypeError, and the target unchanged
MISMATCHES = [(dtypes.half, dtypes.float), (dtypes.bool, dtypes.int), (dtypes.int8, dtypes.int32), (dtypes.int, dtypes.float),
              (dtypes.float, dtypes.half)]

@pytest.mark.parametrize("src, dst", MISMATCHES, ids=[f"{s.name}->{d.name}" for s, d in MISMATCHES])
@pytest.mark.parametrize("how", ["assign", "setitem", "view assign"])
def test_write_of_another_dtype_raises(src, dst, how):
  """It cast silently (and raised a plain TypeError for float -> half); tinygrad 0.14 raises for every mismatch."""
  t = Tensor.zeros(4, dtype=dst).contiguous().realize()
  with pytest.raises(TensorDtypeError, match=rf"(assign|setitem) dtype mismatch: .*{src}.*{dst}.*\.cast\({dst}\)") as e:  # (tinygrad's words)
    if how == "assign": t.assign(Tensor.ones(4, dtype=src)).realize()
    elif how == "setitem": t[2:4] = Tensor.ones(2, dtype=src)
    else: t[1:3].assign(Tensor.ones(2, dtype=src)).realize()
  assert isinstance(e.value, RuntimeError) and isinstance(e.value, TypeError)
  assert t.tolist() == [0, 0, 0, 0]

def test_python_values_take_the_target_dtype():
  """A Python scalar, list or numpy array isn't a tensor of another dtype: it takes the target's (tinygrad's and PyTorch's)."""
  t = Tensor.zeros(5, dtype=dtypes.int).contiguous().realize()
  t[0] = 3.7
  t[1:3] = [1.5, 2.5]
  t[3] = True
  t[4:] = np.array([9.9])
  assert t.tolist() == [3, 1, 2, 1, 9]
  t.assign(2.0).realize()
  assert t.tolist() == [2] * 5
  f = Tensor.zeros(3, dtype=dtypes.half).contiguous().realize()
  f += 1.5
  f[0] = 7
  assert f.dtype == dtypes.half and f.tolist() == [7, 1.5, 1.5]

def test_pending_detach_shows_a_later_write():
  """A detach() built before an assign shares the buffer, as a view does (PyTorch's and tinygrad's): it was realized first
  as a reader of the old value, a copy."""
  t = realized(np.array([1, 2, 3], np.float32))
  d, v = t.detach(), t[1:]
  t.assign(Tensor([7.0, 8.0, 9.0])).realize()
  np.testing.assert_array_equal(d.numpy(), [7, 8, 9])
  np.testing.assert_array_equal(v.numpy(), [8, 9])

def test_write_through_detach_and_bitcast_of_sharded_tensor():
  """A sharded tensor takes them too: they went into a copy of its pieces."""
  n = np.arange(8, dtype=np.float32)
  t = Tensor(n).shard(("CPU", "CPU:1"), axis=0).realize()
  t.detach()[1:3].assign(Tensor([50.0, 60.0]).shard(("CPU", "CPU:1"))).realize()
  t.bitcast(dtypes.int32)[5] = int(np.float32(-5).view(np.int32))
  t.bitcast(dtypes.uint8)[24:28].assign(Tensor(np.float32(9).reshape(1).view(np.uint8)).shard(("CPU", "CPU:1"))).realize()
  n[1:3], n[5], n[6] = [50, 60], -5, 9
  np.testing.assert_array_equal(t.numpy(), n)

@pytest.mark.parametrize("write", ["setitem", "assign"])
def test_a_write_through_a_view_of_a_lazy_tensor_leaves_an_equal_tensor_alone(write):
  """t1 = a @ a.T; t2 = a @ a.T are one graph (hash-consed): a write through a view of t1 (t1[-1][1:] = v, t1[-1].assign(v))
  wrote into t2 too, as PyTorch's two tensors would not."""
  A = np.array([[-1.22, -0.33], [0.79, 0.24]], np.float32)
  a = Tensor(A)
  t1, t2 = a @ a.T, a @ a.T
  if write == "setitem": t1[-1][1:] = Tensor([9.0])
  else: t1[-1].assign(Tensor([9.0, 9.0]))
  want = A @ A.T
  np.testing.assert_allclose(t2.numpy(), want, rtol=1e-6)
  want[1, 1:] = 9.0
  if write == "assign": want[1] = 9.0
  np.testing.assert_allclose(t1.numpy(), want, rtol=1e-6)

def test_a_write_through_a_reshape_of_a_lazy_tensor_reaches_it():
  """t1.reshape(4).assign(v), t1.reshape(4) += 1 and t1.unsqueeze(0).assign(v) of a lazy t1 went into a buffer of the
  view's own, and t1 never saw them; PyTorch writes t1, as tg's other views of a lazy tensor already did."""
  a = Tensor([[1.0, 2.0], [3.0, 4.0]])
  t1 = a.clone()
  t1.reshape(4).assign(Tensor([5.0, 6.0, 7.0, 8.0]))
  assert t1.tolist() == [[5.0, 6.0], [7.0, 8.0]] and a.tolist() == [[1.0, 2.0], [3.0, 4.0]]
  t1 = a * 1
  v = t1.reshape(4)
  v += 1
  assert t1.tolist() == [[2.0, 3.0], [4.0, 5.0]] and v.tolist() == [2.0, 3.0, 4.0, 5.0]
  t1 = a.clone()
  t1.unsqueeze(0).assign(Tensor([[[9.0, 9.0], [9.0, 9.0]]]))
  assert t1.tolist() == [[9.0, 9.0], [9.0, 9.0]]
