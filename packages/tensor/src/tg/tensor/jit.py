"""TinyJit: run a function once, capture the kernels its second call runs, then replay them on new inputs.

A replay launches the captured kernels with the new input buffers swapped in for the captured ones: no graph building,
no scheduling, no compiling. Everything else a kernel touches (parameters, optimizer state, intermediate buffers) is the
same buffer every replay, which is what a training step wants. The function must be the same computation every call:
what it does in Python besides building tensors (prints, branching on Python values) runs only while capturing. Reading
tensor data there (.item(), .tolist(), .numpy(), or ops whose size depends on values: masked_select, nonzero, a bool-mask
index) raises JitError, as tinygrad's: the value read would be baked into every replay. Compute it outside the jitted
function and pass it in (a tensor, or a bound variable for a size).

Inputs are the tensors among the arguments, also inside lists, tuples and dicts, and keyword arguments (their order
doesn't matter). An input that is a view is realized into its own buffer before the kernels run, so a replay on another
view is right (tinygrad raises there instead). Plain Python values (numbers, strings, None) among the arguments are baked
into the captured kernels: a replay with another value raises JitInputError rather than return the captured result.
Symbolic sizes: pass a bound variable (`UOp.variable("n", 1, 32).bind(k)`) as an argument and shrink by it inside the
function; a replay launches the captured kernels with the arguments' values of the variables.

As in tinygrad, the outputs must be tensors (or None), a replay returns them in the same buffers every call (read or
copy them before the next call), `prune=True` drops the kernels that don't depend on the inputs from the replays,
and `free_intermediates()` gives back the scratch buffers between replays. Replays reuse every buffer: memory stays flat.
An output passed back in (buf = f(buf, x)) is copied first, as in tinygrad: the kernels would write it while reading it.
Used as a method decorator, each instance gets a TinyJit of its own (its capture holds that instance's tensors).

In-place state keeps eager semantics: a write a call leaves lazy (b += x, b not returned) is realized with its outputs,
so the replays run it too; lazy tensors built outside that read state a call updates run before it writes (pending ones
before the capture, so their kernels stay out of it)."""
from __future__ import annotations
import functools, itertools, time, weakref
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterator, TypeVar
import numpy as np
from tg.uop import UOp, Ops, GroupOp, UPat, PatternMatcher, graph_rewrite, ContextVar, DEBUG, getenv, dedup, exec_uop, all_int
from tg.codegen import profile
from tg.codegen.device import Buffer, Device, Graph
from tg.codegen.pipeline import CompiledRunner
from tg.tensor.tensor import Tensor, shares_buffer
from tg.tensor.graph import buffers, new_buffer
from tg.tensor.schedule import ExecItem, view_base, view_chain
from tg.tensor.realize import Counters, capturing, view_needs, get_runner, run_item, launch, count_launch, report_batch

R = TypeVar("R")
JIT = ContextVar("JIT", 1)  # 0 (JIT=0 or Context(JIT=0)): a TinyJit calls its function plainly every time, as tinygrad's

class JitError(RuntimeError):
  """A function TinyJit can't capture or replay faithfully (tinygrad raises its JitError in the same cases)."""

class JitInputError(JitError, ValueError):
  """The arguments of a call don't match the ones the kernels were captured for."""

_VALUES = (bool, int, float, complex, str, bytes, type(None), np.generic)  # baked into the kernels: compared every replay

def _leaves(args: tuple, kwargs: dict) -> Iterator[tuple[str, Any]]:
  """Every argument that isn't a list, tuple or dict, with its path ("argument 1[0]", "argument 'x'['w']"), in order:
  positional, then keyword arguments and dict entries sorted by name."""
  stack = ([(_arg_name(i), a) for i, a in enumerate(args)] + [(f"argument {k!r}", v) for k, v in sorted(kwargs.items())])[::-1]
  while stack:
    path, x = stack.pop()
    if isinstance(x, (list, tuple)): stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(x))))
    elif isinstance(x, dict): stack.extend((f"{path}[{k!r}]", x[k]) for k in sorted(x, key=repr, reverse=True))
    else: yield path, x

