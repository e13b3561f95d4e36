"""The scheduler: a lazy tensor graph becomes a list of ExecItems (kernels and copies) in dependency order.

Where buffers must exist: the tensors asked for, CONTIGUOUS, COPY (and what it copies), ASSIGN, CUSTOM_KERNEL
outputs, a REDUCE_AXIS whose result is broadcast again (EXPAND) or is needed by more than one kernel (with the
elementwise work after it, when that is what gets broadcast). Everything
else fuses: each buffer is one kernel whose AST indexes its inputs through the movement ops (index math, never
copies), with the elementwise work before and after a reduce in the same kernel; elementwise ASSIGNs of one shape share
one kernel that stores each (_assign_groups)."""
from __future__ import annotations
import functools, heapq, math
from dataclasses import dataclass, field
from typing import Any
from tg.uop import UOp, Ops, GroupOp, AxisType, KernelInfo, dtypes, prod, all_int, type_verify, kernel_spec, tensor_spec, SPEC, \
  flat_index, move_index, track, split_and, PatternMatcher, UPat, graph_rewrite_map
from tg.codegen.device import Buffer
from tg.tensor.graph import buffers, new_buffer, device_of, dim_text
from tg.tensor.errors import TensorSymbolicError

@dataclass
class ExecItem:
  """A kernel AST (SINK) with its buffers in PARAM slot order, or a COPY between two buffers (ast.op is COPY)."""
  ast: UOp
  bufs: list[Buffer]
  var_vals: dict[str, int] = field(default_factory=dict)

def _realize_points(outs: list[UOp]) -> dict[UOp, None]:
  sink = UOp.sink(*outs)
  topo = sink.toposort()
  consumers: dict[UOp, list[UOp]] = {u: [] for u in topo}
  for u in topo:
    for s in u.src: consumers[s].append(u)
  points: dict[UOp, None] = {}
  for u in topo:
    if u.op is Ops.SINK: continue
    if u.op in (Ops.CONTIGUOUS, Ops.COPY, Ops.ASSIGN) or u in outs and not names_buffer(u): points[u] = None
    if u.op is Ops.CUSTOM_KERNEL: points.update({x: None for x in (u, *u.src) if not names_buffer(x)})
    # (a symbolic-length prefix of a buffer, b[:v], too: the copy moves whole buffers, and b is longer)
    if u.op is Ops.COPY and (not is_buffer_view(u.src[0]) or symbolic_prefix(u.src[0])): points[u.src[0]] = None
    if u.op is Ops.ASSIGN and _reads_shifted(u.src[1], _target(u)): points[u.src[1]] = None
  for u in topo:
    if u.op is Ops.EXPAND and u.src[0].shape != u.shape and \
       (_is_reduce_epilogue(s := _unmoved(u.src[0]), points) or _computed_operand(u, s, consumers, points)): points[s] = None
    # a padded reduce (a piece of a cat of matmuls) is realized before the pad: in the padded kernel every element ran every
    # piece's reduce loop, its loads masked off outside the piece (a cat of three 1024x256x256 matmuls took 107 ms, not 1.5)
    if u.op is Ops.PAD and _is_reduce_epilogue(s := _unmoved(u.src[0]), points): points[s] = None
  shared = []
  for u in topo:
    if u.op is Ops.REDUCE_AXIS and u not in points and _needs_buffer(u, consumers, points):
      points[u] = None
      shared.append(u)
  _share_recomputed(topo, consumers, points)
  for u in shared:  # now read through one stored value (x + linear(h), which a layernorm reads three times): computed in its kernel
    if not _needs_buffer(u, consumers, points): del points[u]
  return _in_order([u for u in topo if u in points])

def _in_order(points: list[UOp]) -> dict[UOp, None]:
  """The points in an order that runs each after the points it reads and every ASSIGN after each kernel that reads its
  target's old value (a loss realized with the optimizer step that updates the weights it read), else in toposort order.
  A kernel that reads both a target's old value and (through other kernels) the ASSIGN's result reads a copy of the old
  value, taken first: the target BUFFER itself is then a point (computed into a buffer of its own). Assigns that read each
  other's old values (a swap) can't all wait for their readers: then one's value is computed into a buffer of its own
  first (a point before it), and the assign copies that."""
  while isinstance(order := _try_order(points), UOp):
    if order.src[1] in points: raise RuntimeError(f"can't order the assigns of one schedule: {order.src[1].op} is realized already")
    points = points[:(i := points.index(order))] + [order.src[1]] + points[i:]
  return order

