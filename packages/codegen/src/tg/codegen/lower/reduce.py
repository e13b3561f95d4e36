"""Reduce lowering: REDUCE(x, *ranges) becomes an accumulator register initialised before the loops, updated inside
them, and read after them. Several accumulations over the same range then share that range's single END."""
from __future__ import annotations
import itertools
from tg.uop import UOp, Ops, UPat, PatternMatcher, AddrSpace, AxisType, dtypes, DType, prod
from tg.codegen.ranges import range_key

def identity_element(op: Ops, dt: DType) -> int | float | bool:
  if op is Ops.ADD or op is Ops.OR or op is Ops.XOR: return 0 if dt != dtypes.bool else False
  if op is Ops.MUL: return 1 if dt != dtypes.bool else True
  if op is Ops.MAX: return dtypes.min(dt)
  if op is Ops.AND: return True if dt == dtypes.bool else -1
  raise ValueError(f"no identity for a reduce of {op}")

def open_ranges(u: UOp) -> set[UOp]:
  """The RANGEs u is inside of: those it depends on, less the ones an END in its past has closed."""
  scope: dict[UOp, frozenset[UOp]] = {}
  for n in u.toposort():
    s = frozenset().union(*(scope[x] for x in n.src)) if n.src else frozenset()
    if n.op is Ops.RANGE: s = s | {n}
    elif n.op is Ops.END: s = s - set(n.src[1:])
    scope[n] = s
  return set(scope[u])

class ReduceContext:
  """Fresh numbers for the registers, shared memory and ranges the lowering adds: past those the kernel has (a hand-written
  kernel's own registers keep theirs, an accumulator never shares a slot with one)."""
  def __init__(self, sink: UOp) -> None:
    def after(op: Ops) -> int: return max((u.arg + 1 for u in sink.toposort() if u.op is op), default=0)
    self.slots, self.locals, self.axes = itertools.count(after(Ops.DEFINE_REG)), itertools.count(after(Ops.DEFINE_LOCAL)), itertools.count(1000)

def lower_reduce(ctx: ReduceContext, red: UOp) -> UOp:
  x, rngs = red.src[0], red.src[1:]
  if groups := [r for r in rngs if r.arg[1] is AxisType.GROUP_REDUCE]: return lower_group_reduce(ctx, red, groups)
  n, scalar = x.dtype.count, x.dtype.scalar()
  acc = UOp(Ops.DEFINE_REG, scalar.ptr(n, AddrSpace.REG), arg=next(ctx.slots))
  lanes = UOp.const(dtypes.index.vec(n), tuple(range(n))) if n > 1 else UOp.const(dtypes.index, 0)
  def at(buf: UOp) -> UOp: return UOp(Ops.INDEX, x.dtype, (buf, lanes))
  outer = sorted(open_ranges(x) - set(rngs), key=range_key)
  init = at(acc.after(*outer)).store(UOp.const(x.dtype, identity_element(red.arg, scalar)))
  update = at(acc).store(at(acc.after(init, *rngs)).alu(red.arg, x))
  return at(acc.after(update.end(*sorted(rngs, key=range_key))))

def lower_group_reduce(ctx: ReduceContext, red: UOp, groups: list[UOp]) -> UOp:
  """A reduce split over the threads of a workgroup: each thread reduces its share, writes it to shared memory, and
  after a barrier every thread reduces the shares (so every thread holds the result; their stores agree). Threads of the
  workgroup that compute other values have shares of their own in shared memory: those of other outputs (LOCAL axes) and,
  for a reduce nested in a grouped one, those of the outer reduce's other terms (its GROUP_REDUCE axes; sharing their slots,
  two nested GROUPs summed every outer thread's inner shares together)."""
  x, rngs = red.src[0], red.src[1:]
  rest = [r for r in rngs if r not in groups]  # none when the whole reduce is the group's
  partial = lower_reduce(ctx, x.reduce(*rest, arg=red.arg)) if rest else x
  locs = sorted((r for r in open_ranges(x) if r.arg[1] in (AxisType.LOCAL, AxisType.GROUP_REDUCE) and r not in rngs), key=range_key)
  sizes, loc_sizes = [r.src[0].arg for r in groups], [r.src[0].arg for r in locs]
  lds = UOp(Ops.DEFINE_LOCAL, x.dtype.scalar().ptr(prod(loc_sizes + sizes), AddrSpace.LOCAL), arg=next(ctx.locals))
  if x.dtype.count != 1: raise NotImplementedError("a grouped reduce of vectors")
  shares = [UOp.range(s, next(ctx.axes), AxisType.REDUCE) for s in sizes]
  written = lds.index(flat(locs + groups, loc_sizes + sizes)).store(partial).barrier()
  return lower_reduce(ctx, lds.after(written).index(flat(locs + shares, loc_sizes + sizes)).reduce(*shares, arg=red.arg))