@dataclass
class _Args:
  """What a call passes: input tensors, plain values (baked into the kernels) and bound variables (passed to them)."""
  tensors: list[tuple[str, Tensor]]
  values: list[tuple[str, type, str]]  # path, type, repr (exact for numbers: 0.1 and -0.0 and nan round-trip)
  var_vals: dict[str, int]
  @staticmethod
  def of(args: tuple, kwargs: dict) -> _Args:
    ret = _Args([], [], {})
    if not kwargs and all(type(x) is Tensor and all_int(x.shape) for x in args):  # the common call: f(x, y), each a tensor
      ret.tensors = [(_arg_name(i), x) for i, x in enumerate(args)]
      return ret
    for path, x in _leaves(args, kwargs):
      if isinstance(x, Tensor):
        ret.tensors.append((path, x))
        for d in x.shape:  # an input of symbolic shape passes its variables' values too
          if isinstance(d, UOp): ret.var_vals.update((b.src[0].arg[0], b.src[1].arg) for b in d.toposort() if b.op is Ops.BIND)
      elif isinstance(x, UOp) and x.op is Ops.BIND: ret.var_vals[x.src[0].arg[0]] = x.src[1].arg
      elif isinstance(x, _VALUES): ret.values.append((path, type(x), repr(x)))
    return ret
  def signature(self) -> tuple:
    """What must match the capture: the inputs' shapes (symbolic sizes as their variables, whatever value they are
    bound to), dtypes and devices, the plain values, the bound variables' names."""
    return (tuple((n, _unbound(t.shape), t.dtype, t.device) for n, t in self.tensors), tuple(self.values), tuple(sorted(self.var_vals)))

def _unbound(shape: tuple) -> tuple:
  return shape if all_int(shape) else tuple(d if isinstance(d, int) else d.unbound() for d in shape)

@functools.cache
def _arg_name(i: int) -> str: return f"argument {i}"

def _buffer(t: Tensor) -> Buffer: return buffers[view_base(t.uop)]

def _whole_buffer(t: Tensor) -> bool:
  """Is t a realized buffer (or a reshape of one): nothing to realize, not a view to copy."""
  return (u := t.uop).op is Ops.BUFFER or u.op is Ops.RESHAPE and u.src[0].op is Ops.BUFFER

def _buffers(t: Tensor) -> list[Buffer]:
  """A realized tensor's buffers: one, or a sharded tensor's one per device."""
  return [buffers[view_base(u)] for u in (t.uop.src if t.uop.op is Ops.MULTI else (t.uop,))]

def _rebind(x: Any, var_vals: dict[str, int]) -> Any:
  """x (a UOp, or a movement op's arg: nested tuples of sizes) with its bound variables bound to var_vals' values; x
  itself when none changes."""
  if type(x) is tuple:
    new = tuple(_rebind(y, var_vals) for y in x)
    return x if all(a is b for a, b in zip(new, x)) else new
  if not isinstance(x, UOp): return x
  binds = {b: b.src[0].bind(var_vals[b.src[0].arg[0]]) for b in x.toposort() if b.op is Ops.BIND and b.src[0].arg[0] in var_vals}
  return x.substitute(binds) if binds else x
_rebinder = PatternMatcher([(UPat(GroupOp.Movement, name="x"), lambda ctx, x: None if (a := _rebind(x.arg, ctx)) is x.arg else x.replace(arg=a)),
                            (UPat(Ops.BIND, name="x"), lambda ctx, x: None if (r := _rebind(x, ctx)) is x else r)])

def _rebound(u: UOp, var_vals: dict[str, int]) -> UOp:
  """u (a captured output) with its bound variables, in its graph and in its sizes, bound to this call's values."""
  return graph_rewrite(u, _rebinder, ctx=var_vals, name="rebind")

def _map_outputs(ret: Any, fn: Callable[[Any], Any]) -> Any:
  """fn applied to every output (the leaves of lists, tuples and dicts); a non-tensor output is an error (None is fine)."""
  if isinstance(ret, (list, tuple)): return type(ret)(_map_outputs(r, fn) for r in ret)
  if isinstance(ret, dict): return {k: _map_outputs(v, fn) for k, v in ret.items()}
  if ret is None: return None
  if not isinstance(ret, (Tensor, _Out)):
    raise JitError(f"TinyJit: the function returned a {type(ret).__name__} ({ret!r:.40}); a replay returns only tensors (the rest "
                   f"would be the capture's value): return tensors, or compute the value outside the jitted function")
  return fn(ret)

