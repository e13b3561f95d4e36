"""Symbolic sizes: a shrink to a bound variable runs the same kernels for every value, plainly and under TinyJit."""
import numpy as np
import pytest
from tg.uop import UOp
from tg.tensor import Tensor, Counters
from tg.tensor.errors import TensorShapeError, TensorValueError
from tg.tensor.jit import TinyJit, JitError
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
  with pytest.raises(ValueError, match="out of bounds"): x.shrink(((0, UOp.variable("n", 1, 9).bind(9)),))
  with pytest.raises(IndexError, match="symbolic slice takes step 1"): x[:n(3):2]

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

def test_jit_replay_checks_the_values_against_its_views():
  """As tinygrad's test_jit_setitem_variable_offset: a jitted write into t[v:v+1] (v in [0, 6], a view that fits a 6-row
  tensor only for v <= 5) replays at each value; a replay at a value the view doesn't fit raises, where the captured
  kernels would have written other elements (tinygrad writes them)."""
  @TinyJit
  def f(t: Tensor, a: Tensor, v: UOp) -> None: t.shrink(((v, v + 1), None)).assign(a).realize()
  t, ref = Tensor.zeros(6, 6).contiguous().realize(), np.zeros((6, 6), np.float32)
  for i in range(6):
    f(t, Tensor.full((1, 6), i + 1.0).contiguous(), UOp.variable("v", 0, 6).bind(i))
    ref[i] = i + 1
    np.testing.assert_array_equal(t.numpy(), ref)
  with pytest.raises(JitError, match=r"at v=6 a view the capture took is out of bounds of its tensor"):
    f(t, Tensor.full((1, 6), 7.0).contiguous(), UOp.variable("v", 0, 6).bind(6))
  np.testing.assert_array_equal(t.numpy(), ref)

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

@pytest.mark.parametrize("device", DEVICES)
def test_realize_symbolic_shape(device):
  """A tensor of symbolic shape realizes into a buffer with room for its largest value (it raised NotImplementedError),
  reads back through a slice to the bound value, feeds later kernels, and every value runs the kernels of the first."""
  a, b = rng.standard_normal((3, 10)).astype(np.float32), rng.standard_normal((10, 4)).astype(np.float32)
  ta, tb = Tensor(a, device).realize(), Tensor(b, device).realize()
  for i, k in enumerate((2, 7, 4)):
    Counters.reset()
    v = UOp.variable("i", 1, 10).bind(k)
    s = (ta[:, :v] + 1).realize()
    d = (s * 2).realize()
    m = (ta[:, :v] @ tb[:v]).realize()
    if i: assert Counters.compiled == 0, f"i={k} reuses the kernels compiled for another value"
    assert s.shape == (3, v)
    np.testing.assert_allclose(s[:, :k].numpy(), a[:, :k] + 1, rtol=1e-6)
    np.testing.assert_allclose(d[:2, :k].numpy(), 2 * (a[:2, :k] + 1), rtol=1e-6)
    np.testing.assert_allclose(m.numpy(), a[:, :k] @ b[:k], rtol=1e-5, atol=1e-6)

def test_kv_cache_with_symbolic_start():
  """tinygrad's test_assign_kv_cache: the cache's first start_pos rows cat the new ones, realized (a symbolic shape), then
  padded back to the cache's size and assigned, under TinyJit."""
  class Attn:
    @TinyJit
    def __call__(self, xk: Tensor, start_pos: UOp | int) -> None:
      if not hasattr(self, "cache_k"): self.cache_k = Tensor.zeros(2, 8, 1, 1).contiguous()
      keys = self.cache_k.shrink((None, (0, start_pos), None, None)).cat(xk, dim=1).contiguous() if not isinstance(start_pos, int) else xk
      self.cache_k.assign(keys.pad((None, (0, 8 - start_pos - xk.shape[1]), None, None)).contiguous()).realize()
  attn = Attn()
  attn(Tensor.ones(2, 3, 1, 1).contiguous(), 0)
  for i in range(3, 6): attn(Tensor.ones(2, 1, 1, 1).contiguous(), UOp.variable("start_pos", 1, 8).bind(i))
  np.testing.assert_array_equal(attn.cache_k.flatten().numpy(), [1, 1, 1, 1, 1, 1, 0, 0] * 2)

