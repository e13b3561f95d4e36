"""Float conversions as UOp builders for the formats C has no type for (bfloat16, the OCP fp8 formats E4M3 and E5M2, the fnuz
fp8 formats of AMD and Graphcore): the one definition of their semantics. The C renderer's conversion helpers are these
graphs rendered (tg.codegen.renderer.cstyle), the emulator's pseudocode and WMMA build them, LLVM IR's bfloat16 literals fold
them; tg.uop.dtype's float_to_fp8/float_to_bits (the PYTHON device and constant folding, which run on Python floats) are
checked equal to them on every fp8 code and a dense sample of float32 inputs (tests/codegen/test_floatconv.py,
tests/amd/test_amd_floatconv.py).

The semantics, as tinygrad and PyTorch agree: round to nearest, ties to even; an infinity stays infinite where the format has
one (bfloat16, E5M2) and saturates to the largest finite value in E4M3 (no infinities: +-448); an fp8 NaN keeps its sign
(E4M3 has one NaN per sign, S.1111.111). Where they differ we follow tinygrad: a finite value beyond the largest finite E5M2
saturates to it (PyTorch's E5M2 cast gives infinity; OCP calls that the non-saturating mode, and the emulator's
v_cvt_pk_fp8/bf8_f32 use it, saturate=False: there E4M3's overflow and infinity are NaN); a NaN is made quiet keeping
the top bits of its payload that fit: E5M2's second mantissa bit (PyTorch always writes 0x7F), bfloat16's seven and its
sign (PyTorch writes 0x7FC0). Widening (fp8 -> f32) is exact and keeps a NaN's sign
and payload, as PyTorch's does; tinygrad's Python fp8_to_float gives a positive NaN instead, which we do not follow:
the PYTHON device holds values as Python floats, and a copy of an fp8 NaN must keep its bits.

The fnuz formats (fp8e4m3fnuz, fp8e5m2fnuz: the bias one more than OCP's, the top exponent finite, no infinities, no -0.0,
one NaN 0x80): PyTorch 2.13 and tinygrad 0.14's Python conversion agree that -0.0 and a negative value rounding to zero
become 0x00 and that NaN and +-inf become 0x80. They differ on a finite overflow (past 240 or 57344): PyTorch gives NaN
(0x80; that is saturate=False here), tinygrad saturates to +-max (0x7F/0xFF), which we follow. Widening 0x80 gives the
positive quiet NaN 0x7FC00000 (tinygrad; PyTorch's is 0x7F800001). tinygrad's CPU backend disagrees with its own Python
conversion (an infinity saturates, subnormals flush to zero, E5M2FNUZ's 0.0 becomes 0x04); we take the Python one, which
PyTorch confirms."""
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

def bf16_bits_to_f32(raw: UOp) -> UOp:
  """bfloat16 bits (the low 16 of a uint32) as f32: exact, a NaN as it is (bfloat16 is float32's top half)."""
  return ((raw & _u32(0xFFFF)) << _u32(16)).bitcast(dtypes.float32)

def f32_to_bf16_bits(x: UOp) -> UOp:
  """An f32 rounded to nearest even as bfloat16 bits (in a uint32); a NaN keeps its sign and top payload bits, made quiet."""
  b = x.bitcast(dtypes.uint32)
  rounded = (b + _u32(0x7FFF) + ((b >> _u32(16)) & _u32(1))) >> _u32(16)
  return x.ne(x).where((b >> _u32(16)) | _u32(0x40), rounded)

def _fp8(dtype: DType) -> tuple[int, int, int, int]:
  """(exponent bits, mantissa bits, bias, the largest finite code): the code after it is E5M2's infinity, the others' NaN."""
  if dtype not in dtypes.fp8s: raise TypeError(f"an fp8 conversion needs one of {dtypes.fp8s}, got {dtype}")
  maxcode = 0x7F if dtype in dtypes.fp8_fnuz else 0x7E if dtype == dtypes.fp8e4m3 else 0x7B
  return (*dtypes.finfo(dtype), dtypes.bias(dtype), maxcode)

