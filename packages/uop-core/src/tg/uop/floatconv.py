"""Float conversions as UOp builders for the formats C has no type for (bfloat16, the OCP fp8 formats E4M3 and E5M2), so
every layer that builds these conversions as UOps (the emulator's pseudocode and WMMA today) shares one. tg.uop.dtype's
float_to_bits/float_to_fp8 stay the Python reference for constant folding and the PYTHON device: they saturate fp8 overflow
as tinygrad does, where these builders convert as the hardware does (see f32_to_fp8_bits)."""
from __future__ import annotations
from tg.uop.dtype import DType, dtypes
from tg.uop.uop import UOp

def _u32(x: int) -> UOp: return UOp.const(dtypes.uint32, x)
def _i32(x: int) -> UOp: return UOp.const(dtypes.int32, x)

def round_half_even(u: UOp) -> UOp:
  """A float rounded to the nearest integer, ties to even (in the float's own type)."""
  half, one, two = (UOp.const(u.dtype, x) for x in (0.5, 1.0, 2.0))
  def floor(v: UOp) -> UOp: return (v < (t := v.trunc())).where(t - one, t)
  fl = floor(u)
  d = u - fl
  odd = (fl - floor(fl / two) * two).eq(one)
  return ((d > half) | (d.eq(half) & odd)).where(fl + one, fl)

def f32_to_bf16_bits(x: UOp) -> UOp:
  """An f32 rounded to nearest even as bfloat16 bits (in a uint32); a NaN stays a NaN, made quiet."""
  b = x.bitcast(dtypes.uint32)
  rounded = (b + _u32(0x7FFF) + ((b >> _u32(16)) & _u32(1))) >> _u32(16)
  return x.ne(x).where((b >> _u32(16)) | _u32(0x40), rounded)

def _fp8(dtype: DType) -> tuple[int, int, int]:
  if dtype not in (dtypes.fp8e4m3, dtypes.fp8e5m2): raise TypeError(f"an fp8 conversion needs fp8e4m3 or fp8e5m2, got {dtype}")
  return (*dtypes.finfo(dtype), dtypes.bias(dtype))

def fp8_bits_to_f32(raw: UOp, dtype: DType) -> UOp:
  """fp8 bits (the low 8 of a uint32) as f32: exact, NaN stays NaN, E5M2's infinities stay infinite."""
  eb, mb, bias = _fp8(dtype)
  raw = raw & _u32(0xFF)
  sign, e, m = (raw >> _u32(7)) << _u32(31), (raw >> _u32(mb)) & _u32((1 << eb) - 1), raw & _u32((1 << mb) - 1)
  normal = sign | ((e + _u32(127 - bias)) << _u32(23)) | (m << _u32(23 - mb))
  denorm = (m.cast(dtypes.float32) * UOp.const(dtypes.float32, 2.0 ** (1 - bias - mb))).bitcast(dtypes.uint32) | sign
  out = e.eq(_u32(0)).where(denorm, normal)
  top = e.eq(_u32((1 << eb) - 1))
  if dtype == dtypes.fp8e4m3: out = (top & m.eq(_u32(7))).where(sign | _u32(0x7FC00000), out)
  else: out = top.where(sign | m.eq(_u32(0)).where(_u32(0x7F800000), _u32(0x7FC00000)), out)
  return out.bitcast(dtypes.float32)

def f32_to_fp8_bits(x: UOp, dtype: DType) -> UOp:
  """An f32 as fp8 bits (in a uint32), rounding to nearest even; a result beyond the largest finite value (and an infinity)
  is NaN for E4M3 and infinity for E5M2 (the OCP formats' non-saturating conversion, RDNA4's v_cvt_*_fp8/bf8); NaN is
  0x7F / 0x7E with its sign."""
  eb, mb, bias = _fp8(dtype)
  b = x.bitcast(dtypes.uint32)
  sign = (b >> _u32(31)) << _u32(7)
  a = (b & _u32(0x7FFFFFFF)).bitcast(dtypes.float32)
  e = ((b >> _u32(23)) & _u32(0xFF)).cast(dtypes.int32) - _i32(127)
  e = (e < _i32(1 - bias)).where(_i32(1 - bias), e)  # below the normal range: denormal steps
  quantum = ((e + _i32(127 - mb)).cast(dtypes.uint32) << _u32(23)).bitcast(dtypes.float32)
  n = round_half_even(a / quantum).cast(dtypes.int32)  # the value in quanta: exact division by a power of two
  code = ((e + _i32(bias)) << _i32(mb)) + n - _i32(1 << mb)
  maxcode, over, nan = (0x7E, 0x7F, 0x7F) if dtype == dtypes.fp8e4m3 else (0x7B, 0x7C, 0x7E)
  big = (code > _i32(maxcode)) | (b & _u32(0x7FFFFFFF)).eq(_u32(0x7F800000))
  out = big.where(_u32(over), code.cast(dtypes.uint32))
  return a.ne(a).where(_u32(nan), out) | sign
