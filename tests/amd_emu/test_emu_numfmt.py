"""Conversions to and from formats C has no type for (issue #14): snorm/unorm, RDNA4's fp8/bf8, v_trig_preop_f64's 2/pi bits.
References: numpy (snorm/unorm), the OCP FP8 formats' definitions evaluated exactly with fractions (fp8/bf8), and 2/pi by the
Gauss-Legendre iteration in decimal (a different algorithm from the emulator's Machin formula)."""
from __future__ import annotations
import decimal
import math
import struct
from fractions import Fraction
import numpy as np
import pytest
from tg.amd_emu.emu import run_wave
from llvm import assemble as llvm_assemble

LANE = np.arange(32)

def run(text: str, arch: str = "rdna4", **kw):
  encs = llvm_assemble(text.split("\n"), arch)
  assert not [e for e in encs if isinstance(e, str)], encs
  return run_wave(b"".join(encs), arch, **kw)  # type: ignore[arg-type]

def f32_lanes(rng: np.random.Generator, specials: list[float]) -> np.ndarray:
  x = np.concatenate([np.array(specials, np.float32), rng.uniform(-1.5, 1.5, 32).astype(np.float32)])[:32]
  return x.astype(np.float32)

# ***** snorm / unorm *****
def norm_ref(x: np.ndarray, signed: bool) -> np.ndarray:
  """Direct3D's float -> 16-bit norm: NaN 0, clamp, scale, round to nearest even (np.rint), computed in f64 (exact)."""
  c = np.clip(x.astype(np.float64), -1.0 if signed else 0.0, 1.0)
  r = np.rint(np.nan_to_num(c, nan=0.0) * (32767 if signed else 65535))
  return r.astype(np.int64) & 0xFFFF

NORM_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -7.0, np.nan, np.inf, -np.inf, 0.25, 1 / 3, 1e-5, -1e-5, 1.0 - 2.0 ** -11]

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_norm_conversions(arch: str) -> None:
  """v_cvt_norm_{i,u}16_f16 and v_cvt_pk_norm_{i,u}16_{f16,f32}; ties go to even (0.5 -> 16383.5 -> 16384)."""
  x = f32_lanes(np.random.default_rng(14), NORM_SPECIALS)
  h = x.astype(np.float16)
  hb = h.view(np.uint16).astype(np.uint32)
  w = run("v_cvt_norm_i16_f16 v2, v0\nv_cvt_norm_u16_f16 v3, v0\nv_cvt_pk_norm_i16_f32 v4, v1, v5\nv_cvt_pk_norm_u16_f32 v6, v1, v5\n"
          "v_cvt_pk_norm_i16_f16 v7, v0, v8\nv_cvt_pk_norm_u16_f16 v9, v0, v8", arch,
          vgprs={0: hb, 1: x.view(np.uint32), 5: np.full(32, np.float32(-0.25)).view(np.uint32), 8: np.full(32, 0x3800, np.uint32)})
  np.testing.assert_array_equal(w.v[2], norm_ref(h, True))
  np.testing.assert_array_equal(w.v[3], norm_ref(h, False))
  np.testing.assert_array_equal(w.v[4], norm_ref(x, True) | (-8192 & 0xFFFF) << 16)  # -0.25 * 32767 = -8191.75
  np.testing.assert_array_equal(w.v[6], norm_ref(x, False))  # a negative value is 0 as unorm
  np.testing.assert_array_equal(w.v[7], norm_ref(h, True) | 16384 << 16)  # f16 0.5 in the high half
  np.testing.assert_array_equal(w.v[9], norm_ref(h, False) | 32768 << 16)
  assert [int(w.v[4][i]) & 0xFFFF for i in (4, 5, 8)] + [int(w.v[6][4])] == [16384, 0xC000, 0, 32768]  # hand-computed

# ***** fp8 / bf8 *****
FORMATS = {"fp8": (4, 3, 7), "bf8": (5, 2, 15)}