def fp8_bits_to_f32(raw: UOp, dtype: DType) -> UOp:
  """fp8 bits (the low 8 of a uint32) as f32: exact; E5M2's infinities stay infinite; a NaN keeps its sign and (E5M2) payload,
  made quiet (E4M3's S.1111.111 is the quiet NaN of its sign); the fnuz NaN 0x80 is the positive quiet NaN 0x7FC00000."""
  eb, mb, bias, _ = _fp8(dtype)
  raw = raw & _u32(0xFF)
  sign, e, m = (raw >> _u32(7)) << _u32(31), (raw >> _u32(mb)) & _u32((1 << eb) - 1), raw & _u32((1 << mb) - 1)
  normal = sign | ((e + _u32(127 - bias)) << _u32(23)) | (m << _u32(23 - mb))
  denorm = (m.cast(dtypes.float32) * UOp.const(dtypes.float32, 2.0 ** (1 - bias - mb))).bitcast(dtypes.uint32) | sign
  out = e.eq(_u32(0)).where(denorm, normal)
  top = e.eq(_u32((1 << eb) - 1))
  if dtype in dtypes.fp8_fnuz: out = raw.eq(_u32(0x80)).where(_u32(0x7FC00000), out)  # the top exponent is finite
  elif dtype == dtypes.fp8e4m3: out = (top & m.eq(_u32(7))).where(sign | _u32(0x7FC00000), out)
  else: out = top.where(sign | m.eq(_u32(0)).where(_u32(0x7F800000), _u32(0x7FC00000) | (m << _u32(23 - mb))), out)
  return out.bitcast(dtypes.float32)

def f32_to_fp8_bits(x: UOp, dtype: DType, saturate: bool = True) -> UOp:
  """An f32 as fp8 bits (in a uint32), rounding to nearest even. A finite result beyond the largest finite value is that value
  with `saturate` (a tensor cast, as tinygrad), else NaN for E4M3 and fnuz and infinity for E5M2 (OCP's non-saturating
  conversion); an infinity stays infinite in E5M2, in E4M3 is its largest value with `saturate`, else NaN, and in fnuz is
  NaN; NaN is 0x7F (E4M3) or 0x7E plus the payload's top bit (E5M2), with its sign, or 0x80 (fnuz, which has no -0.0)."""
  eb, mb, bias, maxcode = _fp8(dtype)
  fnuz = dtype in dtypes.fp8_fnuz
  b = x.bitcast(dtypes.uint32)
  sign = (b >> _u32(31)) << _u32(7)
  a = (b & _u32(0x7FFFFFFF)).bitcast(dtypes.float32)
  e = ((b >> _u32(23)) & _u32(0xFF)).cast(dtypes.int32) - _i32(127)
  e = (e < _i32(1 - bias)).where(_i32(1 - bias), e)  # below the normal range: denormal steps
  quantum = ((e + _i32(127 - mb)).cast(dtypes.uint32) << _u32(23)).bitcast(dtypes.float32)
  n = round_half_even(a / quantum).cast(dtypes.int32)  # the value in quanta: exact division by a power of two
  code = ((e + _i32(bias)) << _i32(mb)) + n - _i32(1 << mb)
  out = (code > _i32(maxcode)).where(_u32(maxcode if saturate else maxcode + 1), code.cast(dtypes.uint32))
  inf = 0x80 if fnuz else maxcode if saturate and dtype == dtypes.fp8e4m3 else maxcode + 1
  out = (b & _u32(0x7FFFFFFF)).eq(_u32(0x7F800000)).where(_u32(inf), out)
  nan = _u32(0x80) if fnuz else _u32(0x7F) if dtype == dtypes.fp8e4m3 else _u32(0x7E) | ((b >> _u32(21)) & _u32(1))
  out = a.ne(a).where(nan, out)
  return out.eq(_u32(0)).where(out, out | sign) if fnuz else out | sign
