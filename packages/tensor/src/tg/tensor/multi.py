"""Tensors in pieces on several devices: tinygrad's Tensor.shard, and the allreduce that joins the pieces.

A sharded tensor's graph holds MULTI (one UOp per device; arg the axis it is split along, None when every device holds
all of it), and ops build the graph as they do for one device: autograd and TinyJit see one graph. Before scheduling,
`unshard` rewrites the graph into one graph per device: elementwise work and most movement run per shard (a shrink or
pad of the split axis shrinks or pads the shards it touches, so pieces may be uneven or empty), a reduce over the split
axis reduces each shard and combines the results with an allreduce, a copy to one device gathers the pieces there, and
whatever can't stay split (a flip of the split axis, a reshape that cuts across shards) is gathered on every device
first. Shards are split as tinygrad splits them: ceil(n / devices) each, the last ones smaller (or empty)."""
from __future__ import annotations
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence
from tg.uop import UOp, Ops, GroupOp, ContextVar, KernelInfo, dtypes, prod, cdiv
from tg.codegen.device import Buffer, Device, MallocAllocator
from tg.tensor import graph
from tg.tensor.graph import device_of, device_uop, canonical, new_buffer
from tg.tensor.errors import TensorValueError
from tg.tensor.schedule import is_buffer_view, names_buffer, schedule
from tg.tensor.realize import run_schedule, capturing

if TYPE_CHECKING:
  from tg.tensor.tensor import Tensor

# allreduce: 0 naive always, 2 ring always, 3 one kernel (devices of one host memory), 1 picks (allreduce_kind)
RING = ContextVar("RING", 1)
RING_MIN_BYTES = ContextVar("RING_MIN_BYTES", 256 << 10)
# the one-kernel allreduce writes its results past the caches (nontemporal stores) from this many bytes of results (all
# devices') up: values and results then overflow a 32 MB L3 anyway, and a plain store first reads each line it overwrites
# (256 MB on 2 CPU devices, huge pages, busy machine, best of 8: plain stores 1.3-1.4 GB/s, nontemporal 1.8-2.4 GB/s,
# 35-38% -> 44-70% of memcpy). Smaller results stay cached for the op that reads them next.
ALLREDUCE_NT_MIN_BYTES = ContextVar("ALLREDUCE_NT_MIN_BYTES", 16 << 20)

class MultiDeviceError(TensorValueError):
  """Tensors on different sets of devices (or a sharded one and a single-device one) meet in one op."""

def split_bounds(n: int, parts: int) -> list[tuple[int, int]]:
  """tinygrad's split of n along `parts` devices: ceil(n / parts) each, the last ones smaller (or empty)."""
  sz = cdiv(n, parts)
  return [(min(i * sz, n), min((i + 1) * sz, n)) for i in range(parts)]

def _bounds(sizes: Sequence[int]) -> tuple[tuple[int, int], ...]:
  out, start = [], 0
  for s in sizes:
    out.append((start, start + s))
    start += s
  return tuple(out)

@dataclass(frozen=True)
class Shards:
  """One logical tensor as per-device UOps: split along `axis` (the pieces' sizes there are the bounds), or not (None)."""
  uops: tuple[UOp, ...]
  axis: int | None
  @functools.cached_property
  def devices(self) -> tuple[str, ...]: return tuple(device_of(u) for u in self.uops)
  @property
  def bounds(self) -> tuple[tuple[int, int], ...] | None:
    return None if self.axis is None else _bounds([u.shape[self.axis] for u in self.uops])
  def map(self, fn: Any, axis: int | None = -1) -> Shards:
    return Shards(tuple(fn(i, u) for i, u in enumerate(self.uops)), self.axis if axis == -1 else axis)

def copy_to(u: UOp, device: str) -> UOp:
  return u if device_of(u) == device else UOp(Ops.COPY, u.dtype, (u, device_uop(device)))