@pytest.mark.parametrize("device", DEVICES)
def test_bound_variable_as_a_value(device):
  """Tensor(v) and t * v for a bound variable v (tinygrad's test_tensor_variable), and a mean over a symbolic axis (its
  count is symbolic): the kernels take v as an argument, the same kernels for every value."""
  for i, k in enumerate((1, 2, 7)):
    Counters.reset()
    v = UOp.variable("a", 0, 10).bind(k)
    assert (Tensor(v, device) + 3).item() == k + 3
    assert (Tensor(3, device) * (v * 4)).item() == 12 * k
    ones = Tensor.ones(2, 10, device=device).contiguous()[:, :UOp.variable("b", 1, 10).bind(k + 1)]
    assert ones.sum().item() == 2 * (k + 1) and ones.mean().item() == 1.0 and ones.var().item() == 0.0
    if i: assert Counters.compiled == 0, f"a={k} reuses the kernels compiled for another value"

def test_jit_input_of_symbolic_shape():
  """A jitted function of a[:, :v] (tinygrad's test_symbolic_jit): the replay passes each call's v to the kernels and
  binds its outputs' sizes to it (they kept the captured value: a[:, :v] of v=3 came back 2 wide)."""
  a = rng.standard_normal((3, 10)).astype(np.float32)
  ta = Tensor(a).realize()
  jf = TinyJit(lambda t: (t + 1).realize())
  for k in (1, 2, 3, 7, 4):
    out = jf(ta[:, :UOp.variable("i", 1, 10).bind(k)])
    assert out.shape[1].src[1].arg == k
    np.testing.assert_allclose(out[:, :k].numpy(), a[:, :k] + 1, rtol=1e-6)
  assert len(jf.steps) == 1

def test_mean_over_the_other_axis_of_a_symbolic_shape():
  """mean(1) of an (i, 3) tensor reshapes (i, 1) to (i,): the sizes i * 1 and i compared as UOps were unequal."""
  a = rng.standard_normal((10, 3)).astype(np.float32)
  ta = Tensor(a).realize()
  for k in (2, 5):
    m = ta[:UOp.variable("i", 1, 10).bind(k)].mean(1).realize()
    np.testing.assert_allclose(m[:k].numpy(), a[:k].mean(1), rtol=1e-6)

def test_symbolic_arange_and_full():
  """Tensor.arange with bound variables for start, stop or step (the arange of the most elements, shrunk to the count),
  Tensor.full of a variable, Tensor.from_uop: tinygrad's test_tensor_variable (each raised TypeError)."""
  assert Tensor.arange(0, UOp.variable("a", 1, 10).bind(4))[:4].tolist() == [0, 1, 2, 3]
  assert Tensor.arange(UOp.variable("a", 1, 6).bind(4), 7)[:3].tolist() == [4, 5, 6]
  assert Tensor.arange(0, 10, UOp.variable("s", 1, 3).bind(2))[:5].tolist() == [0, 2, 4, 6, 8]
  b, e, s = UOp.variable("b", 0, 5).bind(2), UOp.variable("e", 10, 20).bind(14), UOp.variable("s", 1, 3).bind(3)
  assert Tensor.arange(b, e, s)[:4].tolist() == [2, 5, 8, 11]
  v = UOp.variable("x", 1, 10).bind(5)
  assert Tensor.full((3,), v).tolist() == [5, 5, 5] and Tensor.from_uop(v * 4).item() == 20
  with pytest.raises(ValueError, match="may be empty or negative"): Tensor.arange(UOp.variable("a", 1, 10).bind(2), 7)

