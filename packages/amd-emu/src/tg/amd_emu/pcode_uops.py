"""Pseudocode to UOps: a symbolic interpreter of the `pcode` AST.

Every value is a typed `V` (a UOp plus AMD's kind u/i/f/b and bit width). Control flow becomes data flow: `if` runs
both arms under a predicate and assignments merge with WHERE, loops with constant bounds unroll, `break` and
`return` turn into predicates too. Integer constants fold as they are built, so loop bounds, bit indices and
`WAVE32` tests resolve at compile time. Registers, memory and cross-lane state come from a `Ctx` (see shapes.py).
"""
from __future__ import annotations
import contextlib
import math
import re
import struct
from typing import Any, Callable, Iterator
from tg.uop import UOp, Ops, dtypes, DType, python_alu
from .pcode import parse

class Unsupported(NotImplementedError): pass

class Widths(dict):
  """C types by bit width; a width C has no type for (a 1201-bit constant, an 8-bit float) is an unsupported value, not a KeyError."""
  def __missing__(self, w: object) -> DType: raise Unsupported(f"{w}-bit values")

FDT = Widths({16: dtypes.float16, 32: dtypes.float32, 64: dtypes.float64})
UDT = Widths({8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64})
IDT = Widths({8: dtypes.int8, 16: dtypes.int16, 32: dtypes.int32, 64: dtypes.int64})
FBITS = {w: dtypes.finfo(dt)[::-1] for w, dt in FDT.items()}  # mantissa, exponent bits

def container(w: int) -> int:
  for c in (8, 16, 32, 64):
    if w <= c: return c
  raise Unsupported(f"{w}-bit values")

def cdt(kind: str, width: int) -> DType:
  if kind == "f": return FDT[width]
  if width == 1: return dtypes.bool
  return (IDT if kind == "i" else UDT)[container(width)]

def _cval(u: UOp) -> Any: return u.arg if u.op is Ops.CONST else None

class V:
  """A pseudocode value: `u` holds it in the C type for (kind, width); ints narrower than their container are kept
  zero- (u/b) or sign- (i) extended."""
  __slots__ = ("u", "kind", "width", "weak", "hexlit")
  def __init__(self, u: UOp, kind: str, width: int, weak: bool = False, hexlit: bool = False):
    self.u, self.kind, self.width, self.weak, self.hexlit = u, kind, width, weak, hexlit
  @property
  def const(self) -> Any: return _cval(self.u)
  def __repr__(self) -> str: return f"V({self.kind}{self.width}, {self.u.op}{'=' + str(self.const) if self.const is not None else ''})"

def const(kind: str, width: int, val: Any, weak: bool = False) -> V:
  dt = cdt(kind, width)
  if dt == dtypes.bool: val = bool(val)
  elif kind != "f": val = wrap(int(val), kind, width)
  return V(UOp.const(dt, val), kind, width, weak)

def wrap(x: int, kind: str, width: int) -> int:
  x &= (1 << width) - 1
  return x - (1 << width) if kind == "i" and x >> (width - 1) else x

# constant folding uses tg.uop's meaning of each op (C's: division truncates toward zero, exact on 64-bit ints; x / 0 and x % 0 fold to 0)
FOLD: dict[Ops, Callable] = {op: python_alu[op] for op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.CMPLT,
                                                           Ops.CMPEQ, Ops.CMPNE, Ops.IDIV, Ops.MOD)}

def alu(op: Ops, a: V, b: V, kind: str, width: int) -> V:
  """a op b in (kind, width), folded when both are integer constants."""
  ca, cb = a.const, b.const
  if ca is not None and cb is not None and kind != "f" and a.kind != "f" and op in FOLD:
    r = FOLD[op](int(ca), int(cb))
    return const("u", 1, r) if op in (Ops.CMPLT, Ops.CMPEQ, Ops.CMPNE) else const(kind, width, r)
  u = a.u.alu(op, b.u)
  if op in (Ops.CMPLT, Ops.CMPEQ, Ops.CMPNE): return V(u, "u", 1)
  return norm(V(u, kind, width))

def norm(v: V) -> V:
  """Re-extend an int narrower than its container after arithmetic."""
  if v.kind == "f" or v.width == 1 or v.width == container(v.width): return v
  return from_bits(bits(v), v.kind, v.width)

def cast_u(u: UOp, dt: DType) -> UOp:
  c = _cval(u)
  if c is not None and dtypes.is_int(dt) and not isinstance(c, float):
    return UOp.const(dt, wrap(int(c), "i" if dt in IDT.values() else "u", dt.itemsize * 8))
  return u.cast(dt)

FMT = {16: "e", 32: "f", 64: "d"}
IFMT = {8: "B", 16: "H", 32: "I", 64: "Q"}

def bitcast_u(u: UOp, dt: DType) -> UOp:
  """A bitcast, folded for constants (the C renderer cannot take the address of a literal)."""
  c = _cval(u)
  if c is None or u.dtype == dt: return u.bitcast(dt)
  w = dt.itemsize * 8
  if dtypes.is_float(u.dtype): raw = struct.unpack("<" + IFMT[w], struct.pack("<" + FMT[w], c))[0]
  else: raw = int(c) & ((1 << w) - 1)
  if dtypes.is_float(dt): return UOp.const(dt, struct.unpack("<" + FMT[w], struct.pack("<" + IFMT[w], raw))[0])
  return UOp.const(dt, wrap(raw, "i" if dt in IDT.values() else "u", w))

def bits(v: V) -> V:
  """The raw bits of v as an unsigned value of its width (a 1-bit value becomes a uint8 0/1)."""
  if v.width == 1:
    return V(v.u.where(UOp.const(dtypes.uint8, 1), UOp.const(dtypes.uint8, 0)) if v.const is None else UOp.const(dtypes.uint8, int(v.const)), "u", 1)
  if v.kind == "f": return V(bitcast_u(v.u, UDT[v.width]), "u", v.width)
  u = bitcast_u(v.u, UDT[container(v.width)])
  if v.kind == "i" and v.width != container(v.width): return and_mask(V(u, "u", v.width), v.width)
  return V(u, "u", v.width)

def and_mask(v: V, w: int) -> V:
  """The low w bits of unsigned bits v, as a value of width w."""
  if v.u.dtype == dtypes.bool: v = V(v.u.cast(dtypes.uint8), "u", 1)
  if w >= v.width: return v
  m = alu(Ops.AND, v, const("u", v.width, (1 << w) - 1), "u", v.width)
  return V(cast_u(m.u, UDT[container(w)]), "u", w) if container(w) != container(v.width) else V(m.u, "u", w)

