"""VOPD: two VALU ops issued together. Each half is built alone (`v_dual_mul_f32(v[0], v[1], v[2])`), then
`vopd(x, y)` packs them; the Y destination is stored as index>>1 with its low bit the inverse of X's."""
from __future__ import annotations
from dataclasses import dataclass
from typing import Any
from .inst import Inst, field_value
from .isa import Op, get_arch
from .build import build
from .syntax import slots

X_NAMES = {"vdsty": "vdstx", "srcy0": "srcx0", "vsrcy1": "vsrcx1"}

@dataclass(frozen=True)
class DualHalf:
  """One half of a VOPD pair, not encodable alone."""
  op: Op
  args: tuple
  kwargs: dict[str, Any]

  def __repr__(self) -> str:
    args = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
    return f"{self.op.mnemonic}({', '.join(args)})"

def vopd(x: DualHalf, y: DualHalf) -> Inst:
  """Pack two v_dual_* halves into one VOPD instruction."""
  if x.op.code > 15: raise ValueError(f"{x.op.mnemonic} can only be the Y half of a VOPD (opx is 4 bits)")
  iy = build(y.op, y.args, y.kwargs)
  ix = build(x.op, x.args, x.kwargs)
  lits = {i.vals["literal"] for i in (ix, iy) if "literal" in i.vals}
  if len(lits) > 1: raise ValueError(f"vopd halves need two different literals {sorted(map(hex, lits))}: only one fits")
  vx = {X_NAMES[k]: v for k, v in ix.vals.items() if k in X_NAMES}
  vdsty = iy.vals["vdsty"]
  if (vdsty ^ vx["vdstx"]) & 1 == 0: raise ValueError(f"vopd: vdstx v{vx['vdstx']} and vdsty v{vdsty} must be one even, one odd")
  fmt = get_arch(x.op.arch).formats["VOPD_LIT" if lits else "VOPD"]
  vals = {"opy": y.op.code, **vx, "vdsty": vdsty >> 1, "srcy0": iy.vals["srcy0"], "vsrcy1": iy.vals["vsrcy1"]}
  if lits: vals["literal"] = lits.pop()
  return Inst(x.op, fmt, {f.name: vals.get(f.name, 0) for f in fmt.values})

def halves(inst: Inst) -> list[tuple[Op, list[str]]]:
  """(op, operand texts) of the X and Y halves of a decoded VOPD."""
  from .disasm import operand_text
  y = get_arch(inst.op.arch).by_code[("VOPDOp", inst.vals["opy"])]
  def texts(op: Op, names: dict[str, str]) -> list[str]:
    return [operand_text(inst, names.get(s, s)) for s in slots(op) if s != "vcc"]
  return [(inst.op, texts(inst.op, X_NAMES)), (y, texts(y, {}))]

def vopd_repr(inst: Inst) -> str:
  y = get_arch(inst.op.arch).by_code[("VOPDOp", inst.vals["opy"])]
  def half(op: Op, names: dict[str, str]) -> str:
    return f"{op.mnemonic}({', '.join(repr(field_value(inst, names.get(s, s))) if s != 'K' else hex(inst.vals['literal']) for s in slots(op))})"
  return f"vopd({half(inst.op, X_NAMES)}, {half(y, {})})"
