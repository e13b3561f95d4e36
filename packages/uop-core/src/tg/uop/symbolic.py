"""Simplification of index math as pattern matchers: constant folding, identities, like terms, div/mod, comparisons,
and narrowing an index by the gate that guards it.

Integer division and modulo follow C (truncate toward zero), so the identities that only hold for floor division
are applied only where the range analysis (vmin/vmax) proves the operands non-negative. Fixed-width integers wrap
(as C's with -fwrapv): + and * are still a ring, so like terms combine freely, but moving a constant across < or //
is only done where the sum provably doesn't wrap (`exact`)."""
from __future__ import annotations
import math
from typing import Any
from tg.uop.helpers import cdiv
from tg.uop.dtype import DType, PtrDType, dtypes, float_to_bits, bits_to_float
from tg.uop.ops import GroupOp, Ops, exec_alu
from tg.uop.rewrite import PatternMatcher, UPat, graph_rewrite
from tg.uop.uop import Invalid, UOp, build_uop
from tg.uop.upat_compile import guard
from tg.uop.vrange import dtype_bounds

class _IntDtypes(dict):
  """dtype -> whether it holds integer values (not a pointer), answered once per dtype: guards read it as `INT[x.dtype]`."""
  def __missing__(self, dt: DType) -> bool:
    r = self[dt] = dtypes.is_int(dt) and not isinstance(dt, PtrDType)
    return r
INT = _IntDtypes()
def _is_int(u: UOp) -> bool: return INT[u.dtype]

# Ops.X lookups are slow on Python 3.11 (Enum's metaclass has a __getattr__): the folds below run on every node
_ADD, _MUL, _CONST, _MOD, _IDIV, _WHERE = Ops.ADD, Ops.MUL, Ops.CONST, Ops.MOD, Ops.IDIV, Ops.WHERE
_BOOL = dtypes.bool

# ***** constant folding and identities: valid for every dtype *****
def fold_consts(x: UOp) -> UOp | None:
  if any(s.op is Ops.CONST and s.arg is Invalid for s in x.src): return None
  if x.dtype.count > 1: return None
  return x.const_like(exec_alu(x.op, x.dtype, [s.arg for s in x.src]))

# a sum's range is as wide as its sources' together (or the whole dtype where it may wrap): one number only when each
# source is one, so a sum of a variable needs no range of its own to be ruled out; where the left source is a sum too,
# neither is it while that sum's sources aren't one number (their ranges its own would need anyway): along x+1+1+...
# the step (t + c1) + c2 is ruled out by t alone, so no sum of the chain, nor the new constant of each step (an integer
# constant is one number), needs a range. The right source is tested first: constants go right, so a right source that
# isn't one number (x0+x1+...) spares computing the range of the left one, often a long sum nothing else asks the range
# of. A gated index must keep its gate.
@guard("x.dtype.count == 1 and (x.dtype is BOOL or INT[x.dtype]) and x.op is not CONST and "
       "not (x.op is WHERE and x.src[2].op is CONST and x.src[2].arg is Invalid) and "
       "(x.op is not ADD or (x.src[1].op is CONST or x.src[1].vmin == x.src[1].vmax) and "
       "(x.src[0].op is not ADD or (x.src[0].src[1].op is CONST or x.src[0].src[1].vmin == x.src[0].src[1].vmax) and "
       "x.src[0].src[0].vmin == x.src[0].src[0].vmax) and x.src[0].vmin == x.src[0].vmax)",
       BOOL=_BOOL, INT=INT, CONST=_CONST, WHERE=_WHERE, ADD=_ADD, Invalid=Invalid)
def fold_by_range(x: UOp) -> UOp | None:
  """An integer or bool value whose range is one number is that number."""
  return x.const_like(x.vmin) if x.vmin == x.vmax else None

def fold_cast(c: UOp, x: UOp) -> UOp | None:
  if c.dtype.count > 1 or c.arg is Invalid: return None
  return UOp.const(x.dtype, c.arg)

def fold_bitcast(c: UOp, x: UOp) -> UOp | None:
  """The same bits, read as another scalar type."""
  if x.dtype.count > 1 or c.arg is Invalid or x.dtype.itemsize != c.dtype.itemsize or dtypes.index in (x.dtype, c.dtype): return None
  bits = float_to_bits(c.arg, c.dtype) if dtypes.is_float(c.dtype) else int(c.arg) & ((1 << 8 * c.dtype.itemsize) - 1)
  return x.const_like(bits_to_float(bits, x.dtype) if dtypes.is_float(x.dtype) else bits)

