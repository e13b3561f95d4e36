"""Build an Inst from DSL operands: registers, constants and modifiers become raw field values."""
from __future__ import annotations
import re
from typing import Any
from .isa import Field, Op, get_arch
from .inst import FALLBACK, Inst, pick_format, set_operand
from .operands import NULL_CODE, VGPR, Reg
from .image import BVH_WORDS, GFX12, addr_groups, addr_words
from .dpptext import DPP16_MARK, DPP8_MARK, DPP8_FI_MARK
from .syntax import ALIASES, BUFFERS, IMM_OTYPES, SRC_INDEX, dsl_slots, family, sized_operand

MOD_FIELDS = {"VOP3": ("neg", "abs"), "VOP3SD": ("neg", "abs"), "VOP3P": ("neg", "neg_hi"), "VINTERP": ("neg", "abs")}

def _bits(ins: str, f: Field, x: Any) -> int:
  if isinstance(x, bool): x = int(x)
  if not isinstance(x, int): raise TypeError(f"{f.name} of {ins} takes an integer, got {x!r}")
  lo = -(1 << (f.width - 1)) if f.signed or f.kind == "bits" and f.width >= 8 else 0
  if not lo <= x <= f.mask: raise ValueError(f"{f.name}={x} of {ins} is out of range {lo}..{f.mask}")
  return x & f.mask

def _modifiers(fam: str, name: str, x: Reg, mods: dict[str, int], e32_vgpr: bool, dpp: str | None) -> None:
  """Fold -x, abs(x) and x.h into the format's modifier bits (DPP16 words have their own for src0 and vsrc1)."""
  i = SRC_INDEX.get(name, 3 if name == "vdst" else None)
  if dpp == "DPP16" and fam in ("VOP1", "VOP2", "VOPC") and name in ("src0", "vsrc1") and (x.neg or x.abs):
    j = 0 if name == "src0" else 1
    mods[f"src{j}_neg"], mods[f"src{j}_abs"] = int(x.neg), int(x.abs)
  elif fam in MOD_FIELDS and i is not None:
    neg, abs_ = MOD_FIELDS[fam]
    if x.neg: mods[neg] = mods.get(neg, 0) | 1 << i
    if x.abs and fam != "VOP3P": mods[abs_] = mods.get(abs_, 0) | 1 << i
    if x.hi: mods["opsel"] = mods.get("opsel", 0) | 1 << i
  elif x.neg or x.abs or (x.hi and not e32_vgpr):
    raise ValueError(f"{name} cannot take source modifiers in {fam} encoding, got {x!r}")

def build(op: Op, args: tuple, kwargs: dict[str, Any], dpp: str | None = None) -> Inst:
  """Encode one instruction from positional operands (in LLVM order) and keyword fields."""
  arch, ins, fam = get_arch(op.arch), op.mnemonic, family(op.fmt)
  params = dsl_slots(op)
  if len(args) > len(params): raise TypeError(f"{ins} takes {len(params)} operands ({', '.join(params)}), got {len(args)}")
  given = dict(zip(params, args))
  for k, x in kwargs.items():
    k = ALIASES.get(fam, {}).get(k, k) if ALIASES.get(fam, {}).get(k, k) in arch.formats[op.fmt].by_name else k
    if k in given: raise TypeError(f"{ins} got {k} twice")
    given[k] = x
  if "K" in given: given["literal"] = given.pop("K")
  fi8 = given.pop("fi", 0) if dpp == "DPP8" else 0  # DPP8 says fetch-inactive with its src0 marker, not a field
  if fam == "VOP2" and commutative(op) and not _is_vgpr(given.get("vsrc1")) and _is_vgpr(given.get("src0")):
    given["src0"], given["vsrc1"] = given["vsrc1"], given["src0"]  # only src0 takes constants/SGPRs: `v_add_f32_e32(v[0], v[1], 2.0)`
  if fam == "DS" and "offset" in given: off = given.pop("offset"); given["offset0"], given["offset1"] = off & 0xFF, off >> 8 & 0xFF
  base = arch.formats[op.fmt]
  if fam in GFX12 and "vaddr" in given: image_addresses(ins, op, given)
  nsa = fam == "MIMG" and isinstance(given.get("vaddr"), (list, tuple))
  if nsa: nsa_addresses(ins, op, given)
  if fam == "SMEM" and isinstance(given.get("soffset"), int):  # `s_load_b64(s[0:1], s[2:3], 16)`: an immediate offset
    given["ioffset" if "ioffset" in base.by_name else "offset"] = given.pop("soffset")
  literals, vals, mods = [], {}, {}
  lookup = {k: f for fn in (f"{op.fmt}_{dpp}", f"{op.fmt}_LIT", f"{op.fmt}_NSA", op.fmt) if fn in arch.formats
            for k, f in arch.formats[fn].by_name.items()}
  for name, x in given.items():
    if name == "literal": literals.append(x); continue
    f = lookup.get(name)
    if f is None or f.kind in ("fixed", "opcode"):
      raise TypeError(f"{ins} has no operand or field {name!r} (operands: {', '.join(params)})")
    if f.kind == "bits" or op.operands.get(name, FALLBACK).otype in IMM_OTYPES:
      vals[name] = vals.get(name, 0) | _bits(ins, f, x); continue
    if x is None: continue
    opnd = _operand(op, name, given)
    if isinstance(x, Reg):
      e32 = fam in ("VOP1", "VOP2", "VOPC") and x.is_vgpr and opnd.half16
      _modifiers(fam, name, x, mods, e32, dpp)
      if x.hi and e32: x = Reg(x.plain.code + 128)
      x = x.plain
    lit = set_operand(ins, f, opnd, x, vals)
    if lit is not None: literals.append(lit)
  for k, m in mods.items(): vals[k] = vals.get(k, 0) | m
  if dpp: _dpp_fields(ins, dpp, vals, fi8)
  if len(set(literals)) > 1: raise ValueError(f"{ins} needs two different literals {[hex(x) for x in literals]}: only one fits")
  _implicit(op, fam, given, vals)
  fmt = pick_format(arch, op, bool(literals) and not op.fmt.endswith("_LIT"), dpp) if literals or dpp else base
  if nsa: fmt, vals["nsa"] = arch.formats["MIMG_NSA"], 1
  if literals: vals["literal"] = literals[0]
  missing = [f.name for f in fmt.values if f.kind == "vdsty" and f.name not in vals]
  if missing: raise TypeError(f"{ins} needs {', '.join(missing)}")
  unknown = set(vals) - set(fmt.by_name)
  if unknown: raise TypeError(f"{ins} has no field {', '.join(sorted(unknown))} in {fmt.name} encoding")
  return Inst(op, fmt, {f.name: vals.get(f.name, default(op, f)) for f in fmt.values})

