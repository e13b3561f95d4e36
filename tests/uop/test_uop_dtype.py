"""dtypes: properties, vectors and pointers, promotion, and exact conversions checked against numpy and the OCP FP8 spec."""
from __future__ import annotations
import itertools, math, pickle, struct
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import from_dtype
from tg.uop import AddrSpace, DType, PtrDType, dtypes, least_upper_dtype, sum_acc_dtype, to_dtype, truncate
from tg.uop.dtype import bits_to_float, float_to_bits, round_to_float_format

NUMPY_DTYPES = {dtypes.bool: np.bool_, dtypes.int8: np.int8, dtypes.int16: np.int16, dtypes.int32: np.int32, dtypes.int64: np.int64,
                dtypes.uint8: np.uint8, dtypes.uint16: np.uint16, dtypes.uint32: np.uint32, dtypes.uint64: np.uint64,
                dtypes.float16: np.float16, dtypes.float32: np.float32, dtypes.float64: np.float64}

@pytest.mark.parametrize("dt", list(NUMPY_DTYPES))
def test_properties_match_numpy(dt: DType) -> None:
  npdt = np.dtype(NUMPY_DTYPES[dt])
  assert dt.itemsize == npdt.itemsize and dt.bitsize == 8 * npdt.itemsize
  assert dtypes.is_float(dt) == (npdt.kind == "f") and dtypes.is_unsigned(dt) == (npdt.kind == "u")
  assert dtypes.is_int(dt) == (npdt.kind in "iu")
  if npdt.kind in "iu": assert (dt.min, dt.max) == (np.iinfo(npdt).min, np.iinfo(npdt).max)
  elif npdt.kind == "f": assert (dt.min, dt.max) == (-math.inf, math.inf) and dtypes.finfo(dt)[1] == np.finfo(npdt).nmant
  else: assert (dt.min, dt.max) == (False, True)

def test_fields_are_the_value_dtypes_by_every_name() -> None:
  """As tinygrad 0.14's dtypes.fields(): 28 names of 17 dtypes with data; void and index (no storage) were in it too."""
  f = dtypes.fields()
  assert len(f) == 28 and f["float"] is f["float32"] is dtypes.float32 and f["half"] is dtypes.float16 and f["ulong"] is dtypes.uint64
  assert dtypes.void not in f.values() and dtypes.index not in f.values() and len(set(f.values())) == 17
  assert f["fp8e4m3fnuz"] is to_dtype("fp8e4m3fnuz") is dtypes.fp8e4m3fnuz and dtypes.fp8e5m2fnuz.name == "fp8e5m2fnuz"
  # dtypes.all (tinygrad's): those 17 and index, each once
  assert set(dtypes.all) == set(f.values()) | {dtypes.index} and len(dtypes.all) == 18

@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.float32, dtypes.float64])
def test_float_format_matches_numpy(dt: DType) -> None:
  info = np.finfo(NUMPY_DTYPES[dt])
  assert (dtypes.finfo(dt), dtypes.bias(dt), dt.max) == ((info.nexp, info.nmant), info.maxexp - 1, math.inf)
  assert math.ldexp(2 - 2.0 ** -info.nmant, dtypes.bias(dt)) == float(info.max)  # the largest finite value from the table's fields

def test_narrow_float_biases() -> None:
  assert [dtypes.bias(d) for d in (dtypes.bfloat16, dtypes.fp8e4m3, dtypes.fp8e5m2)] == [127, 7, 15]  # OCP FP8 spec, bf16 = f32's
  assert [dtypes.bias(d) for d in (dtypes.fp8e4m3fnuz, dtypes.fp8e5m2fnuz)] == [8, 16]  # fnuz: one more (torch.finfo's tiny 2^-7, 2^-15)

