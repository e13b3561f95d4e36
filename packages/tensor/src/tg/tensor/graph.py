"""The tensor-level UOp graph: buffers, constants, movement ops, and where each lives.

A realized tensor is RESHAPE(BUFFER) (BUFFER has src (DEVICE, UNIQUE) and arg = its size); a constant is
EXPAND(RESHAPE(CONST(src=(DEVICE,)))); everything else is ALU, CAST, movement (RESHAPE, EXPAND, PERMUTE, PAD, SHRINK,
FLIP), REDUCE_AXIS (arg=(op, axes), keeping the reduced axes as 1), CONTIGUOUS, COPY (src=(x, DEVICE)), ASSIGN,
DETACH, CUSTOM_KERNEL and AFTER. The Buffer behind a BUFFER UOp lives in `buffers`."""
from __future__ import annotations
import functools, itertools, weakref
from typing import Any
from tg.uop import UOp, Ops, DType
from tg.codegen.device import Buffer, Device

_unique = itertools.count()
buffers: weakref.WeakKeyDictionary[UOp, Buffer] = weakref.WeakKeyDictionary()

Devices = str | tuple[str, ...]  # one device, or the devices of a sharded tensor (tg.tensor.multi)

def canonical(device: Devices) -> Devices:
  return Device.canonicalize(device) if isinstance(device, str) else tuple(Device.canonicalize(d) for d in device)

sharded_seen = False  # set by the first tuple of devices: until then realize() doesn't look for sharded tensors

@functools.lru_cache(maxsize=256)  # (every buffer and constant made needs one)
def device_uop(device: Devices) -> UOp:
  global sharded_seen
  if not isinstance(device, str): sharded_seen = True
  return UOp(Ops.DEVICE, arg=canonical(device))

def new_buffer(device: str, size: int, dtype: DType, buf: Buffer | None = None) -> UOp:
  """A BUFFER UOp with a fresh identity (UNIQUE), backed by `buf` or by a Buffer allocated when first used."""
  u = UOp(Ops.BUFFER, dtype, (device_uop(device), UOp(Ops.UNIQUE, arg=next(_unique))), size)
  buffers[u] = buf if buf is not None else Buffer(u.src[0].arg, size, dtype)
  return u

def private_copy(u: UOp) -> UOp:
  """A CONTIGUOUS copy of u that no other graph is: hash-consing makes every x.contiguous() one UOp, so a copy written in
  place (by a custom kernel) or kept apart (_own_buffers) is tagged with a fresh number (its arg)."""
  return UOp(Ops.CONTIGUOUS, u.dtype, (u,), next(_unique))

def const_uop(val: Any, dtype: DType, device: Devices, shape: tuple[int, ...]) -> UOp:
  if type(val) in (int, float, bool): return _const_uop(val, (type(val), repr(val)), dtype, device, shape)
  return _const_uop.__wrapped__(val, None, dtype, device, shape)

@functools.lru_cache(maxsize=1024)
def _const_uop(val: Any, key: tuple | None, dtype: DType, device: Devices, shape: tuple[int, ...]) -> UOp:
  """Cached (UOps are immutable and hash-consed): a repeated `x + 1` skips building its constant, a third of a tiny op's
  graph time. `key` (type and repr) keeps apart what compares equal: -0.0 and 0.0, 1, 1.0 and True."""
  c = UOp(Ops.CONST, dtype, (device_uop(device),), UOp.const(dtype, val).arg)
  return c.reshape((1,) * len(shape)).expand(shape) if shape else c

def symbolic_value(x: UOp, dtype: DType, device: Devices, shape: tuple) -> UOp:
  """A symbolic int (an expression of bound variables, Tensor(v) or t * v) as a tensor graph of `dtype`: its kernels take
  the variables as arguments, the same kernels for every value."""
  v = UOp(Ops.ADD, dtype, (UOp(Ops.CONST, dtype, (device_uop(device),), UOp.const(dtype, 0).arg), x.cast(dtype)))
  return v.reshape((1,) * len(shape)).expand(shape) if shape else v

def device_of(u: UOp) -> Any:
  """The device of a tensor graph node (a tuple of names for a sharded one): found down its first sources, remembered in
  the __dict__ of every node on the way, as UOp's cached properties are (a chain of 10,000 ops then costs 10,000 steps,
  not 50 million; a weak-keyed table cost 5x as much per read)."""
  path = []
  while (dev := u.__dict__.get("_device")) is None:
    if u.op is Ops.DEVICE: dev = u.arg; break
    if u.op is Ops.MULTI: dev = tuple(device_of(s) for s in u.src); break
    if u.op is Ops.COPY: dev = u.src[1].arg; break
    if not u.src: raise ValueError(f"{u.op} has no device")
    path.append(u)
    u = next((s for s in u.src if s.op is not Ops.BIND and s.op is not Ops.DEFINE_VAR), u.src[0])
  for p in path: p.__dict__["_device"] = dev
  return dev

def shape_text(shape: tuple) -> str:
  """A shape as text, a symbolic dim by its expression: (i+1, 3)."""
  return f"({', '.join(dim_text(d) for d in shape)}{',' if len(shape) == 1 else ''})"
def dim_text(d: Any) -> str: return d.render(simplify=False) if isinstance(d, UOp) else str(d)

def same_size(a: Any, b: Any) -> bool:
  """a == b for every value of the variables: i * 1 is i, and i+j is j+i (simplify leaves sums in the order it built them)."""
  if isinstance(a, int) and isinstance(b, int): return a == b
  return a is b or (d := (a - b).unbound().simplify()).op is Ops.CONST and d.arg == 0

def mop(op: Ops, x: UOp, arg: Any) -> UOp:
  """A movement op; a no-op one returns x."""
  if op is Ops.RESHAPE: return x.reshape(arg)
  if op is Ops.EXPAND: return x.expand(arg)
  if op is Ops.PERMUTE and tuple(arg) == tuple(range(len(arg))): return x
  if op in (Ops.PAD,) and all(p == (0, 0) for p in arg): return x
  if op is Ops.SHRINK and all(b == 0 and e == s for (b, e), s in zip(arg, x.shape)): return x
  if op is Ops.FLIP and not any(arg): return x
  return UOp(op, x.dtype, (x,), tuple(arg))