def f8_value(code: int, fmt: str) -> float:
  """The value of an fp8 (E4M3: no infinities, S.1111.111 NaN) or bf8 (E5M2: IEEE-like) code, from the format's definition."""
  eb, mb, bias = FORMATS[fmt]
  s, e, m = code >> 7, code >> mb & ((1 << eb) - 1), code & ((1 << mb) - 1)
  if fmt == "fp8" and e == 15 and m == 7: return math.nan
  if fmt == "bf8" and e == 31: return math.nan if m else (-math.inf if s else math.inf)
  mag = Fraction(m, 1 << mb) * Fraction(2) ** (1 - bias) if e == 0 else (1 + Fraction(m, 1 << mb)) * Fraction(2) ** (e - bias)
  return float(-mag if s else mag)

def f8_encode(x: float, fmt: str) -> int:
  """The nearest finite code by brute force (ties to the even code); past the largest finite value by more than half a step:
  NaN (0x7F) for fp8, infinity for bf8; NaN is 0x7F / 0x7E. The sign is x's."""
  s = 0x80 if math.copysign(1.0, x) < 0 else 0
  if math.isnan(x): return s | (0x7F if fmt == "fp8" else 0x7E)
  finite = [c for c in range(0x80) if math.isfinite(f8_value(c, fmt))]
  top = max(finite)
  a = abs(x)
  if math.isinf(a): return s | (0x7F if fmt == "fp8" else 0x7C)
  best = min(finite, key=lambda c: (abs(Fraction(a) - Fraction(f8_value(c, fmt))), c & 1))
  step = Fraction(f8_value(top, fmt)) - Fraction(f8_value(top - 1, fmt))
  if Fraction(a) > Fraction(f8_value(top, fmt)) + step / 2 or (Fraction(a) == Fraction(f8_value(top, fmt)) + step / 2 and top & 1):
    return s | (0x7F if fmt == "fp8" else 0x7C)
  return s | best

@pytest.mark.parametrize("fmt", ["fp8", "bf8"])
def test_f8_to_f32_every_code_and_byte(fmt: str) -> None:
  """v_cvt_f32_fp8/bf8 of all 256 codes from each byte (byte_sel), and the packed forms' two halves (op_sel)."""
  codes = np.arange(256, dtype=np.uint32).reshape(8, 32)
  want = np.array([[f8_value(int(c), fmt) for c in row] for row in codes], np.float32)
  pairs = [(sel, chunk) for sel in range(4) for chunk in range(8)]  # v[k] holds the chunk's codes in byte sel, junk in another
  w = run("\n".join(f"v_cvt_f32_{fmt}_e64 v{40 + k}, v{k} byte_sel:{sel}" if sel else f"v_cvt_f32_{fmt} v{40 + k}, v{k}"
                    for k, (sel, chunk) in enumerate(pairs)),
          vgprs={k: codes[chunk] << (8 * sel) | (0x5A << (8 * ((sel + 1) % 4))) for k, (sel, chunk) in enumerate(pairs)})
  for k, (sel, chunk) in enumerate(pairs): np.testing.assert_array_equal(w.v[40 + k].view(np.float32), want[chunk])  # NaN == NaN
  w = run(f"v_cvt_pk_f32_{fmt} v[2:3], v0\nv_cvt_pk_f32_{fmt}_e64 v[4:5], v0 op_sel:[1,0]\nv_cvt_f32_{fmt} v6, s0",
          vgprs={0: codes[1] | codes[2] << 8 | codes[3] << 16 | codes[4] << 24}, sgprs={0: 0x000000C8})
  for reg, row in ((2, 1), (3, 2), (4, 3), (5, 4)): np.testing.assert_array_equal(w.v[reg].view(np.float32), want[row])
  np.testing.assert_array_equal(w.v[6].view(np.float32), np.float32(f8_value(0xC8, fmt)))  # an SGPR source

F8_SPECIALS = [0.0, -0.0, 1.0, -1.5, 448.0, 464.0, 465.0, 480.0, 57344.0, 61439.0, 61440.0, 1e9, np.inf, -np.inf, np.nan,
               2.0 ** -9, 2.0 ** -10, 1.5 * 2.0 ** -10, 2.0 ** -16, 2.0 ** -17, 3 * 2.0 ** -17, 1e-30, 0.3, -0.1]