def test_narrow_floats_and_special_dtypes() -> None:
  assert [(d.itemsize, dtypes.finfo(d)) for d in (dtypes.bfloat16, dtypes.fp8e4m3, dtypes.fp8e5m2)] == [(2, (8, 7)), (1, (4, 3)), (1, (5, 2))]
  assert dtypes.fp8e4m3.max == 448.0 and dtypes.fp8e4m3.min == -448.0  # E4M3FN has no infinity
  assert dtypes.fp8e5m2.max == math.inf and dtypes.bfloat16.max == math.inf
  # the fnuz formats have no infinity: their largest values, as torch.finfo(torch.float8_e4m3fnuz/e5m2fnuz)
  assert (dtypes.fp8e4m3fnuz.min, dtypes.fp8e4m3fnuz.max, dtypes.fp8e5m2fnuz.max) == (-240.0, 240.0, 57344.0)
  assert dtypes.fp8_ocp + dtypes.fp8_fnuz == dtypes.fp8s and all(dtypes.is_float(d) and d.itemsize == 1 for d in dtypes.fp8s)
  assert dtypes.is_int(dtypes.index) and dtypes.index.itemsize == 8 and not dtypes.is_float(dtypes.void) and dtypes.void.itemsize == 0
  assert dtypes.half is dtypes.float16 and dtypes.float is dtypes.float32 and dtypes.long is dtypes.int64 and to_dtype("half") is dtypes.float16
  with pytest.raises(TypeError, match="unknown dtype"): to_dtype("float7")

def test_vectors_and_pointers() -> None:
  v = dtypes.float32.vec(4)
  assert v.count == 4 and v.itemsize == 16 and v.scalar() is dtypes.float32 and dtypes.is_float(v) and v is dtypes.float32.vec(4)
  assert dtypes.int8.vec(1) is dtypes.int8 and repr(v) == "dtypes.float32.vec(4)"
  with pytest.raises(TypeError): v.vec(2)
  with pytest.raises(TypeError): dtypes.void.vec(2)
  p = dtypes.half.ptr(64, AddrSpace.LOCAL)
  assert isinstance(p, PtrDType) and p.base is dtypes.half and p.size == 64 and p.addrspace is AddrSpace.LOCAL and p.nbytes == 128
  assert p is dtypes.half.ptr(64, AddrSpace.LOCAL) and p is not dtypes.half.ptr(64) and dtypes.half.ptr().addrspace is AddrSpace.GLOBAL
  assert {AddrSpace.GLOBAL, AddrSpace.LOCAL, AddrSpace.REG} == set(AddrSpace)
  pv = p.vec(4)
  assert pv.vcount == 4 and pv.scalar() is p and dtypes.float32.vec(4).ptr(8).base is v
  with pytest.raises(TypeError): p.ptr()
  with pytest.raises(ValueError): dtypes.int32.ptr().nbytes  # noqa: B018
  for d in (v, p, pv, dtypes.bfloat16): assert pickle.loads(pickle.dumps(d)) is d

# the lattice from tinygrad's promotion rules, written out by hand
PROMOTIONS = [((dtypes.bool, dtypes.int8), dtypes.int8), ((dtypes.int8, dtypes.uint8), dtypes.int16), ((dtypes.uint8, dtypes.int16), dtypes.int16),
              ((dtypes.int32, dtypes.uint32), dtypes.int64), ((dtypes.uint16, dtypes.uint32), dtypes.uint32),
              ((dtypes.int64, dtypes.uint64), dtypes.float32), ((dtypes.fp8e4m3, dtypes.fp8e5m2), dtypes.float16),
              ((dtypes.float16, dtypes.bfloat16), dtypes.float32), ((dtypes.int32, dtypes.float16), dtypes.float16),
              ((dtypes.bool, dtypes.float64), dtypes.float64), ((dtypes.uint64, dtypes.bfloat16), dtypes.bfloat16),
              ((dtypes.int32, dtypes.index), dtypes.index), ((dtypes.float32,), dtypes.float32),
              # fnuz beside the OCP formats, as tinygrad 0.14's least_upper_dtype: above every int, below float16 and bfloat16
              ((dtypes.int32, dtypes.fp8e4m3fnuz), dtypes.fp8e4m3fnuz), ((dtypes.uint64, dtypes.fp8e5m2fnuz), dtypes.fp8e5m2fnuz),
              ((dtypes.bool, dtypes.fp8e4m3fnuz), dtypes.fp8e4m3fnuz), ((dtypes.fp8e4m3, dtypes.fp8e4m3fnuz), dtypes.float16),
              ((dtypes.fp8e4m3fnuz, dtypes.fp8e5m2fnuz), dtypes.float16), ((dtypes.fp8e5m2, dtypes.fp8e5m2fnuz), dtypes.float16),
              ((dtypes.fp8e5m2fnuz, dtypes.bfloat16), dtypes.bfloat16), ((dtypes.fp8e4m3fnuz, dtypes.float16), dtypes.float16),
              ((dtypes.fp8e4m3fnuz, dtypes.float64), dtypes.float64), ((dtypes.fp8e4m3fnuz,), dtypes.fp8e4m3fnuz)]