def _try_order(points: list[UOp]) -> dict[UOp, None] | UOp:
  """_in_order's order, or an assign caught in a cycle of old-value reads whose own inputs are done."""
  pset = dict.fromkeys(points)
  reads = {p: _kernel_reads(p, pset) for p in points}
  targets = {p: _target(p) for p in points if p.op is Ops.ASSIGN}
  upstream: dict[UOp, set[UOp]] = {}  # the ASSIGNs whose results a point's kernel reads, through any kernels
  for p in points: upstream[p] = {a for q in reads[p] if q in upstream for a in (upstream[q] | ({q} if q in targets else set()))}
  snapshots = [b for a, b in targets.items() if any(b in reads[p] and a in upstream[p] for p in points)]
  if snapshots:  # the BUFFER is read as itself by the copy kernel, and through the copy by the rest
    points = snapshots + points
    for b in snapshots: reads[b] = {b}
  after: dict[UOp, set[UOp]] = {p: {q for q in reads[p] if q in reads and q is not p} for p in points}  # p runs after these
  for a, b in targets.items():
    after[a] |= {b} if b in snapshots else {p for p in points if p is not a and b in reads[p]}
  _order_custom_writes(points, reads, after)
  order = {p: i for i, p in enumerate(points)}
  waiting = {p: len(qs) for p, qs in after.items()}
  unblocks: dict[UOp, list[UOp]] = {p: [] for p in points}
  for p, qs in after.items():
    for q in qs: unblocks[q].append(p)
  ready = [(order[p], p) for p in points if not waiting[p]]
  heapq.heapify(ready)
  out: dict[UOp, None] = {}
  while ready:
    out[p := heapq.heappop(ready)[1]] = None
    for c in unblocks[p]:
      waiting[c] -= 1
      if not waiting[c]: heapq.heappush(ready, (order[c], c))
  if len(out) != len(points):
    stuck = next((a for a in targets if a not in out and all(q in out for q in reads[a] if q in reads)), None)
    if stuck is None: raise RuntimeError("these ASSIGNs each read the old value of a buffer another one writes: no order of the "
                                         "kernels is right; realize one of them first")
    return stuck
  return out

def _order_custom_writes(points: list[UOp], reads: dict[UOp, set[UOp]], after: dict[UOp, set[UOp]]) -> None:
  """A custom kernel writes its inputs in place: it runs after each kernel that reads one of them and does not depend on
  it (a reader of the old contents, as an ASSIGN runs after the readers of its target's old value)."""
  kernels: dict[UOp, set[UOp]] = {}  # point -> the custom kernels it depends on, through any kernels
  for p in points:
    kernels[p] = {k for q in reads[p] if q in kernels for k in kernels[q] | ({q} if q.op is Ops.CUSTOM_KERNEL else set())}
  for k in points:
    if k.op is not Ops.CUSTOM_KERNEL: continue
    written = {s if (b := view_base(s)) is None else b for i, s in enumerate(k.src) if i in stored_params(k.arg.ast)}
    after[k] |= {p for p in points if p is not k and k not in kernels[p] and not written.isdisjoint(reads[p])}

def stored_params(ast: UOp) -> set[int]:
  """The slots of the PARAMs a kernel AST stores into (what a custom kernel writes; its other inputs it only reads)."""
  out = set()
  for st in ast.toposort():
    if st.op is not Ops.STORE: continue
    u = st.src[0]
    while u.op is not Ops.PARAM and u.src: u = u.src[0]
    if u.op is Ops.PARAM: out.add(u.arg)
  return out

def _assign_groups(points: dict[UOp, None]) -> dict[UOp, list[UOp]]:
  """ASSIGNs of one shape and device computed by one kernel, at the place of the last (an optimizer's m, v and weight
  update of a parameter: one pass over their memory instead of three, the new m and v never loaded again). A group is
  open per shape and device. An elementwise ASSIGN (no reduce in its kernel) joins its open group when _joins says the
  writes can't be seen out of order, else it opens a new one; a point that reads a member's target or result, writes what
  a member reads, or runs a custom kernel or a copy closes every other group it touches first (the members' writes move
  to their last member: nothing between may depend on their order). Each member maps to its group, for groups of two or more."""
  groups: dict[UOp, list[UOp]] = {}
  open_: dict[tuple, list[UOp]] = {}
  def close(key: tuple) -> None:
    if len(g := open_.pop(key)) > 1: groups.update({m: g for m in g})
  for p in points:
    elementwise = p.op is Ops.ASSIGN and p.src[1] not in points and all_int(p.shape) and prod(p.shape) > 0 and \
      not any(u.op is Ops.REDUCE_AXIS for u in _kernel_uops(p.src[1], points))
    mine = (device_of(p), p.shape) if elementwise else None
    reads = _kernel_reads(p, points)
    for key in [k for k, g in open_.items() if k != mine and (p.op in (Ops.CUSTOM_KERNEL, Ops.COPY) or
                any(m in reads or _target(m) in reads for m in g) or p.op is Ops.ASSIGN and any(_target(p) in _kernel_reads(m, points) for m in g))]:
      close(key)
    if mine is None: continue
    if mine in open_ and _joins(p, open_[mine], points): open_[mine].append(p)
    else:
      if mine in open_: close(mine)
      open_[mine] = [p]
  for key in list(open_): close(key)
  return groups

def _kernel_uops(value: UOp, points: dict[UOp, None]) -> list[UOp]:
  """The UOps of value's graph that its kernel computes: down to the points (which it loads), without them."""
  stack, seen = [value], set()
  while stack:
    if (u := stack.pop()) in seen or u in points and u is not value: continue
    seen.add(u)
    stack.extend(u.src)
  return list(seen)

def _joins(p: UOp, g: list[UOp], points: dict[UOp, None]) -> bool:
  """Can ASSIGN p be computed in group g's kernel? Its value reads the members' results only at the element it writes
  (through elementwise ops and reshapes, which keep the flat index: the kernel computes them there) and no member's target
  (its loads and the member's store are unordered in one kernel), and no member reads p's target."""
  if any(_target(p) in _kernel_reads(m, points) for m in g): return False
  members, targets = set(g), {_target(m) for m in g} - {_target(p)}
  stack, seen = [(p.src[1], False)], set()
  while stack:
    u, moved = stack.pop()
    if (u, moved) in seen: continue
    seen.add((u, moved))
    if u in targets or u in members and moved: return False
    if u in members or u in points: continue
    moved = moved or not (u.op in GroupOp.ALU or u.op in _PASS_THROUGH or u.op in (Ops.CAST, Ops.BITCAST, Ops.RESHAPE))
    stack.extend((s, moved) for s in u.src)
  return True

