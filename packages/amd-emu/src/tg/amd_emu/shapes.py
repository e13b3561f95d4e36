"""Instruction shapes: one UOp kernel per (opcode, format, operand kinds, modifiers), rendered to a C function.

Register numbers, literals and offsets are the shape's variables (C arguments), so `v_add_f32 v1, v2, v3` and
`v_add_f32 v7, v0, v9` share a shape. The wave's state is one uint32 array (layout below); memory is reached
through host addresses: a 128-entry sorted range table translates a GPU address and validates it, and a failed
check records a memory fault in the state instead of touching memory.
"""
from __future__ import annotations
import functools
import re
from dataclasses import dataclass
from typing import Any, Callable
from tg.uop import UOp, Ops, dtypes
from .inst import Inst
from .isa import get_arch, Op
from .pcode_uops import FBITS, V, Wide, Interp, Unsupported, const, conv, bits, from_bits, resize, alu, binop, truth, const_name, select, \
  join_words, slice_bits, UDT
from .operands import FLOAT_CONSTS, INV_2PI, float_bits
from .pcode import PcodeError
from . import buffer, dpp, numfmt

# state layout (uint32 words)
SCC, PC, FAULT, FAULT_ADDR, LDS_BASE, SCRATCH_BASE, SCRATCH_SIZE, LDS_SIZE = 128, 129, 132, 133, 140, 142, 144, 145
BARRIER_TABLE = 146  # the host address (2 words) of the workgroup's 64 barrier words (barrier.py)
TMPBITS, HWREG, VGPR, NVGPR = 160, 192, 256, 256  # HWREG: the 64 hardware registers s_getreg/s_setreg reach (MODE is 1)
HWREG_MODE = 1
WRITABLE_HWREGS = {"rdna3": (1, 3), "rdna4": (1, 18, 19)}  # MODE, TRAPSTS / MODE, EXCP_FLAG_USER, TRAP_CTRL
ST_WORDS = VGPR + NVGPR * 32
TAB = 1024  # memory ranges in the translation table: lo[TAB], hi[TAB], delta[TAB] (uint64)
WAVE = 32
SHARED_HI, PRIVATE_HI = 0x10000000, 0x20000000  # FLAT apertures: the high 32 bits of LDS and scratch flat addresses
APERTURES = {235: SHARED_HI << 32, 236: (SHARED_HI << 32) | 0xFFFFFFFF, 237: PRIVATE_HI << 32, 238: (PRIVATE_HI << 32) | 0xFFFFFFFF}
MEM_FMTS = ("DS", "FLAT", "GLOBAL", "SCRATCH", "VFLAT", "VGLOBAL", "VSCRATCH", "SMEM") + buffer.FORMATS
VAR_BITS = ("offset", "offset0", "offset1", "ioffset", "simm16", "literal")

def pair64(lo: UOp, hi: UOp) -> UOp:
  """A 64-bit value from two 32-bit register words."""
  return lo.cast(dtypes.uint64) | (hi.cast(dtypes.uint64) << UOp.const(dtypes.uint64, 32))

def is_vector(op: Op) -> bool:
  return op.fmt.split("_")[0] in ("VOP1", "VOP2", "VOP3", "VOP3SD", "VOP3P", "VOPC", "VOPD", "VINTERP", "DS", "FLAT", "GLOBAL", "SCRATCH",
                                  "VFLAT", "VGLOBAL", "VSCRATCH") + buffer.FORMATS

def lane_loop(op: Op) -> bool:
  """Per-lane pseudocode runs in a loop over lanes; pseudocode that walks the lanes itself (readlane, permlane) runs once, and so do
  RDNA4's scalar transcendentals (v_s_sqrt_f32 & co.: SGPR in, SGPR out, one value, not a lane mask)."""
  return is_vector(op) and not op.name.startswith("V_S_") and not re.search(r"VGPR\[(?!\(?laneId)", op.pcode or "")

def field_kind(inst: Inst, name: str) -> tuple:
  """How a field enters the shape: a variable register, a baked constant code, or a baked modifier value."""
  f = inst.fmt.by_name[name]
  raw = inst.vals[name]
  if f.kind in ("src", "ssrc"):
    if raw < 124 or raw in (125, 126, 127): return ("s", hi16(inst, name, raw))
    if raw >= 256: return ("v", hi16(inst, name, raw))
    if raw == 255: return ("lit",)
    # an inline integer (0..64, -1..-16) is a variable, so one shape serves them all; WMMA's C folds its constant (wmma.py)
    if INLINE_INT[0] <= raw <= INLINE_INT[1] and not inst.op.name.startswith("V_WMMA"): return ("i",)
    return ("c", raw)
  if f.kind in ("vgpr", "vdsty"): return ("v", hi16(inst, name, raw + 256))
  if f.kind in ("sgpr", "sbase", "srsrc"): return ("s", raw == 124)
  if name in VAR_BITS and not (inst.op.name == "DS_SWIZZLE_B32" and name.startswith("offset")): return ("n",)  # the pattern is baked
  return ("c", raw)

def hi16(inst: Inst, name: str, code: int) -> bool:
  """A 16-bit VGPR operand of a VOP1/VOP2/VOPC encoding names its high half as v[n] + 128."""
  return inst.fmt.base in ("VOP1", "VOP2", "VOPC") and code >= 384 and inst.operand(name).half16

@dataclass(frozen=True)
class FloatMode:
  """The float mode a dispatch sets from its kernel descriptor's rsrc1: FLOAT_DENORM_MODE_32 (bit 0 keeps input f32
  denormals, bit 1 output ones; 0 flushes both), FLOAT_DENORM_MODE_16_64 (the same for f16 and f64 operands) and IEEE mode
  (RDNA3 only), in which the hardware ignores omod. Flushing applies to scalar f16/f32/f64 operands (not packed halves)."""
  denorm32: int = 3
  ieee: bool = True

  round: int = 0
  denorm16_64: int = 3

  @staticmethod
  def of(rsrc1: int, arch: str) -> FloatMode:
    return FloatMode(rsrc1 >> 16 & 3, arch == "rdna3" and bool(rsrc1 >> 23 & 1), rsrc1 >> 12 & 15, rsrc1 >> 18 & 3)

  @property
  def mode_reg(self) -> int:
    """The MODE hardware register a wave starts with (what s_getreg reads): round, denorm, DX10 clamp and IEEE bits."""
    return self.round | self.denorm32 << 4 | self.denorm16_64 << 6 | 1 << 8 | int(self.ieee) << 9

  def denorm(self, dfmt: str) -> int | None:
    """The denormal bits that govern an operand of this data format (None: not a scalar float operand)."""
    return self.denorm32 if dfmt == "FMT_NUM_F32" else self.denorm16_64 if dfmt in ("FMT_NUM_F16", "FMT_NUM_F64") else None

  def flushes(self, dfmt: str, bit: int) -> bool:
    """Whether operands of this format are flushed on input (bit 1) or output (bit 2)."""
    d = self.denorm(dfmt)
    return d is not None and not d & bit

  def key(self, inst: Inst) -> tuple:
    """The parts of the mode an instruction's result depends on (so shapes are shared across modes where they can be)."""
    fmts = {o.dfmt for o in inst.op.operands.values()}
    d32 = self.denorm32 if "FMT_NUM_F32" in fmts and self.denorm32 != 3 else None
    d16 = self.denorm16_64 if fmts & {"FMT_NUM_F16", "FMT_NUM_F64"} and self.denorm16_64 != 3 else None
    return (self.ieee if inst.vals.get("omod") else None, d32, d16)

