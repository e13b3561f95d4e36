"""tg.tensor.mathops (inverse/hyperbolic trig, erf, log10, logaddexp, copysign, idiv, isclose) against numpy, with
gradients against finite differences."""
import math
import numpy as np
import pytest
from tg.tensor import Tensor, dtypes
from tensor_helpers import DEVICES, check, rand
from test_autograd import check_grad

UNIT = {"asin": np.arcsin, "acos": np.arccos, "atanh": np.arctanh}  # on (-1, 1)
ANY = {"atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "erf": np.vectorize(math.erf)}

@pytest.mark.parametrize("device", DEVICES)
def test_unary_values(device):
  wide = np.concatenate([rand(40, low=-6, high=6), [0.0, 0.41, 0.42, 2.41, 2.42, -2.42, 30.0, -1e4, np.inf, -np.inf]]).astype(np.float32)
  unit = np.concatenate([rand(40, low=-0.999, high=0.999), [0.0, 0.5, -0.5, 0.99999, -0.99999]]).astype(np.float32)
  for name, fn in ANY.items():
    x = wide if name in ("atan", "erf", "asinh") else np.clip(wide, -20, 20)
    check(getattr(Tensor, name), lambda a, fn=fn: fn(a.astype(np.float64)).astype(np.float32), x, device=device, atol=2e-6, rtol=2e-6)
  for name, fn in UNIT.items():
    check(getattr(Tensor, name), lambda a, fn=fn: fn(a.astype(np.float64)).astype(np.float32), unit, device=device, atol=3e-6, rtol=5e-5)
  big = rand(20, low=1.0, high=50.0)
  check(Tensor.acosh, np.arccosh, big, device=device, atol=1e-5, rtol=1e-5)
  check(Tensor.log10, np.log10, rand(20, low=1e-3, high=1e4), device=device)
  check(Tensor.asin, np.arcsin, np.array([1.0, -1.0], np.float32), device=device, atol=1e-6)  # the edges: x / 0 -> atan(inf)
  check(Tensor.atan, np.arctan, np.array([1, 2, -3], np.int32), device=device)  # ints compute in float

@pytest.mark.parametrize("name", ["atan", "asin", "acos", "atanh", "sinh", "cosh", "asinh", "erf", "log10", "acosh"])
def test_unary_grads(name):
  x = rand(7, low=-0.95, high=0.95, dtype=np.float64, seed=3)
  if name in ("atan", "sinh", "cosh", "asinh", "erf"): x = x * 3
  if name in ("log10", "acosh"): x = np.abs(x) + 1.1
  check_grad(getattr(Tensor, name), [x], elementwise=True)

@pytest.mark.parametrize("device", DEVICES)
def test_odd_functions_have_their_slope_at_zero(device):
  """atan, asin, asinh, erf (odd, computed from x >= 0) and elu: derivatives at 0 and around it, against their formulas
  (the gradient at exactly 0 was 0: that of sign(x), which put the sign back)."""
  x = np.array([0.0, -0.0, 0.5, -0.5, 2.0, -3.0], np.float32)
  slopes = {"atan": 1 / (1 + x * x), "asin": 1 / np.sqrt(1 - (x / 4) ** 2) / 4, "asinh": 1 / np.sqrt(x * x + 1),
            "erf": 2 / np.sqrt(np.pi) * np.exp(-x * x), "elu": np.where(x > 0, 1.0, 0.7 * np.exp(x))}
  fns = {"asin": lambda t: (t / 4).asin(), "elu": lambda t: t.elu(0.7)}
  for name, want in slopes.items():
    t = Tensor(x, device=device, requires_grad=True)
    fns.get(name, getattr(Tensor, name))(t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=2e-5, atol=1e-6, err_msg=name)
  np.testing.assert_array_equal(Tensor([np.nan, -np.inf], device=device).elu().numpy(), [np.nan, -1.0])
  t = Tensor([np.inf, -np.inf, 1e30], device=device, requires_grad=True)
  t.atan().sum().backward()  # 1 / (1 + x^2), as PyTorch: the untaken middle branch's inf/inf made it nan
  np.testing.assert_array_equal(t.grad.numpy(), [0, 0, 0])

@pytest.mark.parametrize("device", DEVICES)
def test_erf_is_relatively_accurate_near_zero(device):
  """math.erf as the reference, in relative error over magnitudes 1e-30..6 and both signs (erf(1e-8) was 0)."""
  mag = np.geomspace(1e-30, 6, 200)
  x = np.concatenate([mag, -mag, [0.5, 0.9999, 1.0, 1.0001]]).astype(np.float32)
  want = np.array([math.erf(float(v)) for v in x])
  np.testing.assert_allclose(Tensor(x, device=device).erf().numpy(), want, rtol=5e-7, atol=0)
  assert np.signbit(Tensor([-0.0], device=device).erf().numpy()[0])
  np.testing.assert_array_equal(Tensor([np.nan, np.inf, -np.inf, 30.0], device=device).erf().numpy(), [np.nan, 1, -1, 1])
  t = Tensor([np.inf, -np.inf, 30.0, 0.9999, 1.0], device=device, requires_grad=True)
  t.erf().sum().backward()  # each branch finite where it isn't taken: erf'(inf) was nan
  np.testing.assert_allclose(t.grad.numpy(), 2 / np.sqrt(np.pi) * np.exp(-np.array([np.inf, np.inf, 900, 0.9999 ** 2, 1.0])), rtol=2e-5, atol=0)

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,ref,top", [("tanh", np.tanh, 20), ("sinh", np.sinh, 20), ("expm1", np.expm1, 20), ("log1p", np.log1p, 0.99),
                                          ("asinh", np.arcsinh, 1e30), ("atanh", np.arctanh, 0.99),
                                          ("mish", lambda v: v * np.tanh(np.log1p(np.exp(v))), 20)])
