"""Index arithmetic in 32 bits where vmin/vmax prove it fits: a GPU adds and multiplies 32-bit integers in one instruction
and 64-bit ones in two or more, and address math is most of a kernel's integer work (it was all `mul i64`).

Sources first: an index-typed node becomes int32 when every index-typed source already did and its own range (computed
as an unbounded index) lies inside int32; one that can't (its value or a source may not fit, or it reads a variable or a
loaded value) stays 64-bit and widens its int32 sources back. A comparison gets its two sides in one type."""
from __future__ import annotations
from tg.uop import UOp, Ops, UPat, PatternMatcher, GroupOp, dtypes

NARROWABLE = GroupOp.ALU | {Ops.CONST, Ops.VCONST, Ops.RANGE, Ops.SPECIAL, Ops.VECTORIZE, Ops.GEP}
INT32 = (-2**31, 2**31 - 1)

def _ints(u: UOp) -> list[UOp]: return [s for s in u.src if s.dtype.scalar() in (dtypes.index, dtypes.int32)]

def _widen(u: UOp) -> UOp | None:
  """Sources narrowed to int32 cast back to index, for a node that stays 64-bit."""
  if not any(s.dtype.scalar() == dtypes.int32 for s in _ints(u)): return None
  return u.replace(src=tuple(s.cast(dtypes.index.vec(s.dtype.count)) if s.dtype.scalar() == dtypes.int32 else s for s in u.src))

def _narrow(u: UOp) -> UOp | None:
  if u.dtype.scalar() != dtypes.index or u.op not in NARROWABLE: return None
  if all(s.dtype.scalar() == dtypes.int32 for s in _ints(u)) and isinstance(u.vmin, int) and \
     isinstance(u.vmax, int) and INT32[0] <= u.vmin and u.vmax <= INT32[1]:
    return u.replace(dtype=dtypes.int32.vec(u.dtype.count))
  return _widen(u)

def _compare(u: UOp) -> UOp | None: return _widen(u) if len({s.dtype for s in u.src}) > 1 else None

pm_index32 = PatternMatcher([
  (UPat(GroupOp.Comparison, name="u"), _compare),
  (UPat(NARROWABLE, name="u"), _narrow),
])