DEFAULT_MODE = FloatMode()

INLINE_INT = (128, 208)

def inline_int(code: int) -> int:
  """The value of an inline integer constant's source code."""
  return code - 128 if code <= 192 else 192 - code

def shape_kinds(inst: Inst) -> tuple:
  """(field, field_kind) of every field: what shape_key and shape_args both read (computed once per instruction)."""
  return tuple((f.name, field_kind(inst, f.name)) for f in inst.fmt.values)

def shape_key(inst: Inst, mode: FloatMode = DEFAULT_MODE, kinds: tuple | None = None) -> tuple:
  return (inst.op.arch, inst.op.name, inst.fmt.name) + (kinds if kinds is not None else shape_kinds(inst)) + mode.key(inst)

def shape_args(inst: Inst, kinds: tuple | None = None) -> dict[str, int]:
  """The variables' values by field name (the shape's C function takes them as v_FIELD)."""
  out = {}
  for f, (_, k) in zip(inst.fmt.values, kinds if kinds is not None else shape_kinds(inst)):
    if k[0] in ("s", "v", "lit", "n", "i"):
      raw = inst.vals[f.name]
      if k[0] == "v":
        raw = raw - 256 if f.kind in ("src", "ssrc") else raw
        if f.kind == "vdsty": raw = (raw << 1) | (~inst.vals["vdstx"] & 1)
        if k[1]: raw -= 128
      if k[0] == "n" and f.signed and raw >> (f.width - 1): raw -= 1 << f.width
      if k[0] == "i": raw = inline_int(raw)
      out[f.name] = raw
  return out

class Builder:
  """Holds the kernel's buffers and collects its loads and stores, so stores can be ordered after every load."""
  def __init__(self) -> None:
    self.st = UOp.param(0, dtypes.uint32, ST_WORDS)
    self.mem = UOp.param(1, dtypes.uint8, 1)
    self.tab = UOp.param(2, dtypes.uint64, 3 * TAB)
    self.loads: list[UOp] = []
    self.stores: list[tuple[UOp, UOp, UOp, UOp | None]] = []  # (buffer, index, value, gate)

  def load(self, buf: UOp, idx: UOp) -> UOp:
    u = UOp(Ops.LOAD, buf.dtype.base, (UOp(Ops.INDEX, buf.dtype.base, (buf, idx)),))
    self.loads.append(u)
    return u

  def ld(self, i: UOp | int) -> UOp: return self.load(self.st, i if isinstance(i, UOp) else UOp.const(dtypes.index, i))

  def store(self, i: UOp | int, val: UOp, gate: UOp | None = None) -> None:
    self.stores.append((self.st, i if isinstance(i, UOp) else UOp.const(dtypes.index, i), val, gate))