def _dpp_fields(ins: str, dpp: str, vals: dict[str, int], fi8: int) -> None:
  """src0's VGPR moves to the DPP word's vsrc0 and src0 holds the marker; DPP8's fi is a marker too; masks default to all."""
  code = vals.get("src0", 0)
  if code < 256: raise ValueError(f"{ins} with DPP takes a VGPR as src0")
  fi = fi8 if dpp == "DPP8" else vals.get("fi", 0)
  if fi not in (0, 1) or vals.get("bc", 0) not in (0, 1): raise ValueError(f"{ins}: bound_ctrl and fi take 0 or 1")
  vals["vsrc0"] = code - 256
  vals["src0"] = DPP16_MARK if dpp == "DPP16" else DPP8_FI_MARK if fi else DPP8_MARK
  if dpp == "DPP16": vals.setdefault("row_mask", 0xF); vals.setdefault("bank_mask", 0xF)

def nsa_addresses(ins: str, op: Op, given: dict[str, Any]) -> None:
  """RDNA3's NSA image address (a list of VGPR groups, as addr_groups says): vaddr holds the first, vaddr1..4 the others."""
  image_addresses(ins, op, given)
  first = given.pop("vaddr0")
  given["vaddr"] = Reg(VGPR + first, addr_words(op, given.get("dim", 0), given.get("a16", 0)))  # vaddr's field: where group 0 starts

def image_addresses(ins: str, op: Op, given: dict[str, Any]) -> None:
  """An image address (a VGPR tuple or a list of them) into RDNA4's vaddr0..4 fields, one group each, as addr_groups says."""
  regs = given.pop("vaddr")
  regs = [regs] if isinstance(regs, Reg) else list(regs)
  want = addr_groups(op, given.get("dim", 0), given.get("a16", 0))
  if len(regs) == 1 and len(want) > 1 and regs[0].n == sum(want):  # a contiguous tuple: split into the groups
    regs = [Reg(regs[0].code + sum(want[:k]), n) for k, n in enumerate(want)]
  if [r.n for r in regs if isinstance(r, Reg) and r.is_vgpr] != list(want) or len(regs) != len(want):
    raise ValueError(f"{ins} takes its address as {len(want)} VGPR group(s) of {list(want)} for this dim/a16, got {regs!r}")
  for k, r in enumerate(regs): given[f"vaddr{k}"] = r.code - VGPR

def default(op: Op, f: Field) -> int:
  """A field's value when left out; scalar memory opcodes without operands leave every field 0, as LLVM does."""
  if not op.operands and op.fmt in ("SMEM", "MUBUF"): return 0  # and buffer cache invalidations
  if f.name == "format" and op.fmt in BUFFERS: return 1  # BUF_FMT_8_UNORM: what llvm-mc encodes when no format is given
  if op.name in BVH_WORDS and f.name in ("unrm", "r128", "dmask"): return 0xF if f.name == "dmask" else 1  # as llvm-mc sets them
  if f.name in ("opsel_hi", "opsel_hi2") and "_MIX" in op.name: return 0  # v_fma_mix*: op_sel_hi picks f16 sources, off by default
  return f.default

def _is_vgpr(x: Any) -> bool: return isinstance(x, Reg) and x.is_vgpr

def commutative(op: Op) -> bool:
  """`D0 = S0 op S1` with a commutative op, read from the pseudocode."""
  return bool(op.pcode) and re.fullmatch(r"D0\.(\w+) = S0\.\1 [+*&|^] S1\.\1;?", op.pcode.strip()) is not None  # type: ignore[union-attr]

def _operand(op: Op, name: str, given: dict[str, Any]):
  """The operand's width, adjusted where it depends on other operands (a global address with saddr is 32 bits)."""
  opnd = op.operands.get(name, FALLBACK)
  if name in ("addr", "vaddr") and isinstance(given.get("saddr"), Reg) and given["saddr"].code != NULL_CODE:
    return type(opnd)(32, opnd.dfmt, opnd.otype)
  return sized_operand(op, name, opnd, lambda k, d: given.get(k, d))

def _implicit(op: Op, fam: str, given: dict[str, Any], vals: dict[str, int]) -> None:
  """Fields LLVM fills in by itself: EXEC as V_CMPX's destination, scratch's address-enable bit."""
  if "vdst" in op.operands and op.operands["vdst"].otype == "OPR_EXEC": vals["vdst"] = 126
  if op.fmt in ("SCRATCH", "VSCRATCH"): vals["sve"] = int(given.get("addr", given.get("vaddr")) is not None)
