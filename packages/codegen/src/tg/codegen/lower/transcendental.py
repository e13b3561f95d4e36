"""EXP2, LOG2 and SIN for renderers without them, built from ops every device has (add, mul, compares, where, casts,
bitcasts, integer bit ops).

float32 and float64 are computed in their own precision; narrower floats in float32. The accuracy (measured in
tests/codegen/test_transcendental.py) is about 1 ulp:
- exp2: x = n + f with |f| <= 1/2, 2^f by its Taylor series, times 2^n built from exponent bits in two halves so that
  denormal results round once and large n overflows to inf.
- log2: x = 2^e * m with m in [sqrt(1/2), sqrt(2)) (denormals scaled up first), ln(m) = f - s*(f - R(s^2)) with f = m-1,
  s = f/(2+f) (the atanh series), times 1/ln2 in two-word arithmetic so the result keeps ~p+8 bits before rounding.
- sin: x = k*pi/2 + r with r kept as two words (hi + lo); Cody-Waite (pi/2 in parts whose products with k are exact)
  for |x| < 2^kb, Payne-Hanek (exact integer product of x's significand with a window of 2/pi's bits) beyond; then
  sin or cos of r by Taylor series, chosen and signed by k mod 4."""
from __future__ import annotations
import functools, math
from typing import Any
from dataclasses import dataclass
from tg.uop import UOp, Ops, UPat, PatternMatcher, DType, dtypes, ContextVar

# 2: every device computes EXP2, LOG2 and SIN by these polynomials, also where it has its own (tinygrad's switch, for
# testing them on any device); 1 (default): only where it has none
TRANSCENDENTAL = ContextVar("TRANSCENDENTAL", 1)

