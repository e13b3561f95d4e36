"""The linearizer: a lowered kernel graph becomes the linear program of tg.codegen.program.

Every UOp lives inside the RANGEs it depends on (less the ones an END before it closed). Loops nest in axis order.
UOps are emitted greedily in a deterministic order: whatever fits the open loops first (so loop-invariant work is
hoisted), then a RANGE is opened for work that needs it, and an END closes the innermost loop once its body is out.
A loop whose body updates state set up outside it (an accumulator's initial store) opens in exactly the loops that
store was emitted in: one loop deeper and the state would carry over between that loop's iterations.
AFTER stays in the output: it is its first source, at the point where its other sources are done."""
from __future__ import annotations
import heapq
from tg.uop import UOp, Ops, PatternMatcher, UPat, graph_rewrite, dtypes
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

def range_sets(topo: list[UOp]) -> dict[UOp, frozenset[UOp]]:
  """The RANGEs each UOp lives inside: its sources' ranges, plus itself if a RANGE, less the range an END closes.
  (Most UOps share their first source's set: it is reused, not copied.)"""
  sets: dict[UOp, frozenset[UOp]] = {}
  empty: frozenset[UOp] = frozenset()
  for u in topo:
    s = sets[u.src[0]] if u.src else empty
    for x in u.src[1:]:
      if (xs := sets[x]) is not s and not xs <= s: s = s | xs
    if u.op is Ops.RANGE: s = s | {u}
    elif u.op is Ops.END: s = s - {u.src[1]}
    sets[u] = s
  return sets

def epilogue_ends(topo: list[UOp], children: dict[UOp, list[UOp]]) -> dict[UOp, UOp]:
  """UOp -> the END it is emitted after: every use of it comes after that loop, which it doesn't depend on (a matmul's
  epilogue, h's GELU gradient times the accumulated sum). Emitted where it is ready instead, before the reduce loop, it
  stayed live through it: 16 more vector registers than the tile's 19 (AVX-512), 67 spills and reloads every step."""
  after: dict[UOp, frozenset[UOp]] = {}  # the ENDs each UOp depends on
  for u in topo:
    after[u] = frozenset().union(*(after[x] | ({x} if x.op is Ops.END else frozenset()) for x in u.src))
  late: dict[UOp, UOp] = {}
  for u in reversed(topo):  # (users first: a value only a late value uses is late too)
    if u.op in (Ops.RANGE, Ops.AFTER) or u.dtype == dtypes.void or _OP_PRIORITY.get(u.op, 0) < 0: continue  # (values only)
    if not (users := [c for c in children[u] if c.op is not Ops.SINK]): continue
    if common := frozenset.intersection(*(after[c] | ({late[c]} if c in late else frozenset()) for c in users)) - after[u]:
      late[u] = max(common, key=lambda e: len(after[e]))  # the last of them (it depends on the others)
  return late

