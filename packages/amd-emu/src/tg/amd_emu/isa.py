"""The ISA tables of one architecture, loaded from the generated json (tables/) into small typed records."""
from __future__ import annotations
import functools
import json
from dataclasses import dataclass, field
from importlib import resources

ARCHS = ("rdna3", "rdna4")
REG_KINDS = ("src", "ssrc", "sgpr", "vgpr", "sbase", "srsrc", "vdsty")
SIGNED = ("simm16", "offset", "ioffset")  # immediates that may be negative (branches, memory offsets)

@dataclass(frozen=True)
class Field:
  """One bit field of an encoding; `extra` is the fixed value, enum name, or the default when left out."""
  name: str
  lo: int
  width: int
  kind: str
  extra: int | str | None

  @property
  def mask(self) -> int: return (1 << self.width) - 1

  @property
  def default(self) -> int:
    """The raw value when left out (a default VGPR is given in operand space, v0 = 256)."""
    if not isinstance(self.extra, int) or self.kind == "fixed": return 0
    return self.extra - 256 if self.kind == "vgpr" and self.extra >= 256 else self.extra

  @property
  def signed(self) -> bool: return self.name in SIGNED

@dataclass(frozen=True)
class Format:
  """An encoding: its size, its fields, and the fixed bits (of the first dword) that recognise it."""
  name: str
  nbytes: int
  fields: tuple[Field, ...]
  by_name: dict[str, Field] = field(hash=False, compare=False, repr=False)

  @functools.cached_property
  def fixed(self) -> tuple[int, int]:
    """(mask, value) over the first dword."""
    mask = val = 0
    for f in self.fields:
      if f.kind == "fixed" and f.lo < 32: mask |= f.mask << f.lo; val |= f.extra << f.lo  # type: ignore[operator]
    return mask, val

  @functools.cached_property
  def fixed_all(self) -> int:
    """All fixed bits over the whole instruction."""
    return sum(f.extra << f.lo for f in self.fields if f.kind == "fixed")  # type: ignore[operator]

  @functools.cached_property
  def opcode(self) -> Field: return next(f for f in self.fields if f.kind == "opcode")

  @functools.cached_property
  def values(self) -> tuple[Field, ...]:
    """The fields an instruction sets: everything but fixed bits and the (first) opcode."""
    return tuple(f for f in self.fields if f.kind != "fixed" and f is not self.opcode)

  @property
  def base(self) -> str: return self.name.split("_LIT")[0].split("_DPP")[0].split("_NSA")[0]

@dataclass(frozen=True)
class Operand:
  """An operand's width in bits, AMD data format (FMT_NUM_F32...) and operand type (OPR_SRC...)."""
  bits: int
  dfmt: str
  otype: str

  @property
  def nregs(self) -> int:
    if self.dfmt == "FMT_NUM_M64": return 1  # lane masks are 32 bits in wave32
    return max(1, (self.bits + 31) // 32)

  @property
  def ftype(self) -> str:
    """The float type inline float constants take for this operand: f16, f32 or f64."""
    if self.bits == 64 and self.dfmt != "FMT_NUM_M64": return "f64"
    return "f16" if self.bits == 16 or "16" in self.dfmt else "f32"

  @property
  def half16(self) -> bool:
    """A 16-bit operand, which VOP1/VOP2/VOPC can take from a VGPR's high half; not an 8-bit-float pair (RDNA4's fp8/bf8
    conversions), which sits in a whole 32-bit register and whose pseudocode picks the bytes itself."""
    return self.bits == 16 and not self.f8

  @property
  def f8(self) -> bool: return "FP8" in self.dfmt or "BF8" in self.dfmt

@dataclass(frozen=True, eq=False)
class Op:
  """One opcode of one arch: its name, enum value, base format, other formats it may use, operands."""
  arch: str
  name: str
  enum: str
  code: int
  fmt: str
  variants: tuple[str, ...]
  operands: dict[str, Operand]
  pcode: str | None

  @property
  def mnemonic(self) -> str: return self.name.lower()

  def __repr__(self) -> str: return f"<{self.arch} {self.name}>"

def reg_field(row: list) -> list:
  """RDNA4's buffer/image encodings keep their resource and sampler SGPRs in 9-bit fields the data calls `bits`: they hold an
  SGPR number like any 7-bit `sgpr` field."""
  return [row[0], row[1], row[2], "sgpr", row[4]] if row[0] in ("rsrc", "samp") and row[3] == "bits" else row

class Arch:
  """All formats and opcodes of one architecture, with lookup tables for encoding and decoding."""
  def __init__(self, name: str, data: dict):
    self.name = name
    self.formats = {n: Format(n, nb, fs := tuple(Field(*reg_field(r)) for r in rows), {f.name: f for f in fs})
                    for n, (nb, rows) in data["formats"].items()}
    sdst_dpp = self._sdst_dpp()
    self._mimg_nsa()
    self.ops = {n: Op(name, n, e, c, b, tuple(v) + (sdst_dpp if b == "VOP3_SDST" and all(o[0] <= 32 for k, o in opr.items() if k != "vdst") else ()),
                      {k: Operand(*o) for k, o in opr.items()}, data["pcode"].get(n))
                for n, (e, c, b, v, opr) in data["ops"].items()}
    self.hwreg: dict[str, int] = data["hwreg"]
    self.msg: dict[str, int] = data["msg"]
    self.by_code: dict[tuple[str, int], Op] = {}
    for op in self.ops.values(): self.by_code.setdefault((op.enum, op.code), op)

  def _sdst_dpp(self) -> tuple[str, ...]:
    """VOPC in VOP3 (VOP3_SDST: a lane mask in vdst) takes VOP3's DPP words too, as LLVM encodes `v_cmp_*_e64_dpp`; the data
    lists no such formats, so they are VOP3's with the scalar vdst (32-bit operands only)."""
    out = []
    for dpp in ("DPP16", "DPP8"):
      src, sd = self.formats.get(f"VOP3_{dpp}"), self.formats.get("VOP3_SDST")
      if src is None or sd is None: continue
      fs = tuple(sd.by_name["vdst"] if f.name == "vdst" else f for f in src.fields)
      self.formats[f"VOP3_SDST_{dpp}"] = Format(f"VOP3_SDST_{dpp}", src.nbytes, fs, {f.name: f for f in fs})
      out.append(f"VOP3_SDST_{dpp}")
    return tuple(out)

  def _mimg_nsa(self) -> None:
    """RDNA3's non-sequential image address (nsa = 1): one more dword whose bytes name the VGPRs of address groups 1-4 (vaddr
    is group 0); the data has no such format, so it is MIMG's with vaddr1..vaddr4 at bits 64-95."""
    if (mimg := self.formats.get("MIMG")) is None: return
    fs = mimg.fields + tuple(Field(f"vaddr{k}", 56 + 8 * k, 8, "bits", None) for k in range(1, 5))
    self.formats["MIMG_NSA"] = Format("MIMG_NSA", mimg.nbytes + 4, fs, {f.name: f for f in fs})

  def op(self, name: str) -> Op:
    try: return self.ops[name.upper()]
    except KeyError: raise ValueError(f"unknown instruction {name!r} for {self.name}") from None

  def __repr__(self) -> str: return f"Arch({self.name!r})"

@functools.cache
def get_arch(name: str) -> Arch:
  if name not in ARCHS: raise ValueError(f"unknown arch {name!r}: expected one of {', '.join(ARCHS)}")
  return Arch(name, json.loads(resources.files("tg.amd_emu").joinpath("tables", f"{name}.json").read_text()))
