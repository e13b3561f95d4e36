"""WMMA shapes: the pseudocode only says D = A (16x16) * B (16x16) + C, so the matrices come from the ISA's register layouts.

A wave holds each 16x16 matrix across its lanes' VGPRs. A (rows x K) and B (K x columns): lane l holds row (A) or column
(B) l % 16; on RDNA3 each lane holds all 16 K elements (lanes 16-31 repeat lanes 0-15, lanes 0-15 are read), on RDNA4 lanes
0-15 hold K 0-7 and lanes 16-31 K 8-15. Elements pack into a VGPR from its low bits (two 16-bit, four 8-bit or eight 4-bit ones).
C and D: lane l holds column l % 16, its slot i is row 2i + l/16 on RDNA3 and row 8*(l/16) + i on RDNA4. A 32-bit slot is
a VGPR; 16-bit slots pack two a VGPR on RDNA4, and on RDNA3 each takes the half of a VGPR op_sel[2] picks (for C and D),
the other half of D keeping its value. The iu8/iu4 forms' neg_lo[0] / neg_lo[1] make A / B signed; clamp saturates the i32 sum.
RDNA4's fp8/bf8 forms name A's format, then B's (V_WMMA_F32_16X16X16_FP8_BF8: A fp8, B bf8).
Products are exact in f32 (f16 x f16, bf16 x bf16, 8-bit floats) and are summed in K order, then C is added; 16-bit results round to
nearest even. D must not overlap A or B (as on hardware): each lane writes its D while other lanes still read A and B.
"""
from __future__ import annotations
import functools
import operator
import re
from tg.uop import UOp, Ops, dtypes, AxisType, f32_to_bf16_bits
from .inst import Inst
from .pcode_uops import Unsupported, V
from .operands import FLOAT_CONSTS
from .shapes import Builder, InstCtx, WAVE
from .numfmt import f8_to_f32

NAME = re.compile(r"V_WMMA_(F32|F16|BF16|I32)_16X16X16_(F16|BF16|IU8|IU4|FP8|BF8)(?:_(FP8|BF8))?")
ELEMENT_BITS = {"IU8": 8, "FP8": 8, "BF8": 8, "IU4": 4}

def u32(x: int) -> UOp: return UOp.const(dtypes.uint32, x)

def to_f32(raw: UOp, fmt: str) -> UOp:
  """A 16-bit float (raw bits in a uint32) as f32."""
  if fmt == "BF16": return (raw << u32(16)).bitcast(dtypes.float32)
  return raw.cast(dtypes.uint16).bitcast(dtypes.float16).cast(dtypes.float32)

def from_f32(x: UOp, fmt: str) -> UOp:
  """An f32 rounded to nearest even as a 16-bit float's bits (in a uint32); a bf16 NaN stays a quiet NaN."""
  if fmt == "F16": return x.cast(dtypes.float16).bitcast(dtypes.uint16).cast(dtypes.uint32)
  return f32_to_bf16_bits(x)

def const_value(code: int, dfmt: str) -> UOp:
  """An inline constant C (src2): every element of the C matrix, as f32 (or i64 for i32)."""
  if dfmt == "I32" and 128 <= code <= 208: return UOp.const(dtypes.int64, code - 128 if code <= 192 else 192 - code)
  if code in FLOAT_CONSTS and dfmt != "I32": return UOp.const(dtypes.float32, FLOAT_CONSTS[code])
  if code == 128: return UOp.const(dtypes.float32, 0.0)
  raise Unsupported(f"WMMA C operand code {code}")

