"""Range analysis: the smallest and largest value a UOp can take (vmin/vmax), as a table from op to a small rule.

A rule gets the UOp and returns (lo, hi), or None when it can't say more than the dtype's own range. Rules of
VALUE_RULES hold for every dtype (constants, variables, ranges, lanes); the rules of INT_RULES only run on integer and
bool values, whose arithmetic is exact: on floats a value is anywhere in its dtype's range."""
from __future__ import annotations
from typing import TYPE_CHECKING, Any, Callable
from tg.uop.dtype import DType, Invalid, PtrDType, dtypes
from tg.uop.ops import Ops, python_alu

if TYPE_CHECKING:
  from tg.uop.uop import UOp

Range = tuple[Any, Any]
Rule = Callable[["UOp"], Range | None]
ADDRESS = (0, 2**64 - 1)

_bounds_cache: dict[DType, Range] = {}
def dtype_bounds(dt: DType) -> Range:
  """(dtypes.min, dtypes.max) of dt, looked up once per dtype (range analysis asks for it on every node)."""
  if (b := _bounds_cache.get(dt)) is None: b = _bounds_cache[dt] = (dtypes.min(dt), dtypes.max(dt))
  return b

def _clamp(u: UOp, a: Any, b: Any) -> Range:
  """(a, b) if the dtype holds both, else the whole dtype (the value may wrap)."""
  lo, hi = dtype_bounds(u.dtype)
  return (a, b) if lo <= a and b <= hi else (lo, hi)

# ***** every dtype *****
def _const(u: UOp) -> Range: return (u.arg, u.arg) if u.arg is not Invalid else (0, 0)
def _lanes(u: UOp) -> Range:
  srcs = u.src if u.op is Ops.VECTORIZE else u.src[:1]
  return min(s.vmin for s in srcs), max(s.vmax for s in srcs)
def _after(u: UOp) -> Range | None: return None if isinstance(u.dtype, PtrDType) else _lanes(u)  # a buffer after deps is an address

VALUE_RULES: dict[Ops, Rule] = {
  Ops.CONST: _const,
  Ops.VCONST: lambda u: (min(u.arg), max(u.arg)),
  Ops.DEFINE_VAR: lambda u: (u.arg[1], u.arg[2]),
  Ops.BIND: lambda u: u.src[1]._min_max,
  Ops.RANGE: lambda u: (0, max(0, u.src[0].vmax - 1)),
  Ops.SPECIAL: lambda u: (0, max(0, u.src[0].vmax - 1)),
  Ops.VECTORIZE: _lanes, Ops.GEP: _lanes, Ops.AFTER: _after,
}

# ***** integers and bools *****
def _is_bool(u: UOp) -> bool: return u.dtype.scalar() is dtypes.bool

def _add(u: UOp) -> Range:
  a, b = u.src
  return _clamp(u, a.vmin + b.vmin, a.vmax + b.vmax)
def _sub(u: UOp) -> Range:
  a, b = u.src
  return _clamp(u, a.vmin - b.vmax, a.vmax - b.vmin)
def _mul(u: UOp) -> Range:
  a, b = u.src
  if _is_bool(u): return a.vmin and b.vmin, a.vmax and b.vmax
  vals = (a.vmin * b.vmin, a.vmin * b.vmax, a.vmax * b.vmin, a.vmax * b.vmax)
  return _clamp(u, min(vals), max(vals))
def _neg(u: UOp) -> Range:
  a = u.src[0]
  return _clamp(u, -a.vmax, -a.vmin) if u.dtype != dtypes.bool else (not a.vmax, not a.vmin)
def _max(u: UOp) -> Range:
  a, b = u.src
  return max(a.vmin, b.vmin), max(a.vmax, b.vmax)
def _idiv(u: UOp) -> Range | None:
  a, b = u.src
  if not (b.vmin > 0 or b.vmax < 0): return None  # the divisor may be 0
  vals = [python_alu[Ops.IDIV](x, y) for x in (a.vmin, a.vmax) for y in (b.vmin, b.vmax)]
  return min(vals), max(vals)
