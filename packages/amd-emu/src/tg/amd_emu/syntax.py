"""The operand order of each instruction in LLVM's syntax, shared by the DSL, the printer and the parser.

An instruction's operands are `slots`: encoding fields in the order LLVM writes them, plus `vcc` (an implicit
VCC_LO that LLVM prints but nothing encodes) and `K` (the literal constant of FMAAK/FMAMK-style opcodes).
"""
from __future__ import annotations
import functools
from typing import Callable
from .isa import Op, Operand

ORDER = {
  "SOP1": ("sdst", "ssrc0"), "SOP2": ("sdst", "ssrc0", "ssrc1"), "SOPC": ("ssrc0", "ssrc1"), "SOPK": ("sdst", "simm16"),
  "SOPP": ("simm16",), "SMEM": ("sdata", "sbase", "soffset"), "VOP1": ("vdst", "src0"), "VOP2": ("vdst", "src0", "vsrc1"),
  "VOPC": ("src0", "vsrc1"), "VOP3": ("vdst", "src0", "src1", "src2"), "VOP3SD": ("vdst", "sdst", "src0", "src1", "src2"),
  "VOP3P": ("vdst", "src0", "src1", "src2"), "VINTERP": ("vdst", "src0", "src1", "src2"), "DS": ("vdst", "addr", "data0", "data1"),
  "FLAT": ("vdst", "addr", "data", "saddr"), "VFLAT": ("vdst", "vaddr", "vsrc", "saddr"), "VOPD": ("vdsty", "srcy0", "vsrcy1"),
  "MIMG": ("vdata", "vaddr", "srsrc", "ssamp"), "MUBUF": ("vdata", "vaddr", "srsrc", "soffset"),
  "MTBUF": ("vdata", "vaddr", "srsrc", "soffset"), "VBUFFER": ("vdata", "vaddr", "rsrc", "soffset"),
  "VIMAGE": ("vdata", "vaddr", "rsrc"), "VSAMPLE": ("vdata", "vaddr", "rsrc", "samp"),  # vaddr: RDNA4's vaddr0..4 fields
}
BUFFERS = ("MUBUF", "MTBUF", "VBUFFER")
FAMILY = {"VOP1_SDST": "VOP1", "VOP3_SDST": "VOP3", "GLOBAL": "FLAT", "SCRATCH": "FLAT", "VGLOBAL": "VFLAT", "VSCRATCH": "VFLAT"}
SRC_INDEX = {"src0": 0, "src1": 1, "src2": 2, "ssrc0": 0, "ssrc1": 1, "srcx0": 0, "srcy0": 0}
# DSL spellings that differ between the archs' field names (rdna4 memory ops say vaddr/vsrc/ioffset)
ALIASES = {"VFLAT": {"addr": "vaddr", "data": "vsrc", "offset": "ioffset"}, "SMEM": {"offset": "ioffset"}, "VBUFFER": {"offset": "ioffset"}}

IMM_OTYPES = ("OPR_SIMM8", "OPR_SIMM5", "OPR_SENDMSG_RTN")  # operands in register fields that hold plain numbers
NO_VOP3 = ("V_READFIRSTLANE_B32",)  # listed with an _E64 form in the data, but LLVM has none

@functools.cache
def mnemonic(op: Op) -> str:
  """LLVM's name: the _e32/_e64 suffix is written only when the opcode has both encodings."""
  from .isa import get_arch
  name, ops = op.name, get_arch(op.arch).ops
  stem, _, enc = name.rpartition("_")
  if enc in ("E32", "E64"):
    other = f"{stem}_{'E64' if enc == 'E32' else 'E32'}"
    both = (other in ops or (enc == "E32" and stem in ops)) and stem not in NO_VOP3 and bool(op.operands)
    return (name if both else stem).lower()
  return (name + "_e64" if op.enum == "VOP3SDOp" and f"{name}_E32" in ops else name).lower()

def family(fmt: str) -> str:
  base = fmt.split("_LIT")[0].split("_DPP")[0].split("_NSA")[0]
  return FAMILY.get(base, base)

def is_literal_op(op: Op) -> bool:
  """Opcodes whose literal is an operand of their own (FMAAK/FMAMK, S_SETREG_IMM32) rather than a source."""
  return op.fmt.endswith("_LIT") or "FMAAK" in op.name or "FMAMK" in op.name

def writes_vcc(op: Op) -> bool: return bool(op.pcode) and "VCC.u64[laneId] =" in op.pcode  # type: ignore[operator]

def reads_vcc(op: Op) -> bool:
  return bool(op.pcode) and any("VCC" in part for part in op.pcode.replace("VCC.u64[laneId] =", "").split("\n"))  # type: ignore[union-attr]

