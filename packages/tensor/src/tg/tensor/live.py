"""The live tensors that realize and autograd act on beyond their arguments, and what realizing put in their graphs.

A schedule computes some UOps of a graph into buffers; every other live tensor whose graph holds one of them must read
that buffer from then on (`become`): else it computes the value again, from the buffers as they are by then (after an
optimizer's ASSIGN, the forward pass on the updated weights), and a random value would be drawn anew. Autograd must see
through those buffers to what they replaced (`for_grad`), and an ASSIGN must run after every lazy reader of the old value
(`old_value_readers`). That needs a registry of the live tensors: this object, the one registry tg.tensor keeps.

Lifetime: one `LiveTensors` per process, `Tensor.live` (tg.tensor.tensor), created with the class. Every entry is a weak
reference or a weak key, so it lasts exactly as long as its tensor, or as long as the buffer view it describes."""
from __future__ import annotations
import weakref
from collections.abc import KeysView
from typing import TYPE_CHECKING, Any
from tg.uop import UOp, Ops, GroupOp, PatternMatcher, UPat, graph_rewrite
from tg.tensor.schedule import view_base, view_chain, names_buffer, stored_params

if TYPE_CHECKING: from tg.tensor.tensor import Tensor
_BUFFER, _RESHAPE = Ops.BUFFER, Ops.RESHAPE  # (Ops.X is a slow lookup on Python 3.11: once per lazy tensor per realize)

