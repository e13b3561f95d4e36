"""Edge cases a tinygrad program hits: extreme inputs, integer limits, NaN, repeated indices, 0-d tensors, deep graphs.
Each case gave a wrong answer or crashed once; the references are numpy or values worked out by hand."""
import math
import numpy as np
import pytest
from tg.tensor import Tensor, Counters, dtypes, nn

def grad_of(fn, x, dtype=np.float32) -> np.ndarray:
  t = Tensor(np.array(x, dtype), requires_grad=True)
  fn(t).sum().backward()
  return t.grad.numpy()

def np_sigmoid(x): return np.exp(-np.logaddexp(0, -np.asarray(x, np.float64)))

# ***** a reduce that an output loop doesn't use (CPU ran it inside that loop, summing across outputs) *****

def test_matmul_grad_wrt_a_broadcast_operand():
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((1, 3, 3, 5)).astype(np.float32)
  ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  ta.matmul(tb).sum().backward()
  np.testing.assert_allclose(tb.grad.numpy(), np.broadcast_to(a.sum(0)[None, None, :, None], (1, 3, 3, 5)), rtol=1e-5)

def test_avg_pool_grad_with_a_tall_window():
  x = Tensor(np.random.default_rng(1).standard_normal((32, 2, 11, 28)).astype(np.float32), requires_grad=True)
  x.avg_pool2d(kernel_size=(5, 1)).sum().backward()
  want = np.zeros((32, 2, 11, 28), np.float32)
  want[:, :, :10] = 1 / 5  # two windows of 5 rows cover rows 0-9; row 10 is in none
  np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)

# ***** gradients at extremes: finite where the math is *****

@pytest.mark.parametrize("name", ["sigmoid", "tanh", "gelu", "quick_gelu", "softplus", "silu"])
def test_activation_gradients_are_finite_at_extremes(name):
  g = grad_of(lambda t: getattr(t, name)(), [-400.0, -90.0, 90.0, 400.0])
  assert np.isfinite(g).all(), g
  np.testing.assert_allclose(g[[0, 1]], 0, atol=1e-30)  # all of these flatten out to the left
  assert np.allclose(g[[2, 3]], 1.0 if name in ("gelu", "quick_gelu", "softplus", "silu") else 0.0)

def test_sigmoid_gradient_matches_its_formula():
  x = np.linspace(-30, 30, 61)
  s = np_sigmoid(x)
  np.testing.assert_allclose(grad_of(Tensor.sigmoid, x), s * (1 - s), rtol=1e-4, atol=1e-12)

def test_softplus_is_linear_far_right_and_stable():
  np.testing.assert_allclose(Tensor([350.0, 20.0, 0.0, -350.0]).softplus().numpy(), [350.0, np.logaddexp(0, 20.0), math.log(2), 0.0], rtol=1e-6)
  np.testing.assert_allclose(Tensor([3.0]).softplus(beta=2).numpy(), [np.logaddexp(0, 6.0) / 2], rtol=1e-6)
  np.testing.assert_allclose(grad_of(Tensor.softplus, [350.0, 0.0, -350.0]), [1.0, 0.5, 0.0], atol=1e-7)

def test_abs_gradient_at_zero_is_zero():
  np.testing.assert_array_equal(grad_of(Tensor.abs, [-2.0, 0.0, 3.0]), [-1.0, 0.0, 1.0])
  assert math.copysign(1, Tensor([-0.0]).abs().numpy()[0]) == 1.0
  assert np.isnan(Tensor([math.nan]).abs().numpy()[0])

def test_pow_gradients_at_zero():
  x, y = Tensor([0.0, 0.0, 0.0, 2.0], requires_grad=True), Tensor([0.0, 2.0, 1.0, 3.0], requires_grad=True)
  (x ** y).sum().backward()
  # d/dx x**y = y x**(y-1), d/dy = x**y ln x; at x=0: 0**0 gives 0 and 0 (PyTorch), y=1 gives dx=1
  np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0, 1.0, 12.0], rtol=1e-6)
  np.testing.assert_allclose(y.grad.numpy(), [0.0, 0.0, 0.0, 8 * math.log(2)], rtol=1e-6)
  np.testing.assert_allclose((Tensor([0.0, 0.0, 0.0, -2.0]) ** Tensor([0.0, 2.0, -1.0, 3.0])).numpy(), [1.0, 0.0, math.inf, -8.0])