def _cat(pieces: list[UOp], axis: int, bounds: Sequence[tuple[int, int]]) -> UOp:
  """The pieces (on one device) side by side along axis, as Tensor.cat builds it: a sum of zero-padded pieces."""
  total = bounds[-1][1]
  out = None
  for p, (lo, hi) in zip(pieces, bounds):
    if hi == lo: continue
    padded = p.pad(tuple((lo, total - hi) if i == axis else (0, 0) for i in range(len(p.shape))))
    out = padded if out is None else out + padded
  return out if out is not None else pieces[0]

def gather(x: Shards, device: str) -> UOp:
  """All of x on one device."""
  if x.axis is None: return x.uops[x.devices.index(device)] if device in x.devices else copy_to(x.uops[0], device)
  bounds = x.bounds
  assert bounds is not None
  return _cat([copy_to(u, device) if hi > lo else u for u, (lo, hi) in zip(x.uops, bounds)], x.axis, bounds)

def allgather(x: Shards) -> Shards:
  """All of x on every one of its devices."""
  return x if x.axis is None else Shards(tuple(gather(x, d) for d in x.devices), None)

def _shrink_axis(u: UOp, axis: int, lo: int, hi: int) -> UOp:
  return u.shrink(tuple((lo, hi) if i == axis else None for i in range(len(u.shape))))

def relayout(x: Shards, axis: int | None, bounds: Sequence[tuple[int, int]] | None) -> Shards:
  """x split along axis at bounds (None: whole on every device). A whole copy is cut locally; other splits gather first."""
  if x.axis == axis and (axis is None or x.bounds == tuple(bounds or ())): return x
  full = allgather(x)
  if axis is None or bounds is None: return full
  return full.map(lambda i, u: _shrink_axis(u, axis, *bounds[i]), axis)

def one_memory(devices: Sequence[str]) -> bool:
  """Devices of one kind whose buffers are host memory their kernels address by pointer (CPU:0, CPU:1, ...): a kernel of
  one of them can read and write the others' buffers in place."""
  return len({d.partition(":")[0] for d in devices}) == 1 and all(isinstance(Device[d].allocator, MallocAllocator) for d in devices)

def allreduce_kind(devices: Sequence[str], nbytes: int) -> str:
  """RING's choice: "kernel" for devices of one host memory (one_memory), else "ring" over three devices or more from
  RING_MIN_BYTES up, else "naive"."""
  if RING.value != 1:
    if (kind := {0: "naive", 2: "ring", 3: "kernel"}.get(RING.value)) is None:
      raise TensorValueError(f"RING={RING.value}: 0 (naive), 1 (chosen by size and devices), 2 (ring) or 3 (one kernel)")
    return kind
  if one_memory(devices): return "kernel"
  return "ring" if len(devices) > 2 and nbytes >= RING_MIN_BYTES.value else "naive"

def _one_kernel(vals: Sequence[UOp], op: Ops) -> list[UOp]:
  """One kernel reads every device's value once and writes the result into a fresh buffer on every device: the least
  memory traffic an allreduce can have (each value read once, each result written once, past the caches when big:
  ALLREDUCE_NT_MIN_BYTES). For devices of one memory only:
  elsewhere a kernel can't reach the other devices' buffers. The values are combined in device order, as the others do."""
  from tg.tensor.custom import CustomKernel  # (custom imports this module)
  if not one_memory(devs := [device_of(v) for v in vals]):
    raise MultiDeviceError(f"RING=3 (one allreduce kernel) needs devices of one host memory, not {devs}: use RING=0 or 2")
  n, numel, dt = len(vals), prod(vals[0].shape), vals[0].dtype
  outs = [new_buffer(d, numel, dt) for d in devs]
  ins = [v if names_buffer(v) else UOp(Ops.CONTIGUOUS, dt, (v,)) for v in vals]
  i, params = UOp.range(numel, 0), [UOp.param(k, dt, numel) for k in range(2 * n)]
  acc = functools.reduce(lambda a, p: a.alu(op, p[i]), params[n + 1:], params[n][i])
  nt = n * numel * dt.itemsize >= ALLREDUCE_NT_MIN_BYTES.value
  ast = UOp.group(*[p[i].store(acc, nontemporal=nt) for p in params[:n]]).end(i).sink(arg=KernelInfo(name=f"allreduce_{n}_{numel}"))
  kernel = UOp(Ops.CUSTOM_KERNEL, dtypes.void, (*outs, *ins), CustomKernel(ast))
  return [UOp(Ops.AFTER, dt, (o, kernel)).reshape(vals[0].shape) for o in outs]

