"""Hand-computed references for the float32 <-> bfloat16/fp8 conversions (tg.uop.floatconv's semantics), from the IEEE bit
layout alone: a code's value is (2^m + mantissa) * 2^(e - bias - m) (or the subnormal form), and a float32 is rounded by
finding its two neighbouring codes with exact fractions and taking the nearer, the even code on a tie. No tg code is used.
The fnuz formats (AMD's and Graphcore's fp8: bias one more, no inf, no -0.0, one NaN 0x80) were checked against PyTorch 2.13's
float8_e4m3fnuz/float8_e5m2fnuz casts (saturate=False is PyTorch's; saturating, tinygrad's, differs only past the max).
Shared by tests/codegen/test_floatconv.py (CPU, PYTHON, the Python functions) and tests/amd/test_amd_floatconv.py."""
from __future__ import annotations
import bisect
import struct
from fractions import Fraction
import numpy as np

# name: (exponent bits, mantissa bits, exponent bias, the largest finite code of either sign's half)
FORMATS = {"bf16": (8, 7, 127, 0x7F7F), "e4m3": (4, 3, 7, 0x7E), "e5m2": (5, 2, 15, 0x7B), "e4m3fnuz": (4, 3, 8, 0x7F),
           "e5m2fnuz": (5, 2, 16, 0x7F)}
FNUZ = ("e4m3fnuz", "e5m2fnuz")  # 0x80 (-0.0's code in the others) is their one NaN

def code_value(code: int, fmt: str) -> Fraction:
  """A non-negative code's exact value, the exponent field read as a number even where the format keeps it for inf/NaN (the
  code after the largest finite one is where rounding would go next)."""
  eb, mb, bias, _ = FORMATS[fmt]
  e, m = code >> mb, code & ((1 << mb) - 1)
  return Fraction(m) * Fraction(2) ** (1 - bias - mb) if e == 0 else Fraction((1 << mb) + m) * Fraction(2) ** (e - bias - mb)

def f32_value(bits: int) -> Fraction:
  """A finite float32's magnitude, exactly, from its bits."""
  e, m = (bits >> 23) & 0xFF, bits & 0x7FFFFF
  return Fraction(m) * Fraction(2) ** -149 if e == 0 else Fraction((1 << 23) + m) * Fraction(2) ** (e - 150)

def encode(bits: int, fmt: str, saturate: bool = True) -> int:
  """float32 bits -> the format's bits. Nearest, ties to the even code; beyond the largest finite value: that value when
  saturating (fp8), else infinity (bfloat16, E5M2) or NaN (E4M3). inf: infinite; in E4M3 (no infinity) its largest value
  when saturating (as PyTorch's float8_e4m3fn cast and tinygrad's), else NaN. NaN keeps its sign, made
  quiet: bfloat16 keeps the payload's top 7 bits, E5M2 the top 2 (the first set), E4M3 is S.1111.111. fnuz: NaN and +-inf
  are 0x80 and a zero has no sign (PyTorch's and tinygrad's alike), overflow saturates (tinygrad) or is NaN (PyTorch)."""
  eb, mb, _, top = FORMATS[fmt]
  width = 1 + eb + mb
  sign, mag = (bits >> 31) << (width - 1), bits & 0x7FFFFFFF
  inf = ((1 << eb) - 1) << mb
  if fmt in FNUZ and mag >= 0x7F800000: return 0x80
  if mag > 0x7F800000:
    return sign | {"bf16": 0x7FC0 | (mag >> 16 & 0x7F), "e4m3": 0x7F, "e5m2": 0x7E | (mag >> 21 & 1)}[fmt]
  if mag == 0x7F800000: return sign | ((top if saturate else 0x7F) if fmt == "e4m3" else inf)
  x, keys = f32_value(mag), _values(fmt)
  lo = bisect.bisect_right(keys, x) - 1          # keys[lo] <= x < keys[lo + 1]; keys runs to top + 2
  if lo >= top + 1: code = top + 1               # at or past the next code after the largest: overflow
  elif keys[lo] == x: code = lo
  else:
    dlo, dhi = x - keys[lo], keys[lo + 1] - x
    code = lo if dlo < dhi or (dlo == dhi and lo % 2 == 0) else lo + 1
  if code > top: code = top if saturate and fmt != "bf16" else (0x80 if fmt in FNUZ else 0x7F if fmt == "e4m3" else inf)
  return 0 if fmt in FNUZ and code == 0 else sign | code

_cache: dict[str, list[Fraction]] = {}
def _values(fmt: str) -> list[Fraction]:
  if fmt not in _cache: _cache[fmt] = [code_value(c, fmt) for c in range(FORMATS[fmt][3] + 3)]
  return _cache[fmt]

def decode(code: int, fmt: str) -> int:
  """The format's bits -> float32 bits: exact; inf stays inf; NaN keeps its sign and payload (shifted to the top of float32's
  mantissa), made quiet; the fnuz NaN 0x80 is the positive quiet NaN (tinygrad's; PyTorch's is 0x7F800001). bfloat16 is
  float32's top half."""
  if fmt == "bf16": return code << 16
  if fmt in FNUZ and code == 0x80: return 0x7FC00000
  eb, mb, _, _ = FORMATS[fmt]
  sign, e, m = (code >> 7) << 31, (code >> mb) & ((1 << eb) - 1), code & ((1 << mb) - 1)
  if fmt == "e4m3" and e == 15 and m == 7: return sign | 0x7FC00000
  if fmt == "e5m2" and e == 31: return sign | (0x7F800000 if m == 0 else 0x7FC00000 | m << 21)
  return sign | struct.unpack("<I", struct.pack("<f", float(code_value(code & 0x7F, fmt))))[0]  # exact in float32

def f32_inputs(fmt: str, seed: int = 0) -> np.ndarray:
  """float32 bit patterns, both signs: every code's value (a sample of bfloat16's), the midpoints between neighbours (ties),
  one float32 ulp either side of each, values just past the largest finite one, float32 subnormals, +-inf, NaNs with
  payloads (quiet and signalling), and random patterns."""
  top = FORMATS[fmt][3]
  codes = list(range(top + 2)) if fmt != "bf16" else sorted({*range(0, top + 2, 61), *range(0, 0x100), *range(top - 0x100, top + 2)})
  vals = [code_value(c, fmt) for c in codes]
  exact = [float(v) for v in vals] + [float((a + b) / 2) for a, b in zip(vals, vals[1:])]
  f = np.array([v for v in exact if v < 2.0**128], np.float64).astype(np.float32)  # each exact in float32
  f = np.concatenate([f, np.nextafter(f, np.float32(np.inf)), np.nextafter(f, np.float32(0))])
  special = np.array([0x00000001, 0x00000002, 0x007FFFFF, 0x00400000, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7F800001, 0x7FA00000,
                      0x7FE00000, 0x7FFFFFFF, 0x7FBFFFFF, 0x7F900000], np.uint32)
  rng = np.random.default_rng(seed)
  u = np.concatenate([f.view(np.uint32), special, rng.integers(0, 1 << 31, 512, dtype=np.uint32)])
  return np.unique(np.concatenate([u, u | np.uint32(0x80000000)]))

def codes(fmt: str) -> np.ndarray:
  """Every code of an fp8 format; a sample of bfloat16's (every 7th, and all of the inf/NaN ones, both signs)."""
  if fmt != "bf16": return np.arange(256, dtype=np.uint8)
  c = np.concatenate([np.arange(0, 0x8000, 7), np.arange(0x7F80, 0x8000)]).astype(np.uint16)
  return np.unique(np.concatenate([c, c | np.uint16(0x8000)]))