class LiveTensors:
  """`lazy`: the live tensors that may be unrealized. A tensor is added (`add`) when its graph is set to an unrealized
  one, unless its `_lazy` flag says it is in already (a weak reference compares its tensor elementwise, so a tensor must
  not be in twice), and dropped when a walk finds it realized: realized tensors cost a realize nothing. `grad`: the live
  tensors with requires_grad by id, backward's candidate leaves. `asked`: the live tensors a gradient was taken for
  without requires_grad (gradient()'s targets, what tinygrad's fallback backward filled): they are leaves too. `settled`:
  the live tensors dropped from `lazy` or made on a buffer, which with `lazy` is every live tensor (backward's candidates
  when none in its graph requires grad). `realized`: a buffer view `become` put in graphs -> what it replaced."""
  def __init__(self) -> None:
    self.lazy: set[weakref.ref[Tensor]] = set()
    self._discard = self.lazy.discard
    self.settled: set[weakref.ref[Tensor]] = set()
    # by id: a WeakSet compares a tensor added twice with itself by ==, an elementwise Tensor, and raised on its truth
    self.grad: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
    self.asked: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
    # a BUFFER -> the RESHAPE of it a value was last remembered under (a 2-d tensor's), for a write into the bare buffer
    self.reshaped: weakref.WeakKeyDictionary[UOp, weakref.ref[UOp]] = weakref.WeakKeyDictionary()
    self.realized: weakref.WeakKeyDictionary[UOp, UOp] = weakref.WeakKeyDictionary()
    # the write a view's remembered graph last took in (schedule number, ASSIGN): remember sees a write once per tensor
    # holding it, and one ASSIGN UOp may run in many schedules (t += a twice builds it twice)
    self.schedules = 0
    self.applied: weakref.WeakKeyDictionary[UOp, tuple[int, UOp]] = weakref.WeakKeyDictionary()
    self.before: tuple[int, dict[UOp, UOp]] = (-1, {})  # (schedule number, what the views it wrote were before it)

  def add(self, t: Tensor) -> None:
    t._lazy = True
    self.lazy.add(weakref.ref(t, self._discard))

  def pending(self, holding: KeysView[UOp] | None = None) -> list[Tensor]:
    """The live unrealized tensors, or only those whose graph holds one of `holding` (the realized ones found on the way
    are dropped from `lazy`). One loop with plain lookups: every realize runs it over all lazy tensors."""
    out = []
    for ref in list(self.lazy):
      if (t := ref()) is None: continue
      if (u := t._uop).op is _BUFFER or u.op is _RESHAPE and view_base(u) is not None:
        t._lazy = False
        self.lazy.discard(ref)  # (the set's own reference: found by identity, never compared)
        self.settle(t)
      else: out.append(t)
    if holding is None: return out
    held = _marks([t._uop for t in out], dict.fromkeys(holding, 1))
    return [t for t in out if held[t._uop]]

  def settle(self, t: Tensor) -> None:
    if t._settled: return  # (in once: its weak references would compare it elementwise)
    t._settled = True
    self.settled.add(weakref.ref(t, self.settled.discard))

  def everything(self) -> list[Tensor]:
    """Every live tensor: tinygrad's backward fills .grad of each float one in its graph."""
    return [t for ref in [*self.lazy, *self.settled] if (t := ref()) is not None]

  def remember(self, was: UOp, view: UOp) -> None:
    """Autograd sees `was` where a graph holds `view` (for_grad), as long as the view lives. An ASSIGN's target only when
    the view holds a computed value already (then it becomes the written value, below); else the target holds no value
    the ASSIGN didn't write. A custom kernel's output may be the very buffer the kernel wrote, which
    `was` holds as the kernel's source: there it is a stand-in (for_grad puts the buffer back), else `was` would hold
    its own view, a loop. Only a graph that reaches a tensor requiring grad: the old graph holds every buffer upstream of
    the view, which an inference's intermediates must not outlive (h1 freed while h2 = f(h1) lives)."""
    if not self._reaches_grad(was): return
    if not names_buffer(was):
      # a value realized in the schedule that wrote a view it reads read the view before the write (old value readers run
      # first): it holds what the view was
      old = self.before[1] if self.before[0] == self.schedules and not any(u.op is Ops.ASSIGN for u in was.toposort()) else {}
      self.realized[view] = was.substitute({v: g for v, g in old.items() if v in was.toposort()}) if old else was
      if view.op is _RESHAPE and view.src[0].op is _BUFFER: self.reshaped[view.src[0]] = weakref.ref(view)
    elif _kernel_output(was): self.realized[view] = was.substitute({view: _stand_in(view)}) if view in was.toposort() else was
    elif (written := _assign_value(was)) is not None and (olds := self._values_before(view, was)) and \
         ((seen := self.applied.get(_buffer(view))) is None or seen[0] != self.schedules or seen[1] is not _unshaped(was)) and \
         self._reaches_grad(olds[view]):
      # a write into a computed value (t = a * 1; t += a; t += a): the view is now the written value, its reads of the view
      # the value before (else autograd saw t as a * 1 at the second +=, and a got 2, not 3). Only a value computed from a
      # tensor that requires grad: not a leaf's own value (an optimizer's update of a weight initialized lazily)
      self.applied[_buffer(view)] = (self.schedules, _unshaped(was))  # (once per write: its buffer and a 2-d view of it are told apart)
      if self.before[0] != self.schedules: self.before = (self.schedules, {})
      for v, prev in olds.items(): self.before[1].setdefault(v, prev)
      # graphs remembered before hold the view as it was then: they keep that value (t2 = t1 * 3 realized before t1 += t2
      # held t1, which became t1 + t2: a loop, and every later backward raised)
      for k, g in list(self.realized.items()):
        if k not in olds and not olds.keys().isdisjoint(g.toposort()): self.realized[k] = g.substitute(olds)
      new = written.substitute(olds)
      for v in olds: self.realized[v] = new if v is view else new.reshape(v.shape)

  def _values_before(self, view: UOp, was: UOp) -> dict[UOp, UOp]:
    """What `view` (the target of the write `was`) and the reshapes of it that `was` reads were remembered to hold: a
    2-d tensor's value is remembered under RESHAPE(BUFFER), and a write through a view of it (t2 = t1[1]; t2 *= 3)
    targets the bare BUFFER (its gradient was lost). Empty when neither was remembered."""
    views = [r for r in was.toposort() if r.op is _RESHAPE and r.src[0] is view]
    if (ref := self.reshaped.get(view)) is not None and (r := ref()) is not None: views.append(r)  # (t2[1].assign(v): not read)
    olds = {r: g for r in views if (g := self.realized.get(r)) is not None}
    if (prev := self.realized.get(view)) is None and olds: prev = next(iter(olds.values())).reshape(view.shape)
    return {} if prev is None else {view: prev, **olds}

  def _reaches_grad(self, was: UOp) -> bool:
    """Does `was` hold the graph of a live tensor that requires grad, or a view remembered as reaching one?"""
    if not self.grad and not self.asked: return False  # (iterating them is slow)
    leaves = {t.uop for t in self.grad.values() if t.requires_grad} | {t.uop for t in self.asked.values()}
    if not leaves: return False
    topo = was.toposort()
    return not leaves.isdisjoint(topo) or any(u in self.realized or u in self.reshaped for u in topo if u.op is _BUFFER or u.op is _RESHAPE)

  def become(self, becomes: dict[UOp, UOp]) -> None:
    """Point every live tensor at what a schedule just computed: each UOp of its graph in `becomes` is replaced by its
    buffer (an ASSIGN by its target buffer, so a tensor built on it doesn't run the assign again), and the graph above it
    rebuilt. Only the graphs that hold such a UOp are walked (their toposorts, which UOps cache, tell: a tensor that holds
    none costs a lookup), with one memo, so a UOp they share is visited once. What a view replaces is remembered for
    autograd (for_grad), for as long as the view lives: as long as the graph held what it replaced.
    A map of the original graphs, not graph_rewrite: that matches the nodes it rebuilds too, and a rebuilt node can be
    a computed UOp of another meaning (r1 = a * 2 built on an ASSIGN to a, rebuilt on a's buffer, is the UOp of an
    r0 = a * 2 built before the assign, whose buffer holds the old value).
    A tensor whose whole graph was computed (not an ASSIGN) keeps its own last op: equal graphs are one UOp, so it is an
    equal tensor built on its own (BatchNorm's running_var and weight are both Tensor.ones(n)), and pointing it at the
    buffer would make an assign to one write the other."""
    if not (ts := self.pending(becomes.keys())): return
    memo: dict[UOp, UOp] = {}
    remember = self.remember
    for t in ts:
      root = t.uop
      own = root in becomes and not names_buffer(root)  # an equal graph built on its own (see above): only its sources
      stack = list(root.src) if own else [root]
      while stack:
        if (u := stack[-1]) in memo: stack.pop()
        elif (view := becomes.get(u)) is not None:
          stack.pop()
          memo[u] = view
          remember(u, view)
        elif todo := [s for s in u.src if s not in memo]: stack.extend(todo)
        else:
          stack.pop()
          if (src := tuple(memo[s] for s in u.src)) == u.src: memo[u] = u
          elif u.op is Ops.RESHAPE and u.src[0] in becomes and src[0].op is not Ops.MULTI:  # a reshape of a buffer's view:
            # the buffer's view (a sharded tensor's buffers are per-device pieces: its reshape is rebuilt, below)
            memo[u] = (src[0] if src[0].op is Ops.BUFFER else src[0].src[0]).reshape(tuple(u.arg))
            remember(u, memo[u])
          else:
            memo[u] = UOp(u.op, u.dtype, src, u.arg)
            # a sharded tensor whose pieces were computed (a weight sharded lazily, realized with the first step's forward):
            # autograd must see what it was, as for one device's buffer (its gradient was lost)
            if u.op is Ops.MULTI and all(names_buffer(s) for s in src): remember(u, memo[u])
      t.uop = root.replace(src=tuple(memo[s] for s in root.src)) if own else memo[root]

  def for_grad(self, uops: list[UOp], targets: set[UOp]) -> tuple[list[UOp], set[UOp]]:
    """The graphs with each buffer view `become` put in them replaced back by what it replaced, where that reaches a
    target: a value realized on the way (say, by printing an accuracy before backward) still passes gradients, as it did
    before it was realized. Views that reach no target (a weight initialized lazily, then realized) stay buffers.
    Also the writes (ASSIGNs, custom kernels) the restored graphs hold: they ran when those values were realized, so a
    gradient must read what they wrote (`settled`), not run them again (x += 1 twice, a kernel over its own output)."""
    if not self.realized: return uops, set()
    # a leaf target realized after the graphs that use it were: they hold what it was, which is the leaf to autograd (not
    # a value computed from other targets: the gradient goes on to them through what it was)
    was_target = {was: t for t in targets if (was := self.realized.get(t)) is not None}
    marks = targets | was_target.keys()
    was_target = {was: t for was, t in was_target.items() if not any(u in marks for u in was.toposort() if u is not was)}
    reaching, restored = self._reaching(uops, targets | was_target.keys()), {}
    new = graph_rewrite(UOp.sink(*uops), _unbecome, ctx=(self.realized, reaching, was_target, restored), bottom_up=True, name="for grad")
    if not restored: return list(new.src), set()
    # an ASSIGN's target is a buffer written, not a value read: one restored to its old graph (t1 = a.clone() realized,
    # then t1.assign(a * 2)) made the gradient's graph write into the buffer under that graph, a's
    back = {was: x for x, was in restored.items()}
    if targets_back := {u: u.replace(src=(back[u.src[0]], *u.src[1:])) for u in new.toposort() if u.op is Ops.ASSIGN and u.src[0] in back}:
      new = new.substitute(targets_back)
    out = UOp.sink(*new.src, *restored.values())
    if stand_ins := {s: x for x, was in restored.items() if _kernel_output(was) and (s := _stand_in(x)) in was.toposort()}:
      out = out.substitute(stand_ins)  # the buffers back, in the graphs and in the restored writes alike
    return list(out.src[:len(uops)]), {u for was in out.src[len(uops):] for u in was.toposort() if u.op in (Ops.ASSIGN, Ops.CUSTOM_KERNEL)}

  def _reaching(self, uops: list[UOp], targets: set[UOp]) -> set[UOp]:
    """The UOps under uops (looking through realized views to what they replaced) with a target at or under them."""
    reach: dict[UOp, bool] = {}
    entered: set[UOp] = set()
    stack = list(uops)
    while stack:
      if (u := stack[-1]) in reach:
        stack.pop()
        continue
      kids = (was,) if (was := self.realized.get(u)) is not None else u.src
      if todo := [s for s in kids if s not in reach]:
        if u in entered:  # back at u with a source not done: it is under that source, through a remembered graph
          raise RuntimeError(f"autograd: the remembered graph of a realized {u.op} holds it again, a loop (a bug in tg: please report it)")
        entered.add(u)
        stack.extend(todo)
        continue
      stack.pop()
      reach[u] = u in targets or any(reach[s] for s in kids)
    return {u for u, r in reach.items() if r}

  def old_value_readers(self, ts: list[Tensor]) -> list[Tensor]:
    """The live lazy tensors that read a buffer the ASSIGNs and custom kernels among ts write (and not through them): they
    are realized in the same schedule, before the writes (and their own writes' readers before those: the caller asks
    again until none is new), so that a loss realized after opt.step() is the loss of the
    weights it was built on, and x * 10 built before a kernel that adds one to x in place is ten times the old x. Those the
    writes consume too: t2 = t1.sum(); t1[1] = t2 * 2 left t2 fused into the write and lazy, computed again later from
    the new t1. A view of a written buffer shares its memory (as PyTorch's views do) and shows the new values."""
    assigns = {u for t in ts for u in t.uop.toposort() if u.op in (Ops.ASSIGN, Ops.CUSTOM_KERNEL)}
    writers: dict[UOp, set[UOp]] = {}  # buffer -> the writes to it
    for a in assigns:
      if a.op is Ops.ASSIGN: writers.setdefault(a.src[0] if a.src[0].op in (Ops.BUFFER, Ops.MULTI) else a.src[0].src[0], set()).add(a)
      else:
        for i, s in enumerate(a.src):
          if i in stored_params(a.arg.ast) and (b := view_base(s)) is not None: writers.setdefault(b, set()).add(a)
    mine = {id(t) for t in ts}
    readers = [t for t in self.pending() if id(t) not in mine and
               (under := view_chain(t.uop, GroupOp.Movement, symbolic=True)[1]) not in writers and view_base(under) not in writers]  # (a view)
    # t reads a written buffer old if one of the writes to it isn't in t's graph: a read of another buffer's new value (a
    # pending a *= 2 in r = b * 2 + a), or of this one's after an earlier write (r = b.sum() after b *= 2, then b += 1),
    # still reads it as it is before the writes t doesn't hold. As bits: one per buffer and one per write
    bit = {u: 1 << i for i, u in enumerate([*writers, *assigns])}
    need = [(bit[b], sum(bit[w] for w in ws)) for b, ws in writers.items()]
    held = _marks([t.uop for t in readers], bit)
    return [t for t in readers if any(held[t.uop] & b and held[t.uop] & ws != ws for b, ws in need)]

