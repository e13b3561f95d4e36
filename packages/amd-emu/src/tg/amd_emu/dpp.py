"""DPP (data-parallel primitives): the lane each lane's src0 comes from, and which lanes write.

DPP16 (`dpp` control field): quad_perm, row_shl/shr/ror, row_mirror, row_half_mirror, row_share, row_xmask within
rows of 16 lanes; a source lane outside the row, or disabled in EXEC unless `fi` (fetch inactive) is set, is invalid:
with `bc` (bound_ctrl) it reads 0, without it the lane does not write. `row_mask`/`bank_mask` (rows of 16, banks of 4
lanes within a row) switch lanes' writes off. DPP8 picks any lane within each group of 8 (`lane_sel_*`); an inactive
source lane reads 0 unless fi (src0 = 234).
"""
from __future__ import annotations
from tg.uop import UOp, dtypes
from .inst import Inst
from .pcode_uops import Unsupported

DPP8_FI = 234  # src0 marker of DPP8 with fetch-inactive (233 without)

def _u(x: int) -> UOp: return UOp.const(dtypes.uint32, x)

def _row(lane: UOp, base_mask: int, sel: UOp) -> UOp: return (lane & _u(~base_mask & 0xFFFFFFFF)) | sel

def source_lane(inst: Inst, lane: UOp) -> tuple[UOp, UOp | None]:
  """(the lane src0 is read from, whether it lies in the row (None: always)); lane is a uint32 UOp."""
  v = inst.vals
  if "dpp" not in v:  # DPP8
    packed = sum(v[f"lane_sel_{i}"] << 3 * i for i in range(8))
    return _row(lane, 7, (_u(packed) >> ((lane & _u(7)) * _u(3))) & _u(7)), None
  ctrl, i = v["dpp"], lane & _u(15)
  if ctrl <= 0xFF: return _row(lane, 3, (_u(ctrl) >> ((lane & _u(3)) * _u(2))) & _u(3)), None
  n = ctrl & 15
  if 0x101 <= ctrl <= 0x10F: return lane + _u(n), (i + _u(n)) < _u(16)
  if 0x111 <= ctrl <= 0x11F: return lane - _u(n), (i < _u(n)).logical_not()
  if 0x121 <= ctrl <= 0x12F: return _row(lane, 15, (i - _u(n)) & _u(15)), None
  if ctrl == 0x140: return _row(lane, 15, _u(15) - i), None
  if ctrl == 0x141: return _row(lane, 7, _u(7) - (lane & _u(7))), None
  if 0x150 <= ctrl <= 0x15F: return _row(lane, 15, _u(n)), None
  if 0x160 <= ctrl <= 0x16F: return _row(lane, 15, i ^ _u(n)), None
  raise Unsupported(f"DPP control {ctrl:#x} (not an RDNA DPP16 pattern)")

def fetch_inactive(inst: Inst) -> bool:
  return bool(inst.vals["fi"]) if "fi" in inst.vals else inst.vals["src0"] == DPP8_FI

def lane_enabled(inst: Inst, lane: UOp) -> UOp | None:
  """row_mask and bank_mask for this lane (None when every lane is enabled)."""
  v = inst.vals
  if "row_mask" not in v or (v["row_mask"] == 0xF and v["bank_mask"] == 0xF): return None
  row = (_u(v["row_mask"]) >> (lane >> _u(4))) & _u(1)
  bank = (_u(v["bank_mask"]) >> ((lane >> _u(2)) & _u(3))) & _u(1)
  return (row & bank).ne(_u(0))
