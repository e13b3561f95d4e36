"""Elementwise ops, activations and dtype promotion against numpy, on CPU and PYTHON, incl. broadcasting and zero-size."""
import math
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.tensor import Tensor, dtypes
from tensor_helpers import DEVICES, check, rand
from floatconv_ref import decode, encode, f32_inputs

SHAPES = [((3, 4), (3, 4)), ((2, 1, 3), (4, 1)), ((), (5,)), ((0, 3), (1, 3))]
BINARY = {
  "add": (lambda a, b: a + b, np.add), "sub": (lambda a, b: a - b, np.subtract), "mul": (lambda a, b: a * b, np.multiply),
  "div": (lambda a, b: a / b, np.divide), "maximum": (Tensor.maximum, np.maximum), "minimum": (Tensor.minimum, np.minimum),
  "lt": (lambda a, b: a < b, np.less), "ge": (lambda a, b: a >= b, np.greater_equal), "eq": (lambda a, b: a == b, np.equal),
  "ne": (lambda a, b: a != b, np.not_equal),
}

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_binary_broadcast(device, name, shapes):
  ft, fn = BINARY[name]
  a, b = rand(*shapes[0], seed=1), rand(*shapes[1], seed=2)
  check(ft, fn, a, b, device=device)

@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.int64])
def test_int_arith_matches_numpy(dtype):
  info = np.iinfo(dtype)
  a = np.random.default_rng(0).integers(max(info.min, -100), min(info.max, 100), (4, 5)).astype(dtype)
  b = np.random.default_rng(1).integers(1, min(info.max, 9), (4, 5)).astype(dtype)
  for ft, fn in [(lambda x, y: x + y, np.add), (lambda x, y: x * y, np.multiply), (lambda x, y: x // y, np.floor_divide),
                 (lambda x, y: x % y, np.mod), (lambda x, y: x & y, np.bitwise_and), (lambda x, y: x | y, np.bitwise_or),
                 (lambda x, y: x ^ y, np.bitwise_xor)]:
    check(ft, fn, a, b)
  check(lambda x: ~x, np.invert, a)
  if info.min == 0 or dtype == np.int32: check(lambda x: x >> 2, lambda x: x >> 2, a)
  check(lambda x: x << 1, lambda x: (x << 1).astype(dtype), a)
  shifts = np.random.default_rng(2).integers(0, 8 * a.itemsize - 1, a.shape).astype(dtype)  # by a tensor: it raised TypeError
  check(lambda x, s: x >> s, np.right_shift, a, shifts)

def test_floordiv_mod_negative_like_python():
  a, b = np.array([7, -7, 7, -7, 0], np.int32), np.array([2, 2, -2, -2, 3], np.int32)
  check(lambda x, y: x // y, np.floor_divide, a, b)
  check(lambda x, y: x % y, np.mod, a, b)
  check(lambda x, y: x // y, np.floor_divide, a.astype(np.float32), b.astype(np.float32))
  check(lambda x, y: x % y, np.mod, a.astype(np.float32), b.astype(np.float32))

UNARY = {
  "neg": (Tensor.neg, np.negative, None), "abs": (Tensor.abs, np.abs, None), "sign": (Tensor.sign, np.sign, None),
  "exp": (Tensor.exp, np.exp, None), "exp2": (Tensor.exp2, np.exp2, None), "log": (Tensor.log, np.log, (0.01, 5)),
  "log2": (Tensor.log2, np.log2, (0.01, 5)), "sqrt": (Tensor.sqrt, np.sqrt, (0, 5)), "rsqrt": (Tensor.rsqrt, lambda x: 1 / np.sqrt(x), (0.1, 5)),
  "sin": (Tensor.sin, np.sin, None), "cos": (Tensor.cos, np.cos, None), "tan": (Tensor.tan, np.tan, (-1.2, 1.2)),
  "reciprocal": (Tensor.reciprocal, np.reciprocal, (0.5, 3)), "floor": (Tensor.floor, np.floor, None), "ceil": (Tensor.ceil, np.ceil, None),
  "trunc": (Tensor.trunc, np.trunc, None), "square": (Tensor.square, np.square, None),
  "relu": (Tensor.relu, lambda x: np.maximum(x, 0), None), "relu6": (Tensor.relu6, lambda x: np.clip(x, 0, 6), (-3, 9)),
  "leaky_relu": (Tensor.leaky_relu, lambda x: np.where(x > 0, x, 0.01 * x), None),
  "elu": (Tensor.elu, lambda x: np.where(x > 0, x, np.exp(x) - 1), None),
  "selu": (Tensor.selu, lambda x: 1.0507 * np.where(x >= 0, x, 1.67326 * (np.exp(x) - 1)), None),
  "sigmoid": (Tensor.sigmoid, lambda x: 1 / (1 + np.exp(-x)), None),
  "hardsigmoid": (Tensor.hardsigmoid, lambda x: np.clip(x / 6 + 0.5, 0, 1), (-5, 5)),
  "tanh": (Tensor.tanh, np.tanh, None), "hardtanh": (Tensor.hardtanh, lambda x: np.clip(x, -1, 1), None),
  "gelu": (Tensor.gelu, lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))), None),
  "quick_gelu": (Tensor.quick_gelu, lambda x: x / (1 + np.exp(-1.702 * x)), None),
  "silu": (Tensor.silu, lambda x: x / (1 + np.exp(-x)), None), "softplus": (Tensor.softplus, lambda x: np.log1p(np.exp(x)), None),
  "mish": (Tensor.mish, lambda x: x * np.tanh(np.log1p(np.exp(x))), None), "softsign": (Tensor.softsign, lambda x: x / (1 + np.abs(x)), None),
}

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary(device, name):
  ft, fn, rng = UNARY[name]
  lo, hi = rng or (-3, 3)
  check(ft, fn, rand(3, 5, low=lo, high=hi), device=device, atol=1e-5, rtol=2e-5)
  check(ft, fn, rand(0, 2), device=device)

