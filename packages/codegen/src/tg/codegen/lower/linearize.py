"""The linearizer: a lowered kernel graph becomes the linear program of tg.codegen.program.

Every UOp lives inside the RANGEs it depends on (less the ones an END before it closed). Loops nest in axis order.
UOps are emitted greedily in a deterministic order: whatever fits the open loops first (so loop-invariant work is
hoisted), then a RANGE is opened for work that needs it, and an END closes the innermost loop once its body is out.
AFTER stays in the output: it is its first source, at the point where its other sources are done."""
from __future__ import annotations
import heapq
from tg.uop import UOp, Ops, PatternMatcher, UPat, graph_rewrite
from tg.codegen.opt.kernel import range_key

def split_end(e: UOp) -> UOp | None:
  if len(e.src) <= 2: return None
  inner_first = sorted(e.src[1:], key=range_key, reverse=True)
  out = e.src[0]
  for r in inner_first: out = UOp(Ops.END, e.dtype, (out, r))
  return out

pm_split_ends = PatternMatcher([(UPat(Ops.END, name="e"), split_end)])

# definitions first, then constants, then everything else in graph order
_OP_PRIORITY = {Ops.PARAM: -20, Ops.DEFINE_VAR: -19, Ops.DEFINE_LOCAL: -18, Ops.SPECIAL: -17, Ops.DEFINE_REG: -16, Ops.CONST: -10,
                Ops.VCONST: -10, Ops.END: 10}

class LinearizeError(RuntimeError): pass

def linearize(sink: UOp) -> list[UOp]:
  sink = graph_rewrite(sink, pm_split_ends, name="split ends")
  topo = list(sink.toposort)
  order = {u: i for i, u in enumerate(topo)}
  scope: dict[UOp, tuple[UOp, ...]] = {}
  for u in topo:
    s = set().union(*(scope[x] for x in u.src)) if u.src else set()
    if u.op is Ops.RANGE: s.add(u)
    elif u.op is Ops.END: s.discard(u.src[1])
    scope[u] = tuple(sorted(s, key=range_key))
  outer: dict[UOp, set[UOp]] = {u: set() for u in topo if u.op is Ops.RANGE}
  for sc in set(scope.values()):
    for i, r in enumerate(sc): outer[r].update(sc[:i])
  children: dict[UOp, list[UOp]] = {u: [] for u in topo}
  pending = {u: len(set(u.src)) for u in topo}
  for u in topo:
    for s in set(u.src): children[s].append(u)
  def prio(u: UOp) -> tuple: return (_OP_PRIORITY.get(u.op, 0), order[u])
  ready = [(prio(u), u) for u in topo if pending[u] == 0 and u.op is not Ops.RANGE]
  heapq.heapify(ready)
  waiting_ranges: list[UOp] = [u for u in topo if u.op is Ops.RANGE and pending[u] == 0]
  stack: list[UOp] = []
  out: list[UOp] = []
  deferred: list[tuple[tuple, UOp]] = []
  def emit(u: UOp) -> None:
    out.append(u)
    for c in children[u]:
      pending[c] -= 1
      if pending[c] == 0:
        if c.op is Ops.RANGE: waiting_ranges.append(c)
        else: heapq.heappush(ready, (prio(c), c))
  while ready or deferred or waiting_ranges:
    # 1. anything whose loops are all open (an END must close the innermost one)
    progress = False
    while ready:
      p, u = heapq.heappop(ready)
      if u.op is Ops.END and (not stack or stack[-1] is not u.src[1]): deferred.append((p, u)); continue
      if all(r in stack for r in scope[u]):
        if u.op is Ops.END: stack.pop()
        emit(u); progress = True
        for d in deferred: heapq.heappush(ready, d)
        deferred.clear()
        break
      deferred.append((p, u))
    if progress: continue
    # 2. open a loop whose outer loops (by axis order, among the ranges it is used with) are exactly the open ones
    can_open = [r for r in waiting_ranges if outer[r] == set(stack)]
    if can_open:
      r = min(can_open, key=lambda r: (range_key(r), order[r]))
      waiting_ranges.remove(r)
      stack.append(r)
      emit(r)
      for d in deferred: heapq.heappush(ready, d)
      deferred.clear()
      continue
    raise LinearizeError(f"can't order the kernel: open loops {[r.arg for r in stack]}, unopened {[r.arg for r in waiting_ranges]}, "
                         f"waiting {[(u.op, [r.arg for r in scope[u]]) for _, u in deferred[:5]]}")
  # the final SINK only collects effects (GROUPs stay: an END may close over one)
  return [u for u in out if u.op is not Ops.SINK]