@pytest.mark.parametrize("ds,want", PROMOTIONS)
def test_promotion_examples(ds: tuple[DType, ...], want: DType) -> None: assert least_upper_dtype(*ds) is want

SCALARS = list(dtypes.fields().values())

def test_promotion_is_a_lattice() -> None:
  # the fp8 formats are incomparable, so only without them is the order a true lattice (associative)
  no_fp8 = [d for d in SCALARS if d not in dtypes.fp8s]
  for a, b in itertools.product(SCALARS, repeat=2):
    lub = least_upper_dtype(a, b)
    assert lub is least_upper_dtype(b, a) and least_upper_dtype(a, lub) is lub and least_upper_dtype(a, a) is a
  # nor where a signed int meets uint64: tinygrad's weakfloat there, which tg makes the default float at once (it can't
  # meet float16 as float16 later)
  signed = {dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64}
  for a, b, c in itertools.product(no_fp8, repeat=3):
    if dtypes.uint64 in (a, b, c) and signed & {a, b, c}: continue
    assert least_upper_dtype(least_upper_dtype(a, b), c) is least_upper_dtype(a, least_upper_dtype(b, c))
  assert sum_acc_dtype(dtypes.uint8) is dtypes.uint32 and sum_acc_dtype(dtypes.int8) is dtypes.int32 and sum_acc_dtype(dtypes.half) is dtypes.float32

# ***** conversions against numpy *****
def np_value(dt: DType) -> st.SearchStrategy:
  return from_dtype(np.dtype(NUMPY_DTYPES[dt]), allow_nan=True, allow_infinity=True)

def bits_of(v: object, dt: DType) -> object:
  """Comparable form of a value: bit patterns for floats (NaNs as one class), the value otherwise."""
  if not dtypes.is_float(dt): return v
  return "nan" if math.isnan(v) else float_to_bits(v, dt)  # type: ignore[arg-type]

@pytest.mark.parametrize("src,dst", list(itertools.product(NUMPY_DTYPES, repeat=2)), ids=str)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_conversion_matches_numpy(src: DType, dst: DType, data: st.DataObject) -> None:
  v = data.draw(np_value(src))
  if dtypes.is_float(src) and (dtypes.is_int(dst)):
    # C leaves float -> int undefined outside the destination's range (and for NaN/inf): only in-range values
    if not math.isfinite(v) or not dst.min <= math.trunc(float(v)) <= dst.max: return
  with np.errstate(all="ignore"): want = np.array(v).astype(NUMPY_DTYPES[dst]).item()
  got = truncate[dst](v.item())
  assert type(got) is type(want) and bits_of(got, dst) == bits_of(want, dst), f"{src}->{dst} of {v!r}: {got!r} != numpy {want!r}"

@settings(max_examples=2000, deadline=None)
@given(st.floats(allow_nan=False, width=64))
def test_float16_and_float32_rounding_match_numpy(x: float) -> None:
  with np.errstate(over="ignore"):
    assert float_to_bits(x, dtypes.float16) == int(np.float64(x).astype(np.float16).view(np.uint16))
    assert float_to_bits(x, dtypes.float32) == int(np.float64(x).astype(np.float32).view(np.uint32))

def test_float16_subnormals_and_ties() -> None:
  assert float_to_bits(2.0**-24, dtypes.float16) == 0x0001 and float_to_bits(2.0**-25, dtypes.float16) == 0  # tie to even: 0
  assert float_to_bits(3 * 2.0**-25, dtypes.float16) == 0x0002 and float_to_bits(65520.0, dtypes.float16) == 0x7C00  # 65520 ties up to inf
  assert float_to_bits(65519.99, dtypes.float16) == 0x7BFF