def resize(raw: V, w: int) -> V:
  """Unsigned bits truncated or zero-extended to width w."""
  if raw.u.dtype == dtypes.bool: raw = V(raw.u.cast(dtypes.uint8), "u", 1)
  if raw.width == w: return raw
  if w < raw.width: return and_mask(raw, w)
  return V(cast_u(raw.u, UDT[container(w)]), "u", w) if container(w) != container(raw.width) else V(raw.u, "u", w)

def from_bits(raw: V, kind: str, w: int) -> V:
  """Reinterpret unsigned bits (resized to w) as kind."""
  r = resize(raw, w) if raw.width != w or raw.width == 1 else raw
  if w == 1: return V(r.u.ne(UOp.const(r.u.dtype, 0)) if r.const is None else UOp.const(dtypes.bool, bool(r.const)), "u", 1)
  if kind == "f": return V(bitcast_u(r.u, FDT[w]), "f", w)
  if kind == "i":
    c = container(w)
    s = V(bitcast_u(r.u, IDT[c]), "i", w)
    if w != c:
      sh = const("i", c, c - w)
      s = V(alu(Ops.SHR, alu(Ops.SHL, s, sh, "i", c), sh, "i", c).u, "i", w)
    return s
  return V(r.u, kind, w)

def conv(v: V, kind: str, w: int) -> V:
  """C-style value conversion (float to int saturates, NaN gives 0)."""
  if v.kind == "denorm": raise Unsupported("DENORM outside a comparison")
  if v.weak: return weak_to(v, kind, w)
  if (v.kind, v.width) == (kind, w) or (v.kind in "ub" and kind in "ub" and v.width == w): return V(v.u, kind, w)
  if w == 1 and kind != "f": return V(v.u.ne(UOp.const(v.u.dtype, 0)) if v.const is None else UOp.const(dtypes.bool, bool(v.const)), "u", 1)
  if v.width == 1:
    if v.const is not None: return const(kind, w, int(v.const))
    return V(v.u.where(UOp.const(cdt(kind, w), 1), UOp.const(cdt(kind, w), 0)), kind, w)
  if kind == "f": return V(cast_u(v.u, FDT[w]), "f", w)
  if v.kind == "f":
    x = v.u if v.width != 16 else v.u.cast(dtypes.float32)
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if kind == "i" else (0, (1 << w) - 1)
    fdt = x.dtype
    t = x.trunc()
    r = t.cast(cdt(kind, w))
    r = (t < UOp.const(fdt, float(lo))).where(UOp.const(r.dtype, lo), r)
    r = (t >= UOp.const(fdt, float(hi) + 1.0)).where(UOp.const(r.dtype, hi), r)
    return norm(V(x.ne(x).where(UOp.const(r.dtype, 0), r), kind, w))
  return norm(V(cast_u(v.u, cdt(kind, container(w))), kind, w))

def weak_to(v: V, kind: str, w: int) -> V:
  c = v.const
  if kind == "f": return V(UOp.const(FDT[w], float(c)), "f", w) if not v.hexlit else from_bits(const("u", w, int(c)), "f", w)
  if w == 1 and kind != "f": return const("u", 1, c)
  return const(kind, w, int(c))

def unify(a: V, b: V) -> tuple[V, V, str, int]:
  if a.weak and b.weak:
    k, w = ("f", 64) if "f" in (a.kind, b.kind) else ("i", 64 if max(abs(int(a.const)), abs(int(b.const))) >= 1 << 31 else 32)
    return weak_to(a, k, w), weak_to(b, k, w), k, w
  if a.weak: a = weak_to(a, b.kind if b.width > 1 else "u", b.width if b.width > 1 else 32) if not (b.kind == "f" and a.kind != "f" and False) else a
  if b.weak: b = weak_to(b, a.kind if a.width > 1 else "u", a.width if a.width > 1 else 32)
  if a.kind == "f" or b.kind == "f":
    w = max(x.width for x in (a, b) if x.kind == "f")
    return conv(a, "f", w), conv(b, "f", w), "f", w
  if a.width == 1 and b.width == 1: return truth(a), truth(b), "u", 1
  w = max(a.width, b.width, 8)
  k = (a if a.width > b.width else b).kind if a.width != b.width else ("i" if a.kind == b.kind == "i" else "u")
  k = "u" if k == "b" else k
  return conv(a, k, w), conv(b, k, w), k, w

ARITH = {"+": Ops.ADD, "-": Ops.SUB, "*": Ops.MUL, "&": Ops.AND, "|": Ops.OR, "^": Ops.XOR}

def binop(op: str, a: V, b: V) -> V:
  if "denorm" in (a.kind, b.kind) and op in ("==", "!="):
    x = b if a.kind == "denorm" else a
    r = is_denorm(conv(x, "f", (a if a.kind == "denorm" else b).width) if x.kind == "f" else x)
    return r if op == "==" else lnot(r)
  if op in ("&&", "||"):
    a, b = truth(a), truth(b)
    if a.const is not None: return (b if a.const else a) if op == "&&" else (a if a.const else b)
    if b.const is not None: return (a if b.const else b) if op == "&&" else (b if b.const else a)
    return V(a.u.alu(Ops.AND if op == "&&" else Ops.OR, b.u), "u", 1)
  if op in ("<<", ">>"): return shift(op, a, b)
  if op == "**":
    if a.const == 2.0 or a.const == 2: return f_exp2(conv(b, "f", 32 if a.weak or a.kind != "f" else a.width))
    raise Unsupported("** with a base other than 2")
  a, b, k, w = unify(a, b)
  if op in ARITH:
    if k == "f" and op in "&|^": raise Unsupported("bitwise op on floats")
    return alu(ARITH[op], a, b, k, w)
  if op == "/": return alu(Ops.FDIV if k == "f" else Ops.IDIV, a, b, k, w)
  if op == "%": return alu(Ops.MOD, a, b, k, w)
  if op == "<": return alu(Ops.CMPLT, a, b, k, w)
  if op == ">": return alu(Ops.CMPLT, b, a, k, w)
  if op == "<=": return lnot(alu(Ops.CMPLT, b, a, k, w)) if k != "f" else binop("||", alu(Ops.CMPLT, a, b, k, w), alu(Ops.CMPEQ, a, b, k, w))
  if op == ">=": return lnot(alu(Ops.CMPLT, a, b, k, w)) if k != "f" else binop("||", alu(Ops.CMPLT, b, a, k, w), alu(Ops.CMPEQ, a, b, k, w))
  if op == "==": return alu(Ops.CMPEQ, a, b, k, w)
  if op == "!=": return alu(Ops.CMPNE, a, b, k, w)
  if op == "<>": return alu(Ops.CMPNE, a, b, k, w) if k != "f" else binop("||", alu(Ops.CMPLT, a, b, k, w), alu(Ops.CMPLT, b, a, k, w))
  raise Unsupported(f"operator {op}")