def _own(t: Tensor) -> Tensor:
  """t, made a copy of the buffer it views if it is a view (realize() leaves a view one): the kernels' inputs and outputs
  are buffers of their own, so a replay on another view is right."""
  return t.replace(t.contiguous()) if shares_buffer(t.uop) else t

def _realized(ret: R) -> R:
  """ret realized, and with it every in-place write the call left pending (b += x whose b the function doesn't return):
  only what runs during the call is captured, so a write left lazy ran once, outside, and never in a replay."""
  outs: list[Tensor] = []
  _map_outputs(ret, outs.append)
  writes = [t for t in Tensor.live.pending() if view_chain(t.uop, GroupOp.Movement, symbolic=True)[1].op is Ops.ASSIGN]
  Tensor.realize_all(*map(_own, outs), *writes)
  return ret

@dataclass(frozen=True)
class _Out:
  """A captured output: a buffer the kernels write (uop), or input number `input` (the input tensor itself if `same`,
  else a reshape of it to uop's shape)."""
  uop: UOp
  input: int | None
  same: bool

@dataclass
class _Step:
  """One captured ExecItem: what to launch, and which of its buffers are inputs (slot in bufs -> input number)."""
  item: ExecItem
  runner: CompiledRunner | None  # None for a copy
  inputs: list[tuple[int, int]]
  def reads(self) -> list[int]: return [1] if self.runner is None else self.runner.p.ins
  def writes(self) -> list[int]: return [0] if self.runner is None else self.runner.p.outs

def _prune(steps: list[_Step]) -> list[_Step]:
  """The steps a replay must run: those that read an input or a buffer that changes between replays (one a kept step
  writes, or state updated in place such as an RNG counter), and those that write such a buffer (order matters there)."""
  bufs = [st.item.bufs for st in steps]
  first_read: dict[int, int] = {}
  for i, st in enumerate(steps):
    for j in st.reads(): first_read.setdefault(id(bufs[i][j]), i)
  changing = {id(bufs[i][j]) for i, st in enumerate(steps) for j in st.writes() if first_read.get(id(bufs[i][j]), len(steps)) <= i}
  keep = [bool(st.inputs) for st in steps]
  while True:
    before = len(changing), sum(keep)
    for i, st in enumerate(steps):
      if not keep[i] and any(id(bufs[i][j]) in changing for j in st.reads() + st.writes()): keep[i] = True
      if keep[i]: changing.update(id(bufs[i][j]) for j in st.writes())
    if (len(changing), sum(keep)) == before: return [st for st, k in zip(steps, keep) if k]

@dataclass
class _Batch:
  """Consecutive kernels of one device launched by one call (the device's graph); inputs: (kernel, slot, input number)."""
  graph: Graph
  steps: list[_Step]
  inputs: list[tuple[int, int, int]]
  var_vals: dict[str, int]

def _device(st: _Step) -> str | None: return None if st.runner is None else st.item.bufs[0].device

def _by_device(steps: list[_Step]) -> list[_Step]:
  """The steps reordered so that each device's kernels come in as few runs as their dependencies allow (a multi-device
  step interleaves its devices' kernels, and every switch would end a batch): a step waits for the earlier ones that
  write a buffer it touches or read one it writes. Greedy: the ready kernels of the device last run first (earliest
  captured first), else the ready copies, else the device of the earliest ready kernel."""
  after: list[set[int]] = [set() for _ in steps]
  writer: dict[int, int] = {}
  readers: dict[int, list[int]] = {}
  for i, st in enumerate(steps):
    bufs = st.item.bufs
    for j in st.reads():
      if (w := writer.get(b := id(bufs[j].base))) is not None: after[i].add(w)
      readers.setdefault(b, []).append(i)
    for j in st.writes():
      b = id(bufs[j].base)
      after[i].update(readers.pop(b, []))
      if (w := writer.get(b)) is not None: after[i].add(w)
      writer[b] = i
  for i in range(len(steps)): after[i].discard(i)
  users: list[list[int]] = [[] for _ in steps]
  for i, deps in enumerate(after):
    for d in deps: users[d].append(i)
  waiting = [len(deps) for deps in after]
  ready = {i for i, n in enumerate(waiting) if not n}
  out: list[_Step] = []
  dev = _device(steps[0]) if steps else None
  while ready:
    pick = [i for i in ready if _device(steps[i]) == dev] or [i for i in ready if steps[i].runner is None] or list(ready)
    i = min(pick)
    ready.remove(i)
    out.append(steps[i])
    if steps[i].runner is not None: dev = _device(steps[i])
    for u in users[i]:
      waiting[u] -= 1
      if not waiting[u]: ready.add(u)
  return out