# ***** bfloat16: the float32 bits rounded to the top 16, ties to even (an independent formula) *****
def bf16_reference(x: float) -> int:
  b = struct.unpack("<I", struct.pack("<f", x))[0]
  return (b + 0x7FFF + ((b >> 16) & 1)) >> 16

@settings(max_examples=2000, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=True, width=32))
def test_bfloat16_from_float32_rounds_to_nearest_even(x: float) -> None:
  assert float_to_bits(x, dtypes.bfloat16) == bf16_reference(x)
  assert bits_to_float(float_to_bits(x, dtypes.bfloat16), dtypes.bfloat16) == round_to_float_format(x, dtypes.bfloat16)

def test_bfloat16_known_bits() -> None:
  cases = {1.0: 0x3F80, -2.0: 0xC000, 1 + 2**-8: 0x3F80, 1 + 3 * 2**-8: 0x3F82, 3.140625: 0x4049, math.inf: 0x7F80, 2.0**-133: 0x0001,
           3.3895313892515355e38: 0x7F7F, 3.39618e38: 0x7F80}  # the last just above the midpoint between the largest finite and 2**128
  for x, bits in cases.items(): assert float_to_bits(x, dtypes.bfloat16) == bits, (x, hex(float_to_bits(x, dtypes.bfloat16)), hex(bits))
  assert math.isnan(bits_to_float(float_to_bits(math.nan, dtypes.bfloat16), dtypes.bfloat16))

# ***** fp8 (OCP 8-bit floating point specification, E4M3FN and E5M2; AMD's and Graphcore's fnuz formats: bias one more, every
# exponent finite, no -0.0, 0x80 the one NaN, an infinity NaN, as PyTorch's float8_e4m3fnuz/e5m2fnuz) *****
FP8_KNOWN = {dtypes.fp8e4m3: {448.0: 0x7E, -448.0: 0xFE, 1.0: 0x38, 2.0**-9: 0x01, 2.0**-6: 0x08, 7 * 2.0**-9: 0x07, -0.0: 0x80,
                              -1.5: 0xBC, 240.0: 0x77, 500.0: 0x7E, math.inf: 0x7E, -math.inf: 0xFE, 2.0**-10: 0x00, 3 * 2.0**-11: 0x01},
             dtypes.fp8e5m2: {57344.0: 0x7B, -57344.0: 0xFB, 1.0: 0x3C, 2.0**-16: 0x01, 2.0**-14: 0x04, 3 * 2.0**-16: 0x03, -0.0: 0x80,
                              1.75: 0x3F, math.inf: 0x7C, -math.inf: 0xFC, 1e6: 0x7B, 2.0**-17: 0x00, 0.75 * 2.0**-15: 0x02},
             dtypes.fp8e4m3fnuz: {240.0: 0x7F, -240.0: 0xFF, 1.0: 0x40, 2.0**-10: 0x01, 2.0**-7: 0x08, 7 * 2.0**-10: 0x07, -0.0: 0x00,
                                  -1.5: 0xC4, 120.0: 0x77, 448.0: 0x7F, -250.0: 0xFF, math.inf: 0x80, -math.inf: 0x80, 2.0**-11: 0x00,
                                  -(2.0**-11): 0x00, 3 * 2.0**-12: 0x01},
             dtypes.fp8e5m2fnuz: {57344.0: 0x7F, -57344.0: 0xFF, 1.0: 0x40, 2.0**-17: 0x01, 2.0**-15: 0x04, 3 * 2.0**-17: 0x03, -0.0: 0x00,
                                  1.75: 0x43, math.inf: 0x80, -math.inf: 0x80, 1e6: 0x7F, 2.0**-18: 0x00, -(2.0**-19): 0x00,
                                  0.75 * 2.0**-16: 0x02}}
FP8_NAN = {dtypes.fp8e4m3: 0x7F, dtypes.fp8e5m2: 0x7E, dtypes.fp8e4m3fnuz: 0x80, dtypes.fp8e5m2fnuz: 0x80}
FP8_BIAS = {dtypes.fp8e4m3: 7, dtypes.fp8e5m2: 15, dtypes.fp8e4m3fnuz: 8, dtypes.fp8e5m2fnuz: 16}
# how many non-negative finite codes, and the largest value
FP8_RANGE = {dtypes.fp8e4m3: (127, 448.0), dtypes.fp8e5m2: (124, 57344.0), dtypes.fp8e4m3fnuz: (128, 240.0), dtypes.fp8e5m2fnuz: (128, 57344.0)}