def _target(a: UOp) -> UOp:
  """The BUFFER an ASSIGN writes (its first source: the buffer, or a reshape of it)."""
  return a.src[0] if a.src[0].op is Ops.BUFFER else a.src[0].src[0]

def _kernel_reads(p: UOp, points: dict[UOp, None]) -> set[UOp]:
  """The points and BUFFERs p's kernel reads (an ASSIGN's: its value's)."""
  stack, seen, out = list(p.src[1:2] if p.op is Ops.ASSIGN else p.src), set(), set()
  while stack:
    if (u := stack.pop()) in seen: continue
    seen.add(u)
    if u in points or u.op is Ops.BUFFER: out.add(u)
    else: stack.extend(u.src)
  return out

def _unmoved(u: UOp) -> UOp:
  while u.op in GroupOp.Movement: u = u.src[0]
  return u

def _is_reduce_epilogue(u: UOp, points: dict[UOp, None]) -> bool:
  """Is u a reduce, or elementwise work on one, in the kernel being built (not past a realized point)? When such a value
  is broadcast, it is realized there, before the broadcast: the work after the reduce (a bias, an activation, a
  gradient mask) is then done once per element, not once per use of the element."""
  stack, seen = [u], set()
  while stack:
    x = stack.pop()
    if x in seen or (x in points and x is not u) or x.op in (Ops.BUFFER, Ops.CONST): continue
    seen.add(x)
    if x.op is Ops.REDUCE_AXIS: return True
    if x.op in (Ops.CALL, Ops.DETACH):  # their value is their first source
      stack.append(x.src[0])
      continue
    if x.op not in GroupOp.ALU and x.op not in (Ops.CAST, Ops.BITCAST) and x.op not in GroupOp.Movement: return False
    stack.extend(x.src)
  return False

def _needs_buffer(r: UOp, consumers: dict[UOp, list[UOp]], points: dict[UOp, None]) -> bool:
  """A reduce is realized when it is broadcast again downstream, when more than one kernel uses it, or when it is a
  contraction (a matmul, a conv) that another reduce sums again: in one kernel the contraction ran without its register
  tile ((x @ w).sum(0) of 512x256x256: 8.3 ms, numpy 0.25)."""
  roots: set[UOp] = set()
  stack, seen = [r], {r}
  while stack:
    for c in consumers[stack.pop()]:
      if c in seen or c.op is Ops.SINK: continue
      seen.add(c)
      if c.op is Ops.EXPAND and c.src[0].shape != c.shape: return True
      if c.op is Ops.REDUCE_AXIS and _contraction(r, points): return True
      if c in points or c.op is Ops.REDUCE_AXIS: roots.add(c)
      else: stack.append(c)
  return len(roots) > 1

def _contraction(r: UOp, points: dict[UOp, None]) -> bool:
  """Does reduce r sum over a broadcast operand in its own kernel (a product of two: a matmul, a conv)?"""
  stack, seen = [r.src[0]], set()
  while stack:
    x = stack.pop()
    if x in seen or x in points or x.op in (Ops.BUFFER, Ops.CONST): continue
    seen.add(x)
    if x.op is Ops.EXPAND and x.src[0].shape != x.shape: return True
    if x.op is not Ops.REDUCE_AXIS: stack.extend(x.src)
  return False

OPERAND_REUSE = 16  # a computed value broadcast to at least this many times its size is stored first (_computed_operand)

def _computed_operand(e: UOp, s: UOp, consumers: dict[UOp, list[UOp]], points: dict[UOp, None]) -> bool:
  """Is s, broadcast by EXPAND e into a reduce, elementwise work on two or more buffers that e repeats at least
  OPERAND_REUSE times (a layernorm's output as a matmul's operand, read once per tile of the other operand's columns, or
  a weight gradient's B)? The reduce's kernel would redo the work at every repeat: it is stored once instead."""
  if s in points or s.op not in GroupOp.ALU or not all_int(e.shape) or not all_int(s.shape): return False
  if prod(e.shape) < OPERAND_REUSE * prod(s.shape) or len(_kernel_reads(s, points)) < 2: return False
  stack, seen = [e], {e}
  while stack:
    for c in consumers[stack.pop()]:
      if c.op is Ops.REDUCE_AXIS: return True
      if c not in seen and c not in points and (c.op in GroupOp.ALU or c.op in GroupOp.Movement or c.op is Ops.CAST):
        seen.add(c)
        stack.append(c)
  return False

def _elements(u: UOp) -> int: return u.arg if u.op is Ops.BUFFER else prod(u.shape)

SHARE_CAP = 32  # the inputs (and the kernels) _share_recomputed tracks per value: more are many (linear time on long chains)