@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_unary_other_float_dtypes(dtype):
  tol = 2e-3 if dtype == np.float16 else 1e-12
  for name in ["exp", "log", "sqrt", "sin", "sigmoid", "tanh"]:
    ft, fn, rng = UNARY[name]
    a = rand(7, low=(rng or (-2, 2))[0] + 0.01, high=(rng or (-2, 2))[1], dtype=dtype)
    out = ft(Tensor(a, dtype=dtypes.float16 if dtype == np.float16 else dtypes.float64))
    assert out.numpy().dtype == dtype
    np.testing.assert_allclose(out.numpy(), fn(a.astype(np.float64)).astype(dtype), rtol=tol, atol=tol)

def test_round_half_to_even_and_special_values():
  a = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6, 3.7], np.float32)
  check(Tensor.round, np.round, a)
  s = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0], np.float32)
  check(Tensor.isnan, np.isnan, s)
  check(Tensor.isinf, np.isinf, s)
  check(lambda x: x.isinf(detect_negative=False), np.isposinf, s)

def test_pow_clip_where_lerp():
  a, b = rand(3, 4, low=0.1, high=3), rand(3, 4, low=-2, high=2, seed=3)
  check(lambda x, y: x ** y, np.power, a, b)
  check(lambda x: x ** 3, lambda x: x ** 3, b)
  check(lambda x: (-x) ** 2.0, lambda x: (-x) ** 2.0, a)
  check(lambda x: 2 ** x, lambda x: 2 ** x, b)
  check(lambda x: x ** 0.5, np.sqrt, a)
  check(lambda x: x.clip(-1, 0.5), lambda x: np.clip(x, -1, 0.5), b)
  check(lambda x, y: (x > 1).where(x, y), lambda x, y: np.where(x > 1, x, y), a, b)
  check(lambda x: (x > 0).where(x, 7), lambda x: np.where(x > 0, x, 7), b)
  check(lambda x, y: x.lerp(y, 0.25), lambda x, y: x + (y - x) * 0.25, a, b)
  np.testing.assert_array_equal(Tensor([-8.0, 8.0]).pow(1 / 3).isnan().numpy(), [True, False])  # negative base, fractional power

@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["uint8", "int8", "int16", "int32"]), st.integers(-2**33, 2**33), st.integers(-2**33, 2**33), st.integers(0, 2**32 - 1))
def test_clip_of_ints_saturates_bounds_out_of_range(dt, lo, hi, seed):
  """An int bound the dtype can't hold acts as the dtype's end (PyTorch's clamp): cast to the dtype it would wrap."""
  info = np.iinfo(dt)
  x = np.random.default_rng(seed).integers(info.min, info.max, 12, endpoint=True).astype(dt)
  want = np.clip(np.minimum(np.maximum(x.astype(np.int64), lo), hi), info.min, info.max).astype(dt)
  np.testing.assert_array_equal(Tensor(x).clip(lo, hi).numpy(), want)
  np.testing.assert_array_equal(Tensor(x).clip(lo).numpy(), np.clip(np.maximum(x.astype(np.int64), lo), info.min, info.max).astype(dt))