SPECIAL = np.array([-math.inf, -3.0, -2.0, -1.0, -0.5, -0.3, -0.0, 0.0, 0.3, 0.5, 1.0, 2.0, 2.5, 3.0, math.inf, math.nan], np.float32)

def same_floats(got, want, rtol=1e-6):
  """Equal as IEEE values: NaN where NaN, the sign of zeros and infinities, finite values within rtol."""
  with np.errstate(invalid="ignore"):
    ok = (np.isnan(got) & np.isnan(want)) | ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.abs(got - want) <= rtol * np.abs(want))
  return ok.all()

def test_pow_special_values_are_c_pow():
  # numpy's power is C's pow: 1 ** nan = 1, (-1) ** inf = 1, (-2) ** inf = inf, 0 ** nan = nan, (-0.0) ** -1 = -inf,
  # (-inf) ** 0.3 = inf; each of these was wrong (nan, nan, -inf, inf, inf, nan)
  a, b = (np.array(v, np.float32) for v in zip(*[(x, y) for x in SPECIAL for y in SPECIAL]))
  with np.errstate(all="ignore"): want = np.power(a, b)
  assert same_floats((Tensor(a) ** Tensor(b)).numpy(), want)
  for c in (-1.0, 0.3, 2.5, 3.0):
    with np.errstate(all="ignore"): assert same_floats((Tensor(SPECIAL) ** c).numpy(), np.power(SPECIAL, np.float32(c)))

def test_pow_of_a_half_is_sqrt():
  # PyTorch and tinygrad both take x ** 0.5 as sqrt(x) (and ** -0.5 as 1 / sqrt(x)): (-inf) ** 0.5 is NaN, (-0.0) ** 0.5 -0.0
  with np.errstate(all="ignore"):
    assert same_floats((Tensor(SPECIAL) ** 0.5).numpy(), np.sqrt(SPECIAL))
    assert same_floats((Tensor(SPECIAL) ** -0.5).numpy(), 1 / np.sqrt(SPECIAL))

def test_pow_gradient_at_special_values():
  # d/dx x ** c = c x ** (c - 1): 0 at -inf for c = 0.3 (was NaN); (-0.0) ** -2 has slope +inf (was -inf)
  np.testing.assert_array_equal(grad_of(lambda t: t ** 0.3, [-math.inf, math.inf]), [0.0, 0.0])
  assert grad_of(lambda t: t ** -2, [-0.0])[0] == math.inf
  assert grad_of(lambda t: 1.0 ** t, [math.inf])[0] == 0.0

def test_integer_pow_of_negative_python_int_raises():
  with pytest.raises(RuntimeError, match="negative power"): Tensor([-2, 0, 2]) ** -2
  out = Tensor([-2, 0, 2]) ** 2.0  # a float power makes a float, as PyTorch and tinygrad
  assert out.dtype == dtypes.float32 and out.numpy().tolist() == [4.0, 0.0, 4.0]

def test_clip_gradient_is_one_at_the_bounds():
  # tinygrad's clip replaces only the values strictly outside: slope 1 at the bounds (it was 0.5, from maximum's tie split)
  np.testing.assert_array_equal(grad_of(lambda t: t.clip(-2.5, 1.5), [-3.0, -2.5, 0.0, 1.5, 2.0]), [0, 1, 1, 1, 0])
  assert np.isnan(Tensor([math.nan]).clip(0, 1).numpy()[0])

def test_copysign_keeps_the_promoted_dtype():
  """tinygrad's (PyTorch's copysign of ints is float): uint8 by uint32 is uint32, int by half is half; it was float32."""
  for a, b, want in ((dtypes.uint8, dtypes.uint32, dtypes.uint32), (dtypes.int8, dtypes.int32, dtypes.int32),
                     (dtypes.int32, dtypes.float16, dtypes.float16)):
    out = Tensor([2, 3], dtype=a).copysign(Tensor([-1, 1], dtype=b))
    assert out.dtype == want and out.tolist() == ([2, 3] if a == dtypes.uint8 else [-2, 3])