def _share_recomputed(topo: list[UOp], consumers: dict[UOp, list[UOp]], points: dict[UOp, None]) -> None:
  """Elementwise values that c >= 2 kernels read, each recomputing them from inputs of S elements in all (each input
  counted up to the value's size n), become points when storing is cheaper: (c - 1) * S > (c + 1) * n (c reads of S,
  against one read of S, a write and c reads of n). A residual stream x + f(x) + g(...) is otherwise a sum over every
  earlier layer's buffers, re-read by each kernel that uses it (a GPT step's layernorm gradients read 24 buffers).
  Bottom-up, so a value above a new point reads the point. A value reading more than SHARE_CAP inputs counts as one
  input of the values above it (they count fewer: no point is made that the full count wouldn't make)."""
  roots = _kernels_reading(topo, consumers, points)
  reads: dict[UOp, frozenset[UOp]] = {}
  for u in topo:
    if u in points or u.op is Ops.BUFFER:
      reads[u] = frozenset((u,))
      continue
    r = reads[u] = frozenset().union(*(reads[x] for x in u.src))
    if u.op in GroupOp.ALU and all_int(u.shape) and (n := prod(u.shape)) > 0 and (c := _count(roots[u])) >= 2 and \
       not _read_above(u, consumers, roots) and (c - 1) * sum(min(_elements(b), n) for b in r) > (c + 1) * n: points[u] = None
    if u in points or len(r) > SHARE_CAP: reads[u] = frozenset((u,))

def _read_above(u: UOp, consumers: dict[UOp, list[UOp]], roots: dict[UOp, frozenset[UOp]]) -> bool:
  """Is u read only by elementwise ops of its shape that the same kernels compute? Storing one of those (or a value above
  them) serves every kernel that reads u, and reads more of what they share, so u is left to them: a GELU's gradient
  stored each term it is the sum and product of, 11 kernels where one does."""
  return all(c.op in GroupOp.ALU and c.shape == u.shape and roots[c] == roots[u] for c in consumers[u])

def _kernels_reading(topo: list[UOp], consumers: dict[UOp, list[UOp]], points: dict[UOp, None]) -> dict[UOp, frozenset[UOp]]:
  """The kernels that compute with each UOp: the points and reduces above it, up to SHARE_CAP of them."""
  roots: dict[UOp, frozenset[UOp]] = {}
  for u in reversed(topo):
    found: set[UOp] = set()
    for c in consumers[u]:
      if c.op is not Ops.SINK: found.update((c,) if c in points or c.op is Ops.REDUCE_AXIS else roots[c])
      if len(found) >= SHARE_CAP: break
    roots[u] = frozenset(found)
  return roots

def _count(kernels: frozenset[UOp]) -> int:
  """How many kernels these are: ASSIGNs count once, as one kernel stores them."""
  return sum(1 for r in kernels if r.op is not Ops.ASSIGN) + any(r.op is Ops.ASSIGN for r in kernels)

def _reads_shifted(value: UOp, target: UOp) -> bool:
  """Does value read target at other elements than the one it writes (through a view that moves elements, or a reduce)?
  Then an in-place kernel would read elements it already overwrote, so the value is computed into its own buffer first.
  Another buffer's ASSIGN is not looked through: its kernel runs before this one (this one reads its result), so what it
  read of target is the old value (an optimizer's p.assign reads m.assign, whose gradient read p broadcast: no copy)."""
  stack, seen = [(value, False)], set()
  while stack:
    u, moved = stack.pop()
    if u is target and moved: return True
    if (u, moved) in seen or (u.op is Ops.ASSIGN and target not in (u.src[0], u.src[0].src[0] if u.src[0].src else None)): continue
    seen.add((u, moved))
    moved = moved or u.op in (Ops.EXPAND, Ops.PERMUTE, Ops.PAD, Ops.SHRINK, Ops.FLIP, Ops.REDUCE_AXIS)
    stack.extend((s, moved) for s in u.src)
  return False

def names_buffer(u: UOp) -> bool:
  """(A reshape of) a BUFFER, an ASSIGN, or a custom kernel's output (AFTER): it is a buffer already, no kernel copies it."""
  while u.op is Ops.RESHAPE: u = u.src[0]
  return u.op in (Ops.BUFFER, Ops.ASSIGN, Ops.AFTER)

_RESHAPE, _SHRINK, _BUFFER = Ops.RESHAPE, Ops.SHRINK, Ops.BUFFER  # (Ops.X is a slow lookup on Python 3.11)

def view_base(u: UOp) -> UOp | None:
  """The BUFFER under u if u is that buffer or reshapes of it (a reshape of a buffer is that buffer, indexed row-major),
  or of the first elements of it a tensor of symbolic shape is stored in (buffer_view), else None."""
  while u.op is _RESHAPE: u = u.src[0]
  if symbolic_prefix(u): u = u.src[0]
  return u if u.op is _BUFFER else None

def symbolic_prefix(u: UOp) -> bool:
  """Is u the first elements of a BUFFER, a symbolic number of them: how buffer_view stores a tensor of symbolic shape."""
  return u.op is _SHRINK and u.src[0].op is _BUFFER and isinstance(b := u.arg[0][0], int) and b == 0 and not all_int(u.shape)

VIEWS = frozenset({Ops.RESHAPE, Ops.PERMUTE, Ops.SHRINK, Ops.FLIP, Ops.PAD})  # a view's elements, each one of its source's
# (a PAD only where no element of the view lies in it: a strided slice pads its axis to reshape it)