class _Linearizer:
  """The greedy emission of the module docstring. A UOp that is ready but can't be emitted in the open loops waits
  on the one event that could let it: a range it needs being opened, or (an END) its range coming to the top of the
  loop stack. So each wait is one step of a UOp's scope, and the whole walk is linear in the kernel's size."""
  def __init__(self, sink: UOp):
    topo = list(sink.toposort())
    self.order = {u: i for i, u in enumerate(topo)}
    sets = range_sets(topo)
    self.rank = range_order(topo, sets)
    self.setup = state_setup(topo, sets)
    self.setup_at: dict[UOp, tuple[tuple[UOp, ...], frozenset[UOp]]] = {}  # RANGE -> (loops its state was set up in, its body's loops)
    ranked = {s: tuple(sorted(s, key=self.rank.__getitem__)) for s in set(sets.values())}
    self.scope = {u: ranked[s] for u, s in sets.items()}
    self.outer: dict[UOp, set[UOp]] = {u: set() for u in topo if u.op is Ops.RANGE}  # the ranges each loop opens inside
    for sc in ranked.values():
      for i, r in enumerate(sc): self.outer[r].update(sc[:i])
    self.children: dict[UOp, list[UOp]] = {u: [] for u in topo}
    self.pending = {u: len(set(u.src)) for u in topo}
    for u in topo:
      for s in set(u.src): self.children[s].append(u)
    self.late, self.ended = epilogue_ends(topo, self.children), set()
    self.ready = [(self.prio(u), u) for u in topo if self.pending[u] == 0 and u.op is not Ops.RANGE]
    heapq.heapify(self.ready)
    self.waiting_ranges = [u for u in topo if u.op is Ops.RANGE and self.pending[u] == 0]
    self.waiting: dict[tuple[str, UOp], list[tuple[tuple, UOp]]] = {}  # event -> the ready UOps it may let out
    self.stack: list[UOp] = []
    self.out: list[UOp] = []

  def prio(self, u: UOp) -> tuple: return (_OP_PRIORITY.get(u.op, 0), self.order[u])

  def blocker(self, u: UOp) -> tuple[str, UOp] | None:
    """The event u waits for, or None when it can be emitted now (an END must close the innermost loop)."""
    if u.op is Ops.END and (not self.stack or self.stack[-1] is not u.src[1]): return ("top", u.src[1])
    if (e := self.late.get(u)) is not None and e not in self.ended: return ("done", e)
    missing = next((r for r in self.scope[u] if r not in self.stack), None)
    return None if missing is None else ("open", missing)

  def happen(self, *events: tuple[str, UOp]) -> None:
    for e in events:
      for w in self.waiting.pop(e, ()): heapq.heappush(self.ready, w)

  def emit(self, u: UOp) -> None:
    self.out.append(u)
    for r, body in self.setup.get(u, {}).items():
      if self.setup_at.setdefault(r, (tuple(self.stack), body))[0] != tuple(self.stack):
        raise LinearizeError(f"the state of loop {r.arg} is set up in two different loop nests")
    for c in self.children[u]:
      self.pending[c] -= 1
      if self.pending[c] == 0:
        if c.op is Ops.RANGE: self.waiting_ranges.append(c)
        else: heapq.heappush(self.ready, (self.prio(c), c))

  def emit_ready(self) -> bool:
    """Emit the first ready UOp (by priority) whose loops are all open; park the others on their blocker."""
    while self.ready:
      p, u = heapq.heappop(self.ready)
      if (why := self.blocker(u)) is not None:
        self.waiting.setdefault(why, []).append((p, u))
        continue
      if u.op is Ops.END:
        self.stack.pop()
        if self.stack: self.happen(("top", self.stack[-1]))
      self.emit(u)
      if u.op is Ops.END:
        self.ended.add(u)
        self.happen(("done", u))
      return True
    return False

  def fits(self, r: UOp) -> bool:
    """A loop with state opens in the loops that state was set up in (and in its body's own loops)."""
    if r not in self.setup_at: return True
    at, body = self.setup_at[r]
    return tuple(self.stack[:len(at)]) == at and set(self.stack[len(at):]) <= body

  def open_loop(self) -> bool:
    """Open a loop whose outer loops (the ranges it is used with that rank before it) are exactly the open ones. A
    loop that encloses nothing open may also go deeper (a reduce that doesn't use a loop it is nested in); a loop whose
    state is set up here goes first: opened any deeper, its state would carry over."""
    allowed = [r for r in self.waiting_ranges if self.fits(r) and self.outer[r] <= set(self.stack)]
    can_open = [r for r in allowed if r in self.setup_at] or [r for r in allowed if self.outer[r] == set(self.stack)] or allowed
    if not can_open: return False
    r = min(can_open, key=self.rank.__getitem__)
    self.waiting_ranges.remove(r)
    self.stack.append(r)
    self.emit(r)
    self.happen(("open", r), ("top", r))
    return True

  def run(self) -> list[UOp]:
    while self.ready or self.waiting or self.waiting_ranges:
      if self.emit_ready() or self.open_loop(): continue
      stuck = [(u.op, [r.arg for r in self.scope[u]]) for ws in self.waiting.values() for _, u in ws][:5]
      raise LinearizeError(f"can't order the kernel: open loops {[r.arg for r in self.stack]}, "
                           f"unopened {[r.arg for r in self.waiting_ranges]}, waiting {stuck}")
    # the final SINK only collects effects (GROUPs stay: an END may close over one)
    return [u for u in self.out if u.op is not Ops.SINK]

def linearize(sink: UOp) -> list[UOp]:
  if any(u.op is Ops.END and len(u.src) > 2 for u in sink.toposort()): sink = graph_rewrite(sink, pm_split_ends, name="split ends")
  return _Linearizer(sink).run()
