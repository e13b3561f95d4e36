"""UOp: an immutable, hash-consed node of the IR graph, with the builders every layer uses."""
from __future__ import annotations
import functools, math, weakref
from _weakref import _remove_dead_weakref
from typing import Any, Sequence
from tg.uop.dtype import AddrSpace, DType, Invalid, InvalidType, PtrDType, dtypes, least_upper_dtype, truncate
from tg.uop.ops import AxisType, GroupOp, Ops, exec_alu
from tg.uop.helpers import prod
from tg.uop.vrange import min_max

NONTEMPORAL = "nontemporal"  # a STORE's arg: see UOp.store

def _argkey(arg: Any) -> Any:
  # 0.0 == -0.0 and 1 == 1.0 == True hash alike; the cache key must tell them apart (in tuples too: VCONST args)
  if type(arg) is float: return (arg, float, math.copysign(1.0, arg))
  if type(arg) is tuple: return tuple(_argkey(a) for a in arg)
  return (arg, type(arg))

class UOpMetaClass(type):
  """Hash-consing: building a UOp equal to a live one returns that same object, so equality is identity.
  The cache holds weak references: an entry goes away with the last reference to its UOp."""
  ucache: dict[tuple, _CacheRef] = {}
  def __call__(cls, op: Ops, dtype: DType = dtypes.void, src: tuple[UOp, ...] = (), arg: Any = None) -> UOp:
    key = (op, dtype, src, arg if arg is None else (arg, int) if type(arg) is int else _argkey(arg))
    if (ref := _ucache_get(key)) is not None and (live := ref()) is not None: return live
    uop = _Building()
    uop.op = op
    uop.dtype = dtype
    uop.src = src
    uop.arg = arg
    uop.__class__ = cls
    ref = _ucache[key] = _CacheRef(uop, _evict)
    ref.key = key
    return uop

class _UOpFields:
  """UOp's storage. A UOp is built as a _Building (the same layout without UOp's immutability guard), whose fields are
  plain attribute stores, and then becomes a UOp: a quarter fewer instructions than four slot setters called past
  the guard. It is made by calling _Building() (the type's own allocation) rather than object.__new__(_Building),
  which goes through a generic wrapper that checks its argument: 300 fewer instructions a node."""
  __slots__ = ("op", "dtype", "src", "arg", "__weakref__", "__dict__")

class _Building(_UOpFields):
  __slots__ = ()

class _CacheRef(weakref.ref):
  """The cache's reference to a UOp, knowing its key: one callback for all entries instead of a closure per UOp."""
  __slots__ = ("key",)
  key: tuple

# Ops.X and GroupOp.X are slow lookups on Python 3.11 (Enum's metaclass has a __getattr__): the hot paths use these
_CONST, _COMPARISON, _INDEX, _DIVISIONS = Ops.CONST, GroupOp.Comparison, dtypes.index, (Ops.IDIV, Ops.MOD)
build_uop = UOpMetaClass.__call__  # build_uop(UOp, op, dtype, src, arg) is UOp(op, dtype, src, arg) without the type call's dispatch
_ucache = UOpMetaClass.ucache
_ucache_get = _ucache.get
def _evict(ref: _CacheRef) -> None:
  # removes the entry only if it is still a dead reference (not a live UOp built since with the same key): the check
  # and the removal in one C call, as the standard library's WeakValueDictionary does it (a sixth off each death)
  _remove_dead_weakref(_ucache, ref.key)

ConstLike = int | float | bool | InvalidType

class OperandError(TypeError, RuntimeError):
  """A UOp's arithmetic with an operand it can't hold as a constant (a Tensor: the Tensor's own operator takes the UOp)."""

class UndecidableError(ValueError):
  """bool()/int()/float() of a UOp whose value depends on variables its range analysis can't pin to one number."""

class _cached:
  """A lock-free cached property: the value lands in the instance __dict__, so later reads never call back here."""
  def __init__(self, fxn: Any):
    self.fxn, self.name, self.__doc__ = fxn, fxn.__name__, fxn.__doc__
  def __get__(self, obj: Any, cls: type | None = None) -> Any:
    if obj is None: return self
    val = obj.__dict__[self.name] = self.fxn(obj)
    return val

class _Range:
  """vmin, vmax or the pair (_min_max): the first read of any computes all three and leaves them in the instance
  __dict__, so later reads are plain attribute reads (one call on the first read, where a cached property per name
  took four)."""
  def __init__(self, i: int | None): self.i = i
  def __get__(self, obj: Any, cls: type | None = None) -> Any:
    if obj is None: return self
    r = _range(obj)
    return r if self.i is None else r[self.i]

def _range(u: UOp) -> tuple[Any, Any]:
  for s in u.src:
    if "_min_max" not in s.__dict__:
      if s.src:
        _fill_cache(u, "_min_max")
        break
      _range(s)  # a leaf (a new constant or variable) has nothing below it to fill first
  d = u.__dict__
  d["vmin"], d["vmax"] = d["_min_max"] = r = min_max(u)
  return r