def view_chain(u: UOp, ops: frozenset[Ops] = VIEWS, symbolic: bool = False) -> tuple[list[UOp], UOp]:
  """The movement ops of `ops` from u down, u first, and the UOp under them. A shrink with symbolic bounds only when
  `symbolic`, and never a symbolic-shape buffer's prefix (buffer_view): that is the buffer."""
  chain = []
  while u.op in ops and (u.op is not _SHRINK or (not symbolic_prefix(u) if symbolic else all(isinstance(e, int) for _, e in u.arg))):
    chain, u = chain + [u], u.src[0]
  return chain, u

def buffer_view(b: UOp, shape: tuple) -> UOp:
  """BUFFER b read in `shape` (of b's size): what b.reshape(shape) gives, without its checks and without computing the
  shape of a fresh buffer (a tiny op's Python time). A symbolic shape is stored in the buffer's first elements (the
  buffer has room for its largest value): a shrink of them, reshaped."""
  if not all_int(shape): b = UOp(Ops.SHRINK, b.dtype, (b,), ((0, prod(shape)),))
  elif len(shape) == 1 and shape[0] == b.arg: return b
  return b if b.shape == shape else UOp(Ops.RESHAPE, b.dtype, (b,), shape)

def max_elements(shape: tuple) -> int:
  """The most elements a tensor of this shape holds, over its variables' ranges (not their bound values: the buffer, and
  the kernels that take it, then serve every value)."""
  n = prod(shape)
  return n if isinstance(n, int) else int(n.unbound().vmax)

def is_buffer_view(u: UOp) -> bool:
  """A BUFFER or reshapes of it: already realized, contiguous (no kernel copies it)."""
  return view_base(u) is not None

_PASS_THROUGH = (Ops.CONTIGUOUS, Ops.DETACH, Ops.AFTER, Ops.CALL)  # their value is their source's

class KernelBuilder:
  """Builds one kernel: the value of each root at every index of their (one) shape, stored into its buffer. `inline`: the
  ASSIGNs of one group (_assign_groups) whose values are computed in this kernel: another root reads them as their value."""
  def __init__(self, bufmap: dict[UOp, UOp], inline: set[UOp] | None = None):
    self.bufmap, self.params, self.next_axis, self.inline = bufmap, {}, 0, inline or set()
    self.memo: dict[tuple, UOp] = {}
  def param(self, b: UOp) -> UOp:
    if b not in self.params: self.params[b] = UOp.param(len(self.params), b.dtype, b.arg)
    return self.params[b]
  def axis(self, size: int, axis_type: AxisType) -> UOp:
    self.next_axis += 1
    return UOp.range(size, self.next_axis - 1, axis_type)

  def build(self, roots: list[tuple[UOp, UOp]], name: str) -> UOp:
    """The kernel storing each (value, out buffer) of roots (values of one shape) at every index."""
    shape = roots[0][0].shape
    for _, out in roots: self.param(out)
    rngs = [self.axis(s, AxisType.LOOP) if s != 1 else UOp.const(dtypes.index, 0) for s in shape]
    flat = flat_index(rngs, shape)
    # a root is not in bufmap unless it is an ASSIGN's value realized first
    stores = [self.param(out).index(flat).store(self.lower(root, tuple(rngs), None)) for root, out in roots]
    return UOp.group(*stores).end(*[r for r in rngs if r.op is Ops.RANGE]).sink(arg=KernelInfo(name=name))

  def lower(self, u: UOp, idx: tuple[UOp, ...], valid: UOp | None, top: bool = False) -> UOp:
    """The value of tensor UOp u at index idx (a UOp per dimension), loads gated by `valid`."""
    key = (u, idx, valid, top)
    if (ret := self.memo.get(key)) is None:
      self._lower_sources_first(u, idx, valid)
      ret = self.memo[key] = self._lower(u, idx, valid, top)
    return ret

  def _lower_sources_first(self, u: UOp, idx: tuple[UOp, ...], valid: UOp | None) -> None:
    """Lower the elementwise graph under u (read at the same index) bottom-up, iteratively, so that _lower's recursion
    is one level deep there: a chain of 10,000 adds (a loss summed over an epoch) needs no deep stack."""
    def same_index(x: UOp) -> bool:
      return x not in self.bufmap and (x.op in GroupOp.ALU or x.op in _PASS_THROUGH or x.op in (Ops.CAST, Ops.BITCAST))
    if not same_index(u): return
    stack, seen = [(u, False)], {u}
    while stack:
      x, sources_done = stack.pop()
      if sources_done:
        if x is not u: self.lower(x, idx, valid)
        continue
      stack.append((x, True))
      for s in (x.src[:1] if x.op in _PASS_THROUGH else x.src):  # (an AFTER's other sources only order it)
        if s not in seen and same_index(s) and (s, idx, valid, False) not in self.memo: seen.add(s); stack.append((s, False))

  def _lower(self, u: UOp, idx: tuple[UOp, ...], valid: UOp | None, top: bool) -> UOp:
    if not top and u in self.bufmap:
      b = self.bufmap[u]
      flat = flat_index(list(idx), u.shape)
      return self.param(b).index(flat.valid(valid) if valid is not None else flat)
    op, src = u.op, u.src
    if 0 in u.shape: return UOp.const(u.dtype, 0)  # an empty tensor is only ever read where a PAD masks it out
    if op is Ops.BUFFER: return self.param(u).index(idx[0].valid(valid) if valid is not None else idx[0])
    if op is Ops.CONST: return UOp.const(u.dtype, u.arg)
    if op is Ops.DEFINE_VAR: return u  # (a variable as a value: an argument of the kernel)
    if op is Ops.IOTA: return idx[0].cast(u.dtype)
    if op in _PASS_THROUGH: return self.lower(src[0], idx, valid)
    if op is Ops.ASSIGN and u in self.inline: return self.lower(src[1], idx, valid)  # computed in this kernel (its group's)
    if op in GroupOp.ALU or op in (Ops.CAST, Ops.BITCAST):
      return UOp(op, u.dtype, tuple(self.lower(s, idx, valid) for s in src), u.arg)
    if op in GroupOp.Movement:
      if op is Ops.PAD and _in_padding(u, idx): return UOp.const(u.dtype, 0)
      new, inside = move_index(u, idx)
      gate = inside if valid is None else (valid & inside if inside is not None else valid)
      inner = self.lower(src[0], new, gate)
      return inside.where(inner, inner.const_like(0)) if inside is not None else inner
    if op is Ops.REDUCE_AXIS:
      red_op, axes = u.arg
      if any(src[0].shape[a] == 0 for a in axes):  # nothing to reduce: the identity (a sum 0, a product 1, a max the lowest)
        return UOp.const(u.dtype, {Ops.ADD: 0, Ops.MUL: 1}.get(red_op, dtypes.min(u.dtype)))
      new = list(idx)
      rngs = []
      for a in axes:
        s = src[0].shape[a]
        if s == 1: new[a] = UOp.const(dtypes.index, 0)
        else: new[a] = r = self.axis(s, AxisType.REDUCE); rngs.append(r)
      val = self.lower(src[0], tuple(new), valid)
      if red_op is Ops.ADD and rngs and (picked := _pick_one_hot(val, rngs)) is not None: return picked
      return val.reduce(*rngs, arg=red_op)
    raise NotImplementedError(f"the scheduler can't lower {op} inside a kernel")

