"""The expander: UPCAST and UNROLL ranges become vector lanes instead of loops.

A range of n lanes becomes UNROLL(VCONST(0..n-1), axes=((axis_id, n),)). Every op with an UNROLL source is
rebuilt as one vector op over the union of the axes (lanes row-major, axes sorted by id), sources swizzled with
GEP or broadcast to match. REDUCE over an unrolled axis folds lanes; CONTRACT gathers lanes into a vector;
STORE takes the vectors; END drops the unrolled ranges, which no longer loop."""
from __future__ import annotations
import functools, itertools
from tg.uop import UOp, Ops, AxisType, UPat, PatternMatcher, GroupOp, PtrDType, prod, dtypes

Axes = tuple[tuple[int, int], ...]

def lane_map(src_axes: Axes, dst_axes: Axes) -> tuple[int, ...]:
  """For each lane of dst_axes, the lane of a value unrolled over src_axes (a subset) that it reads."""
  pos = {a: i for i, (a, _) in enumerate(dst_axes)}
  out = []
  for digits in itertools.product(*[range(n) for _, n in dst_axes]):
    lane = 0
    for a, n in src_axes: lane = lane * n + digits[pos[a]]
    out.append(lane)
  return tuple(out)

def merge_axes(*axes: Axes) -> Axes: return tuple(sorted(set().union(*axes)))

def _widen(s: UOp, axes: Axes) -> UOp:
  """A source as a vector over `axes`: swizzle an UNROLL's lanes, broadcast anything else."""
  n = prod(k for _, k in axes)
  if s.op is Ops.UNROLL: return s.src[0] if s.arg == axes else s.src[0].gep(lane_map(s.arg, axes))
  if isinstance(s.dtype, PtrDType): return s
  return s.broadcast(n)

def do_expand(u: UOp) -> UOp | None:
  exp = [s for s in u.src if s.op is Ops.UNROLL]
  if not exp or u.op in (Ops.REDUCE, Ops.END, Ops.CONTRACT, Ops.AFTER, Ops.SINK, Ops.GROUP): return None
  axes = merge_axes(*[s.arg for s in exp])
  n = prod(k for _, k in axes)
  srcs = tuple(_widen(s, axes) for s in u.src)
  if u.op is Ops.STORE: return u.replace(src=srcs)
  if u.op is Ops.GEP or u.dtype.count > 1: raise NotImplementedError(f"unrolling the vector op {u.op} ({u.dtype})")
  return UOp(Ops.UNROLL, u.dtype, (UOp(u.op, u.dtype.vec(n), srcs, u.arg),), axes)

def range_to_unroll(r: UOp) -> UOp | None:
  if r.arg[1] not in (AxisType.UPCAST, AxisType.UNROLL): return None
  n = r.src[0].arg
  return UOp(Ops.UNROLL, dtypes.index, (UOp.const(dtypes.index.vec(n), tuple(range(n))),), ((r.arg[0], n),))

def _lanes(u: UOp) -> tuple[UOp, tuple[int, ...]]:
  """u as lanes of a vector that is not a GEP: (vector, lanes)."""
  lanes = tuple(range(u.dtype.count))
  while u.op is Ops.GEP: u, lanes = u.src[0], tuple(u.arg[i] for i in lanes)
  return u, lanes

def fold(a: UOp, b: UOp, op: Ops) -> UOp:
  """a op b, two partial reductions; in a float sum, a b of products becomes a fused multiply-add onto a (MULACC, which
  devices without one decompose again). The fuse_mulaccs pass fuses only a product added to an accumulator: here is
  the other place it's known to be a reduce's own sum, not an a*b+c a kernel that recomputes it would round twice."""
  vec, lanes = _lanes(b)
  if op is Ops.ADD and vec.op is Ops.MUL and dtypes.is_float(b.dtype): return vec.src[0].gep(lanes).alu(Ops.MULACC, vec.src[1].gep(lanes), a)
  return a.alu(op, b)

