"""Tensor: a lazy n-dimensional array over a UOp graph, with tinygrad's and PyTorch's names and semantics.

Nothing runs until realize() (or numpy(), tolist(), item()): then the graph is scheduled into fused kernels.
The core is here: creation, data out, elementwise math with broadcasting, movement, reductions and autograd;
tg.tensor.movement and tg.tensor.nnops add the rest as mixins."""
from __future__ import annotations
import contextlib, ctypes, functools, hashlib, math, os, pathlib, pickle, weakref
from typing import Any, Callable, Iterator, Sequence
import numpy as np
from tg.uop import UOp, Ops, GroupOp, DType, dtypes, least_upper_dtype, least_upper_float, sum_acc_dtype, to_dtype, prod, getenv, EnvError, all_int
from tg.uop import cdiv, round_up, move_index, ContextVar
from tg.uop.dtype import float_to_bits
from tg.codegen.device import Buffer, Device, MallocAllocator, GlobalCounters
from tg.codegen import matmul_panel, vecmat_block
from tg.tensor.graph import buffers, new_buffer, const_uop, symbolic_value, device_of, device_uop, canonical, private_copy, same_size, \
  shape_text, dim_text
from tg.tensor.schedule import schedule, ExecItem, is_buffer_view, view_base, view_chain, names_buffer, buffer_view, max_elements, \
  symbolic_prefix, VIEWS
from tg.tensor.realize import run_schedule, Counters, unrun, capturing
from tg.tensor.gradient import compute_gradient
from tg.tensor.movement import MovementMixin, shape_args
from tg.tensor.nnops import NNMixin
from tg.tensor.indexing import IndexingMixin
from tg.tensor.custom import CustomMixin
from tg.tensor.mathops import MathMixin, in_float32, narrow_float, log1p, _signbit
from tg.tensor.ordering import OrderingMixin
from tg.tensor.sampling import SamplingMixin
from tg.tensor.linalg import LinalgMixin
from tg.tensor.hashing import HashMixin
from tg.tensor.multi import MultiMixin, has_multi, schedule_multi, realized_multi
from tg.tensor.errors import TensorBroadcastError, TensorDtypeError, TensorShapeError, TensorValueError
from tg.tensor.live import LiveTensors, settled

Scalar = int | float | bool
if default_float := getenv("DEFAULT_FLOAT", ""):  # e.g. DEFAULT_FLOAT=HALF
  if (d := getattr(dtypes, default_float.lower(), None)) is None or not isinstance(d, DType) or not dtypes.is_float(d):
    raise EnvError(f"DEFAULT_FLOAT={default_float!r} is not valid: DEFAULT_FLOAT takes a float dtype's name "
                   f"({', '.join(sorted(n for n, t in dtypes.fields().items() if dtypes.is_float(t)))})")
  dtypes.default_float = d

def _np_dtype(dt: DType) -> Any:
  if dt.fmt is None: raise TypeError(f"numpy has no {dt}; cast it first (e.g. .float())")
  return np.dtype(dt.fmt)

def _int_dtype(ints: Sequence[int]) -> DType:
  """The default int, or int64 for ints past int32 (as PyTorch's int64; tinygrad widens too): they wrapped silently."""
  return dtypes.default_int if all(-2**31 <= v < 2**31 for v in ints) else dtypes.int64
def _py_dtype(flat: list, arr: np.ndarray) -> DType:
  """A tensor's dtype for Python values (arr: numpy's array of them): dtypes.from_py, but int64 for ints past int32
  (Tensor(2**40) was 0)."""
  if (dt := dtypes.from_py(flat)) != dtypes.default_int: return dt
  return _int_dtype((int(arr.min()), int(arr.max())) if arr.dtype.kind in "iu" else [v for v in flat if not isinstance(v, bool)])

def _meet(x: Tensor, y: Tensor) -> DType:
  """The dtype two tensors compute in: the lattice's least upper bound, but one made of a Python number (_weak) meets the
  other as that number would (_scalar_dtype)."""
  if x._weak == y._weak: return least_upper_dtype(x.dtype, y.dtype)
  weak, strong = (x, y) if x._weak else (y, x)
  return _scalar_dtype(strong.dtype, weak.dtype)

def _of_variables(u: UOp) -> bool:
  """An expression of bound variables (a + b of an int and a long variable: an ADD over a CAST), on no device: its value
  is made a tensor as a variable's is. Only an integer's (every Tensor op's result comes here: a float graph is never one),
  and its first sources followed a few steps, not down a long graph of ops."""
  if not dtypes.is_int(u.dtype): return False
  for _ in range(16):
    if u.op is Ops.BIND or u.op is Ops.DEFINE_VAR: return True
    if not (u.op is Ops.CAST or u.op in GroupOp.ALU) or not u.src: return False
    u = u.src[0]
  return False

def _scalar_dtype(dt: DType, scalar: DType) -> DType:
  """The dtype a tensor of dt and a Python number (or a tensor made of one) of dtype `scalar` meet in: dt, but a float
  number makes an int or bool tensor float, and an int one a bool tensor the number's int (int64 past int32)."""
  if dtypes.is_float(scalar) and not dtypes.is_float(dt): return least_upper_float(dt)
  if scalar != dtypes.bool and dt == dtypes.bool: return scalar
  return dt

def _py_array(flat: list, arr: np.ndarray, dt: DType) -> np.ndarray:
  """Python values (arr: numpy's array of them) as an array of dt (float64 for dtypes numpy lacks). Ints the dtype can't
  hold wrap, as C and PyTorch (uint8 -1 is 255); numpy made ints past int64 beside small ones float64 (uint64
  [2**64 - 2, 5] was [0, 5]), so those go as ints modulo 2^bits."""
  if dtypes.is_int(dt) and arr.dtype.kind not in "iub" and all(isinstance(v, int) for v in flat):
    bits = 8 * dt.itemsize
    return np.array([v % (1 << bits) for v in flat], dtype=f"u{dt.itemsize}").view(_np_dtype(dt))
  return arr.astype(_np_dtype(dt) if dt.fmt else np.float64)

def _from_np_dtype(d: Any) -> DType:
  d = np.dtype(d)
  for dt in dtypes.fields().values():
    if dt.fmt is not None and np.dtype(dt.fmt) == d: return dt  # by dtype: int64's char is 'l' or 'q' by platform
  raise TypeError(f"no tg dtype for numpy {d}")

def _flatten_py(x: Any) -> tuple[list, tuple[int, ...]]:
  """The values of a nested list (numpy arrays in it count as nested lists of Python values) and its shape."""
  if isinstance(x, np.ndarray): x = x.tolist()
  if not isinstance(x, (list, tuple)): return [x], ()
  if len(x) == 0: return [], (0,)
  if not any(isinstance(e, (list, tuple, np.ndarray)) for e in x): return list(x), (len(x),)  # (a flat run: 1M ints took 1.5 s)
  parts = [_flatten_py(e) for e in x]
  if any(p[1] != parts[0][1] for p in parts): raise TensorValueError(f"ragged nested sequence: element shapes {sorted({p[1] for p in parts})}")
  return [v for p in parts for v in p[0]], (len(x), *parts[0][1])

def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
  if all(s == shapes[0] for s in shapes[1:]): return tuple(shapes[0])  # (most binary ops: nothing to broadcast)
  n = max(len(s) for s in shapes)
  padded = [(1,) * (n - len(s)) + tuple(s) for s in shapes]
  out = []
  for dims in zip(*padded):
    big = [d for d in dims if d != 1]
    if any(not same_size(d, big[0]) for d in big[1:]):
      raise TensorBroadcastError(f"shapes {' and '.join(str(tuple(s)) for s in shapes)} can't broadcast")
    out.append(big[0] if big else 1)
  return tuple(out)

# (Ops.X is a slow lookup on Python 3.11: the per-op paths)
_RESHAPE, _BUFFER, _CONST, _INDEX = Ops.RESHAPE, Ops.BUFFER, Ops.CONST, dtypes.index
_VALUES = (Ops.BIND, Ops.DEFINE_VAR, Ops.CONST)  # UOps a Tensor of holds as a value: a variable's, a bare constant (no device)
_WRITES = (Ops.ASSIGN, Ops.CUSTOM_KERNEL)  # what writes into a buffer its graph names
_STAGE = 4096  # elements one stage of a long reduce combines (see Tensor._staged)
_FEW_OUTPUTS = 16  # a long reduce to fewer values realizes its stage results (see Tensor._staged)

TRAINING = ContextVar("TRAINING", 0)

class _TensorType(type):
  """Tensor.training is the TRAINING setting: `Tensor.training = True`, `with Tensor.train():` and tinygrad's
  `with Context(TRAINING=1):` turn one switch."""
  @property
  def training(cls) -> bool: return bool(TRAINING.value)
  @training.setter
  def training(cls, mode: bool) -> None: TRAINING.value = int(mode)