def shift(op: str, a: V, b: V) -> V:
  """Shifts by the width or more give 0 (or the sign for >> of a signed value), not C's undefined result."""
  if a.weak: a = weak_to(a, "i" if a.const < 1 << 31 else "u", 32 if a.const < 1 << 31 else 64)
  if a.kind == "f": raise Unsupported("shift of a float")
  if a.width == 1: a = conv(a, "u", 32)
  k, w = a.kind, a.width
  c = container(w)
  n = conv(b, "u", 32) if not b.weak else const("u", 32, b.const)
  amt = V(cast_u(n.u, cdt(k, c)), k, c)
  if n.const is not None:
    if n.const >= w: return const(k, w, -1 if k == "i" and op == ">>" and a.const is not None and a.const < 0 else 0) \
      if k != "i" or op == "<<" or a.const is not None else alu(Ops.SHR, a, const(k, c, c - 1), k, w)
    return alu(Ops.SHL if op == "<<" else Ops.SHR, a, amt, k, w)
  big = alu(Ops.CMPLT, const("u", 32, w - 1), n, "u", 32)
  safe = V(big.u.where(UOp.const(amt.u.dtype, 0), amt.u), k, c)
  r = alu(Ops.SHL if op == "<<" else Ops.SHR, a, safe, k, w)
  fill = alu(Ops.SHR, a, const(k, c, c - 1), k, w) if k == "i" and op == ">>" else const(k, w, 0)
  return select(big, fill, r)

def truth(v: V) -> V:
  if v.width == 1 and v.kind != "f" and v.u.dtype != dtypes.bool:
    return const("u", 1, v.const) if v.const is not None else V(v.u.ne(UOp.const(v.u.dtype, 0)), "u", 1)
  return v if v.width == 1 and v.kind != "f" else conv(v, "u", 1) if not v.weak else const("u", 1, bool(v.const))

def lnot(v: V) -> V:
  v = truth(v)
  return const("u", 1, not v.const) if v.const is not None else V(v.u.logical_not(), "u", 1)

def select(c: V, a: V, b: V) -> V:
  c = truth(c)
  if c.const is not None: return a if c.const else b
  if a.weak and b.weak: a, b, _, _ = unify(a, b)
  elif a.weak: a = weak_to(a, b.kind, b.width)
  elif b.weak: b = weak_to(b, a.kind, a.width)
  elif (a.kind, a.width) != (b.kind, b.width): a, b, _, _ = unify(a, b)
  if a.u is b.u: return a
  return V(c.u.where(a.u, b.u), a.kind, a.width)

def neg(v: V) -> V:
  if v.weak: return V(UOp.const(v.u.dtype, -v.const), v.kind, v.width, True)
  if v.kind == "f": return V(v.u.alu(Ops.NEG), "f", v.width)
  return alu(Ops.SUB, const(v.kind, v.width, 0), v, v.kind if v.kind != "b" else "u", v.width)

def bnot(v: V) -> V:
  if v.width == 1: return lnot(v)
  if v.weak: v = weak_to(v, "i", 32)
  b = bits(v)
  return from_bits(alu(Ops.XOR, b, const("u", b.width, (1 << b.width) - 1), "u", b.width), v.kind, v.width)

# ***** float helpers *****
def fparts(x: V) -> tuple[V, int, int]:
  m, e = FBITS[x.width]
  return bits(x), m, e

def is_denorm(x: V) -> V:
  b, m, e = fparts(x)
  ex = and_mask(alu(Ops.SHR, b, const("u", b.width, m), "u", b.width), e)
  man = and_mask(b, m)
  return binop("&&", alu(Ops.CMPEQ, ex, const("u", ex.width, 0), "u", ex.width), alu(Ops.CMPNE, man, const("u", man.width, 0), "u", man.width))

def f_abs(x: V) -> V:
  if x.kind != "f": return select(binop("<", x, const(x.kind, x.width, 0)), neg(x), x)
  b = bits(x)
  return from_bits(alu(Ops.AND, b, const("u", b.width, (1 << (x.width - 1)) - 1), "u", b.width), "f", x.width)

def f_sign(x: V) -> V:
  b = bits(x) if x.kind == "f" else bits(x)
  return truth(alu(Ops.SHR, b, const("u", b.width, x.width - 1), "u", b.width))

def is_nan(x: V) -> V: return V(x.u.ne(x.u), "u", 1) if x.kind == "f" else const("u", 1, 0)

def quiet_bit(x: V) -> V:
  b, m, _ = fparts(x)
  return truth(alu(Ops.AND, b, const("u", b.width, 1 << (m - 1)), "u", b.width))

def f_exp2(n: V) -> V:
  u = n.u.exp2() if n.width != 16 else n.u.cast(dtypes.float32).exp2().cast(dtypes.float16)
  return V(u, "f", n.width)

def f_unary(fn: Callable[[UOp], UOp], x: V) -> V:
  """Math functions in the value's own precision; f16 goes through f32 (exact for the correctly rounded ones)."""
  if x.weak: x = weak_to(x, "f", 64)
  if x.kind != "f": x = conv(x, "f", 32)
  if x.width == 16: return V(fn(x.u.cast(dtypes.float32)).cast(dtypes.float16), "f", 16)
  return V(fn(x.u), "f", x.width)

def f_floor(u: UOp) -> UOp:
  t = u.trunc()
  return (u < t).where(t - UOp.const(u.dtype, 1.0), t)

def ldexp(x: V, n: V) -> V:
  """x * 2**n in two steps, so neither factor overflows when the result does not."""
  if x.kind != "f": x = conv(x, "f", 32)
  w = 64 if x.width == 64 else 32
  xf = x.u.cast(FDT[w]) if x.width == 16 else x.u
  ni = conv(n, "i", 32) if not n.weak else const("i", 32, n.const)
  ni = V(ni.u.maximum(UOp.const(dtypes.int32, -2200)), "i", 32)
  ni = V((ni.u < UOp.const(dtypes.int32, 2200)).where(ni.u, UOp.const(dtypes.int32, 2200)), "i", 32)
  h1 = alu(Ops.IDIV, ni, const("i", 32, 2), "i", 32)
  h2 = alu(Ops.SUB, ni, h1, "i", 32)
  r = xf * h1.u.cast(FDT[w]).exp2() * h2.u.cast(FDT[w]).exp2()
  return V(r.cast(FDT[x.width]) if x.width == 16 else r, "f", x.width)