def allreduce(vals: Sequence[UOp], op: Ops) -> list[UOp]:
  """Each device's value (one UOp per device, one shape) -> op of all of them, on every device, the same bits everywhere.
  Devices of one host memory (CPU:n) do it in one kernel (_one_kernel). Others: naive (each device fetches every other
  value and combines them in device order) for small tensors; a ring for big ones (RING, RING_MIN_BYTES): the flattened
  values are cut in one chunk per device, chunk c is combined along the ring starting at device c, then passed around
  the ring again so every device has it: each device sends and receives 2(n-1)/n of the tensor instead of (n-1) times
  all of it, and combines 1/n of it. Over two devices both move the same bytes and the naive one launches fewer kernels
  (bench/multi.py), so by default the ring is for three devices and more."""
  devs = [device_of(v) for v in vals]
  n, shape = len(vals), vals[0].shape
  numel = prod(shape)
  kind = allreduce_kind(devs, numel * vals[0].dtype.itemsize)
  if n > 1 and numel and kind == "kernel": return _one_kernel(vals, op)
  if n == 1 or kind != "ring" or numel < n:
    outs = []
    for d in devs:
      acc = copy_to(vals[0], d)
      for v in vals[1:]: acc = acc.alu(op, copy_to(v, d))
      outs.append(acc)
    return outs
  flat = [v.reshape((numel,)) for v in vals]
  chunks = split_bounds(numel, n)
  done: list[dict[str, UOp]] = []
  for c, (lo, hi) in enumerate(chunks):
    acc = _shrink_axis(flat[c], 0, lo, hi)
    for step in range(1, n):
      j = (c + step) % n
      acc = copy_to(acc, devs[j]).alu(op, _shrink_axis(flat[j], 0, lo, hi))
    have, owner = {devs[(c - 1) % n]: acc}, (c - 1) % n
    for step in range(1, n):
      nxt = (owner + step) % n
      have[devs[nxt]] = copy_to(have[devs[(nxt - 1) % n]], devs[nxt])
    done.append(have)
  return [_cat([done[c][d] for c in range(n)], 0, chunks).reshape(shape) for d in devs]

# ***** rewriting a graph with MULTI into per-device graphs *****

