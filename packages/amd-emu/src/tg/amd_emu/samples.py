"""A canonical instance of every opcode (registers in ascending order, widths from the tables): what the
LLVM oracle tests and the benchmark encode, print and decode."""
from __future__ import annotations
from typing import Any
from tg.uop import round_up
from .build import build
from .inst import FALLBACK, Inst
from .isa import Op, get_arch
from .operands import NULL, Reg, SGPR, VGPR
from .syntax import dsl_slots
from .vopd import vopd
from .image import BVH_WORDS, BVH12_GROUPS, addr_groups, addr_words, data_regs

SCALAR_OTYPES = {"OPR_SSRC", "OPR_SREG", "OPR_SDST", "OPR_SSRC_LANESEL", "OPR_SDST_NULL", "OPR_EXEC"}
SKIP_OTYPES = {"OPR_SMEM_OFFSET", "OPR_SMEM_OFFSET_NOK", "OPR_SIMM8", "OPR_SIMM5", "OPR_SIMM24", "OPR_SENDMSG_RTN"}
FORMATS = ("SOP1", "SOP2", "SOPC", "SOPK", "SOPP", "SMEM", "VOP1", "VOP2", "VOP3", "VOP3SD", "VOP3P", "VOPC", "VOPD", "DS",
           "FLAT", "GLOBAL", "SCRATCH", "VFLAT", "VGLOBAL", "VSCRATCH", "MUBUF", "VBUFFER")

def operands_for(op: Op) -> dict[str, Any]:
  """Fresh registers for each operand: VGPRs from v0 up, SGPRs from s0 up aligned to their size."""
  fmt = get_arch(op.arch).formats[op.fmt]
  out: dict[str, Any] = {}
  nv = ns = 0
  for slot in dsl_slots(op):
    if slot == "K": out["K"] = 0x1234; continue
    if slot not in fmt.by_name: continue  # RDNA4's image address list: image_kwargs fills it
    f, opnd = fmt.by_name[slot], op.operands.get(slot, FALLBACK)
    if f.kind == "bits" or opnd.otype in SKIP_OTYPES or slot == "saddr": continue
    if opnd.otype == "OPR_SDST_NULL": out[slot] = NULL; continue
    n = opnd.nregs
    scalar = opnd.otype in SCALAR_OTYPES or op.name.startswith("V_S_")  # v_s_exp_f16 & co. read SGPRs
    if f.kind in ("vgpr", "vdsty") or (f.kind == "src" and not scalar):
      out[slot] = Reg(VGPR + nv, n); nv += n
    else:
      ns = round_up(ns, min(n, 4))
      out[slot] = Reg(SGPR + ns, n); ns += n
  return out

def image_kwargs(op: Op, kwargs: dict[str, Any]) -> None:
  """An image instance: 2D (MSAA for msaa_load, no dim for a ray query), every channel (gathers, msaa_load, atomics one, cmpswap two),
  vdata and vaddr at those sizes."""
  if op.name not in BVH_WORDS and op.name not in BVH12_GROUPS:
    kwargs["dim"] = 6 if "MSAA" in op.name else 1
    kwargs["dmask"] = 0x3 if "CMPSWAP" in op.name else 0x1 if any(k in op.name for k in ("ATOMIC", "GATHER4", "MSAA")) else 0xF
  nd = data_regs(op, kwargs.get("dmask", 0xF), 0, 0)
  kwargs["vdata"] = Reg(VGPR, nd)
  if op.fmt == "MIMG": kwargs["vaddr"] = Reg(VGPR + nd, addr_words(op, kwargs.get("dim", 0), 0))
  else:
    groups = addr_groups(op, kwargs.get("dim", 0), 0)
    kwargs["vaddr"] = [Reg(VGPR + nd + sum(groups[:k]), n) for k, n in enumerate(groups)]

def canonical(op: Op) -> Inst:
  a = get_arch(op.arch)
  if op.enum == "VOPDOp":
    def half(o: Op, regs: list[Any]) -> Any:
      from .vopd import DualHalf
      names = dsl_slots(o)
      vals = iter(regs)
      return DualHalf(o, tuple(0x1234 if s == "K" else next(vals) for s in names), {})
    mov, mul = a.op("V_DUAL_MOV_B32"), a.op("V_DUAL_MUL_F32")
    if op.code <= a.formats["VOPD"].opcode.mask: return vopd(half(op, [Reg(VGPR + i) for i in range(3)]), half(mov, [Reg(VGPR + 3), Reg(VGPR + 4)]))
    return vopd(half(mul, [Reg(VGPR + i) for i in range(3)]), half(op, [Reg(VGPR + i) for i in range(3, 6)]))
  kwargs = operands_for(op)
  if any(k in op.name for k in ("GWS", "ORDERED_COUNT", "GS_REG")): kwargs["gds"] = 1
  if op.name == "S_SENDMSG_RTN_B32" or op.name == "S_SENDMSG_RTN_B64": kwargs["ssrc0"] = 128
  if op.name in ("S_WAITCNT_DEPCTR", "S_WAIT_ALU"): kwargs["simm16"] = 0xFFFF
  if "BARRIER" in op.name and "ssrc0" in op.operands: kwargs["ssrc0"] = -1  # named barriers: an id or M0, not an SGPR
  if op.fmt in ("MUBUF", "MTBUF", "VBUFFER") and "vaddr" in kwargs: kwargs["vaddr"], kwargs["offen"] = Reg(kwargs["vaddr"].code, 1), 1
  if op.fmt in ("MIMG", "VIMAGE", "VSAMPLE"): image_kwargs(op, kwargs)
  if "ATOMIC" in op.name and "vdst" in op.operands:
    kwargs["glc" if "glc" in a.formats[op.fmt].by_name else "th"] = 1
  return build(op, (), kwargs)

# what the ISA layer encodes and prints (the emulator runs FORMATS)
ISA_FORMATS = FORMATS + ("MTBUF", "MIMG", "VIMAGE", "VSAMPLE")

def all_canonical(arch: str, formats: tuple[str, ...] = ISA_FORMATS) -> list[Inst]:
  return [canonical(op) for op in get_arch(arch).ops.values() if op.fmt.split("_LIT")[0].replace("_SDST", "") in formats]
