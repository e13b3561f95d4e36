"""Print an Inst in LLVM's AMDGPU assembly syntax (what llvm-objdump and llvm-mc print for the same bytes)."""
from __future__ import annotations
from .inst import Inst, field_value
from .isa import Field
from .operands import NULL_CODE, Reg
from .syntax import BUFFERS, IMM_OTYPES, SRC_INDEX, family, has_return, mnemonic, slots
from . import dpptext, simm16
from .image import BVH_WORDS, BVH12_GROUPS, DIMS, GFX12

FLOAT_TEXT = {0.5: "0.5", -0.5: "-0.5", 1.0: "1.0", -1.0: "-1.0", 2.0: "2.0", -2.0: "-2.0", 4.0: "4.0", -4.0: "-4.0"}
OMOD = {1: "mul:2", 2: "mul:4", 3: "div:2"}

def const_text(x: int | float, ftype: str) -> str:
  if isinstance(x, float):
    return FLOAT_TEXT.get(x) or ("0.15915494309189532" if ftype == "f64" else "0.15915494")
  return str(x)

def _signed(f: Field, raw: int) -> int: return raw - (1 << f.width) if f.signed and raw >> (f.width - 1) else raw

def operand_text(inst: Inst, name: str) -> str:
  """One source/destination operand, with its -x / |x| modifiers."""
  if name == "vcc": return "vcc_lo"
  if name == "K": return f"0x{inst.vals['literal']:x}"
  if name == "vaddr" and (inst.fmt.base in GFX12 or inst.fmt.name == "MIMG_NSA"):
    regs = field_value(inst, name)
    return str(regs[0]) if len(regs) == 1 else "[" + ", ".join(map(str, regs)) + "]"
  f, raw, opnd = inst.fmt.by_name[name], inst.vals[name], inst.operand(name)
  if f.kind == "bits" or opnd.otype in IMM_OTYPES: return simm16.text(inst, name, _signed(f, raw))
  if name == "saddr" and raw == NULL_CODE: return "off"
  if name == "soffset" and raw == NULL_CODE and inst.fmt.base == "SMEM":
    if "ioffset" in inst.op.operands: return "null"
    off = smem_offset(inst)
    return hex_signed(off) if off or inst.op.arch != "rdna3" else "null"
  if name in ("addr", "vaddr") and inst.fmt.base in ("SCRATCH", "VSCRATCH") and not inst.vals["sve"]: return "off"
  if name == "vaddr" and inst.fmt.base in BUFFERS and not (inst.vals["idxen"] or inst.vals["offen"]): return "off"
  x = field_value(inst, name) if not (name == "src0" and "_DPP" in inst.fmt.name) else field_value(inst, "vsrc0")
  if isinstance(x, Reg):
    if name in ("addr", "vaddr") and "saddr" in inst.vals and inst.vals["saddr"] != NULL_CODE: x = Reg(x.code, 1)
    text = str(x)
  elif f.kind in ("src", "ssrc") and raw == 255: text = f"0x{x:x}"
  else: text = const_text(x, opnd.ftype)
  i = SRC_INDEX.get(name)
  v = inst.vals
  if i is not None and family(inst.fmt.name) in ("VOP3", "VOP3SD", "VINTERP"): ab, ng = v.get("abs", 0) >> i & 1, v.get("neg", 0) >> i & 1
  else:  # DPP16's own bits for src0 and vsrc1
    j = {"src0": 0, "vsrc1": 1}.get(name)
    ab, ng = (v.get(f"src{j}_abs", 0), v.get(f"src{j}_neg", 0)) if j is not None else (0, 0)
  if ab: text = f"|{text}|"
  return f"-{text}" if ng else text

def hex_signed(x: int) -> str: return f"-0x{-x:x}" if x < 0 else f"0x{x:x}"

def smem_offset(inst: Inst) -> int:
  """SMEM's immediate offset (signed: 21 bits on RDNA3, 24 on RDNA4)."""
  name = "ioffset" if "ioffset" in inst.vals else "offset"
  return _signed(inst.fmt.by_name[name], inst.vals[name])

def _bitlist(v: int, n: int) -> str: return "[" + ",".join(str(v >> i & 1) for i in range(n)) + "]"