def test_pad_by_a_bound_variable():
  """tinygrad's test_symbolic_pad: t.pad([v, v, v, v]) (a flat padding of variables raised TypeError in its parsing)."""
  for k in (2, 3):
    v = UOp.variable("a", 1, 10).bind(k)
    p = Tensor.ones(2, 2).contiguous().pad([v, v, v, v])
    assert abs(p.mean().item() - 4 / (2 + 2 * k) ** 2) < 1e-7
    np.testing.assert_array_equal(p[:2 + 2 * k, :2 + 2 * k].numpy(), np.pad(np.ones((2, 2), np.float32), k))

def test_cat_of_two_symbolic_sizes():
  """tinygrad's test_cat_dim0_two_vars: a[:i].cat(b[:j]) pads each part to i + j, whose simplified sizes came out as i+j and
  j+i (unequal UOps: TensorShapeError in broadcasting, and in a matmul over that axis); sizes equal for every value of
  the variables are one size."""
  a, b = rng.standard_normal((10, 3)).astype(np.float32), rng.standard_normal((10, 3)).astype(np.float32)
  ta, tb = Tensor(a).realize(), Tensor(b).realize()
  for i, j in ((2, 3), (5, 1)):
    vi, vj = UOp.variable("i", 1, 10).bind(i), UOp.variable("j", 1, 10).bind(j)
    r = ta[:vi].cat(tb[:vj], dim=0).realize()
    np.testing.assert_array_equal(r[:i + j].numpy(), np.concatenate([a[:i], b[:j]]))
    want = np.concatenate([a[:i], b[:j]]).T @ np.concatenate([b[:j], a[:i]])
    np.testing.assert_allclose((r.T @ tb[:vj].cat(ta[:vi])).numpy(), want, rtol=1e-5, atol=1e-6)

def test_attention_over_a_symbolic_number_of_keys():
  """A KV cache's decode step: one query over the first i keys (tinygrad's test_attention). Flash attention's kernels loop
  over int sizes and raised UndecidableError reshaping the keys; a symbolic shape takes the full score matrix path."""
  q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((2, 4, 1, 8), (2, 4, 10, 8), (2, 4, 10, 8)))
  tq, tk, tv = (Tensor(x).realize() for x in (q, k, v))
  for i in (3, 7):
    vi = UOp.variable("i", 1, 10).bind(i)
    got = Tensor.scaled_dot_product_attention(tq, tk[:, :, :vi], tv[:, :, :vi]).numpy()
    s = q @ k[:, :, :i].transpose(0, 1, 3, 2) / np.sqrt(8)
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(got, p / p.sum(-1, keepdims=True) @ v[:, :, :i], rtol=1e-5, atol=1e-6)
    causal = Tensor.scaled_dot_product_attention(tk[:, :, :vi], tk[:, :, :vi], tv[:, :, :vi], is_causal=True)  # (its mask: ones(i, i))
    want = Tensor.scaled_dot_product_attention(tk[:, :, :i], tk[:, :, :i], tv[:, :, :i], is_causal=True).numpy()
    np.testing.assert_allclose(causal[:, :, :i].numpy(), want, rtol=1e-5, atol=1e-6)

def test_split_of_a_symbolic_axis():
  """Pieces of a given size of an axis of symbolic size have a count that depends on the value (tinygrad raises too); they
  raised TypeError out of a UOp's indexing. Given sizes that add up to the axis for every value split it."""
  x = Tensor(np.arange(40, dtype=np.float32).reshape(10, 4)).realize()
  a = x[:UOp.variable("a", 1, 10).bind(4)]
  with pytest.raises(TensorValueError, match=r"^chunk\(2\) along dim 0 of size a=4: a symbolic axis"): a.chunk(2, dim=0)
  with pytest.raises(AssertionError, match="symbolic"): a.chunk(2, dim=0)  # tinygrad's class for it
  with pytest.raises(TensorValueError, match="symbolic"): a.split(2, dim=0)
  with pytest.raises(TensorValueError, match="symbolic"): x.split(UOp.variable("s", 1, 10).bind(4), dim=0)
  assert [c.shape for c in a.chunk(2, dim=1)] == [(a.shape[0], 2)] * 2
  vi, vj = UOp.variable("i", 1, 5).bind(3), UOp.variable("j", 1, 5).bind(2)
  p, q = x[:vi + vj].split([vi, vj])
  np.testing.assert_array_equal(p[:3].numpy(), np.arange(12).reshape(3, 4))
  np.testing.assert_array_equal(q[:2].numpy(), np.arange(12, 20).reshape(2, 4))