def test_logical_ops():
  a, b = np.array([True, False, True, False]), np.array([True, True, False, False])
  check(Tensor.logical_and, np.logical_and, a, b)
  check(Tensor.logical_or, np.logical_or, a, b)
  check(Tensor.logical_xor, np.logical_xor, a, b)
  check(Tensor.logical_not, np.logical_not, a)
  check(lambda x, y: x & y, np.bitwise_and, a, b)

@pytest.mark.parametrize("a,b,want", [
  (dtypes.int8, dtypes.uint8, dtypes.int16), (dtypes.int32, dtypes.float16, dtypes.float16), (dtypes.bool, dtypes.int32, dtypes.int32),
  (dtypes.float16, dtypes.float32, dtypes.float32), (dtypes.uint32, dtypes.int32, dtypes.int64), (dtypes.float32, dtypes.float64, dtypes.float64)])
def test_promotion_between_tensors(a, b, want):
  assert (Tensor.ones(2, dtype=a) + Tensor.ones(2, dtype=b)).dtype == want

def test_a_signed_int_and_uint64_meet_in_the_default_float():
  """tinygrad's weakfloat, stored as float32 (PyTorch refuses uint64 arithmetic): the lattice's smallest float was fp8e4m3,
  so int64 1000 + uint64 3 was 448."""
  for dt in (dtypes.int8, dtypes.int64):
    out = Tensor([100, -1], dtype=dt) + Tensor([3, 3], dtype=dtypes.uint64)
    assert out.dtype == dtypes.float32 and out.tolist() == [103.0, 2.0]

def test_a_tensor_of_a_python_number_meets_tensors_as_the_number():
  """As PyTorch's 0-d tensors and tinygrad's weak dtypes: Tensor(3) + int8 is int8 (it was int32), Tensor(2.0) + half and
  Tensor(2).exp() + half are half, Tensor(1).minimum(uint8) is uint8; a float number still makes an int tensor float,
  and two such tensors, or one with a tensor of data, keep the lattice (a sum's 0-d result is no number)."""
  i8, f16, u8 = Tensor([5, -7], dtype=dtypes.int8), Tensor([1.5, 2.0], dtype=dtypes.float16), Tensor([2, 9], dtype=dtypes.uint8)
  for got, dt, want in ((Tensor(3) + i8, dtypes.int8, [8, -4]), (i8 * Tensor(2), dtypes.int8, [10, -14]),
                        (Tensor(2.0) + f16, dtypes.float16, [3.5, 4.0]), (Tensor(1).minimum(u8), dtypes.uint8, [1, 1]),
                        (Tensor(2.5) + i8, dtypes.float32, [7.5, -4.5]), (Tensor(True) + i8, dtypes.int8, [6, -6]),
                        (Tensor(3) + Tensor(4), dtypes.int32, 7), (Tensor([1, 2]).sum() + i8, dtypes.int32, [8, -4]),
                        (Tensor([True, False]).where(Tensor(1), 2).dot(Tensor([1, 1], dtype=dtypes.int8)), dtypes.int8, 3)):
    assert got.dtype == dt and got.tolist() == want, (got.dtype, got.tolist())
  # tinygrad's weak results: a tensor whose dtype came from a number (int8 + 0.5, bool + 1) meets the next as a number
  # (PyTorch computes these in float32 and int64); a tensor of data with a number keeps its own dtype and is no number
  for got, dt in ((i8 + 0.5 + f16, dtypes.float16), (Tensor([True]) + 1 + i8, dtypes.int8), (i8 + 0.5, dtypes.float32),
                  (i8 * 2 + Tensor([1], dtype=dtypes.int16), dtypes.int16), (Tensor.zeros(2) + f16, dtypes.float32)):
    assert got.dtype == dt, (got.dtype, dt)
  t = Tensor.zeros(2).contiguous().realize()
  t.assign(Tensor(3))  # (tinygrad's: as t.assign(3); a tensor of int data raises)
  assert t.dtype == dtypes.float32 and t.tolist() == [3.0, 3.0]
  e = Tensor(2).exp() + f16
  assert e.dtype == dtypes.float16 and np.allclose(e.numpy(), np.exp(2) + np.array([1.5, 2.0]), rtol=1e-3)
  # a reduce of a number's tensor is no number (tinygrad's; PyTorch's 0-d rule keeps half): it stayed weak, half and int8
  for r in (lambda t: t.sum(), lambda t: t.max(), lambda t: t.prod(), lambda t: t.cumsum(0), lambda t: t.cummax(0).values):
    assert (r(Tensor(1.0).expand(3)) + f16[:1]).dtype == dtypes.float32 and (r(Tensor(1).expand(3)) + i8[:1]).dtype == dtypes.int32
  w = Tensor(0.5)  # written, it holds data (tinygrad's): it met half as a number, half
  w.assign(Tensor(1.0))
  assert (w + f16).dtype == dtypes.float32 and (w + f16).tolist() == [2.5, 3.0]