def _batched(steps: list[_Step]) -> list[_Step | _Batch]:
  """Each device's kernels gathered into runs (_by_device), and each run becomes a batch where the device can launch its
  kernels together. Measured on the CPU: a launch from Python costs ~10-20 us, inside a batch ~2 us (a run of one kernel
  too: its arguments are ready, 7 -> 3 us). Kernels alone (no copy) on several devices that can run them all together
  (Compiled.graph_many: CPU:n with a core each) are one batch, in the order captured."""
  devs = {_device(st) for st in steps}
  if len(devs) > 1 and None not in devs:
    if (graph := Device[_device(steps[0])].graph_many([(st.runner, st.item.bufs) for st in steps])) is not None: return [_batch(graph, steps)]
  out: list[_Step | _Batch] = []
  for dev, run in itertools.groupby(_by_device(steps), _device):
    group = list(run)
    graph = Device[dev].graph([(st.runner, st.item.bufs) for st in group]) if dev is not None else None
    if graph is None: out.extend(group)
    else: out.append(_batch(graph, group))
  return out

def _written(steps: list[_Step]) -> set[int]:
  """The bases (by id) of the buffers the steps write, but at an input's slot: an output, state updated in place, scratch."""
  out: set[int] = set()
  for st in steps:
    ins = {j for j, _ in st.inputs}
    out.update(id(st.item.bufs[j].base) for j in st.writes() if j not in ins)
  return out

def _copies(new: list[Buffer], written: set[int]) -> dict[int, Buffer]:
  """A copy of each input buffer the kernels write (by the original's id): an output passed back in (buf = f(buf, x)).
  Replayed on it, a kernel would overwrite it before a later one read it, or one kernel read what it had just written;
  the capture's kernels take their inputs apart from what they write. (tinygrad copies such an input too.)"""
  out: dict[int, Buffer] = {}
  for b in new:
    if id(b.base) in written:
      out[id(b)] = Buffer(b.device, b.size, b.dtype).copy_from(b)
      Counters.copies += 1
  return out

def _batch(graph: Graph, steps: list[_Step]) -> _Batch:
  return _Batch(graph, steps, [(k, j, i) for k, st in enumerate(steps) for j, i in st.inputs],
                {k: v for st in steps for k, v in st.item.var_vals.items()})

def _weak_method(fxn: Callable[..., R], ref: weakref.ref) -> Callable[..., R]:
  """fxn bound to the instance ref refers to, without keeping it alive (its TinyJit lives only as long as it does)."""
  @functools.wraps(fxn)
  def method(*args: Any, **kwargs: Any) -> R:
    if (obj := ref()) is None: raise JitError(f"TinyJit: the instance {fxn.__name__} was taken from is gone: nothing to call it on")
    return fxn(obj, *args, **kwargs)
  return method