def test_copysign_gradient_at_zero_is_zero():
  # d/dx copysign(x, y) = sign(x) sign(y): 0 at x = 0 (PyTorch, tinygrad); it was -1 for y < 0
  x, y = Tensor([0.0, 0.0, 2.0, -2.0], requires_grad=True), Tensor([-1.0, 1.0, -1.0, -0.0])
  x.copysign(y).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, -1.0, 1.0])
  assert same_floats(Tensor([1.0, 1.0, -0.0]).copysign(Tensor([-0.0, 0.0, 1.0])).numpy(), np.copysign([1.0, 1.0, -0.0], [-0.0, 0.0, 1.0]))

def test_cumulative_ops_check_the_axis_of_a_0d_tensor():
  for op in (Tensor.cumsum, Tensor.cumprod, Tensor.cummax, Tensor.cummin):
    with pytest.raises(IndexError): op(Tensor(1.0), 1)
    out = op(Tensor(2.0), -1)
    assert (out[0] if isinstance(out, tuple) else out).item() == 2.0

def test_cumsum_carries_inf():
  np.testing.assert_array_equal(Tensor([3.0, math.inf, 1.0]).cumsum(0).numpy(), [3.0, math.inf, math.inf])

def test_embedding_nan_row_stays_in_its_row():
  e = nn.Embedding(3, 2)
  e.weight = Tensor(np.array([[1, 2], [np.nan, np.nan], [5, 6]], np.float32))
  np.testing.assert_array_equal(e(Tensor([[0, 2]])).numpy(), [[[1, 2], [5, 6]]])

# ***** integers *****

INT_MIN = np.iinfo(np.int32).min

def test_int_min_argmin_minimum_at_int_min():
  x = np.array([7, INT_MIN, 5, INT_MIN], np.int32)
  assert Tensor(x).min().item() == INT_MIN
  assert Tensor(x).argmin().item() == 1
  np.testing.assert_array_equal(Tensor(x).minimum(Tensor(np.zeros(4, np.int32))).numpy(), np.minimum(x, 0))
  np.testing.assert_array_equal(Tensor(x.reshape(2, 2)).min(1).numpy(), x.reshape(2, 2).min(1))

@pytest.mark.parametrize("dt,npdt", [(dtypes.int32, np.int32), (dtypes.int64, np.int64)])
def test_integer_pow_is_exact(dt, npdt):
  base = np.array([3, -3, 2, 7, 0, 1, -1], npdt)
  for e in (0, 1, 2, 13, 19):
    np.testing.assert_array_equal((Tensor(base, dtype=dt) ** e).numpy(), base ** e)
  exps = np.array([19, 19, 30, 5, 3, 40, 7], npdt)
  np.testing.assert_array_equal((Tensor(base, dtype=dt) ** Tensor(exps, dtype=dt)).numpy(), base ** exps)

def test_integer_pow_wraps_like_c():
  np.testing.assert_array_equal((Tensor([3], dtype=dtypes.int32) ** 21).numpy(), np.array([3], np.int32) ** 21)

NARROW_INTS = [(dtypes.int8, np.int8), (dtypes.uint8, np.uint8), (dtypes.int16, np.int16), (dtypes.uint16, np.uint16),
               (dtypes.int32, np.int32), (dtypes.uint32, np.uint32)]
WRAPPING_EXPRS = {"(x+c)<c": lambda x, c: (x + c) < c, "(x*2)//2": lambda x, c: (x * 2) // 2,
                  "(x+c)//3": lambda x, c: (x + c) // 3, "(x*3)%5": lambda x, c: (x * 3) % 5, "(x+1)<0": lambda x, c: (x + 1) < 0,
                  "(x+c)%4<2": lambda x, c: (x + c) % 4 < 2}