def modifiers(inst: Inst) -> list[str]:
  """The trailing `name:value` / flag modifiers, in LLVM's order."""
  fam, v, op = family(inst.fmt.name), inst.vals, inst.op
  nsrc = sum(s in op.operands for s in ("src0", "src1", "src2"))
  out: list[str] = []
  reg_offset = fam == "SMEM" and "soffset" in op.operands and "ioffset" not in op.operands and v["soffset"] != NULL_CODE
  if reg_offset and (smem_offset(inst) or op.arch == "rdna4"):  # RDNA4's LLVM prints a register offset's offset:0x0 too
    out.append(f"offset:{hex_signed(smem_offset(inst))}")
  if fam in ("DS",):
    if "2ADDR" in op.name:
      out += [f"{k}:{v[k]}" for k in ("offset0", "offset1") if v[k]]
    elif v["offset0"] | v["offset1"]:
      off = v["offset0"] | v["offset1"] << 8
      out.append(f"offset:{simm16.swizzle_text(off) if op.name == 'DS_SWIZZLE_B32' else off}")
  if fam in BUFFERS:
    if v.get("format", 1) != 1: out.append(f"format:{simm16.buf_format_text(v['format'])}")
    out += [flag for flag in ("idxen", "offen") if v[flag]]
    off = _signed(inst.fmt.by_name["ioffset"], v["ioffset"]) if "ioffset" in v else v["offset"]
    if off: out.append(f"offset:{off}")
  if fam in ("FLAT", "VFLAT"):
    f = inst.fmt.by_name["offset" if fam == "FLAT" else "ioffset"]
    if v[f.name]: out.append(f"offset:{_signed(f, v[f.name]) if fam == 'VFLAT' or inst.fmt.base != 'FLAT' else v[f.name]}")
  bvh = op.name in BVH_WORDS or op.name in BVH12_GROUPS
  if fam in ("MIMG",) + GFX12 and not bvh:
    out += ([f"dmask:0x{v['dmask']:x}"] if v["dmask"] else []) + [f"dim:SQ_RSRC_IMG_{DIMS[v['dim']]}"] + (["unorm"] if v.get("unrm") else [])
  for flag in ("glc", "slc", "dlc", "gds", "nv"):
    if v.get(flag): out.append(flag)
  if "th" in v and v["th"]: out.append(simm16.th_text(inst))
  if "scope" in v and v["scope"]: out.append(f"scope:{simm16.SCOPES[v['scope']]}")
  if fam in BUFFERS and v["tfe"]: out.append("tfe")
  if fam in ("MIMG",) + GFX12: out += [f for f in ("r128", "a16", "tfe", "lwe", "d16") if v.get(f) and not (bvh and f == "r128")]
  if fam == "VOP3" and v.get("opsel") and op.name in simm16.BYTE_SEL_READ + simm16.BYTE_SEL_WRITE:
    out.append(f"byte_sel:{simm16.byte_sel_of(op.name, v['opsel'])}")
  elif fam == "VOP3" and v.get("opsel"): out.append(f"op_sel:{_bitlist(v['opsel'] & 7 | (v['opsel'] >> 3) << nsrc, nsrc + 1)}")
  if fam == "VOP3P":
    if v["opsel"] and op.name.startswith("V_SWMMAC"): out.append(f"index_key:{v['opsel']}")  # which 16 bits of the sparsity index
    elif v["opsel"]: out.append(f"op_sel:{_bitlist(v['opsel'], nsrc)}")
    hi = v["opsel_hi"] | v["opsel_hi2"] << 2
    dflt = 0 if "_MIX" in op.name else (1 << nsrc) - 1  # LLVM prints op_sel_hi when it differs from the opcode's default
    if hi != dflt and hi & ((1 << nsrc) - 1) != dflt: out.append(f"op_sel_hi:{_bitlist(hi, nsrc)}")
    if v["neg"]: out.append(f"neg_lo:{_bitlist(v['neg'], nsrc)}")
    if v["neg_hi"]: out.append(f"neg_hi:{_bitlist(v['neg_hi'], nsrc)}")
  if fam == "VINTERP" and v.get("opsel"): out.append(f"op_sel:{_bitlist(v['opsel'], 4)}")
  if v.get("clmp"): out.append("clamp")
  if v.get("omod"): out.append(OMOD[v["omod"]])
  if fam == "VINTERP": out.append(f"wait_exp:{v['waitexp']}")
  if "_DPP" in inst.fmt.name: out += dpptext.modifiers(v)
  return out

def disasm(inst: Inst) -> str:
  if inst.fmt.base == "VOPD": return vopd_text(inst)
  ops = [operand_text(inst, s) for s in slots(inst.op) if not (s == "vdst" and has_return(inst.op) and not returns(inst))]
  name = mnemonic(inst.op) if "_DPP" not in inst.fmt.name else dpptext.mnemonic(inst.op, mnemonic(inst.op))
  sep = "  " if inst.fmt.name == "MIMG_NSA" and "ssamp" in inst.op.operands else " "  # llvm-mc-19 prints sampling NSA forms so
  text = name + (sep + ", ".join(ops) if ops else "")
  mods = modifiers(inst)
  return text + (" " + " ".join(mods) if mods else "")

def returns(inst: Inst) -> bool:
  return bool(inst.vals.get("glc")) if "glc" in inst.vals else bool(inst.vals.get("th", 0) & 1)

def vopd_text(inst: Inst) -> str:
  from .vopd import halves
  return " :: ".join(f"{mnemonic(op)} {', '.join(texts)}" for op, texts in halves(inst))
