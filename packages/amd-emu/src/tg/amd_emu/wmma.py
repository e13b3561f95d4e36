"""WMMA and SWMMAC shapes: the pseudocode only says D = A * B + C, so the matrices come from the ISA's register layouts.

A wave holds each matrix across its lanes' VGPRs. A (16 rows x K) and B (K x 16 columns): lane l holds row (A) or column
(B) l % 16. On RDNA3 each lane holds all 16 K elements (lanes 16-31 repeat lanes 0-15, lanes 0-15 are read). On RDNA4 the
K elements go to the lane halves in blocks of at most 128 bits: block b of a row is in lanes 0-15 for even b, 16-31 for odd
b, the blocks of a half following each other in its VGPRs (K=16: lanes 0-15 hold K 0-7, lanes 16-31 K 8-15; 16-bit K=32:
lanes 0-15 hold K 0-7 then 16-23; 8-bit and iu4 K=32: lanes 0-15 hold K 0-15, lanes 16-31 K 16-31). Elements pack into a
VGPR from its low bits (two 16-bit, four 8-bit or eight 4-bit ones).
C and D: lane l holds column l % 16, its slot i is row 2i + l/16 on RDNA3 and row 8*(l/16) + i on RDNA4. A 32-bit slot is
a VGPR; 16-bit slots pack two a VGPR on RDNA4, and on RDNA3 each takes the half of a VGPR op_sel[2] picks (for C and D),
the other half of D keeping its value. The iu8/iu4 forms' neg_lo[0] / neg_lo[1] make A / B signed; clamp saturates the i32 sum.
RDNA4's fp8/bf8 forms name A's format, then B's (V_WMMA_F32_16X16X16_FP8_BF8: A fp8, B bf8).
RDNA4's SWMMAC (sparse A, 2 of every 4 K values non-zero): A holds each group of 4 compressed to its 2 values, in the dense
layout with half-size blocks; src2 is a VGPR of 2-bit positions (0-3 in the group), one per value of A in the lane that holds
it, in the order of its A slots, from bit 16*index_key (index_key is op_sel[0]); C is D itself (D = A * B + D).
Products are exact in f32 (f16 x f16, bf16 x bf16, 8-bit floats) and are summed in K order, then C is added; 16-bit results round to
nearest even. D must not overlap A or B (as on hardware): each lane writes its D while other lanes still read A and B.
"""
from __future__ import annotations
import functools
import operator
import re
from dataclasses import dataclass
from tg.uop import UOp, Ops, dtypes, AxisType, f32_to_bf16_bits
from .inst import Inst
from .pcode_uops import Unsupported, V
from .operands import FLOAT_CONSTS
from .shapes import Builder, InstCtx, WAVE
from .numfmt import f8_to_f32

NAME = re.compile(r"V_(WMMA|SWMMAC)_(F32|F16|BF16|I32)_16X16X(16|32|64)_(F16|BF16|IU8|IU4|FP8|BF8)(?:_(FP8|BF8))?")
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

