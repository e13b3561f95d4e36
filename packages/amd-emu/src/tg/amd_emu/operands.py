"""Operands: registers (`s[0]`, `v[4:7]`, `ttmp[9]`, VCC, EXEC, M0, NULL, SCC...) with modifiers, and constants.

Every register is a code in the 9-bit unified operand space (s0 = 0, vcc_lo = 106, ttmp0 = 108, v0 = 256) plus
a count of consecutive registers, so encoding a register into any field is arithmetic on that code.
"""
from __future__ import annotations
import math
import struct
from dataclasses import dataclass, replace

SGPR, VCC_CODE, TTMP, NULL_CODE, M0_CODE, EXEC_CODE, LITERAL, VGPR = 0, 106, 108, 124, 125, 126, 255, 256
INLINE_FLOATS = {0.5: 240, -0.5: 241, 1.0: 242, -1.0: 243, 2.0: 244, -2.0: 245, 4.0: 246, -4.0: 247}
FLOAT_CONSTS = {code: val for val, code in INLINE_FLOATS.items()}  # the same table read from the code side
INV_2PI = {"f16": 0x3118, "f32": 0x3E22F983, "f64": 0x3FC45F306DC9C882}
SPECIAL = {106: ("vcc_lo", "vcc"), 107: ("vcc_hi",), 124: ("null",), 125: ("m0",), 126: ("exec_lo", "exec"), 127: ("exec_hi",),
           235: ("src_shared_base",), 236: ("src_shared_limit",), 237: ("src_private_base",), 238: ("src_private_limit",),
           251: ("src_vccz",), 252: ("src_execz",), 253: ("src_scc",), 254: ("src_lds_direct",)}
NAMED = {name: (code, i + 1) for code, names in SPECIAL.items() for i, name in enumerate(names)} | {"scc": (253, 1)}

@dataclass(frozen=True)
class Reg:
  """`n` consecutive registers from `code`, with the VOP3 source modifiers and the 16-bit half selection."""
  code: int
  n: int = 1
  neg: bool = False
  abs: bool = False
  hi: bool = False

  def __neg__(self) -> Reg: return replace(self, neg=not self.neg)
  def __abs__(self) -> Reg: return replace(self, abs=True)

  @property
  def h(self) -> Reg: return replace(self, hi=True)

  @property
  def lo(self) -> Reg:
    """The low 16-bit half (LLVM's `.l`)."""
    return replace(self, hi=False)

  @property
  def plain(self) -> Reg: return Reg(self.code, self.n)

  @property
  def is_vgpr(self) -> bool: return self.code >= VGPR

  @property
  def is_scalar(self) -> bool: return self.code < 128 or self.code in SPECIAL

  def __str__(self) -> str: return reg_name(self.code, self.n)

  def __repr__(self) -> str:
    base = reg_repr(self.code, self.n)
    if self.hi: base += ".h"
    if self.abs: base = f"abs({base})"
    return f"-{base}" if self.neg else base

def _range(prefix: str, first: int, n: int) -> str: return f"{prefix}{first}" if n == 1 else f"{prefix}[{first}:{first + n - 1}]"

def reg_name(code: int, n: int = 1) -> str:
  """LLVM's name for n registers starting at operand code `code`."""
  if code >= VGPR: return _range("v", code - VGPR, n)
  if code < VCC_CODE: return _range("s", code, n)
  if TTMP <= code < NULL_CODE: return _range("ttmp", code - TTMP, n)
  names = SPECIAL.get(code)
  if code == NULL_CODE: return "null"  # NULL stands in for a register of any width
  if names is None or n > len(names): raise ValueError(f"no register of {n} dwords at operand code {code}")
  return names[n - 1]

def reg_repr(code: int, n: int = 1) -> str:
  """The DSL expression that builds this register."""
  for prefix, first in (("v", VGPR), ("s", SGPR), ("ttmp", TTMP)):
    if first <= code and (prefix != "s" or code < VCC_CODE) and (prefix != "ttmp" or code < NULL_CODE):
      return f"{prefix}[{code - first}]" if n == 1 else f"{prefix}[{code - first}:{code - first + n - 1}]"
  return "SCC" if code == 253 else reg_name(code, n).upper()

class RegFile:
  """`s[3]`, `s[0:1]`: indexing builds registers of one kind."""
  def __init__(self, prefix: str, first: int, count: int):
    self.prefix, self.first, self.count = prefix, first, count

  def __getitem__(self, key: int | slice) -> Reg:
    lo, hi = (key.start, key.stop) if isinstance(key, slice) else (key, key)
    if not isinstance(lo, int) or not isinstance(hi, int) or not 0 <= lo <= hi < self.count:
      raise ValueError(f"bad register range {self.prefix}[{lo}:{hi}]: indices must be 0..{self.count - 1}, inclusive, lo <= hi")
    return Reg(self.first + lo, hi - lo + 1)

s, v, ttmp = RegFile("s", SGPR, 106), RegFile("v", VGPR, 256), RegFile("ttmp", TTMP, 16)
VCC_LO, VCC_HI, VCC = Reg(106), Reg(107), Reg(106, 2)
EXEC_LO, EXEC_HI, EXEC = Reg(126), Reg(127), Reg(126, 2)
M0, NULL, SCC, VCCZ, EXECZ = Reg(125), Reg(124), Reg(253), Reg(251), Reg(252)

def f16_bits(x: float) -> int: return struct.unpack("<H", struct.pack("<e", x))[0]
def f32_bits(x: float) -> int: return struct.unpack("<I", struct.pack("<f", x))[0]

def float_bits(x: float, ftype: str) -> int:
  if ftype == "f16": return f16_bits(x)
  if ftype == "f32": return f32_bits(x)
  return struct.unpack("<Q", struct.pack("<d", x))[0]

def encode_const(x: int | float, ftype: str, nbits: int) -> tuple[int, int | None]:
  """(operand code, literal or None) for a Python constant, inline when the hardware has it inline."""
  if isinstance(x, bool): x = int(x)
  if isinstance(x, int):
    if 0 <= x <= 64: return 128 + x, None
    if -16 <= x < 0: return 192 - x, None
    lo = -(1 << 31) if nbits > 16 else -(1 << 15)
    if not lo <= x < (1 << 32): raise ValueError(f"constant {x} does not fit a 32-bit literal")
    if ftype == "f32" and nbits == 32:  # the bits of an inline float (0x40000000 is 2.0) are inline too, as LLVM encodes them
      code = next((c for val, c in INLINE_FLOATS.items() if f32_bits(val) == x & 0xFFFFFFFF), 248 if x & 0xFFFFFFFF == INV_2PI["f32"] else None)
      if code is not None: return code, None
    return LITERAL, x & 0xFFFFFFFF
  if x in INLINE_FLOATS: return INLINE_FLOATS[x], None
  bits = float_bits(x, ftype)
  if bits == INV_2PI[ftype] or (ftype != "f64" and math.isclose(x, 1 / (2 * math.pi), rel_tol=1e-7)): return 248, None
  if ftype == "f64":
    if bits & 0xFFFFFFFF: raise ValueError(f"f64 constant {x} is not inline and its low 32 bits are not zero: a literal holds only the high 32")
    return LITERAL, bits >> 32
  return LITERAL, bits

def decode_const(code: int, ftype: str) -> int | float | None:
  """The Python value of an inline constant code, None when the code is not a constant."""
  if 128 <= code <= 192: return code - 128
  if 193 <= code <= 208: return 192 - code
  if code == 248: return 1 / (2 * math.pi)
  return FLOAT_CONSTS.get(code)