@pytest.mark.parametrize("fmt", ["fp8", "bf8"])
def test_f32_to_f8_rounds_to_nearest_even(fmt: str) -> None:
  """v_cvt_pk_fp8/bf8_f32 (S0 in the low byte, S1 in the high one; op_sel[3] writes the high half and keeps the low one)."""
  rng = np.random.default_rng(8)
  for x in (f32_lanes(rng, F8_SPECIALS), (rng.standard_normal(32) * rng.choice([1e-4, 1e-2, 1, 100, 3e4], 32)).astype(np.float32)):
    y = np.roll(x, 7)
    w = run(f"v_cvt_pk_{fmt}_f32 v2, v0, v1\nv_cvt_pk_{fmt}_f32 v3, v0, v1 op_sel:[0,0,1]",
            vgprs={0: x.view(np.uint32), 1: y.view(np.uint32), 3: np.full(32, 0xBEEF, np.uint32)})
    want = np.array([f8_encode(float(a), fmt) | f8_encode(float(b), fmt) << 8 for a, b in zip(x, y)], np.uint32)
    np.testing.assert_array_equal(w.v[2], want)
    np.testing.assert_array_equal(w.v[3], want << 16 | 0xBEEF)
  assert [f8_encode(v, "fp8") for v in (464.0, 465.0, 2.0 ** -10)] == [0x7E, 0x7F, 0]  # hand-computed: tie to even, overflow, tie

@pytest.mark.parametrize("fmt,lo", [("fp8", 12), ("bf8", 11)])
def test_stochastic_rounding_adds_to_the_mantissa(fmt: str, lo: int) -> None:
  """v_cvt_sr_fp8/bf8_f32: S1's top bits are added to S0's mantissa (wrapping within it, as the ISA text says), then the value
  is rounded to nearest even into the byte byte_sel picks; the other bytes keep their value."""
  tie = 1.0 + 2.0 ** -(lo - 8)  # halfway between 1.0 and the next value (3 / 2 mantissa bits)
  xs = np.array([tie, tie, 2.0 - 2.0 ** -23, 1.0, -3.0] + [0.0] * 27,
                np.float32)
  rnd = np.array([0, (1 << (32 - lo)) - 1, (1 << (32 - lo)) - 1, 0, 0] + [0] * 27, np.uint32) << lo
  for sel in range(4):
    w = run(f"v_cvt_sr_{fmt}_f32 v2, v0, v1 byte_sel:{sel}" if sel else f"v_cvt_sr_{fmt}_f32 v2, v0, v1",
            vgprs={0: xs.view(np.uint32), 1: rnd, 2: np.full(32, 0x11223344, np.uint32)})
    moved = (xs.view(np.uint32) & 0xFF800000) | ((xs.view(np.uint32) + (rnd >> lo)) & 0x7FFFFF)
    want = np.array([f8_encode(float(v), fmt) for v in moved.view(np.float32)], np.uint32)
    np.testing.assert_array_equal(w.v[2], (0x11223344 & ~(0xFF << 8 * sel)) | want << 8 * sel)
  one, up = (0x38, 0x39) if fmt == "fp8" else (0x3C, 0x3D)
  assert [f8_encode(float(v), fmt) for v in moved.view(np.float32)[:3]] == [one, up, up]  # a tie stays, the random bits carry it up

# ***** v_trig_preop_f64 *****
def two_over_pi_bits(n: int) -> int:
  """floor(2/pi * 2**n) by the Gauss-Legendre iteration in decimal arithmetic."""
  decimal.getcontext().prec = int(n * 0.302) + 40
  D = decimal.Decimal
  a, b, t, p = D(1), D(1) / D(2).sqrt(), D(1) / D(4), D(1)
  for _ in range(12):
    a, b, t, p = (a + b) / 2, (a * b).sqrt(), t - p * ((a - b) / 2) ** 2, 2 * p
  pi = (a + b) ** 2 / (4 * t)
  return int(D(2) * (D(2) ** n) / pi)

def trig_preop_ref(x: float, seg: int) -> float:
  """The ISA's definition: the 53 bits of the 1201-bit fraction of 2/pi after `shift` of them, scaled to their place."""
  exp = struct.unpack("<Q", struct.pack("<d", x))[0] >> 52 & 0x7FF
  shift = seg * 53 + max(exp - 1077, 0)
  window = (two_over_pi_bits(1201) << 64 >> (1148 + 64 - shift)) & ((1 << 53) - 1) if shift <= 1212 else 0
  return math.ldexp(window, -53 - shift + (128 if exp >= 1968 else 0))

