"""Instructions: an opcode, the format it is encoded in, and the raw value of every field.

Raw field values are the canonical form, so equality, encoding and decoding are exact; `build` turns the DSL's
operands (registers, constants, modifiers) into raw values, checking widths and register kinds per opcode.
"""
from __future__ import annotations
from typing import Any
from .isa import Arch, Field, Format, Op, Operand, get_arch
from .operands import LITERAL, NULL_CODE, TTMP, VGPR, Reg, decode_const, encode_const
from .syntax import sized_operand

FALLBACK = Operand(32, "FMT_NUM_B32", "OPR_SRC")

class Inst:
  """One encoded instruction. `vals` holds every non-fixed field of `fmt` except the opcode."""
  __slots__ = ("op", "fmt", "vals")

  def __init__(self, op: Op, fmt: Format, vals: dict[str, int]):
    self.op, self.fmt, self.vals = op, fmt, vals

  @property
  def arch(self) -> Arch: return get_arch(self.op.arch)

  @property
  def size(self) -> int: return self.fmt.nbytes

  def to_bytes(self) -> bytes:
    word = self.fmt.fixed_all | (self.op.code << self.fmt.opcode.lo)
    for f in self.fmt.values: word |= (self.vals[f.name] & f.mask) << f.lo
    return word.to_bytes(self.fmt.nbytes, "little")

  def operand(self, name: str) -> Operand: return self.op.operands.get(name, FALLBACK)

  def disasm(self) -> str:
    from .disasm import disasm
    return disasm(self)

  def __eq__(self, other: object) -> bool:
    return isinstance(other, Inst) and self.op is other.op and self.fmt is other.fmt and self.vals == other.vals

  def __hash__(self) -> int: return hash((self.op.name, self.fmt.name, tuple(self.vals.values())))

  def __repr__(self) -> str:
    from .syntax import repr_args
    from .vopd import vopd_repr
    if self.fmt.base == "VOPD": return vopd_repr(self)
    return f"{self.op.mnemonic}({', '.join(repr_args(self))})"

def reg_code(f: Field, raw: int) -> int:
  """The unified operand code a register field's raw value stands for."""
  if f.kind == "vgpr": return raw + VGPR
  if f.kind == "sbase": return raw * 2
  if f.kind == "srsrc": return raw * 4
  return raw

def check_reg(ins: str, f: Field, x: Reg, nregs: int) -> int:
  """The raw field value for register x, raising if its kind or width does not fit the field."""
  kind, code = f.kind, x.code
  where = f"{f.name} of {ins}"
  if x.n != nregs and code != NULL_CODE: raise TypeError(f"{where} takes {nregs} register(s), got {x!r} ({x.n})")
  if kind in ("vgpr", "vdsty"):
    if not x.is_vgpr: raise TypeError(f"{where} must be a VGPR, got {x!r}")
    return code - VGPR
  if kind in ("sgpr", "ssrc", "sbase", "srsrc") and x.is_vgpr: raise TypeError(f"{where} must be a scalar register, got {x!r}")
  first = code - TTMP if TTMP <= code < TTMP + 16 else code if code < 106 else None  # an SGPR/TTMP tuple's first index
  if kind not in ("sbase", "srsrc") and x.n >= 2 and first is not None and first % min(x.n, 4):
    raise ValueError(f"{where}: {x!r} is misaligned (SGPR pairs start at an even register, larger tuples at a multiple of 4)")
  if kind == "sbase":
    if code % 2 or code >= 106: raise ValueError(f"{where} must be an even-aligned SGPR pair, got {x!r}")
    return code // 2
  if kind == "srsrc":
    if code % 4 or code >= 106: raise ValueError(f"{where} must be a 4-aligned SGPR quad, got {x!r}")
    return code // 4
  if code > f.mask: raise ValueError(f"{where} cannot hold {x!r}")
  return code

def pick_format(arch: Arch, op: Op, literal: bool, dpp: str | None) -> Format:
  """The base format, or its _LIT / _DPP16 / _DPP8 variant when a literal or DPP word follows."""
  name = op.fmt
  if dpp: name = f"{name.split('_LIT')[0]}_{dpp}"
  elif literal and not name.endswith("_LIT"): name = f"{name}_LIT"
  if name not in arch.formats or (name != op.fmt and name not in op.variants):
    what = f"a {dpp} word" if dpp else "a literal"
    raise ValueError(f"{op.mnemonic} cannot take {what} (no {name} encoding)")
  return arch.formats[name]

def set_operand(ins: str, f: Field, opnd: Operand, x: Any, vals: dict[str, int]) -> int | None:
  """Encode operand x into field f of vals; returns the literal it needs, if any."""
  if isinstance(x, Reg):
    vals[f.name] = check_reg(ins, f, x, opnd.nregs)
    return None
  if not isinstance(x, (int, float)): raise TypeError(f"{f.name} of {ins}: expected a register or a constant, got {x!r}")
  if f.kind not in ("src", "ssrc"): raise TypeError(f"{f.name} of {ins} must be a register, got the constant {x!r}")
  code, lit = encode_const(x, opnd.ftype, opnd.bits)
  vals[f.name] = code
  return lit

def image_addresses(inst: Inst) -> list[Reg]:
  """An image address given as a list (RDNA4's vaddr0..4, RDNA3's NSA vaddr, vaddr1..4): the VGPR group each field starts."""
  from .image import addr_groups
  v = inst.vals
  first = "vaddr0" if "vaddr0" in v else "vaddr"
  return [Reg(VGPR + v[f"vaddr{k}" if k else first], n) for k, n in enumerate(addr_groups(inst.op, v.get("dim", 0), v.get("a16", 0)))]

def field_value(inst: Inst, name: str) -> Any:
  """The DSL value of a register/constant field (Reg, int, float) as it reads back."""
  if name == "vaddr" and ("vaddr0" in inst.vals or "vaddr1" in inst.vals): return image_addresses(inst)
  f = inst.fmt.by_name[name]
  raw, v = inst.vals[name], inst.vals
  opnd = sized_operand(inst.op, name, inst.operand(name), v.get)
  if f.kind == "vdsty": return Reg(VGPR + ((raw << 1) | (~inst.vals["vdstx"] & 1)), opnd.nregs)
  code = reg_code(f, raw)
  if f.kind in ("src", "ssrc"):
    if code == LITERAL: return inst.vals.get("literal", 0)
    const = decode_const(code, opnd.ftype)
    if const is not None: return const
  return Reg(code, opnd.nregs)