@pytest.mark.parametrize("device", DEVICES)
def test_creation_of_a_symbolic_shape(device):
  """Tensor.ones/zeros/full/empty of a shape with a bound variable (tinygrad's test_symbolic_ops creation tests; they raised
  'a shape is non-negative ints'): a constant of symbolic shape, and an empty tensor in a buffer with room for the
  variable's largest value, as a realized x[:, :v]. The same kernels run for every value."""
  for i, k in enumerate((3, 7)):
    Counters.reset()
    vb = UOp.variable("b", 1, 10).bind(k)
    assert Tensor.ones(10, vb, device=device).shape == (10, vb)
    assert Tensor.ones(10, vb, device=device).sum().item() == 10 * k
    np.testing.assert_array_equal(Tensor.ones(10, vb, device=device)[:, :2].numpy(), np.ones((10, 2), np.float32))
    assert Tensor.zeros(vb, 2, device=device).sum().item() == 0 and Tensor.full((2, vb), 2.5, device=device).sum().item() == 5 * k
    e = Tensor.empty(3, vb, device=device)
    assert e.shape == (3, vb)
    e.assign(Tensor.full((3, vb), 4.0, device=device)).realize()
    assert e.sum().item() == 12 * k
    np.testing.assert_array_equal(e[:, :1].numpy(), np.full((3, 1), 4.0, np.float32))
    if i: assert Counters.compiled == 0, f"b={k} reuses the kernels compiled for another value"
  with pytest.raises(TensorValueError, match="non-negative"): Tensor.ones(2, UOp.variable("b", 1, 10).bind(3) - 4)

def test_symbolic_shapes_print_as_expressions():
  """repr, kernel names and the error of reading the data show a symbolic dim as its expression, not the UOp's text."""
  i = UOp.variable("i", 1, 10)
  t = Tensor.ones(i, 3)
  assert repr(t) == "<Tensor (i, 3) dtypes.float32 on CPU>"
  assert [ei.ast.arg.name for ei in t.sum(1).schedule()] == ["r_i_3"]
  with pytest.raises(TensorValueError, match=r"symbolic shape \(i, 3\): shrink it to ints"): t.numpy()
  with pytest.raises(TensorValueError, match=r"symbolic shape"): Tensor.ones(i.bind(4), 2).numpy()

def test_shape_errors_print_symbolic_dims_as_expressions():
  """Shape errors name a symbolic dim by its expression, as repr does: a UOp's own text there is pages of graph."""
  i = UOp.variable("i", 1, 10)
  t = Tensor.ones(i, 3)
  with pytest.raises(TensorShapeError, match=r"^can't reshape \(i, 3\) \(\(i\*3\) elements\) to \(i, 4\)$"): t.reshape(i, 4)
  with pytest.raises(TensorShapeError, match=r"^can't expand \(i, 3\) to \(i, 5\)$"): t.expand(i, 5)
  with pytest.raises(TensorShapeError, match=r"shapes \(i, 3\) and \(4, 2\) don't match"): t @ Tensor.ones(4, 2)
  with pytest.raises(IndexError, match=r"^too many indices for a tensor of shape \(i, 3\): 3 indices$"): t[0, 0, 0]

def test_symbolic_shrink_fits_for_the_bound_value():
  """As tinygrad: a[3:5, i:i+2] with i in [1, 10] bound to a value that fits an 11-wide axis is that view, though at i=10
  it would not fit; bound to 10 it raises, naming the bounds as expressions."""
  a = Tensor.rand(7, 11)
  ref = a.numpy()
  for k in (1, 4, 9):
    i = UOp.variable("i", 1, 10).bind(k)
    np.testing.assert_array_equal(a.shrink(((3, 5), (i, i + 2))).numpy(), ref[3:5, k:k + 2])
    np.testing.assert_array_equal(a[3:5, i:i + 2].numpy(), ref[3:5, k:k + 2])
    np.testing.assert_array_equal(a[6:, i:i + 2].numpy(), ref[6:, k:k + 2])
  i = UOp.variable("i", 1, 10).bind(10)
  with pytest.raises(TensorValueError, match=r"^shrink \(\(3, 5\), \(i=10, \(i=10\+2\)\)\) is out of bounds of \(7, 11\)$"):
    a.shrink(((3, 5), (i, i + 2)))
  with pytest.raises(TensorValueError, match="out of bounds"): a[3:5, i:i + 2]