def test_tiny_values_keep_their_digits(device, name, ref, top):
  """Relative error against numpy in float64 over magnitudes 1e-30..top, both signs: exp(x) - exp(-x), 2 sigmoid(2x) - 1,
  log(x + sqrt(x^2 + 1)) and log((1 + x) / (1 - x)) cancelled for a tiny x (tanh(4.6e-8) was 1.2e-7, sinh(1e-12) 0)."""
  mag = np.geomspace(1e-30, top, 300)
  x = np.concatenate([mag, -mag]).astype(np.float32)
  np.testing.assert_allclose(getattr(Tensor(x, device=device), name)().numpy(), ref(x.astype(np.float64)), rtol=3e-6, atol=0)
  t = Tensor([np.inf, -np.inf, 0.0], device=device, requires_grad=True)
  if name == "tanh":
    t.tanh().sum().backward()  # each branch finite where it isn't taken
    np.testing.assert_array_equal(t.grad.numpy(), [0, 0, 1])

@pytest.mark.parametrize("device", DEVICES)
def test_odd_functions_keep_the_sign_of_zero(device):
  """f(-0.0) is -0.0 for the odd functions, as numpy and PyTorch (an added 0.0 turned it into +0.0)."""
  for name in ("atan", "asin", "asinh", "atanh", "erf", "tanh", "sinh", "expm1", "log1p", "elu", "sin"):
    got = getattr(Tensor([-0.0, 0.0], device=device), name)().numpy()
    assert np.signbit(got).tolist() == [True, False] and (got == 0).all(), name

@pytest.mark.parametrize("device", DEVICES)
def test_acosh_near_one_and_far(device):
  """Relative error against numpy in float64 from 1 + 1.2e-7 to 1e30 (x^2 - 1 lost the digits near 1 and overflowed
  from 2e19), NaN below 1."""
  x = np.concatenate([1 + np.geomspace(1.2e-7, 1, 50), np.geomspace(2, 1e30, 50)]).astype(np.float32)
  np.testing.assert_allclose(Tensor(x, device=device).acosh().numpy(), np.arccosh(x.astype(np.float64)), rtol=1e-6, atol=0)
  np.testing.assert_array_equal(Tensor([1.0, 0.5, np.inf], device=device).acosh().numpy(), [0.0, np.nan, np.inf])