class TinyJit(Generic[R]):
  """Capture on the second call, replay from the third (see the module docstring); `jit_cache` lists the captured
  kernels and copies (ExecItems) a replay runs, `reset()` forgets them. `batch` (default: JIT_BATCH, on) launches runs
  of kernels with one call where the device can (`launches`: what a replay launches, batches and single steps, made on
  the first replay)."""
  def __init__(self, fxn: Callable[..., R], prune: bool = False, batch: bool | None = None):
    self.fxn, self.prune, self.batch = fxn, prune, bool(getenv("JIT_BATCH", 1)) if batch is None else batch
    self.methods: dict[int, TinyJit[R]] = {}  # as a method decorator: each instance's TinyJit, by id (see __get__)
    self.reset()
  def reset(self) -> None:
    """Forget the capture: the next call runs plainly, the one after captures again."""
    self.calls, self.steps, self.launches, self.signature, self.outputs = 0, list[_Step](), list[_Step | _Batch](), (), None
    self.written: set[int] = set()  # the buffers the kernels write, but inputs (made with launches): an input among them is copied
    self.view_needs: list[UOp] = []  # sizes (>= 0) the captured views need of the variables: a replay's values must fit them
    self.values_fit: set[tuple] = set()  # the values of the variables a replay has checked
  @property
  def jit_cache(self) -> list[ExecItem]: return [st.item for st in self.steps]
  @property
  def captured(self) -> TinyJit[R] | None:
    """tinygrad's handle on the capture (`jit.captured.jit_cache`, `jit.captured.free_intermediates()`): here the TinyJit
    itself, which holds them, once it has captured; None before."""
    return self if self.calls >= 2 else None
  def __get__(self, obj: Any, objtype: Any = None) -> TinyJit[R]:
    """A jitted method: this instance's own TinyJit, made on first use (one capture for all instances replayed the first
    one's kernels, on its tensors). It holds the instance weakly and is dropped with it; by id: no hash needed."""
    if obj is None: return self
    if (jit := self.methods.get(key := id(obj))) is None:
      try: ref = weakref.ref(obj, lambda _: self.methods.pop(key, None))
      except TypeError:
        raise JitError(f"TinyJit on a method of {type(obj).__name__}: its instances can't be weakly referenced, and each "
                       "needs a TinyJit of its own kept beside it: add '__weakref__' to its __slots__") from None
      jit = self.methods[key] = TinyJit(_weak_method(self.fxn, ref), self.prune, self.batch)
    return jit
  def __reduce__(self) -> tuple:
    """A captured TinyJit pickles as its capture, as tinygrad's: the compiled kernels, every buffer they use with its
    bytes (weights, optimizer state) and what a call must pass. Unpickled it replays, in any process; without the
    function (a local one doesn't pickle), so it can't capture again. Before its capture only the function pickles."""
    if self.calls < 2: return (TinyJit, (self.fxn, self.prune, self.batch))
    outs: list[_Out] = []
    _map_outputs(self.outputs, outs.append)
    held = {u: buffers.get(u) for o in outs for u in o.uop.toposort() if u.op is Ops.BUFFER}  # (None: an input since freed)
    return (_unpickle_jit, (self.prune, self.batch, self.steps, self.signature, self.outputs, held, self.view_needs))

  def __call__(self, *args: Any, **kwargs: Any) -> R:
    if self.fxn is None and self.calls < 2: raise JitError("TinyJit: unpickled without its function and reset: there is nothing to capture")
    if capturing: raise JitError("having TinyJit inside another TinyJit is not supported: its kernels would not be captured; "
                                 "call the inner function's plain version (.fxn) inside the outer one")
    if not JIT and self.fxn is not None: return self.fxn(*args, **kwargs)
    a = _Args.of(args, kwargs)
    Tensor.realize_all(*[_own(t) for _, t in a.tensors if not _whole_buffer(t)])  # inputs are buffers from here on
    named = [(name, b) for name, t in a.tensors for b in _buffers(t)]
    bufs = [b for _, b in named]
    seen: dict[int, str] = {}
    for name, b in named:
      if (other := seen.setdefault(id(b.base), name)) != name:
        raise JitError(f"TinyJit: {other} and {name} are the same buffer (duplicate inputs): a replay couldn't tell them apart; "
                       f"pass a .clone() of one")
    if self.calls == 0: ret = _realized(self.fxn(*args, **kwargs))
    elif self.calls == 1: ret = self._capture(a, bufs, args, kwargs)
    else: ret = self._replay(a, bufs, seen)
    self.calls += 1
    return ret

  def _capture(self, a: _Args, bufs: list[Buffer], args: tuple, kwargs: dict) -> R:
    # lazy tensors from before the call run now, not in the capture: one that reads state the call updates in place would
    # run first as an old value's reader, and its kernel, captured, would run again in every replay
    Tensor.realize_all(*Tensor.live.pending())
    items: list[ExecItem] = []
    capturing.append(items)
    view_needs.append(needs := [])
    try: ret = _realized(self.fxn(*args, **kwargs))
    finally:
      capturing.pop()
      view_needs.pop()
    self.view_needs = dedup(needs)
    if not items: raise JitError(f"TinyJit: {getattr(self.fxn, '__name__', 'the function')} launched no kernel while being captured, "
                                 "so there is nothing to replay: return (or realize) what it computes")
    slot = {id(b): i for i, b in enumerate(bufs)}
    steps = [_Step(ei, None if ei.ast.op is Ops.COPY else get_runner(ei.ast, ei.bufs[0].device),
                   [(j, slot[id(b)]) for j, b in enumerate(ei.bufs) if id(b) in slot]) for ei in items]
    self.steps = _prune(steps) if self.prune else steps
    self.signature = a.signature()
    by_buffer = {id(_buffer(t)): i for i, (_, t) in enumerate(a.tensors) if t.uop.op is not Ops.MULTI}
    def out(t: Tensor) -> _Out:
      i = by_buffer.get(id(_buffer(t))) if t.uop.op is not Ops.MULTI else None
      return _Out(t.uop, i, i is not None and t is a.tensors[i][1])
    self.outputs = _map_outputs(ret, out)
    return ret

  def free_intermediates(self) -> int:
    """Give back the memory of the buffers only the captured kernels use and write before they read them (no tensor
    refers to them, their contents don't outlive a replay); the next replay allocates them again. Returns the bytes freed."""
    live = {id(b) for b in buffers.values()}
    written: set[int] = set()
    keep = {id(b.base) for st in self.steps for b in st.item.bufs if b.base is not b}  # views and what they view
    keep |= {id(st.item.bufs[j]) for st in self.steps for j, _ in st.inputs}
    frees: dict[int, Buffer] = {}
    for st in self.steps:
      bufs = st.item.bufs
      keep.update(id(bufs[j]) for j in st.reads() if id(bufs[j]) not in written)  # read before written: state, or constant data
      for j in st.writes():
        written.add(id(bufs[j]))
        frees[id(bufs[j])] = bufs[j]
    freed = [b for i, b in frees.items() if i not in keep and i not in live and b.base is b and b.is_allocated]
    for b in freed: b.deallocate()
    if freed: self.launches = []  # a batch holds the old addresses: rebuilt on the next replay
    return sum(b.nbytes for b in freed)

  def _replay(self, a: _Args, new: list[Buffer], bases: dict[int, str]) -> R:
    if (sig := a.signature()) != self.signature: raise self._mismatch(sig)
    if self.view_needs: self._check_views(a.var_vals)
    if not self.launches: self.launches, self.written = _batched(self.steps) if self.batch else list(self.steps), _written(self.steps)
    copies = {} if self.written.isdisjoint(bases) else _copies(new, self.written)  # (bases: the inputs' buffers' bases, by id)
    if copies: new = [copies.get(id(b), b) for b in new]
    self._realize_old_value_readers()
    for st in self.launches:
      if isinstance(st, _Batch):
        for k, j, i in st.inputs: st.graph.update(k, j, new[i])
        start = time.perf_counter_ns()
        st.graph({**st.var_vals, **a.var_vals} if a.var_vals else st.var_vals)
        if profile.profiling():
          profile.add("batch", ", ".join(s.runner.p.name for s in st.steps), st.steps[0].item.bufs[0].device, start, None)
        for s in st.steps: count_launch(s.runner.p)
        if DEBUG.value >= 2:
          for d in {s.item.bufs[0].device for s in st.steps}: Device[d].synchronize()
          report_batch([s.runner.p for s in st.steps], (time.perf_counter_ns() - start) / 1e9)
        continue
      bufs = st.item.bufs
      if st.inputs:
        bufs = list(bufs)
        for j, i in st.inputs: bufs[j] = new[i]
      if st.runner is None: run_item(ExecItem(st.item.ast, bufs))
      else: launch(st.runner, bufs, {**st.item.var_vals, **a.var_vals} if a.var_vals else st.item.var_vals)
    def out(o: _Out) -> Tensor:
      u = _rebound(o.uop, a.var_vals) if a.var_vals else o.uop  # (an output of symbolic shape: this call's values)
      if o.input is None: return Tensor(u)
      t = a.tensors[o.input][1]
      if copies and (c := copies.get(id(_buffer(t)))) is not None:  # an input copied: its value when called is the copy's
        return Tensor(new_buffer(c.device, c.size, c.dtype, c).reshape(t.shape if o.same else u.shape))
      return t if o.same else Tensor(t.uop.reshape(u.shape))
    return _map_outputs(self.outputs, out)

  def _realize_old_value_readers(self) -> None:
    """Realize the live lazy tensors that read a buffer the replay writes (state it updates in place): the replay writes
    buffers directly, past the lazy graphs, and a loss taken as a * 3 - b between steps read the next step's a."""
    if not (pending := Tensor.live.pending()): return
    written = {id(st.item.bufs[j].base) for st in self.steps for j in st.writes()}
    def reads_written(t: Tensor) -> bool:
      return any(u.op is Ops.BUFFER and id(getattr(buffers.get(u), "base", None)) in written for u in t.uop.toposort())
    Tensor.realize_all(*[t for t in pending if reads_written(t)])

  def _check_views(self, var_vals: dict[str, int]) -> None:
    """Raise JitError if a view the capture took of a bound variable (x[:, i:i+2]) doesn't fit its tensor at this call's
    values: the captured kernels would read or write the wrong elements."""
    if (key := tuple(sorted(var_vals.items()))) in self.values_fit: return
    for need in self.view_needs:
      leaves = {u: var_vals.get(u.arg[0]) for u in need.toposort() if u.op is Ops.DEFINE_VAR}
      if None not in leaves.values() and exec_uop(need, leaves) < 0:
        at = ", ".join(f"{k}={v}" for k, v in key)
        raise JitError(f"TinyJit: at {at} a view the capture took is out of bounds of its tensor ({need.render()} is "
                       f"{exec_uop(need, leaves)}, under 0): the captured kernels would read or write other elements; call it with "
                       "values the views fit")
    self.values_fit.add(key)

  def _mismatch(self, sig: tuple) -> JitInputError:
    """The first difference between a call's signature and the captured one, said plainly."""
    (tensors, values, variables), (cap_t, cap_v, cap_vars) = sig, self.signature
    fix = "call .reset() to capture again, or use another TinyJit for these arguments"
    if [n for n, *_ in tensors] != [n for n, *_ in cap_t]:
      return JitInputError(f"TinyJit: the tensor inputs are {[n for n, *_ in tensors]}, but the kernels were captured for "
                           f"{[n for n, *_ in cap_t]}; {fix}")
    for (name, *now), (_, *then) in zip(tensors, cap_t):
      if now != then: return JitInputError(f"TinyJit: {name} is {' '.join(map(str, now))}, but the kernels were captured for "
                                           f"{' '.join(map(str, then))}; {fix}")
    for now, then in itertools.zip_longest(values, cap_v, fillvalue=("", None, "not given")):
      if now != then:
        return JitInputError(f"TinyJit: {now[0] or then[0]} is {now[2]}, but it was {then[2]} when the kernels were captured: plain "
                             f"Python values are baked into them; pass a Tensor (or a bound variable, UOp.variable(...).bind(v)) "
                             f"for a value that changes, or {fix}")
    return JitInputError(f"TinyJit: bound variables {list(variables)}, but the kernels were captured with {list(cap_vars)}; {fix}")

def _unpickle_jit(prune: bool, batch: bool, steps: list[_Step], signature: tuple, outputs: Any, held: dict[UOp, Buffer | None],
                  view_needs: list[UOp]) -> TinyJit:
  """TinyJit.__reduce__'s inverse: a TinyJit that replays the capture. The outputs' BUFFER UOps are made anew on the
  unpickled buffers (their numbers may name other buffers in this process)."""
  jit: TinyJit = TinyJit(None, prune, batch)  # type: ignore[arg-type]
  fresh = {u: new_buffer(u.src[0].arg, u.arg, u.dtype, b) for u, b in held.items()}
  jit.outputs = _map_outputs(outputs, lambda o: _Out(o.uop.substitute(fresh), o.input, o.same))
  jit.steps, jit.signature, jit.view_needs, jit.calls = steps, signature, view_needs, 2
  return jit
