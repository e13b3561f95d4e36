"""Movement and indexing against numpy: views (reshape, permute, pad, slices with steps, ...) and tensor indices."""
import numpy as np
import pytest
from tg.tensor import Tensor, dtypes
from tg.uop import Ops
from tg.tensor.realize import run_schedule
from tensor_helpers import DEVICES, check, rand

A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

@pytest.mark.parametrize("device", DEVICES)
def test_views(device):
  for ft, fn in [(lambda x: x.reshape(-1, 5), lambda x: x.reshape(-1, 5)), (lambda x: x.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1)),
                 (lambda x: x.transpose(0, 2), lambda x: x.swapaxes(0, 2)), (lambda x: x.flatten(1), lambda x: x.reshape(3, 20)),
                 (lambda x: x.unflatten(1, (2, 2)), lambda x: x.reshape(3, 2, 2, 5)), (lambda x: x[:, :1].squeeze(1), lambda x: x[:, 0]),
                 (lambda x: x.unsqueeze(-1), lambda x: x[..., None]), (lambda x: x.flip((0, 2)), lambda x: x[::-1, :, ::-1]),
                 (lambda x: x.shrink(((1, 3), None, (2, 4))), lambda x: x[1:3, :, 2:4]),
                 (lambda x: x[:, :1].expand(3, 4, 5), lambda x: np.broadcast_to(x[:, :1], (3, 4, 5))), (lambda x: x[0].T, lambda x: x[0].T)]:
    check(ft, fn, A, device=device)

@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_modes(mode):
  np_mode = {"replicate": "edge", "circular": "wrap"}.get(mode, mode)
  check(lambda x: x.pad((1, 2, 2, 1), mode=mode), lambda x: np.pad(x, ((0, 0), (2, 1), (1, 2)), mode=np_mode), A)
  check(lambda x: x.pad(((0, 0), (1, 0), None), mode=mode), lambda x: np.pad(x, ((0, 0), (1, 0), (0, 0)), mode=np_mode), A)

def test_pad_value_and_negative_crops():
  check(lambda x: x.pad((1, 1), value=-7.0), lambda x: np.pad(x, ((0, 0), (0, 0), (1, 1)), constant_values=-7.0), A)
  check(lambda x: x.pad((-1, 2)), lambda x: np.pad(x[..., 1:], ((0, 0), (0, 0), (0, 2))), A)

INDICES = [(1,), (-1, 2), (slice(None), slice(None, None, -1)), (slice(3, 0, -2),), (Ellipsis, slice(1, None, 2)), (None, 0, None),
           (slice(None), 2, slice(-3, None)), (1, Ellipsis, None), (slice(10, 20),), ()]

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("idx", INDICES, ids=str)
def test_basic_getitem(device, idx):
  check(lambda x: x[idx], lambda x: x[idx], A, device=device)

@pytest.mark.parametrize("idx", [([2, 0],), (slice(None), [[0, 3], [1, 1]]), ([0, 2], slice(1, 3), [4, -1]), (1, [0, 2], [1, 3]),
                                 ([[1], [2]], slice(None), [0, 4]), (slice(None), -1, [1, 0])], ids=str)
def test_tensor_getitem(idx):
  check(lambda x: x[tuple(Tensor(np.array(i, np.int32)) if isinstance(i, list) else i for i in idx)], lambda x: x[idx], A)
  check(lambda x: x[idx], lambda x: x[idx], A)  # lists index like numpy arrays

def test_bool_getitem_and_masked_fill():
  mask = A % 3 == 0
  check(lambda x: x[Tensor(mask)], lambda x: x[mask], A)
  check(lambda x: x[Tensor(mask[0, :, 0])], lambda x: x[mask[0, :, 0]], A[0])
  check(lambda x: x.masked_fill(Tensor(mask), -1.0), lambda x: np.where(mask, -1.0, x).astype(np.float32), A)

def test_getitem_int_dtypes_and_bool_values():
  b = A.astype(np.int32) % 2 == 0
  check(lambda x: x[:, [1, 3]], lambda x: x[:, [1, 3]], b)
  check(lambda x: x[[2, 0]], lambda x: x[[2, 0]], A.astype(np.int64))