def test_trig_preop_segments_of_two_over_pi() -> None:
  xs = [1.0, 3.0, -2.5, 1e10, 2.0 ** 60, 1e300, 2.0 ** 1000, 1.7e308, 2.0 ** 900, 5e-324]
  segs = (0, 1, 2, 7, 20, 22, 31)
  x = np.array((xs * 4)[:32], np.float64)
  w = run("\n".join(f"v_trig_preop_f64 v[{2 + 2 * k}:{3 + 2 * k}], v[0:1], {seg}" for k, seg in enumerate(segs)), "rdna3",
          vgprs={0: x.view(np.uint32)[0::2], 1: x.view(np.uint32)[1::2]})
  for k, seg in enumerate(segs):
    got = (w.v[2 + 2 * k].astype(np.uint64) | w.v[3 + 2 * k].astype(np.uint64) << 32).view(np.float64)
    np.testing.assert_array_equal(got, [trig_preop_ref(float(v), seg) for v in x], err_msg=f"segment {seg}")
  w = run("v_trig_preop_f64 v[2:3], 1.0, 0\nv_trig_preop_f64 v[4:5], 1.0, v6", "rdna4", vgprs={6: LANE})
  assert (int(w.v[2][0]), int(w.v[3][0])) == (0x6DC9C882, 0x3FE45F30)  # 2/pi rounded toward zero (IEEE's nearest is ...883)
  total = sum(Fraction(float((w.v[4].astype(np.uint64) | w.v[5].astype(np.uint64) << 32).view(np.float64)[k])) for k in range(23))
  assert abs(total - Fraction(two_over_pi_bits(1300), 1 << 1300)) < Fraction(1, 1 << 1070)  # the segments add up to 2/pi (as
  # far as f64 reaches: later segments are below its smallest denormal)

@pytest.mark.parametrize("fa,fb", [("fp8", "fp8"), ("fp8", "bf8"), ("bf8", "fp8"), ("bf8", "bf8")])
def test_dot4_of_8bit_floats(fa: str, fb: str) -> None:
  """v_dot4_f32_{fa}_{fb}: S2 plus the four byte products, added in byte order in f32 (each product is exact in f32)."""
  rng = np.random.default_rng(4)
  a, b = (rng.integers(0, 256, (32, 4)).astype(np.uint32) for _ in range(2))
  a[a & 0x7F >= 0x78], b[b & 0x7F >= 0x78] = 0x10, 0x20  # no NaN / infinity codes
  c = rng.standard_normal(32).astype(np.float32)
  w = run(f"v_dot4_f32_{fa}_{fb} v3, v0, v1, v2", vgprs={0: a[:, 0] | a[:, 1] << 8 | a[:, 2] << 16 | a[:, 3] << 24,
                                                        1: b[:, 0] | b[:, 1] << 8 | b[:, 2] << 16 | b[:, 3] << 24, 2: c.view(np.uint32)})
  want = c.copy()
  for k in range(4): want += np.array([f8_value(int(x), fa) * f8_value(int(y), fb) for x, y in zip(a[:, k], b[:, k])], np.float32)
  np.testing.assert_array_equal(w.v[3].view(np.float32), want)