def fold_lanes(wide: UOp, k: int, op: Ops) -> UOp:
  """Fold the blocks of k lanes of `wide` into one block: halves at a time while their count is even (a tree of whole
  vector ops, log2 deep: a chain of 128 scalar maxes after a reduce loop cost a third of its time), then a chain."""
  m = wide.dtype.count // k
  while m > 1 and m % 2 == 0:
    m //= 2
    wide = fold(wide.gep(tuple(range(m * k))), wide.gep(tuple(range(m * k, 2 * m * k))), op)
  return functools.reduce(lambda a, b: fold(a, b, op), [wide.gep(tuple(range(j * k, (j + 1) * k))) for j in range(m)])

def expand_reduce(red: UOp) -> UOp | None:
  x, rngs = red.src[0], red.src[1:]
  unrolled = [r for r in rngs if r.op is Ops.UNROLL]
  if not unrolled and x.op is not Ops.UNROLL: return None
  loops = tuple(r for r in rngs if r.op is not Ops.UNROLL)
  red_axes = merge_axes(*[r.arg for r in unrolled])
  x_axes: Axes = x.arg if x.op is Ops.UNROLL else ()
  keep = tuple(a for a in x_axes if a not in red_axes)
  if unrolled:
    # fold the reduced lanes of x as whole vectors: one vector over the kept axes per combination of reduced lanes
    all_axes = merge_axes(x_axes, red_axes)
    reduced = tuple(a for a in all_axes if a not in keep)
    wide = _widen(x, all_axes)
    lanes = lane_map(all_axes, reduced + keep)  # reduced axes slowest: consecutive chunks are vectors over `keep`
    k = prod(n for _, n in keep)
    x = fold_lanes(wide.gep(lanes), k, red.arg)
  else: x = x.src[0]
  out = UOp(Ops.REDUCE, x.dtype, (x, *loops), red.arg) if loops else x
  return UOp(Ops.UNROLL, red.dtype, (out,), keep) if keep else out

def expand_contract(c: UOp) -> UOp:
  x, want = c.src[0], tuple(c.arg)
  if x.op is Ops.UNROLL and set(x.arg) - set(want):
    raise NotImplementedError(f"CONTRACT of {want} leaves axes {sorted(set(x.arg) - set(want))} unrolled")
  srt = tuple(sorted(want))
  v = _widen(x, srt)
  return v if srt == want else v.gep(lane_map(srt, want))

pm_expand = PatternMatcher([
  (UPat(Ops.RANGE, name="r"), range_to_unroll),
  (UPat(Ops.REDUCE, name="red"), expand_reduce),
  (UPat(Ops.CONTRACT, name="c"), expand_contract),
  # AFTER and END only order things: an unrolled dependency is just its vector, an unrolled range no longer loops
  (UPat(Ops.AFTER, name="a"), lambda a: a.replace(src=tuple(s.src[0] if s.op is Ops.UNROLL else s for s in a.src))
   if any(s.op is Ops.UNROLL for s in a.src[1:]) else None),
  (UPat(Ops.END, name="e"), lambda e: (lambda body, rngs: body.end(*rngs))(e.src[0].src[0] if e.src[0].op is Ops.UNROLL else e.src[0],
                                                                            [r for r in e.src[1:] if r.op is not Ops.UNROLL])
   if any(s.op is Ops.UNROLL for s in e.src) else None),
  (UPat((Ops.SINK, Ops.GROUP), name="s"), lambda s: s.replace(src=tuple(x.src[0] if x.op is Ops.UNROLL else x for x in s.src))
   if any(x.op is Ops.UNROLL for x in s.src) else None),
  (UPat(GroupOp.ALU | {Ops.CAST, Ops.BITCAST, Ops.INDEX, Ops.LOAD, Ops.STORE, Ops.VECTORIZE, Ops.GEP}, name="u"), do_expand),
])
