"""DPP in LLVM's syntax: the mnemonic (`v_or_b32_dpp`, `v_fma_f32_e64_dpp`, VOPC without a suffix), the control
modifiers (`row_shl:1`, `quad_perm:[1,0,3,2]`, `dpp8:[...]`, `row_mask`, `bank_mask`, `bound_ctrl`, `fi`) to and
from the raw fields of the _DPP16/_DPP8 formats, for both the printer and the parser."""
from __future__ import annotations
import re
from .isa import Op
from .syntax import family

DPP16_MARK, DPP8_MARK, DPP8_FI_MARK = 250, 233, 234  # src0 codes announcing a DPP word
ROW_OPS = {"row_shl": 0x100, "row_shr": 0x110, "row_ror": 0x120, "row_share": 0x150, "row_xmask": 0x160}
NAMED = {"row_mirror": 0x140, "row_half_mirror": 0x141}

def mnemonic(op: Op, base: str) -> str:
  """LLVM's DPP mnemonic from the opcode's plain one: VOP1/VOP2 add `_dpp`, VOP3 forms `_e64_dpp`, VOPC (e32) nothing."""
  stem = re.sub(r"_e(32|64)$", "", base)
  fam = family(op.fmt)
  if fam == "VOPC": return stem
  return stem + ("_dpp" if fam in ("VOP1", "VOP2") else "_e64_dpp")

def ctrl_text(ctrl: int) -> str:
  if ctrl <= 0xFF: return "quad_perm:[" + ",".join(str(ctrl >> 2 * i & 3) for i in range(4)) + "]"
  for name, val in NAMED.items():
    if ctrl == val: return name
  for name, base in ROW_OPS.items():
    if base < ctrl <= base + 15 or (name in ("row_share", "row_xmask") and base <= ctrl <= base + 15): return f"{name}:{ctrl - base}"
  raise ValueError(f"DPP control {ctrl:#x} is not valid on RDNA")

def modifiers(vals: dict[str, int]) -> list[str]:
  """The printed DPP modifiers of an instruction's raw fields, in LLVM's order."""
  if "dpp" not in vals:
    out = ["dpp8:[" + ",".join(str(vals[f"lane_sel_{i}"]) for i in range(8)) + "]"]
    return out + (["fi:1"] if vals["src0"] == DPP8_FI_MARK else [])
  out = [ctrl_text(vals["dpp"]), f"row_mask:0x{vals['row_mask']:x}", f"bank_mask:0x{vals['bank_mask']:x}"]
  return out + (["bound_ctrl:1"] if vals["bc"] else []) + (["fi:1"] if vals["fi"] else [])

def parse(key: str, val: str, kwargs: dict) -> bool:
  """Fold one DPP modifier into kwargs (its raw fields, and `_dpp` naming the format); False if it is not one."""
  def num(s: str) -> int: return int(s, 0)
  if key == "dpp8":
    sels = [num(x) for x in val.strip("[]").split(",")]
    if len(sels) != 8 or not all(0 <= x < 8 for x in sels): raise ValueError(f"dpp8 takes 8 lane numbers 0..7, got {val!r}")
    kwargs.update({f"lane_sel_{i}": x for i, x in enumerate(sels)}, _dpp="DPP8")
  elif key == "quad_perm":
    sels = [num(x) for x in val.strip("[]").split(",")]
    if len(sels) != 4 or not all(0 <= x < 4 for x in sels): raise ValueError(f"quad_perm takes 4 lane numbers 0..3, got {val!r}")
    kwargs.update(dpp=sum(x << 2 * i for i, x in enumerate(sels)), _dpp="DPP16")
  elif key in NAMED: kwargs.update(dpp=NAMED[key], _dpp="DPP16")
  elif key in ROW_OPS:
    n, lo = num(val), 0 if key in ("row_share", "row_xmask") else 1
    if not lo <= n <= 15: raise ValueError(f"{key} takes {lo}..15, got {val!r}")
    kwargs.update(dpp=ROW_OPS[key] + n, _dpp="DPP16")
  elif key in ("row_mask", "bank_mask"): kwargs[key] = num(val)
  elif key == "bound_ctrl": kwargs["bc"] = num(val)
  elif key == "fi": kwargs["fi"] = num(val)
  else: return False
  return True