def test_getitem_errors():
  t = Tensor(A)
  with pytest.raises(IndexError, match=r"index 3 is out of bounds for axis 0 with size 3 \(shape \(3, 4, 5\)\)"): t[3]
  with pytest.raises(IndexError, match=r"too many indices for a tensor of shape \(3, 4, 5\)"): t[0, 0, 0, 0]
  with pytest.raises(IndexError, match="integer or bool, got dtypes.float32"): t[Tensor([0.0])]

def test_setitem():
  n = A.copy()
  t = Tensor(A).realize()
  for idx, v in [((1, slice(None, None, 2)), 100.0), ((slice(None), slice(3, 0, -2), 0), np.array([-1.0, -2.0], np.float32)),
                 ((Ellipsis, 4), np.arange(12, dtype=np.float32).reshape(3, 4)), (([0, 2], 1, [1, 3]), np.array([7.0, 8.0], np.float32))]:
    t[idx] = Tensor(v) if isinstance(v, np.ndarray) else v
    n[idx] = v
    np.testing.assert_array_equal(t.numpy(), n)
  with pytest.raises(ValueError, match=r"can't set a value of shape \(3,\) into a selection of shape \(4, 5\)"): t[0] = Tensor([1.0, 2.0, 3.0])

def test_setitem_reading_itself_shifted():
  t = Tensor(np.arange(6, dtype=np.float32)).realize()
  t[1:] = t[:-1]
  np.testing.assert_array_equal(t.numpy(), [0, 0, 1, 2, 3, 4])
  t.assign(t.flip(0))
  np.testing.assert_array_equal(t.numpy(), [4, 3, 2, 1, 0, 0])

def test_cat_stack_split_chunk():
  a, b = rand(2, 3), rand(4, 3, seed=1)
  check(lambda x, y: x.cat(y), lambda x, y: np.concatenate([x, y]), a, b)
  check(lambda x, y: Tensor.cat(x.T, y.T, dim=1), lambda x, y: np.concatenate([x.T, y.T], 1), a, b)
  check(lambda x, y: x.stack(y[:2], dim=1), lambda x, y: np.stack([x, y[:2]], 1), a, b)
  parts = Tensor(A).split([1, 3], dim=1)
  for p, q in zip(parts, np.split(A, [1], axis=1)): np.testing.assert_array_equal(p.numpy(), q)
  chunks = Tensor(A).chunk(2, dim=2)
  assert [c.shape for c in chunks] == [(3, 4, 3), (3, 4, 2)]
  np.testing.assert_array_equal(chunks[1].numpy(), A[..., 3:])
  with pytest.raises(ValueError, match=r"cat of shapes \[\(2, 3\), \(2, 4\)\] along dim 0"): Tensor(a).cat(Tensor(rand(2, 4)))

def test_split_of_an_empty_dim_is_one_empty_piece():
  """As PyTorch and tinygrad: split and chunk of a 0-size dim give one (0, 3) piece (it gave none, and split(0) a bare
  "range() arg 3 must not be zero"); a size below 1 of a non-empty dim is an error that names it."""
  for pieces in (Tensor.ones(0, 3).split(5), Tensor.ones(0, 3).split(0), Tensor.ones(0, 3).chunk(2)):
    assert [p.shape for p in pieces] == [(0, 3)]
  for bad in (0, -1):
    with pytest.raises(ValueError, match=f"split into pieces of {bad}: give a positive size"): Tensor.ones(2, 3).split(bad)

def test_repeat_roll_tri():
  a = rand(2, 3)
  check(lambda x: x.repeat(2, 1, 3), lambda x: np.tile(x, (2, 1, 3)), a)
  check(lambda x: x.repeat_interleave(2, dim=1), lambda x: np.repeat(x, 2, axis=1), a)
  check(lambda x: x.repeat_interleave(3), lambda x: np.repeat(x, 3), a)
  check(lambda x: x.roll(1, 1), lambda x: np.roll(x, 1, 1), a)
  check(lambda x: x.roll((-1, 4), (0, 1)), lambda x: np.roll(x, (-1, 4), (0, 1)), a)
  check(lambda x: x.roll(2), lambda x: np.roll(x, 2), a)
  sq = rand(4, 5)
  for d in (-1, 0, 2): check(lambda x: x.tril(d), lambda x: np.tril(x, d), sq); check(lambda x: x.triu(d), lambda x: np.triu(x, d), sq)