def _in_padding(pad: UOp, idx: tuple[UOp, ...]) -> bool:
  """Is a constant index of some axis of `pad` in its padding? Then the element is 0, and the source isn't lowered there:
  lowering it anyway doubled the work at each level of stack(a, a)[0] (2^24 lowerings for 24 of them). Decided in Python
  (range analysis of every pad's condition cost a quarter more scheduling time)."""
  return any(i.op is Ops.CONST and isinstance(b, int) and isinstance(n, int) and not b <= i.arg < b + n
             for i, (b, _), n in zip(idx, pad.arg, pad.src[0].shape))

def _pick_one_hot(val: UOp, rngs: list[UOp]) -> UOp | None:
  """A sum over ranges r of where(r == e & ..., v(r), 0), each e an integer that doesn't depend on the ranges (the one-hot
  select of indexing, gather and Embedding), is v(e) where 0 <= e < n, else 0: a load at a computed address (a gather)
  instead of a loop over the whole axis. The loads that move with r are gated by the range check, so an index out of
  range reads nothing and gives 0, as the one-hot did."""
  if val.op is not Ops.WHERE or val.src[2].op is not Ops.CONST or val.src[2].arg != 0: return None
  picks: dict[UOp, UOp] = {}
  hits: dict[UOp, UOp] = {}  # the compares that picked: true at r = e
  for t in split_and(val.src[0]):
    if t.op is not Ops.CMPEQ or not dtypes.is_int(t.src[0].dtype): continue
    for e, side in (t.src, t.src[::-1]):
      core, e = _uncast(side.simplify()), e.simplify()  # (unsimplified, a view's index math can mention r and cancel it)
      if core in rngs and core not in picks and not any(x in rngs for x in e.toposort()):
        picks[core] = e if e.dtype == dtypes.index else e.cast(dtypes.index)
        hits[t] = UOp.const(dtypes.bool, True)
        break
  if len(picks) != len(rngs): return None
  gate = functools.reduce(lambda a, b: a & b, [(e >= 0) & (e < r.src[0].arg) for r, e in picks.items()])
  moved: dict[UOp, UOp] = {}
  for ix in val.toposort():
    if ix.op is not Ops.INDEX or not any(x in picks for x in ix.src[1].toposort()): continue
    i, g = (ix.src[1].src[1], gate & ix.src[1].src[0]) if ix.src[1].op is Ops.WHERE else (ix.src[1], gate)
    moved[ix] = UOp(Ops.INDEX, ix.dtype, (ix.src[0], i.substitute(picks).valid(g), *ix.src[2:]), ix.arg)
  return gate.where(val.substitute({**hits, **moved, **picks}), val.src[2])

def _uncast(x: UOp) -> UOp:
  """x without the integer casts around it that keep its value (arange's int32 compared with an int64 index is a range
  cast twice)."""
  while x.op is Ops.CAST and dtypes.is_int(x.dtype) and dtypes.is_int(x.src[0].dtype) and \
        dtypes.min(x.dtype) <= x.src[0].vmin and x.src[0].vmax <= dtypes.max(x.dtype): x = x.src[0]
  return x