@pytest.mark.parametrize("dt", list(FP8_KNOWN))
def test_fp8_known_encodings(dt: DType) -> None:
  for x, bits in [*FP8_KNOWN[dt].items(), (0.0, 0x00)]: assert float_to_bits(x, dt) == bits, f"{dt} {x}: {float_to_bits(x, dt):#x} != {bits:#x}"
  nan_bits = float_to_bits(math.nan, dt)
  assert math.isnan(bits_to_float(nan_bits, dt)) and nan_bits == FP8_NAN[dt] and float_to_bits(-math.nan, dt) == FP8_NAN[dt] | 0x80

def fp8_values(dt: DType) -> list[tuple[int, float]]:
  """Every non-negative finite value of the format with its code, from the spec's formula, in increasing order."""
  ebits, mbits = dtypes.finfo(dt)
  bias, out = FP8_BIAS[dt], []
  for code in range(0x80):
    e, m = code >> mbits, code & ((1 << mbits) - 1)
    if e == (1 << ebits) - 1 and (dt is dtypes.fp8e5m2 or (dt is dtypes.fp8e4m3 and m == (1 << mbits) - 1)): continue  # inf/NaN codes
    out.append((code, m * 2.0**(1 - bias - mbits) if e == 0 else (1 + m / 2**mbits) * 2.0**(e - bias)))
  return out

@pytest.mark.parametrize("dt", list(FP8_KNOWN))
def test_fp8_all_codes_round_trip_and_round_to_nearest_even(dt: DType) -> None:
  vals = fp8_values(dt)
  assert (len(vals), vals[-1][1]) == FP8_RANGE[dt]
  for code, v in vals:
    for sign in (0, 0x80):
      if sign and dt in (dtypes.fp8e4m3fnuz, dtypes.fp8e5m2fnuz) and code == 0: continue  # 0x80 is NaN: -0.0 is 0x00
      x = -v if sign else v
      assert bits_to_float(code | sign, dt) == x and float_to_bits(x, dt) == code | sign
  for (c0, v0), (c1, v1) in itertools.pairwise(vals):
    mid = (v0 + v1) / 2
    assert float_to_bits(mid, dt) == (c0 if c0 % 2 == 0 else c1), f"{dt}: the tie {mid} rounds to the even code"
    assert float_to_bits(math.nextafter(mid, 0), dt) == c0 and float_to_bits(math.nextafter(mid, math.inf), dt) == c1
    assert float_to_bits(-math.nextafter(mid, math.inf), dt) == c1 | 0x80

def test_round_to_float_format_saturation() -> None:
  assert round_to_float_format(1e9, dtypes.fp8e5m2) == math.inf and round_to_float_format(1e9, dtypes.fp8e5m2, saturate=True) == 57344.0
  assert round_to_float_format(-1e9, dtypes.fp8e4m3) == -448.0 and round_to_float_format(464.0, dtypes.fp8e4m3) == 448.0
  assert round_to_float_format(1e6, dtypes.float16) == math.inf and math.isnan(round_to_float_format(math.nan, dtypes.bfloat16))
  assert truncate[dtypes.fp8e4m3](1.0625) == 1.0 and truncate[dtypes.bfloat16](1 + 3 * 2**-8) == 1 + 2**-6
  # fnuz: no infinity (NaN), no -0.0, finite overflow saturates
  assert math.isnan(round_to_float_format(-math.inf, dtypes.fp8e4m3fnuz)) and round_to_float_format(1e9, dtypes.fp8e5m2fnuz) == 57344.0
  assert math.copysign(1.0, round_to_float_format(-(2.0**-12), dtypes.fp8e4m3fnuz)) == 1.0
  assert round_to_float_format(-248.0, dtypes.fp8e4m3fnuz) == -240.0
  assert math.copysign(1.0, truncate[dtypes.fp8e5m2fnuz](-0.0)) == 1.0 and math.isnan(truncate[dtypes.fp8e4m3fnuz](math.inf))
