"""Which SQTT packet reports an instruction, and with which InstOp: one table for the decoder's walk and the emitter.

The traced SIMD reports most VALU instructions with a VALUINST packet, SOPP-class control instructions (s_waitcnt,
s_clause, s_nop, ...) with IMMEDIATE, and everything else with an INST packet whose `op` names a class: SALU, SMEM,
branches (JUMP when taken, JUMP_NO when not), messages, barriers, the VALU classes with their own pipeline (64-bit,
transcendental, 64-bit shifts, MAD64, v_cmpx, interpolation), and memory by kind, size and addressing mode.
s_delay_alu and s_wait_alu (RDNA3's s_waitcnt_depctr) get no packet; s_endpgm is the WAVEEND. These rules are checked
against the hardware captures (every instruction packet of every traced wave lands on an instruction of its class);
classes the captures don't exercise follow format.json's InstOp notes, and memory kinds the enum lacks (scratch,
buffer, atomics) are reported as their nearest FLAT/GLOBAL class.
"""
from __future__ import annotations
import functools
import re
from typing import NamedTuple
from ..inst import Inst
from ..operands import NULL_CODE
from .format import enum

NO_PACKET = re.compile(r"S_DELAY_ALU|S_WAIT_ALU|S_WAITCNT_DEPCTR")
BRANCH = re.compile(r"S_C?BRANCH.*|S_SETPC.*|S_SWAPPC.*|S_CALL.*")
TRANS = re.compile(r"V_(EXP|LOG|RCP|RCP_IFLAG|RSQ|SQRT|SIN|COS)_F(16|32)(_E32|_E64)?")
SHIFT64 = re.compile(r"V_(LSHLREV_B64|LSHRREV_B64|ASHRREV_I64)(_E32|_E64)?")
MEMORY = ("DS", "GLOBAL", "FLAT", "SCRATCH", "MUBUF", "MTBUF", "MIMG", "LDSDIR", "VGLOBAL", "VFLAT", "VSCRATCH", "VBUFFER", "VIMAGE",
          "VSAMPLE", "VDSDIR")
SIZE = {"B8": 0, "U8": 0, "I8": 0, "B16": 0, "U16": 0, "I16": 0, "D16": 0, "B32": 0, "U32": 0, "I32": 0, "F32": 0, "DWORD": 0,
        "B64": 1, "U64": 1, "I64": 1, "F64": 1, "X2": 1, "B96": 2, "X3": 2, "B128": 3, "X4": 3}

class Report(NamedTuple):
  """How an executed instruction shows in the stream: the packet name (None: no packet) and the InstOp of an INST."""
  packet: str | None
  op: int | None = None

@functools.cache
def ops() -> dict[str, int]: return enum("InstOp")

def size_step(name: str) -> int:
  """0 for 32 bits and less, 1 for 64, 2 for 96, 3 for 128: from the size word of a memory opcode's name."""
  return max((SIZE[w] for w in name.split("_") if w in SIZE), default=0)

def memory(inst: Inst) -> int:
  """The InstOp of a memory instruction."""
  name, base = inst.op.name, inst.fmt.base.lstrip("V")
  store = any(w in name for w in ("STORE", "WRITE", "ATOMIC"))
  if base == "DS": return ops()["LDS_STORE"] + [0, 1, 2, 3][size_step(name)] if store else ops()["LDS_LOAD"]
  if base == "GLOBAL":
    vaddr = inst.vals.get("saddr", NULL_CODE) == NULL_CODE
    if store: return ops()["GLOBAL_STORE"] + size_step(name) + vaddr
    return ops()["GLOBAL_LOAD_VADDR" if vaddr else "GLOBAL_LOAD"]
  return ops()["FLAT_STORE"] + size_step(name) if store else ops()["FLAT_LOAD"]  # FLAT, SCRATCH, buffers

def valu(name: str) -> Report:
  if name.startswith("V_CMPX"): return Report("INST", ops()["VALU_CMPX"])
  if TRANS.fullmatch(name): return Report("INST", ops()["VALU_TRANS"])
  if SHIFT64.fullmatch(name): return Report("INST", ops()["VALU_64_SHIFT"])
  if name.startswith(("V_MAD_U64_U32", "V_MAD_I64_I32")): return Report("INST", ops()["VALU_MAD64"])
  if name.startswith("V_INTERP"): return Report("INST", ops()["VINTERP"])
  if "_F64" in name and not name.startswith("V_CMP"): return Report("INST", ops()["VALU_64"])
  return Report("VALUINST")

def report(inst: Inst) -> Report:
  """The packet that reports this instruction when the traced SIMD issues it (a branch counts as taken: JUMP;
  `branch_op(taken=False)` gives JUMP_NO)."""
  name, base = inst.op.name, inst.fmt.base
  if NO_PACKET.fullmatch(name): return Report(None)
  if name.startswith("S_ENDPGM"): return Report("WAVEEND")
  if BRANCH.fullmatch(name): return Report("INST", ops()["JUMP"])
  if name.startswith("S_SENDMSG"): return Report("INST", ops()["MESSAGE"])
  if name.startswith("S_BARRIER"): return Report("INST", ops()["BARRIER"])
  if base == "SOPP": return Report("IMMEDIATE")
  if base == "SMEM": return Report("INST", ops()["SMEM"])
  if base.startswith("SOP"): return Report("INST", ops()["SALU_SAVEEXEC" if "SAVEEXEC" in name else "SALU"])
  return Report("INST", memory(inst)) if base in MEMORY else valu(name)

def branch_op(taken: bool) -> int: return ops()["JUMP" if taken else "JUMP_NO"]

def memory_counter(inst: Inst) -> str | None:
  """Which wait counter a memory instruction counts in: smem, lds, load (vector loads, atomics) or store; None if none."""
  name, base = inst.op.name, inst.fmt.base
  if base == "SMEM": return "smem"
  if base not in MEMORY: return None
  if base == "DS": return "lds"
  return "store" if "STORE" in name else "load"