@pytest.mark.parametrize("view", ["t[:, :v]", "t[:v]", "t[v:v+1]", "t[1:, v:v+2]", "t.flatten()[:v]", "t.T[1:3, v:v+1]"])
def test_assign_through_a_symbolic_view_writes_the_buffer(view):
  """A write into a view with a bound variable in its bounds (a KV cache's cache[:, p:p+n].assign(x)) lands in the
  buffer the view is of, as a write through a static slice does; it went into a copy and was lost."""
  for k in (1, 2, 4):
    t, v = Tensor.arange(36).reshape(6, 6).float().contiguous().realize(), UOp.variable("v", 1, 4).bind(k)
    x = eval(view, {"t": t, "v": v})
    x.assign(x * 10 + 1).realize()
    ref = np.arange(36, dtype=np.float32).reshape(6, 6)
    y = eval(view.replace("v", str(k)).replace("flatten()", "reshape(-1)"), {"t": ref})  # (numpy's flatten is a copy)
    y[...] = y * 10 + 1
    np.testing.assert_array_equal(t.numpy(), ref, err_msg=f"{view} at v={k}")

@pytest.mark.parametrize("view", ["t[:v]", "t[1:v+1]", "t[:, v:v+1]", "t.T[v:v+1]"])
def test_a_symbolic_view_built_before_an_assign_sees_the_write(view):
  """A view with a bound variable in its bounds, built before an assign to its buffer, reads the assigned values, as a
  static view (t[:3]) does. The assign took it for a reader of the old values and copied them first."""
  t, v = Tensor.zeros(4, 6).contiguous().realize(), UOp.variable("v", 1, 3).bind(2)
  x = eval(view, {"t": t, "v": v})
  t.assign(Tensor.arange(24).reshape(4, 6).float()).realize()
  ref = np.arange(24, dtype=np.float32).reshape(4, 6)
  want = eval(view.replace("v", "2"), {"t": ref})
  np.testing.assert_array_equal(x.shrink(tuple((0, s) for s in want.shape)).numpy(), want)

def test_variables_of_int_dtypes_roll_and_indexing_from_the_end():
  """tinygrad's test_tensor_variable and test_symbolic_ops: Tensor of an int32 or int64 variable (it raised "CONST has no
  device"), an unbound variable's RuntimeError, roll of a symbolic axis (its shrink bounds were undecidable), and
  negative indices and slice bounds counted from a symbolic end."""
  from tg.uop import dtypes
  assert Tensor(UOp.variable("b", 0, 100, dtype=dtypes.int32).bind(7)).item() == 7
  big = Tensor(UOp.variable("c", 0, 2**40, dtype=dtypes.int64).bind(2**35 + 3))
  assert big.dtype == dtypes.int64 and big.item() == 2**35 + 3
  with pytest.raises(RuntimeError, match="unbound"): Tensor(UOp.variable("u", 1, 10)).item()
  wide = Tensor(UOp.variable("w", 0, 2**40).bind(2**35 + 3))  # an index variable past int32 is int64 (it wrapped to 3)
  assert wide.dtype == dtypes.int64 and wide.item() == 2**35 + 3
  assert (Tensor(UOp.variable("s", 1, 10).bind(3)) + Tensor([1], dtype=dtypes.int8)).dtype == dtypes.int8  # weak, as a number
  with pytest.raises(RuntimeError, match="put the Tensor first"): UOp.variable("a", 1, 10).bind(3) * Tensor.ones(3)  # (int() of it)
  base = np.arange(8)
  for k in (2, 5, 8):
    for shift in (-3, 3, 11, -2**63 + 1, 2**62):  # (i - s near -2^63 overflowed: roll by 1 for 3)
      got = Tensor(base).realize()[:n(k)].roll(shift, 0)[:k].numpy()  # (a symbolic shape shrunk back to an int to read it)
      np.testing.assert_array_equal(got, np.roll(base[:k], shift))
  a = rng.standard_normal((3, 10)).astype(np.float32)
  for k in (1, 4, 8):
    t = Tensor(a)[:, :n(k)]
    np.testing.assert_array_equal(t[:, -1].numpy(), a[:, :k][:, -1])
    tail = t[:, -3:]  # max(k - 3, 0) to k: as long as Python's
    np.testing.assert_array_equal(tail.shrink((None, (0, min(k, 3)))).numpy(), a[:, :k][:, -3:])