def test_python_scalars_do_not_upcast():
  assert (Tensor.ones(2, dtype=dtypes.float16) * 3.5).dtype == dtypes.float16
  assert (Tensor.ones(2, dtype=dtypes.int8) + 300).dtype == dtypes.int8
  assert (Tensor.ones(2, dtype=dtypes.int32) * 1.5).dtype == dtypes.default_float
  assert (Tensor([True]) + 1).dtype == dtypes.default_int
  assert (Tensor.ones(2, dtype=dtypes.int32) / 2).dtype == dtypes.default_float
  np.testing.assert_array_equal((Tensor([1, 2, 3]) / 2).numpy(), np.array([0.5, 1, 1.5], np.float32))

@settings(max_examples=6, deadline=None)
@given(st.sampled_from([np.float32, np.int32, np.int8]), st.integers(-50, 50), st.booleans())
def test_python_scalar_operands_on_either_side(dtype, s, as_float):
  """A Python scalar operand is a constant of the tensor's dtype (a float one makes an int tensor float), on either side."""
  a = np.arange(-3, 3).astype(dtype)
  x, v = Tensor(a), s + 0.25 if as_float else s
  dt = np.float32 if as_float or dtype == np.float32 else dtype
  ref, c = a.astype(dt), np.array(v, dt)
  for got, want in [(x + v, ref + c), (v + x, c + ref), (x * v, ref * c), (v * x, c * ref), (x - v, ref - c), (v - x, c - ref)]:
    assert (out := got.numpy()).dtype == dt
    np.testing.assert_array_equal(out, want.astype(dt))
  if not as_float and dtype != np.float32:
    np.testing.assert_array_equal((x & s).numpy(), a & np.array(s, dtype))
    np.testing.assert_array_equal((x ^ s).numpy(), a ^ np.array(s, dtype))

def test_cast_and_bitcast():
  a = np.array([1.5, -2.7, 3.0, 1e9], np.float32)
  check(lambda x: x.cast(dtypes.int32), lambda x: x.astype(np.int32), a)
  check(lambda x: x.bitcast(dtypes.uint32), lambda x: x.view(np.uint32), a)
  check(lambda x: x.half(), lambda x: x.astype(np.float16), a[:3])

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", ["e4m3fnuz", "e5m2fnuz"])
def test_fnuz_cast_bits(device, fmt):
  """Tensor casts to and from the fnuz fp8 formats give floatconv_ref's hand-computed bits: its encoder is PyTorch 2.13's
  float8_e4m3fnuz/e5m2fnuz cast (checked on all of f32_inputs) but for a finite overflow, which saturates (tinygrad's)."""
  dt = getattr(dtypes, "fp8" + fmt)
  x = f32_inputs(fmt)[::3]  # a third of it: ties, +-1 ulp, past the max, subnormals, inf, NaNs, both signs
  sample = np.float32([1.0, -0.0, 240.0, 248.0, -1e9, np.inf, -np.inf, np.nan, 2.0**-10, -(2.0**-12)]).view(np.uint32)
  x = np.concatenate([x, sample])
  got = Tensor(x, device=device).bitcast(dtypes.float32).cast(dt).bitcast(dtypes.uint8).numpy()
  np.testing.assert_array_equal(got, [encode(int(b), fmt) for b in x])
  codes = np.arange(256, dtype=np.uint8)
  back = Tensor(codes, device=device).bitcast(dt).float().bitcast(dtypes.uint32).numpy()
  np.testing.assert_array_equal(back, [decode(int(c), fmt) for c in codes])
  assert Tensor([1e6, -0.0], device=device).cast(dt).tolist() == [dt.max, 0.0] and math.isnan(Tensor([math.inf]).cast(dt).item())