def _marks(roots: list[UOp], bits: dict[UOp, int]) -> dict[UOp, int]:
  """For each UOp at or under roots: the OR of the bits of the marked UOps it holds. One walk with one memo for all the
  roots, which mostly share their graphs, answered from a UOp's cached toposort where it has one. A toposort of each
  root walked the shared graph once per tensor, and become gives every tensor a new root: quadratic, 11 s of a GPT's
  first step."""
  memo: dict[UOp, int] = {}
  for root in roots:
    stack = [root]
    while stack:
      if (u := stack[-1]) in memo: stack.pop()
      elif (topo := u.__dict__.get("_topo")) is not None:
        stack.pop()
        m = 0
        for x in bits.keys() & topo.keys(): m |= bits[x]
        memo[u] = m
      elif todo := [s for s in u.src if s not in memo]: stack.extend(todo)
      else:
        stack.pop()
        m = bits.get(u, 0)
        for s in u.src: m |= memo[s]
        memo[u] = m
  return memo

def _assign_value(was: UOp) -> UOp | None:
  """The value an ASSIGN (under reshapes) writes, in was's shape; None if was is no ASSIGN."""
  return u.src[1].reshape(was.shape) if (u := _unshaped(was)).op is Ops.ASSIGN else None

def _buffer(view: UOp) -> UOp:
  """The BUFFER under a reshape of it (a 2-d tensor's view), else view."""
  return view.src[0] if view.op is _RESHAPE and view.src[0].op is _BUFFER else view

