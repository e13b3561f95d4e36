"""The linearizer: a lowered kernel graph becomes the linear program of tg.codegen.program.

Every UOp lives inside the RANGEs it depends on (less the ones an END before it closed). Loops nest in axis order.
UOps are emitted greedily in a deterministic order: whatever fits the open loops first (so loop-invariant work is
hoisted), then a RANGE is opened for work that needs it, and an END closes the innermost loop once its body is out.
A loop whose body updates state set up outside it (an accumulator's initial store) opens in exactly the loops that
store was emitted in: one loop deeper and the state would carry over between that loop's iterations.
AFTER stays in the output: it is its first source, at the point where its other sources are done."""
from __future__ import annotations
import heapq
from tg.uop import UOp, Ops, PatternMatcher, UPat, graph_rewrite
from tg.codegen.ranges import range_key

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

def range_order(topo: list[UOp], sets: dict[UOp, frozenset[UOp]]) -> dict[UOp, int]:
  """A total order of the ranges that loops nest and follow each other by: a range still open at another's END is
  outside it; a loop whose result (its END) is used inside another range it isn't within runs before that range is
  opened; otherwise axis order. (Axis ids alone can't say this: a reduce computed inside another may have any id.)"""
  rngs = sorted((u for u in topo if u.op is Ops.RANGE), key=range_key)
  before: dict[UOp, set[UOp]] = {r: set() for r in rngs}
  users: dict[UOp, list[UOp]] = {u: [] for u in topo}
  for u in topo:
    for x in u.src: users[x].append(u)
  for e in topo:
    if e.op is not Ops.END: continue
    r = e.src[1]
    for q in sets[e]: before[r].add(q)  # q encloses r
    stack, seen = [e], {e}
    while stack:  # everything downstream of the finished loop
      for c in users[stack.pop()]:
        if c in seen: continue
        seen.add(c); stack.append(c)
        for q in sets[c] - sets[e] - {r}: before[q].add(r)  # r's loop runs before q is opened
  rank: dict[UOp, int] = {}
  while len(rank) < len(rngs):
    free = [r for r in rngs if r not in rank and not (before[r] - rank.keys())]
    nxt = free[0] if free else next(r for r in rngs if r not in rank)  # a cycle: fall back to axis order
    rank[nxt] = len(rank)
  return rank

def state_setup(topo: list[UOp], sets: dict[UOp, frozenset[UOp]]) -> dict[UOp, dict[UOp, frozenset[UOp]]]:
  """STORE -> {RANGE: the loops of its body} for each loop whose body reads what it stored through an AFTER (an
  accumulator set before its reduce loops, read and updated inside them)."""
  out: dict[UOp, dict[UOp, frozenset[UOp]]] = {}
  for u in topo:
    if u.op is not Ops.AFTER: continue
    for s in u.src[1:]:
      if s.op is Ops.STORE and (body := sets[u] - sets[s]): out.setdefault(s, {}).update((r, body) for r in body)
  return out

def linearize(sink: UOp) -> list[UOp]:
  if any(u.op is Ops.END and len(u.src) > 2 for u in sink.toposort()): sink = graph_rewrite(sink, pm_split_ends, name="split ends")
  topo = list(sink.toposort())
  order = {u: i for i, u in enumerate(topo)}
  sets: dict[UOp, frozenset[UOp]] = {}
  empty: frozenset[UOp] = frozenset()
  for u in topo:  # the RANGEs each UOp lives inside (most share their first source's set: reuse it)
    s = sets[u.src[0]] if u.src else empty
    for x in u.src[1:]:
      if (xs := sets[x]) is not s and not xs <= s: s = s | xs
    if u.op is Ops.RANGE: s = s | {u}
    elif u.op is Ops.END: s = s - {u.src[1]}
    sets[u] = s
  rank = range_order(topo, sets)
  setup = state_setup(topo, sets)
  setup_at: dict[UOp, tuple[tuple[UOp, ...], frozenset[UOp]]] = {}  # RANGE -> (loops its state was set up in, its body's loops)
  def fits(r: UOp) -> bool:  # a loop with state opens in the loops that state was set up in (and in its body's own loops)
    if r not in setup_at: return True
    at, body = setup_at[r]
    return tuple(stack[:len(at)]) == at and set(stack[len(at):]) <= body
  ranked = {s: tuple(sorted(s, key=rank.__getitem__)) for s in set(sets.values())}
  scope = {u: ranked[s] for u, s in sets.items()}
  outer: dict[UOp, set[UOp]] = {u: set() for u in topo if u.op is Ops.RANGE}
  for sc in ranked.values():
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
  deferred: list[tuple[tuple, UOp]] = []  # ready, but waiting for the open loops to change (only a RANGE or an END changes them)
  def loops_changed() -> None:
    for d in deferred: heapq.heappush(ready, d)
    deferred.clear()
  def emit(u: UOp) -> None:
    out.append(u)
    for r, body in setup.get(u, {}).items():
      if setup_at.setdefault(r, (tuple(stack), body))[0] != tuple(stack):
        raise LinearizeError(f"the state of loop {r.arg} is set up in two different loop nests")
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
        if u.op is Ops.END: loops_changed()
        break
      deferred.append((p, u))
    if progress: continue
    # 2. open a loop whose outer loops (the ranges it is used with that rank before it) are exactly the open ones
    # (a loop that encloses nothing open can also go deeper, e.g. a reduce that doesn't use a loop it is nested in)
    # (a loop whose state is set up here goes first: opened any deeper, its state would carry over; elsewhere, never)
    allowed = [r for r in waiting_ranges if fits(r) and outer[r] <= set(stack)]
    can_open = ([r for r in allowed if r in setup_at] or [r for r in allowed if outer[r] == set(stack)] or allowed)
    if can_open:
      r = min(can_open, key=rank.__getitem__)
      waiting_ranges.remove(r)
      stack.append(r)
      emit(r)
      loops_changed()
      continue
    raise LinearizeError(f"can't order the kernel: open loops {[r.arg for r in stack]}, unopened {[r.arg for r in waiting_ranges]}, "
                         f"waiting {[(u.op, [r.arg for r in scope[u]]) for _, u in deferred[:5]]}")
  # the final SINK only collects effects (GROUPs stay: an END may close over one)
  return [u for u in out if u.op is not Ops.SINK]