def kernel_name(root: UOp) -> str:
  """E_ and the output's dims for an elementwise kernel; r_, the output's dims and the dims the outermost reduce (the
  last in the toposort) sums over (a 4x4 sum(1) is r_4_4, a 64x64 matmul r_64_64_64); a symbolic dim by its expression
  (sum(1) of ones(i, 3) is r_i_3)."""
  red = next((u for u in reversed(root.toposort()) if u.op is Ops.REDUCE_AXIS), None)
  dims = [*root.shape, *([] if red is None else [red.src[0].shape[a] for a in red.arg[1]])]
  return ("r" if red is not None else "E") + "".join(f"_{dim_text(d)}" for d in dims)

# ***** the schedule cache: the same graph on other buffers schedules the same way *****
Ref = tuple[str, int]  # ("in", k): the k-th BUFFER of the graph; ("new", j): the j-th buffer the schedule creates
# a cache entry: the kernels (AST and the refs of their buffers), the specs of the new buffers, and what becomes a buffer
# (by its position in the graph's toposort, which is the row in the cache key, and the ref of its buffer)
_cache: dict[tuple, tuple[list[tuple[UOp, list[Ref]]], list[tuple[str, int, Any]], list[tuple[int, Ref]]]] = {}
# the most entries kept, the oldest dropped first: a loop whose graph changes every step (a Python float of the step
# number in it) must not grow the process without end. (Not LRU: a hit would hash the key twice more.)
CACHE_ENTRIES = 2048

def _unbind_arg(x: Any, var_vals: dict[str, int]) -> Any:
  """A movement op's arg (nested tuples of sizes) with each bound variable (BIND: a symbolic size) replaced by its
  DEFINE_VAR, the values going to var_vals: the graph, its kernels and its cache key are then the same for every value."""
  if type(x) is tuple: return x if all(type(y) is int for y in x) else tuple(_unbind_arg(y, var_vals) for y in x)  # (most: sizes)
  if not isinstance(x, UOp) or not (binds := [u for u in x.toposort() if u.op is Ops.BIND]): return x
  for b in binds:
    name, val = b.src[0].arg[0], b.src[1].arg
    if var_vals.setdefault(name, val) != val:  # (tinygrad raises RuntimeError, "bind mismatch")
      raise TensorSymbolicError(f"bind mismatch: variable {name!r} is bound to both {var_vals[name]} and {val} in one graph")
  return x.substitute({b: b.src[0] for b in binds})

def _unbind_movement(x: UOp) -> UOp | None:
  return None if (arg := _unbind_arg(x.arg, {})) == x.arg else x.replace(arg=arg)
_unbind = PatternMatcher([(UPat(GroupOp.Movement, name="x"), _unbind_movement),  # each movement op's arg unbound
                          (UPat(Ops.BIND, name="x"), lambda x: x.src[0])])  # and each bound variable used as a value

# args that don't change what a graph computes: a UNIQUE's identity, and a CALL's backward (a closure made anew by every
# matmul or pow, which put a new cache entry, and a new schedule, into every step of an eager training loop)
_KEYLESS_ARG = frozenset({Ops.UNIQUE, Ops.CALL})

def _structure(outs: list[UOp]) -> tuple[tuple, list[UOp], dict[str, int], list[UOp]]:
  """The graph as a tuple with its buffers numbered by first appearance (their identities left out) and its bound
  variables unbound, the buffers, the variables' values, and the UOps in the order of the rows."""
  index: dict[UOp, int] = {}
  rows: list[tuple] = []
  bufs: list[UOp] = []
  var_vals: dict[str, int] = {}
  nodes = list(UOp.sink(*outs).toposort())
  movement, at, buffer, bind = GroupOp.Movement, index.__getitem__, Ops.BUFFER, Ops.BIND
  for u in nodes:  # (the per-op Python time of a tiny op's realize: kept to plain lookups, Ops.X is slow on Python 3.11)
    op = u.op
    if op is buffer: bufs.append(u)
    index[u] = len(rows)
    arg = None if op in _KEYLESS_ARG else _unbind_arg(u.arg, var_vals) if op in movement else u.arg
    if op is bind:  # a bound variable as a value (Tensor(v)): its value to var_vals, the key the variable's
      _unbind_arg(u, var_vals)
      index[u] = index[u.src[0]]
      continue
    if type(arg) is float: arg = (arg, math.copysign(1.0, arg))  # -0.0 == 0.0: a key that equates them reused one's kernel for both
    rows.append((op, u.dtype, arg, tuple(map(at, u.src))))
  return tuple(rows), bufs, var_vals, nodes