class InstCtx:
  """Maps the pseudocode's names (S0, D0, VCC, MEM, ...) onto one instruction's registers and memory."""
  def __init__(self, inst: Inst, b: Builder, lane: UOp | None, half: str = "", op: Op | None = None, mode: FloatMode = DEFAULT_MODE):
    self.inst, self.op, self.b, self.lane_u, self.mode = inst, op or inst.op, b, lane, mode
    self.arch = get_arch(inst.op.arch)
    self.fam = "VOP3" if inst.fmt.base == "VOP3_SDST" else inst.fmt.base  # VOPC in VOP3 takes VOP3's abs/neg/op_sel
    self.half = half  # "x" / "y" for the halves of a VOPD
    self.lane = None if lane is None else V(lane.cast(dtypes.uint32), "u", 32)
    self.vars: dict[str, UOp] = {}
    self.mem_faults: list[UOp] = []
    pc = self.op.pcode or ""
    self.vcc_is_src2 = self.op.operands.get("src2") is not None and self.op.operands["src2"].otype == "OPR_SREG"
    vd = self.op.operands.get("vdst")
    self.d0_mask = is_vector(self.op) and lane is not None and ((vd is not None and vd.otype in ("OPR_SREG", "OPR_SDST")) or
                                                               self.op.fmt == "VOPC") and "D0" in pc
    self.lane_masks = frozenset({"VCC", "EXEC", "EXEC_LO"} | ({"D0"} if self.d0_mask else set()))
    self.regs = frozenset({"D0", "D1", "SCC", "VCC", "EXEC", "EXEC_LO", "M0", "PC"})
    self.stores_vdata = "VDATA" in pc and re.search(r"^\s*VDATA\b[^=\n]*=(?!=)", pc, re.M) is None
    self.uses_offset = re.search(r"\bOFFSET\d?\b", pc) is not None
    self.dpp = self.dpp_lanes() if "_DPP" in inst.fmt.name else None

  # ***** fields and registers *****
  def fname(self, name: str) -> str:
    if self.half and name in ("src0", "vsrc1", "vdst"):
      return {"src0": f"src{self.half}0", "vsrc1": f"vsrc{self.half}1", "vdst": f"vdst{self.half}"}[name]
    return name

  def has(self, name: str) -> bool: return self.fname(name) in self.inst.fmt.by_name

  def var(self, name: str) -> UOp:
    name = self.fname(name)
    if name not in self.vars: self.vars[name] = UOp.variable(f"f_{name}", -(1 << 31), (1 << 32) - 1)
    return self.vars[name]

  def kind(self, name: str) -> tuple: return field_kind(self.inst, self.fname(name))

  def dpp_lanes(self) -> tuple[UOp, UOp | None, UOp | None]:
    """(source lane of src0, whether it is valid (None: always), whether this lane writes (None: as EXEC says))."""
    if self.lane is None: raise Unsupported("DPP outside a lane loop")
    lane = self.lane.u
    src, valid = dpp.source_lane(self.inst, lane)
    src = src & UOp.const(dtypes.uint32, WAVE - 1)
    if not dpp.fetch_inactive(self.inst):
      active = ((self.b.ld(126) >> src) & UOp.const(dtypes.uint32, 1)).ne(UOp.const(dtypes.uint32, 0))
      valid = active if valid is None else valid & active
    write = dpp.lane_enabled(self.inst, lane)
    if valid is not None and "bc" in self.inst.vals and not self.inst.vals["bc"]: write = valid if write is None else write & valid
    return src.cast(dtypes.index), valid, write

  def write_gate(self) -> UOp | None:
    """Whether this lane writes its vector results: its EXEC bit, and DPP's row/bank masks and bound control."""
    if self.lane is None: return None
    g = self.exec_bit().u
    return g & self.dpp[2] if self.dpp is not None and self.dpp[2] is not None else g

  def vgpr_idx(self, reg: UOp, k: int, lane: UOp | None = None) -> UOp:
    ln = self.lane_u if lane is None else lane
    return UOp.const(dtypes.index, VGPR + k * WAVE) + reg * WAVE + ln

  def reg_words(self, name: str, n: int) -> list[UOp] | None:
    """Word indices in the state of a register field (VGPRs at this lane), None for a constant."""
    k = self.kind(name)
    if k[0] == "v": return [self.vgpr_idx(self.var(name), i) for i in range(n)]
    if k[0] == "s": return [self.var(name) + i for i in range(n)]
    return None

  def operand(self, name: str) -> Any:
    base = name[:-1] + name[-1] if not self.half else name
    return self.op.operands.get(base) or self.op.operands.get(self.fname(name))

  def source(self, name: str) -> V:
    """A source operand as raw bits of the operand's width, with inline constants, literals and 16-bit halves resolved."""
    opnd = self.operand(name)
    nbits = opnd.bits if opnd is not None and not opnd.f8 else 32
    nbits = 32 if nbits < 32 and not (nbits == 16) else min(nbits, 64)
    k = self.kind(name)
    n = (nbits + 31) // 32
    if name == "src0" and self.dpp is not None: k, idx = self.kind("vsrc0"), [self.vgpr_idx(self.var("vsrc0"), i, self.dpp[0]) for i in range(n)]
    else: idx = self.reg_words(name, n)  # type: ignore[assignment]
    if k[0] in ("v", "s"):
      words = [self.b.ld(i) for i in idx]
      raw = V(words[0], "u", 32)
      if n == 2: raw = V(words[0].cast(dtypes.uint64) | (words[1].cast(dtypes.uint64) << UOp.const(dtypes.uint64, 32)), "u", 64)
      if nbits == 16 and not self.reads_high_bits(name):
        hi = k[1] or self.opsel_bit(name)
        raw = resize(alu(Ops.SHR, raw, const("u", 32, 16), "u", 32), 16) if hi else resize(raw, 16)
      if name == "src0" and self.dpp is not None and self.dpp[1] is not None:  # an invalid DPP source lane reads 0
        raw = V(self.dpp[1].where(raw.u, UOp.const(raw.u.dtype, 0)), "u", raw.width)
      return raw
    dfmt = opnd.dfmt.replace("FMT_", "") if opnd is not None else "B32"
    # packed f16 operands take an inline float as one f16 in the low half (the high half 0)
    ftype = "f64" if nbits == 64 and "F64" in dfmt else "f16" if (nbits == 16 and "F16" in dfmt) or "PK2_F16" in dfmt else "f32"
    if k[0] == "lit":
      lit = self.var("literal").cast(dtypes.uint64) & UOp.const(dtypes.uint64, 0xFFFFFFFF)
      if nbits == 64 and ftype == "f64": return V(lit << UOp.const(dtypes.uint64, 32), "u", 64)
      if nbits == 64 and opnd is not None and "I" in opnd.dfmt.split("_")[-1]:
        return V(lit.cast(dtypes.uint32).bitcast(dtypes.int32).cast(dtypes.int64).bitcast(dtypes.uint64), "u", 64)
      return resize(V(lit, "u", 64), nbits)
    if k[0] == "i": return resize(V(self.var(name).cast(dtypes.int64).bitcast(dtypes.uint64), "u", 64), nbits)
    code = k[1]
    if INLINE_INT[0] <= code <= INLINE_INT[1]: return const("u", nbits, inline_int(code) & ((1 << nbits) - 1))
    if code in FLOAT_CONSTS or code == 248:
      bitsv = float_bits(FLOAT_CONSTS[code], ftype) if code != 248 else INV_2PI[ftype]
      if "F" not in dfmt and code != 248: bitsv = float_bits(FLOAT_CONSTS[code], "f64" if nbits == 64 else "f32")  # s_mov_b64 s[0:1], 1.0
      return const("u", nbits, bitsv)
    if code == 124: return const("u", nbits, 0)
    if code in APERTURES: return const("u", nbits, APERTURES[code] if nbits == 64 else APERTURES[code] >> 32)
    if code == 253: return resize(V(self.b.ld(SCC), "u", 32), nbits)
    if code in (251, 252):
      m = self.b.ld(106 if code == 251 else 126)
      return resize(V(m.eq(UOp.const(dtypes.uint32, 0)).cast(dtypes.uint32), "u", 32), nbits)
    raise Unsupported(f"source operand code {code}")

  def opsel_bit(self, name: str) -> bool:
    if self.fam not in ("VOP3", "VOP3SD", "VINTERP") or "opsel" not in self.inst.vals: return False
    i = {"src0": 0, "src1": 1, "src2": 2, "vdst": 3}.get(name)
    return i is not None and bool(self.inst.vals["opsel"] >> i & 1)

  def reads_high_bits(self, name: str) -> bool:
    """The data gives s_cvt_hi_f32_f16 a 16-bit source whose pseudocode reads its bits 31:16: such a register is read whole."""
    srcs = self.sources()
    return name in srcs and f"S{srcs.index(name)}[31 : 16]" in (self.op.pcode or "")

  def modified(self, name: str, i: int) -> V:
    """A source with VOP3's abs/neg (float operands) and VOP3P's half selection applied."""
    raw = self.source(name)
    opnd = self.operand(name)
    vals = self.inst.vals
    # V_CNDMASK's sources are bits, but the hardware applies VOP3 abs/neg to them as floats (LLVM folds fneg/fabs into it)
    floaty = opnd is not None and ("F" in opnd.dfmt.replace("FMT_", "") or self.op.name.startswith("V_CNDMASK"))
    if opnd is not None and self.mode.flushes(opnd.dfmt, 1) and raw.width in (16, 32, 64): raw = flush_denorm(raw)
    absneg = (vals.get("abs", 0) >> i & 1, vals.get("neg", 0) >> i & 1) if self.fam in ("VOP3", "VOP3SD", "VINTERP") else \
      (vals.get(f"src{i}_abs", 0), vals.get(f"src{i}_neg", 0))  # DPP16's own modifier bits
    if floaty and any(absneg):
      w = raw.width
      sign = 1 << (w - 1)
      if absneg[0]: raw = alu(Ops.AND, raw, const("u", w, sign - 1), "u", w)
      if absneg[1]: raw = alu(Ops.XOR, raw, const("u", w, sign), "u", w)
    if self.fam == "VOP3P" and raw.width == 32 and not re.search(r"\b(OPSEL|NEG)\b", self.op.pcode or "") and "WMMA" not in self.op.name:
      hi_sel = (vals.get("opsel_hi", 3) | vals.get("opsel_hi2", 1) << 2) >> i & 1
      lo_sel = vals.get("opsel", 0) >> i & 1
      def half(sel: int, negbit: int) -> V:
        h = resize(alu(Ops.SHR, raw, const("u", 32, 16 * sel), "u", 32), 16)
        if negbit and opnd is not None and "F16" in opnd.dfmt: h = alu(Ops.XOR, h, const("u", 16, 0x8000), "u", 16)
        return h
      lo = half(lo_sel, vals.get("neg", 0) >> i & 1)
      hi = half(hi_sel, vals.get("neg_hi", 0) >> i & 1)
      raw = alu(Ops.OR, resize(lo, 32), alu(Ops.SHL, resize(hi, 32), const("u", 32, 16), "u", 32), "u", 32)
    return raw

  def sources(self) -> list[str]:
    if self.fam in ("SOP1", "SOP2", "SOPC"): return ["ssrc0", "ssrc1"]
    if self.fam == "SOPK": return ["sdst"]
    if self.fam in ("VOP2", "VOPC") or self.half: return ["src0", "vsrc1"]
    return ["src0", "src1", "src2"]

  def dest_words(self, name: str = "vdst") -> tuple[list[UOp], bool]:
    """State indices of the destination and whether they are VGPRs (at this lane)."""
    fam = self.fam
    ops = self.op.operands
    opnd = ops.get(name if not self.half else "vdst" + self.half) or ops.get(name) or ops.get("sdst")
    nbits = opnd.bits if opnd is not None else 32
    n = max(1, (nbits + 31) // 32) if not (opnd is not None and opnd.dfmt == "FMT_NUM_M64") else 1
    if fam.startswith("S") or (opnd is not None and opnd.otype in ("OPR_SREG", "OPR_SDST", "OPR_SDST_NULL")) or name == "sdst":
      fld = "sdst" if self.has("sdst") else "vdst" if self.has("vdst") else "sdata"
      return [self.var(fld) + i for i in range(n)], False
    return [self.vgpr_idx(self.var(name), i) for i in range(n)], True

  # ***** names *****
  def read(self, name: str, it: Interp) -> Any:
    """A name of the pseudocode: an architectural constant, a source (S0..), the destination's old value (D0), wave state
    (STATE_NAMES), a register field's number (SRC0.., for VGPR[lane][SRC0]), a VOP3P modifier, or a memory instruction's
    address/data name; None for a name the instruction does not have."""
    c = const_name(name)
    if c is not None: return c
    if m := re.fullmatch(r"S(\d)", name): return self.read_source(int(m.group(1)))
    if (state := STATE_NAMES.get(name)) is not None: return state(self)
    if (fld := self.raw_fields().get(name)) is not None: return self.field_number(fld)
    if name in VOP3P_MODS: return const("u", 8, VOP3P_MODS[name](self.inst.vals))
    if self.fam in MEM_FMTS: return self.mem_name(name)
    return None

  def read_source(self, i: int) -> V | None:
    """Si: the instruction's i-th source with its modifiers, as bits (RDNA4's SOPK calls its immediate S0)."""
    if self.fam == "SOPK" and "SIMM16" not in (self.op.pcode or ""): return self.read_simm16()
    srcs = self.sources()
    if i >= len(srcs) or not self.has(srcs[i]): return None
    raw = self.modified(srcs[i], i)
    return from_bits(raw, "b", raw.width)

  def read_d0(self) -> Any:
    """D0's old value: the lane-mask destination, or the destination registers (16-bit: the half op_sel/.h picks)."""
    if self.d0_mask: return V(self.b.ld(self.mask_dest()), "b", 32)
    words, _ = self.dest_words()
    opnd = self.op.operands.get("vdst" if not self.half else "vdst" + self.half) or self.op.operands.get("sdst") or self.op.operands.get("vdst")
    nbits = opnd.bits if opnd is not None and not opnd.f8 else 32
    if nbits > 64: return Wide(tuple(V(self.b.ld(w), "b", 32) for w in words))
    raw = V(self.b.ld(words[0]), "u", 32)
    if len(words) == 2: raw = V(raw.u.cast(dtypes.uint64) | (self.b.ld(words[1]).cast(dtypes.uint64) << UOp.const(dtypes.uint64, 32)), "u", 64)
    if nbits == 16: raw = resize(alu(Ops.SHR, raw, const("u", 32, 16), "u", 32), 16) if self.d16_hi() else resize(raw, 16)
    return from_bits(raw, "b", raw.width)

  def read_vcc(self) -> V:
    """VCC: the carry-in source (src2 of VOP3's v_addc-style forms) in a lane, else the register."""
    if self.vcc_is_src2 and self.lane is not None: return from_bits(self.source("src2"), "b", 32)
    return V(self.b.ld(106), "b", 32)

  def read_simm16(self) -> V | None:
    return from_bits(V(self.var("simm16").cast(dtypes.uint32), "u", 32), "b", 16) if self.has("simm16") else None

  def raw_fields(self) -> dict[str, str]:
    """The pseudocode's names for register fields whose number (not value) it reads, and the fields they are."""
    if self.fam.startswith("SOP"): return {"SRC0": "ssrc0", "SRC1": "ssrc1", "DST": "sdst"}
    out = {"SRC0": "src0", "SRC1": "src1", "SRC2": "src2", "VDST": "vdst", "DST": "vdst"}
    if self.fam == "DS" and self.lane is None: out |= {"DATA0": "data0", "ADDR": "addr"}
    if self.fam == "DS": out["ADDR_REG"] = "addr"  # ds_swizzle reads the addr VGPR of another lane
    return out

  def field_number(self, fld: str) -> V:
    """A register field's number (a VGPR's without the 256), an inline integer's operand code back from its value."""
    k = self.kind(fld)
    if k[0] == "i":
      v = self.var(fld)
      return V((v < 0).where(UOp.const(v.dtype, 192) - v, v + UOp.const(v.dtype, 128)).cast(dtypes.uint32), "u", 32)
    return V(self.var(fld).cast(dtypes.uint32), "u", 32) if k[0] in ("v", "s") else const("u", 32, k[1] - 256 if k[1] >= 256 else k[1])

  def mask_dest(self) -> UOp:
    """Where a VOPC result goes: VCC in the VOPC encoding, the SGPR in vdst in VOP3."""
    return self.var("vdst") if self.has("vdst") else self.var("sdst") if self.has("sdst") else UOp.const(dtypes.index, 106)

  def d16_hi(self) -> bool:
    k = self.kind("vdst") if self.has("vdst") else ("s",)
    return bool(k[0] == "v" and k[1]) or self.opsel_bit("vdst")

  def named_field(self, e: tuple, it: Interp) -> V:
    if e[1] == ("name", "WAVE_MODE") and e[2] == "IEEE": return const("u", 1, 1)
    if e[1] == ("name", "WAVE_STATUS"): return const("u", 1, 0)
    raise Unsupported(f"field {e[2]}")

  def ignore_field(self, lv: tuple) -> None:
    if lv[1] not in (("name", "TRAPSTS"),): raise Unsupported(f"assignment to field {lv[2]}")

  def op_pcode(self, fn: str) -> str | None:
    for n in (fn.upper(), fn.upper() + "_E64", fn.upper() + "_E32"):
      op = self.arch.ops.get(n)
      if op is not None and op.pcode: return op.pcode
    return None

  # ***** memory *****
  def signed_offset(self) -> V:
    name = "ioffset" if self.has("ioffset") else "offset"
    return V(self.var(name).cast(dtypes.int64), "i", 64)

  def smem_align(self) -> int:
    """A scalar load ignores the address bits below its access size, up to a dword: RDNA4's s_load_u8/i8 read any byte, s_load_u16/i16
    any even address (LLVM loads a uniform byte this way)."""
    return 1 if re.search(r"_[IU]8$", self.op.name) else 2 if re.search(r"_[IU]16$", self.op.name) else 4

  def address(self) -> V:
    """The address of a memory instruction: a 64-bit GPU address, an LDS offset, or a per-lane scratch offset."""
    fam = self.fam
    if fam in buffer.FORMATS: return self.buffer_access.address
    if fam == "SMEM":
      base = self.sreg64("sbase", 2)
      a = alu(Ops.ADD, base, conv(self.signed_offset(), "u", 64), "u", 64)
      if self.kind("soffset")[0] == "s" and not self.kind("soffset")[1]:
        a = alu(Ops.ADD, a, V(self.b.ld(self.var("soffset")).cast(dtypes.uint64), "u", 64), "u", 64)
      return alu(Ops.AND, a, const("u", 64, ~(self.smem_align() - 1) & (2**64 - 1)), "u", 64)
    if fam == "DS":
      a = V(self.b.ld(self.vgpr_idx(self.var("addr"), 0)), "u", 32)
      if not self.uses_offset: a = alu(Ops.ADD, a, V((self.var("offset0") + self.var("offset1") * 256).cast(dtypes.uint32), "u", 32), "u", 32)
      return a
    vaddr = "vaddr" if self.has("vaddr") else "addr"
    saddr_null = self.kind("saddr")[1]
    if fam in ("SCRATCH", "VSCRATCH"):
      a = conv(self.signed_offset(), "u", 32)
      if not saddr_null: a = alu(Ops.ADD, a, V(self.b.ld(self.var("saddr")), "u", 32), "u", 32)
      if self.inst.vals.get("sve"): a = alu(Ops.ADD, a, V(self.b.ld(self.vgpr_idx(self.var(vaddr), 0)), "u", 32), "u", 32)
      return a
    if fam in ("GLOBAL", "VGLOBAL") and not saddr_null:
      a = alu(Ops.ADD, self.sreg64("saddr", 1), V(self.b.ld(self.vgpr_idx(self.var(vaddr), 0)).cast(dtypes.uint64), "u", 64), "u", 64)
    else:
      lo, hi = (self.b.ld(self.vgpr_idx(self.var(vaddr), i)).cast(dtypes.uint64) for i in range(2))
      a = V(lo | (hi << UOp.const(dtypes.uint64, 32)), "u", 64)
    return alu(Ops.ADD, a, conv(self.signed_offset(), "u", 64), "u", 64)

  @functools.cached_property
  def buffer_access(self) -> buffer.BufferAccess: return buffer.buffer_access(self)

  def in_range(self, addr: V, nbytes: int, pred: V) -> V:
    """pred, and for a buffer access that it is in its V#'s range (out of range it neither faults nor touches memory)."""
    return binop("&&", pred, self.buffer_access.in_range(addr, nbytes)) if self.fam in buffer.FORMATS else pred

  def sreg64(self, name: str, scale: int) -> V:
    r = self.var(name) * scale if scale != 1 else self.var(name)
    return V(self.b.ld(r).cast(dtypes.uint64) | (self.b.ld(r + 1).cast(dtypes.uint64) << UOp.const(dtypes.uint64, 32)), "u", 64)

  def data_regs(self, name: str) -> tuple[str, int] | None:
    """(field, dwords) of a data name of a memory instruction."""
    op = self.op
    def width(f: str) -> int: return max(1, op.operands[f].bits // 32) if f in op.operands else 1
    if self.fam in buffer.FORMATS and name in ("VDATA", "DATA", "RETURN_DATA"):  # one vdata: the data, the loaded or returned value
      return ("vdata", width("vdata")) if name != "RETURN_DATA" or self.returns() else None
    if name in ("RETURN_DATA", "VGPR_RTN") or (name == "VDATA" and not self.stores_vdata):
      return ("vdst", width("vdst")) if "vdst" in op.operands else None
    if name == "SDATA": return ("sdata", width("sdata"))
    if name in ("DATA", "DATA0", "VDATA"):
      f = next((x for x in ("data", "vsrc", "data0") if x in op.operands), None)
      return (f, width(f)) if f else None
    if name in ("DATA1", "DATA2"): return ("data1", width("data1")) if "data1" in op.operands else None
    return None

  def returns(self) -> bool:
    """Whether a memory instruction writes its vdst: loads always, atomics only when asked to return (glc / th)."""
    if self.fam in ("DS", "SMEM") or "ATOMIC" not in self.op.name: return True
    return bool(self.inst.vals.get("glc", 0) or self.inst.vals.get("th", 0) & 1)

  def mem_name(self, name: str) -> Any:
    if name in ("ADDR", "ADDR_BASE"): return self.address()
    if name == "OFFSET": return V((self.var("offset0") + self.var("offset1") * 256).cast(dtypes.uint32), "u", 32)
    if name in ("OFFSET0", "OFFSET1"): return V(self.var(name.lower()).cast(dtypes.uint32), "u", 32)
    d = self.data_regs(name)
    if d is not None:
      fld, n = d
      if fld == "sdata": words = [self.b.ld(self.var("sdata") + i) for i in range(n)]
      else: words = [self.b.ld(self.vgpr_idx(self.var(fld), i)) for i in range(n)]
      vs = tuple(V(w, "b", 32) for w in words)
      return Wide(vs) if n > 2 else vs[0] if n == 1 else from_bits(V(pair64(words[0], words[1]), "u", 64), "b", 64)
    if name.islower() or name in ("INST_OFFSET",): return const("u", 64, 0)  # RDNA4's CalcGlobalAddr(v_addr.b64, ...) arguments
    return None

  def translate(self, addr: V, nbytes: int) -> tuple[UOp, UOp]:
    """(host address, valid) for an address: LDS and scratch are bounds-checked offsets; a GPU address goes through a
    binary search of the range table, then a bounds check; FLAT addresses in the LDS/scratch apertures go there."""
    if self.fam == "DS": return self.lds(addr.u.cast(dtypes.uint64), nbytes)
    if self.fam in ("SCRATCH", "VSCRATCH"): return self.scratch(addr.u.cast(dtypes.uint64), nbytes)
    va = addr.u
    idx = UOp.const(dtypes.index, 0)
    step = TAB // 2
    while step:
      nxt = idx + step
      idx = (self.b.load(self.b.tab, nxt) <= va).where(nxt, idx)
      step //= 2
    lo, hi, delta = self.b.load(self.b.tab, idx), self.b.load(self.b.tab, idx + TAB), self.b.load(self.b.tab, idx + 2 * TAB)
    host, ok = va + delta, (lo <= va) & ((va + UOp.const(dtypes.uint64, nbytes)) <= hi)
    if self.fam in ("FLAT", "VFLAT"):
      top, off = va >> UOp.const(dtypes.uint64, 32), va & UOp.const(dtypes.uint64, 0xFFFFFFFF)
      for ap, (h, k) in ((SHARED_HI, self.lds(off, nbytes)), (PRIVATE_HI, self.scratch(off, nbytes))):
        hit = top.eq(UOp.const(dtypes.uint64, ap))
        host, ok = hit.where(h, host), hit.where(k, ok)
    return host, ok

  def lds(self, off: UOp, nbytes: int) -> tuple[UOp, UOp]:
    base = self.b.ld(LDS_BASE).cast(dtypes.uint64) | (self.b.ld(LDS_BASE + 1).cast(dtypes.uint64) << UOp.const(dtypes.uint64, 32))
    return base + off, (off + UOp.const(dtypes.uint64, nbytes)) <= self.b.ld(LDS_SIZE).cast(dtypes.uint64)

  def scratch(self, off: UOp, nbytes: int) -> tuple[UOp, UOp]:
    """Each lane's private memory is a contiguous slice of the wave's scratch buffer."""
    base = self.b.ld(SCRATCH_BASE).cast(dtypes.uint64) | (self.b.ld(SCRATCH_BASE + 1).cast(dtypes.uint64) << UOp.const(dtypes.uint64, 32))
    size = self.b.ld(SCRATCH_SIZE).cast(dtypes.uint64)
    return base + self.lane_u.cast(dtypes.uint64) * size + off, (off + UOp.const(dtypes.uint64, nbytes)) <= size  # type: ignore[union-attr]

  def access(self, addr: V, nbytes: int, pred: V) -> tuple[UOp, UOp]:
    gate = truth(pred).u if pred.const is None else UOp.const(dtypes.bool, bool(pred.const))
    host, ok = self.translate(addr, nbytes)
    bad = gate & ok.logical_not()
    self.record_fault(bad, addr)
    return host.cast(dtypes.index), gate & ok

  def record_fault(self, bad: UOp, addr: V) -> None:
    if self.fam in ("DS",): return  # LDS outside the allocation: reads give 0 and writes drop, as on hardware
    a = resize(addr, 64).u if addr.width != 64 else addr.u
    self.b.store(FAULT, UOp.const(dtypes.uint32, 1), bad)
    self.b.store(FAULT_ADDR, a.cast(dtypes.uint32), bad)
    self.b.store(FAULT_ADDR + 1, (a >> UOp.const(dtypes.uint64, 32)).cast(dtypes.uint32), bad)

  def mem_load(self, addr: V, kind: str, width: int, pred: V, it: Interp) -> V:
    nbytes = max(1, width // 8)
    host, ok = self.access(addr, nbytes, self.gate(self.in_range(addr, nbytes, pred)))
    dt = UDT[max(8, width)]
    p = UOp(Ops.CAST, dt.ptr(), (UOp(Ops.INDEX, dtypes.uint8, (self.b.mem, host, ok)),))
    u = UOp(Ops.LOAD, dt, (p, UOp.const(dt, 0)))
    self.b.loads.append(u)
    return from_bits(V(u, "u", width), kind, width)

  def mem_store(self, addr: V, val: V, width: int, pred: V) -> None:
    nbytes = max(1, width // 8)
    host, ok = self.access(addr, nbytes, self.gate(self.in_range(addr, nbytes, pred)))
    dt = UDT[max(8, width)]
    raw = resize(bits(val) if not val.weak else const("u", 64, val.const), width)
    self.b.stores.append((self.b.mem, host, raw.u.cast(dt) if raw.u.dtype != dt else raw.u, ok))

  def gate(self, pred: V) -> V:
    if self.lane is None: return pred
    return binop("&&", pred, self.exec_bit())

  def exec_bit(self) -> V:
    return truth(slice_bits(V(self.b.ld(126), "u", 32), self.lane, 1))  # type: ignore[arg-type]

  # ***** indexed SGPRs (s_movrels/s_movreld) *****
  def sgpr_index(self, addr: V, k: int) -> UOp:
    """The state index of SGPR addr+k (wrapped into the 128 scalar registers, as the state has no more)."""
    return ((conv(addr, "u", 32).u + UOp.const(dtypes.uint32, k)) & UOp.const(dtypes.uint32, 127)).cast(dtypes.index)

  def sgpr_read(self, addr: V, width: int) -> V:
    words = [self.b.ld(self.sgpr_index(addr, k)) for k in range(max(1, width // 32))]
    return V(words[0], "u", 32) if len(words) == 1 else V(pair64(*words), "u", 64)

  def sgpr_write(self, addr: V, val: V, pred: V) -> None:
    gate = None if pred.const else truth(pred).u
    for k in range(max(1, val.width // 32)):
      self.b.store(self.sgpr_index(addr, k), resize(V(val.u >> UOp.const(val.u.dtype, 32 * k), "u", val.width) if k else val, 32).u, gate)

  # ***** hardware registers (s_getreg/s_setreg) *****
  def hwreg_index(self, reg: V) -> UOp:
    return (conv(reg, "u", 32).u & UOp.const(dtypes.uint32, 63)).cast(dtypes.index) + UOp.const(dtypes.index, HWREG)

  def hwreg_read(self, reg: V) -> V: return V(self.b.ld(self.hwreg_index(reg)), "b", 32)

  def hwreg_write(self, reg: V, val: V, pred: V) -> None:
    self.b.store(self.hwreg_index(reg), resize(bits(val), 32).u, None if pred.const else truth(pred).u)

  def hwreg_writable(self, reg: V) -> V:
    """The bits of a hardware register a shader may set: all of the writable ones (MODE, trap status), none of the rest."""
    r = conv(reg, "u", 32)
    ok = const("u", 1, 0)
    for k in WRITABLE_HWREGS[self.op.arch]: ok = binop("||", ok, binop("==", r, const("u", 32, k)))
    return select(ok, const("u", 32, 0xFFFFFFFF), const("u", 32, 0))

  # ***** cross-lane *****
  def vgpr_read(self, lane: V, reg: V, it: Interp) -> V:
    ln = conv(lane, "u", 32).u.cast(dtypes.index) & UOp.const(dtypes.index, WAVE - 1)
    return V(self.b.ld(UOp.const(dtypes.index, VGPR) + conv(reg, "u", 32).u.cast(dtypes.index) * WAVE + ln), "b", 32)

  def vgpr_write(self, lane: V, reg: V, val: V, pred: V, it: Interp) -> None:
    ln = conv(lane, "u", 32).u.cast(dtypes.index) & UOp.const(dtypes.index, WAVE - 1)
    idx = UOp.const(dtypes.index, VGPR) + conv(reg, "u", 32).u.cast(dtypes.index) * WAVE + ln
    v = resize(bits(val) if not val.weak else const("u", 32, val.const), 32)
    self.b.store(idx, v.u, truth(pred).u if pred.const is None else None if pred.const else UOp.const(dtypes.bool, False))

def flush_denorm(raw: V) -> V:
  """f16/f32/f64 bits with a denormal replaced by a zero of its sign (the hardware's denormal flushing)."""
  w = raw.width
  man, ex = FBITS[w]
  den = truth(alu(Ops.AND, binop("==", alu(Ops.AND, raw, const("u", w, ((1 << ex) - 1) << man), "u", w), const("u", w, 0)),
                  binop("!=", alu(Ops.AND, raw, const("u", w, (1 << man) - 1), "u", w), const("u", w, 0)), "u", 1))
  return V(den.u.where(raw.u & UOp.const(raw.u.dtype, 1 << (w - 1)), raw.u), "u", w)

STATE_NAMES: dict[str, Callable[[InstCtx], Any]] = {
  "D0": InstCtx.read_d0, "SCC": lambda c: V(c.b.ld(SCC).ne(UOp.const(dtypes.uint32, 0)), "u", 1), "VCC": InstCtx.read_vcc,
  "EXEC": lambda c: V(c.b.ld(126), "b", 32), "EXEC_LO": lambda c: V(c.b.ld(126), "b", 32), "M0": lambda c: V(c.b.ld(125), "b", 32),
  "PC": lambda c: from_bits(V(pair64(c.b.ld(PC), c.b.ld(PC + 1)), "u", 64), "i", 64),
  "VCCZ": lambda c: V(c.b.ld(106).eq(UOp.const(dtypes.uint32, 0)), "u", 1), "EXECZ": lambda c: V(c.b.ld(126).eq(UOp.const(dtypes.uint32, 0)), "u", 1),
  "laneId": lambda c: c.lane, "laneID": lambda c: c.lane, "SIMM16": InstCtx.read_simm16,
  "SIMM32": lambda c: V(c.var("literal").cast(dtypes.uint32), "b", 32), "ROUND_MODE": lambda c: const("i", 32, 0, True)}
VOP3P_MODS: dict[str, Callable[[dict], int]] = {
  "OPSEL": lambda v: v.get("opsel", 0), "NEG": lambda v: v.get("neg", 0), "NEG_HI": lambda v: v.get("neg_hi", 0),
  "OPSEL_HI": lambda v: v.get("opsel_hi", 3) | v.get("opsel_hi2", 1) << 2}

class MemInterp(Interp):
  """The interpreter with MEM[...] reads and writes routed to the context."""
  def assign(self, lv: tuple, val: Any) -> None:
    if lv[0] == "field" and lv[1][0] == "idx" and lv[1][1] == ("name", "MEM"):
      kind, width = self.vtype(lv[2])
      addr = self.expr(lv[1][2])
      if isinstance(val, Wide): val = join_words(val, width)
      self.ctx.mem_store(conv(addr, "u", 64) if addr.width != 32 or self.ctx.fam not in ("DS", "SCRATCH", "VSCRATCH") else addr,
                         conv(val, kind, width) if val.kind != kind or val.width != width else val, width, self.active())
      return
    if lv[0] == "idx" and lv[1] == ("name", "MEM"):
      addr = self.expr(lv[2])
      self.ctx.mem_store(addr, val, 32, self.active())
      return
    super().assign(lv, val)

  def expr(self, e: tuple) -> Any:
    if e[0] == "field" and e[1][0] == "idx" and e[1][1] == ("name", "MEM"):
      kind, width = self.vtype(e[2])
      addr = self.expr(e[1][2])
      if self.ctx.fam not in ("DS", "SCRATCH", "VSCRATCH"): addr = conv(addr, "u", 64)
      return self.ctx.mem_load(addr, kind, width, self.active(), self)
    return super().expr(e)

  def call(self, fn: str, args: list) -> Any:
    if fn.startswith("Calc") and fn.endswith("Addr"): return self.ctx.address()
    if fn in numfmt.FUNCS: return numfmt.FUNCS[fn](*(self.expr(a) for a in args))
    return super().call(fn, args)

  def stmt(self, s: tuple) -> None:
    if s[0] == "declare" and self.ctx.read(s[1], self) is not None and s[1] in ("OFFSET", "DATA0", "VDST", "ADDR", "SRC0"): return
    super().stmt(s)

MAD_I64 = "tmp = 64'I(S0.i32) * 64'I(S1.i32);\nD0.i64 = tmp + S2.i64;\nD1.u1 = ((tmp ^ D0.i64) & (S2.i64 ^ D0.i64)) < 0 ? 1'1U : 1'0U"
PCODE_OVERRIDES = {
  # 65-bit intermediate results: the carry comes from a 64-bit add instead (unsigned carry; signed overflow for the i64 forms)
  "V_MAD_U64_U32": "tmp = 64'U(S0.u32) * 64'U(S1.u32);\nD0.u64 = tmp + S2.u64;\nD1.u1 = D0.u64 < tmp ? 1'1U : 1'0U",
  "V_MAD_I64_I32": MAD_I64,
  "V_MAD_CO_U64_U32": "tmp = 64'U(S0.u32) * 64'U(S1.u32);\nD0.u64 = tmp + S2.u64;\nD1.u1 = D0.u64 < tmp ? 1'1U : 1'0U",
  "V_MAD_CO_I64_I32": MAD_I64,
}

# the pseudocode leaves the unscaled result implicit
PCODE_PREFIX = {"V_DIV_SCALE_F32": "D0.f32 = S0.f32;\n", "V_DIV_SCALE_F64": "D0.f64 = S0.f64;\n"}

def _fixup_nan(t: str) -> tuple[str, str]:
  return (f"else\nD0.{t} = sign_out ? -abs(S0.{t})", f"elsif isNAN(64'F(S0.{t})) then\nD0.{t} = sign_out ? -INF.{t} : +INF.{t}\n"
                                                   f"else\nD0.{t} = sign_out ? -abs(S0.{t})")

# Where the ISA text differs from what the hardware computes (each checked against a hardware-measured value):
# V_DIV_SCALE sets VCC for a zero operand too, and tests "1/S1 is denormal" in f32 for the f32 form; V_DIV_FMAS scales by
# 2**+64 when S2 (the scaled quotient) is >= 2 and 2**-64 otherwise (2**+-128 for f64, computed in f64); V_DIV_FIXUP of a
# NaN estimate (a quotient that overflowed) gives +-inf.
PCODE_FIXES: dict[str, tuple[tuple[str, str], ...]] = {
  "V_DIV_SCALE_F32": (("D0.f32 = NAN.f32", "VCC = 0x1LL;\nD0.f32 = NAN.f32"), ("== DENORM.f64", "== DENORM.f32")),
  "V_DIV_SCALE_F64": (("D0.f64 = NAN.f64", "VCC = 0x1LL;\nD0.f64 = NAN.f64"),),
  "V_DIV_FMAS_F32": (("2.0F ** 32 * fma(S0.f32, S1.f32, S2.f32)", "ldexp(fma(S0.f32, S1.f32, S2.f32), exponent(S2.f32) > 127 ? 64 : -64)"),),
  "V_DIV_FMAS_F64": (("2.0 ** 64 * fma(S0.f64, S1.f64, S2.f64)", "ldexp(fma(S0.f64, S1.f64, S2.f64), exponent(S2.f64) > 1023 ? 128 : -128)"),),
  "V_DIV_FIXUP_F32": (_fixup_nan("f32"),), "V_DIV_FIXUP_F64": (("else\nD0.f64 = sign_out ? -abs(S0.f64)",
                      "elsif isNAN(S0.f64) then\nD0.f64 = sign_out ? -INF : +INF\nelse\nD0.f64 = sign_out ? -abs(S0.f64)"),),
  "V_DIV_FIXUP_F16": (_fixup_nan("f16"),),
  # RDNA3's text forgets to move the field mask to the field's offset (RDNA4's has the shift)
  "rdna3:S_SETREG_B32": (("mask = (mask & ", "mask = ((mask << offset.u32) & "),),
  "rdna3:S_SETREG_IMM32_B32": (("mask = (mask & ", "mask = ((mask << offset.u32) & "),),
}
# v_trig_preop_f64 reads a 1201-bit constant: the window of it comes from numfmt
TRIG_PREOP = (("64'F((1201'B(2.0 / PI)[1200 : 0] << shift.u32) & 1201'0x1fffffffffffff)", "64'F(two_over_pi_window(shift.u32))"),)
PCODE_FIXES |= {"V_TRIG_PREOP_F64": TRIG_PREOP}
# v_cvt_sr_fp8/bf8_f32 add the random bits (S1's top 20 / 21) to the mantissa, wrapping within it
PCODE_FIXES |= {f"V_CVT_SR_{f}_F32": ((f"s = sign(S0.f32);\ne = exponent(S0.f32);\nm = 23'U(32'U(23'B(mantissa(S0.f32))) + S1[31 : {lo}].u32);\n"
                                       "tmp = float32(s, e, m);",
                                       f"tmp = (S0.u32 & 32'0xff800000U) | ((S0.u32 + S1[31 : {lo}].u32) & 32'0x7fffffU);"),)
                for f, lo in (("FP8", 12), ("BF8", 11))}
OWN_VGPR = re.compile(r"VGPR\[laneId\]\[(SRC0|VDST)\.u32\]")  # the fp8 conversions' own source/destination register, as S0/D0
F8_VALUE = re.compile(r"32'F\(([^()]+)\.(fp8|bf8)\)")  # v_dot4_f32_fp8_bf8's 32'F(S0[7 : 0].fp8): the value, not the bits as a number
SINCOS = re.compile(r"\b(sin|cos)\((S0\.f\d+) \*")  # sin(S0 * 2pi): the hardware reduces S0 (in turns) to [0, 1) first

VINTERP_READ = re.compile(r"VGPR\[([^\]]*)\]\[SRC(\d)\.u32\]\.(f16|f32)")

def vinterp_pcode(text: str, vals: dict[str, int]) -> str:
  """VINTERP's reads of its neighbours' src0/src2 with the instruction's op_sel (an f16's high half) and neg applied: the
  ISA text reads the registers raw and leaves the modifiers out."""
  def fix(m: re.Match) -> str:
    k, read = int(m[2]), m[0]
    if m[3] == "f16" and vals["opsel"] >> k & 1: read = f"VGPR[{m[1]}][SRC{k}.u32][31 : 16].f16"
    return f"(-{read})" if vals["neg"] >> k & 1 else read
  return VINTERP_READ.sub(fix, text)

def swizzle_pcode(offset: int) -> str:
  """ds_swizzle_b32's lane pattern (the ISA text is C, not pseudocode): offset[15] set picks within quads by 2-bit selectors,
  clear applies and/or/xor masks (bits 4:0, 9:5, 14:10) to the lane number; an inactive source lane reads 0."""
  if offset >= 0xC000: raise Unsupported(f"ds_swizzle_b32 offset {offset:#x} (FFT and rotate modes)")
  if offset & 0x8000: j = f"(laneId & 0x1cU) | ((32'U({offset & 0xFF}) >> ((laneId & 3U) * 2U)) & 3U)"
  else: j = f"((laneId & {offset & 31}U) | {offset >> 5 & 31}U) ^ {offset >> 10 & 31}U"
  return f"j = {j};\nD0.b32 = EXEC.u32[j] ? VGPR[j][ADDR_REG.u32].b32 : 32'0U"

@functools.cache
def pcode_of(op: Op) -> str | None:
  if op.name in PCODE_OVERRIDES: return PCODE_OVERRIDES[op.name]
  if op.enum == "VOPDOp": return vopd_pcode(op)
  text = op.pcode
  if text is None: return None
  for old, new in PCODE_FIXES.get(op.name, ()) + PCODE_FIXES.get(f"{op.arch}:{op.name}", ()):
    if old not in text: raise PcodeError(f"{op.name}: the pseudocode fix for {old!r} no longer applies to the ISA text")
    text = text.replace(old, new)
  if op.name in PCODE_PREFIX: text = PCODE_PREFIX[op.name] + text
  text = F8_VALUE.sub(r"\2_to_f32(\1.\2)", SINCOS.sub(r"\1(fract(\2) *", text))
  return OWN_VGPR.sub(lambda m: "S0" if m[1] == "SRC0" else "D0", text)

MAD64_CLAMP = {"U": "\nD0.u64 = D1.u1 ? 64'U(-1) : D0.u64",
               "I": "\nD0.i64 = D1.u1 ? (S2.i64 < 0LL ? 64'I(0x8000000000000000LL) : 64'I(0x7fffffffffffffffLL)) : D0.i64"}
INT_CLAMP = re.compile(r"V_(PK_)?(ADD|SUB|SUBREV|MAD)_(CO_CI_|CO_|NC_)?([UI]\d+)(?:_([UI]\d+))?(?:_E64)?")
CLAMP_EXPR = {"ADD": "A + B", "SUB": "A - B", "SUBREV": "B - A", "MAD": "A * B + C"}

@functools.cache
def int_clamp_pcode(op: Op) -> str | None:
  """VOP3's clamp bit on integer add/sub/mad: pseudocode that recomputes the result exactly (64-bit) and writes it
  saturated to the destination's range (the hardware saturates instead of wrapping); None for other opcodes."""
  m = INT_CLAMP.fullmatch(op.name)
  if m is None: return None
  pk, kind, co, dt, st = m.groups()
  st = st or dt
  w = int(dt[1:])
  if w == 64: return MAD64_CLAMP[dt[0]]  # no wider type to recompute in: saturate on the carry / signed overflow D1 holds
  lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if dt[0] == "I" else (0, (1 << w) - 1)
  expr = CLAMP_EXPR[kind] + {"ADD": " + CI", "SUB": " - CI", "SUBREV": " - CI"}.get(kind, "") * (co == "CO_CI_")
  halves = ("[15 : 0]", "[31 : 16]") if pk else ("",)
  out = []
  for h in halves:
    ops = {x: f"64'I(S{i}{h}.{t.lower()})" for i, (x, t) in enumerate(zip("ABC", (st, st, dt)))} | {"CI": "64'I(VCC.u64[laneId].u64)"}
    e = re.sub(r"\b(A|B|C|CI)\b", lambda x: ops[x.group(1)], expr)
    out.append(f"tmp_sat = {e};\nD0{h}.{dt.lower()} = tmp_sat > 64'I({hi}) ? 64'I({hi}) : tmp_sat < 64'I({lo}) ? 64'I({lo}) : tmp_sat")
  return "\n" + "\n".join(out)

@functools.cache
def vopd_pcode(op: Op) -> str | None:
  """A VOPD half behaves like its VOP1/VOP2 namesake (V_DUAL_MUL_F32 like V_MUL_F32_E32)."""
  a = get_arch(op.arch)
  base = op.name.replace("V_DUAL_", "V_")
  for n in (base + "_E32", base, base.replace("_DX9_ZERO", "_DX9_ZERO") + "_E32"):
    if n in a.ops and a.ops[n].pcode: return a.ops[n].pcode
  return None