@pytest.mark.parametrize("src,dst", [(np.float32, np.int16), (np.int8, np.float32), (np.uint8, np.float64), (np.float64, np.int8),
                                     (np.int16, np.uint64), (np.int32, np.float16)])
def test_bitcast_to_another_item_size_regroups_the_last_axis(src, dst):
  """As numpy's view (little-endian): tinygrad's and PyTorch's bitcast/view(dtype) scale the last axis; it raised TypeError."""
  a = np.random.default_rng(0).integers(0, 256, 2 * 3 * 16, dtype=np.uint8).view(src).reshape(2, 3, -1)
  got = Tensor(a, dtype=dtypes.fields()[np.dtype(src).name]).bitcast(dtypes.fields()[np.dtype(dst).name]).numpy()
  assert got.shape == a.view(dst).shape
  np.testing.assert_array_equal(got.view(np.uint8), a.view(np.uint8))

def test_bitcast_needs_whole_items_and_no_gradient():
  with pytest.raises(RuntimeError, match="isn't a whole number of 2-byte items"): Tensor.empty(3, dtype=dtypes.int8).bitcast(dtypes.float16)
  with pytest.raises(RuntimeError, match="requires grad"): Tensor.ones(4, requires_grad=True).bitcast(dtypes.int32)

def test_errors_name_shapes_and_dtypes():
  with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(4,\) can't broadcast"): Tensor.ones(2, 3) + Tensor.ones(4)
  with pytest.raises(IndexError, match="can't broadcast"): Tensor.ones(2, 3).maximum(Tensor.ones(4, 3))  # tinygrad's class
  with pytest.raises(TypeError, match="bitwise and needs an integer or bool tensor, got dtypes.float32"): Tensor.ones(2) & Tensor.ones(2)
  with pytest.raises(TypeError, match="shift needs an integer tensor, got dtypes.float32"): Tensor.ones(2) << 1
  with pytest.raises(RuntimeError, match="different devices: CPU and PYTHON"): Tensor.ones(2, device="CPU") + Tensor.ones(2, device="PYTHON")

@pytest.mark.parametrize("dt, vals, scalar", [(np.uint8, [7, 200], -3), (np.int8, [10, -20], 200), (np.int32, [10, -7], 2 ** 33),
                                              (np.int16, [3, -9], 2)])
def test_integer_true_division_by_a_scalar_it_cant_hold(dt, vals, scalar):
  """An int tensor over a Python int is divided by the number itself (numpy, PyTorch and tinygrad): the scalar was cast to
  the tensor's dtype first, so uint8 / -3 divided by 253 and int32 / 2**33 by 0 (inf)."""
  a = np.array(vals, dt)
  got = Tensor(a) / scalar
  assert got.dtype == dtypes.float32
  np.testing.assert_allclose(got.numpy(), a.astype(np.float64) / scalar, rtol=1e-6)
  np.testing.assert_allclose((scalar / Tensor(a)).numpy(), scalar / a.astype(np.float64), rtol=1e-6)

@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int32, np.uint64, np.int64])
def test_shifts_by_a_tensor_match_numpy(dt):
  """Elementwise << and >> by amounts in 0..bits-1 as numpy's; << by an amount outside that range is 0 (what x * 2**s
  wraps to; C leaves the shift undefined)."""
  rng, bits = np.random.default_rng(3), np.dtype(dt).itemsize * 8
  a = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, 64, dtype=dt, endpoint=True)
  s = rng.integers(0, bits, 64).astype(dt)
  np.testing.assert_array_equal((Tensor(a) << Tensor(s)).numpy(), np.left_shift(a, s))
  np.testing.assert_array_equal((Tensor(a) >> Tensor(s)).numpy(), np.right_shift(a, s))
  assert (Tensor(a[:2]) << Tensor(np.array([bits, bits + 3], dt))).tolist() == [0, 0]