def test_logaddexp_copysign():
  a, b = rand(3, 4), rand(4, seed=1) * 30
  check(Tensor.logaddexp, np.logaddexp, a, b)
  check(Tensor.logaddexp, np.logaddexp, np.array([-np.inf, 1e30, 800.0, -np.inf], np.float32), np.array([-np.inf, 0, 800.0, 3.0], np.float32))
  check_grad(Tensor.logaddexp, [a.astype(np.float64), b.astype(np.float64)], elementwise=True)
  signs = np.array([1.0, -2.0, 0.0, -0.0, np.inf, -np.inf, 3.0, -3.0], np.float32)
  mags = np.array([-1.5, 2.0, -3.0, 4.0, -5.0, 6.0, 0.0, -0.0], np.float32)
  got = Tensor(mags).copysign(Tensor(signs)).numpy()
  np.testing.assert_array_equal(got, np.copysign(mags, signs))
  np.testing.assert_array_equal(np.signbit(got), np.signbit(np.copysign(mags, signs)))  # -0.0 takes the sign bit
  check(lambda x: x.copysign(-1), lambda x: np.copysign(x, -1).astype(np.float32), np.array([1, -2, 3], np.int32))
  check_grad(lambda x, y: x.copysign(y), [rand(5, dtype=np.float64, seed=4) + 0.1, rand(5, dtype=np.float64, seed=5)])