def _reshape_layout(old: tuple[int, ...], axis: int, sizes: list[int], new: tuple[int, ...]) -> tuple[int, list[int]] | None:
  """The axis of `new` that a split of old's `axis` into `sizes` becomes, with the pieces' sizes there, when each piece
  stays one block of whole rows after the reshape; None otherwise."""
  before, after = prod(old[:axis]), prod(old[axis + 1:])
  for k in range(len(new)):
    if prod(new[:k]) != before or new[k] == 1 and old[axis] != 1: continue
    inner = prod(new[k + 1:])
    if inner and all(s * after % inner == 0 for s in sizes) and new[k] * inner == old[axis] * after:
      return k, [s * after // inner for s in sizes]
  return None

def _movement(u: UOp, x: Shards) -> Shards:
  op, arg, a = u.op, u.arg, x.axis
  same = lambda i, s: u.replace(src=(s,))  # noqa: E731
  if a is None: return x.map(same)
  sizes = [s.shape[a] for s in x.uops]
  bounds = _bounds(sizes)
  def at(v: Any) -> tuple: return tuple(v if j == a else y for j, y in enumerate(arg))
  if op is Ops.PERMUTE: return x.map(same, arg.index(a))
  if op is Ops.RESHAPE and (lay := _reshape_layout(u.src[0].shape, a, sizes, arg)) is not None:
    k, new_sizes = lay
    return x.map(lambda i, s: s.reshape(tuple(new_sizes[i] if j == k else y for j, y in enumerate(arg))), k)
  if op is Ops.EXPAND and arg[a] == u.src[0].shape[a]: return x.map(lambda i, s: s.expand(at(sizes[i])))
  if op is Ops.SHRINK:  # each piece keeps its part of [lo, hi)
    def part(i: int) -> tuple[int, int]:
      b0, b1 = bounds[i]
      lo = min(max(arg[a][0], b0), b1)
      return lo - b0, max(min(arg[a][1], b1), lo) - b0
    return x.map(lambda i, s: s.shrink(at(part(i))))
  if op is Ops.PAD:  # the padding before goes to the first piece, the padding after to the last
    return x.map(lambda i, s: s.pad(at((arg[a][0] if i == 0 else 0, arg[a][1] if i == len(sizes) - 1 else 0))))
  if op is Ops.FLIP and not arg[a]: return x.map(same)
  return _movement(u, allgather(x))  # a flip of the split axis, a reshape across pieces, an expand of it: whole everywhere

def _reduce(u: UOp, x: Shards) -> Shards:
  red_op, axes = u.arg
  # a piece whose reduced axes are all 1 long already is its reduction (no kernel copies it before the allreduce's copies)
  part = x.map(lambda i, s: u.replace(src=(s,)) if any(s.shape[k] != 1 for k in axes) else s)
  if x.axis not in axes: return part
  return Shards(tuple(allreduce(part.uops, red_op)), None)

def _assign(u: UOp, target: Shards, value: Shards) -> Shards:
  value = relayout(value, target.axis, target.bounds)
  def one(i: int, t: UOp) -> UOp:
    base, v = t if t.op is Ops.BUFFER else t.src[0], value.uops[i]
    return UOp(Ops.ASSIGN, u.dtype, (base, v.reshape(base.shape) if v.shape != base.shape else v)).reshape(t.shape)
  return target.map(one)

def _copy(u: UOp, x: UOp | Shards, dest: UOp | Shards) -> UOp | Shards:
  if isinstance(dest, Shards):  # to several devices: every one gets all of x
    if isinstance(x, Shards):
      if x.devices == dest.devices: return x
      x = gather(x, x.devices[0])
    return Shards(tuple(copy_to(x, d) for d in dest.devices), None)
  assert isinstance(x, Shards)
  return gather(x, dest.arg)

def _elementwise(u: UOp, src: list[UOp | Shards]) -> Shards:
  """Per shard, every sharded source brought to the first split source's layout (a whole copy is cut locally)."""
  multi = [s for s in src if isinstance(s, Shards)]
  if any(m.devices != multi[0].devices for m in multi):
    raise MultiDeviceError(f"{u.op} of tensors on different devices: {' and '.join(sorted({str(m.devices) for m in multi}))}; "
                           f"shard them on the same devices")
  lead = next((m for m in multi if m.axis is not None), multi[0])
  srcs = [relayout(s, lead.axis, lead.bounds) if isinstance(s, Shards) else s for s in src]
  return lead.map(lambda i, _: u.replace(src=tuple(s.uops[i] if isinstance(s, Shards) else s for s in srcs)))

def unshard(outs: list[UOp]) -> list[UOp | Shards]:
  """The per-device graphs of these graphs (a Shards for each sharded one). Iterative, bottom-up, one memo for all."""
  memo: dict[UOp, UOp | Shards] = {}
  for u in UOp.sink(*outs).toposort():
    if u.op is Ops.SINK: continue
    src = [memo[s] for s in u.src]
    if u.op is Ops.DEVICE and isinstance(u.arg, tuple): memo[u] = Shards(tuple(device_uop(d) for d in u.arg), None)
    elif u.op is Ops.MULTI: memo[u] = Shards(tuple(src), u.arg)  # type: ignore[arg-type]
    elif not any(isinstance(s, Shards) for s in src): memo[u] = u if all(a is b for a, b in zip(src, u.src)) else u.replace(src=src)
    elif u.op is Ops.CALL: memo[u] = src[0]  # its value; the other sources are there for autograd, done by now
    elif u.op is Ops.COPY: memo[u] = _copy(u, src[0], src[1])
    elif u.op is Ops.ASSIGN: memo[u] = _assign(u, *src)  # type: ignore[arg-type]
    elif u.op is Ops.REDUCE_AXIS: memo[u] = _reduce(u, src[0])  # type: ignore[arg-type]
    elif u.op in GroupOp.Movement: memo[u] = _movement(u, src[0])  # type: ignore[arg-type]
    else: memo[u] = _elementwise(u, src)
  return [memo[o] for o in outs]

def realized_multi(u: UOp) -> bool:
  """A sharded tensor whose pieces are all buffers already."""
  return u.op is Ops.MULTI and all(is_buffer_view(s) for s in u.src)

def has_multi(outs: list[UOp]) -> bool:
  return graph.sharded_seen and any(u.op is Ops.MULTI or u.op is Ops.DEVICE and isinstance(u.arg, tuple) for o in outs for u in o.toposort())

def schedule_multi(outs: list[UOp], schedule: Any) -> tuple[list, dict[UOp, UOp]]:
  """schedule() of the per-device graphs; what each logical out becomes (a MULTI of its shards' buffers when sharded)."""
  per = unshard(outs)
  items, becomes = schedule(list(dict.fromkeys(v for p in per for v in (p.uops if isinstance(p, Shards) else (p,)))))
  def done(v: UOp) -> UOp: return becomes.get(v, v)
  for o, p in zip(outs, per):
    becomes[o] = UOp(Ops.MULTI, o.dtype, tuple(done(v) for v in p.uops), p.axis) if isinstance(p, Shards) else done(p)
  return items, becomes

# ***** the Tensor methods *****

class MultiMixin:
  @property
  def is_sharded(self: Tensor) -> bool: return isinstance(self.device, tuple)
  @property
  def shard_axis(self: Tensor) -> int | None:
    """The axis a sharded tensor is split along (None: a whole copy on every device); realizes it."""
    if not self.is_sharded: raise TensorValueError(f"shard_axis of a tensor on {self.device}: it isn't sharded")
    if self.uop.op is not Ops.MULTI: self.realize()
    return self.uop.arg
  def shard(self: Tensor, devices: Sequence[str], axis: int | None = None) -> Tensor:
    """This tensor in pieces on `devices`, split along `axis` (None: a whole copy on each). tinygrad's split: ceil(n/devices)
    per device, the last pieces smaller or empty."""
    from tg.tensor.tensor import Tensor
    if self.is_sharded: raise MultiDeviceError(f"shard of a tensor already sharded on {self.device}: .to() one device first")
    devs = canonical(tuple(devices))
    if not devs: raise TensorValueError("shard needs at least one device")
    if len(set(devs)) != len(devs): raise TensorValueError(f"shard on {devs}: a device appears twice")
    ax = None if axis is None else self._axis(axis)
    graph.sharded_seen = True
    # realized data (a batch) is copied now, so that realizing it later isn't a schedule with every live tensor to update
    # (Tensor.live.become): straight from its bytes where it can (_copied_pieces), else by a schedule of the copies. Not
    # while a TinyJit captures: copies made here aren't kernels it captures, so its replays would reuse the capture's pieces
    realized = is_buffer_view(self.uop) and not self.requires_grad and not capturing
    if (uops := _copied_pieces(self, ax, devs) if realized else None) is None:
      if ax is None: pieces = [self] * len(devs)
      else: pieces = [self.shrink(tuple((lo, hi) if i == ax else None for i in range(self.ndim)))
                      for lo, hi in split_bounds(self.shape[ax], len(devs))]
      uops = tuple(UOp(Ops.COPY, self.dtype, (p.contiguous().uop, device_uop(d))).reshape(p.shape) for p, d in zip(pieces, devs))
      if realized:
        items, becomes = schedule(list(uops))
        run_schedule(items)
        uops = tuple(becomes.get(u, u) for u in uops)
    return Tensor(UOp(Ops.MULTI, self.dtype, uops, ax), requires_grad=self.requires_grad)
  def _placed_like(self: Tensor, make: Any, drawn: bool = False, **kw: Any) -> Tensor:
    """make(shape, device=..., **kw) placed as self is, for the *_like constructors: a sharded self's split is kept, piece
    by piece (a whole tensor on each device lost the axis), and giving it a device raises, as tinygrad's. drawn (random
    numbers): the pieces are cut from one draw, copied to their devices; drawn per device, they repeated each other."""
    from tg.tensor.tensor import Tensor
    if not self.is_sharded: return make(self.shape, **{"device": self.device, **kw})
    if "device" in kw: raise RuntimeError(f"*_like of a tensor sharded on {self.device} takes its placement: no device=")
    # (the axis of a lazy graph is known once it is realized: realizing it here, in the middle of a step, lost gradients)
    if self.uop.op is not Ops.MULTI or (ax := self.uop.arg) is None: return make(self.shape, device=self.device, **kw)
    rg = kw.pop("requires_grad", None)  # (of the whole, not of its pieces)
    if not drawn: pieces = [make(u.shape, device=d, **kw) for u, d in zip(self.uop.src, self.device)]
    else:
      whole = make(self.shape, device=self.device[0], **kw)
      bounds = _bounds([u.shape[ax] for u in self.uop.src])
      pieces = [whole.shrink(tuple(b if i == ax else None for i in range(self.ndim))).to(d) for b, d in zip(bounds, self.device)]
    return Tensor(UOp(Ops.MULTI, pieces[0].dtype, tuple(p.uop for p in pieces), ax), requires_grad=rg)
  def shard_like(self: Tensor, other: Tensor) -> Tensor:
    """This tensor placed as `other` is (tinygrad's): on its one device, or split along its axis over its devices."""
    if not other.is_sharded: return self.to(other.device)
    if self.is_sharded and self.device == other.device and self.shard_axis == other.shard_axis: return self
    return (self.to(self.device[0]) if self.is_sharded else self).shard(other.device, other.shard_axis)
  def shard_(self: Tensor, devices: Sequence[str], axis: int | None = None) -> Tensor:
    self.uop = self.shard(devices, axis).uop
    return self

def _copied_pieces(t: Tensor, axis: int | None, devices: tuple[str, ...]) -> tuple[UOp, ...] | None:
  """A realized tensor's pieces as buffers on the devices, each copied straight from its bytes, when every piece is one
  run of them (not split, or split along an axis with only 1-long axes before it) and none is empty; else None. A batch
  sharded every training step then costs copies, not a schedule (~4 ms of Python per step on two devices)."""
  if axis is not None and prod(t.shape[:axis]) != 1: return None
  if axis is None: inner, bounds = t.numel(), [(0, 1)] * len(devices)
  else: inner, bounds = prod(t.shape[axis + 1:]), split_bounds(t.shape[axis], len(devices))
  if any(hi == lo for lo, hi in bounds) or not inner: return None
  src = t._buffer()
  out = []
  for d, (lo, hi) in zip(devices, bounds):
    u = new_buffer(d, (hi - lo) * inner, t.dtype)
    graph.buffers[u].copy_from(Buffer(src.device, (hi - lo) * inner, t.dtype, base=src, offset=lo * inner * t.dtype.itemsize))
    out.append(u.reshape(t.shape if axis is None else tuple(hi - lo if i == axis else s for i, s in enumerate(t.shape))))
  return tuple(out)

def shard_grad(ctx: UOp, ret: UOp) -> tuple[UOp, ...]:
  """The gradient of a MULTI: each piece gets its part of the gradient, on its device (no gather: see _movement's shrink).
  Whole copies are one value: the first copy takes the gradient, the others none (else a source would get it n times)."""
  if ret.arg is None: return (UOp(Ops.COPY, ctx.dtype, (ctx, device_uop(device_of(ret.src[0])))),) + (None,) * (len(ret.src) - 1)
  bounds = _bounds([s.shape[ret.arg] for s in ret.src])
  return tuple(UOp(Ops.COPY, ctx.dtype, (_shrink_axis(ctx, ret.arg, *b), device_uop(device_of(s)))) for s, b in zip(ret.src, bounds))