def _unshaped(u: UOp) -> UOp:
  """u under its reshapes."""
  while u.op is _RESHAPE: u = u.src[0]
  return u

def _kernel_output(was: UOp) -> bool:
  """`was` is (a reshape of) a custom kernel's output."""
  return (u := _unshaped(was)).op is Ops.AFTER and u.src[1].op is Ops.CUSTOM_KERNEL

def _stand_in(view: UOp) -> UOp:
  """What a remembered graph holds for `view`'s buffer before a kernel wrote it (a leaf, so no loop)."""
  return UOp(Ops.NOOP, view.dtype, (), ("before the write to", id(view)))

def _restore(ctx: tuple[weakref.WeakKeyDictionary[UOp, UOp], set[UOp], dict[UOp, UOp], dict[UOp, UOp]], x: UOp) -> Any:
  realized, reaching, was_target, restored = ctx
  if (was := realized.get(x)) is None or was not in reaching or was in was_target: return None
  # a target's old graph in it is that target (no loop: a target whose old graph is in was_target isn't restored, above)
  if was_target and not was_target.keys().isdisjoint(was.toposort()): was = was.substitute(was_target)
  restored[x] = was
  return was
_unbecome = PatternMatcher([(UPat((Ops.RESHAPE, Ops.BUFFER, Ops.MULTI), name="x"), _restore)])  # (what a view is; a MULTI of views)

_settle = PatternMatcher([
  (UPat(Ops.ASSIGN, name="x"), lambda ctx, x: x.src[0] if x in ctx else None),
  (UPat(Ops.AFTER, src=(UPat.var("b"), UPat(Ops.CUSTOM_KERNEL, name="k"))), lambda ctx, b, k: b if k in ctx else None),
])
def settled(uops: list[UOp], ran: set[UOp]) -> list[UOp]:
  """uops reading the buffers the writes in `ran` (for_grad's) wrote, instead of running them again."""
  if not ran: return uops
  return list(graph_rewrite(UOp.sink(*uops), _settle, ctx=ran, bottom_up=True, name="settled").src)