def build_wmma(inst: Inst) -> UOp:
  """The kernel SINK of a WMMA instruction: a loop over lanes, each computing its 8 slots of D."""
  m = NAME.fullmatch(inst.op.name)
  if m is None: raise Unsupported(f"{inst.op.name} is not emulated")
  dfmt, afmt, bfmt = m.groups()
  fmts = {"src0": afmt, "src1": bfmt or afmt}
  integer = afmt.startswith("IU")
  vals = inst.vals
  if vals.get("clmp") and dfmt != "I32": raise Unsupported("clamp on a float WMMA")
  if (vals.get("neg") and not integer) or vals.get("neg_hi") or (integer and vals.get("neg", 0) & 4):
    raise Unsupported("WMMA neg/abs modifiers")
  rdna4 = inst.op.arch == "rdna4"
  b = Builder()
  lane = UOp.range(WAVE, 0, AxisType.LOOP)
  ctx = InstCtx(inst, b, lane)
  for f in ("src0", "src1", "vdst"):
    if ctx.kind(f)[0] != "v": raise Unsupported(f"WMMA {f} that is not a VGPR")
  ew = ELEMENT_BITS.get(afmt, 16)  # bits of an A/B element
  per_lane, per_reg = (8 if rdna4 else 16), 32 // ew

  def element(src: str, idx: UOp, k: int) -> UOp:
    """Element k of row idx (A) or column idx (B), converted for the products (f32, or i64 for iu8/iu4)."""
    s = k % per_lane
    word = b.ld(ctx.vgpr_idx(ctx.var(src), s // per_reg, idx + 16 * (k // per_lane)))
    raw = (word >> u32(ew * (s % per_reg))) & u32((1 << ew) - 1)
    if fmts[src] in ("FP8", "BF8"): return f8_to_f32(V(raw, "u", 32), fmts[src].lower()).u
    if not integer: return to_f32(raw, fmts[src])
    if vals.get("neg", 0) >> (src == "src1") & 1: raw = (raw ^ u32(1 << (ew - 1))) - u32(1 << (ew - 1))  # sign-extended
    return raw.bitcast(dtypes.int32).cast(dtypes.int64)

  half16 = dfmt in ("F16", "BF16")
  hi = vals.get("opsel", 0) >> 2 & 1  # RDNA3 16-bit C/D: the half of each VGPR
  if hi and (rdna4 or not half16): raise Unsupported("op_sel on this WMMA")
  def slot_word(i: int) -> tuple[int, int]:
    """(VGPR offset, bit shift) of C/D slot i."""
    if not half16: return i, 0
    return (i // 2, 16 * (i % 2)) if rdna4 else (i, 16 * hi)

  c_kind = ctx.kind("src2")
  if c_kind[0] not in ("v", "c"): raise Unsupported("WMMA C that is not a VGPR or an inline constant")
  def c_element(i: int) -> UOp:
    """Slot i of C, converted like the products."""
    if c_kind[0] == "c": return const_value(c_kind[1], dfmt)
    reg, shift = slot_word(i)
    word = b.ld(ctx.vgpr_idx(ctx.var("src2"), reg))
    if dfmt == "I32": return word.bitcast(dtypes.int32).cast(dtypes.int64)
    return word.bitcast(dtypes.float32) if dfmt == "F32" else to_f32((word >> u32(shift)) & u32(0xFFFF), dfmt)

  col = lane % 16
  results: list[UOp] = []
  for i in range(8):
    row = 8 * (lane // 16) + i if rdna4 else lane // 16 + 2 * i
    total = functools.reduce(operator.add, (element("src0", row, k) * element("src1", col, k) for k in range(16))) + c_element(i)
    if dfmt == "I32": results.append((total.maximum(-(1 << 31)).minimum((1 << 31) - 1) if vals.get("clmp") else total).cast(dtypes.uint32))
    else: results.append(total.bitcast(dtypes.uint32) if dfmt == "F32" else from_f32(total, dfmt))

  gate = ctx.exec_bit().u
  if not half16: words = dict(enumerate(results))
  elif rdna4: words = {j: results[2 * j] | (results[2 * j + 1] << u32(16)) for j in range(4)}
  else: words = {i: b.ld(ctx.vgpr_idx(ctx.var("vdst"), i)) & u32(0xFFFF << 16 * (1 - hi)) | (r << u32(16 * hi)) for i, r in enumerate(results)}
  loads = tuple(b.loads)
  stores = [UOp(Ops.INDEX, dtypes.uint32, (b.st.after(*loads), ctx.vgpr_idx(ctx.var("vdst"), j), gate)).store(w) for j, w in words.items()]
  return UOp.sink(UOp.group(*stores).end(lane))