def schedule(outs: list[UOp]) -> tuple[list[ExecItem], dict[UOp, UOp]]:
  """The ExecItems that compute `outs`, and what every UOp they compute into a buffer becomes: the outs, and the other
  realized points (a reduce, a CONTIGUOUS, ...) become a view of their buffer (RESHAPE(BUFFER)), an ASSIGN its target
  BUFFER (a custom kernel and its inputs become nothing: it wrote into them). Cached by the graph's structure: repeating
  a computation on new buffers skips building kernels (only fresh buffers are made; what becomes what is found again by
  position in the graph's toposort, the key's rows). Symbolic sizes are left symbolic in the kernels, their values in
  each ExecItem's var_vals."""
  key, ins, var_vals, nodes = _structure(outs)
  if (hit := _cache.get(key)) is not None:
    templates, new_specs, becomes_refs = hit
    made = [new_buffer(*spec) for spec in new_specs]
    def uop(r: Ref) -> UOp: return ins[r[1]] if r[0] == "in" else made[r[1]]
    items = [ExecItem(ast, [buffers[uop(r)] for r in refs], dict(var_vals)) for ast, refs in templates]
    return items, {nodes[i]: buffer_view(uop(r), nodes[i].shape) for i, r in becomes_refs}
  unbound = graph_rewrite_map(UOp.sink(*outs), _unbind, name="unbind") if var_vals else None
  items, becomes = _schedule_uncached([unbound[o] for o in outs] if unbound else outs)
  for ei in items: ei.var_vals = dict(var_vals)
  if unbound:  # back to the UOps of the graph that was asked for
    original = {v: k for k, v in unbound.items()}
    becomes = {original[u]: b if all_int(b.shape) else buffer_view(view_base(b), original[u].shape) for u, b in becomes.items()}
  refs: dict[int, Ref] = {id(buffers[b]): ("in", k) for k, b in enumerate(ins)}
  new_specs: list[tuple[str, int, Any]] = []
  for ei in items:
    for b in ei.bufs:
      if id(b) not in refs: refs[id(b)] = ("new", len(new_specs)); new_specs.append((b.device, b.size, b.dtype))
  row = {u: i for i, u in enumerate(nodes)}
  becomes_refs = [(row[u], refs.get(id(buffers[view_base(b)]))) for u, b in becomes.items()]
  if all(r is not None for _, r in becomes_refs):  # else (a buffer no kernel uses) don't cache
    if len(_cache) >= CACHE_ENTRIES: del _cache[next(iter(_cache))]
    _cache[key] = ([(ei.ast, [refs[id(b)] for b in ei.bufs]) for ei in items], new_specs, [(i, r) for i, r in becomes_refs if r is not None])
  return items, becomes

def _schedule_uncached(outs: list[UOp]) -> tuple[list[ExecItem], dict[UOp, UOp]]:
  with track.group("schedule", "schedule") as g:
    items, becomes = _build_schedule(outs)
    if g is not None:  # VIZ: the tensor graph and the kernels it became, then each kernel from its tensor graph
      kernels = [ei.ast for ei in items]
      g.name = f"schedule {len(kernels)} kernel{'s' * (len(kernels) != 1)}"
      track.record("schedule", UOp.sink(*outs), UOp.sink(*kernels))
      g.rewrites.insert(0, g.rewrites.pop())
  return items, becomes

def _build_schedule(outs: list[UOp]) -> tuple[list[ExecItem], dict[UOp, UOp]]:
  if SPEC: type_verify(UOp.sink(*outs), tensor_spec)
  points = _realize_points(outs)
  groups = _assign_groups(points)
  bufmap: dict[UOp, UOp] = {}
  items: list[ExecItem] = []
  for p in points:  # toposort order: inputs first
    if p.op is Ops.CUSTOM_KERNEL:  # the user's AST runs on its inputs' buffers, PARAM i = src i: those of the PARAMs it
      # uses (in slot order, the program's arguments; a kernel that reads none of a tensor's buffer doesn't take it, and
      # one that uses no buffer has nothing to do)
      if SPEC: type_verify(p.arg.ast, kernel_spec)
      if used := sorted({u.arg for u in p.arg.ast.toposort() if u.op is Ops.PARAM}):
        items.append(ExecItem(p.arg.ast, [buffers[_buffer_of(p.src[i], bufmap)] for i in used]))
      continue
    if p.op is Ops.ASSIGN:
      bufmap[p] = tb = _target(p)
    else: bufmap[p] = tb = new_buffer(device_of(p), max_elements(p.shape), p.dtype)
    if p.op is Ops.COPY and max_elements(p.shape):  # (a symbolic length: its buffers have room for the largest)
      items.append(ExecItem(p, [buffers[tb], buffers[_buffer_of(p.src[0], bufmap)]]))
      continue
    if prod(p.shape) == 0 or (members := groups.get(p, [p]))[-1] is not p: continue  # nothing to compute / with its group's last
    value = p.src[1] if p.op is Ops.ASSIGN else p
    kb = KernelBuilder({k: v for k, v in bufmap.items() if k not in members}, inline=set(members))
    ast = kb.build([(m.src[1] if m.op is Ops.ASSIGN else m, bufmap[m]) for m in members], kernel_name(value))
    track.record(f"kernel {ast.arg.name}", value, ast)
    if SPEC: type_verify(ast, kernel_spec)
    items.append(ExecItem(ast, [buffers[b] for b in kb.params]))
  # every realized point becomes its buffer (an ASSIGN its target), but a custom kernel's written inputs and a BUFFER
  # copied before an ASSIGN wrote it (the copy is the old value, the buffer holds the new one)
  written = {s for p in points if p.op is Ops.CUSTOM_KERNEL for i, s in enumerate(p.src) if i in stored_params(p.arg.ast)}
  becomes = {p: buffer_view(b, p.shape) for p, b in bufmap.items() if p not in written and p.op is not Ops.BUFFER}
  becomes.update({o: buffer_view(_buffer_of(o, bufmap), o.shape) for o in outs if not is_buffer_view(o)})
  return items, becomes

def _buffer_of(u: UOp, bufmap: dict[UOp, UOp]) -> UOp:
  while u not in bufmap and u.op in (Ops.RESHAPE, Ops.AFTER): u = u.src[0]  # a contiguous view, or a buffer after a custom kernel
  if u in bufmap: return bufmap[u]
  if u.op is Ops.BUFFER: return u
  raise RuntimeError(f"{u.op} has no buffer: it was not realized")
