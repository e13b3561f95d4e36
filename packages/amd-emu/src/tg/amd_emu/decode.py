"""Decode bytes into Insts: the format is recognised by its fixed bits, then literals and DPP words are consumed."""
from __future__ import annotations
import functools
from .inst import Inst
from .syntax import is_literal_op
from .isa import Arch, Format, Op, get_arch

SRC_FIELDS = ("src0", "src1", "src2", "ssrc0", "ssrc1", "srcx0", "srcy0")

@functools.cache
def _table(arch: str) -> list[tuple[int, int, dict[int, tuple[Op, Format]]]]:
  """[(mask, match, {opcode: (op, format)})], most specific fixed bits first."""
  a = get_arch(arch)
  groups: dict[tuple[int, int], dict[int, tuple[Op, Format]]] = {}
  for op in sorted(a.ops.values(), key=lambda o: o.name):
    fmt = a.formats[op.fmt]
    if fmt.base == "VOPD" and op.code > fmt.opcode.mask: continue  # Y-only halves are not an X opcode
    groups.setdefault(fmt.fixed, {}).setdefault(op.code, (op, fmt))
  return sorted(((m, v, ops) for (m, v), ops in groups.items()), key=lambda t: -bin(t[0]).count("1"))

@functools.cache
def _vopd_k(arch: str) -> frozenset[int]:
  """VOPD opcodes whose literal K follows the instruction (v_dual_fmaak/fmamk)."""
  return frozenset(op.code for op in get_arch(arch).ops.values() if op.enum == "VOPDOp" and is_literal_op(op))

def _variant(a: Arch, fmt: Format, word: int) -> Format:
  """The _DPP16/_DPP8/_LIT variant the first words ask for (src0 = 250 / 233, any source = 255)."""
  fields = fmt.by_name
  src0 = fields.get("src0")
  if src0 is not None:
    code = word >> src0.lo & src0.mask
    for marker, suffix in ((250, "_DPP16"), (233, "_DPP8"), (234, "_DPP8")):
      if code == marker and fmt.name + suffix in a.formats: return a.formats[fmt.name + suffix]
  if fmt.name.endswith("_LIT"): return fmt
  if fmt.name == "MIMG" and word >> fields["nsa"].lo & 1: return a.formats["MIMG_NSA"]
  if fmt.name == "VOPD" and {word >> f.lo & f.mask for f in (fields["opx"], fields["opy"])} & _vopd_k(a.name): return a.formats["VOPD_LIT"]
  for name in SRC_FIELDS:
    f = fields.get(name)
    if f is not None and f.lo + f.width <= fmt.nbytes * 8 and (word >> f.lo & f.mask) == 255:
      return a.formats.get(fmt.name + "_LIT", fmt)
  return fmt

def decode(data: bytes, arch: str, offset: int = 0) -> Inst:
  """Decode the instruction at data[offset:]."""
  a = get_arch(arch)
  if len(data) - offset < 4: raise ValueError(f"truncated instruction at offset {offset:#x}: {len(data) - offset} bytes left")
  first = int.from_bytes(data[offset:offset + 4], "little")
  for mask, match, ops in _table(arch):
    if first & mask != match: continue
    f = next(iter(ops.values()))[1].opcode
    op, fmt = ops.get(first >> f.lo & f.mask, (None, None))
    if op is None or fmt is None: continue
    fmt = _variant(a, fmt, int.from_bytes(data[offset:offset + fmt.nbytes], "little"))
    if len(data) - offset < fmt.nbytes: raise ValueError(f"truncated {fmt.name} instruction at offset {offset:#x}: dword 0x{first:08x}")
    word = int.from_bytes(data[offset:offset + fmt.nbytes], "little")
    inst = Inst(op, fmt, {f.name: word >> f.lo & f.mask for f in fmt.values})
    if fmt.base == "VOPD" and ("VOPDOp", inst.vals["opy"]) not in a.by_code:
      raise ValueError(f"cannot decode {arch} VOPD at offset {offset:#x}: its Y half (opy {inst.vals['opy']}) is no instruction")
    return inst
  raise ValueError(f"cannot decode {arch} instruction at offset {offset:#x}: dword 0x{first:08x}")

def decode_all(data: bytes, arch: str) -> list[tuple[int, Inst]]:
  """[(offset, inst)] for a whole code buffer."""
  out, off = [], 0
  while off < len(data):
    inst = decode(data, arch, off)
    out.append((off, inst))
    off += inst.size
  return out