@pytest.mark.parametrize("dt,npdt", NARROW_INTS)
@pytest.mark.parametrize("name", list(WRAPPING_EXPRS))
def test_integer_arithmetic_wraps_before_it_compares_or_divides(dt, npdt, name):
  """+ and * of fixed-width ints wrap (numpy, PyTorch, tinygrad): the wrapped value is compared and divided, not the
  mathematical one (uint8 200 + 100 < 100 is True)."""
  info = np.iinfo(npdt)
  x = np.array([info.min, info.min + 1, -1 if info.min else 0, 0, 1, info.max // 2, info.max // 2 + 1, info.max - 1, info.max], npdt)
  c = int(info.max // 3 * 2)
  f = WRAPPING_EXPRS[name]
  with np.errstate(over="ignore"): want = f(x, npdt(c))
  np.testing.assert_array_equal(f(Tensor(x, dtype=dt), c).numpy(), want)

@pytest.mark.parametrize("x", [[1.0, math.nan, 3.0], [math.nan, 5.0, math.nan], [-1.0, 2.0, math.nan]])
def test_argmax_argmin_pick_the_first_nan(x):
  assert Tensor(x).argmax().item() == np.argmax(x)
  assert Tensor(x).argmin().item() == np.argmin(x)

# one-pass argmax keys (Tensor._order_key): zeros of either sign are one value, NaNs of either sign above +inf, the
# smallest negatives below -0, and every dtype whose values fit in an int32 key; the others take the two-pass way
ODD = [-0.0, 0.0, -1.0, np.float32(-1e-45), np.float32(1e-45), math.inf, -math.inf, math.nan, -math.nan, 3.0, -3.0]

@pytest.mark.parametrize("npdt", [np.float32, np.float16, np.float64])
def test_argmax_argmin_of_signed_zeros_infs_and_nans(npdt):
  rng = np.random.default_rng(0)
  for _ in range(40):
    x = np.array(rng.choice(np.array(ODD, np.float64), size=(3, 7)), npdt)
    if rng.random() < 0.5: x[np.isnan(x)] = 0.0  # half the cases without a NaN
    for ax in (None, 0, 1):
      np.testing.assert_array_equal(Tensor(x).argmax(ax).numpy(), np.argmax(x, ax), err_msg=f"{x} {ax}")
      np.testing.assert_array_equal(Tensor(x).argmin(ax).numpy(), np.argmin(x, ax), err_msg=f"{x} {ax}")
  assert Tensor(np.array([-0.0, 0.0], npdt)).argmax().item() == 0 and Tensor(np.array([0.0, -0.0], npdt)).argmin().item() == 0

@pytest.mark.parametrize("npdt", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.bool_])
def test_argmax_argmin_of_integers_with_ties(npdt):
  info = np.iinfo(npdt) if npdt is not np.bool_ else None
  x = np.random.default_rng(1).integers(0, 4, (6, 9)).astype(npdt)
  if info is not None: x[0, 3], x[1, 5], x[2, 0] = info.max, info.min, info.max
  for ax in (None, 0, 1):
    np.testing.assert_array_equal(Tensor(x).argmax(ax).numpy(), np.argmax(x, ax))
    np.testing.assert_array_equal(Tensor(x).argmin(ax).numpy(), np.argmin(x, ax))
  np.testing.assert_array_equal(Tensor(x).argmax(1, keepdim=True).numpy(), np.argmax(x, 1, keepdims=True))

def test_argmax_of_a_long_row_finds_the_first_of_its_ties():
  x = np.zeros(1 << 16, np.float32)
  x[[40000, 700, 65535]] = 2.5  # a tie across vector lanes and accumulators: the lowest index wins
  assert Tensor(x).argmax().item() == 700
  x[65535] = math.nan
  assert Tensor(x).argmax().item() == 65535

# ***** dtypes *****

def test_linspace_honours_dtype():
  t = Tensor.linspace(0, 10, 5, dtype=dtypes.int32)
  assert t.dtype == dtypes.int32
  np.testing.assert_array_equal(t.numpy(), np.linspace(0, 10, 5).astype(np.int32))

def test_int_max_pool_with_padding_stays_int():
  x = np.arange(-8, 8, dtype=np.int32).reshape(1, 1, 4, 4)
  out = Tensor(x).max_pool2d(2, padding=1)
  assert out.dtype == dtypes.int32
  xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=INT_MIN)
  np.testing.assert_array_equal(out.numpy(), xp.reshape(1, 1, 3, 2, 3, 2).max((3, 5)))

def test_uint8_bilinear_interpolate_stays_uint8_and_rounds():
  """Rounded half up after each axis, the last first, as PyTorch's uint8 kernel (its output here): the rows' middles
  127.5 -> 128 and 50.5 -> 51, then the middle row's (128 + 51) / 2 = 89.5 -> 90; rounding the exact result once gave
  89 and 50 (half to even)."""
  x = np.array([[0, 255], [100, 1]], np.uint8).reshape(1, 1, 2, 2)
  out = Tensor(x).interpolate((3, 3), mode="linear", align_corners=True)
  assert out.dtype == dtypes.uint8
  np.testing.assert_array_equal(out.numpy()[0, 0], [[0, 128, 255], [50, 90, 128], [100, 51, 1]])

def test_fp16_matmul_backward_accumulates_in_float32():
  rng = np.random.default_rng(2)
  a, b = rng.standard_normal((64, 1024)).astype(np.float16), rng.standard_normal((1024, 8)).astype(np.float16)
  ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  (ta @ tb).sum().backward()
  want = a.astype(np.float32).T @ np.ones((64, 8), np.float32)
  assert np.abs(tb.grad.numpy().astype(np.float32) - want).max() / np.abs(want).max() < 2e-3  # half's own rounding

# ***** semantics *****

def test_cross_entropy_with_probabilities_uses_dim_1():
  rng = np.random.default_rng(3)
  x, p = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.random((2, 3, 4)).astype(np.float32)
  logp = x - np.log(np.exp(x).sum(1, keepdims=True))
  np.testing.assert_allclose(Tensor(x).cross_entropy(Tensor(p)).numpy(), -(logp * p).sum(1).mean(), rtol=1e-5)
  y = np.array([[0, 2, 1, 1], [2, 2, 0, 1]])
  want = -np.take_along_axis(logp, y[:, None], 1).mean()
  np.testing.assert_allclose(Tensor(x).cross_entropy(Tensor(y)).numpy(), want, rtol=1e-5)

def test_cross_entropy_of_image_logits_keeps_h_and_w():
  """(N, C, H, W) logits, per pixel (reduction none): the classes moved last by a transpose(1, -1) swapped H and W, wrong
  losses when H == W and a TensorShapeError otherwise. Against numpy's log-softmax over dim 1."""
  rng = np.random.default_rng(4)
  x = rng.standard_normal((2, 3, 2, 4)).astype(np.float32)
  logp = x - np.log(np.exp(x).sum(1, keepdims=True))
  y, p = rng.integers(0, 3, (2, 2, 4)), rng.random((2, 3, 2, 4)).astype(np.float32)
  want = -np.take_along_axis(logp, y[:, None], 1)[:, 0]
  np.testing.assert_allclose(Tensor(x).cross_entropy(Tensor(y.astype(np.int32)), reduction="none").numpy(), want, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(Tensor(x).cross_entropy(Tensor(p), reduction="none").numpy(), -(logp * p).sum(1), rtol=1e-5, atol=1e-6)
  sq, ysq = x[..., :2], y[..., :2]  # H == W: no error, the wrong numbers
  np.testing.assert_allclose(Tensor(sq).cross_entropy(Tensor(ysq.astype(np.int32)), reduction="none").numpy(),
                             -np.take_along_axis(logp[..., :2], ysq[:, None], 1)[:, 0], rtol=1e-5, atol=1e-6)

def test_repeated_index_stores_one_value():
  t = Tensor.zeros(4).contiguous()
  t[Tensor([1, 1, 3])] = Tensor([5.0, 7.0, 2.0])
  np.testing.assert_array_equal(t.numpy(), [0, 7, 0, 2])  # the last write wins, as numpy
  out = Tensor.zeros(2, 3).scatter(0, Tensor([[1, 0, 1], [1, 1, 1]]), Tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
  np.testing.assert_array_equal(out.numpy(), [[0, 2, 0], [4, 5, 6]])

# ***** crashes *****

def test_zero_d_tensors():
  assert Tensor(3.0).sum(0).item() == 3.0 and Tensor(3.0).sum(-1).shape == ()
  assert Tensor(3.0).softmax().item() == 1.0 and Tensor(3.0).log_softmax().item() == 0.0
  assert Tensor(3.0).logsumexp().item() == 3.0 and Tensor(3.0).squeeze(-1).shape == ()
  with pytest.raises(IndexError): Tensor(3.0).sum(1)

@pytest.mark.parametrize("fn,ref", [
  (lambda t: t.tril(-4), lambda a: np.tril(a, -4)), (lambda t: t.triu(5), lambda a: np.triu(a, 5)),
  (lambda t: t.pad(((1, 1), (1, 1)))[0:1, :], lambda a: np.pad(a, 1)[0:1, :]),
  (lambda t: t.pad(((2, 2), (0, 0)))[:2], lambda a: np.pad(a, ((2, 2), (0, 0)))[:2])])
def test_kernels_whose_reads_all_fold_away(fn, ref):
  a = np.random.default_rng(4).standard_normal((4, 5)).astype(np.float32)
  np.testing.assert_array_equal(fn(Tensor(a)).numpy(), ref(a))

def test_stack_reshape_roll_forms():
  a, b = Tensor([1.0, 2.0]), Tensor([3.0, 4.0])
  np.testing.assert_array_equal(Tensor.stack((a, b, a)).numpy(), [[1, 2], [3, 4], [1, 2]])
  np.testing.assert_array_equal(Tensor.stack([a, b], dim=1).numpy(), [[1, 3], [2, 4]])
  assert Tensor.ones(2, 6).reshape(None, 3, 2).shape == (2, 3, 2)
  np.testing.assert_array_equal(Tensor.arange(4).roll((1,)).numpy(), np.roll(np.arange(4), 1))
  np.testing.assert_array_equal(Tensor.arange(6).reshape(2, 3).roll((1, -1), (0, 1)).numpy(), np.roll(np.arange(6).reshape(2, 3), (1, -1), (0, 1)))

def test_a_tensor_realized_twice_in_one_call():
  x = Tensor.ones(2) + 1
  Tensor.realize_all(x, x)
  np.testing.assert_array_equal(x.numpy(), [2, 2])

def test_reshapes_of_reshapes_of_a_buffer_are_that_buffer():
  x = np.arange(16, dtype=np.float32).reshape(4, 4)
  t = Tensor(x).realize()
  r = t.reshape(16).reshape(2, 8)  # RESHAPE(RESHAPE(RESHAPE(BUFFER))): contiguous() ran a copy kernel for it
  Counters.reset()
  c = r.contiguous()
  np.testing.assert_array_equal(c.numpy(), x.reshape(2, 8))
  np.testing.assert_array_equal(r.to("CPU:1").numpy(), x.reshape(2, 8))
  assert (Counters.kernels, Counters.copies) == (0, 1), "no kernel copies a view of a buffer, only the copy to CPU:1 runs"
  t.assign(t * 2).realize()
  np.testing.assert_array_equal(c.numpy(), 2 * x.reshape(2, 8), err_msg="c is t's buffer (as tinygrad: no copy)")

def test_ten_thousand_chained_ops_realize():
  x = Tensor.ones(4)
  for _ in range(10_000): x = x + 1
  np.testing.assert_array_equal(x.numpy(), [10_001] * 4)

# ***** long float sums run in stages *****

def test_long_float_sums_keep_their_precision():
  assert Tensor.ones(300_000_000).sum().item() == 300_000_000  # one stage stopped at 2^24 per accumulator (134217728)
  x = np.random.default_rng(5).random(20_000_003, dtype=np.float32)  # not a multiple of a stage
  want = x.astype(np.float64).sum()
  # 1e-6 when the 4883 stage sums were added in one chain; 1.2e-7 here, where float32's spacing is 1e-7 (12 seeds: 0.45 of
  # a spacing on average, at most 1.2; lanes folded in a chain instead of a tree: 0.73, at most 1.7)
  assert abs(Tensor(x).sum().item() - want) / want < 2e-7
  y = x[:20_000_000].reshape(4, 5_000_000)
  np.testing.assert_allclose(Tensor(y).mean(1).numpy(), y.astype(np.float64).mean(1), rtol=1e-5)
  np.testing.assert_allclose(Tensor(y).sum(1, keepdim=True).numpy(), y.astype(np.float64).sum(1, keepdims=True), rtol=1e-5)

def test_long_reduces_to_few_values_run_in_parallel_stages():
  """A max, min, any, sum or product of 100,003 elements to one value (or three): a kernel with a result per 4096-element
  stage (so a big one runs on every core), then one combining them; numpy's values, with NaN, -inf and a stage that is
  mostly padding. A float argmax is one such pass (the max of a key made of the value and the index)."""
  from tg.tensor.schedule import schedule
  from tg.codegen import Device
  from tg.codegen.pipeline import get_program
  from tg.codegen.devices.cpu import cpu_threads
  x = np.random.default_rng(1).standard_normal((3, 100_003)).astype(np.float32)
  x[1, 77_777], x[2] = np.nan, -np.inf
  t = Tensor(x)
  np.testing.assert_array_equal(t.max(1).numpy(), x.max(1))
  np.testing.assert_array_equal(t.min(1).numpy(), x.min(1))
  assert math.isnan(t.max().item())
  assert t[0].max().item() == x[0].max() and t[0].min().item() == x[0].min()
  assert t[2].max().item() == -math.inf and not (t[0] > 10).any().item() and (t[0] > 4).any().item() == (x[0] > 4).any()
  np.testing.assert_allclose(t[0].sum().item(), x[0].astype(np.float64).sum(), rtol=1e-6)
  p = np.random.default_rng(2).uniform(0.99, 1.01, (3, 100_003)).astype(np.float32)
  np.testing.assert_allclose(Tensor(p).prod(1).numpy(), p.astype(np.float64).prod(1), rtol=1e-4)
  i = np.random.default_rng(3).integers(-3, 4, 100_003).astype(np.int32) | 1  # odd factors: the product wraps, never 0
  assert Tensor(i).prod().item() == int(np.prod(i.astype(np.int64)).astype(np.int32)) and Tensor(i).prod().item() not in (0, 1, -1)
  # (big enough for threads: tg.codegen.renderer.cstyle threads_for)
  for op, want in ((Tensor.max, [cpu_threads(), 1]), (Tensor.prod, [cpu_threads(), 1]), (Tensor.argmax, [cpu_threads(), 1])):
    items, _ = schedule([op(Tensor.empty(1 << 20)).uop])
    assert [get_program(it.ast, Device["CPU"].renderer).global_size[0] for it in items] == want, op
  y = np.random.default_rng(4).standard_normal(1 << 17).astype(np.float32)
  assert Tensor(y).argmax().item() == np.argmax(y) and Tensor(-np.abs(y)).argmax().item() == np.argmax(-np.abs(y))

def test_repeated_constants_keep_their_sign_and_type():
  """A constant is built once and then reused (tg.tensor.graph), a schedule too (tg.tensor.schedule): -0.0 and 0.0 (the
  schedule cache took one for the other), NaN, 1 and 1.0 stay apart."""
  i = Tensor([1, 2])
  for _ in range(2):
    assert np.signbit(Tensor.full((2,), 0.0).numpy()).tolist() == [False, False]
    assert np.signbit(Tensor.full((2,), -0.0).numpy()).tolist() == [True, True]
    assert np.isnan((i + math.nan).numpy()).all()
    assert (i + 1).dtype == dtypes.int32 and (i + 1.0).dtype == dtypes.float32 and (i + 1.0).tolist() == [2.0, 3.0]

def test_indexing_past_2_to_the_31():
  """Views of more than 2^31 (here 6.4e9) elements, with no memory behind them (a broadcast, stride 0): element positions
  and the div/mod of a flattened index past 2^31 and 2^32 need 64-bit index arithmetic (int32 would wrap to other rows)."""
  n = 2 ** 31 + 5
  x = Tensor([1.0, 2.0, 3.0]).reshape(3, 1).expand(3, n)
  assert x[2, n - 2].item() == 3.0 and x[:, n - 4:].sum().item() == 24.0
  f = x.reshape(-1)
  assert (f[n - 1].item(), f[n].item(), f[3 * n - 1].item()) == (1.0, 2.0, 3.0)
  assert f[2 * n - 1:2 * n + 1].tolist() == [2.0, 3.0]