def exponent(x: V) -> V:
  b, m, e = fparts(x)
  return conv(and_mask(alu(Ops.SHR, b, const("u", b.width, m), "u", b.width), e), "i", 32)

def mantissa(x: V) -> V:
  """frexp's mantissa in [0.5, 1) with x's sign (denormals are scaled first)."""
  w = x.width
  b, m, e = fparts(x)
  scaled = ldexp(x, const("i", 32, m + 2))
  den = is_denorm(x)
  src = bits(select(den, scaled, x))
  keep = alu(Ops.AND, src, const("u", w, ((1 << m) - 1) | (1 << (w - 1))), "u", w)
  return from_bits(alu(Ops.OR, keep, const("u", w, ((1 << (e - 1)) - 2) << m), "u", w), "f", w)

def popcount(x: V) -> V:
  b = bits(x)
  n = const("u", 32, 0)
  for i in range(b.width): n = alu(Ops.ADD, n, resize(and_mask(alu(Ops.SHR, b, const("u", b.width, i), "u", b.width), 1), 32), "u", 32)
  return n

def f2f16_rtz(x: V) -> V:
  """f32 -> f16 rounding toward zero: round to nearest, then step back when that rounded away from zero."""
  r = V(x.u.cast(dtypes.float16), "f", 16)
  away = binop("&&", lnot(is_nan(x)), binop(">", f_abs(conv(r, "f", 32)), f_abs(x)))
  rb = bits(r)
  return from_bits(select(away, alu(Ops.SUB, rb, const("u", 16, 1), "u", 16), rb), "f", 16)

CVT = re.compile(r"(bf16|[uif]\d+)_to_([uif]\d+)|v_cvt_([iu]16)_(f32)")
MINMAX = re.compile(r"v_(min|max)3?_([uif]\d+)")

class Lambda:
  def __init__(self, params: tuple[str, ...], body: list): self.params, self.body = params, body

class Wide:
  """A register tuple wider than 64 bits (VDATA of a b128 load, SDATA of s_load_b512): 32-bit words, low first."""
  def __init__(self, words: tuple[V, ...]): self.words = words
  @property
  def width(self) -> int: return 32 * len(self.words)