def test_idiv_rounds_toward_zero():
  a, b = np.array([7, -7, 7, -7, 0, 9], np.int32), np.array([2, 2, -2, -2, 3, 3], np.int32)
  check(Tensor.idiv, lambda x, y: (np.trunc(x / y)).astype(np.int32), a, b)
  assert Tensor([-7]).idiv(2).item() == -3 and (Tensor([-7]) // 2).item() == -4
  with pytest.raises(TypeError, match="idiv needs an integer tensor"): Tensor([1.5]).idiv(2)

def test_isclose_allclose():
  a = np.array([1.0, 1.0, np.inf, -np.inf, np.nan, 1e-9, 100.0, np.inf], np.float32)
  b = np.array([1.0 + 1e-6, 1.1, np.inf, np.inf, np.nan, 0.0, 100.001, 1e38], np.float32)
  for kw in ({}, {"equal_nan": True}, {"rtol": 0.2}, {"atol": 0.5, "rtol": 0.0}):
    check(lambda x, y, kw=kw: x.isclose(y, **kw), lambda x, y, kw=kw: np.isclose(x, y, **kw), a, b)
    assert Tensor(a).allclose(Tensor(b), **kw).item() == np.allclose(a, b, **kw)
  close = Tensor([1.0, 2.0]).allclose(Tensor([1.0, 2.0 + 1e-7]))  # a tensor, as tinygrad's (PyTorch's is a bool)
  assert close.shape == () and close.dtype == dtypes.bool and close.item() is True
  assert Tensor([1, 2]).isclose(2).tolist() == [False, True]

def test_short_std_mean_var_mean():
  assert Tensor([1.7, -300000.0]).short().dtype == dtypes.int16
  np.testing.assert_array_equal(Tensor([70000, -3]).short().numpy(), np.array([70000, -3]).astype(np.int16))
  a = rand(3, 5)
  for fn, npf in ((Tensor.std_mean, np.std), (Tensor.var_mean, np.var)):
    s, m = fn(Tensor(a), 1, keepdim=True, correction=0)
    np.testing.assert_allclose(s.numpy(), npf(a, 1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(m.numpy(), a.mean(1, keepdims=True), rtol=1e-5, atol=1e-6)
  s, m = Tensor(a).std_mean()
  np.testing.assert_allclose([s.item(), m.item()], [np.std(a, ddof=1), a.mean()], rtol=1e-5, atol=1e-6)

def test_ordering_comparisons_with_nan_are_false():
  a, b = np.array([np.nan, 1.0, np.nan, 2.0], np.float32), np.array([np.nan, np.nan, 1.0, 2.0], np.float32)
  check(lambda x, y: x <= y, np.less_equal, a, b)
  check(lambda x, y: x >= y, np.greater_equal, a, b)

NARROW_FNS = {"exp": np.exp, "log": np.log, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "sinh": np.sinh, "atan": np.arctan,
              "rsqrt": lambda v: 1 / np.sqrt(v), "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "log1p": np.log1p, "erf": np.vectorize(math.erf)}

@pytest.mark.parametrize("name", NARROW_FNS)
def test_half_math_is_rounded_once(name):
  # computed in float32 and rounded to half once, as PyTorch: each step rounded to half was off by up to 8 ulps (exp(10))
  x = np.random.default_rng(4).uniform(0.05, 9.0, 400).astype(np.float16)
  with np.errstate(all="ignore"): want = NARROW_FNS[name](x.astype(np.float64)).astype(np.float16)
  got = getattr(Tensor(x), name)()
  assert got.dtype == dtypes.half
  ulps = np.abs(got.numpy().astype(np.float64) - want) / np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
  assert ulps.max() <= 1, f"{name}: {ulps.max()} ulps at {x[ulps.argmax()]}"

def test_narrow_float_math_examples():
  # the nearest representable values, worked out by hand: e5m2 22026 -> 20480 (next 24576), e4m3 -0.839 -> -0.8125 (-0.875),
  # bfloat16 22026 -> 22016 (spacing 128)
  assert Tensor([10.0], dtype=dtypes.fp8e5m2).exp().item() == 20480.0
  assert Tensor([10.0], dtype=dtypes.fp8e4m3).cos().item() == -0.8125
  assert Tensor([10.0], dtype=dtypes.bfloat16).exp().item() == 22016.0
  # fnuz: e5m2fnuz has e5m2's spacing there, e4m3fnuz saturates exp(10) to its largest value 240 and has cos(10) as e4m3
  assert Tensor([10.0], dtype=dtypes.fp8e5m2fnuz).exp().item() == 20480.0 and Tensor([10.0], dtype=dtypes.fp8e4m3fnuz).exp().item() == 240.0
  assert Tensor([10.0], dtype=dtypes.fp8e4m3fnuz).cos().item() == -0.8125

@pytest.mark.parametrize("form", ["t**3.3", "t**-2.5", "t**3", "t**t", "2.5**t"])
def test_half_pow_is_rounded_once(form):
  # pow of half raised in float32 and rounded once (PyTorch's): b * log2|a| in half was 11 ulps off for t ** 3.3
  rng = np.random.default_rng(5)
  a, b = rng.uniform(0.1, 8, 400).astype(np.float16), rng.uniform(-3, 3, 400).astype(np.float16)
  f = {"t**3.3": lambda t, u: t ** 3.3, "t**-2.5": lambda t, u: t ** -2.5, "t**3": lambda t, u: t ** 3,
       "t**t": lambda t, u: t ** u, "2.5**t": lambda t, u: 2.5 ** u}[form]
  got = f(Tensor(a), Tensor(b))
  assert got.dtype == dtypes.half
  want = f(a.astype(np.float64), b.astype(np.float64))
  ulps = np.abs(got.numpy().astype(np.float64) - want) / np.spacing(want.astype(np.float16)).astype(np.float64)
  assert ulps.max() <= 1, f"{form}: {ulps.max()} ulps"

def test_bfloat16_pow_example():
  # 3 ** 3.3 = 37.54..., by hand: bfloat16 near 37.5 has spacing 0.25, so 37.5 (the float32-chain gave 38.0)
  assert Tensor([3.0], dtype=dtypes.bfloat16).pow(3.3).item() == 37.5

@pytest.mark.parametrize("device", DEVICES)
def test_fmod_takes_the_sign_of_the_dividend(device):
  """fmod against numpy's (C's) where a - trunc(a / b) * b is exact, ints and floats, scalar and tensor divisors."""
  a = np.array([-7.5, 7.5, -7.0, 7.0, 5.25, -0.5, 100.0], np.float32)
  b = np.array([2.0, -2.0, -3.0, 3.0, 0.5, 3.0, 7.0], np.float32)
  np.testing.assert_allclose(Tensor(a, device=device).fmod(Tensor(b, device=device)).numpy(), np.fmod(a, b))
  np.testing.assert_allclose(Tensor(a, device=device).fmod(2.5).numpy(), np.fmod(a, np.float32(2.5)))
  ai, bi = np.array([-7, 7, -7, 7, -8, 2**31 - 1], np.int32), np.array([2, -2, -2, 2, 3, -5], np.int32)
  got = Tensor(ai, device=device).fmod(Tensor(bi, device=device))
  assert got.dtype == dtypes.int32 and got.tolist() == np.fmod(ai, bi).tolist()
  assert Tensor(ai, device=device).fmod(3).tolist() == np.fmod(ai, 3).tolist()
  check_grad(lambda x, y: x.fmod(y), [np.array([-7.3, 7.3, 5.1]), np.array([2.0, -3.0, 1.9])])

def test_integer_logsumexp_and_softmax_run_in_float():
  """logsumexp, softmax and log_softmax of integers work in float32 (PyTorch's logsumexp): x - max in int8 wrapped
  around (-88 - 71 became 97) and logsumexp gave inf, or 168.9 for 91 (found by a torch dtype fuzz)."""
  x = np.array([[5, 71, 26, -88], [-120, -7, -66, -1]], np.int8)
  f = x.astype(np.float64)
  m = f.max(1, keepdims=True)
  lse = np.log(np.exp(f - m).sum(1, keepdims=True)) + m
  got = Tensor(x).logsumexp(1)
  assert got.dtype == dtypes.float32
  np.testing.assert_allclose(got.numpy(), lse[:, 0], rtol=1e-6)
  np.testing.assert_allclose(Tensor(x).softmax(1).numpy(), np.exp(f - lse), rtol=1e-5, atol=1e-30)
  np.testing.assert_allclose(Tensor(x).log_softmax(1).numpy(), f - lse, rtol=1e-6, atol=1e-6)

@pytest.mark.parametrize("device", DEVICES)
def test_half_remainders_and_floor_division_round_once(device):
  """%, // and fmod of half values compute in float32 and round once, as PyTorch: the quotient rounded to half first
  made -75 % 1.5 give 0.4375, not 0.4531, and 4.5 // 1.5 can land on the wrong integer."""
  a = np.array([-75, -20, 82, 90, 100, 4.5, -6.395], np.float16)
  b = np.array([1.5, 0.37, 2.1, -3.3, 7.7, 1.5, 0.31], np.float16)
  x, y = Tensor(a, device=device), Tensor(b, device=device)
  a32, b32 = a.astype(np.float32), b.astype(np.float32)
  np.testing.assert_array_equal((x % y).numpy(), np.mod(a32, b32).astype(np.float16))
  np.testing.assert_array_equal((x // y).numpy(), np.floor_divide(a32, b32).astype(np.float16))
  np.testing.assert_array_equal(x.fmod(y).numpy(), np.fmod(a32, b32).astype(np.float16))

def test_a_bool_tensor_to_a_power():
  """tinygrad's: a bool power is logical (x ** True is x, x ** False True), an int power makes the number's int, a
  negative one raises as for any integer tensor. `** True` raised ("shift needs an integer tensor") and ** -2 gave [1, 0]."""
  t = Tensor([True, False])
  assert (t ** True).tolist() == [True, False] and (t ** False).tolist() == [True, True] and (t ** t).tolist() == [True, True]
  assert (t ** True).dtype == dtypes.bool and (t ** 2).dtype == dtypes.int32 and (t ** 2).tolist() == [1, 0] and (t ** 0).tolist() == [1, 1]
  with pytest.raises(TypeError, match="negative power"): t ** -2