def flat(idx: list[UOp], sizes: list[int]) -> UOp:
  out = idx[0]
  for i, s in zip(idx[1:], sizes[1:]): out = out * s + i
  return out

def split_shared_ranges(sink: UOp) -> UOp:
  """Reduces over one RANGE whose accumulators live in different loop nests (say sum(a[r]) + sum(b[i, r]) stored at i)
  get a copy of that range each: one loop can't run both outside the i loop and inside it."""
  next_axis = max((u.arg[0] for u in sink.toposort() if u.op is Ops.RANGE), default=-1) + 1
  while True:
    scope: dict[UOp, frozenset[UOp]] = {}  # the ranges each UOp is inside of (a REDUCE or END closes its own)
    nests: dict[UOp, dict[frozenset[UOp], list[UOp]]] = {}  # RANGE -> the reduces over it, by their loop nest
    for u in sink.toposort():
      sc = frozenset().union(*(scope[x] for x in u.src)) if u.src else frozenset()
      if u.op is Ops.RANGE: sc = sc | {u}
      elif u.op in (Ops.REDUCE, Ops.END): sc = sc - set(u.src[1:])
      scope[u] = sc
      if u.op is Ops.REDUCE:
        for r in u.src[1:]: nests.setdefault(r, {}).setdefault(sc, []).append(u)
    shared = next(((r, by_nest) for r, by_nest in nests.items() if len(by_nest) > 1), None)
    if shared is None: return sink
    r, by_nest = shared
    sub = {}
    for reds in list(by_nest.values())[1:]:
      fresh, next_axis = r.replace(arg=(next_axis, *r.arg[1:])), next_axis + 1
      sub.update({red: red.replace(src=(red.src[0].substitute({r: fresh}), *(fresh if x is r else x for x in red.src[1:]))) for red in reds})
    sink = sink.substitute(sub)

def merge_ends(sink: UOp) -> UOp | None:
  """ENDs closing the same ranges become one END over a GROUP of their bodies (one loop, several accumulators)."""
  by_ranges: dict[tuple[UOp, ...], list[UOp]] = {}
  for u in sink.toposort():
    if u.op is Ops.END: by_ranges.setdefault(u.src[1:], []).append(u)
  sub = {}
  for rngs, ends in by_ranges.items():
    if len(ends) < 2: continue
    if any(e in f.src[0].toposort() for e in ends for f in ends if e is not f): continue  # one needs the other finished: can't share a loop
    merged = UOp.group(*[e.src[0] for e in ends]).end(*rngs)
    sub.update({e: merged for e in ends})
  return sink.substitute(sub) if sub else None

def wmma_accumulates(c: UOp, w: UOp) -> UOp | None:
  """acc + WMMA(a, b, 0) is WMMA(a, b, acc): the instruction adds its C (in its own order, products exact)."""
  return w.replace(src=(*w.src[:2], c)) if w.src[2] == UOp.const(w.dtype, 0) else None

pm_reduce = PatternMatcher([
  (UPat(Ops.REDUCE, name="red"), lower_reduce),
  (UPat(Ops.ADD, src=[UPat.var("c"), UPat(Ops.WMMA, name="w")]), wmma_accumulates),
])
pm_merge_ends = PatternMatcher([(UPat(Ops.SINK, name="sink"), merge_ends)])