# ***** WMMA of 4-bit ints and 8-bit floats *****
def wmma_operand(codes: np.ndarray, ew: int, arch: str) -> list[np.ndarray]:
  """The VGPRs of a WMMA A operand (B: pass its transpose) of a 16x16 matrix of ew-bit codes: lane l holds row l % 16, all of it
  on RDNA3; on RDNA4 lanes 0-15 hold K 0-7 and lanes 16-31 K 8-15. Elements pack from a VGPR's low bits."""
  rows = codes[LANE % 16].astype(np.uint32)
  if arch == "rdna4": rows = np.where((LANE < 16)[:, None], rows[:, :8], rows[:, 8:])
  per = 32 // ew
  return [sum((rows[:, j * per + i] << (ew * i) for i in range(per)), np.zeros(32, np.uint32)) for j in range(rows.shape[1] // per)]

def cd_rows(arch: str) -> list[np.ndarray]:
  """C/D slot i of lane l: row 2i + l/16 (RDNA3) or 8(l/16) + i (RDNA4), column l % 16."""
  return [2 * i + LANE // 16 if arch == "rdna3" else 8 * (LANE // 16) + i for i in range(8)]

@pytest.mark.parametrize("arch,signed", [("rdna3", (1, 0)), ("rdna4", (0, 1))])
def test_wmma_iu4(arch: str, signed: tuple[int, int]) -> None:
  """v_wmma_i32_16x16x16_iu4: neg_lo[0] / neg_lo[1] read A / B as signed 4-bit ints (else unsigned), C added in i32."""
  rng = np.random.default_rng(44)
  a, b = rng.integers(0, 16, (16, 16)), rng.integers(0, 16, (16, 16))
  c = rng.integers(-1000, 1000, (16, 16))
  n = 2 if arch == "rdna3" else 1
  vg = dict(enumerate(wmma_operand(a, 4, arch), 8)) | dict(enumerate(wmma_operand(b.T, 4, arch), 12))
  vg |= {i: c[rows, LANE % 16].astype(np.uint32) for i, rows in enumerate(cd_rows(arch))}
  w = run(f"v_wmma_i32_16x16x16_iu4 v[16:23], v[8:{7 + n}], v[12:{11 + n}], v[0:7] neg_lo:[{signed[0]},{signed[1]},0]", arch, vgprs=vg)
  sa, sb = (np.where(m >= 8, m - 16, m) if s else m for m, s in ((a, signed[0]), (b, signed[1])))
  d = sa @ sb + c
  for i, rows in enumerate(cd_rows(arch)): np.testing.assert_array_equal(w.v[16 + i].view(np.int32), d[rows, LANE % 16])

@pytest.mark.parametrize("fa,fb", [("fp8", "bf8"), ("bf8", "fp8")])
def test_wmma_8bit_floats(fa: str, fb: str) -> None:
  """RDNA4 v_wmma_f32_16x16x16_{fa}_{fb}: exact products, summed in f32 in K order, then C added."""
  rng = np.random.default_rng(88)
  a, b = (rng.integers(0, 0x70, (16, 16)) | rng.integers(0, 2, (16, 16)) << 7 for _ in range(2))  # finite codes of both formats
  c = rng.standard_normal((16, 16)).astype(np.float32)
  vg = dict(enumerate(wmma_operand(a, 8, "rdna4"), 8)) | dict(enumerate(wmma_operand(b.T, 8, "rdna4"), 12))
  vg |= {i: c[rows, LANE % 16].view(np.uint32) for i, rows in enumerate(cd_rows("rdna4"))}
  w = run(f"v_wmma_f32_16x16x16_{fa}_{fb} v[16:23], v[8:9], v[12:13], v[0:7]", vgprs=vg)
  av = np.vectorize(lambda x: f8_value(int(x), fa))(a).astype(np.float32)
  bv = np.vectorize(lambda x: f8_value(int(x), fb))(b).astype(np.float32)
  d = np.zeros((16, 16), np.float32)
  for k in range(16): d += av[:, k:k + 1] * bv[k:k + 1, :]  # f32 products are exact; the sum rounds at each step
  d += c
  for i, rows in enumerate(cd_rows("rdna4")): np.testing.assert_array_equal(w.v[16 + i].view(np.float32), d[rows, LANE % 16])

# ***** RDNA4's K=32 iu4 WMMA and sparse SWMMAC *****
# Where each element lives, per AMD's RDNA4 matrix layouts (the matrix instruction calculator's tables): lane l holds row (A)
# or column (B) l % 16; (lane half, slot in the lane) of element k of a K-long row/column, and of A's compressed value c.
def dense_place(k: int, ew: int, K: int) -> tuple[int, int]:
  if ew == 16: return (k // 8) % 2, 8 * (k // 16) + k % 8  # 16-bit: blocks of 8 K, lane halves alternating
  return k // (K // 2), k % (K // 2)                       # 8- and 4-bit: lanes 0-15 the first half of K, 16-31 the second

def sparse_place(c: int, ew: int, K: int) -> tuple[int, int]:
  g, s = divmod(c, 2)  # value s of the group of 4 K values g
  if ew == 16: return (g // 2) % 2, 4 * (g // 4) + 2 * (g % 2) + s
  return c // (K // 4), c % (K // 4)

def lane_vgprs(slots: np.ndarray, ew: int) -> list[np.ndarray]:
  """VGPRs (32 lanes each) holding slots[lane, s], ew-bit codes packed from each VGPR's low bits."""
  per = 32 // ew
  return [sum((slots[:, j * per + i].astype(np.uint32) << np.uint32(ew * i) for i in range(per)), np.zeros(32, np.uint32))
          for j in range(slots.shape[1] // per)]

def dense_operand(m: np.ndarray, ew: int) -> list[np.ndarray]:
  """The VGPRs of a 16 x K A operand (B: pass its transpose)."""
  K = m.shape[1]
  slots = np.zeros((32, K // 2), np.uint32)
  for r in range(16):
    for k in range(K): h, s = dense_place(k, ew, K); slots[r + 16 * h, s] = m[r, k]
  return lane_vgprs(slots, ew)

def iu_values(m: np.ndarray, ew: int, signed: int) -> np.ndarray: return np.where(m >= 1 << (ew - 1), m - (1 << ew), m) if signed else m

@pytest.mark.parametrize("signed", [(1, 0), (0, 1)])
def test_wmma_iu4_k32(signed: tuple[int, int]) -> None:
  """v_wmma_i32_16x16x32_iu4: A 16x32 and B 32x16 of 4-bit ints (two VGPRs each), neg_lo[0]/[1] signedness, C added in i32."""
  rng = np.random.default_rng(32)
  a, b, c = rng.integers(0, 16, (16, 32)), rng.integers(0, 16, (32, 16)), rng.integers(-1000, 1000, (16, 16))
  vg = dict(enumerate(dense_operand(a, 4), 8)) | dict(enumerate(dense_operand(b.T, 4), 12))
  vg |= {i: c[rows, LANE % 16].astype(np.uint32) for i, rows in enumerate(cd_rows("rdna4"))}
  w = run(f"v_wmma_i32_16x16x32_iu4 v[16:23], v[8:9], v[12:13], v[0:7] neg_lo:[{signed[0]},{signed[1]},0]", vgprs=vg)
  d = iu_values(a, 4, signed[0]) @ iu_values(b, 4, signed[1]) + c
  for i, rows in enumerate(cd_rows("rdna4")): np.testing.assert_array_equal(w.v[16 + i].view(np.int32), d[rows, LANE % 16])

def bf16_rne(x: np.ndarray) -> np.ndarray:
  """f32 -> bf16 bits, round to nearest even (finite inputs)."""
  u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
  return ((u + 0x7FFF + (u >> 16 & 1)) >> 16).astype(np.uint32)

# (mnemonic, A/B format, D format, K, VGPRs of A, of B); index_key 1 for the K=32 forms (the K=64 one's index fills its VGPR)
SWMMAC = [("v_swmmac_f32_16x16x32_f16", "f16", "f32", 32, 4, 8), ("v_swmmac_f16_16x16x32_f16", "f16", "f16", 32, 4, 8),
          ("v_swmmac_bf16_16x16x32_bf16", "bf16", "bf16", 32, 4, 8), ("v_swmmac_f32_16x16x32_fp8_bf8", "fp8_bf8", "f32", 32, 2, 4),
          ("v_swmmac_i32_16x16x32_iu8", "iu8", "i32", 32, 2, 4), ("v_swmmac_i32_16x16x32_iu4", "iu4", "i32", 32, 1, 2),
          ("v_swmmac_i32_16x16x64_iu4", "iu4", "i32", 64, 2, 4)]

@pytest.mark.parametrize("name,fmt,dfmt,K,na,nb,key", [f + (key,) for f in SWMMAC for key in ((0,) if f[3] == 64 else (0, 1))])
def test_swmmac(name: str, fmt: str, dfmt: str, K: int, na: int, nb: int, key: int) -> None:
  """D = A (16xK, 2 of every 4 K values non-zero, stored compressed) * B (Kx16) + D: each stored value of A times the B element
  its 2-bit position (src2, 16 bits from 16*index_key) picks in its group of 4; sums in K order, then D's old value added."""
  rng = np.random.default_rng(K + key + len(name))
  ew = {"f16": 16, "bf16": 16, "fp8_bf8": 8, "iu8": 8, "iu4": 4}[fmt]
  pos = np.sort(np.array([rng.choice(4, 2, replace=False) for _ in range(16 * K // 4)]).reshape(16, K // 4, 2), axis=2).reshape(16, K // 2)
  if fmt in ("f16", "bf16"):
    av, bv = (rng.uniform(-2, 2, s).astype(np.float16 if fmt == "f16" else np.float32) for s in ((16, K // 2), (K, 16)))
    if fmt == "bf16": av, bv = ((bf16_rne(x) << 16).view(np.float32) for x in (av, bv))
    acode, bcode = ((x.view(np.uint16) if fmt == "f16" else x.view(np.uint32) >> 16) for x in (av, bv))
    af, bf = av.astype(np.float32), bv.astype(np.float32)
  elif fmt == "fp8_bf8":
    acode, bcode = rng.integers(0, 0x70, (16, K // 2)) | rng.integers(0, 2, (16, K // 2)) << 7, rng.integers(0, 0x78, (K, 16))
    af = np.vectorize(lambda x: f8_value(int(x), "fp8"))(acode).astype(np.float32)
    bf = np.vectorize(lambda x: f8_value(int(x), "bf8"))(bcode).astype(np.float32)
  else:
    acode, bcode = rng.integers(0, 1 << ew, (16, K // 2)), rng.integers(0, 1 << ew, (K, 16))
    af, bf = iu_values(acode, ew, 1), iu_values(bcode, ew, 0)
  aslots = np.zeros((32, K // 4), np.uint32)
  index = rng.integers(0, 1 << 16, 32).astype(np.uint32) << (16 * (1 - key)) if K == 32 else np.zeros(32, np.uint32)  # junk in the other half
  for r in range(16):
    for c in range(K // 2):
      h, s = sparse_place(c, ew, K)
      aslots[r + 16 * h, s] = acode[r, c]
      index[r + 16 * h] |= np.uint32(pos[r, c] << (2 * s + 16 * key))
  c0 = rng.integers(-1000, 1000, (16, 16)) if dfmt == "i32" else rng.uniform(-4, 4, (16, 16)).astype(np.float32)
  if dfmt == "f16": c0 = c0.astype(np.float16).astype(np.float32)
  if dfmt == "bf16": c0 = (bf16_rne(c0) << 16).view(np.float32)
  vg = dict(enumerate(lane_vgprs(aslots, ew), 8)) | dict(enumerate(dense_operand(bcode.T, ew), 12)) | {30: index}
  cbits = [c0[rows, LANE % 16].astype(np.int64).astype(np.uint32) if dfmt == "i32" else c0[rows, LANE % 16].astype(np.float32).view(np.uint32)
           for rows in cd_rows("rdna4")]
  if dfmt in ("f16", "bf16"):
    halves = [c0[rows, LANE % 16].astype(np.float16).view(np.uint16).astype(np.uint32) if dfmt == "f16" else cb >> 16
              for rows, cb in zip(cd_rows("rdna4"), cbits)]
    cbits = [halves[2 * j] | halves[2 * j + 1] << 16 for j in range(4)]
  vg |= {40 + i: x for i, x in enumerate(cbits)}
  nd = 4 if dfmt in ("f16", "bf16") else 8
  w = run(f"{name} v[40:{39 + nd}], v[8:{7 + na}], v[12:{11 + nb}], v30{' index_key:1' if key else ''}"
          f"{' neg_lo:[1,0,0]' if fmt.startswith('iu') else ''}", vgprs=vg)
  d = np.zeros((16, 16), np.int64 if dfmt == "i32" else np.float32)
  for c in range(K // 2):  # products exact, summed in K order (positions ascend within a group)
    k = 4 * (c // 2) + pos[:, c]
    d += af[:, c:c + 1] * bf[k, :]
  d += c0
  for i, rows in enumerate(cd_rows("rdna4")):
    if dfmt == "i32": np.testing.assert_array_equal(w.v[40 + i].view(np.int32), d[rows, LANE % 16])
    elif dfmt == "f32": np.testing.assert_array_equal(w.v[40 + i].view(np.float32), d[rows, LANE % 16])
    else:
      got = w.v[40 + i // 2] >> (16 * (i % 2)) & 0xFFFF
      want = d[rows, LANE % 16].astype(np.float16).view(np.uint16) if dfmt == "f16" else bf16_rne(d[rows, LANE % 16])
      np.testing.assert_array_equal(got, want)