def test_one_variable_bound_to_two_values_in_one_graph():
  """A graph can hold a variable at one value: two raise the error both tinygrad (RuntimeError) and tg's other argument
  errors (ValueError) are caught as."""
  a = Tensor.arange(1000).reshape(100, 10).contiguous()
  vi = UOp.variable("i", 0, 99)
  for cls in (RuntimeError, ValueError):
    with pytest.raises(cls, match="bind mismatch.*'i'.*12 and 76"): a[vi.bind(12)].cat(a[vi.bind(76)]).tolist()
  np.testing.assert_array_equal(a[vi.bind(12)].cat(a[vi.bind(12)]).numpy(), np.tile(np.arange(120, 130), 2))

def test_a_symbolic_length_copies_to_another_device():
  """b[9:9+v].to("CPU:1") of a bound v: the scheduler asked bool() of the symbolic element count (UndecidableError).
  The copy moves the buffer's room for the largest v; the values are the bound length's, jitted too."""
  b = Tensor.arange(24).float().realize()
  moved = TinyJit(lambda v: b.shrink(((9, 9 + v),)).to("CPU:1").sum().realize())
  prefix = TinyJit(lambda v: b[:v].to("CPU:1").sum().realize())  # (b[:v] is b's own buffer, longer than the copy's)
  for n in (1, 3, 4, 2):
    v = UOp.variable("v", 1, 4).bind(n)
    assert b.shrink(((9, 9 + v),)).to("CPU:1").sum().item() == sum(range(9, 9 + n))
    assert b[:v].to("CPU:1").sum().item() == sum(range(n)) and prefix(v).item() == sum(range(n))
    assert b.to("CPU:1").shrink(((3, 3 + v),)).to("CPU").sum().item() == sum(range(3, 3 + n))
    assert moved(v).item() == sum(range(9, 9 + n))

def test_an_expression_of_variables_of_two_int_dtypes_is_a_value():
  """Tensor(a + b) of an int32 and an int64 bound variable (an ADD over a CAST): it was taken for an op on no device
  ("CONST has no device"). Its value, jitted too, for values past int32."""
  from tg.tensor import dtypes
  f = TinyJit(lambda a, b: (Tensor(a + b) * 2).realize())
  for x, y in ((1, 2**35), (7, 2**39 + 3), (1024, 5)):
    a, b = UOp.variable("a", 0, 2**10, dtype=dtypes.int32).bind(x), UOp.variable("b", 0, 2**40, dtype=dtypes.int64).bind(y)
    t = Tensor(a + b)
    assert t.dtype == dtypes.int64 and t.item() == x + y and f(a, b).item() == 2 * (x + y)

def test_a_bool_tensor_meets_a_python_int_past_int32_as_int64():
  """True < 2**40 is True: the bool tensor became int32 and the number wrapped (PyTorch and tinygrad: [True, True])."""
  t = Tensor([True, False])
  assert (t < 2**40).tolist() == [True, True] and (t ** 2**40).tolist() == [1, 0] and (t < 2**31).tolist() == [True, True]
  assert (t + 2**40).dtype.name == "int64" and (t + 2**40).tolist() == [2**40 + 1, 2**40] and (t + 3).tolist() == [4, 3]
