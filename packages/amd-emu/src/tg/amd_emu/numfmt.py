"""Number formats the pseudocode converts to and from that C has no type for: 16-bit snorm/unorm, the 8-bit floats fp8
(E4M3) and bf8 (E5M2) of RDNA4, and the bits of 2/pi that v_trig_preop_f64 reads.

Each works on `V` values (pcode_uops.py) and builds UOps; the emulator calls them from the pseudocode's functions
(`f32_to_snorm`, `fp8_to_f32`, ...).
"""
from __future__ import annotations
import functools
from tg.uop import UOp, dtypes, round_half_even, fp8_bits_to_f32, f32_to_fp8_bits
from .pcode_uops import V, conv

def to_norm(x: V, signed: bool) -> V:
  """f16/f32 to a 16-bit snorm (signed) or unorm, by Direct3D's rule: NaN gives 0, the value is clamped to [-1, 1] or [0, 1],
  scaled by 32767 or 65535 and rounded to nearest even. The scaling is exact in f64, so there is one rounding."""
  f = conv(x, "f", 64).u
  lo, hi = UOp.const(dtypes.float64, -1.0 if signed else 0.0), UOp.const(dtypes.float64, 1.0)
  c = (f < lo).where(lo, (f > hi).where(hi, f))
  c = f.ne(f).where(UOp.const(dtypes.float64, 0.0), c)
  r = round_half_even(c * UOp.const(dtypes.float64, 32767.0 if signed else 65535.0))
  return V(r.cast(dtypes.int16 if signed else dtypes.uint16), "i" if signed else "u", 16)

# ***** 8-bit floats (OCP FP8): fp8 is E4M3 (no infinities, NaN is S.1111.111), bf8 is E5M2 (IEEE-like); tg.uop builds them *****
FP8 = {"fp8": dtypes.fp8e4m3, "bf8": dtypes.fp8e5m2}

def f8_to_f32(x: V, fmt: str) -> V: return V(fp8_bits_to_f32(conv(x, "u", 32).u, FP8[fmt]), "f", 32)
def f32_to_f8(x: V, fmt: str) -> V: return V(f32_to_fp8_bits(conv(x, "f", 32).u, FP8[fmt], saturate=False).cast(dtypes.uint8), "u", 8)

def u32(x: int) -> UOp: return UOp.const(dtypes.uint32, x)

# ***** 2/pi *****
TWO_OVER_PI_BITS = 1201  # the ISA's constant: the first 1201 bits of 2/pi's fraction

@functools.cache
def two_over_pi() -> int:
  """floor(2/pi * 2**1201), from Machin's formula pi = 16 atan(1/5) - 4 atan(1/239) in integer fixed point (64 guard bits)."""
  prec = TWO_OVER_PI_BITS + 64
  one = 1 << prec
  def atan_inv(n: int) -> int:
    total, term, k, sign = 0, one // n, 1, 1
    while term:
      total += sign * (term // k)
      term //= n * n
      k, sign = k + 2, -sign
    return total
  pi = 16 * atan_inv(5) - 4 * atan_inv(239)
  return ((2 * one) << TWO_OVER_PI_BITS) // pi

def two_over_pi_window(shift: V) -> V:
  """The 53 bits of 2/pi after the first `shift` bits of its fraction, as an integer (v_trig_preop_f64's segment): bits
  [1200 - shift, 1148 - shift] of the 1201-bit constant, zeros below its bit 0."""
  words = two_over_pi() << 64  # 64 zero bits below, so a window that reaches past bit 0 reads zeros
  nwords = (TWO_OVER_PI_BITS + 128) // 64 + 1
  s = conv(shift, "u", 32).u
  inside = s < u32(TWO_OVER_PI_BITS + 11)
  p = inside.where(u32(TWO_OVER_PI_BITS - 53 + 64) - s, u32(0))  # the window's low bit in `words`
  k, off = p >> u32(6), (p & u32(63)).cast(dtypes.uint64)
  def word(i: UOp) -> UOp:
    out = UOp.const(dtypes.uint64, 0)
    for j in range(nwords): out = i.eq(u32(j)).where(UOp.const(dtypes.uint64, words >> (64 * j) & (2**64 - 1)), out)
    return out
  lo, hi = word(k), word(k + u32(1))
  zero = UOp.const(dtypes.uint64, 0)
  both = (lo >> off) | off.eq(zero).where(zero, hi << (UOp.const(dtypes.uint64, 64) - off))
  return V(inside.where(both & UOp.const(dtypes.uint64, (1 << 53) - 1), zero), "u", 64)

# the pseudocode's functions for these formats, by name
FUNCS = {"f16_to_snorm": lambda x: to_norm(x, True), "f32_to_snorm": lambda x: to_norm(x, True),
         "f16_to_unorm": lambda x: to_norm(x, False), "f32_to_unorm": lambda x: to_norm(x, False),
         "fp8_to_f32": lambda x: f8_to_f32(x, "fp8"), "bf8_to_f32": lambda x: f8_to_f32(x, "bf8"),
         "f32_to_fp8": lambda x: f32_to_f8(x, "fp8"), "f32_to_bf8": lambda x: f32_to_f8(x, "bf8"),
         "two_over_pi_window": two_over_pi_window}