class Interp:
  """Evaluates one pseudocode text for one lane (or once, for scalar instructions) against a Ctx."""
  def __init__(self, ctx: Any):
    self.ctx = ctx
    self.env: dict[str, Any] = {}
    self.initial: dict[str, Any] = {}  # values read from the context, to tell which outputs were assigned
    self.declared: set[str] = set()
    self.pred = const("u", 1, 1)
    self.brk: list[V] = []
    self.ret: list[tuple[V, V | None]] = []
    self.in_bit_write = False

  def run(self, text: str, bindings: dict[str, Any] | None = None) -> dict[str, Any]:
    if bindings: self.env.update(bindings)
    self.block(parse(text))
    return self.env

  # ***** statements *****
  def active(self) -> V:
    p = self.pred
    for b in self.brk: p = binop("&&", p, lnot(b))
    if self.ret: p = binop("&&", p, lnot(self.ret[-1][0]))
    return p

  def block(self, stmts: Any) -> None:
    for s in stmts: self.stmt(s)

  def stmt(self, s: tuple) -> None:
    if (run := self.STMTS.get(s[0])) is None: raise Unsupported(f"statement {s[0]}")
    run(self, s)

  def stmt_if(self, s: tuple) -> None:
    """Each arm runs under the predicate that it is the first whose condition holds; arms known false are skipped."""
    saved = self.pred
    taken = const("u", 1, 0)
    for cond, body in s[1]:
      c = const("u", 1, 1) if cond is None else truth(self.expr(cond))
      arm = binop("&&", c, lnot(taken))
      if arm.const is not None and not arm.const: continue
      self.pred = binop("&&", saved, arm)
      self.block(body)
      taken = binop("||", taken, c)
      if taken.const: break
    self.pred = saved

  def stmt_for(self, s: tuple) -> None:
    """Loops with constant bounds unroll; a `break` becomes a predicate on the iterations after it."""
    lo, hi = self.expr(s[2]), self.expr(s[3])
    if lo.const is None or hi.const is None: raise Unsupported("loop with a variable bound")
    k, w = ("i", 32) if lo.weak else (lo.kind, lo.width)
    self.brk.append(const("u", 1, 0))
    for i in range(int(lo.const), int(hi.const) + 1):
      self.env[s[1]] = const(k, w, i)
      self.block(s[4])
      if self.brk[-1].const: break
    self.brk.pop()

  def stmt_declare(self, s: tuple) -> None:
    _, name, kind, width, count = s
    kind = "u" if kind == "b" and width == 1 else kind
    zero = const(kind, width, 0) if width <= 64 else Wide(tuple(const("b", 32, 0) for _ in range(width // 32)))
    self.env[name] = [zero] * count if count else zero
    if name == "S" and count:  # `declare S : 32'B[3]` (v_fma_mix*) names the sources as an array: S[i] is Si
      self.env[name] = [from_bits(resize(bits(s), width), kind, width) if isinstance(s := self.ctx.read(f"S{i}", self), V) else zero
                        for i in range(count)]
    self.declared.add(name)

  def stmt_return(self, s: tuple) -> None:
    """The value returned is the first active lane-path's: later returns only fill in where none returned yet."""
    done, val = self.ret[-1]
    v = self.expr(s[1])
    act = self.active()
    self.ret[-1] = (binop("||", done, act), v if val is None else select(act, v, val))

  def stmt_break(self, s: tuple) -> None: self.brk[-1] = binop("||", self.brk[-1], self.active())
  def stmt_lambda(self, s: tuple) -> None: self.env[s[1]] = Lambda(s[2], s[3])

  STMTS: dict[str, Callable[[Interp, tuple], None]] = {
    "assign": lambda self, s: self.assign(s[1], self.expr(s[2])), "if": stmt_if, "for": stmt_for, "declare": stmt_declare,
    "break": stmt_break, "return": stmt_return, "lambda": stmt_lambda,
    "nop": lambda self, s: None}

  def merge(self, old: Any, new: Any) -> Any:
    """new where the current predicate holds, else old."""
    if isinstance(new, Wide):
      ow = old.words if isinstance(old, Wide) else (old,) * len(new.words)
      return Wide(tuple(self.merge(o, n) for o, n in zip(ow, new.words)))
    p = self.active()
    if p.const: return new
    return select(p, new, old)

  def lookup(self, name: str) -> Any:
    if name in self.env: return self.env[name]
    v = self.ctx.read(name, self)
    if v is None: raise Unsupported(f"unknown name {name}")
    self.env[name] = self.initial[name] = v
    return v

  # ***** assignments *****
  def assign(self, lv: tuple, val: Any) -> None:
    """Store val to an lvalue: a name, a typed field, a bit slice, an indexed bit, element or register, or a concatenation."""
    self.bind_root(lv)
    if (store := self.ASSIGNS.get(lv[0])) is None: raise Unsupported(f"assignment to {lv[0]}")
    store(self, lv, val)

  def bind_root(self, lv: tuple) -> None:
    """The variable a piecewise store (x[3] = .., x.u16 = ..) writes into: from the context, else a 64-bit zero temporary."""
    root = lv
    while root[0] in ("slice", "idx", "field"): root = root[1]
    if root is lv or root[0] != "name" or root[1] in self.env or root[1] in ("VGPR", "MEM", "SGPR"): return
    try: self.lookup(root[1])
    except Unsupported: self.env[root[1]] = const("u", 64, 0)  # an undeclared temporary written piecewise

  @contextlib.contextmanager
  def bit_write(self) -> Iterator[None]:
    """While a single bit of a lane mask is stored, the mask is written whole (not again one lane's bit of it)."""
    self.in_bit_write = True
    try: yield
    finally: self.in_bit_write = False

  def assign_name(self, lv: tuple, val: Any) -> None:
    name = lv[1]
    if name in self.ctx.lane_masks and self.ctx.lane is not None and not self.in_bit_write:  # a whole-mask write in a lane: this lane's bit
      bit = write_bits(self.lookup(name), self.ctx.lane, 1, truth(conv(val, "u", 32) if not val.weak else const("u", 1, val.const & 1)))
      with self.bit_write(): self.assign(lv, bit)
      return
    try: old = self.lookup(name)
    except Unsupported: old = None
    if isinstance(old, Wide): self.env[name] = self.merge(old, val if isinstance(val, Wide) else split_words(bits(val), len(old.words)))
    elif old is None or (isinstance(old, V) and old.weak and name not in self.declared) or isinstance(val, (Lambda, list)):
      self.env[name] = self.rebind(old, val)
    else: self.env[name] = self.merge(old, self.keep_type(name, old, join_words(val) if isinstance(val, Wide) else val))

  def rebind(self, old: Any, val: Any) -> Any:
    """A first store, one over an untyped (weak) value, or of a lambda or array: the name takes the value's type."""
    if isinstance(val, V) and val.weak: val = weak_to(val, "i" if val.kind != "f" else "f", 32 if val.kind != "f" else 64)
    return val if old is None else self.merge(conv(old, val.kind, val.width) if isinstance(val, V) else old, val)

  def keep_type(self, name: str, old: V, val: V) -> V:
    """A declared variable or a register keeps its type: the value converts to it (a register takes same-width bits as
    they are); an undeclared temporary whose type differs takes the old type too."""
    if name in self.declared or name in self.ctx.regs or (old.kind, old.width) != (val.kind, val.width):
      val = conv(val, old.kind, old.width) if not (name in self.ctx.regs and val.kind in "ub" and val.width == old.width) else val
      if name in self.ctx.regs and (val.kind, val.width) != (old.kind, old.width): val = from_bits(bits(val), old.kind, old.width)
    return val

  def assign_field(self, lv: tuple, val: Any) -> None:
    """x.u16 = ..: the low bits of x (a field of no type, x.someField, is the context's to place or ignore)."""
    if lv[1][0] == "idx" and lv[1][1] == ("name", "SGPR"):  # s_movreld: SGPR[addr].b32 = ...
      self.ctx.sgpr_write(self.expr(lv[1][2]), bits(conv(val, *self.vtype(lv[2]))) if isinstance(val, V) else val, self.active())
      return
    kind, width = self.vtype(lv[2])
    if kind is None: return self.ctx.ignore_field(lv)
    v = conv(val, kind, width) if not isinstance(val, Wide) else val
    unbound = lv[1][0] == "name" and lv[1][1] not in self.env and self.ctx.read(lv[1][1], self) is None
    self.assign(lv[1], v if unbound else write_bits(self.expr(lv[1]), 0, width, v))

  def assign_slice(self, lv: tuple, val: Any) -> None:
    hi, lo = self.expr(lv[2]), self.expr(lv[3])
    if hi.const is None or lo.const is None: raise Unsupported("slice assignment with variable bounds")
    self.assign(lv[1], write_bits(self.expr(lv[1]), int(lo.const), int(hi.const) - int(lo.const) + 1, val))

  def assign_idx(self, lv: tuple, val: Any) -> None:
    """HW_REGISTERS[i], VGPR[lane][reg], an array element (constant or variable index) or one bit of a value."""
    if lv[1] == ("name", "HW_REGISTERS"): return self.ctx.hwreg_write(self.expr(lv[2]), val, self.active())
    if lv[1][0] == "idx" and lv[1][1] == ("name", "VGPR"): return self.ctx.vgpr_write(self.expr(lv[1][2]), self.expr(lv[2]), val, self.active(), self)
    if lv[1][0] == "name" and lv[1][1] == "MEM": raise Unsupported("untyped memory store")
    base, i = self.expr(lv[1]), self.expr(lv[2])
    if isinstance(base, list): return self.set_array(lv[1], self.store_elem(base, i, val))
    with self.bit_write(): self.assign(lv[1], write_bits(base, i, 1, truth(val)))

  def store_elem(self, arr: list, i: V, val: V) -> list:
    if i.const is not None:
      new = list(arr)
      new[int(i.const)] = self.merge_elem(arr[int(i.const)], val)
      return new
    return [self.merge_elem(e, val, binop("==", i, const("u", 32, k))) for k, e in enumerate(arr)]

  def assign_cat(self, lv: tuple, val: Any) -> None:
    """{hi, lo} = ..: each part takes its width of bits, from the lowest up."""
    raw = bits(val) if isinstance(val, V) else join_words(val)
    pos = 0
    for part in reversed(lv[1]):
      w = self.width_of(part)
      self.assign(part, from_bits(slice_bits(raw, pos, w), "u", w))
      pos += w

  def assign_call(self, lv: tuple, val: Any) -> None: raise Unsupported("MEM call" if lv[1] == "MEM" else "assignment to call")

  ASSIGNS: dict[str, Callable[[Interp, tuple, Any], None]] = {
    "name": assign_name, "field": assign_field, "slice": assign_slice, "idx": assign_idx, "cat": assign_cat, "call": assign_call}

  def merge_elem(self, old: V, val: V, cond: V | None = None) -> V:
    v = conv(val, old.kind, old.width) if isinstance(val, V) else val
    p = self.active() if cond is None else binop("&&", self.active(), cond)
    return v if p.const else select(p, v, old)

  def set_array(self, lv: tuple, arr: list) -> None:
    if lv[0] != "name": raise Unsupported("nested array assignment")
    self.env[lv[1]] = arr

  def width_of(self, e: tuple) -> int:
    if e[0] == "field": return self.vtype(e[2])[1]  # type: ignore[return-value]
    v = self.expr(e)
    return v.width

  def vtype(self, f: str) -> tuple[str | None, int]:
    if f in ("fp8", "bf8"): return "b", 8  # 8-bit floats stay bits: their conversions (numfmt) read them
    m = re.fullmatch(r"(bf|[uibf])(\d+)", f)
    if m is None: return None, 0
    if m.group(1) == "bf" and m.group(2) != "16": raise Unsupported(f"{f} values (an 8-bit float format)")  # not 8 bits of an int
    k = "b" if m.group(1) == "bf" else m.group(1)
    return ("u" if k == "b" and m.group(2) == "1" else k), int(m.group(2))

  # ***** expressions *****
  def expr(self, e: tuple) -> Any:
    if (ev := self.EXPRS.get(e[0])) is None: raise Unsupported(f"expression {e[0]}")
    return ev(self, e)

  def expr_field(self, e: tuple) -> Any:
    """x.f32: a typed view of x; MEM[addr].u32 and SGPR[i].b32 are reads; a field of no type is the context's."""
    if e[1] == ("name", "MEM"): raise Unsupported("MEM field")
    kind, width = self.vtype(e[2])
    if kind is None: return self.ctx.named_field(e, self)
    if e[1][0] == "idx" and e[1][1] == ("name", "MEM"): return self.ctx.mem_load(self.expr(e[1][2]), kind, width, self.active(), self)
    if e[1][0] == "idx" and e[1][1] == ("name", "SGPR"): return from_bits(self.ctx.sgpr_read(self.expr(e[1][2]), width), kind, width)
    return typed_view(self.expr(e[1]), kind, width)

  def expr_select(self, e: tuple) -> Any:
    c = truth(self.expr(e[1]))
    if c.const is not None: return self.expr(e[2] if c.const else e[3])
    return select(c, self.expr(e[2]), self.expr(e[3]))

  def expr_slice(self, e: tuple) -> V | Wide:
    base, hi, lo = self.expr(e[1]), self.expr(e[2]), self.expr(e[3])
    if hi.const is None or lo.const is None: raise Unsupported("slice with variable bounds")
    return slice_value(base, int(hi.const), int(lo.const))

  def expr_idx(self, e: tuple) -> Any:
    """VGPR[lane][reg], VGPR[lane] (a lane's registers), HW_REGISTERS[i], an array element, or one bit of a value."""
    if e[1] == ("name", "MEM"): raise Unsupported("untyped memory read")
    if e[1][0] == "idx" and e[1][1] == ("name", "VGPR"): return self.ctx.vgpr_read(self.expr(e[1][2]), self.expr(e[2]), self)
    if e[1] == ("name", "VGPR"): return ("vgpr_lane", self.expr(e[2]))
    if e[1] == ("name", "HW_REGISTERS"): return self.ctx.hwreg_read(self.expr(e[2]))
    base, i = self.expr(e[1]), self.expr(e[2])
    if isinstance(base, list): return pick(base, i)
    return truth(slice_bits(bits(flat(base)), i, 1))

  def expr_bin(self, e: tuple) -> V:
    a, b = self.expr(e[2]), self.expr(e[3])
    return binop(e[1], flat(a), flat(b))

  EXPRS: dict[str, Callable[[Interp, tuple], Any]] = {
    "lit": lambda self, e: literal(*e[1:]), "name": lambda self, e: self.lookup(e[1]), "field": expr_field, "bin": expr_bin,
    "un": lambda self, e: UNARY.get(e[1], bnot)(self.expr(e[2])), "?": expr_select,
    "cast": lambda self, e: cast(self.expr(e[3]), e[1], e[2]), "cat": lambda self, e: cat_bits([self.expr(p) for p in e[1]]),
    "slice": expr_slice, "slicew": lambda self, e: slice_bits(bits(self.expr(e[1])), self.expr(e[2]), int(self.expr(e[3]).const)),
    "idx": expr_idx, "call": lambda self, e: self.call(e[1], list(e[2]))}

  # ***** calls *****
  def call(self, fn: str, args: list) -> Any:
    """A pseudocode lambda, a builtin (BUILTINS; conversions and integer min/max by name pattern), else another instruction's
    pseudocode (v_max_f32(a, b))."""
    f = self.env.get(fn)
    if fn in ("isSignalNAN", "isQuietNAN") and args and args[0][0] == "cast" and args[0][1] == "f":
      args = [args[0][3]]  # isSignalNAN(64'F(S0.f32)): C's widening would quiet the NaN first; the class is the operand's
    if isinstance(f, Lambda): return self.call_lambda(f, [self.expr(a) for a in args])
    vals = [flat(self.expr(a)) for a in args]
    if fn == "f32_to_f16" and self.rtz(): return f2f16_rtz(conv(vals[0], "f", 32))
    if fn in ("writeableBitMask", "HwRegWriteMask"): return self.ctx.hwreg_writable(vals[0])
    if (builtin := BUILTINS.get(fn)) is not None: return builtin(*vals)
    if m := CVT.fullmatch(fn): return convert(*((m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))), vals[0])
    if (m := MINMAX.fullmatch(fn)) and m.group(2)[0] != "f": return int_minmax(m.group(1), vals)
    return self.call_op(fn, vals)

  def rtz(self) -> bool:
    mode = self.env.get("ROUND_MODE")
    return isinstance(mode, V) and mode.const == ROUND_TOWARD_ZERO

  def call_op(self, fn: str, vals: list[V]) -> V:
    """`v_max_f32(a, b)` and friends: another instruction's pseudocode with S0.. bound to the arguments."""
    text = self.ctx.op_pcode(fn)
    if text is None: raise Unsupported(f"function {fn}")
    sub = Interp(OpCallCtx(self.ctx, vals))
    env = sub.run(text)
    m = re.search(r"\bD0\.(\w+)\s*=", text)  # the result as the called instruction types it (D0.f32 = ...), not its raw bits
    kind, width = self.vtype(m.group(1)) if m else (None, 0)
    if kind is None or isinstance(env["D0"], Wide): return env["D0"]
    return from_bits(resize(bits(env["D0"]), width), kind, width)

  def call_lambda(self, f: Lambda, args: list[V]) -> V:
    saved = {p: self.env.get(p) for p in f.params}
    for p, a in zip(f.params, args): self.env[p] = a
    self.ret.append((const("u", 1, 0), None))
    self.block(f.body)
    _, val = self.ret.pop()
    for p, old in saved.items():
      if old is None: self.env.pop(p, None)
      else: self.env[p] = old
    if val is None: raise Unsupported("lambda without a return value")
    return val

ROUND_TOWARD_ZERO = 3

def flat(x: Any) -> Any:
  """A wide register tuple as one value (its low 64 bits); anything else as it is."""
  return join_words(x) if isinstance(x, Wide) else x

def literal(val: Any, kind: str, width: int, weak: bool, hexlit: bool) -> V:
  """A number in the text: untyped (weak) ones take their type from where they are used."""
  if weak: return V(UOp.const(dtypes.float64 if kind == "f" else dtypes.int64, val), kind, 64 if kind == "f" else 32, True, hexlit)
  if kind == "f": return V(UOp.const(FDT[width], val), "f", width)
  return const(kind if width > 1 else "u", width, val)

def typed_view(base: Any, kind: str, width: int) -> V:
  """x.f32, x.u16 ..: x's bits as that type (an untyped number converts; DENORM stays the marker it is)."""
  base = join_words(base, width) if isinstance(base, Wide) else base
  if base.kind == "denorm": return V(base.u, "denorm", width)
  if base.weak: return weak_to(base, kind, width)
  if base.kind == kind and base.width == width: return base
  return from_bits(bits(base), kind, width)

def cast(v: Any, kind: str, width: int) -> V:
  """N'K(x): a value conversion, except to bits (N'B) which keeps x's bits and a hex literal to float which is its bits."""
  v = flat(v)
  if kind == "f" and v.weak and v.hexlit: return from_bits(const("u", width, v.const), "f", width)
  if kind == "b": return from_bits(resize_any(v, width) if v.kind != "f" or v.width == width else bits(conv(v, "f", width)), "b", width)
  if width > 64: raise Unsupported(f"{width}-bit cast")
  return conv(v, kind if width > 1 else "u", width)

def cat_bits(parts: list[V]) -> V:
  """{a, b, ..}: the parts' bits, the first highest."""
  out: V | None = None
  for p in parts:
    pb = bits(p) if not p.weak else const("u", 32, p.const)
    out = pb if out is None else concat(out, pb)
  return out  # type: ignore[return-value]

def slice_value(base: Any, h: int, l: int) -> V | Wide:
  """x[h : l]: bits l..h (h < l reverses them); a slice of a wide register wider than 64 bits stays its words."""
  if isinstance(base, Wide): base = join_words(base, max(h, l) + 1) if max(h, l) < 64 else Wide(base.words[l // 32:h // 32 + 1])
  if isinstance(base, Wide): return base if h - l + 1 > 64 else join_words(base)
  if h < l: return reverse_bits(slice_bits(bits(base), h, l - h + 1))
  return slice_bits(bits(base) if not base.weak else const("u", 64, base.const), l, h - l + 1)

def pick(arr: list, i: V) -> Any:
  """arr[i], a select chain over the elements when i is a runtime value."""
  if i.const is not None: return arr[int(i.const)]
  out = arr[0]
  for k in range(1, len(arr)): out = select(binop("==", i, const("u", 32, k)), arr[k], out)
  return out

UNARY: dict[str, Callable[[V], V]] = {"-": neg, "+": lambda x: x, "!": lnot}  # any other (~) is bitwise not

# ***** builtin functions of the pseudocode *****
def fma(a: V, b: V, c: V) -> V:
  a, b, _, w = unify(a, b)
  a, c, _, w = unify(a, c)
  b = conv(b, "f", w)
  if w == 16: return V(a.u.cast(dtypes.float32).mulacc(b.u.cast(dtypes.float32), c.u.cast(dtypes.float32)).cast(dtypes.float16), "f", 16)
  return V(a.u.mulacc(b.u, c.u), "f", w)

def to_quiet_nan(x: V) -> V:
  b, m, _ = fparts(x)
  return select(is_nan(x), from_bits(alu(Ops.OR, b, const("u", b.width, 1 << (m - 1)), "u", b.width), "f", x.width), x)

def pow2(base: V, n: V) -> V:
  if base.const in (2, 2.0): return f_exp2(conv(n, "f", 32) if n.kind != "f" else n)
  raise Unsupported("pow with a base other than 2")

def signext(x: V) -> V:
  if x.weak: return const("i", 64, x.const)
  return conv(x if x.kind == "i" else from_bits(bits(x), "i", x.width), "i", 64)

def signext_from_bit(x: V, nbits: V) -> V:
  n = conv(nbits, "u", 32)
  v = conv(x, "i", 32)
  sh = alu(Ops.SUB, const("u", 32, 32), n, "u", 32)
  r = shift(">>", shift("<<", v, sh), sh)
  return select(binop("==", n, const("u", 32, 0)), const("i", 32, 0), r)

def find_first_one(x: V) -> V:
  b = bits(x)
  r = const("i", 32, -1)
  for i in reversed(range(b.width)): r = select(truth(slice_bits(b, const("u", 32, i), 1)), const("i", 32, i), r)
  return r

def convert(src: str, dst: str, x: V) -> V:
  """f32_to_i32(x) and friends: x read as the source type (an int of the other signedness as it is), then converted."""
  sk, sw = ("b", 16) if src == "bf16" else (src[0], int(src[1:]))
  if x.weak: x = weak_to(x, sk, sw)
  if x.kind != sk and not (x.kind in "ub" and sk in "ub"): x = conv(x, sk, sw) if (x.kind == "f") == (sk == "f") else x
  return conv(x, dst[0], int(dst[1:]))

def int_minmax(which: str, vals: list[V]) -> V:
  out = vals[0]
  for v in vals[1:]: out = select(binop("<" if which == "min" else ">", out, v), out, v)
  return out

BUILTINS: dict[str, Callable[..., V]] = {
  "abs": f_abs, "sign": f_sign, "isNAN": is_nan, "isSignalNAN": lambda x: binop("&&", is_nan(x), lnot(quiet_bit(x))),
  "isQuietNAN": lambda x: binop("&&", is_nan(x), quiet_bit(x)), "cvtToQuietNAN": to_quiet_nan, "exponent": exponent,
  "mantissa": mantissa, "fma": fma, "sqrt": lambda x: f_unary(lambda u: u.sqrt(), x), "log2": lambda x: f_unary(lambda u: u.log2(), x),
  "sin": lambda x: f_unary(lambda u: u.sin(), x), "cos": lambda x: f_unary(lambda u: (u + UOp.const(u.dtype, math.pi / 2)).sin(), x),
  "trunc": lambda x: f_unary(lambda u: u.trunc(), x), "floor": lambda x: f_unary(f_floor, x),
  "fract": lambda x: f_unary(lambda u: u - f_floor(u), x),
  "isEven": lambda x: f_unary_pred(x, lambda u: (f_floor(u * UOp.const(u.dtype, 0.5)) * UOp.const(u.dtype, 2.0)).eq(u)),
  "pow": pow2, "ldexp": ldexp, "signext": signext, "signext_from_bit": signext_from_bit, "countbits": popcount, "count_ones": popcount,
  "reverse_bits": lambda x: reverse_bits(bits(x)), "s_ff1_i32_b32": find_first_one, "s_ff1_i32_b64": find_first_one,
  "bf16_to_f32": lambda x: from_bits(concat(bits(x), const("u", 16, 0)), "f", 32)}

def f_unary_pred(x: V, fn: Callable[[UOp], UOp]) -> V:
  if x.kind != "f": x = conv(x, "f", 32)
  u = x.u.cast(dtypes.float32) if x.width == 16 else x.u
  return V(fn(u), "u", 1)

def resize_any(v: V, w: int) -> V:
  if v.weak: return const("u", w, v.const)
  return resize(bits(v), w)

def slice_bits(raw: V, lo: V | int, w: int) -> V:
  """w bits of raw from bit lo (lo may be a runtime value)."""
  if isinstance(lo, int): lo = const("u", 32, lo)
  if raw.width == 1: raw = resize(raw, 8)
  s = shift(">>", raw, lo)
  return resize(s, w) if w <= s.width else resize(s, w)

def write_bits(base: Any, lo: V | int, w: int, val: Any) -> Any:
  """base with bits [lo, lo+w) replaced by val's low bits."""
  if isinstance(base, Wide):
    if not isinstance(lo, int): raise Unsupported("variable bit index into a wide register")
    words = list(base.words)
    vb = join_words(val) if isinstance(val, Wide) else bits(val) if not val.weak else const("u", 64, val.const)
    if lo % 32 == 0 and w % 32 == 0:
      for k in range(w // 32): words[lo // 32 + k] = from_bits(slice_bits(vb, 32 * k, 32), "b", 32) if vb.width > 32 * k else const("b", 32, 0)
      return Wide(tuple(words))
    j = lo // 32
    words[j] = write_bits(words[j], lo % 32, w, val)
    return Wide(tuple(words))
  if isinstance(val, Wide): val = join_words(val)
  b = bits(base) if not base.weak else const("u", 32, base.const)
  vb = bits(val) if not val.weak else const("u", 64, val.const)
  if isinstance(lo, int) and lo == 0 and w >= b.width: return from_bits(resize(vb, b.width), base.kind if not base.weak else "u", b.width)
  W = b.width if b.width > 1 else 8
  lo_v = lo if isinstance(lo, V) else const("u", 32, lo)
  mask = shift("<<", const("u", W, (1 << w) - 1), lo_v)
  ins = shift("<<", resize(and_mask(resize(vb, W), min(w, W)), W), lo_v)
  r = alu(Ops.OR, alu(Ops.AND, resize(b, W), bnot(mask), "u", W), alu(Ops.AND, ins, mask, "u", W), "u", W)
  r = resize(r, b.width)
  return from_bits(r, base.kind if not base.weak else "u", b.width)

def concat(hi: V, lo: V) -> V:
  w = hi.width + lo.width
  if w > 64: raise Unsupported(f"{w}-bit concatenation")
  return alu(Ops.OR, shift("<<", resize(hi, w), const("u", 32, lo.width)), resize(lo, w), "u", w)

def reverse_bits(b: V) -> V:
  out = const("u", b.width, 0)
  for i in range(b.width):
    bit = resize(and_mask(alu(Ops.SHR, b, const("u", b.width, i), "u", b.width), 1), b.width)
    out = alu(Ops.OR, out, alu(Ops.SHL, bit, const("u", b.width, b.width - 1 - i), "u", b.width), "u", b.width)
  return out

def split_words(raw: V, n: int) -> Wide:
  return Wide(tuple(from_bits(slice_bits(raw, 32 * k, 32), "b", 32) if raw.width > 32 * k else const("b", 32, 0) for k in range(n)))

def join_words(w: Any, nbits: int = 64) -> V:
  if isinstance(w, V): return w
  n = min(len(w.words), (nbits + 31) // 32)
  out = bits(w.words[0])
  for k in range(1, n): out = concat(bits(w.words[k]), out)
  return out

class OpCallCtx:
  """The context of an instruction's pseudocode called as a function: S0.. are the arguments, D0 the result."""
  regs = frozenset({"D0"})
  lane_masks: frozenset = frozenset()
  def __init__(self, parent: Any, args: list[V]):
    self.parent, self.args, self.lane = parent, args, None
  def read(self, name: str, it: Interp) -> Any:
    m = re.fullmatch(r"S(\d)", name)
    if m and int(m.group(1)) < len(self.args): return self.args[int(m.group(1))]
    if name == "D0": return const("b", 64, 0)
    return self.parent.read(name, it) if name in CONST_NAMES else None
  def op_pcode(self, fn: str) -> str | None: return self.parent.op_pcode(fn)
  def named_field(self, e: tuple, it: Interp) -> V: return self.parent.named_field(e, it)
  def ignore_field(self, lv: tuple) -> None: pass

CONST_NAMES = {"WAVE32": 1, "WAVE64": 0, "PI": math.pi, "ROUND_TOWARD_ZERO": ROUND_TOWARD_ZERO, "ROUND_NEAREST_EVEN": 0}
FLOAT_NAMES = {"NAN": math.nan, "INF": math.inf, "UNDERFLOW_F32": 0.0, "UNDERFLOW_F64": 0.0, "OVERFLOW_F32": math.inf, "OVERFLOW_F64": math.inf,
               "MAX_FLOAT_F32": struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0],
               "MAX_FLOAT_F64": 1.7976931348623157e308}

def const_name(name: str) -> Any:
  """Architectural constants of the pseudocode; None when the name is not one."""
  if name in ("wave32", "wave64"): name = name.upper()  # RDNA4's v_permlane16_var_b32 spells it in lower case
  if name in CONST_NAMES:
    c = CONST_NAMES[name]
    if isinstance(c, float): return V(UOp.const(dtypes.float64, c), "f", 64, True)
    return const("u", 1, c) if name.startswith("WAVE") else const("i", 32, c, True)
  if name in FLOAT_NAMES: return V(UOp.const(dtypes.float64, FLOAT_NAMES[name]), "f", 64, True)
  if name == "DENORM": return V(UOp.const(dtypes.float64, 0.0), "denorm", 64)
  return None
