"""Structured immediates: hwreg(...), sendmsg(...), s_waitcnt counters, s_delay_alu, cache policies.

`text` prints them the way LLVM does; `parse` reads LLVM's spelling back into the raw field value.
"""
from __future__ import annotations
import re
from .isa import get_arch

SCOPES = ("SCOPE_CU", "SCOPE_SE", "SCOPE_DEV", "SCOPE_SYS")
# s_sendmsg ids LLVM knows by name on gfx11/gfx12 (the ISA data lists only the MSG_RTN_* ones)
SENDMSG = {"MSG_INTERRUPT": 1, "MSG_HS_TESSFACTOR": 2, "MSG_DEALLOC_VGPRS": 3, "MSG_GS_ALLOC_REQ": 9}
DELAY_ID = ["NO_DEP", "VALU_DEP_1", "VALU_DEP_2", "VALU_DEP_3", "VALU_DEP_4", "TRANS32_DEP_1", "TRANS32_DEP_2", "TRANS32_DEP_3",
            "FMA_ACCUM_CYCLE_1", "SALU_CYCLE_1", "SALU_CYCLE_2", "SALU_CYCLE_3"]
DELAY_SKIP = ["SAME", "NEXT", "SKIP_1", "SKIP_2", "SKIP_3", "SKIP_4"]
# (name, lo bit, width) of s_waitcnt's counters on gfx11
WAITCNT = (("vmcnt", 10, 6), ("expcnt", 0, 3), ("lgkmcnt", 4, 6))

def _names(arch: str, otype: str) -> dict[str, int]:
  a = get_arch(arch)
  if otype == "OPR_HWREG": return a.hwreg
  return SENDMSG | a.msg if otype == "OPR_SENDMSG_RTN" else SENDMSG

def hwreg_text(arch: str, v: int) -> str:
  rid, off, size = v & 0x3F, v >> 6 & 0x1F, (v >> 11 & 0x1F) + 1
  name = next((k for k, n in get_arch(arch).hwreg.items() if n == rid), str(rid))
  return f"hwreg({name})" if off == 0 and size == 32 else f"hwreg({name}, {off}, {size})"

def waitcnt_text(v: int) -> str:
  parts = [f"{n}({v >> lo & ((1 << w) - 1)})" for n, lo, w in WAITCNT if v >> lo & ((1 << w) - 1) != (1 << w) - 1]
  return " ".join(parts) or "vmcnt(63) expcnt(7) lgkmcnt(63)"

def delay_text(v: int) -> str:
  id0, skip, id1 = v & 0xF, v >> 4 & 7, v >> 7 & 0xF
  if id0 >= len(DELAY_ID) or id1 >= len(DELAY_ID) or skip >= len(DELAY_SKIP) or v >> 11: return f"0x{v:x}"
  parts = [f"instid0({DELAY_ID[id0]})"] * bool(id0) + [f"instskip({DELAY_SKIP[skip]})"] * bool(skip) + [f"instid1({DELAY_ID[id1]})"] * bool(id1)
  return " | ".join(parts) or "0"

def sendmsg_text(arch: str, otype: str, v: int) -> str:
  name = next((k for k, n in _names(arch, otype).items() if n == v), None)
  return f"sendmsg({name})" if name else f"sendmsg({v}, 0, 0)" if otype == "OPR_SENDMSG" and v < 256 else str(v)

def text(inst, name: str, v: int) -> str:
  """An immediate operand as LLVM prints it for this opcode."""
  otype = inst.operand(name).otype
  arch = inst.op.arch
  if otype == "OPR_HWREG": return hwreg_text(arch, v)
  if otype == "OPR_WAITCNT": return waitcnt_text(v)
  if otype == "OPR_DELAY": return delay_text(v)
  if otype in ("OPR_SENDMSG", "OPR_SENDMSG_RTN"): return sendmsg_text(arch, otype, v)
  if otype == "OPR_LABEL": return str(v & 0xFFFF)  # LLVM prints branch offsets as unsigned 16-bit
  if otype in ("OPR_SIMM8", "OPR_SIMM5") or inst.op.name in DECIMAL: return str(v)
  return f"0x{v & 0xFFFF:x}" if v < 0 else f"0x{v:x}"

DECIMAL = {"S_NOP", "S_SLEEP", "S_SETPRIO", "S_TRAP", "S_SETHALT", "S_SETKILL", "S_DECPERFLEVEL", "S_INCPERFLEVEL", "S_DENORM_MODE",
           "S_BARRIER_WAIT"}

def _th_names(op) -> tuple[str, tuple[str, ...]]:
  kind = "ATOMIC" if "ATOMIC" in op.name else "STORE" if "STORE" in op.name else "LOAD"
  return kind, TH_NAMES[kind]

def th_text(inst) -> str:
  kind, names = _th_names(inst.op)
  return f"th:TH_{kind}_{names[inst.vals['th']]}"

def th_value(op, text: str) -> int:
  kind, names = _th_names(op)
  return names.index(text.removeprefix(f"TH_{kind}_"))

TH_NAMES = {"LOAD": ("RT", "NT", "HT", "LU", "RT_NT", "NT_HT", "RT_WB", "NT_RT"),
            "STORE": ("RT", "NT", "HT", "WB", "RT_NT", "NT_HT", "RT_WB", "NT_WB"),
           "ATOMIC": ("RT", "RETURN", "NT", "NT_RETURN", "CASCADE_RT", "CASCADE_RETURN", "CASCADE_NT", "CASCADE_NT_RETURN")}

def parse(arch: str, otype: str, s: str) -> int:
  """The raw value of LLVM's spelling of a structured immediate (or a plain number)."""
  s = s.strip()
  if m := re.fullmatch(r"hwreg\(\s*(\w+)\s*(?:,\s*(\d+)\s*,\s*(\d+)\s*)?\)", s):
    names = get_arch(arch).hwreg
    rid = names[m[1]] if m[1] in names else int(m[1], 0)
    off, size = (int(m[2]), int(m[3])) if m[2] else (0, 32)
    return rid | off << 6 | (size - 1) << 11
  if m := re.fullmatch(r"sendmsg\(\s*(\w+)\s*(?:,\s*(\d+)\s*,\s*(\d+)\s*)?\)", s):
    names = _names(arch, otype)
    return names[m[1]] if m[1] in names else int(m[1], 0)
  if re.match(r"(vmcnt|expcnt|lgkmcnt)\(", s):
    v = sum(((1 << w) - 1) << lo for _, lo, w in WAITCNT)
    parts = [p for p in re.split(r"[\s,&]+", s) if p]
    for part in parts:
      m = re.fullmatch(r"(\w+)\((\d+)\)", part)
      field = next(((lo, w) for n, lo, w in WAITCNT if m is not None and n == m[1]), None)
      if m is None or field is None: raise ValueError(f"malformed s_waitcnt counter {part!r}: expected vmcnt(N), expcnt(N) or lgkmcnt(N)")
      (lo, w), cnt = field, int(m[2])
      if cnt >= 1 << w: raise ValueError(f"{m[1]}({cnt}) is too large: at most {(1 << w) - 1}")
      v = v & ~(((1 << w) - 1) << lo) | cnt << lo
    return v
  if re.match(r"(instid0|instskip|instid1)\(", s):
    v = 0
    for key, val in re.findall(r"(\w+)\((\w+)\)", s):
      v |= DELAY_SKIP.index(val) << 4 if key == "instskip" else DELAY_ID.index(val) << (7 if key == "instid1" else 0)
    return v
  return int(s, 0)