def sized_operand(op: Op, name: str, opnd: Operand, get: Callable[[str, int], int]) -> Operand:
  """An operand whose width other fields set (the data gives the widest): a buffer's vaddr holds an index and/or an offset as
  idxen/offen say (0-2 VGPRs) and tfe adds a status VGPR after vdata; an image's vaddr and vdata follow image.py's rules.
  `get(field, default)` reads the instruction's other fields."""
  fam = family(op.fmt)
  if fam in BUFFERS:
    if name == "vaddr": return Operand(32 * (get("idxen", 0) + get("offen", 0)), opnd.dfmt, opnd.otype)
    if name == "vdata" and get("tfe", 0): return Operand(opnd.bits + 32, opnd.dfmt, opnd.otype)
  if fam in ("MIMG", "VIMAGE", "VSAMPLE") and name in ("vaddr", "vdata"):
    from .image import addr_words, data_regs
    n = addr_words(op, get("dim", 0), get("a16", 0)) if name == "vaddr" else \
      data_regs(op, get("dmask", 0), get("d16", 0), get("tfe", 0))
    return Operand(32 * n, opnd.dfmt, opnd.otype)
  return opnd

def has_return(op: Op) -> bool:
  """Atomics that return the old value only when asked to (glc on rdna3, th:TH_ATOMIC_RETURN on rdna4)."""
  return "ATOMIC" in op.name and "vdst" in op.operands

@functools.cache
def slots(op: Op) -> tuple[str, ...]:
  fam = family(op.fmt)
  order = ("sbase", "ioffset", "soffset", "sdata") if fam == "SMEM" and "ioffset" in op.operands else ORDER.get(fam, ())  # s_prefetch_*
  out = [f for f in order if f in op.operands or (f == "vaddr" and fam in ("VIMAGE", "VSAMPLE"))]  # RDNA4: vaddr0..4 as one list
  if fam == "VOP3" and op.operands.get("vdst") is not None and op.operands["vdst"].otype == "OPR_EXEC": out.remove("vdst")
  if fam == "SOPK" and op.name.startswith("S_SETREG"): out = ["simm16", "K" if op.fmt.endswith("_LIT") else "sdst"]
  if fam in ("VOP2", "VOPD") and "FMAAK" in op.name: out.append("K")
  if fam in ("VOP2", "VOPD") and "FMAMK" in op.name: out.insert(2, "K")
  if fam == "SOP2" and "FMAAK" in op.name: out.append("K")
  if fam == "SOP2" and "FMAMK" in op.name: out.insert(2, "K")
  if fam == "VOP2" and writes_vcc(op): out.insert(1, "vcc")
  if fam == "VOP2" and reads_vcc(op): out.append("vcc")
  if fam == "VOPC" and "CMPX" not in op.name: out.insert(0, "vcc")
  return tuple(out)

def dsl_slots(op: Op) -> tuple[str, ...]:
  """The positional parameters of an opcode's DSL callable: its slots without the implicit VCC."""
  return tuple(s for s in slots(op) if s != "vcc")

def repr_args(inst) -> list[str]:
  """Keyword arguments that rebuild `inst` through the DSL (raw values for every non-default modifier)."""
  from .inst import field_value
  def value(name: str) -> object:
    if name not in inst.fmt.by_name: return field_value(inst, name)  # RDNA4's image address list
    if inst.fmt.by_name[name].kind == "bits" or inst.operand(name).otype in IMM_OTYPES: return inst.vals[name]
    return field_value(inst, name)
  scratch_off = (inst.fmt.base in ("SCRATCH", "VSCRATCH") and not inst.vals["sve"]) or \
    (inst.fmt.base in BUFFERS and not (inst.vals["idxen"] or inst.vals["offen"]))  # no address VGPR
  ops = [s for s in dsl_slots(inst.op) if s != "K" and not (scratch_off and s in ("addr", "vaddr"))]
  args = [f"{s}={value(s)!r}" for s in ops]
  exec_dst = "vdst" in inst.op.operands and inst.op.operands["vdst"].otype == "OPR_EXEC"
  implicit = {"sve"} | {f"vaddr{k}" for k in range(5)} | ({"vdst"} if exec_dst else set())  # build sets them (vaddrK: from vaddr)
  shown = set(ops) | implicit | (set() if is_literal_op(inst.op) else {"literal"})
  from .build import default
  args += [f"{f.name}={inst.vals[f.name]}" for f in inst.fmt.values if f.name not in shown and inst.vals[f.name] != default(inst.op, f)]
  return args