# ***** exact constants: pi by Machin's formula in big integers *****
def _atan_inv(n: int, one: int) -> int:
  """atan(1/n) * one, by its alternating series in integers."""
  total, term, k, n2 = 0, one // n, 0, n * n
  while term:
    total += (-1) ** k * (term // (2 * k + 1))
    term //= n2
    k += 1
  return total

@functools.cache
def _pi_scaled(bits: int) -> int:
  """floor(pi * 2^bits) (give or take a unit)."""
  one = 1 << (bits + 16)
  return (16 * _atan_inv(5, one) - 4 * _atan_inv(239, one)) >> 16

TWO_OVER_PI_BITS = 1400  # enough for float64's largest exponent plus the Payne-Hanek window
@functools.cache
def _two_over_pi_scaled() -> int: return (1 << (2 * TWO_OVER_PI_BITS + 65)) // _pi_scaled(TWO_OVER_PI_BITS + 64)  # floor(2/pi * 2^1400)

def _two_over_pi_bits(m: int) -> int:
  """floor(2/pi * 2^m) for m <= TWO_OVER_PI_BITS."""
  return _two_over_pi_scaled() >> (TWO_OVER_PI_BITS - m) if m >= 0 else 0

def _round_bits(v: int, scale: int, bits: int) -> float:
  """v / 2^scale rounded to a float with at most `bits` significant bits."""
  if v < 0: return -_round_bits(-v, scale, bits)
  drop = max(v.bit_length() - bits, 0)
  return math.ldexp((v + (1 << drop >> 1)) >> drop, drop - scale)

def _pio2_parts(part_bits: tuple[int, ...]) -> list[float]:
  """pi/2 as a sum of floats, the i-th with part_bits[i] significant bits (each is the rounded remainder of the previous)."""
  scale = 400
  rest, out = _pi_scaled(scale) >> 1, []
  for b in part_bits:
    out.append(_round_bits(rest, scale, b))
    rest -= int(out[-1] * 2 ** scale)
  return out

# ***** per-format parameters *****
@dataclass(frozen=True)
class Fmt:
  dt: DType        # the float computed in
  it: DType        # signed integer of the same size
  ut: DType        # unsigned integer of the same size
  exp_terms: int   # Taylor terms of 2^f, |f| <= 1/2
  log_terms: int   # odd atanh terms after s
  sin_terms: int   # Taylor terms of sin(r)/r - 1 and (cos(r) - 1 + r^2/2)/r^4, |r| <= pi/4
  kb: int          # Cody-Waite for k = round(x*2/pi) < 2^kb
  limbs: int       # 32-bit limbs of the Payne-Hanek window of 2/pi
  @property
  def mbits(self) -> int: return dtypes.finfo(self.dt)[1]
  @property
  def p(self) -> int:
    """Significand bits, with the implicit one."""
    return self.mbits + 1
  @property
  def bias(self) -> int: return dtypes.bias(self.dt)

FMTS = {dtypes.float32: Fmt(dtypes.float32, dtypes.int32, dtypes.uint32, 8, 5, 5, 9, 4),
        dtypes.float64: Fmt(dtypes.float64, dtypes.int64, dtypes.uint64, 14, 11, 8, 18, 6)}

# ***** small helpers (vector-safe: dtypes follow the operand's lane count) *****
def _v(dt: DType, like: UOp) -> DType: return dt.vec(like.dtype.count) if like.dtype.count > 1 else dt
def _c(like: UOp, v: float | int) -> UOp: return like.const_like(v)
def _poly(x: UOp, coeffs: list[float]) -> UOp:
  """coeffs[0] + coeffs[1]*x + ... by Horner's rule."""
  acc = _c(x, coeffs[-1])
  for c in reversed(coeffs[:-1]): acc = acc * x + c
  return acc
def _isnan(x: UOp) -> UOp: return x.ne(x)
def _pow2(n: UOp, f: Fmt) -> UOp:
  """2^n as a float for an integer n in the normal exponent range."""
  return ((n + f.bias).cast(_v(f.ut, n)) << f.mbits).bitcast(_v(f.dt, n))
def _two_sum(a: UOp, b: UOp) -> tuple[UOp, UOp]:
  """s + e == a + b exactly, s = fl(a + b) (Knuth)."""
  s = a + b
  bb = s - a
  return s, (a - (s - bb)) + (b - bb)
def _split(a: UOp, f: Fmt) -> tuple[UOp, UOp]:
  """a = hi + lo with hi and lo of at most p/2 bits each (Veltkamp), so their products are exact."""
  c = a * float(2 ** ((f.p + 1) // 2) + 1)
  hi = c - (c - a)
  return hi, a - hi
def _two_prod(a: UOp, b: UOp, f: Fmt, fma: bool) -> tuple[UOp, UOp]:
  """p + e == a * b exactly, p = fl(a * b): by a fused multiply-add where there is one, else by Dekker's splitting."""
  p = a * b
  if fma: return p, a.mulacc(b, -p)
  (ah, al), (bh, bl) = _split(a, f), _split(b, f)
  return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl
def _split_const(v_num: int, scale: int, f: Fmt) -> tuple[float, float]:
  hi = _round_bits(v_num, scale, f.p)
  return hi, _round_bits(v_num - int(hi * 2 ** scale), scale, f.p)

# ***** exp2 *****
def exp2_f(x: UOp, f: Fmt, fma: bool) -> UOp:
  lim = float(f.bias + f.p + 8)  # beyond it the result is 0 or inf already; clamping keeps the integer math in range
  xc = _isnan(x).where(0.0, (x < -lim).where(-lim, (x > lim).where(lim, x)))
  t = (xc + 0.5).trunc()
  n = (t > xc + 0.5).where(t - 1.0, t)  # floor(xc + 1/2)
  r = xc - n                            # exact, in [-1/2, 1/2]
  p = _poly(r, [math.log(2) ** k / math.factorial(k) for k in range(f.exp_terms)])
  ni = n.cast(_v(f.it, x))
  half = ni >> 1
  return _isnan(x).where(x, p * _pow2(half, f) * _pow2(ni - half, f))

# ***** log2 *****
def log2_f(x: UOp, f: Fmt, fma: bool) -> UOp:
  tiny = x < math.ldexp(1.0, 1 - f.bias)
  xs = tiny.where(x * float(2 ** f.p), x)
  bits = xs.bitcast(_v(f.it, x))
  e = ((bits >> f.mbits) & ((1 << (8 * f.dt.itemsize - f.p)) - 1)) - f.bias - tiny.where(_c(bits, f.p), _c(bits, 0))
  m = ((bits & ((1 << f.mbits) - 1)) | (f.bias << f.mbits)).bitcast(_v(f.dt, x))  # [1, 2)
  big = m > math.sqrt(2)
  m = big.where(m * 0.5, m)
  e = big.where(e + 1, e)
  fr = m - 1.0                          # exact
  s = fr / (fr + 2.0)
  s2 = s * s
  r = s2 * _poly(s2, [2.0 / (2 * k + 3) for k in range(f.log_terms)])
  ln_lo = -(s * (fr - r))               # ln(m) = fr + ln_lo, |ln_lo| < |fr|/2
  inv_hi, inv_lo = _inv_ln2(f)
  ph, pe = _two_prod(fr, _c(fr, inv_hi), f, fma)
  lo = pe + (fr * inv_lo + ln_lo * (inv_hi + inv_lo))
  ef = e.cast(_v(f.dt, x))
  hi, e2 = _two_sum(ef, ph)
  out = hi + (e2 + lo)
  inf = _c(x, math.inf)
  return _isnan(x).where(x, (x < 0.0).where(_c(x, math.nan), x.ne(0.0).where(x.ne(inf).where(out, inf), -inf)))

@functools.cache
def _inv_ln2(f: Fmt) -> tuple[float, float]:
  """1/ln2 as hi + lo, from ln2 = sum 1/(k 2^k) in big integers."""
  scale = 300
  ln2 = sum((1 << (scale + 8)) // (k << k) for k in range(1, scale + 10)) >> 8
  return _split_const((1 << (2 * scale)) // ln2, scale, f)

# ***** sin *****
def _cody_waite(ax: UOp, f: Fmt) -> tuple[UOp, UOp, UOp]:
  """(k, r_hi, r_lo): ax = k*pi/2 + r_hi + r_lo for 0 <= ax < 2^kb; pi/2's first parts have p-kb bits so k*part is exact."""
  pb = f.p - f.kb
  parts = _pio2_parts((pb, pb, pb, f.p))
  k = (ax * (2 / math.pi) + 0.5).trunc()
  hi, lo = ax, _c(ax, 0.0)
  for part in parts[:-1]:
    hi, e = _two_sum(hi, k * -part)
    lo = lo + e
  hi, lo = _two_sum(hi, lo - k * parts[-1])
  return k.cast(_v(f.it, ax)), hi, lo

def _payne_hanek(ax: UOp, f: Fmt, fma: bool) -> tuple[UOp, UOp, UOp]:
  """(q, r_hi, r_lo) for large finite ax: y = ax * 2/pi mod 4 as an exact product of the integer significand M with an
  L-bit window of 2/pi's bits (those below can change y by < M*2^(2-L)), q = round(y), r = (y - q) * pi/2 in two words."""
  u64, L = dtypes.uint64, 32 * f.limbs
  M32 = 0xFFFFFFFF
  bits = ax.bitcast(_v(f.ut, ax)).cast(_v(u64, ax))
  m = (bits & ((1 << f.mbits) - 1)) | (1 << f.mbits)
  # ax = M * 2^ex; the window starts at 2/pi's bit ex-1 (the 2^1 place of the product): s = ex - 2 = E - p - 1
  s = (bits >> f.mbits).cast(_v(dtypes.int32, ax)) - (f.bias + f.p + 1)
  K = 64                                # s >= -K for every exponent the window is used for
  smax = 2 ** (8 * f.dt.itemsize - f.p) - f.bias - f.p - 1
  na = (smax + K) // 32 + 1
  c = (s + K).maximum(_c(s, 0))
  a, b = c >> 5, (c & 31).cast(_v(u64, ax))
  def limb(j: int) -> UOp:              # 32-bit limb j of floor(2/pi * 2^(32a - K + L + 32)) mod 2^(L+32), selected by a
    vals = [(_two_over_pi_bits(32 * ai - K + L + 32) >> (32 * j)) & M32 for ai in range(na)]
    out = _c(bits, vals[-1])
    for ai in range(na - 2, -1, -1): out = a.ne(ai).where(out, _c(bits, vals[ai]))
    return out
  u = [limb(j) for j in range(f.limbs + 1)]
  w = [((u[j + 1] << b) | (u[j] >> (_c(b, 32) - b))) & M32 for j in range(f.limbs)]  # the window, floor(2/pi * 2^(s+L)) mod 2^L
  ms = [m & M32] + ([m >> 32] if f.p > 32 else [])
  cols = [_c(bits, 0)] * (f.limbs + 1)
  for i, mi in enumerate(ms):
    for j, wj in enumerate(w):
      if i + j >= f.limbs: continue
      pr = mi * wj
      cols[i + j] = cols[i + j] + (pr & M32)
      cols[i + j + 1] = cols[i + j + 1] + (pr >> 32)
  y, carry = [], _c(bits, 0)
  for j in range(f.limbs):
    col = cols[j] + carry
    y.append(col & M32)
    carry = col >> 32
  # y: 2 integer bits, L-2 fraction bits; round to nearest: past one half, q+1 and r = -(1 - frac)
  top = y[-1]
  neg = ((top >> 29) & 1).cast(_v(dtypes.bool, ax))
  q = ((top >> 30) + neg.cast(_v(u64, ax))) & 3
  frac = y[:-1] + [top & ((1 << 30) - 1)]
  mag, carry = [], _c(bits, 1)
  for j, fj in enumerate(frac):
    col = ((fj ^ M32) & (M32 if j < f.limbs - 1 else (1 << 30) - 1)) + carry
    mag.append(neg.where(col & M32, fj))
    carry = col >> 32
  # the fraction to two words: pieces exact in the float (16 bits for float32), summed exactly from the top
  pw = 32 if f.p > 32 else 16
  hi, lo = _c(ax, 0.0), _c(ax, 0.0)
  for j in range(f.limbs - 1, -1, -1):
    for h in range(32 // pw - 1, -1, -1):
      piece = ((mag[j] >> (pw * h) if h else mag[j]) & ((1 << pw) - 1)).cast(_v(f.dt, ax)) * math.ldexp(1.0, 32 * j + pw * h - (L - 2))
      hi, e = _two_sum(hi, piece)
      lo = lo + e
  pio2_hi, pio2_lo = _split_const(_pi_scaled(300), 301, f)
  ph, pe = _two_prod(hi, _c(hi, pio2_hi), f, fma)
  rh, rl = _two_sum(ph, pe + (hi * pio2_lo + lo * pio2_hi))
  return q.cast(_v(f.it, ax)), neg.where(-rh, rh), neg.where(-rl, rl)

def sin_f(x: UOp, f: Fmt, fma: bool) -> UOp:
  sign = 1 << (8 * f.dt.itemsize - 1)
  xb = x.bitcast(_v(f.ut, x))
  ax = (xb & (sign - 1)).bitcast(_v(f.dt, x))
  use_cw = ax < float(2 ** f.kb)
  k, ch, cl = _cody_waite(use_cw.where(ax, 0.0), f)
  q, ph, pl = _payne_hanek(use_cw.where(1.0, ax), f, fma)
  q, rh, rl = use_cw.where(k & 3, q), use_cw.where(ch, ph), use_cw.where(cl, pl)
  z = rh * rh
  sin_c = [(-1) ** (k + 1) / math.factorial(2 * k + 3) for k in range(f.sin_terms)]
  sin_r = rh + (rh * z * _poly(z, sin_c) + rl * (1.0 - 0.5 * z))
  cos_c = [(-1) ** k / math.factorial(2 * k + 4) for k in range(f.sin_terms)]
  hz = 0.5 * z
  w = 1.0 - hz
  cos_r = w + (((1.0 - w) - hz) + (z * z * _poly(z, cos_c) - rh * rl))
  val = (q & 1).ne(0).where(cos_r, sin_r)
  flip = (q & 2).cast(_v(f.ut, x)) << (8 * f.dt.itemsize - 2)  # q in {2, 3}: negate; then x's own sign
  out = (val.bitcast(_v(f.ut, x)) ^ flip ^ (xb & sign)).bitcast(_v(f.dt, x))
  return (_isnan(x) | ax.ne(math.inf).logical_not()).where(_c(x, math.nan), out)

# ***** the pass *****
IMPLS = {Ops.EXP2: exp2_f, Ops.LOG2: log2_f, Ops.SIN: sin_f}

def lower_transcendental(ctx: Any, u: UOp) -> UOp | None:
  """Polynomials where the device lacks the op for the dtype; a dtype without a polynomial (bfloat16) goes through float32,
  where the device may have the op itself."""
  if not dtypes.is_float(u.dtype) or native(ctx, u.op, u.dtype.scalar()): return None
  x, impl, fma = u.src[0], IMPLS[u.op], Ops.MULACC in ctx.native_ops
  if (f := FMTS.get(u.dtype.scalar())) is not None: return impl(x, f, fma)
  x32 = x.cast(_v(dtypes.float32, x))
  return (x32.alu(u.op) if native(ctx, u.op, dtypes.float32) else impl(x32, FMTS[dtypes.float32], fma)).cast(u.dtype)

def native(ctx: Any, op: Ops, dt: DType) -> bool:
  """Does the device compute a transcendental op itself (not with TRANSCENDENTAL=2)?"""
  return TRANSCENDENTAL.value < 2 and ctx.native_for(op, dt)

pm_transcendental = PatternMatcher([(UPat((Ops.EXP2, Ops.LOG2, Ops.SIN), name="u"), lower_transcendental)])