symbolic_simple = PatternMatcher([
  (UPat(GroupOp.ALU, src=UPat(Ops.CONST), name="x"), fold_consts),
  (UPat(GroupOp.ALU | {Ops.CAST}, name="x"), fold_by_range),
  (UPat(Ops.CAST, src=(UPat(Ops.CONST, name="c"),), name="x"), fold_cast),
  (UPat(Ops.CAST, name="x"), lambda x: x.src[0] if x.src[0].dtype == x.dtype else None),
  (UPat(Ops.BITCAST, name="x"), lambda x: x.src[0] if x.src[0].dtype == x.dtype else None),
  (UPat(Ops.BITCAST, src=(UPat(Ops.CONST, name="c"),), name="x"), fold_bitcast),
  # identities. x + 0 -> x for floats too, as tinygrad's symbolic folds it: -0.0 + 0.0 gives -0.0, not IEEE's (and
  # PyTorch's) +0.0; tg follows tinygrad where the two differ
  (UPat.var("x") + 0, lambda x: x),
  (UPat.var("x") * 1, lambda x: x),
  (UPat.var("x") // 1, lambda x: x),
  (UPat.var("x") // -1, lambda x: -x),
  (UPat.var("x") / 1.0, lambda x: x),
  (UPat.var("x") ^ 0, lambda x: x),
  (UPat.var("x") | 0, lambda x: x if x.dtype != dtypes.bool else None),
  (UPat.var("x", dtypes.bool) & True, lambda x: x),
  (UPat.var("x", dtypes.bool) & False, lambda x: x.const_like(False)),
  (UPat.var("x", dtypes.bool) | True, lambda x: x.const_like(True)),
  (UPat.var("x", dtypes.bool) | False, lambda x: x),
  (UPat.var("x", dtypes.bool).ne(False), lambda x: x),
  (UPat.var("x", dtypes.bool).ne(True).ne(True), lambda x: x),
  (UPat.var("x", dtypes.bool).eq(True), lambda x: x),
  (UPat(Ops.AND, src=[UPat.var("x"), UPat.var("x")]), lambda x: x),
  (UPat(Ops.OR, src=[UPat.var("x"), UPat.var("x")]), lambda x: x),
  (UPat(Ops.MAX, src=[UPat.var("x"), UPat.var("x")]), lambda x: x),
  (UPat.var("x") * 0, lambda x: x.const_like(0) if _is_int(x) or x.dtype == dtypes.bool else None),
  (UPat.var("x") % 1, lambda x: x.const_like(0) if _is_int(x) else None),
  (UPat(Ops.CMPLT, src=(UPat.var("x"), UPat.var("x"))), lambda x: UOp.const(dtypes.bool.vec(x.dtype.count), False) if _is_int(x) else None),
  (UPat(Ops.CMPNE, src=[UPat.var("x"), UPat.var("x")]), lambda x: UOp.const(dtypes.bool.vec(x.dtype.count), False) if _is_int(x) else None),
  (UPat(Ops.CMPEQ, src=[UPat.var("x"), UPat.var("x")]), lambda x: UOp.const(dtypes.bool.vec(x.dtype.count), True) if _is_int(x) else None),
  (UPat(Ops.WHERE, src=(UPat.var(), UPat.var("x"), UPat.var("x"))), lambda x: x),
  (UPat(Ops.WHERE, src=(UPat(Ops.CONST, name="c"), UPat.var("t"), UPat.var("f"))), lambda c, t, f: t if c.arg else f),
  # a negated condition swaps the branches, except a gated index's (idx.valid(gate): Invalid stays the false branch, the
  # form the lowering reads a gate from; swapped, the Invalid was rendered as a value)
  (UPat(Ops.WHERE, src=(UPat.var("c").ne(True), UPat.var("t"), UPat.var("f"))),
   lambda c, t, f: c.where(f, t) if c.dtype == dtypes.bool and not (f.op is Ops.CONST and f.arg is Invalid) else None),
])

# ***** sums of terms: the canonical form of integer index math *****
MAX_TERMS = 64  # longer sums are left to the local rules, so rewriting a long chain stays linear

_LONG = "_long_sum"
def _too_long(x: UOp) -> None:
  x.__dict__[_LONG] = True

def split_terms(x: UOp) -> tuple[list[tuple[UOp, int]], int, int] | None:
  """x as sum(coef * term) + const over its nested ADDs and multiplications by constants (integer dtypes), with the
  count of ADD, MUL and CONST nodes that spelled it; None past MAX_TERMS terms.
  A sum found too long is marked so (in its __dict__, as UOp caches derived facts): a sum with a too long source is
  too long too, so along a chain of 100,000 ADDs each node costs a look at its sources instead of MAX_TERMS steps."""
  if x.op is _ADD and (_LONG in x.src[0].__dict__ or _LONG in x.src[1].__dict__): return _too_long(x)
  terms: list[tuple[UOp, int]] = []
  const = cost = 0
  stack = [(x, 1)]
  while stack:
    if len(terms) + len(stack) > MAX_TERMS: return _too_long(x)
    u, k = stack.pop()
    if (op := u.op) is _ADD: stack.extend(((u.src[1], k), (u.src[0], k))); cost += 1
    elif op is _CONST: const += u.arg * k; cost += 1
    elif op is _MUL and u.src[1].op is _CONST: stack.append((u.src[0], k * u.src[1].arg)); cost += 2
    else: terms.append((u, k))
  return terms, const, cost

def exact(dt: DType, terms: list[tuple[UOp, int]], const: int) -> bool:
  """sum(k * t) + const takes only values dt holds, for every value of each term: computed in dt it doesn't wrap, so
  it is the integer sum, and the rules of integer < and // hold for it (uint8 x + 100 < 100 is not x < 0)."""
  lo = hi = const
  for t, k in terms:
    a, b = t.vmin * k, t.vmax * k
    if a <= b: lo, hi = lo + a, hi + b
    else: lo, hi = lo + b, hi + a
  dlo, dhi = dtype_bounds(dt)
  return dlo <= lo and hi <= dhi

def _plain_term(u: UOp) -> bool:
  """u is one term of weight 1 to split_terms (not a sum, a constant or a multiple by a constant)."""
  return (op := u.op) is not _ADD and op is not _CONST and (op is not _MUL or u.src[1].op is not _CONST)

def sum_cost(terms: list[tuple[UOp, int]], const: int) -> int:
  """The ADD, MUL and CONST nodes build_sum spells these terms with."""
  n = sum(1 for _, k in terms if k != 0)
  return max(n - 1, 0) + 2 * sum(1 for _, k in terms if k not in (0, 1)) + (2 if const != 0 and n else 1 if not n else 0)

def build_sum(like: UOp, terms: list[tuple[UOp, int]], const: int) -> UOp:
  out: UOp | None = None
  for t, c in terms:
    if c == 0: continue
    term = t if c == 1 else t * c
    out = term if out is None else out + term
  if out is None: return like.const_like(const)
  return _add_const(out, const) if const != 0 else out

def _add_const(t: UOp, k: int) -> UOp:
  """t + k, built at once where t has a plain value dtype (what `t + k` builds, without its dtype checks)."""
  return build_uop(UOp, _ADD, dt, (t, UOp.const(dt, k))) if type(dt := t.dtype) is DType and dt.count == 1 else t + k

def _is_div(u: UOp, x: UOp, c: int) -> bool:
  """u is x // c (c > 0) as the folded graph spells it, a division of a division folded ((y//a)//c is y//(a*c)). Asked
  of each term of a sum instead of building x // c to look it up: that node is most often new, and dies at once."""
  if u.op is not _IDIV or (d := u.src[1]).op is not _CONST: return False
  if x.op is _IDIV and (xd := x.src[1]).op is _CONST and xd.arg > 0: return u.src[0] is x.src[0] and d.arg == xd.arg * c
  return u.src[0] is x and d.arg == c

# one term (t, or t*k with k neither 0 nor 1) plus a constant has nothing to combine and is spelled as build_sum
# spells it: the common case along a chain and in index math (a third of the random index graph's sums), so it skips
# the split
@guard("INT[x.dtype] and x.dtype.count == 1 and not (x.src[1].op is CONST and x.src[1].arg != 0 and (plain_term(x.src[0]) or "
       "x.src[0].op is MUL and x.src[0].src[1].op is CONST and x.src[0].src[1].arg not in (0, 1) and plain_term(x.src[0].src[0])))",
       INT=INT, CONST=_CONST, MUL=_MUL, plain_term=_plain_term)
def fold_add(x: UOp) -> UOp | None:
  """Combine like terms and constants in a sum (x + x is x*2); fold x//c*c + x%c back into x and (x//c)%m*c + x%c
  into x%(c*m). The sum is only respelled when that doesn't grow it as a tree: each term occurrence merged away saves
  at least its own node, so simplifying never grows an expression."""
  a, b = x.src
  if a.op is _ADD and b.op is _CONST and (c := a.src[1]).op is _CONST and _plain_term(t := a.src[0]):
    return _add_const(t, c.arg + b.arg) if c.arg + b.arg != 0 else t  # (t + c1) + c2, a chain's step: as build_sum spells it
  if (split := split_terms(x)) is None: return None
  terms, const, cost = split
  merged: dict[UOp, int] = {}
  for t, c in terms: merged[t] = merged.get(t, 0) + c
  # again while it applies: a flattened index of several axes folds back level by level
  changed = True
  while changed:
    changed = False
    for t, c in list(merged.items()):
      if t not in merged or t.op is not _MOD or t.src[1].op is not _CONST or t.src[1].arg <= 0: continue
      if (whole := _mod_pair(merged, t, c)) is None: continue
      merged[whole] = merged.get(whole, 0) + c
      changed = True
  items = list(merged.items())
  new_cost, saved = sum_cost(items, const), len(terms) - len(items)
  if new_cost > cost + saved or (new_cost == cost and saved == 0): return None
  return build_sum(x, items, const)

def _mod_pair(merged: dict[UOp, int], t: UOp, k: int) -> UOp | None:
  """For the term t = y%c (times k): the partner (y//c)*c*k (-> y) or ((y//c)%m)*c*k (-> y%(c*m)), both taken out of
  merged; None if there is none. Both identities hold for C's truncating division too: the quotient and remainder of
  y have y's sign. (For c = 1, t = (z//1)%1 is its own second partner's spelling: not a pair.)"""
  y, c = t.src[0], t.src[1].arg
  for u, ku in merged.items():
    if ku == k * c and _is_div(u, y, c):
      del merged[t], merged[u]
      return y
  for u, ku in merged.items():
    if u.op is _MOD and u is not t and ku == k * c and u.src[1].op is _CONST and u.src[1].arg > 0 and _is_div(u.src[0], y, c):
      del merged[t], merged[u]
      return y % (c * u.src[1].arg)
  return None

_int_by_positive = guard("INT[x.dtype] and x.dtype.count == 1 and d.arg > 0", INT=INT)

@_int_by_positive
def fold_div(x: UOp, d: UOp) -> UOp | None:
  """x // d for a constant d > 0: pull out terms that are multiples of d, divide out a common factor, nest divisions."""
  c, dt = d.arg, x.dtype
  if x.op is Ops.IDIV and x.src[1].op is Ops.CONST and x.src[1].arg > 0:
    return x.src[0] // (x.src[1].arg * c) if x.src[1].arg * c <= dtype_bounds(dt)[1] else None
  if x.op is _MUL and x.src[1].op is _CONST and (g := math.gcd(k := x.src[1].arg, c)) > 1:  # (y*k)//c: y*(k/g) // (c/g), y kept whole
    # (((a+b)*-2)//4 split as terms became the bigger ((-a)-b)//2)
    return (x.src[0] * (k // g)) // (c // g) if exact(dt, [(x.src[0], k)], 0) else None
  if (split := split_terms(x)) is None or not exact(dt, *split[:2]): return None
  terms, const, _ = split
  g = math.gcd(c, const, *(k for _, k in terms))
  if g > 1: return build_sum(x, [(t, k // g) for t, k in terms], const // g) // (c // g)
  if x.vmin < 0: return None
  outside = [(t, k // c) for t, k in terms if k % c == 0]
  inside = [(t, k) for t, k in terms if k % c != 0]
  q, r = divmod(const, c)
  if not outside: return _fold_div_small(x, c, inside, const)  # pulling out only the constant wouldn't make it smaller
  if not exact(dt, inside, r) or (rest := build_sum(x, inside, r)).vmin < 0: return None
  return build_sum(x, outside, q) + rest // c

def _fold_div_small(x: UOp, c: int, terms: list[tuple[UOp, int]], const: int) -> UOp | None:
  # (a*k + small) // c with every value of `small` inside one period of c: divide only the big part. The sum of the
  # other terms is built (for its range) only for a term that can be the big part: most often none is, and it died
  for i, (t, k) in enumerate(terms):
    if k <= 0 or c % k != 0 or t.vmin < 0 or not exact(x.dtype, rest := terms[:i] + terms[i + 1:], const): continue
    others = build_sum(x, rest, const)
    if others.vmin >= 0 and others.vmax < k: return t // (c // k)
  return None

def _fold_mod_small(x: UOp, c: int, terms: list[tuple[UOp, int]], const: int) -> UOp | None:
  # (a*k + small) % c with k dividing c and `small` inside [0, k): (a % (c/k))*k + small. The lanes of a vector index
  # ((16*r + lane) % 2048, a flip's) then share one base and differ by a constant: one vector load, not 16
  for i, (t, k) in enumerate(terms):
    if k <= 1 or c % k != 0 or t.vmin < 0 or not exact(x.dtype, rest := terms[:i] + terms[i + 1:], const): continue
    others = build_sum(x, rest, const)
    if others.vmin >= 0 and others.vmax < k: return (t % (c // k)) * k + others
  return None

@_int_by_positive
def fold_mod(x: UOp, d: UOp) -> UOp | None:
  """x % d for a constant d > 0: drop multiples of d, and x itself when it already lies in [0, d)."""
  c = d.arg
  if x.vmin >= 0 and x.vmax < c: return x
  if x.op is Ops.MOD and x.src[1].op is Ops.CONST and x.src[1].arg > 0 and x.src[1].arg % c == 0: return x.src[0] % c
  if x.vmin < 0 or (split := split_terms(x)) is None or not exact(x.dtype, *split[:2]): return None
  terms, const, _ = split
  kept = [(t, k % c) for t, k in terms if k % c != 0]
  if len(kept) == len(terms) and 0 <= const < c and all(k < c for _, k in terms):
    if (small := _fold_mod_small(x, c, terms, const)) is not None: return small
    g = math.gcd(c, const, *(k for _, k in terms))
    if g == 1 or g == c: return None
    divided = [(t, k // g) for t, k in terms]
    if sum_cost(divided, const // g) + 2 > sum_cost(terms, const): return None  # (c*4)%6 -> ((c*2)%3)*2 would grow
    return (build_sum(x, divided, const // g) % (c // g)) * g
  if not exact(x.dtype, kept, const % c): return None
  rest = build_sum(x, kept, const % c)
  return rest % c if rest.vmin >= 0 else None

@guard("INT[x.dtype] and x.dtype.count == 1", INT=INT)
def fold_lt(x: UOp, c: UOp) -> UOp | None:
  """sum + k < c  ->  sum < c - k, and a common factor g of the terms:  g*s < c  ->  s < ceil(c/g)."""
  if (split := split_terms(x)) is None or not split[0]: return None
  terms, const, _ = split
  bound, dt = c.arg - const, x.dtype
  g = math.gcd(*(k for _, k in terms))
  if const == 0 and g == 1: return None
  lo, hi = dtype_bounds(dt)
  if not (exact(dt, terms, const) and exact(dt, terms, 0) and lo <= bound <= hi): return None  # both sides as integers
  if g > 1 and all(k > 0 for _, k in terms): return build_sum(x, [(t, k // g) for t, k in terms], 0) < cdiv(bound, g)
  return build_sum(x, terms, 0) < bound if const != 0 else None

@guard("INT[x.dtype] and x.vmin >= 0 and d.arg > 0 and c.arg > 0", INT=INT)
def fold_div_lt(x: UOp, d: UOp, c: UOp) -> UOp | None:
  """x // d < c  <->  x < c*d  when x >= 0 and d > 0 (and c*d fits x's dtype)."""
  return x < c.arg * d.arg if c.arg * d.arg <= dtype_bounds(x.dtype)[1] else None

symbolic = symbolic_simple + PatternMatcher([
  # constants go right, and fold into each other
  (UPat(GroupOp.Commutative, src=(UPat(Ops.CONST, name="c"), UPat.var("x")), name="u"),
   lambda c, x, u: u.replace(src=(x, c)) if x.op is not Ops.CONST else None),
  ((UPat.var("x") * UPat.cvar("c1", vec=False)) * UPat.cvar("c2", vec=False), lambda x, c1, c2: x * (c1.arg * c2.arg) if _is_int(x) else None),
  ((UPat.var("x") + UPat.cvar("c1", vec=False)) * UPat.cvar("c2", vec=False), lambda x, c1, c2: x * c2.arg + c1.arg * c2.arg if _is_int(x) else None),
  (UPat(Ops.ADD, name="x"), fold_add),
  (UPat.var("x") // UPat.cvar("d", vec=False), fold_div),
  (UPat.var("x") % UPat.cvar("d", vec=False), fold_mod),
  (UPat(Ops.CMPLT, src=(UPat.var("x"), UPat.cvar("c", vec=False))), fold_lt),
  ((UPat.var("x") // UPat.cvar("d", vec=False)) < UPat.cvar("c", vec=False), fold_div_lt),
  # max of ranges that don't overlap
  (UPat(Ops.MAX, src=(UPat.var("a"), UPat.var("b"))), lambda a, b: a if a.vmin >= b.vmax else (b if b.vmin >= a.vmax else None)),
  # an index under its gate (as idx.valid(gate), or as the gate of a kernel's INDEX)
  (UPat(Ops.WHERE, src=(UPat.var("gate", dtypes.bool), UPat.var("idx"), UPat(Ops.CONST, arg=Invalid, name="inv"))), lambda gate, idx, inv:
   (lambda new: gate.where(new, inv) if new is not idx else None)(simplify_given_valid(gate, idx))),
  (UPat(Ops.INDEX, src=(UPat.var("buf"), UPat.var("idx"), UPat.var("gate", dtypes.bool)), name="x"), lambda buf, idx, gate, x:
   (lambda new: x.replace(src=(buf, new, gate)) if new is not idx else None)(simplify_given_valid(gate, idx)) if idx.dtype.count == 1 else None),
])

# ***** simplifying an index given the condition that guards it *****
def parse_clause(c: UOp) -> tuple[UOp, int | None, int | None] | None:
  """A clause of a gate as (expr, lower bound, upper bound): `x < k`, `k < x`, `(x < k) != True` (x >= k)."""
  if c.op is Ops.CMPLT and c.src[1].op is Ops.CONST and _is_int(c.src[0]): return c.src[0], None, c.src[1].arg - 1
  if c.op is Ops.CMPLT and c.src[0].op is Ops.CONST and _is_int(c.src[1]): return c.src[1], c.src[0].arg + 1, None
  if c.op is Ops.CMPNE and c.src[1].op is Ops.CONST and c.src[1].arg is True and (p := parse_clause(c.src[0])) is not None:
    expr, lo, hi = p
    if lo is None and hi is not None: return expr, hi + 1, None
    if hi is None and lo is not None: return expr, None, lo - 1
  return None

def split_and(c: UOp) -> list[UOp]:
  """The terms of a bool AND tree (a gate's clauses), iteratively."""
  out, stack = [], [c]
  while stack:
    u = stack.pop()
    if u.op is Ops.AND and u.dtype == dtypes.bool: stack.extend(u.src)
    else: out.append(u)
  return out

def _narrow(gate: UOp, idx: UOp) -> tuple[UOp, dict[UOp, UOp]]:
  """idx with each expression the gate bounds replaced by a variable of the narrowed range, simplified; and the map back."""
  bounds: dict[UOp, list[Any]] = {}
  for clause in split_and(gate):
    if (p := parse_clause(clause)) is None: continue
    expr, lo, hi = p
    b = bounds.setdefault(expr, [expr.vmin, expr.vmax])
    if lo is not None: b[0] = max(b[0], lo)
    if hi is not None: b[1] = min(b[1], hi)
  sub: dict[UOp, UOp] = {}
  for i, (expr, (lo, hi)) in enumerate(bounds.items()):
    if lo > hi or (lo, hi) == (expr.vmin, expr.vmax) or expr not in idx.toposort(): continue
    sub[expr] = UOp.variable(f"__valid{i}", lo, hi, expr.dtype)
  if not sub: return idx, {}
  return graph_rewrite(idx.substitute(sub), symbolic, name="given_valid"), {v: k for k, v in sub.items()}

def simplify_given_valid(gate: UOp, idx: UOp) -> UOp:
  """idx simplified knowing `gate` is true: each clause narrows the range of the expression it bounds."""
  narrowed, back = _narrow(gate, idx)
  return narrowed.substitute(back) if back else narrowed

def range_given_valid(gate: UOp, idx: UOp) -> tuple[Any, Any]:
  """(vmin, vmax) of idx where `gate` is true."""
  narrowed, _ = _narrow(gate, idx)
  return narrowed.vmin, narrowed.vmax