class Tensor(MovementMixin, NNMixin, IndexingMixin, CustomMixin, MathMixin, OrderingMixin, SamplingMixin, MultiMixin, LinalgMixin,
             HashMixin, metaclass=_TensorType):
  """A lazy tensor. `uop` is its graph; requires_grad marks a leaf whose .grad backward() fills."""
  no_grad: bool = False
  _seed: int = 0
  _device_seeds: dict[str, Tensor] = {}  # per device: its threefry key, two uint32 words
  _device_rng_counters: dict[str, Tensor] = {}  # per device: the next counter, (low, high) uint32 words
  live = LiveTensors()  # the live tensors realize and autograd act on (tg.tensor.live): one per process
  _lazy = False  # is this tensor in live.lazy (LiveTensors.add sets it, pending clears it)
  _settled = False  # is this tensor in live.settled (once in, it stays while it lives)
  # made of a Python number (Tensor(2), and what is computed from such alone): it meets another tensor as the number
  # would (Tensor(2) + int8 is int8, Tensor(2.0).exp() + half is half), as PyTorch's 0-d tensors and tinygrad's weak dtypes
  _weak = False
  _view_of: weakref.ref | None = None  # the tensor movement ops made this one a view of (a write through it goes there)
  _borrowed = False  # a contiguous() that reads its source's buffer until assigned whole

  def __init__(self, data: Any, device: str | tuple[str, ...] | None = None, dtype: DType | str | None = None,
               requires_grad: bool | None = None):
    if isinstance(data, UOp) and device is None and dtype is None and data.dtype is not _INDEX and \
       (data.op not in _VALUES or data.op is _CONST and data.src) and not _of_variables(data):
      self._init(data, requires_grad)  # (an op's result)
      return
    if isinstance(device, (tuple, list)) and not isinstance(data, UOp):  # on several devices: a whole copy on each
      data = Tensor(data, device[0], dtype).shard(device).uop
    dev = Device.canonicalize(device[0] if isinstance(device, (tuple, list)) else device or Device.DEFAULT)
    dt = to_dtype(dtype) if dtype is not None else None
    if data is None: data = []  # tinygrad's empty tensor
    if isinstance(data, UOp) and data.op is _CONST and not data.src:  # UOp.const(dtype, v), on no device (tinygrad's): the default
      uop = const_uop(data.arg, dt or data.dtype, dev, ())
    elif isinstance(data, UOp) and (data.dtype is dtypes.index or data.op in _VALUES or _of_variables(data)):  # a variable's value, weak
      r = data.unbound() if data.op is Ops.BIND else data
      uop = symbolic_value(data, dt or (_int_dtype([r.vmin, r.vmax]) if data.dtype is dtypes.index else data.dtype), dev, ())
      self._weak = dt is None
    elif isinstance(data, UOp): uop = data
    elif isinstance(data, Tensor): uop = data.uop if dt is None else data.cast(dt).uop
    elif isinstance(data, (bool, int, float)):
      uop = const_uop(data, dt or (_int_dtype([data]) if type(data) is int else dtypes.from_py(data)), dev, ())
      self._weak = dt is None
    elif isinstance(data, (bytes, bytearray, memoryview)): uop = _buffer_of_bytes(bytes(data), dev, dt or dtypes.uint8)
    elif isinstance(data, pathlib.Path):  # a file's bytes, on the DISK device (or copied to `device`) when used, as tinygrad's
      dt = dt or dtypes.uint8
      disk = Tensor.empty(os.path.getsize(data) // dt.itemsize, dtype=dt, device=f"disk:{data}")
      uop = (disk if device is None else disk.to(dev)).uop
    elif isinstance(data, np.ndarray) or np.isscalar(data):
      arr = np.asarray(data)
      uop = _buffer_from(arr, dev, dt or _from_np_dtype(arr.dtype))  # float64 stays float64, as tinygrad and PyTorch
    elif isinstance(data, (list, tuple)) and data and all(isinstance(d, (bytes, bytearray, memoryview)) for d in data):
      if len(lengths := {len(d) for d in data}) > 1: raise TensorShapeError(f"rows of bytes of different lengths {sorted(lengths)}")
      rows = _buffer_of_bytes(b"".join(map(bytes, data)), dev, dt or dtypes.uint8)  # (tinygrad's Tensor([b"abc", b"def"]))
      uop = rows.reshape((len(data), rows.shape[0] // len(data)))
    elif isinstance(data, (list, tuple)):
      flat, shape = _flatten_py(data)
      arr = np.array(flat)
      if dt is None: dt = _py_dtype(flat, arr) if flat else dtypes.default_float
      uop = _buffer_from(_py_array(flat, arr, dt).reshape(shape), dev, dt)
    else: raise TypeError(f"can't make a Tensor from {type(data).__name__}")
    self._init(uop, requires_grad)
  def _init(self, uop: UOp, requires_grad: bool | None) -> None:
    self._uop = uop
    if uop.op is not _RESHAPE or uop.src[0].op is not _BUFFER: Tensor.live.add(self)  # (else _lazy's default: False)
    else: Tensor.live.settle(self)
    self.grad: Tensor | None = None
    if requires_grad: self.requires_grad_(requires_grad)
    else: self._requires_grad = requires_grad

  @property
  def requires_grad(self) -> bool | None: return self._requires_grad
  @requires_grad.setter
  def requires_grad(self, requires_grad: bool | None) -> None: self.requires_grad_(requires_grad)  # `t.requires_grad = True` makes a leaf too

  @property
  def uop(self) -> UOp:
    """The graph of this tensor's value (a buffer view once realized). Set, it puts the tensor in Tensor.live's lazy set
    when the graph is not a view (realize must then see it)."""
    return self._uop
  @uop.setter
  def uop(self, u: UOp) -> None:
    self._uop = u
    if not self._lazy and view_base(u) is None: Tensor.live.add(self)

  # ***** properties *****
  @property
  def shape(self) -> tuple[int, ...]: return self._uop.shape
  @property
  def dtype(self) -> DType: return self._uop.dtype
  @property
  def device(self) -> str: return device_of(self._uop)
  @property
  def ndim(self) -> int: return len(self.shape)
  def numel(self) -> int: return prod(self.shape)
  def size(self, dim: int | None = None) -> tuple[int, ...] | int: return self.shape if dim is None else self.shape[self._axis(dim)]
  def element_size(self) -> int: return self.dtype.itemsize
  def nbytes(self) -> int: return self.numel() * self.element_size()
  def __len__(self) -> int:
    if not self.shape: raise TypeError("len() of a 0-d tensor")
    return self.shape[0]
  def __repr__(self) -> str: return f"<Tensor {shape_text(self.shape)} {self.dtype} on {self.device}{' with grad' if self.grad is not None else ''}>"
  __hash__ = object.__hash__  # by identity (__eq__ is elementwise); object's is C: the live-tensor registry hashes every new tensor
  def __bool__(self) -> bool: raise TypeError("the truth value of a Tensor is ambiguous: use .item() or .numpy()")

  # ***** realizing and data out *****
  def schedule(self, *others: Tensor) -> list[ExecItem]:
    """The kernels (and copies) that realize this tensor (and others); after this call the tensors point at their buffers,
    and every other live tensor at the buffers of what it shares with them (LiveTensors.become). Their contents are
    written when the items run (run_schedule): read before that, they raise (tinygrad reads the unwritten memory)."""
    items = self._schedule(*others)
    if items:  # (new buffers only: an assign's target holds its old contents until the items run)
      bufs = (buffers.get(b) for t in (self, *others) if (b := view_base(t.uop)) is not None)
      unrun.update(buf for buf in bufs if buf is not None and not buf.is_allocated)
    return items
  def schedule_with_vars(self, *others: Tensor) -> tuple[list[ExecItem], dict[str, int]]:
    """schedule() and the values its symbolic sizes are bound to (tinygrad's): each item also holds them, as var_vals."""
    items = self.schedule(*others)
    return items, {k: v for ei in items for k, v in ei.var_vals.items()}
  def _schedule(self, *others: Tensor) -> list[ExecItem]:
    ts = [t for t in ({id(t): t for t in (self, *others)}.values() if others else (self,))  # once each
          if not t._as_one_view() and not realized_multi(t.uop) and not shares_buffer(t.uop)]
    if not ts: return []
    if any(u.op in _WRITES for t in ts for u in t.uop.toposort()):
      while readers := Tensor.live.old_value_readers(ts): ts += readers  # (a reader may write too: a pending a.assign(b + 1))
      ts = [t for t in ts if not shares_buffer(t.uop)]  # (a detach() of a written buffer reads it: it shows the new values)
    _own_buffers(ts)
    outs = [t.uop for t in ts]
    multi = has_multi(outs)
    if not multi: outs = [_contiguous_under_reshape(t.uop) for t in ts]
    items, becomes = schedule_multi(outs, schedule) if multi else schedule(outs)
    for t, o in zip(ts, outs):
      if o is not t.uop: becomes[t.uop] = buffer_view(view_base(becomes[o]), t.shape)
    Counters.scheduled += len(items)
    Tensor.live.schedules += 1
    for t in ts:  # (remembered: loss.item() then loss.backward() still reaches the weights)
      Tensor.live.remember(t.uop, becomes[t.uop])
      t.uop = becomes[t.uop]
    Tensor.live.become(becomes)  # other live tensors are pointed at the buffers too
    return items
  def realize(self, *others: Tensor, do_update_stats: bool = True) -> Tensor:
    """Run what computes self (and others). A view of a realized buffer (shares_buffer) needs nothing run and stays that view,
    as tinygrad's: later writes to the buffer show in it, as in PyTorch's views (a copy of it detached it: p = o.T, then
    p.realize(), missed o's next assign). do_update_stats=False (tinygrad's): the launches leave GlobalCounters' launch
    counts and estimates as they were (tg's own Counters count them all the same)."""
    # (while a schedule is pending, these are marked unwritten too: if a kernel raises on reading its buffers, they stay so)
    with contextlib.nullcontext() if do_update_stats else GlobalCounters.kept():
      run_schedule((self.schedule if unrun else self._schedule)(*others), consume=True)
    return self
  @staticmethod
  def realize_all(*ts: Tensor) -> None:
    if ts: ts[0].realize(*ts[1:])
  def _as_one_view(self) -> bool:
    """Is this tensor realized (a buffer view)? Then its graph becomes the buffer or one RESHAPE of it (reshapes of reshapes
    collapsed), the form the code that takes a realized tensor's buffer reads."""
    if (base := view_base(self._uop)) is None: return False
    if self._uop.op is Ops.RESHAPE and self._uop.src[0] is not base and all_int(self.shape):
      # autograd sees through to the reshapes dropped (a leaf's among them: x.reshape(3, 2) read, then backward, gave x none).
      # A reshape to the buffer's own shape is a RESHAPE all the same: the bare buffer is under every view of it, the leaf's
      # too, and mapped to a graph holding it, backward walked that loop forever (x.flatten() realized, then backward)
      new = base.reshape(self.shape)
      Tensor.live.realized[new := UOp(Ops.RESHAPE, base.dtype, (base,), self.shape) if new is base else new] = self._uop
      self.uop = new
    return True
  def _disk_view(self) -> bool:
    """A view (a slice, a permute) of a DISK tensor: DISK runs no kernels, so it is read by copying what it views to a
    compute device (a safetensors blob's tensor is such a view)."""
    return self._on_disk() and not self._as_one_view()
  def _on_disk(self) -> bool: return isinstance(self.device, str) and self.device.startswith("DISK")
  def _file_bytes(self, dt: DType) -> Tensor | None:
    """This DISK tensor's bytes as a tensor of dt (the last axis scaled by the item sizes) of a buffer of their own on the
    same file, when they are one run of it (reshapes, and slices whose inner axes are whole); else None. DISK runs no
    kernels: a bitcast or a contiguous() of such a view is the file's bytes, read in place, as tinygrad's."""
    chain, base = view_chain(self.uop, GroupOp.Movement)
    if base.op is not _BUFFER or not all_int(self.shape) or not self.shape or (self.shape[-1] * self.dtype.itemsize) % dt.itemsize: return None
    start, shape = 0, (base.arg,)
    for v in reversed(chain):  # (from the buffer up)
      if v.op is Ops.RESHAPE: shape = v.shape
      elif v.op is Ops.SHRINK and len(cut := [i for i, ((b, e), n) in enumerate(zip(v.arg, shape)) if (b, e) != (0, n)]) <= 1 and \
           all(n == 1 for n in v.shape[:cut[0] if cut else 0]):
        start, shape = start + (v.arg[cut[0]][0] * prod(shape[cut[0] + 1:]) if cut else 0), v.shape
      else: return None
    view = buffers[base].view(self.numel() * self.dtype.itemsize // dt.itemsize, dt, start * base.dtype.itemsize)
    return Tensor(new_buffer(self.device, view.size, dt, view)).reshape(*self.shape[:-1], self.shape[-1] * self.dtype.itemsize // dt.itemsize)
  def _buffer(self) -> Buffer:
    if capturing:  # (every read of data comes here: .numpy(), .item(), .tolist(), masked_select's count...)
      from tg.tensor.jit import JitError
      raise JitError("cannot access tensor data during JIT capture: the value read would be baked into every replay; compute it "
                     "outside the jitted function and pass it in (a tensor, or a bound variable for a size)")
    self.realize()
    if shares_buffer(self._uop): return self.contiguous().realize()._buffer()  # (a view's elements, in order, in a buffer)
    if (buf := buffers[view_base(self._uop)]) in unrun:
      raise RuntimeError("this tensor's kernels were scheduled (Tensor.schedule) and have not run: run_schedule(items) first")
    return buf.ensure_allocated()
  def data(self) -> memoryview:
    """The realized contents as a memoryview of the buffer's bytes, shaped; an empty tensor's is 1-d, as tinygrad's (a
    memoryview with a 0 among several dims can't be iterated: list() of it raised)."""
    return memoryview(self.numpy().reshape(-1) if self.numel() == 0 else self.numpy())
  def numpy(self) -> np.ndarray:
    if self._disk_view(): return self.to("CPU").numpy()
    if self.is_sharded:  # gathered on one device; a whole copy on each (a loss) is read from the first, no copy scheduled
      return self.to(self.device[0]).numpy() if self.shard_axis is not None else Tensor(self.uop.src[0]).numpy()
    if self.dtype in (dtypes.bfloat16, *dtypes.fp8s): return (self.to("CPU") if self._on_disk() else self).float().numpy()
    if not all_int(self.shape):  # (tinygrad asserts the same)
      raise TensorShapeError(f"no data for the symbolic shape {shape_text(self.shape)}: shrink it to ints first (t[:n] or t.shrink(...))")
    if self.numel() == 0: return np.zeros(self.shape, _np_dtype(self.dtype))
    out = np.empty(self.shape, _np_dtype(self.dtype))
    self.realize()._buffer().copyout(memoryview(out.reshape(-1)).cast("B"))  # self becomes its buffer: an ASSIGN runs once
    return out
  def tolist(self) -> Any: return self.numpy().tolist()
  def item(self) -> Scalar:
    if self.numel() != 1: raise TensorValueError(f"item() needs one element, this tensor has shape {shape_text(self.shape)}")
    return self.numpy().reshape(()).item()
  def to(self, device: str | tuple[str, ...] | None) -> Tensor:
    """This tensor on another device (from a sharded one: gathered there), or on several (a whole copy on each)."""
    dev = canonical(device or Device.DEFAULT)
    if dev == self.device: return self
    if isinstance(dev, tuple): return (self if not self.is_sharded else self.to(dev[0])).shard(dev)
    if self._disk_view():  # copy what the view reads over, and view it there
      chain, u = view_chain(self.uop, GroupOp.Movement)
      return Tensor(_replay(chain, Tensor(u).realize().to(dev).uop), requires_grad=self.requires_grad)  # (realized: the file's bytes)
    return Tensor(UOp(Ops.COPY, self.dtype, (self.contiguous().uop, device_uop(dev))).reshape(self.shape), requires_grad=self.requires_grad)
  def to_(self, device: str | tuple[str, ...] | None) -> Tensor:
    self.uop = self.to(device).uop
    return self
  def clone(self, device: str | None = None) -> Tensor:
    """A copy in a buffer of its own (on `device`, else self's), with a copy of .grad (tinygrad's; PyTorch's clone leaves
    .grad None)."""
    src = self if device is None or canonical(device) == self.device else self.to(device)
    ret = Tensor(private_copy(src._uop), requires_grad=self.requires_grad)  # (two clones of one value: two leaves, not one UOp)
    if self.grad is not None: ret.grad = self.grad.clone(device)
    return ret
  def contiguous(self) -> Tensor:
    """self's values in a buffer. A realized self's buffer serves: reads and writes through views of the result share its
    memory, but an assign of the whole result gives it a buffer of its own (tinygrad's: `t = b.contiguous(); t += 1`
    leaves b as it was, where PyTorch's contiguous() is b itself)."""
    if self._as_one_view():
      ret = self._apply(lambda u: u)
      ret._borrowed = True
      return ret
    if self._disk_view():  # DISK runs no kernels: a run of the file is itself, another view is copied to the default device
      return on_file if (on_file := self._file_bytes(self.dtype)) is not None else self.to(Device.DEFAULT)
    return self._apply(lambda x: UOp(Ops.CONTIGUOUS, x.dtype, (x,)))
  def contiguous_backward(self) -> Tensor:
    """self, whose gradient is made contiguous (a buffer) on the way back, as tinygrad's: its readers read it, not redo it."""
    return Tensor(UOp(Ops.CALL, self.dtype, (self.detach().uop, self.uop), lambda g, _: (Tensor(g).contiguous().uop,)))
  def detach(self) -> Tensor: return Tensor(UOp(Ops.DETACH, self.dtype, (self._uop,)))
  def assign(self, x: Tensor | Any) -> Tensor:
    """Write x into this tensor's buffer (in place: views of the buffer see the new values). x broadcasts to the shape. A
    tensor x of another dtype raises TensorDtypeError, as tinygrad's (PyTorch's copy_ casts): cast it first; a Python value
    (or list) takes this tensor's dtype. A write into a view lands in the buffer it views, through detach() and bitcast()
    too (they share its memory, as in PyTorch and tinygrad)."""
    # (a Python value for a DISK tensor is made on the CPU: a buffer made on DISK maps the file, and it was written at byte 0)
    x = x if isinstance(x, Tensor) else Tensor(x, "CPU" if self._on_disk() else self.device, self.dtype)
    if x.dtype != self.dtype and x._weak: x = x.cast(self.dtype)  # a Python number's tensor: as the number (tinygrad's)
    if x.dtype != self.dtype:
      raise TensorDtypeError(f"assign dtype mismatch: a {x.dtype} tensor to a tensor of {self.dtype}; assign doesn't cast (tinygrad's rule, "
                             f"PyTorch's copy_ does); cast it first, x.cast({self.dtype})")
    if x.shape != self.shape:
      try: x = x._broadcast_to(self.shape)
      except ValueError: raise TensorShapeError(f"assign of shape {shape_text(x.shape)} to a tensor of shape {shape_text(self.shape)}") from None
    if self._on_disk(): return self._assign_disk(x)
    if x.device != self.device: x = x.to(self.device)
    if (base := _writable_base(self)) is not None:  # a[:4].assign(b), a.T.assign(b): written into a, as PyTorch's copy_
      if self._uop is base and base.op is Ops.DETACH and x.requires_grad and (key := _history_key(self, base)) is not None:
        # t = b.detach(); t *= b * 3: t still shares b's memory, and autograd sees it as the value written (its detached
        # read of b as b was), as PyTorch's; b's gradient went nowhere: t was a detach() of the buffer
        was = Tensor.empty(*self.shape, dtype=self.dtype, device=self.device).assign(Tensor(base)).realize()  # (values, no history)
        written = x.uop.substitute({base: UOp(Ops.DETACH, base.dtype, (was.uop,))})
        _write_through(self._uop, base, x)
        self.uop = key
        Tensor.live.realized[key] = written
      else: _write_through(self._uop, base, x)
      return self
    if self._borrowed:  # (contiguous() of a buffer, written whole: a buffer of its own now)
      self._borrowed, self._weak, self.uop = False, False, private_copy(x.uop)
      return self
    if self.is_sharded:  # unshard splits the write by the target's pieces
      if not realized_multi(self._uop): self.realize()
      self.uop = UOp(Ops.ASSIGN, self.dtype, (self._uop, x.uop))
      return self
    if not is_buffer_view(self._uop): self.realize()
    base = view_base(self._uop)
    self.uop = UOp(Ops.ASSIGN, self.dtype, (base, x.uop.reshape((prod(self.shape),)) if self.shape != base.shape else x.uop)).reshape(self.shape)
    self._weak = False  # (a Python number's tensor, written, holds data: it meets others by its dtype, as tinygrad's)
    return self
  def _assign_disk(self, x: Tensor) -> Tensor:
    """DISK runs no kernels: x's bytes are computed on the CPU and copied into the file, at once. A view of the file is
    written through on a CPU copy of the buffer it views, which is then written back whole."""
    chain, u = view_chain(self.uop, GroupOp.Movement)
    if u.op is not _BUFFER:  # a file not written yet (.to("disk:...") is lazy): written first, so the tensor of it sees the write
      _owner(u).realize()
      chain, u = view_chain(self.uop, GroupOp.Movement)
    if chain and not all(v.op is Ops.RESHAPE for v in chain):
      whole = Tensor(u).to("CPU")
      Tensor(_replay(chain, whole.uop)).assign(x.to("CPU"))
      x = whole
    src = x.to("CPU").contiguous().realize()._buffer()
    raw = memoryview(bytearray(src.nbytes))
    src.copyout(raw)
    Tensor(u).realize()._buffer().copyin(raw)
    return self
  def __reduce_ex__(self, protocol: int) -> tuple:
    """A tensor pickles as its graph with the bytes of every allocated buffer in it, and unpickles onto buffers of its own:
    the original's may be gone by then, or written since. (It pickled its graph alone: read after the original was
    freed, a KeyError.) With protocol 5 the bytes are a pickle.PickleBuffer, out of band when the pickler takes them,
    of a host buffer's own memory (no copy, as numpy's arrays: 8 tensors of 4 MB peaked at 78 MB to pickle)."""
    bufs = [u for u in self.uop.toposort() if u.op is Ops.BUFFER]
    return (_unpickle, (self.uop, bufs, [_pickled_bytes(buffers[u], protocol) for u in bufs], self.requires_grad))
  def replace(self, x: Tensor) -> Tensor:
    if x.shape != self.shape: raise TensorShapeError(f"replace with shape {shape_text(x.shape)} on a tensor of shape {shape_text(self.shape)}")
    self.uop = x.uop
    return self

  # ***** creation *****
  @staticmethod
  def empty(*shape: Any, device: str | tuple[str, ...] | None = None, dtype: DType | str | None = None, **kw: Any) -> Tensor:
    """Uninitialized memory; on a tuple of devices, a buffer of the whole shape on each (a replicated sharded tensor)."""
    shp, dt = _shape(shape, symbolic=True), to_dtype(dtype) if dtype is not None else dtypes.default_float
    if isinstance(device, tuple): return Tensor(UOp(Ops.MULTI, dt, tuple(_empty(d, shp, dt) for d in canonical(device)), None), **kw)
    return Tensor(_empty(device or Device.DEFAULT, shp, dt), **kw)
  @staticmethod
  def invalids(*shape: Any, device: str | tuple[str, ...] | None = None, dtype: DType | str | None = None) -> Tensor:
    """tinygrad's anonymous buffer for a kernel to write (a custom kernel's output): Tensor.empty, whose default dtype is
    default_float (tinygrad 0.14's is bool)."""
    return Tensor.empty(*shape, device=device, dtype=dtype)
  @staticmethod
  def from_url(url: str, gunzip: bool = False, **kw: Any) -> Tensor:
    """A 1-d uint8 tensor of url's bytes (gunzipped with gunzip=True), on DISK as a file's are: the download is cached
    (tg.tensor.fetch), so a second run reads the file. Other arguments as Tensor(path, ...), device= among them."""
    from tg.tensor.fetch import fetch
    return Tensor(fetch(url, gunzip=gunzip), **kw)
  @staticmethod
  def from_blob(ptr: int, shape: Any, device: str | None = None, dtype: DType | str | None = None, **kw: Any) -> Tensor:
    """A tensor on memory you own at host address ptr, not copied: kernels read and write it there, so it must outlive the
    tensor. Only host devices (CPU, PYTHON) take a host address."""
    shp, dt, dev = _shape(shape), to_dtype(dtype) if dtype is not None else dtypes.default_float, Device.canonicalize(device or Device.DEFAULT)
    if not isinstance(Device[dev].allocator, MallocAllocator): raise TensorValueError(f"from_blob takes host memory: {dev} isn't a host device")
    if not isinstance(ptr, int) or ptr <= 0: raise TensorValueError(f"from_blob needs a memory address (a positive int), got {ptr!r}")
    n = prod(shp)
    buf = Buffer(dev, n, dt, opaque=(ctypes.c_uint8 * (n * dt.itemsize)).from_address(ptr)) if n else None
    return Tensor(new_buffer(dev, n, dt, buf).reshape(shp), **kw)
  @staticmethod
  def full(shape: Any, fill_value: Scalar, device: str | None = None, dtype: DType | str | None = None, buffer: bool = False,
           **kw: Any) -> Tensor:
    """A constant, broadcast: a buffer holds it only once something writes into it. buffer=True: a copy into a buffer of
    its own, made when realized (tinygrad's default; the values are the same either way)."""
    shp = _shape((shape,) if isinstance(shape, int) else shape, symbolic=True)
    if isinstance(fill_value, UOp):  # a bound variable (tinygrad's Tensor.full((3,), v))
      ret = Tensor(symbolic_value(fill_value, to_dtype(dtype or dtypes.default_int), canonical(device or Device.DEFAULT), shp), **kw)
    else:
      dt = to_dtype(dtype) if dtype is not None else dtypes.from_py(fill_value)
      ret = Tensor(const_uop(fill_value, dt, canonical(device or Device.DEFAULT), shp), **kw)
    return ret.clone() if buffer else ret
  @staticmethod
  def const(dtype: DType | str, value: Any, device: str | None = None) -> Tensor:
    """A 0-d tensor of dtype holding value: a Python number, a constant UOp or a bound variable (tinygrad master's)."""
    return Tensor(value, device=device).cast(dtype) if isinstance(value, UOp) else Tensor(value, device=device, dtype=dtype)
  @staticmethod
  def from_uop(u: UOp, **kw: Any) -> Tensor:
    """A tensor of a UOp graph, or of a symbolic int (a bound variable's expression), as tinygrad's."""
    return Tensor(u, **kw)
  @staticmethod
  def zeros(*shape: Any, **kw: Any) -> Tensor: return Tensor.full(_shape(shape, symbolic=True), 0.0, **{"dtype": dtypes.default_float, **kw})
  @staticmethod
  def ones(*shape: Any, **kw: Any) -> Tensor: return Tensor.full(_shape(shape, symbolic=True), 1.0, **{"dtype": dtypes.default_float, **kw})
  def full_like(self, fill_value: Scalar, **kw: Any) -> Tensor:
    return self._placed_like(lambda shape, **k: Tensor.full(shape, fill_value, **k), **{"dtype": self.dtype, **kw})
  def const_like(self, value: Scalar, dtype: DType | str | None = None) -> Tensor: return self.full_like(value, dtype=dtype or self.dtype)
  def zeros_like(self, **kw: Any) -> Tensor: return self.full_like(0, **kw)
  def ones_like(self, **kw: Any) -> Tensor: return self.full_like(1, **kw)
  def empty_like(self, **kw: Any) -> Tensor: return self._placed_like(Tensor.empty, **{"dtype": self.dtype, **kw})
  @staticmethod
  def arange(start: Scalar, stop: Scalar | None = None, step: Scalar = 1, device: str | None = None, dtype: DType | str | None = None,
             requires_grad: bool | None = None) -> Tensor:
    """requires_grad as PyTorch's, as for every creation function here (tinygrad's arange, eye and linspace raise TypeError
    for it); other keywords raise TypeError in both."""
    if stop is None: start, stop = 0, start
    if any(isinstance(v, UOp) for v in (start, stop, step)):
      return Tensor._symbolic_arange(start, stop, step, device=device, dtype=dtype)._leaf(requires_grad)
    if step == 0: raise TensorValueError(f"arange({start}, {stop}, step=0): the step must not be 0")
    n = max(0, math.ceil((stop - start) / step))
    ends = (start, start + (n - 1) * step) if n else ()
    dt = dtype or (dtypes.default_float if any(isinstance(x, float) for x in (start, stop, step)) else _int_dtype(ends))
    if n == 0: return Tensor.empty(0, dtype=dt, device=device, requires_grad=requires_grad)
    idx = _iota(n, to_dtype(dt), device)
    return ((idx * step + start).cast(dt) if (step != 1 or start != 0) else idx)._leaf(requires_grad)
  def _leaf(self, requires_grad: bool | None) -> Tensor:
    """self, made a leaf that requires grad if asked (a creation function's requires_grad=)."""
    return self.requires_grad_(requires_grad) if requires_grad is not None else self
  @staticmethod
  def _symbolic_arange(start: int | UOp, stop: int | UOp, step: int | UOp, **kw: Any) -> Tensor:
    """arange with bound variables among its (int) arguments: the arange of the most elements it can have, shrunk to
    how many it has, so every value runs the same kernels."""
    if any(not isinstance(v, (int, UOp)) for v in (start, stop, step)): raise TensorValueError("a symbolic arange takes ints")
    n = stop - start if isinstance(step, int) and step == 1 else (stop - start + step - 1) // step
    count = n.unbound().simplify()
    if count.vmax <= 0 or count.vmin < 0: raise TensorValueError(f"arange({start}, {stop}, {step}) may be empty or negative")
    most = int(count.vmax)
    idx = Tensor.arange(most, **kw).shrink(((0, n),))
    return idx if isinstance(start, int) and start == 0 and isinstance(step, int) and step == 1 else idx * step + start
  @staticmethod
  def linspace(start: float, stop: float, steps: int, device: str | None = None, dtype: DType | str | None = None,
               requires_grad: bool | None = None) -> Tensor:
    """requires_grad as arange's."""
    dt = to_dtype(dtype or dtypes.default_float)
    if dt == dtypes.bool: raise TensorValueError("linspace of bools: give a number dtype")
    if steps < 0: raise TensorValueError(f"linspace needs a non-negative number of steps, got {steps}")
    if steps == 1: return Tensor([float(start)], device).cast(dt)._leaf(requires_grad)
    return (Tensor.arange(steps, device=device).float() * ((stop - start) / (steps - 1)) + start).cast(dt)._leaf(requires_grad)
  @staticmethod
  def eye(n: int, m: int | None = None, device: str | None = None, dtype: DType | str | None = None,
          requires_grad: bool | None = None) -> Tensor:
    """requires_grad as arange's."""
    m = n if m is None else m
    if n < 0 or m < 0: raise TensorValueError(f"eye needs non-negative sizes, got {n} and {m}")
    eye = Tensor.arange(n, device=device).unsqueeze(1) == Tensor.arange(m, device=device)
    return eye.cast(dtype or dtypes.default_float)._leaf(requires_grad)

  # ***** random numbers: JAX's threefry-2x32 stream, drawn as tinygrad draws it (the same numbers for the same seed) *****
  @staticmethod
  def manual_seed(seed: int = 0) -> None: Tensor._seed, Tensor._device_seeds, Tensor._device_rng_counters = seed, {}, {}
  @staticmethod
  def _threefry_random_bits(key: Tensor, counts0: Tensor, counts1: Tensor) -> Tensor:
    """JAX's threefry_2x32 under key (two uint32 words) of each counter pair (counts0[i], counts1[i]): the first words of
    every pair's result, then the second words."""
    return _hashed_words(counts0, counts1, _words_u64(key))
  @staticmethod
  def _random_bits(n: int, device: str | None) -> Tensor:
    """n uniformly random uint32 words. Each call hashes the device's counter into a key of its own, then counts from 0
    under it (tinygrad's draw). The key is computed, and the counter advanced, by kernels that run right away: every call
    is the same compiled kernels, later calls never see an earlier counter, and a TinyJit replay (which re-runs those
    kernels) draws new numbers each step."""
    if isinstance(device, tuple): return Tensor._random_bits(n, device[0]).shard(device)  # sharded: the same numbers
    dev, u32 = Device.canonicalize(device or Device.DEFAULT), dtypes.uint32
    if dev not in Tensor._device_seeds:  # a device's key: (a hash of how many devices drew before it, the seed)
      digest = hashlib.sha256(len(Tensor._device_seeds).to_bytes(4, "big")).digest()
      Tensor._device_seeds[dev] = Tensor([int.from_bytes(digest[-4:], "big"), Tensor._seed & 0xFFFFFFFF], dev, u32)
      Tensor._device_rng_counters[dev] = Tensor([0, 0], dev, u32)
    counter = Tensor._device_rng_counters[dev]
    at = _words_u64(counter).contiguous().realize()  # (a snapshot: the write of the counter doesn't read itself shifted)
    key = at.threefry(_words_u64(Tensor._device_seeds[dev])).contiguous()
    nxt = at.expand(2) + n
    Tensor.realize_all(key, counter.assign((Tensor.arange(2, device=dev) == 0).where(nxt, nxt >> 32).cast(u32)))
    half = Tensor.arange((n + 1) // 2, device=dev, dtype=u32)
    return _hashed_words(half, half + (n + 1) // 2, key).shrink(((0, n),))
  def threefry(self, key: Tensor) -> Tensor:
    """Threefry-2x32 (20 rounds) of each uint64 here (a counter pair, the first word low) under key (uint64, broadcast)."""
    return Tensor(UOp(Ops.THREEFRY, dtypes.uint64, (self.uop, key._broadcast_to(self.shape).uop)))
  @staticmethod
  def rand(*shape: Any, device: str | None = None, dtype: DType | str | None = None, contiguous: bool = True, **kw: Any) -> Tensor:
    """Uniform in [0, 1): random mantissa bits under the exponent of 1.0, minus 1 (tinygrad's; never 1.0, in any float
    dtype). contiguous (tinygrad's default): the numbers are computed once into their own buffer; lazily, threefry would be
    recomputed inside every kernel that reads them, once per use (a reduce over a broadcast reads each element many times:
    LayerNorm's backward on a randn input compiled for minutes)."""
    if unknown := kw.keys() - {"requires_grad"}: raise TypeError(f"rand() got unexpected keyword arguments {sorted(unknown)}")
    shp = _shape(shape)
    out = _uniform(prod(shp), to_dtype(dtype) if dtype is not None else dtypes.default_float, device)
    return (out.contiguous() if contiguous else out).reshape(shp).requires_grad_(kw.get("requires_grad"))
  @staticmethod
  def randn(*shape: Any, dtype: DType | str | None = None, contiguous: bool = True, **kw: Any) -> Tensor:
    """Standard normal by Box-Muller, computed into its own buffer unless contiguous=False (as Tensor.rand). Both compute
    a flat run of numbers, then reshape: the kernel's lanes don't depend on the shape's innermost axis (a 10 wide one took
    2 lanes, and sin and log one lane at a time)."""
    shp = _shape(shape)
    if unknown := kw.keys() - {"requires_grad", "device"}: raise TypeError(f"randn() got unexpected keyword arguments {sorted(unknown)}")
    u = _uniform(2 * prod(shp), dtypes.float32, kw.get("device")).reshape(2, prod(shp))
    r = (u[0] * (2 * math.pi)).cos() * ((1 - u[1]).log() * -2).sqrt()  # (tinygrad's order: its numbers for a seed)
    r = r.cast(to_dtype(dtype) if dtype is not None else dtypes.default_float)
    return (r.contiguous() if contiguous else r).reshape(shp).requires_grad_(kw.get("requires_grad"))
  @staticmethod
  def randint(*shape: Any, low: int = 0, high: int = 10, **kw: Any) -> Tensor:
    """Uniform integers in [low, high); low, high and the dtype must be integers (TypeError otherwise, as tinygrad)."""
    if not isinstance(low, int) or not isinstance(high, int): raise TypeError(f"randint takes int bounds, got {low!r} and {high!r}")
    if not dtypes.is_int(dt := to_dtype(kw.get("dtype") or dtypes.int32)): raise TypeError(f"randint makes integers, not {dt}")
    if high <= low: raise TensorValueError(f"randint needs low < high, got {low} and {high}")
    return (Tensor.rand(*shape, device=kw.get("device")) * (high - low)).floor().cast(dt) + low
  @staticmethod
  def uniform(*shape: Any, low: float = 0.0, high: float = 1.0, **kw: Any) -> Tensor:
    """Uniform in [low, high), drawn in float32 (or the float dtype asked for) and then cast: an integer dtype gives each
    integer in [low, high) with equal chance (floor, as numpy's randint; tinygrad truncates toward 0, doubling 0's).
    low >= high raises ValueError, as tinygrad's (PyTorch allows low == high)."""
    if not low < high: raise TensorValueError(f"uniform needs low < high, got {low} and {high}")
    rg, dt = kw.pop("requires_grad", None), to_dtype(kw.pop("dtype", None) or dtypes.default_float)
    x = Tensor.rand(*shape, dtype=dt if dtypes.is_float(dt) else dtypes.float32, **kw) * (high - low) + low
    return (x if dtypes.is_float(dt) else x.floor().cast(dt)).requires_grad_(rg)
  @staticmethod
  def normal(*shape: Any, mean: float = 0.0, std: float = 1.0, **kw: Any) -> Tensor:
    if std < 0: raise TensorValueError(f"normal needs std >= 0, got {std}")
    rg = kw.pop("requires_grad", None)
    return (Tensor.randn(*shape, **kw) * std + mean).requires_grad_(rg)
  @staticmethod
  def scaled_uniform(*shape: Any, **kw: Any) -> Tensor:
    return Tensor.uniform(*shape, low=-1.0, high=1.0, **kw) * (prod(_shape(shape)) ** -0.5)
  @staticmethod
  def glorot_uniform(*shape: Any, **kw: Any) -> Tensor:
    shp = _shape(shape)
    bound = math.sqrt(6 / (shp[0] + prod(shp[1:])))
    return Tensor.uniform(*shp, low=-bound, high=bound, **kw)
  @staticmethod
  def kaiming_uniform(*shape: Any, a: float = 0.01, **kw: Any) -> Tensor:
    shp = _shape(shape)
    bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(prod(shp[1:]))
    return Tensor.uniform(*shp, low=-bound, high=bound, **kw)
  @staticmethod
  def kaiming_normal(*shape: Any, a: float = 0.01, **kw: Any) -> Tensor:
    shp = _shape(shape)
    std = math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(prod(shp[1:]))
    return Tensor.normal(*shp, mean=0.0, std=std, **kw)
  def requires_grad_(self, requires_grad: bool | None = True) -> Tensor:
    """A constant made a leaf gets a buffer of its own (filled when first realized): equal constants are one UOp, and two
    of them as leaves (Tensor.full((3,), 3.5, requires_grad=True) twice) would otherwise share one gradient, their sum."""
    self._requires_grad = requires_grad
    if requires_grad:
      self._track_grad()
      if self.numel() and not any(u.op in (Ops.BUFFER, Ops.DEFINE_VAR) for u in self._uop.toposort()):
        n = self.numel()
        if self.is_sharded: self.uop = private_copy(self._uop)  # (pieces of their own on each device: a BatchNorm's sharded weight)
        else: self.uop = UOp(Ops.ASSIGN, self.dtype, (new_buffer(self.device, n, self.dtype), self._uop.reshape((n,)))).reshape(self.shape)
    return self
  @property
  def is_param(self) -> bool:
    """tinygrad 0.14's flag for what an optimizer updates (the rest, running statistics, it only realizes): in tg, a tensor
    not marked requires_grad=False."""
    return self._requires_grad is not False
  def is_param_(self, is_param: bool = True) -> Tensor:
    """is_param set: False is requires_grad=False; True makes a False None again (else leaves requires_grad as it is)."""
    if not is_param: return self.requires_grad_(False)
    return self.requires_grad_(None) if self._requires_grad is False else self
  def _track_grad(self) -> None:
    """Needs grad, a candidate of backward's. What an op computes from a tensor needing grad holds that tensor's buffer:
    no leaf check (requires_grad_'s walk of the whole graph, on every op, made a step quadratic in its length)."""
    self._requires_grad = True
    Tensor.live.grad[id(self)] = self

  # ***** dtypes *****
  def cast(self, dtype: DType | str) -> Tensor:
    dt = to_dtype(dtype)
    return self if dt == self.dtype else self._apply(lambda x: x.cast(dt))
  def bitcast(self, dtype: DType | str) -> Tensor:
    """The same bytes read as dtype. To a dtype of another item size the last axis scales by the ratio, little-endian,
    as PyTorch's view(dtype) and tinygrad; it must hold a whole number of the new items. No gradient flows through it:
    a tensor that requires one raises, as tinygrad (PyTorch allows float-to-float views)."""
    dt, old = to_dtype(dtype), self.dtype
    if self.requires_grad: raise TensorDtypeError("bitcast of a tensor that requires grad: no gradient goes through a bitcast; detach() it")
    if self._on_disk() and dt != old and (on_file := self._file_bytes(dt)) is not None: return on_file
    if dt.itemsize == old.itemsize: return self if dt == old else self._apply(lambda x: x.bitcast(dt))
    if not self.shape or (self.shape[-1] * old.itemsize) % dt.itemsize:
      raise TensorShapeError(f"bitcast of shape {shape_text(self.shape)} from {old} to {dt}: the last axis's {self.shape[-1:] or 'scalar'} x "
                             f"{old.itemsize} bytes isn't a whole number of {dt.itemsize}-byte items")
    # the regrouped value, in a CALL that names its source: a write into it (assign, setitem) goes there, as into a view
    return Tensor(UOp(Ops.CALL, dt, (self._bitcast_resized(dt).uop, self._uop), _bitcast_back))
  def _bitcast_resized(self, dt: DType) -> Tensor:
    """Bytes regrouped through unsigned ints: wider items OR together shifted parts, narrower ones take shifted slices."""
    old_u, new_u = to_dtype(f"uint{8 * self.dtype.itemsize}"), to_dtype(f"uint{8 * dt.itemsize}")
    u = self.bitcast(old_u)
    if dt.itemsize > self.dtype.itemsize:
      r = dt.itemsize // self.dtype.itemsize
      parts = u.reshape(*self.shape[:-1], self.shape[-1] // r, r).cast(new_u)
      wide = functools.reduce(Tensor.bitwise_or, [parts[..., i] << (8 * self.dtype.itemsize * i) for i in range(r)])
      return wide.bitcast(dt)
    r = self.dtype.itemsize // dt.itemsize
    return Tensor.stack(*[(u >> (8 * dt.itemsize * i)).cast(new_u) for i in range(r)], dim=-1).flatten(-2).bitcast(dt)
  def float(self) -> Tensor: return self.cast(dtypes.float32)
  def half(self) -> Tensor: return self.cast(dtypes.float16)
  def bfloat16(self) -> Tensor: return self.cast(dtypes.bfloat16)
  def double(self) -> Tensor: return self.cast(dtypes.float64)
  def short(self) -> Tensor: return self.cast(dtypes.int16)
  def int(self) -> Tensor: return self.cast(dtypes.int32)
  def long(self) -> Tensor: return self.cast(dtypes.int64)
  def bool(self) -> Tensor: return self.cast(dtypes.bool)
  def is_floating_point(self) -> bool: return dtypes.is_float(self.dtype)

  # ***** building the graph *****
  def _apply(self, fn: Callable[..., UOp], *others: Tensor) -> Tensor:
    """A new tensor from fn over the UOps of self and others; it needs grad if any input does."""
    out = Tensor(fn(self._uop, *[t._uop for t in others]))
    if (self._requires_grad or any(t._requires_grad for t in others)) and not Tensor.no_grad: out._track_grad()
    if self._weak and all(t._weak for t in others): out._weak = True
    return out
  def _const(self, v: Scalar, dtype: DType | None = None) -> Tensor:
    return Tensor(const_uop(v, dtype or self.dtype, self.device, self.shape))
  def _broadcasted(self, y: Tensor | Scalar, reverse: bool = False) -> tuple[Tensor, Tensor]:
    """Both operands with one dtype and one shape: Python scalars take the tensor's dtype (a float scalar makes an int
    tensor float), tensors promote by the lattice, shapes broadcast numpy-style."""
    x = self
    if not isinstance(y, Tensor):
      x, c = self._scalar_operand(y)
      (c := Tensor(c))._weak = True  # (a Python number)
      return (c, x) if reverse else (x, c)
    if y.device != x.device: raise RuntimeError(f"tensors on different devices: {x.device} and {y.device}; move one with .to()")
    dt = least_upper_dtype(x.dtype, y.dtype) if x._weak is y._weak else _meet(x, y)
    x, y = x.cast(dt), y.cast(dt)
    shape = broadcast_shape(x.shape, y.shape)
    x, y = x._broadcast_to(shape), y._broadcast_to(shape)
    return (y, x) if reverse else (x, y)
  def _scalar_operand(self, y: Scalar) -> tuple[Tensor, UOp]:
    """self cast to the dtype a Python scalar operand gives (see _broadcasted) and the scalar as a constant UOp of that
    dtype in self's shape (no broadcast steps: a tiny op's Python time)."""
    if isinstance(y, UOp) and y.dtype is not dtypes.index: raise TypeError("mix Tensors with Tensors, Python numbers or symbolic ints, not UOps")
    dt = self.dtype  # (_scalar_dtype, spelled out: every op with a number passes here)
    if isinstance(y, (float, np.floating)):
      if not dtypes.is_float(dt): dt = least_upper_float(dt)
    elif dt == dtypes.bool and not isinstance(y, (bool, np.bool_)):  # (2**40 is int64: a bool tensor < 2**40 was all False)
      dt = _int_dtype([y]) if isinstance(y, (int, np.integer)) else dtypes.default_int
    if dt is self.dtype: x = self
    else:  # the number's dtype, so the result is as weak as a number (tinygrad's: int8 + 0.5, then + half, is half)
      (x := self.cast(dt))._weak = True
    return x, symbolic_value(y, dt, x.device, x.shape) if isinstance(y, UOp) else const_uop(y, dt, x.device, x.shape)
  def _broadcast_to(self, shape: tuple[int, ...]) -> Tensor:
    if self.shape == shape: return self
    x = self.reshape((1,) * (len(shape) - self.ndim) + self.shape) if self.ndim < len(shape) else self
    return x.expand(shape)
  def _binop(self, op: Ops, y: Tensor | Scalar, reverse: bool = False) -> Tensor:
    """An ALU op whose result has its operands' dtype (they have one dtype and shape once broadcast, so UOp.alu's checks
    are skipped); a Python scalar operand becomes a constant UOp, no Tensor of its own."""
    if isinstance(y, Tensor):
      a, b = self._broadcasted(y, reverse)
      return a._apply(lambda x, z: UOp(op, x.dtype, (x, z)), b)
    x, c = self._scalar_operand(y)
    return x._apply(lambda u: UOp(op, u.dtype, (c, u) if reverse else (u, c)))

  # ***** elementwise *****
  def add(self, x: Tensor | Scalar, reverse: bool = False) -> Tensor: return self._binop(Ops.ADD, x, reverse)
  def mul(self, x: Tensor | Scalar, reverse: bool = False) -> Tensor: return self._binop(Ops.MUL, x, reverse)
  def sub(self, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
    a, b = self._broadcasted(x, reverse)
    return a + (-b)
  def div(self, x: Tensor | Scalar, reverse: bool = False, rounding_mode: str | None = None) -> Tensor:
    if rounding_mode not in (None, "trunc", "floor"): raise TensorValueError(f"rounding_mode is None, 'trunc' or 'floor', not {rounding_mode!r}")
    if rounding_mode is None and not isinstance(x, Tensor) and not dtypes.is_float(self.dtype):  # true division by the scalar
      self = self.cast(least_upper_float(self.dtype))  # itself, as tinygrad and PyTorch: uint8 / -3 divided by -3 cast to uint8, 253
    a, b = self._broadcasted(x, reverse)
    if rounding_mode is not None and narrow_float(a.dtype): return a.float().div(b.float(), rounding_mode=rounding_mode).cast(a.dtype)
    if rounding_mode == "trunc": return a._apply(lambda p, q: p.alu(Ops.IDIV, q), b) if dtypes.is_int(a.dtype) else (a / b).trunc()
    if rounding_mode == "floor": return a._floordiv(b)
    if not dtypes.is_float(a.dtype): a, b = a.cast(least_upper_float(a.dtype)), b.cast(least_upper_float(b.dtype))
    return a._apply(lambda p, q: p.alu(Ops.FDIV, q), b)
  def _floordiv(self, b: Tensor) -> Tensor:
    if not dtypes.is_int(self.dtype): return (self / b).floor()
    q = self._apply(lambda p, r: p.alu(Ops.IDIV, r), b)
    rem = self - q * b
    return q - (rem.ne(0) & ((rem < 0).ne(b < 0))).cast(q.dtype)
  def mod(self, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
    """Python's remainder (the divisor's sign); half, bfloat16 and fp8 in float32, rounded once, as PyTorch (a quotient
    rounded to half first made -75 % 1.5 0.4375, not 0.4531)."""
    a, b = self._broadcasted(x, reverse)
    if narrow_float(a.dtype): return a.float().mod(b.float()).cast(a.dtype)
    return a - a._floordiv(b) * b
  def fmod(self, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
    """The remainder whose sign follows the dividend: a - trunc(a / b) * b, as tinygrad. PyTorch's float fmod is C's,
    exact where this rounds: they differ for quotients past 2^24, an infinite b (3 here nan) and the sign of a zero."""
    a, b = self._broadcasted(x, reverse)
    if narrow_float(a.dtype): return a.float().fmod(b.float()).cast(a.dtype)
    return a - a.div(b, rounding_mode="trunc") * b
  def neg(self) -> Tensor: return self.logical_not() if self.dtype == dtypes.bool else self * -1
  def pow(self, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
    """C's pow (numpy's and PyTorch's), special values included. An integer tensor to an int power stays integer, and a
    negative Python int power of it raises (PyTorch and tinygrad do). Half, bfloat16 and fp8 are raised in float32 and
    rounded once, as PyTorch does (b log2|a| in half was 11 ulps off)."""
    if not reverse and isinstance(x, int) and not isinstance(x, bool) and not dtypes.is_float(self.dtype):
      if x < 0: raise TensorDtypeError(f"an integer tensor to the negative power {x}: cast it to float first")
      return (self.cast(_int_dtype([x])) if self.dtype == dtypes.bool else self)._int_pow(x)  # (a bool's is the number's int)
    if not reverse and narrow_float(self.dtype) and isinstance(x, (int, float)) and not isinstance(x, bool):
      return self.float().pow(x).cast(self.dtype)
    if not reverse and isinstance(x, (int, float)) and not isinstance(x, bool) and float(x).is_integer() and 0 <= x <= 4 and \
        (dtypes.is_float(self.dtype) or isinstance(x, int)):
      # x ** 0 is 1 (also for NaN and inf) and stays in the graph: its gradient is 0, not "no tensor requires grad"
      ret = (self.eq(self) | self.ne(self)).cast(self.dtype) if dtypes.is_float(self.dtype) or x == 0 else None
      for _ in range(int(x)): ret = self if ret is None else ret * self
      return ret if ret is not None else self.ones_like()
    if not reverse and isinstance(x, float) and abs(x) == 0.5 and dtypes.is_float(self.dtype):  # sqrt's special values, as
      return self.sqrt() if x > 0 else self.sqrt().reciprocal()  # PyTorch's and tinygrad's: (-inf) ** 0.5 is NaN, (-0.0) ** 0.5 -0.0
    a, b = self._broadcasted(x, reverse)
    if a.dtype == dtypes.bool: return a | b.logical_not()  # (x ** False is True, x ** True is x: PyTorch's and tinygrad's)
    if not dtypes.is_float(a.dtype): return a._int_pow(b)
    if narrow_float(a.dtype): return a.float().pow(b.float()).cast(a.dtype)
    # |a|**b as exp2(b log2|a|), which gets 0 and inf bases and infinite powers right by itself; 1 where C gives 1 whatever
    # the other operand is (a == 1, b == 0) and for -1 to an infinite power; the sign bit of a (-0.0's too) for an odd
    # integer b; NaN for a finite negative base to a non-integer power (an infinite b counts as an even integer)
    mag = (a.eq(1) | b.eq(0) | (a.eq(-1) & b.isinf())).where(1.0, (b * a.abs().log2()).exp2())
    is_int, half = b.eq(b.trunc()), b * 0.5
    odd = is_int & half.ne(half.trunc())
    ret = ((a < 0) & (a > -math.inf) & is_int.logical_not()).where(math.nan, (_signbit(a) & odd).where(-mag, mag))

    def grad_fxn(g: UOp, call: UOp) -> tuple[UOp, UOp]:
      """PyTorch's and tinygrad's: d/da = b * a**(b - 1) (0 where b == 0; inf at a == 0 for 0 < b < 1, nan for a negative
      a and a fractional b), d/db = a**b * ln(a) (at a == 0: 0, -inf for b < 0). The where-branches above would give 0."""
      gt, x, e = Tensor(g), Tensor(call.src[1]), Tensor(call.src[2])
      da = e.eq(0).where(0.0, e * x.pow(e - 1))
      db = x.eq(0).where((e < 0).where(-math.inf, 0.0), Tensor(call.src[0]) * x.log())
      return (gt * da).uop, (gt * db).uop
    return Tensor(UOp(Ops.CALL, ret.dtype, (ret.detach().uop, a.uop, b.uop), grad_fxn))
  def _int_pow(self, e: Tensor | int) -> Tensor:
    """Exact integer power by squaring over the bits of e (wrapping like C on overflow); a negative e gives the
    integer part of 1/self**-e: 1 for a base of 1, +-1 for -1, 0 otherwise."""
    if isinstance(e, int) and e >= 0:  # the bits are known: multiply only where they are set
      ret, base = self.ones_like(), self
      for i in range(e.bit_length()):
        if e >> i & 1: ret = ret * base
        if e >> (i + 1): base = base * base
      return ret
    if isinstance(e, int): e = self._const(e)
    ret, base, bits = self.ones_like(), self, e.abs()
    for _ in range(e.dtype.itemsize * 8 - (0 if dtypes.is_unsigned(e.dtype) else 1)):
      ret = (bits & 1).ne(0).where(ret * base, ret)
      base, bits = base * base, bits >> 1
    odd = (e & 1).ne(0)
    neg_e = self.eq(1).where(1, self.eq(-1).where(odd.where(-1, 1), 0)).cast(self.dtype)
    return (e < 0).where(neg_e, ret)
  def __add__(self, x: Any) -> Tensor: return self.add(x)
  def __radd__(self, x: Any) -> Tensor: return self.add(x, True)
  def __sub__(self, x: Any) -> Tensor: return self.sub(x)
  def __rsub__(self, x: Any) -> Tensor: return self.sub(x, True)
  def __mul__(self, x: Any) -> Tensor: return self.mul(x)
  def __rmul__(self, x: Any) -> Tensor: return self.mul(x, True)
  def __truediv__(self, x: Any) -> Tensor: return self.div(x)
  def __rtruediv__(self, x: Any) -> Tensor: return self.div(x, True)
  def __floordiv__(self, x: Any) -> Tensor: return self.div(x, rounding_mode="floor")
  def __rfloordiv__(self, x: Any) -> Tensor: return self.div(x, True, rounding_mode="floor")
  def __mod__(self, x: Any) -> Tensor: return self.mod(x)
  def __rmod__(self, x: Any) -> Tensor: return self.mod(x, True)
  def __pow__(self, x: Any) -> Tensor: return self.pow(x)
  def __rpow__(self, x: Any) -> Tensor: return self.pow(x, True)
  def __neg__(self) -> Tensor: return self.neg()
  def __matmul__(self, x: Tensor) -> Tensor: return self.matmul(x)
  def __rmatmul__(self, x: Tensor) -> Tensor: return x.matmul(self)
  def __and__(self, x: Any) -> Tensor: return self.bitwise_and(x)
  def __rand__(self, x: Any) -> Tensor: return self.bitwise_and(x)
  def __or__(self, x: Any) -> Tensor: return self.bitwise_or(x)
  def __ror__(self, x: Any) -> Tensor: return self.bitwise_or(x)
  def __xor__(self, x: Any) -> Tensor: return self.bitwise_xor(x)
  def __rxor__(self, x: Any) -> Tensor: return self.bitwise_xor(x)
  def __invert__(self) -> Tensor: return self.bitwise_not()
  def __lshift__(self, x: int | Tensor) -> Tensor: return self.lshift(x)
  def __rshift__(self, x: int | Tensor) -> Tensor: return self.rshift(x)
  def __iadd__(self, x: Any) -> Tensor: return self.assign(self + x)
  def __isub__(self, x: Any) -> Tensor: return self.assign(self - x)
  def __imul__(self, x: Any) -> Tensor: return self.assign(self * x)
  def __itruediv__(self, x: Any) -> Tensor: return self.assign(self / x)
  def __lt__(self, x: Any) -> Tensor: return self._cmp(Ops.CMPLT, x)
  def __gt__(self, x: Any) -> Tensor: return self._cmp(Ops.CMPLT, x, True)
  def __ge__(self, x: Any) -> Tensor: return (self > x) | (self == x)  # not "not <": a comparison with NaN is false
  def __le__(self, x: Any) -> Tensor: return (self < x) | (self == x)
  def __eq__(self, x: Any) -> Tensor: return self._cmp(Ops.CMPEQ, x)  # type: ignore[override]
  def __ne__(self, x: Any) -> Tensor: return self._cmp(Ops.CMPNE, x)  # type: ignore[override]
  def eq(self, x: Any) -> Tensor: return self == x
  def ne(self, x: Any) -> Tensor: return self != x
  def _cmp(self, op: Ops, x: Any, reverse: bool = False) -> Tensor:
    a, b = self._broadcasted(x, reverse)
    return Tensor(UOp(op, dtypes.bool, (a.uop, b.uop)))
  def _bitwise(self, op: Ops, x: Any, reverse: bool = False) -> Tensor:
    """reverse (tinygrad's): x is the left operand (and, or and xor commute: only the graph's operand order changes)."""
    if dtypes.is_float(self.dtype): raise TensorDtypeError(f"bitwise {op.name.lower()} needs an integer or bool tensor, got {self.dtype}")
    return self._binop(op, x, reverse)
  def bitwise_and(self, x: Any, reverse: bool = False) -> Tensor: return self._bitwise(Ops.AND, x, reverse)
  def bitwise_or(self, x: Any, reverse: bool = False) -> Tensor: return self._bitwise(Ops.OR, x, reverse)
  def bitwise_xor(self, x: Any, reverse: bool = False) -> Tensor: return self._bitwise(Ops.XOR, x, reverse)
  def bitwise_not(self) -> Tensor:
    if dtypes.is_float(self.dtype): raise TensorDtypeError(f"bitwise not (~) needs an integer or bool tensor, got {self.dtype}")
    return self.logical_not() if self.dtype == dtypes.bool else self.bitwise_xor(-1)
  def logical_not(self) -> Tensor: return Tensor(UOp(Ops.CMPNE, dtypes.bool, (self.bool().uop, self._const(True, dtypes.bool).uop)))
  def logical_and(self, x: Any) -> Tensor: return self.bool().bitwise_and(x if not isinstance(x, Tensor) else x.bool())
  def logical_or(self, x: Any) -> Tensor: return self.bool().bitwise_or(x if not isinstance(x, Tensor) else x.bool())
  def logical_xor(self, x: Any) -> Tensor: return self.bool().bitwise_xor(x if not isinstance(x, Tensor) else x.bool())
  def lshift(self, x: int | Tensor) -> Tensor:
    """self * 2**x, wrapping: by an int a multiply; elementwise by an integer tensor a shift, where an amount outside
    0..bits-1 gives 0 (as 2**x wraps to; C leaves such a shift undefined). (2**x of a tensor was 64 squarings a shift.)"""
    if not dtypes.is_int(self.dtype): raise TensorDtypeError(f"shift needs an integer tensor, got {self.dtype}")
    if not isinstance(x, Tensor): return self * (2 ** x)
    a, b = self._broadcasted(x)
    bits = a.dtype.itemsize * 8
    shifted = a._apply(lambda p, q: p.alu(Ops.SHL, q), b & (bits - 1))
    return ((b >= 0) & (b < bits)).where(shifted, 0)
  def rshift(self, x: int | Tensor) -> Tensor:
    """An arithmetic shift for signed integers (-128 >> 1 is -64), by an int or elementwise by an integer tensor."""
    if not dtypes.is_int(self.dtype): raise TensorDtypeError(f"shift needs an integer tensor, got {self.dtype}")
    if not isinstance(x, Tensor): return self._apply(lambda u: u.alu(Ops.SHR, u.const_like(x)))
    a, b = self._broadcasted(x)
    return a._apply(lambda p, q: p.alu(Ops.SHR, q), b)
  def where(self, x: Tensor | Scalar, y: Tensor | Scalar) -> Tensor:
    """self ? x : y, broadcasting all three."""
    if isinstance(x, Tensor) and isinstance(y, Tensor): x, y = x._broadcasted(y)
    elif isinstance(x, Tensor): x, y = x._broadcasted(y)
    elif isinstance(y, Tensor): y, x = y._broadcasted(x)
    else: x, y = Tensor(x, self.device)._broadcasted(y)
    if x.device != self.device:  # (a sharded condition with values on one device made a shape-less mix of both)
      raise RuntimeError(f"tensors on different devices: {self.device} and {x.device}; move one with .to()")
    shape = broadcast_shape(self.shape, x.shape)
    c, x, y = self.bool()._broadcast_to(shape), x._broadcast_to(shape), y._broadcast_to(shape)
    out = c._apply(lambda cu, xu, yu: UOp(Ops.WHERE, xu.dtype, (cu, xu, yu)), x, y)
    out._weak = x._weak and y._weak  # (of its values, whatever the condition)
    return out
  def maximum(self, x: Tensor | Scalar) -> Tensor:
    a, b = self._broadcasted(x)
    return a._apply(lambda p, q: p.alu(Ops.MAX, q), b) if a.dtype != dtypes.bool else a | b
  def minimum(self, x: Tensor | Scalar) -> Tensor:
    a, b = self._broadcasted(x)
    return a & b if a.dtype == dtypes.bool else a._flipped().maximum(b._flipped())._flipped()
  def _flipped(self) -> Tensor:
    """An order-reversing map that is its own inverse and can't overflow: -x for floats, ~x for signed integers (-INT_MIN
    overflows), max - x for unsigned, not x for bools. min, minimum and argmin are max, maximum and argmax through it."""
    if self.dtype == dtypes.bool: return self.logical_not()
    if dtypes.is_float(self.dtype): return -self
    return dtypes.max(self.dtype) - self if dtypes.is_unsigned(self.dtype) else ~self
  def clip(self, min_: Scalar | Tensor | None = None, max_: Scalar | Tensor | None = None) -> Tensor:
    """An int bound an integer tensor's dtype can't hold saturates to the dtype's range, as PyTorch's clamp: a uint8 clipped
    to [-10, 10] keeps its 7 (the bound cast to uint8 would wrap to 246 and make every element 10). A bound replaces only
    the values strictly past it, so the gradient is 1 at the bounds, as tinygrad's (PyTorch 2.x gives 0 there) and NaN
    stays NaN."""
    if min_ is None and max_ is None: raise TensorValueError("clip needs a min or a max")
    if dtypes.is_int(self.dtype):
      lo, hi = dtypes.min(self.dtype), dtypes.max(self.dtype)
      min_, max_ = (min(max(b, lo), hi) if type(b) is int else b for b in (min_, max_))
    ret = self
    if min_ is not None: ret, lo = ret._broadcasted(min_); ret = (ret < lo).where(lo, ret)  # noqa: E702
    if max_ is not None: ret, hi = ret._broadcasted(max_); ret = (ret > hi).where(hi, ret)  # noqa: E702
    return ret
  clamp = clip

  def _unary(self, op: Ops) -> Tensor:
    x = self if dtypes.is_float(self.dtype) else self.cast(least_upper_float(self.dtype))
    return x._apply(lambda u: u.alu(op))
  def exp2(self) -> Tensor: return self._unary(Ops.EXP2)
  def log2(self) -> Tensor: return self._unary(Ops.LOG2)
  @in_float32
  def exp(self) -> Tensor: return (self * (1 / math.log(2))).exp2() if dtypes.is_float(self.dtype) else self.float().exp()
  @in_float32
  def log(self) -> Tensor: return self.log2() * math.log(2)
  def sqrt(self) -> Tensor: return self._unary(Ops.SQRT)
  @in_float32
  def rsqrt(self) -> Tensor: return self.sqrt().reciprocal()
  def sin(self) -> Tensor: return self._unary(Ops.SIN)
  @in_float32
  def cos(self) -> Tensor: return (self.float() if not dtypes.is_float(self.dtype) else self).mul(-1).add(math.pi / 2).sin()
  @in_float32
  def tan(self) -> Tensor: return self.sin() / self.cos()
  def reciprocal(self) -> Tensor: return self._unary(Ops.RECIPROCAL)
  def trunc(self) -> Tensor: return self._apply(lambda u: u.alu(Ops.TRUNC)) if dtypes.is_float(self.dtype) else self
  def floor(self) -> Tensor:
    if not dtypes.is_float(self.dtype): return self
    t = self.trunc()
    return (self < t).where(t - 1, t)
  def ceil(self) -> Tensor:
    if not dtypes.is_float(self.dtype): return self
    t = self.trunc()
    return (self > t).where(t + 1, t)
  def round(self) -> Tensor:
    """Round half to even (as numpy and PyTorch)."""
    if not dtypes.is_float(self.dtype): return self
    f = (self + 0.5).floor()
    tie = (f - self).eq(0.5) & ((f / 2).floor() * 2).ne(f)
    return tie.where(f - 1, f)
  def abs(self) -> Tensor:
    """|x|; its gradient at 0 is 0 (as sign(0)), and abs(-0.0) is +0.0."""
    if dtypes.is_unsigned(self.dtype) or self.dtype == dtypes.bool: return self
    return self.eq(0).where(0, (self < 0).where(-self, self))
  def sign(self) -> Tensor:
    """-1, 0 or 1; NaN stays NaN (as PyTorch and tinygrad)."""
    if self.dtype == dtypes.bool: return self
    ret = (self > 0).cast(self.dtype) - (self < 0).cast(self.dtype)
    return self.isnan().where(self, ret) if dtypes.is_float(self.dtype) else ret
  def square(self) -> Tensor: return self * self
  def isnan(self) -> Tensor: return self != self
  def isinf(self, detect_positive: bool = True, detect_negative: bool = True) -> Tensor:
    return (self.eq(math.inf) & detect_positive) | (self.eq(-math.inf) & detect_negative)
  def isfinite(self) -> Tensor: return (self.isinf() | self.isnan()).logical_not()
  def lerp(self, end: Tensor, weight: Tensor | float) -> Tensor: return self + (end - self) * weight

  # ***** activations *****
  def relu(self) -> Tensor: return (self > 0).where(self, 0)
  def relu6(self) -> Tensor:
    """min(relu(x), 6), as a where: relu(x) - relu(x - 6) (tinygrad's; the same gradient) is inf - inf = nan at inf."""
    return (self > 6).where(6, self.relu())
  def leaky_relu(self, neg_slope: float = 0.01) -> Tensor: return (self > 0).where(self, self * neg_slope)
  @in_float32
  def elu(self, alpha: float = 1.0) -> Tensor:
    """x above 0, else alpha expm1(x): the gradient at 0 is alpha and NaN stays NaN, as PyTorch (tinygrad's difference
    of relus has gradient 0 at 0, where elu is smooth for alpha 1, and gives 0 for NaN)."""
    return (self > 0).where(self, self.expm1() * alpha)
  def celu(self, alpha: float = 1.0) -> Tensor: return self.maximum(0) + (alpha * ((self / alpha).exp() - 1)).minimum(0)
  def selu(self, alpha: float = 1.67326, gamma: float = 1.0507) -> Tensor: return gamma * (self >= 0).where(self, alpha * (self.exp() - 1))
  @in_float32
  def sigmoid(self) -> Tensor: return (1 + (self * (-1 / math.log(2))).exp2()).reciprocal()
  def hardsigmoid(self, alpha: float = 1 / 6, beta: float = 0.5) -> Tensor:
    """alpha x + beta clipped to [0, 1], as relu6: finite at inf (tinygrad's difference of relus is nan there)."""
    y = alpha * self + beta
    return (y > 1).where(1, y.relu())
  def hardtanh(self, min_val: float = -1, max_val: float = 1) -> Tensor: return self.clip(min_val, max_val)
  @in_float32
  def gelu(self) -> Tensor:
    """tanh's approximation x (1 + tanh(u)) / 2, u = sqrt(2/pi) (x + 0.044715 x^3), as x sigmoid(2u) (the same function)."""
    return self * (2 * math.sqrt(2 / math.pi) * (self + 0.044715 * self * self * self)).sigmoid()
  def quick_gelu(self) -> Tensor: return self * (self * 1.702).sigmoid()
  def silu(self) -> Tensor: return self * self.sigmoid()
  swish = silu
  @in_float32
  def softplus(self, beta: float = 1.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, as max(bx, 0) + log1p(exp(-|bx|)): no overflow for large x (softplus(350) is 350), and
    a very negative x keeps its digits (log(1 + 1e-9) is 0)."""
    bx = self * beta
    return (1 / beta) * (bx.maximum(0) + log1p((-bx.abs()).exp()))
  @in_float32
  def mish(self) -> Tensor: return self * self.softplus().tanh()
  def softsign(self) -> Tensor: return self / (1 + self.abs())
  def hardswish(self) -> Tensor:
    """x relu6(x + 3) / 6, as written: -0.0 below -3 and NaN at -inf (-inf * 0), as PyTorch and tinygrad both give."""
    return self * (self + 3).relu6() * (1 / 6)
  @in_float32
  def logsigmoid(self) -> Tensor: return -(-self).softplus()

  # ***** reductions *****
  def _reduce(self, op: Ops, axis: int | Sequence[int] | None, keepdim: bool) -> Tensor:
    """A reduce over axis. Its result is no longer a Python number's (_weak), as tinygrad's: Tensor(1.0).expand(3).sum()
    + a half tensor is float32 (PyTorch's 0-d rule gives half)."""
    axes = self._resolve_axes(axis)
    ret = self._apply(lambda u: UOp(Ops.REDUCE_AXIS, u.dtype, (u,), (op, axes))) if axes else self
    if axes: ret._weak = False
    return ret if keepdim else ret.reshape(self._reduced_shape(axes, False))
  def _resolve_axes(self, axis: int | Sequence[int] | None) -> tuple[int, ...]:
    if axis is None: return tuple(range(self.ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    resolved = {self._axis(a) for a in axes}
    return tuple(sorted(resolved)) if self.ndim else ()  # a 0-d tensor takes dim 0 or -1 and has nothing to reduce
  def _axis(self, a: int) -> int:
    if not -max(self.ndim, 1) <= a < max(self.ndim, 1): raise IndexError(f"axis {a} is out of range for a tensor of {self.ndim} dimensions")
    return a + self.ndim if a < 0 else a
  def _reduced_shape(self, axes: tuple[int, ...], keepdim: bool) -> tuple[int, ...]:
    return tuple(1 if i in axes else s for i, s in enumerate(self.shape)) if keepdim else tuple(s for i, s in enumerate(self.shape) if i not in axes)
  def sum(self, axis: int | Sequence[int] | None = None, keepdim: bool = False, acc_dtype: DType | None = None,
          dtype: DType | str | None = None) -> Tensor:
    """dtype (a dtype or its name) is the result's, and the accumulator's if no acc_dtype is given."""
    dt = to_dtype(dtype) if dtype is not None else None
    acc = acc_dtype or dt or sum_acc_dtype(self.dtype)
    ret = self.cast(acc)._staged(Ops.ADD, self._resolve_axes(axis), keepdim)
    return ret.cast(dt or (self.dtype if dtypes.is_float(self.dtype) and acc_dtype is None else acc))
  def _staged(self, op: Ops, axes: tuple[int, ...], keepdim: bool) -> Tensor:
    """A long reduce (more than 2^16 elements per result) runs in stages of 4096. A float sum always does: its rounding
    error grows with the length of one stage (3e8 float32 ones summed in one go stop at 2^24 per accumulator). A sum,
    product or max to fewer than 16 values does too, and realizes the stage results: that kernel has a result per stage, so
    it runs on every core, where one kernel reducing everything to one value runs on one. From 1024 stages on their count is
    padded to a multiple of 64 (at most 6% more): the next level then adds them in 64 independent accumulators (ACCUM),
    not one long chain (20M floats: 2e-8 relative error instead of 1e-6). No op that would do nothing is built: a 16M sum
    takes 2 ms, and its Python, run with the caches the last call's read flushed, is a fifth of that."""
    shape = self.shape
    n = prod(shape[a] for a in axes) if all_int(shape) else 0
    few = all_int(shape) and prod(s for i, s in enumerate(shape) if i not in axes) < _FEW_OUTPUTS
    if n <= 1 << 16 or not ((op is Ops.ADD and dtypes.is_float(self.dtype)) or (op in (Ops.ADD, Ops.MUL, Ops.MAX) and few)):
      return self._reduce(op, axes, keepdim)
    keep = [i for i in range(self.ndim) if i not in axes]
    x = self if keep + list(axes) == list(range(self.ndim)) else self.permute(keep + list(axes))
    x = x if x.ndim == len(keep) + 1 else x.reshape(*[shape[i] for i in keep], n)
    m = cdiv(n, _STAGE)
    if m >= 1024: m = round_up(m, 64)
    if m * _STAGE > n: x = x.pad([(0, 0)] * len(keep) + [(0, m * _STAGE - n)], value={Ops.ADD: 0, Ops.MUL: 1}.get(op, dtypes.min(self.dtype)))
    x = x.reshape(*x.shape[:-1], m, _STAGE)._reduce(op, (x.ndim,), False)
    x = (x.contiguous() if few else x)._staged(op, (x.ndim - 1,), False)
    out = x if x.shape == (shp := self._reduced_shape(axes, keepdim)) else x.reshape(shp)
    return self._shared_max(out, axes) if op is Ops.MAX else out
  def _shared_max(self, out: Tensor, axes: tuple[int, ...]) -> Tensor:
    """out, a staged max of self, with the gradient shared equally among all of self's maxima: through the stages, a
    stage's share went to its own maxima, so of three tied maxima two in one stage got 1/4 each and the third 1/2."""
    kept = self._reduced_shape(axes, True)  # (a value: the closure holding self kept the tensor reduced alive)
    def grad_fxn(g: UOp, call: UOp) -> tuple[UOp]:
      x, m = Tensor(call.src[1]), Tensor(call.src[0]).reshape(kept)
      hit = x == m
      acc = sum_acc_dtype(g.dtype)  # (the count of 70,000 ties is inf in half)
      share = Tensor(g).reshape(m.shape).cast(acc) / hit.sum(axes, keepdim=True, dtype=acc)
      return ((hit.where(share, 0)).cast(g.dtype).uop,)
    return Tensor(UOp(Ops.CALL, out.dtype, (out.detach().uop, self.uop), grad_fxn))
  def prod(self, axis: int | Sequence[int] | None = None, keepdim: bool = False, acc_dtype: DType | None = None,
           dtype: DType | str | None = None) -> Tensor:
    """dtype: self is cast to it first (PyTorch's and tinygrad's meaning), so the product is computed in it."""
    dt = to_dtype(dtype) if dtype is not None else None
    x = self.cast(acc_dtype or dt or self.dtype)
    return x._staged(Ops.MUL, x._resolve_axes(axis), keepdim).cast(dt or acc_dtype or self.dtype)
  def max(self, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    return self._staged(Ops.MAX, self._resolve_axes(axis), keepdim)
  def min(self, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    return self._flipped().max(axis, keepdim)._flipped()
  def mean(self, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    x = self if dtypes.is_float(self.dtype) else self.cast(least_upper_float(self.dtype))
    n = prod(s for i, s in enumerate(self.shape) if i in self._resolve_axes(axis))
    return x.sum(axis, keepdim).div(n) if n else x.sum(axis, keepdim) * math.nan
  def var(self, axis: int | Sequence[int] | None = None, keepdim: bool = False, correction: int = 1) -> Tensor:
    n = prod(s for i, s in enumerate(self.shape) if i in self._resolve_axes(axis))
    sq = (self - self.mean(axis, keepdim=True)).square()
    return sq.sum(axis, keepdim) / max(0, n - correction)
  def std(self, axis: int | Sequence[int] | None = None, keepdim: bool = False, correction: int = 1) -> Tensor:
    """The root of var; where var is 0 its gradient is 0, as PyTorch's (sqrt's inf times var's 0 was nan)."""
    v = self.var(axis, keepdim, correction)
    return v.eq(0).where(0, v.eq(0).where(1, v).sqrt())
  def var_mean(self, axis: int | Sequence[int] | None = None, keepdim: bool = False, correction: int = 1) -> tuple[Tensor, Tensor]:
    return self.var(axis, keepdim, correction), self.mean(axis, keepdim)
  def std_mean(self, axis: int | Sequence[int] | None = None, keepdim: bool = False, correction: int = 1) -> tuple[Tensor, Tensor]:
    return self.std(axis, keepdim, correction), self.mean(axis, keepdim)
  def any(self, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor: return self.bool().max(axis, keepdim)
  def all(self, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor: return self.logical_not().any(axis, keepdim).logical_not()
  def _softmax(self, axis: int, dtype: DType | str | None) -> tuple[Tensor, Tensor, Tensor]:
    """dtype: self is cast to it first (tinygrad's and PyTorch's softmax(dtype=)); integers become floats first (x - max
    in int8 wrapped)."""
    x = self.cast(dtype) if dtype is not None else self if dtypes.is_float(self.dtype) else self.cast(least_upper_float(self.dtype))
    m = x - x.max(axis, keepdim=True).detach()
    e = m.exp()
    return m, e, e.sum(axis, keepdim=True)
  def softmax(self, axis: int = -1, dtype: DType | str | None = None) -> Tensor:
    _, e, ss = self._softmax(axis, dtype)
    return e / ss
  def softmin(self, axis: int = -1, dtype: DType | str | None = None) -> Tensor: return (-self).softmax(axis, dtype)
  def log_softmax(self, axis: int = -1, dtype: DType | str | None = None) -> Tensor:
    m, _, ss = self._softmax(axis, dtype)
    return m - ss.log()
  def logsumexp(self, axis: int | None = None, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))), shifted by the maximum; an infinite maximum shifts by 0, so a row of -inf gives -inf and one
    holding inf gives inf (PyTorch's; tinygrad's gives nan: -inf - -inf). Integers become floats first, as PyTorch (x - max
    in int8 wrapped around to inf)."""
    if not dtypes.is_float(self.dtype): return self.cast(least_upper_float(self.dtype)).logsumexp(axis, keepdim)
    m = self.max(axis, keepdim=True)
    m = m.isinf().where(0, m)
    return (self - m).exp().sum(axis, keepdim=True).log().add(m).reshape(self.max(axis, keepdim).shape)
  def argmax(self, axis: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the first maximum; a NaN counts as the maximum (as numpy and PyTorch). One pass where the values
    have an order-preserving int32 key (_order_key): the max of key * 2**32 + (n - 1 - i) is the greatest value's first index i.
    Else two: the max, then the biggest n - i over the hits i. An empty axis has no index to give: IndexError, as PyTorch."""
    if axis is None: return self.flatten().argmax(0)
    axis = self._axis(axis)
    n = self.shape[axis]
    if type(n) is int and n == 0: raise IndexError(f"argmax/argmin over an axis of size 0 (shape {shape_text(self.shape)}): it has no elements")
    shape = (n,) + (1,) * (self.ndim - axis - 1)
    if (key := self._order_key()) is not None and 0 < n < 1 << 32:
      rest = Tensor.arange(n - 1, -1, -1, device=self.device, dtype=dtypes.int64).reshape(shape)  # n - 1 - i
      best = (key.cast(dtypes.int64) * (1 << 32) + rest).max(axis, keepdim)
      return (n - 1 - (best & 0xFFFFFFFF)).cast(dtypes.int32)
    idx = Tensor.arange(n, 0, -1, device=self.device).reshape(shape)
    hit = self.eq(self.max(axis, keepdim=True))
    # nothing equals a NaN max, and the max is NaN exactly when there is a NaN: then the NaNs are the hits
    if dtypes.is_float(self.dtype): hit = hit | self.isnan()
    return (n - hit.where(idx, 0).max(axis, keepdim)).cast(dtypes.int32)
  def _order_key(self) -> Tensor | None:
    """An int32 per value, ordered as the values with equal values equal (-0 and 0 too) and every NaN above +inf; None
    for values that don't fit (64-bit, uint32). A float's bits read as a sign-magnitude integer: negatives become -m."""
    if dtypes.is_float(self.dtype):
      if self.dtype.itemsize > 4: return None
      b = self.detach().cast(dtypes.float32).bitcast(dtypes.int32)
      return self.isnan().where(dtypes.max(dtypes.int32), (b < 0).where(-(b & 0x7FFFFFFF), b))
    return None if self.dtype.itemsize > 4 or self.dtype == dtypes.uint32 else self.cast(dtypes.int32)
  def argmin(self, axis: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the first minimum; a NaN counts as the minimum (as numpy and PyTorch)."""
    return self._flipped().argmax(axis, keepdim)
  def cumsum(self, axis: int = 0) -> Tensor:
    """Running sum along an axis (a masked sum of each prefix, in blocks: ordering.scan)."""
    axis = self._axis(axis)
    if self.ndim == 0: return self
    return self.transpose(axis, -1)._scan(lambda p: p._prefix(0).sum(-1), lambda a, b: a + b, 0).transpose(axis, -1)

  # ***** linear algebra *****
  def dot(self, w: Tensor, dtype: DType | str | None = None) -> Tensor: return self.matmul(w, dtype=dtype)
  def matmul(self, w: Tensor, reverse: bool = False, dtype: DType | str | None = None) -> Tensor:
    """Batched, broadcasting matrix product: a multiply and a sum that fuse into one kernel. dtype (tinygrad's): the
    products, in the operands' dtype, are summed in it, and the result is of it (a half matmul summed in float32)."""
    x, w = (w, self) if reverse else (self, w)
    if x.ndim == 0 or w.ndim == 0:
      raise TensorShapeError(f"matmul needs at least 1-d tensors, got shapes {shape_text(x.shape)} and {shape_text(w.shape)}")
    if not same_size(x.shape[-1], w.shape[-2 if w.ndim > 1 else 0]):
      raise TensorShapeError(f"matmul shapes {shape_text(x.shape)} and {shape_text(w.shape)} don't match: "
                             f"{dim_text(x.shape[-1])} != {dim_text(w.shape[-2 if w.ndim > 1 else 0])}")
    dt = _meet(x, w)
    x, w = x.cast(dt), w.cast(dt)
    if dtype is not None and (acc := to_dtype(dtype)) != dt: return x._product(w, acc)
    if (kb := _vecmat_block(x, w)) is not None: return _blocked_vecmat(x, w, kb)
    if _transposed_rows(x, w): x = x.contiguous()
    if x.ndim >= 2 and w.ndim >= 2 and (p := _pack_panel(x, w)) is not None:
      if w.ndim > 2: return x._product(_packed(w, p))
      return _packed_product(x, w, p)
    return x._product(w)
  def _product(self, w: Tensor, acc: DType | None = None) -> Tensor:
    """self @ w as the multiply and sum (shapes checked, dtypes matched, no packing); acc: summed in and of that dtype."""
    x, dt = self, self.dtype
    x_ = x.reshape(*x.shape[:-1], *[1] * min(x.ndim - 1, w.ndim - 1, 1), x.shape[-1])
    w_ = w.reshape(*w.shape[:-2], *[1] * min(x.ndim - 1, w.ndim - 1, 1), *w.shape[-min(w.ndim, 2):]).transpose(-1, -min(w.ndim, 2))
    if narrow_float(dt):  # each product exact in the float32 sum, as PyTorch and tinygrad (rounded to half first: 1 ulp off)
      x_, w_ = x_.float(), w_.float()
    if acc is not None: return (x_ * w_).sum(-1, dtype=acc)
    return (x_ * w_).sum(-1, acc_dtype=sum_acc_dtype(dt) if not dtypes.is_float(dt) else None).cast(dt)
  def sequential(self, layers: Sequence[Callable[[Tensor], Tensor]]) -> Tensor:
    """Each layer applied in turn (tinygrad's)."""
    x = self
    for f in layers: x = f(x)
    return x
  def linear(self, weight: Tensor, bias: Tensor | None = None, dtype: DType | str | None = None) -> Tensor:
    x = self.matmul(weight, dtype=dtype) if weight.ndim > 1 else self * weight if dtype is None else (self * weight).cast(dtype)
    return x + bias if bias is not None else x

  # ***** autograd *****
  def gradient(self, *targets: Tensor, gradient: Tensor | None = None, materialize_grads: bool = False) -> list[Tensor]:
    """d self / d target for each target (self must be a scalar unless `gradient` is given). A target no gradient reaches
    has zeros, with materialize_grads or without: tinygrad and torch.autograd.grad raise without it, but tg's graphs fold
    ops they keep (x ** 0 is 1), and raising would refuse gradients they give as 0. Only float tensors have gradients, as in
    PyTorch and tinygrad (an int target got zeros or ones)."""
    if ints := [t.dtype for t in targets if not dtypes.is_float(t.dtype)]:
      raise TensorDtypeError(f"only float tensors have gradients, a target is {ints[0]}: .float() it first")
    (root, *keys), ran = Tensor.live.for_grad([self._uop, *(t.uop for t in targets)], {t.uop for t in targets})
    Tensor.live.asked.update({id(t): t for t in targets if t.requires_grad is None})  # (asked again: the graphs realized since)
    return self._gradients(root, keys, targets, gradient, ran)
  def _gradients(self, root: UOp, keys: Sequence[UOp], targets: Sequence[Tensor], gradient: Tensor | None, ran: set[UOp]) -> list[Tensor]:
    """gradient's work on the graphs for_grad gave: root (self's) and keys (the targets')."""
    if gradient is None:
      if self.numel() != 1: raise TensorValueError(f"gradient of a tensor of shape {shape_text(self.shape)} needs `gradient=`: it is not a scalar")
      gradient = Tensor(const_uop(1.0, self.dtype, self.device, self.shape))
    grads = compute_gradient(root, gradient.uop, set(keys))
    found = [k for k in keys if k in grads]
    values = dict(zip(found, settled([grads[k] for k in found], ran)))
    return [Tensor(values[k]) if k in values else t.zeros_like() for t, k in zip(targets, keys)]
  def backward(self, gradient: Tensor | None = None) -> Tensor:
    """Accumulate d self / d leaf into .grad of every tensor that requires grad in self's graph, as PyTorch. A graph where
    none does (no requires_grad given anywhere) fills .grad of every live float tensor in it not marked requires_grad=False,
    as tinygrad's backward, which has no requires_grad: PyTorch raises there."""
    root, ran, leaves = self._grad_leaves([t for t in list(Tensor.live.grad.values()) if t.requires_grad])
    if not leaves:
      root, ran, leaves = self._grad_leaves([t for t in Tensor.live.everything() if t.requires_grad is None and dtypes.is_float(t.dtype)])
      Tensor.live.asked.update({id(t): t for t, _ in leaves})  # (a second backward needs the graphs realized since)
    if not leaves: raise RuntimeError("backward found no float tensor that may require grad in the graph")
    for (t, _), g in zip(leaves, self._gradients(root, [k for _, k in leaves], [t for t, _ in leaves], gradient, ran)):
      if g.shape != t.shape: raise TensorShapeError(f"gradient shape {shape_text(g.shape)} != tensor shape {shape_text(t.shape)}")
      if t.grad is None: t.grad = g
      else: t.grad.replace(t.grad + g)  # the same tensor, accumulated (tinygrad's, and PyTorch's in-place .grad)
    return self
  def _grad_leaves(self, candidates: list[Tensor]) -> tuple[UOp, set[UOp], list[tuple[Tensor, UOp]]]:
    """Self's graph for autograd (Tensor.live.for_grad), the writes in it that ran, and the candidates in it, each with its
    UOp there (what it was, where it was realized since)."""
    (root, *keys), ran = Tensor.live.for_grad([self._uop, *(t.uop for t in candidates)], {t.uop for t in candidates})
    topo = root.toposort()
    return root, ran, [(t, k) for t, k in zip(candidates, keys) if k in topo]

  @staticmethod
  @contextlib.contextmanager
  def train(mode: bool = True) -> Iterator[None]:
    prev, Tensor.training = Tensor.training, mode
    try: yield
    finally: Tensor.training = prev
  @staticmethod
  @contextlib.contextmanager
  def test() -> Iterator[None]:
    with Tensor.train(False): yield

class _NoGrad(contextlib.ContextDecorator):
  """`with no_grad():` (or as a decorator): tensors built inside don't track gradients."""
  def __enter__(self) -> None: self.prev, Tensor.no_grad = Tensor.no_grad, True
  def __exit__(self, *exc: Any) -> None: Tensor.no_grad = self.prev
no_grad = _NoGrad

def _replay(chain: list[UOp], u: UOp) -> UOp:
  """The view ops of chain (top first, as view_chain gives them) applied again, over u."""
  for m in reversed(chain): u = m.replace(src=(u, *m.src[1:]))
  return u

def _pickled_bytes(b: Buffer, protocol: int) -> bytearray | pickle.PickleBuffer | None:
  if not b.is_allocated: return None
  if protocol >= 5 and (view := b.allocator.host_view(b._buf)) is not None: return pickle.PickleBuffer(view)
  b.copyout(memoryview(data := bytearray(b.nbytes)))
  return data

def _unpickle(u: UOp, bufs: list[UOp], data: list[Any], requires_grad: bool | None) -> Tensor:
  """Tensor.__reduce_ex__'s inverse: the graph on buffers of its own holding the pickled bytes. A writable out-of-band
  buffer (protocol 5) is that memory itself on a host device, as numpy's arrays take theirs; others are copied in."""
  fresh = {b: new_buffer(b.src[0].arg, b.arg, b.dtype, _host_buffer(b, d)) for b, d in zip(bufs, data)}
  for b, d in zip(bufs, data):
    if d is not None and not buffers[fresh[b]].is_allocated: buffers[fresh[b]].copyin(memoryview(d))
  return Tensor(u.substitute(fresh) if fresh else u, requires_grad=requires_grad)

def _host_buffer(b: UOp, d: Any) -> Buffer | None:
  """A Buffer on d's own memory, when d is writable memory of b's size and b's device is a host one; else None."""
  if not isinstance(d, pickle.PickleBuffer) or (mv := d.raw()).readonly or mv.nbytes != b.arg * b.dtype.itemsize: return None
  if not isinstance(Device[b.src[0].arg].allocator, MallocAllocator) or not mv.nbytes: return None
  return Buffer(b.src[0].arg, b.arg, b.dtype, opaque=(ctypes.c_uint8 * mv.nbytes).from_buffer(mv))

def _writable_base(t: Tensor) -> UOp | None:
  """The BUFFER (or sharded MULTI of buffers) a write into view t goes to, when t is more than reshapes of a buffer (a
  slice, a transpose, a flip: PyTorch's views, which share their source's memory; any view of a sharded tensor); a lazy
  source is realized first, so its tensor and every other view of it see the write. Or the detach() or bitcast() under
  the view (_write_source), whose source the write goes on to. None when t is a buffer view itself (assigned as such),
  or a value of its own: a pad, and a broadcast constant (Tensor.ones(4)), are copies. A broadcast
  of stored values raises, as in PyTorch, and so does a view that shows a pad's padding (a write there went into a copy
  and was lost; tinygrad fails too). A view inside the padding writes the source, as tinygrad's (PyTorch's pad is a copy)."""
  chain, base = view_chain(t.uop, symbolic=True)
  if base.op is Ops.EXPAND and any(w.op is Ops.BUFFER for w in base.toposort()):
    raise RuntimeError("a write into an expanded view: several of its elements are one element of the source; clone() it first")
  if not _pads_unseen(chain):
    if chain[0].op is Ops.PAD: return None  # the padded tensor itself: a value of its own, realized and assigned
    raise RuntimeError("assign into a view of a padded tensor that shows its padding (x.pad(...)[i]): the padding is no memory "
                       "to write, and a write into a copy would be lost; make the padded tensor one first, x.pad(...).contiguous()")
  if _write_source(base) is not None: return base
  if not chain or all(v.op is Ops.RESHAPE for v in chain) and not t.is_sharded:
    # a reshape of a lazy tensor (t1.reshape(4).assign(v)): the tensor it was taken of is realized first and the write
    # goes into its buffer at once, as through any other view (it went into a buffer of t's own, and t1 never saw it)
    if chain and base.op is not Ops.BUFFER and all_int(t.shape) and (src := _viewed(t, base)) is not t and src._view_of is None:
      src.realize()
      return view_base(t.uop)
    return None
  if base.op in GroupOp.Movement and not symbolic_prefix(base) or base.op is Ops.CONST: return None
  if base.op is not Ops.BUFFER:  # the tensor the view was taken of (or a new one) is realized, and LiveTensors.become
    # points every tensor holding it, t among them, at its buffer
    _viewed(t, base).realize()
    chain, base = view_chain(t.uop, symbolic=True)
  return base if base.op is Ops.BUFFER or symbolic_prefix(base) or realized_multi(base) else None

def _bitcast_back(g: UOp, call: UOp) -> tuple[None]:
  """The backward of the CALL that wraps a bitcast to another item size (Tensor.bitcast): none passes (a tensor that
  requires grad can't be bitcast). The CALL is there to name the bitcast's source, call.src[1], for a write into it."""
  return (None,)

def _write_source(u: UOp) -> UOp | None:
  """The source a write into u goes to when u shares its memory as no view op does: detach()'s, and a bitcast's (a BITCAST
  of the same item size; the CALL that wraps one to another size). None for anything else."""
  if u.op in (Ops.DETACH, Ops.BITCAST): return u.src[0]
  return u.src[1] if u.op is Ops.CALL and u.arg is _bitcast_back else None

_SHARING = VIEWS | {Ops.DETACH, Ops.BITCAST}

def shares_buffer(u: UOp) -> bool:
  """Is u a view of a realized BUFFER that shares its memory, not the buffer itself or reshapes of it: shrinks, permutes,
  flips, reshapes, a detach(), a same-size bitcast, and pads where it shows none of the padding (a strided slice's)?
  realize() leaves such a tensor as it is, as tinygrad's (PyTorch's views share their source's memory). Not yet a view of
  a sharded tensor: realized, it is still a copy (shard_axis reads the MULTI realize makes of it)."""
  chain, base = view_chain(u, _SHARING)
  return base.op is Ops.BUFFER and not all(v.op is Ops.RESHAPE for v in chain) and _pads_unseen([v for v in chain if v.op in VIEWS])

def _pads_unseen(chain: list[UOp]) -> bool:
  """Does every element of view chain[0] lie inside each PAD of the chain under it? Decided on the index math of the
  view over symbolic indices (x[::2] pads an odd axis to reshape it by 2, and reads none of the pad)."""
  if not any(v.op is Ops.PAD for v in chain): return True
  idx: tuple[UOp, ...] = tuple(UOp.variable(f"i{d}", 0, n - 1) for d, n in enumerate(chain[0].shape))
  for v in chain:
    idx, inside = move_index(v, idx)
    if inside is not None and inside.simplify().vmin is not True: return False
  return True

def _write_through(u: UOp, base: UOp, x: Tensor) -> None:
  """Write x, the new value of view u of BUFFER base, into base: the view ops are undone from u down (a shrink's pad
  masks off the elements u doesn't see), and the write runs at once, so every view of base sees it. A detach() or
  bitcast() base (_write_source) takes the value of all of it, which is written on into its source, bitcast back."""
  chain, _ = view_chain(u, symbolic=True)
  mask: Tensor | None = None
  for v in chain:
    shape = v.src[0].shape
    if v.op is Ops.RESHAPE: x, mask = x.reshape(shape), mask if mask is None else mask.reshape(shape)
    elif v.op is Ops.PERMUTE:
      order = [v.arg.index(i) for i in range(len(v.arg))]
      x, mask = x.permute(order), mask if mask is None else mask.permute(order)
    elif v.op is Ops.FLIP:
      axes = [i for i, f in enumerate(v.arg) if f]
      x, mask = x.flip(axes), mask if mask is None else mask.flip(axes)
    elif v.op is Ops.PAD:
      keep = [(b, b + n) for (b, _), n in zip(v.arg, shape)]
      x, mask = x.shrink(keep), mask if mask is None else mask.shrink(keep)
    else:
      pads = [(b, n - e) for (b, e), n in zip(v.arg, shape)]
      x, mask = x.pad(pads), (x.ones_like(dtype=dtypes.bool) if mask is None else mask).pad(pads)
  if (src := _write_source(base)) is None:
    target = Tensor(base)
    target.assign(x if mask is None else mask.where(x, target)).realize()
    return
  x = x if mask is None else mask.where(x, Tensor(base))  # the new value of all of base, then of its source
  assign_now(_owner(src), x if base.op is Ops.DETACH else x.detach().bitcast(src.dtype))

def _viewed(t: Tensor, base: UOp) -> Tensor:
  """The tensor view t was taken of (the first of a chain of views) if it lives and its graph is base under reshapes, else
  _owner(base). Realized, it and its views see the write, and an equal tensor built on its own keeps its value: t1 =
  a @ a.T; t2 = a @ a.T; t1[-1].assign(v) wrote into t2 too (a new tensor of base was realized, and both were pointed
  at its buffer)."""
  if t._view_of is not None and (s := t._view_of()) is not None:
    chain, b = view_chain(s.uop, symbolic=True)
    if b is base and all(v.op is Ops.RESHAPE for v in chain): return s
  return _owner(base)

def _history_key(t: Tensor, detached: UOp) -> UOp | None:
  """A view of the buffer under t = b.detach() for autograd to remember t's written value by: one no other graph holds
  (a 2-d b's own graph is such a view of its buffer, and remembered under it, b's gradient would follow t's). None if
  there is no such view, or the buffer is not one."""
  if (buf := view_base(detached.src[0])) is None: return None
  key = UOp(Ops.RESHAPE, t.dtype, (buf,), t.shape)
  if key in Tensor.live.realized or any(s is not t and key in s.uop.toposort() for s in Tensor.live.everything()): return None
  return key

def _owner(u: UOp) -> Tensor:
  """The live tensor whose graph is u (the first, if equal graphs made several), else a new one: a write into it (a
  realize) reaches the tensor a view of u was taken of. A new tensor on a computed u would get a buffer of its own."""
  owner = next((s for s in Tensor.live.pending({u: None}.keys()) if s.uop is u), None)
  return Tensor(u) if owner is None else owner

def _uniform(n: int, dt: DType, device: str | None) -> Tensor:
  """n uniform numbers in [0, 1) of float dtype dt, lazily: Tensor.rand's, and randn's before Box-Muller."""
  if not dtypes.is_float(dt): raise TensorValueError(f"rand draws floats, not {dt}: Tensor.randint for integers")
  words = Tensor._random_bits(-(-n * dt.itemsize // 4), device)
  uint = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[dt.itemsize]
  bits = (words.bitcast(uint) if dt.itemsize != 4 else words).shrink(((0, n),))
  return ((bits >> (8 * dt.itemsize - dtypes.finfo(dt)[1])) | float_to_bits(1.0, dt)).bitcast(dt) - 1

def _words_u64(words: Tensor) -> Tensor:
  """Two uint32 words, low first, as one uint64 (shape (1,))."""
  return (words.shrink(((1, 2),)).cast(dtypes.uint64) << 32) | words.shrink(((0, 1),)).cast(dtypes.uint64)

def _hashed_words(counts0: Tensor, counts1: Tensor, key: Tensor) -> Tensor:
  """threefry under key (a uint64) of each pair (counts0[i], counts1[i]), as uint32 words: every pair's first word, then
  every pair's second. One threefry per word: each pair is hashed twice, for a kernel without a cat."""
  n, u64 = counts0.shape[0], dtypes.uint64
  r = ((counts1.cast(u64) << 32) | counts0.cast(u64)).repeat(2).threefry(key)
  return (Tensor.arange(2 * n, device=r.device) < n).where(r, r >> 32).cast(dtypes.uint32)

def assign_now(t: Tensor, x: Tensor) -> None:
  """t.assign(x), run at once. A write through a view ran already and left t as it was: realizing t then would copy the view
  (a bitcast to another item size), for nothing."""
  before = t.uop
  t.assign(x)
  if t.uop is not before: t.realize()

def _empty(device: str, shp: tuple, dt: DType) -> UOp:
  """A fresh buffer read in shape shp; of a symbolic shape, with room for its largest value, as one realized."""
  return buffer_view(new_buffer(device, max_elements(shp), dt), shp)

def _shape(shape: tuple, symbolic: bool = False) -> tuple[int, ...]:
  """Shape from f(2, 3) or f((2, 3)); `symbolic`: its sizes may be bound variables' expressions too, non-negative for every
  value of the variables (the kernels built on them run for every value)."""
  shp = shape_args(shape)
  if not all(isinstance(s, int) and s >= 0 or symbolic and isinstance(s, UOp) and s.dtype is _INDEX and s.unbound().vmin >= 0 for s in shp):
    raise TensorValueError(f"a shape is non-negative ints{' or expressions of bound variables' if symbolic else ''}, got {shape_text(shp)}")
  return shp

# a matmul packs B when it is at least this big and A has this many rows: a 256 x 256 B (256 KB) read in place, its rows
# 1 KB apart, thrashed the L1 sets its 32-wide panel mapped to (jitted matmul 256, min of 100: 255-266 -> 267-300 GFLOP/s,
# medians 247-256 -> 254-263); 128 x 128 gains nothing
PACK_MIN_BYTES, PACK_MIN_ROWS = 1 << 18, 64

def _pack_panel(x: Tensor, w: Tensor) -> int | None:
  """The panel width to pack w to for x @ w (None: don't): when the device's matmul reads B by panels (tg.codegen.matmul_panel)
  and B is read by enough rows of A to repay the copy and is PACK_MIN_BYTES or more, or is a transposed view (a Linear's
  weight.T: a row of a panel is then a gather of one value per cache line, at any size; the GPT step's 256 x 256
  projection measured 10 vs 110 GFLOP/s single-threaded)."""
  m, (k, n) = x.shape[-2], w.shape[-2:]
  if not isinstance(w.device, str) or not all_int((m, k, n)) or m < PACK_MIN_ROWS: return None
  if k * n * w.dtype.itemsize < PACK_MIN_BYTES and not _columns_strided(w): return None
  return matmul_panel(Device[w.device].renderer, w.dtype.itemsize, m, n)

def _transposed_rows(x: Tensor, w: Tensor) -> bool:
  """Is x of x @ w a big transposed view (its rows strided: a weight gradient's g.T)? Copied to its own layout first, it is
  read a row at a time: strided, each row tile of the matmul took a cache line per K for a few of its 16 floats, the
  lines a power of two apart (the GPT step's 2048-token weight gradients 113-142 -> 178-227 GFLOP/s, the transpose included)."""
  if x.ndim < 2 or w.ndim < 2 or not isinstance(x.device, str) or not all_int(x.shape + w.shape): return False
  m, k, n = x.shape[-2], x.shape[-1], w.shape[-1]
  return m >= PACK_MIN_ROWS and n >= PACK_MIN_ROWS and m * k * x.dtype.itemsize >= PACK_MIN_BYTES and _columns_strided(x)

def _columns_strided(w: Tensor) -> bool:
  """Is w a permuted view whose last axis isn't its source's last (neighbouring columns are far apart in memory)?"""
  u, last = w.uop, w.ndim - 1  # the axis of u that is w's last
  while u.op is Ops.PERMUTE: last, u = u.arg[last], u.src[0]
  return last != len(u.shape) - 1

def _packed(w: Tensor, p: int) -> Tensor:
  """w (..., K, N) copied to panels (..., N/p, K, p), viewed as (..., K, N) again: the values are w's, but each K x p panel a
  matmul reads is contiguous (a copy of B costs a pass over it; the strided panels cost a cache miss per row of B)."""
  *b, k, n = w.shape
  return w.reshape(*b, k, n // p, p).transpose(-3, -2).contiguous().transpose(-3, -2).reshape(*b, k, n)

def _packed_product(x: Tensor, w: Tensor, p: int) -> Tensor:
  """x @ w (w 2-d) reading w from panels of width p, with the plain product's gradients: x's is g @ w.T, a product of its
  own (through the panels, each lane of its rows would be a gather from another panel: 3-5x slower in a GPT step's MLP),
  w's is x.T @ g summed over x's leading axes. Its A is a transposed view, copied to rows first (_transposed_rows): of the
  narrower of x and g, so it is x.T @ g or (g.T @ x).T (a GPT step's MLP up-projection copies 2 MB of x, not 8 MB of g).
  When that is not the layout w's gradient is stored in (w a Linear's weight.T: its gradient is transposed back), it is
  realized in its own first, then transposed as a copy: else the matmul stores its tile as a scatter (30 vs 270 GFLOP/s)."""
  def grad_fxn(g: UOp, call: UOp) -> tuple[UOp, UOp]:
    gt, xt, wt = Tensor(g), Tensor(call.src[1]), Tensor(call.src[2])
    k, n = wt.shape
    g2, x2 = gt.reshape(-1, n), xt.reshape(-1, k)
    narrow_x, stored_transposed = k <= n, _columns_strided(wt)
    dw = x2.T @ g2 if narrow_x else g2.T @ x2
    if narrow_x == stored_transposed: dw = dw.contiguous()
    return (gt @ wt.T).uop, (dw if narrow_x else dw.T).uop
  out = x._product(_packed(w, p))
  return Tensor(UOp(Ops.CALL, out.dtype, (out.detach().uop, x.uop, w.uop), grad_fxn))

def _vecmat_block(x: Tensor, w: Tensor) -> int | None:
  """The rows of w a float x @ w (one row of x, a 2-d w) sums at a time on its device (tg.codegen.vecmat_block; None: at once)."""
  if w.ndim != 2 or not dtypes.is_float(w.dtype) or not isinstance(w.device, str) or not all_int(x.shape + w.shape): return None
  if math.prod(x.shape[:-1]) != 1: return None
  return vecmat_block(Device[w.device].renderer, w.dtype.itemsize, *w.shape)

def _blocked_vecmat(x: Tensor, w: Tensor, kb: int) -> Tensor:
  """x @ w as partial sums of kb-row blocks of w (their own kernel), then the sum of the partials: the same products,
  summed in another order (within float rounding of the one-pass sum)."""
  (k, n), lead = w.shape, x.shape[:-1]
  part = (x.reshape(k // kb, kb, 1) * w.reshape(k // kb, kb, n)).sum(1).contiguous()
  return part.sum(0).reshape(*lead, n)

def _buffer_from(arr: np.ndarray, device: str, dt: DType) -> UOp:
  if dt in (dtypes.bfloat16, *dtypes.fp8s):
    return Tensor(arr.astype(np.float32), device).cast(dt).realize().uop
  data = np.ascontiguousarray(arr, dtype=_np_dtype(dt))
  u = new_buffer(device, data.size, dt)
  if data.size: buffers[u].copyin(memoryview(data.reshape(-1)).cast("B"))
  return u.reshape(arr.shape)  # ascontiguousarray makes a 0-d array 1-d

def _buffer_of_bytes(data: bytes, device: str, dt: DType) -> UOp:
  """Bytes are the buffer's memory as dt's elements (numpy.frombuffer's, tinygrad's and torch.frombuffer's meaning), not a
  value per byte cast to dt: Tensor(struct.pack("ff", 0.5, 2.0), dtype=dtypes.float32) is [0.5, 2.0]."""
  if len(data) % dt.itemsize:
    raise TensorValueError(f"{len(data)} bytes are not a whole number of {dt} elements ({dt.itemsize} bytes each)")
  u = new_buffer(device, len(data) // dt.itemsize, dt)
  if data: buffers[u].copyin(memoryview(data))
  return u.reshape((len(data) // dt.itemsize,))

def _iota(n: int, dt: DType, device: str | None) -> Tensor:
  """0, 1, ..., n-1 computed on the device (no host data)."""
  return Tensor(UOp(Ops.IOTA, dt, (device_uop(device or Device.DEFAULT),), n))

def _contiguous_under_reshape(u: UOp) -> UOp:
  """The CONTIGUOUS under a tensor's reshapes, realized in its place (x.contiguous().reshape(s), a Tensor.rand): the
  reshape is then a view of its buffer, not a copy of it into a buffer of its own (a second kernel)."""
  inner = u
  while inner.op is Ops.RESHAPE: inner = inner.src[0]
  return inner if inner.op is Ops.CONTIGUOUS and all_int(u.shape) and all_int(inner.shape) else u

def _own_buffers(ts: list[Tensor]) -> None:
  """Tensors realized together whose graphs are equal (one UOp: Tensor.ones(3).contiguous() twice) each get a buffer of
  their own, the later ones a copy of the first: one buffer would make an assign, a setitem or a custom kernel writing one
  of them write the other (as PyTorch: two tensors built apart never alias). Tensors whose graph names a buffer already (an
  ASSIGN, a view) share it by meaning."""
  seen: set[UOp] = set()
  for t in ts:
    if t.uop in seen and not names_buffer(t.uop): t.uop = private_copy(t.uop)
    seen.add(t.uop)