@dataclass(frozen=True)
class Form:
  """What an opcode's name says: D's, A's and B's formats, K, whether A is sparse, and which arch's layouts apply."""
  dfmt: str
  fmts: dict[str, str]  # src0 (A) and src1 (B) element formats
  k: int
  sparse: bool
  rdna4: bool

  @staticmethod
  def of(inst: Inst) -> Form:
    m = NAME.fullmatch(inst.op.name)
    if m is None: raise Unsupported(f"{inst.op.name} is not emulated")
    kind, dfmt, k, afmt, bfmt = m.groups()
    return Form(dfmt, {"src0": afmt, "src1": bfmt or afmt}, int(k), kind == "SWMMAC", inst.op.arch == "rdna4")

  @property
  def integer(self) -> bool: return self.fmts["src0"].startswith("IU")
  @property
  def ew(self) -> int: return ELEMENT_BITS.get(self.fmts["src0"], 16)  # bits of an A/B element
  @property
  def half16(self) -> bool: return self.dfmt in ("F16", "BF16")
  @property
  def block(self) -> int:
    """Elements of a row (A) or column (B) per lane-half block (RDNA4); RDNA3 keeps all K in one lane."""
    return min(self.k // 2, 128 // self.ew) if self.rdna4 else self.k

def place(k: int, block: int) -> tuple[int, int]:
  """(lane half, element slot in the lane) of element k of a row or column laid out in blocks of `block` elements."""
  return (k // block) % 2, (k // (2 * block)) * block + k % block

def check_modifiers(form: Form, vals: dict[str, int]) -> int:
  """The modifiers the emulator runs (clamp on i32, neg_lo[0:1] as signedness on integers, op_sel[2] on RDNA3's 16-bit
  C/D, SWMMAC's index_key); the op_sel bit that picks RDNA3's 16-bit half, or SWMMAC's index key."""
  if vals.get("clmp") and form.dfmt != "I32": raise Unsupported("clamp on a float WMMA")
  if (vals.get("neg") and not form.integer) or vals.get("neg_hi") or (form.integer and vals.get("neg", 0) & 4):
    raise Unsupported("WMMA neg/abs modifiers")
  opsel = vals.get("opsel", 0)
  if form.sparse:  # index_key 1: the high 16 bits of the index VGPR, when a lane's positions fit in 16
    if opsel & ~1 or (opsel and form.k // 2 > 16): raise Unsupported("op_sel on SWMMAC other than index_key 0/1")
    return opsel
  hi = opsel >> 2 & 1  # RDNA3 16-bit C/D: the half of each VGPR
  if hi and (form.rdna4 or not form.half16): raise Unsupported("op_sel on this WMMA")
  return hi

class Matrices:
  """The operands of one lane of a (S)WMMA instruction as UOps: A and B elements, the sparsity index, C's slots."""
  def __init__(self, inst: Inst, form: Form, b: Builder, lane: UOp, sel: int):
    self.form, self.b, self.lane, self.sel, self.vals = form, b, lane, sel, inst.vals
    self.ctx = ctx = InstCtx(inst, b, lane)
    for f in ("src0", "src1", "vdst") + (("src2",) if form.sparse else ()):
      if ctx.kind(f)[0] != "v": raise Unsupported(f"WMMA {f} that is not a VGPR")
    self.c_kind = ctx.kind("src2")
    if self.c_kind[0] not in ("v", "c"): raise Unsupported("WMMA C that is not a VGPR or an inline constant")

  def raw(self, src: str, idx: UOp, k: int, block: int) -> UOp:
    """The bits of element k of row/column idx of src, in lane idx or idx + 16 (its block's half)."""
    ew = self.form.ew
    half, slot = place(k, block)
    word = self.b.ld(self.ctx.vgpr_idx(self.ctx.var(src), slot // (32 // ew), idx + 16 * half))
    return (word >> u32(ew * (slot % (32 // ew)))) & u32((1 << ew) - 1)

  def value(self, src: str, raw: UOp) -> UOp:
    """An element converted for the products: f32, or i64 for iu8/iu4 (signed when neg_lo says so)."""
    fmt, ew = self.form.fmts[src], self.form.ew
    if fmt in ("FP8", "BF8"): return f8_to_f32(V(raw, "u", 32), fmt.lower()).u
    if not self.form.integer: return to_f32(raw, fmt)
    if self.vals.get("neg", 0) >> (src == "src1") & 1: raw = (raw ^ u32(1 << (ew - 1))) - u32(1 << (ew - 1))  # sign-extended
    return raw.bitcast(dtypes.int32).cast(dtypes.int64)

  def element(self, src: str, idx: UOp, k: int) -> UOp: return self.value(src, self.raw(src, idx, k, self.form.block))

  def dense_products(self, row: UOp, col: UOp) -> list[UOp]:
    return [self.element("src0", row, k) * self.element("src1", col, k) for k in range(self.form.k)]

  def sparse_products(self, row: UOp, col: UOp) -> list[UOp]:
    """Each of A's K/2 stored values times the B element its 2-bit index picks in its group of 4."""
    out = []
    for c in range(self.form.k // 2):
      half, slot = place(c, self.form.block // 2)
      index = self.b.ld(self.ctx.vgpr_idx(self.ctx.var("src2"), 0, row + 16 * half))
      pos = (index >> u32(2 * slot + 16 * self.sel)) & u32(3)
      group = [self.element("src1", col, 4 * (c // 2) + p) for p in range(4)]
      bk = functools.reduce(lambda acc, p: pos.eq(u32(p)).where(group[p], acc), range(1, 4), group[0])
      out.append(self.value("src0", self.raw("src0", row, c, self.form.block // 2)) * bk)
    return out

  def slot_word(self, i: int) -> tuple[int, int]:
    """(VGPR offset, bit shift) of C/D slot i."""
    if not self.form.half16: return i, 0
    return (i // 2, 16 * (i % 2)) if self.form.rdna4 else (i, 16 * self.sel)

  def c_element(self, i: int) -> UOp:
    """Slot i of C (SWMMAC: of D), converted like the products."""
    if not self.form.sparse and self.c_kind[0] == "c": return const_value(self.c_kind[1], self.form.dfmt)
    reg, shift = self.slot_word(i)
    word = self.b.ld(self.ctx.vgpr_idx(self.ctx.var("vdst" if self.form.sparse else "src2"), reg))
    if self.form.dfmt == "I32": return word.bitcast(dtypes.int32).cast(dtypes.int64)
    return word.bitcast(dtypes.float32) if self.form.dfmt == "F32" else to_f32((word >> u32(shift)) & u32(0xFFFF), self.form.dfmt)

  def result(self, total: UOp) -> UOp:
    """A slot of D as its 32 bits (a 16-bit result in the low half): i32 saturated under clamp, floats rounded."""
    if self.form.dfmt == "I32":
      return (total.maximum(-(1 << 31)).minimum((1 << 31) - 1) if self.vals.get("clmp") else total).cast(dtypes.uint32)
    return total.bitcast(dtypes.uint32) if self.form.dfmt == "F32" else from_f32(total, self.form.dfmt)

  def d_words(self, results: list[UOp]) -> dict[int, UOp]:
    """D's VGPRs by offset: 16-bit slots pair up (RDNA4) or go to one half, the other half of D kept (RDNA3)."""
    if not self.form.half16: return dict(enumerate(results))
    if self.form.rdna4: return {j: results[2 * j] | (results[2 * j + 1] << u32(16)) for j in range(4)}
    keep = u32(0xFFFF << 16 * (1 - self.sel))
    return {i: self.b.ld(self.ctx.vgpr_idx(self.ctx.var("vdst"), i)) & keep | (r << u32(16 * self.sel)) for i, r in enumerate(results)}

def build_wmma(inst: Inst) -> UOp:
  """The kernel SINK of a WMMA or SWMMAC instruction: a loop over lanes, each computing its 8 slots of D."""
  form = Form.of(inst)
  sel = check_modifiers(form, inst.vals)
  b, lane = Builder(), UOp.range(WAVE, 0, AxisType.LOOP)
  mx = Matrices(inst, form, b, lane, sel)
  col, results = lane % 16, []
  for i in range(8):
    row = 8 * (lane // 16) + i if form.rdna4 else lane // 16 + 2 * i
    products = mx.sparse_products(row, col) if form.sparse else mx.dense_products(row, col)
    results.append(mx.result(functools.reduce(operator.add, products) + mx.c_element(i)))
  gate = mx.ctx.exec_bit().u
  words = mx.d_words(results)
  loads = tuple(b.loads)  # every load, D's kept halves too, before any store
  stores = [UOp(Ops.INDEX, dtypes.uint32, (b.st.after(*loads), mx.ctx.vgpr_idx(mx.ctx.var("vdst"), j), gate)).store(w) for j, w in words.items()]
  return UOp.sink(UOp.group(*stores).end(lane))