class UOp(_UOpFields, metaclass=UOpMetaClass):
  """A node of the IR: op, dtype, sources and arg. Immutable; build a changed one with `replace`."""
  __slots__ = ()
  op: Ops
  dtype: DType
  src: tuple[UOp, ...]
  arg: Any
  def __setattr__(self, name: str, value: Any) -> None: raise AttributeError(f"UOp is immutable: can't set {name}; use replace()")
  def __delattr__(self, name: str) -> None: raise AttributeError(f"UOp is immutable: can't delete {name}")
  def __reduce__(self) -> tuple: return (UOp, (self.op, self.dtype, self.src, self.arg))
  def replace(self, **kwargs: Any) -> UOp:
    """This UOp with some of op, dtype, src, arg changed."""
    new = (kwargs.pop("op", self.op), kwargs.pop("dtype", self.dtype), tuple(kwargs.pop("src", self.src)), kwargs.pop("arg", self.arg))
    if kwargs: raise TypeError(f"replace got unknown fields {list(kwargs)}")
    return UOp(*new)  # hash-consing gives back self when nothing changed

  # ***** graph walks *****
  def toposort(self) -> dict[UOp, None]:
    """Every UOp this one depends on, itself last, each after all its sources (iterative: deep graphs are fine; cached).
    A source whose toposort is cached is spliced in whole (its order is valid, and what is in already stays first)."""
    if (out := self.__dict__.get("_topo")) is not None: return out
    out = {}
    stack: list[tuple[UOp, bool]] = [(self, False)]
    while stack:
      u, expanded = stack.pop()
      if u in out: continue
      if expanded: out[u] = None
      elif u is not self and (done := u.__dict__.get("_topo")) is not None: out.update(done)
      else:
        stack.append((u, True))
        stack.extend((s, False) for s in reversed(u.src) if s not in out)
    self.__dict__["_topo"] = out
    return out
  @property
  def backward_slice(self) -> dict[UOp, None]:
    """The UOps this one depends on, not including itself."""
    return {u: None for u in self.toposort() if u is not self}
  def substitute(self, mapping: dict[UOp, UOp]) -> UOp:
    from tg.uop.rewrite import graph_rewrite
    return graph_rewrite(self, _substituter(frozenset(u.op for u in mapping)), ctx=mapping, bottom_up=True, name="substitute")
  def simplify(self) -> UOp:
    from tg.uop.rewrite import graph_rewrite
    from tg.uop.symbolic import symbolic
    return graph_rewrite(self, symbolic, name="simplify")
  @property
  def size(self) -> int | UOp:
    """The element count of a shaped UOp (a buffer, a view, a tensor-level value): the product of its shape; 1 for a scalar."""
    return prod(self.shape)
  def numel(self) -> int | UOp: return self.size  # (tinygrad's name, as Tensor.numel: kernels written by hand use it)

  def __repr__(self) -> str: return pretty(self)

  # ***** Python truth and numbers: only where range analysis decides the value *****
  def _decided(self, what: str) -> Any:
    if self.dtype.count > 1 or isinstance(self.dtype, PtrDType) or self.dtype == dtypes.void or self.vmin != self.vmax:
      raise UndecidableError(f"{what}() of a UOp whose value isn't known: {render(self)} is in [{self.vmin}, {self.vmax}], "
                             f"{self.dtype}; compare .vmin/.vmax or simplify() it first")
    return self.vmin
  def __bool__(self) -> bool: return bool(self._decided("bool"))
  def __int__(self) -> int:
    if not (dtypes.is_int(self.dtype) or self.dtype == dtypes.bool): raise TypeError(f"int() of a {self.dtype} UOp: cast it to an int dtype")
    return int(self._decided("int"))
  def __float__(self) -> float: return float(self._decided("float"))

  # ***** constants *****
  @staticmethod
  def const(dtype: DType, b: ConstLike | tuple) -> UOp:
    """A constant of `dtype`; a tuple gives a VCONST of a vector dtype, a scalar with a vector dtype is broadcast."""
    if isinstance(b, UOp): raise TypeError(f"UOp.const takes a Python value, got a UOp {b.op}")
    if isinstance(b, tuple):
      if len(b) != dtype.count: raise ValueError(f"VCONST of {len(b)} values for {dtype}")
      return UOp(Ops.VCONST, dtype, arg=tuple(truncate[dtype.scalar()](x) for x in b))
    if type(dtype) is DType and dtype.count == 1:  # the common case, built without the type call's dispatch; an index int is itself
      return build_uop(UOp, _CONST, dtype, (), b if b is Invalid or (dtype is _INDEX and type(b) is int) else truncate[dtype](b))
    val = b if b is Invalid else truncate[dtype.scalar()](b)
    ret = UOp(_CONST, dtype.scalar(), arg=val)
    return ret.broadcast(dtype.count) if dtype.count > 1 else ret
  def const_like(self, b: ConstLike | tuple) -> UOp: return UOp.const(self.dtype.base if isinstance(self.dtype, PtrDType) else self.dtype, b)
  @staticmethod
  def invalid() -> UOp: return UOp(Ops.CONST, dtypes.index, arg=Invalid)

  # ***** ALU and operators *****
  def alu(self, op: Ops, *src: UOp | ConstLike) -> UOp:
    """`op` over this and `src`; over a buffer (a PARAM in a Tensor.call expression) the value is its element dtype."""
    srcs = (self, *(s if isinstance(s, UOp) else self.const_like(s) for s in src))
    if op in GroupOp.Comparison: dtype = dtypes.bool.vec(self.dtype.count)
    elif op is Ops.WHERE: dtype = _value_dtype(srcs[1])
    else: dtype = _value_dtype(self)
    if op is Ops.WHERE:
      if _value_dtype(srcs[1]) != _value_dtype(srcs[2]): raise TypeError(f"WHERE branches differ: {srcs[1].dtype} and {srcs[2].dtype}")
    elif op not in (Ops.SHL, Ops.SHR) and any(s.dtype != srcs[0].dtype and _value_dtype(s) != _value_dtype(self) for s in srcs[1:]):
      raise TypeError(f"{op} on mismatched dtypes {[s.dtype for s in srcs]}: cast first")
    return UOp(op, dtype, srcs)
  def _binop(self, op: Ops, x: UOp | ConstLike, reverse: bool = False) -> UOp:
    if not isinstance(x, UOp):
      if not isinstance(x, (int, float, InvalidType)) and hasattr(x, "uop"):  # a Tensor: tinygrad's RuntimeError, and the fix
        raise OperandError(f"{op} of a UOp and a {type(x).__name__}: put the {type(x).__name__} first (t * v), it takes UOps")
      x = self.const_like(x)
      if op in _DIVISIONS and x.op is _CONST and x.arg == 0 and not reverse: raise ZeroDivisionError(f"{op.name} of a UOp by the constant 0")
    elif x.dtype != self.dtype and _value_dtype(x) != _value_dtype(self):
      # mixed dtypes in index math (a RANGE and an int32 variable): promote both to the upper dtype
      dt = least_upper_dtype(self.dtype, x.dtype)
      return (self.cast(dt)._binop(op, x.cast(dt), reverse))
    if x.dtype is self.dtype and type(self.dtype) is DType:  # one value dtype, no pointers: nothing for alu to check
      return build_uop(UOp, op, dtypes.bool.vec(self.dtype.count) if op in _COMPARISON else self.dtype, (x, self) if reverse else (self, x))
    return x.alu(op, self) if reverse else self.alu(op, x)
  def __add__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.ADD, x)
  def __radd__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.ADD, x, True)
  def __mul__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.MUL, x)
  def __rmul__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.MUL, x, True)
  def __sub__(self, x: UOp | ConstLike) -> UOp: return self + (-x if isinstance(x, UOp) else self.const_like(-x))
  def __rsub__(self, x: UOp | ConstLike) -> UOp: return self.const_like(x) + (-self)
  def __neg__(self) -> UOp: return self.logical_not() if self.dtype.scalar() == dtypes.bool else self * -1
  def __floordiv__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.IDIV, x)
  def __rfloordiv__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.IDIV, x, True)
  def __mod__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.MOD, x)
  def __rmod__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.MOD, x, True)
  def __truediv__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.FDIV, x)
  def __rtruediv__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.FDIV, x, True)
  def __and__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.AND, x)
  def __rand__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.AND, x, True)
  def __or__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.OR, x)
  def __ror__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.OR, x, True)
  def __xor__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.XOR, x)
  def __rxor__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.XOR, x, True)
  def __lshift__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.SHL, x)
  def __rshift__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.SHR, x)
  def __lt__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.CMPLT, x)
  def __gt__(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.CMPLT, x, True)
  def __ge__(self, x: UOp | ConstLike) -> UOp: return (self < x).logical_not()
  def __le__(self, x: UOp | ConstLike) -> UOp: return (self > x).logical_not()
  def __invert__(self) -> UOp: return self.logical_not() if self.dtype.scalar() == dtypes.bool else self ^ -1
  def ne(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.CMPNE, x)
  def eq(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.CMPEQ, x)
  def logical_not(self) -> UOp: return self.ne(True)
  def maximum(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.MAX, x)
  def minimum(self, x: UOp | ConstLike) -> UOp: return -((-self).maximum(-x if isinstance(x, UOp) else self.const_like(-x)))
  def where(self, t: UOp | ConstLike, f: UOp | ConstLike) -> UOp:
    if not isinstance(t, UOp) and not isinstance(f, UOp): t = UOp.const(dtypes.from_py(t), t)  # both Python: their own dtype
    if not isinstance(t, UOp): t = f.const_like(t)  # type: ignore[union-attr]
    if not isinstance(f, UOp): f = t.const_like(f)
    return UOp(Ops.WHERE, t.dtype, (self, t, f))
  def mulacc(self, b: UOp, c: UOp) -> UOp: return self.alu(Ops.MULACC, b, c)
  def neg(self) -> UOp: return -self
  def reciprocal(self) -> UOp: return self.alu(Ops.RECIPROCAL)
  def sqrt(self) -> UOp: return self.alu(Ops.SQRT)
  def exp2(self) -> UOp: return self.alu(Ops.EXP2)
  def log2(self) -> UOp: return self.alu(Ops.LOG2)
  def sin(self) -> UOp: return self.alu(Ops.SIN)
  def trunc(self) -> UOp: return self.alu(Ops.TRUNC)
  def pow(self, x: UOp | ConstLike) -> UOp: return self._binop(Ops.POW, x)
  def cast(self, dtype: DType) -> UOp:
    if self.dtype == dtype: return self
    if self.dtype.count > 1 and dtype.count == 1: dtype = dtype.vec(self.dtype.count)
    return UOp(Ops.CAST, dtype, (self,))
  def bitcast(self, dtype: DType) -> UOp:
    if self.dtype.itemsize * self.dtype.count != dtype.itemsize * dtype.count and not isinstance(self.dtype, PtrDType):
      raise TypeError(f"bitcast from {self.dtype} to {dtype} changes the size")
    return self if self.dtype == dtype else UOp(Ops.BITCAST, dtype, (self,))

  # ***** vectors *****
  def broadcast(self, n: int) -> UOp: return self if n == 1 else UOp(Ops.VECTORIZE, self.dtype.vec(n), (self,) * n)
  @staticmethod
  def vectorize(*srcs: UOp) -> UOp: return srcs[0] if len(srcs) == 1 else UOp(Ops.VECTORIZE, srcs[0].dtype.vec(len(srcs)), srcs)
  def gep(self, i: int | tuple[int, ...]) -> UOp:
    """Lanes of a vector: one int gives a scalar, a tuple a (smaller) vector."""
    idx = (i,) if isinstance(i, int) else tuple(i)
    if self.dtype.vcount == 1 and idx == (0,): return self
    if any(not 0 <= j < self.dtype.vcount for j in idx): raise IndexError(f"gep {idx} out of range for {self.dtype}")
    return UOp(Ops.GEP, self.dtype.scalar().vec(len(idx)) if not isinstance(self.dtype, PtrDType) else self.dtype.scalar().vec(len(idx)),
               (self,), idx)
  def contract(self, *rngs: UOp) -> UOp:
    """Fold UPCAST/UNROLL ranges into the lanes of a vector (the expander turns this into vector ops)."""
    axes = tuple((r.arg[0], r.src[0].arg) for r in rngs)
    return UOp(Ops.CONTRACT, self.dtype.vec(prod(s for _, s in axes)), (self,), axes)

  # ***** kernel building (tinygrad's custom-kernel style) *****
  @staticmethod
  def variable(name: str, min_val: int, max_val: int, dtype: DType = dtypes.index) -> UOp:
    if min_val > max_val: raise ValueError(f"variable {name}: min {min_val} > max {max_val}")
    return UOp(Ops.DEFINE_VAR, dtype, arg=(name, min_val, max_val))
  def bind(self, val: int) -> UOp:
    if self.op is not Ops.DEFINE_VAR: raise TypeError(f"only a variable can be bound, not {self.op}")
    if not self.arg[1] <= val <= self.arg[2]: raise ValueError(f"{self.arg[0]}={val} is outside [{self.arg[1]}, {self.arg[2]}]")
    return UOp(Ops.BIND, self.dtype, (self, self.const_like(val)))
  @property
  def expr(self) -> str:
    """A variable's name (tinygrad's Variable.expr), of a bound one too."""
    v = self.src[0] if self.op is Ops.BIND else self
    if v.op is not Ops.DEFINE_VAR: raise AttributeError(f"only a variable has a name (expr), not {self.op}")
    return v.arg[0]
  @property
  def val(self) -> Any:
    """A constant's value, or a bound variable's (tinygrad's start_pos.val)."""
    if self.op is Ops.CONST: return self.arg
    if self.op is Ops.BIND: return self.src[1].arg
    raise AttributeError(f"only a constant or a bound variable has a value (val), not {self.op}")
  def unbind(self) -> tuple[UOp, int]:
    """A bound variable as (the variable, its value), as tinygrad's."""
    if self.op is not Ops.BIND: raise TypeError(f"only a bound variable can be unbound, not {self.op}")
    return self.src[0], self.src[1].arg
  @staticmethod
  def range(end: int | UOp, axis_id: int, axis_type: AxisType = AxisType.LOOP) -> UOp:
    return UOp(Ops.RANGE, dtypes.index, (end if isinstance(end, UOp) else UOp.const(dtypes.index, end),), (axis_id, axis_type))
  @staticmethod
  def special(end: int | UOp, name: str) -> UOp:
    return UOp(Ops.SPECIAL, dtypes.index, (end if isinstance(end, UOp) else UOp.const(dtypes.index, end),), name)
  @staticmethod
  def param(slot: int, dtype: DType, shape: Sequence[int] | int) -> UOp:
    """A kernel's buffer argument number `slot`; with a multi-dimensional shape, `P[i, j]` indexes it row-major."""
    return UOp.placeholder((shape,) if isinstance(shape, int) else tuple(shape), dtype, slot, AddrSpace.GLOBAL)
  @staticmethod
  def placeholder(shape: Sequence[int], dtype: DType, slot: int, addrspace: AddrSpace = AddrSpace.GLOBAL) -> UOp:
    op = {AddrSpace.GLOBAL: Ops.PARAM, AddrSpace.LOCAL: Ops.DEFINE_LOCAL, AddrSpace.REG: Ops.DEFINE_REG}[addrspace]
    return UOp(op, dtype.ptr(prod(shape), addrspace), (), slot).reshape(tuple(shape))
  @property
  def is_realized(self) -> bool:
    """Values that exist, nothing left to compute: a BUFFER, or movement ops of one (tinygrad's name, as t.uop.is_realized)."""
    u = self
    while u.op in GroupOp.Movement: u = u.src[0]
    return u.op is Ops.BUFFER
  @property
  def buffer_base(self) -> UOp:
    """The PARAM/DEFINE_* under shape views and AFTERs."""
    u = self
    while u.op in (Ops.RESHAPE, Ops.AFTER): u = u.src[0]
    return u
  def index(self, *idx: UOp | int) -> UOp:
    """The element of a buffer at `idx` (one flat index, or one per dimension of a shaped buffer). Indexing a view
    (permute, shrink, pad, ...) indexes the buffer under it; a padded element reads as 0 and is never written."""
    from tg.uop.view import view_index
    if not isinstance(self.dtype, PtrDType): raise TypeError(f"index needs a buffer (pointer dtype), got {self.dtype}")
    if len(idx) not in (1, len(self.shape)): raise IndexError(f"{len(idx)} indices for a buffer of shape {self.shape}")
    buf, ix, gate = view_index(self, [i if isinstance(i, UOp) else UOp.const(dtypes.index, i) for i in idx])
    if gate is not None: ix = (ix[0].valid(gate), *ix[1:])
    return UOp(Ops.INDEX, self.dtype.base, (buf, *ix))
  def __getitem__(self, idx: UOp | int | slice | tuple) -> UOp:
    """`P[i, j]` is an element; with slices (`P[0, :]`, `P[1:3, ::-1]`) the view they select, to index further."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    if not any(isinstance(i, slice) for i in idx): return self.index(*idx)
    if len(idx) > len(self.shape): raise IndexError(f"{len(idx)} indices for a buffer of shape {self.shape}")
    idx = idx + (slice(None),) * (len(self.shape) - len(idx))
    bounds, flips, keep = [], [], []
    for d, (i, n) in enumerate(zip(idx, self.shape)):
      if isinstance(i, slice):
        start, stop, step = i.indices(n)
        if step not in (1, -1): raise IndexError(f"slice step {step} on axis {d}: only 1 and -1 make views")
        bounds.append((start, max(start, stop)) if step == 1 else (stop + 1, max(stop + 1, start + 1)))
        if step == -1: flips.append(d)
        keep.append(d)
      elif isinstance(i, int) and -n <= i < n: bounds.append((i % n, i % n + 1))
      elif isinstance(i, UOp) and dtypes.is_int(i.dtype) and 0 <= i.vmin and i.vmax < n: bounds.append((i, i + 1))  # P[r, :]
      else: raise IndexError(f"index {i!r} on axis {d} of shape {self.shape}: ints and UOps in range, and slices, make views")
    view = self.shrink(bounds).flip(flips)
    return view.reshape(tuple(view.shape[d] for d in keep))
  def multi(self, axis: int | None) -> UOp:
    """A sharded value's pieces (a MULTI's sources) read as split along `axis` instead (None: each a whole copy)."""
    if self.op is not Ops.MULTI: raise ValueError(f"multi() takes the pieces of a sharded value (MULTI), not a {self.op}")
    return UOp(Ops.MULTI, self.dtype, self.src, axis)
  def valid(self, gate: UOp) -> UOp: return gate.where(self, UOp.invalid())
  @property
  def gate(self) -> UOp | None:
    """The gate of a linear address (an INDEX, or a CAST of one to a vector pointer): loads through it read their alt and
    stores do nothing where it is false. None when ungated."""
    idx = self.src[0] if self.op is Ops.CAST else self
    return idx.src[2] if idx.op is Ops.INDEX and len(idx.src) > 2 else None
  def load(self, *deps: UOp) -> UOp:
    if self.op is not Ops.INDEX: raise TypeError(f"load needs an INDEX, got {self.op}")
    return UOp(Ops.LOAD, self.dtype, (self, *deps))
  def store(self, val: UOp | ConstLike, nontemporal: bool = False) -> UOp:
    """nontemporal: nothing reads the stored data soon, so it may go past the caches (streaming stores, where the target
    has them): a store of more data than the caches hold then costs no read of the line it overwrites. The STORE's arg."""
    if self.op is not Ops.INDEX: raise TypeError(f"store needs an INDEX, got {self.op}")
    return UOp(Ops.STORE, dtypes.void, (self, val if isinstance(val, UOp) else self.const_like(val)), NONTEMPORAL if nontemporal else None)
  def set(self, val: UOp | ConstLike, end: UOp | Sequence[UOp] = ()) -> UOp:
    """Store `val` at this INDEX (closing the ranges in `end`) and return the buffer as it is after the store."""
    st = self.store(val)
    st = st.end(*((end,) if isinstance(end, UOp) else end))
    return self.src[0].after(st)
  def end(self, *ranges: UOp) -> UOp: return UOp(Ops.END, dtypes.void, (self, *ranges)) if ranges else self
  def after(self, *deps: UOp) -> UOp:
    """This buffer once `deps` ran; on a view of a buffer, the same view of the buffer after them (so indexing still
    walks the view down to the buffer)."""
    from tg.uop.view import is_view
    if not deps: return self
    views: list[UOp] = []
    u = self
    while isinstance(u.dtype, PtrDType) and is_view(u): views.append(u); u = u.src[0]  # noqa: E702
    u = UOp(Ops.AFTER, u.dtype, (u, *deps))
    for v in reversed(views): u = v.replace(src=(u,))
    return u
  def sink(*srcs: UOp, arg: Any = None) -> UOp:  # type: ignore[misc]
    """A SINK over srcs: `x.sink(y)` and `UOp.sink(x, y)` (also with no sources) mean the same."""
    return UOp(Ops.SINK, dtypes.void, tuple(srcs), arg)
  @staticmethod
  def group(*srcs: UOp) -> UOp: return srcs[0] if len(srcs) == 1 else UOp(Ops.GROUP, dtypes.void, srcs)
  def reduce(self, *ranges: UOp, arg: Ops = Ops.ADD) -> UOp: return UOp(Ops.REDUCE, self.dtype, (self, *ranges), arg) if ranges else self
  def barrier(self) -> UOp: return UOp(Ops.BARRIER, dtypes.void, (self,))

  # ***** shapes (buffers and the tensor-level movement ops) *****
  def reshape(self, *shape: Any) -> UOp:
    """The same elements in another shape (one dimension may be -1); on a buffer, a view that indexes it row-major."""
    shp = _dims(shape)
    if shp.count(-1) > 1: raise ValueError(f"reshape to {shp}: only one dimension can be -1")
    if -1 in shp:
      known = prod(s for s in shp if s != -1)
      if known == 0 or not isinstance(self.size, int) or self.size % known: raise ValueError(f"can't reshape {self.shape} to {shp}")
      shp = tuple(self.size // known if s == -1 else s for s in shp)
    if any(not isinstance(s, UOp) and s < 0 for s in shp): raise ValueError(f"negative dimension in reshape {shp}")
    if prod(shp) != prod(self.shape) and isinstance(prod(shp), int) and isinstance(prod(self.shape), int):
      raise ValueError(f"can't reshape {self.shape} to {shp}: {prod(self.shape)} != {prod(shp)} elements")
    if shp == self.shape: return self
    if self.op is Ops.RESHAPE and isinstance(self.dtype, PtrDType): return self.src[0].reshape(shp)  # a buffer's shape replaces its shape
    return UOp(Ops.RESHAPE, self.dtype, (self,), shp)
  def expand(self, *shape: Any) -> UOp:
    """Broadcast dimensions of size 1 (-1 keeps a dimension)."""
    shp = tuple(s if n == -1 else n for s, n in zip(self.shape, _dims(shape))) + _dims(shape)[len(self.shape):]
    if len(shp) != len(self.shape) or any(s != n and s != 1 for s, n in zip(self.shape, shp)):
      raise ValueError(f"can't expand {self.shape} to {_dims(shape)}")
    return self if shp == self.shape else UOp(Ops.EXPAND, self.dtype, (self,), shp)
  def _axis(self, a: int) -> int:
    n = len(self.shape)
    if not -max(n, 1) <= a < max(n, 1): raise IndexError(f"axis {a} is out of range for a shape of {n} dimensions {self.shape}")
    return a + n if a < 0 else a
  def permute(self, *order: Any) -> UOp:
    o = tuple(self._axis(a) for a in _dims(order))
    if sorted(o) != list(range(len(self.shape))): raise ValueError(f"permute order {o} is not a permutation of {len(self.shape)} axes")
    return self if o == tuple(range(len(o))) else UOp(Ops.PERMUTE, self.dtype, (self,), o)
  def transpose(self, dim0: int = 1, dim1: int = 0) -> UOp:
    order = list(range(len(self.shape)))
    a, b = self._axis(dim0), self._axis(dim1)
    order[a], order[b] = order[b], order[a]
    return self.permute(order)
  def flatten(self, start_dim: int = 0, end_dim: int = -1) -> UOp:
    if not self.shape: return self.reshape(1)
    s, e = self._axis(start_dim), self._axis(end_dim)
    return self.reshape(self.shape[:s] + (prod(self.shape[s:e + 1]),) + self.shape[e + 1:])
  def unflatten(self, dim: int, sizes: Sequence[int]) -> UOp:
    d = self._axis(dim)
    return self.reshape(self.shape[:d] + tuple(sizes) + self.shape[d + 1:])
  def squeeze(self, dim: int | None = None) -> UOp:
    if dim is None: return self.reshape(tuple(s for s in self.shape if s != 1))
    d = self._axis(dim)
    return self if self.shape[d] != 1 else self.reshape(self.shape[:d] + self.shape[d + 1:])
  def unsqueeze(self, dim: int) -> UOp:
    n = len(self.shape)
    d = dim + n + 1 if dim < 0 else dim
    if not 0 <= d <= n: raise IndexError(f"unsqueeze dim {dim} is out of range for {n} dimensions")
    return self.reshape(self.shape[:d] + (1,) + self.shape[d:])
  def shrink(self, arg: Sequence[tuple[int, int] | None]) -> UOp:
    """Keep [begin, end) of each axis (None keeps all of it). A bound may be a UOp (a range: P[r, :] in a kernel) whose
    values stay inside the axis."""
    full = tuple((0, s) if a is None else tuple(a) for a, s in zip(arg, self.shape))
    ok = all(_bounds_within(b, e, s) for (b, e), s in zip(full, self.shape))
    if len(arg) != len(self.shape) or not ok:
      raise ValueError(f"shrink {tuple(arg)} is out of bounds of {self.shape}")
    return self if all(b == 0 and e == s for (b, e), s in zip(full, self.shape)) else UOp(Ops.SHRINK, self.dtype, (self,), full)
  def pad(self, arg: Sequence[tuple[int, int] | None]) -> UOp:
    """(before, after) zeros on each axis (None pads nothing); on a buffer, the padding reads as 0 and isn't stored."""
    full = tuple((0, 0) if a is None else tuple(a) for a in arg)
    if len(full) != len(self.shape) or any(b < 0 or a < 0 for b, a in full): raise ValueError(f"pad {tuple(arg)} for shape {self.shape}")
    return self if all(p == (0, 0) for p in full) else UOp(Ops.PAD, self.dtype, (self,), full)
  def flip(self, *axis: Any) -> UOp:
    axes = {self._axis(a) for a in _dims(axis)}
    return UOp(Ops.FLIP, self.dtype, (self,), tuple(i in axes for i in range(len(self.shape)))) if axes else self
  @_cached
  def shape(self) -> tuple:
    _fill_cache(self, "shape")
    return _shape(self)
  @property
  def axis_type(self) -> AxisType: return self.arg[1]

  # ***** symbolic range analysis *****
  _min_max: tuple[Any, Any] = _Range(None)  # type: ignore[assignment]
  vmin: Any = _Range(0)
  vmax: Any = _Range(1)

  def unbound(self) -> UOp:
    """This expression with each bound variable (BIND) replaced by the variable: its range is then the variable's, not
    the one value it is bound to."""
    binds = {u: u.src[0] for u in self.toposort() if u.op is Ops.BIND}
    return self.substitute(binds) if binds else self
  def render(self, simplify: bool = True) -> str:
    """The expression as readable text, e.g. `((x*2)+1)`."""
    return render(self.simplify() if simplify else self)

def _value_dtype(u: UOp) -> DType: return u.dtype.base if isinstance(u.dtype, PtrDType) else u.dtype

def _dims(args: tuple) -> tuple:
  """Shape-like arguments given as one sequence or as separate numbers."""
  return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else tuple(args)

def _fill_cache(u: UOp, attr: str) -> None:
  """Compute a cached property for the sources first, without recursion, so that deep graphs don't overflow the stack."""
  for s in u.src:
    if attr not in s.__dict__: break
  else: return  # the common case: every source already has it
  pending = [s for s in u.src if attr not in s.__dict__]
  if all(attr in t.__dict__ for s in pending for t in s.src):  # one level missing (a new constant): no walk
    for s in pending: getattr(s, attr)
    return
  order: list[UOp] = []
  seen: set[UOp] = set()
  stack = [(s, False) for s in pending]
  while stack:
    n, expanded = stack.pop()
    if expanded: order.append(n); continue
    if n in seen or attr in n.__dict__: continue
    seen.add(n)
    stack.append((n, True))
    stack.extend((s, False) for s in n.src if attr not in s.__dict__ and s not in seen)
  for n in order: getattr(n, attr)

# ***** shapes *****
def _bounds_within(b: Any, e: Any, s: Any) -> bool:
  """0 <= b <= e <= s for a shrink's bounds: ints, or UOps decided over their ranges."""
  if isinstance(b, int) and isinstance(e, int): return 0 <= b <= e <= s
  if not all(isinstance(x, (int, UOp)) for x in (b, e)) or not isinstance(s, int): return False
  lo, hi, size = (b if isinstance(b, int) else b.vmin), (e if isinstance(e, int) else e.vmax), simplify_size(e - b)
  return isinstance(size, int) and size >= 0 and 0 <= lo and hi <= s

def _shape(u: UOp) -> tuple:
  if u.op in (Ops.RESHAPE, Ops.EXPAND): return u.arg
  if isinstance(u.dtype, PtrDType) and u.op in GroupOp.Defines: return (u.dtype.size,)
  if u.op in (Ops.BUFFER, Ops.IOTA): return (u.arg,) if isinstance(u.arg, int) else (u.arg[0],)
  if u.op is Ops.PERMUTE: return tuple(u.src[0].shape[i] for i in u.arg)
  if u.op is Ops.PAD: return tuple(simplify_size(s + b + a) for s, (b, a) in zip(u.src[0].shape, u.arg))
  if u.op is Ops.SHRINK: return tuple(simplify_size(e - b) for b, e in u.arg)
  if u.op is Ops.REDUCE_AXIS: return tuple(1 if i in u.arg[1] else s for i, s in enumerate(u.src[0].shape))
  if u.op in (Ops.CONST, Ops.VCONST, Ops.DEFINE_VAR, Ops.BIND, Ops.RANGE, Ops.SPECIAL, Ops.SINK, Ops.INDEX, Ops.LOAD, Ops.STORE): return ()
  if u.op is Ops.WHERE: return u.src[1].shape
  if u.op is Ops.MULTI and u.arg is not None:
    return tuple(sum(s.shape[i] for s in u.src) if i == u.arg else d for i, d in enumerate(u.src[0].shape))
  if u.src: return u.src[0].shape
  return ()

def simplify_size(x: Any) -> Any:
  """A size: an int, or a symbolic one simplified over its variables (an int when they cancel: a KV cache's start_pos + 1
  padded by max_context - start_pos - 1 is max_context). Not over their bound values, which would fold every size to an
  int, and a kernel built on it would hold the value."""
  if isinstance(x, int): return x
  binds = {u.src[0]: u for u in x.toposort() if u.op is Ops.BIND}
  x = x.unbound().simplify()
  if x.op is Ops.CONST: return x.arg
  made: dict[UOp, UOp] = {}  # the variables bound again (substitute refuses a node into a graph that holds it)
  for u in x.toposort():
    made[u] = binds[u] if u in binds else u if all(made[s] is s for s in u.src) else u.replace(src=tuple(made[s] for s in u.src))
  return made[x]

# ***** readable rendering *****
_INFIX = {Ops.ADD: "+", Ops.MUL: "*", Ops.IDIV: "//", Ops.MOD: "%", Ops.FDIV: "/", Ops.CMPLT: "<", Ops.CMPNE: "!=", Ops.CMPEQ: "==",
          Ops.AND: "&", Ops.OR: "|", Ops.XOR: "^", Ops.SHL: "<<", Ops.SHR: ">>", Ops.SUB: "-"}

def render(root: UOp) -> str:
  r: dict[UOp, str] = {}
  for u in root.toposort():
    s = [r[x] for x in u.src]
    if u.op is Ops.CONST: r[u] = repr(u.arg) if u.dtype != dtypes.bool else str(u.arg)
    elif u.op is Ops.VCONST: r[u] = repr(u.arg)
    elif u.op is Ops.DEFINE_VAR: r[u] = u.arg[0]
    elif u.op is Ops.BIND: r[u] = f"{s[0]}={s[1]}"
    elif u.op is Ops.RANGE: r[u] = f"r{u.arg[0]}"
    elif u.op is Ops.SPECIAL: r[u] = u.arg
    elif u.op is Ops.ADD and u.src[1].op is Ops.MUL and u.src[1].src[1].op is Ops.CONST and u.src[1].src[1].arg == -1:
      r[u] = f"({s[0]}-{r[u.src[1].src[0]]})"
    elif u.op is Ops.MUL and u.src[1].op is Ops.CONST and u.src[1].arg == -1: r[u] = f"(-{s[0]})"
    elif u.op in _INFIX: r[u] = f"({s[0]}{_INFIX[u.op]}{s[1]})"
    elif u.op is Ops.WHERE: r[u] = f"({s[1]} if {s[0]} else {s[2]})"
    elif u.op is Ops.MAX: r[u] = f"max({s[0]}, {s[1]})"
    elif u.op is Ops.CAST: r[u] = f"{u.dtype.name}({s[0]})"
    elif u.op in GroupOp.ALU: r[u] = f"{u.op.name.lower()}({', '.join(s)})"
    else: r[u] = f"{u.op.name}({', '.join(s)})"
  return r[root]

def pretty(root: UOp, max_nodes: int = 200) -> str:
  """A listing of the graph: nodes used more than once get a name (x0, x1, ...) and are printed once."""
  topo = list(root.toposort())
  if len(topo) > max_nodes: return f"<UOp {root.op!r} {root.dtype!r} arg={root.arg!r}, {len(topo)} nodes>"
  uses: dict[UOp, int] = {}
  for u in topo:
    for s in u.src: uses[s] = uses.get(s, 0) + 1
  names: dict[UOp, str] = {}
  lines: list[str] = []
  for u in topo:
    srcs = ", ".join(names[s] for s in u.src)
    text = f"UOp({u.op!r}, {u.dtype!r}, src=({srcs}{',' if len(u.src) == 1 else ''}), arg={u.arg!r})"
    if uses.get(u, 0) > 1:
      names[u] = f"x{len(lines)}"
      lines.append(f"{names[u]} = {text}")
    else: names[u] = text
  return "\n".join(lines + [names[root]])

def exec_uop(root: UOp, values: dict[UOp, Any]) -> Any:
  """Evaluate an ALU expression over constants and the given leaf values (tests and constant folding use it)."""
  r: dict[UOp, Any] = dict(values)
  for u in root.toposort():
    if u in r: continue
    if u.op is Ops.CONST: r[u] = u.arg
    elif u.op is Ops.VCONST: r[u] = u.arg
    elif u.op is Ops.CAST: r[u] = truncate[u.dtype.scalar()](r[u.src[0]])
    elif u.op in GroupOp.ALU: r[u] = exec_alu(u.op, u.dtype, [r[s] for s in u.src])
    else: raise ValueError(f"can't evaluate {u.op}: give its value")
  return r[root]

@functools.cache
def _substituter(ops: frozenset[Ops]) -> Any:
  """The matcher of UOp.substitute for mappings from these ops: one per set, as compiling a matcher costs a millisecond
  (the prefetch pass substitutes twice for every load it considers)."""
  from tg.uop.rewrite import PatternMatcher, UPat
  return PatternMatcher([(UPat(ops, name="x"), lambda ctx, x: ctx.get(x))])