def test_gather_scatter_one_hot():
  x = rand(3, 4)
  idx = np.array([[0, 2, 1], [3, 3, 0]], np.int32)
  check(lambda t: t.gather(1, Tensor(idx)), lambda t: np.take_along_axis(t[:2], idx, 1), x)
  idx0 = np.array([[2, 0, 1, 1]], np.int32)
  check(lambda t: t.gather(0, Tensor(idx0)), lambda t: np.take_along_axis(t, idx0, 0), x)
  src = rand(2, 3, seed=5)
  sidx = np.array([[0, 2, 1], [3, 1, 0]], np.int32)  # unique per row
  def np_scatter(t, src, reduce=None):
    out = t.copy()
    for i in range(2):
      for j in range(3):
        v = src[i, j] if isinstance(src, np.ndarray) else src
        out[i, sidx[i, j]] = out[i, sidx[i, j]] + v if reduce == "add" else out[i, sidx[i, j]] * v if reduce == "multiply" else v
    return out
  check(lambda t: t.scatter(1, Tensor(sidx), Tensor(src)), lambda t: np_scatter(t, src), x)
  for reduce in (None, "add", "multiply"):  # a reduce takes a scalar src (tinygrad's rule; scatter_reduce takes tensors)
    check(lambda t: t.scatter(1, Tensor(sidx), 2.5, reduce=reduce), lambda t: np_scatter(t, 2.5, reduce), x)
  with pytest.raises(TypeError, match="scalar src"): Tensor(x).scatter(1, Tensor(sidx), Tensor(src), reduce="add")
  check(lambda t: t.one_hot(4), lambda t: np.eye(4, dtype=np.int32)[t], np.array([[0, 3], [1, 1]], np.int32))
  with pytest.raises(ValueError, match=r"gather index of shape \(2, 5\) doesn't fit a tensor of shape \(3, 4\) along dim 0"):
    Tensor(x).gather(0, Tensor(np.zeros((2, 5), np.int32)))

def test_zero_size_views():
  z = np.zeros((0, 3), np.float32)
  check(lambda x: x.reshape(3, 0), lambda x: x.reshape(3, 0), z)
  check(lambda x: x.permute(1, 0).pad(((1, 1), None)), lambda x: np.pad(x.T, ((1, 1), (0, 0))), z)
  check(lambda x: x[:, 1:], lambda x: x[:, 1:], z)
  check(lambda x: x.cat(Tensor.ones(2, 3)), lambda x: np.concatenate([x, np.ones((2, 3), np.float32)]), z)

def test_movement_errors():
  t = Tensor(A)
  with pytest.raises(ValueError, match=r"can't reshape \(3, 4, 5\) \(60 elements\) to \(7, -1\)"): t.reshape(7, -1)
  with pytest.raises(ValueError, match=r"can't expand \(3, 4, 5\) to \(3, 8, 5\)"): t.expand(3, 8, 5)
  with pytest.raises(IndexError, match="axis 3 is out of range for a tensor of 3 dimensions"): t.sum(3)
  with pytest.raises(ValueError, match=r"permute order \(0, 0, 1\) is not a permutation of 3 axes"): t.permute(0, 0, 1)
  assert t.bool().dtype == dtypes.bool