def _mod(u: UOp) -> Range | None:
  """C's remainder (the dividend's sign): |a % b| < |b|, so a divisor of either sign bounds it (a range holding 0 doesn't)."""
  a, b = u.src
  if b.vmin <= 0 <= b.vmax: return None
  lo = b.vmin if b.vmin > 0 else -b.vmax  # the smallest |b|
  m = max(abs(b.vmin), abs(b.vmax)) - 1
  if a.vmin >= 0: return (a.vmin, a.vmax) if a.vmax <= lo - 1 else (0, min(a.vmax, m))
  if a.vmax <= 0: return max(a.vmin, -m), 0
  return max(a.vmin, -m), min(a.vmax, m)
def _cmplt(u: UOp) -> Range | None:
  a, b = u.src
  if a.dtype.count != 1: return None
  if a.vmax < b.vmin: return True, True
  if a.vmin >= b.vmax: return False, False
  return False, True
def _cmpeq_ne(u: UOp) -> Range | None:
  a, b = u.src
  if a.dtype.count != 1: return None
  same = a.vmin == a.vmax == b.vmin == b.vmax
  if same or a.vmax < b.vmin or b.vmax < a.vmin: return ((u.op is Ops.CMPEQ) == same,) * 2  # type: ignore[return-value]
  return False, True
def _where(u: UOp) -> Range:
  c, t, f = u.src
  if f.op is Ops.CONST and f.arg is Invalid: return t._min_max  # an index under its gate: where it's valid
  if c.vmin == c.vmax: return (t if c.vmin else f)._min_max
  return min(t.vmin, f.vmin), max(t.vmax, f.vmax)
def _and(u: UOp) -> Range | None:
  a, b = u.src
  if _is_bool(u): return a.vmin and b.vmin, a.vmax and b.vmax
  return (0, min(a.vmax, b.vmax)) if a.vmin >= 0 and b.vmin >= 0 else None
def _or(u: UOp) -> Range | None:
  a, b = u.src
  return (a.vmin or b.vmin, a.vmax or b.vmax) if _is_bool(u) else None
def _shl(u: UOp) -> Range | None:
  a, b = u.src
  return _clamp(u, a.vmin << b.vmin, a.vmax << b.vmin) if b.vmin == b.vmax and a.vmin >= 0 else None
def _shr(u: UOp) -> Range | None:
  a, b = u.src
  return (a.vmin >> b.vmax, a.vmax >> b.vmin) if b.vmin >= 0 and a.vmin >= 0 else None
def _cast(u: UOp) -> Range | None:
  s = u.src[0]
  if not (dtypes.is_int(s.dtype) or s.dtype.scalar() == dtypes.bool): return None
  a, b = s.vmin, s.vmax
  if _is_bool(u): return (bool(a) if a == b else False), (bool(a) or bool(b) or a != b)
  lo, hi = dtype_bounds(u.dtype)
  return (int(a), int(b)) if lo <= a and b <= hi else None

INT_RULES: dict[Ops, Rule] = {
  Ops.ADD: _add, Ops.SUB: _sub, Ops.MUL: _mul, Ops.NEG: _neg, Ops.MAX: _max, Ops.IDIV: _idiv, Ops.MOD: _mod,
  Ops.CMPLT: _cmplt, Ops.CMPNE: _cmpeq_ne, Ops.CMPEQ: _cmpeq_ne, Ops.WHERE: _where, Ops.AND: _and, Ops.OR: _or,
  Ops.SHL: _shl, Ops.SHR: _shr, Ops.CAST: _cast,
}

_fallback: dict[DType, tuple[bool, Range]] = {}
def _dtype_fallback(dt: DType) -> tuple[bool, Range]:
  """Whether INT_RULES apply to values of dt, and the range when no rule says more."""
  if isinstance(dt, PtrDType): return False, ADDRESS
  if dt is dtypes.void: return False, (0, 0)  # effects (STORE, END, ...) have no value
  return dt.scalar() is dtypes.bool or dtypes.is_int(dt), dtype_bounds(dt)

def min_max(u: UOp) -> Range:
  """(vmin, vmax) of u, its sources' already known."""
  if (rule := VALUE_RULES.get(u.op)) is not None and (r := rule(u)) is not None: return r
  if (fb := _fallback.get(dt := u.dtype)) is None: fb = _fallback[dt] = _dtype_fallback(dt)
  if fb[0] and (rule := INT_RULES.get(u.op)) is not None and (r := rule(u)) is not None: return r
  return fb[1]