@pytest.mark.parametrize("device", DEVICES)
def test_shrink_to_and_pad_to(device):
  check(lambda x: x.shrink_to(2, None, 3), lambda x: x[:2, :, :3], A, device=device)
  check(lambda x: x.shrink_to((1, 4, 5)), lambda x: x[:1], A, device=device)
  check(lambda x: x.pad_to(4, None, 7), lambda x: np.pad(x, ((0, 1), (0, 0), (0, 2))), A, device=device)
  t = Tensor(A, device=device)
  with pytest.raises(ValueError, match="bigger than"): t.shrink_to(4, 4, 5)
  with pytest.raises(ValueError, match="smaller than"): t.pad_to(2, 4, 5)
  with pytest.raises(ValueError, match="has 2 axes"): t.pad_to(3, 4)

@pytest.mark.parametrize("idx_dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.uint64])
def test_tensor_indices_of_any_int_dtype_load_the_element(idx_dtype):
  """gather and tensor indices of every integer dtype read the element itself (a load, not a sum over the axis that makes
  -0.0 +0.0 and costs a loop: an int64 index once compared against arange's int32 and missed the load), exactly (a uint64
  index once compared in fp8, an int8 one wrapped negatives in int8)."""
  x = np.where(np.arange(24).reshape(4, 6) % 3 == 0, -0.0, 0.0).astype(np.float32)
  i, j = np.array([[0, 3, 5], [1, 2, 3]], idx_dtype), np.array([3, 0, 2], idx_dtype)
  for got, want in [(Tensor(x).gather(1, Tensor(i)), np.take_along_axis(x[:2], i.astype(np.int64), 1)),
                    (Tensor(x)[Tensor(j)], x[j]), (Tensor(x)[Tensor(j), Tensor(j)], x[j, j])]:
    sched = got.schedule()
    assert not any(u.op is Ops.REDUCE for s in sched for u in s.ast.toposort())
    run_schedule(sched)
    np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(want))
  # values no fp8 holds (uint64 and int32 promote to fp8e4m3) and negatives wrapped on an axis longer than int8 holds
  v = np.array([17, 33, 127] + ([-1, -100] if np.issubdtype(idx_dtype, np.signedinteger) else []), idx_dtype)
  y = np.arange(200, dtype=np.float32)
  np.testing.assert_array_equal(Tensor(y)[Tensor(v)].numpy(), y[v])
  np.testing.assert_array_equal(Tensor(y).gather(0, Tensor(v[:3])).numpy(), y[v[:3]])
  np.testing.assert_array_equal(Tensor(v[:3]).one_hot(200).numpy(), np.eye(200, dtype=np.int32)[v[:3]])

def test_nested_stack_then_index_lowers_each_level_once():
  """As tinygrad's test_recursive_pad: Tensor.stack(a, a)[0] 24 times. Each level reads its source through two pads, one
  of which the index [0] never reaches; lowering the source there too doubled the work at every level (2^24 lowerings,
  minutes). A read only in the padding is now 0 without lowering the source."""
  a = Tensor(1.0)
  for _ in range(24): a = Tensor.stack(a, a)[0]
  assert len(a.schedule()) <= 1
  b = Tensor([1.0, 2.0, 3.0])
  for _ in range(24): b = Tensor.stack(b, b * 2)[1]
  np.testing.assert_array_equal(b.numpy(), np.array([1.0, 2.0, 3.0], np.float32) * 2.0 ** 24)

def test_movement_ops_take_their_shape_or_order_by_keyword():
  """tinygrad's signatures (reshape(shape, *args), permute(order, *args), ...) take the first argument by name too:
  its MNIST example calls x.reshape(shape=(-1, 1, 28, 28))."""
  t = Tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
  assert t.reshape(shape=(6, 4)).shape == t.reshape(6, 4).shape == t.reshape((6, 4)).shape == (6, 4)
  np.testing.assert_array_equal(t.permute(order=(2, 0, 1)).numpy(), np.arange(24).reshape(2, 3, 4).transpose(2, 0, 1))
  assert t.expand(shape=(5, 2, 3, 4)).shape == (5, 2, 3, 4) and t.view(4, 6).shape == (4, 6)
  assert t.shrink_to(shape=(1, 2, 3)).tolist() == [[[0, 1, 2], [4, 5, 6]]] and t.pad_to(shape=(3, 3, 4)).shape == (3, 3, 4)
  assert Tensor(3.0).reshape().shape == ()
