"""PYTHON: the reference semantics of the linear program (see tg.codegen.program), interpreted op by op.

A workgroup's threads run in lockstep: every value is a list with one entry per thread (lane), so a BARRIER is simply
a point all lanes reach together. Memory is exact: buffers are bytes read and written with struct (half, bfloat16
and fp8 through their bit patterns), registers and local memory hold Python values already rounded to their dtype."""
from __future__ import annotations
import base64, functools, itertools, pickle, struct, time
from typing import Any, Callable
from tg.uop import DType, GroupOp, Ops, PtrDType, UOp, dtypes, exec_alu, prod, python_alu, truncate
from tg.uop.dtype import bits_to_float, float_to_bits
from tg.codegen.device import Compiled, Compiler, MallocAllocator, OutOfBoundsError
from tg.codegen.renderer import Renderer
from tg.codegen.program import kernel_args

class PythonRenderer(Renderer):
  """Renders the linear program as base64 of its pickle: the 'source' is the UOps themselves."""
  device = "PYTHON"
  has_local, has_shared = True, True
  global_max, local_max, shared_max = (2**31,) * 3, (1024,) * 3, 65536
  vector_widths = (1, 2, 4, 8, 16)
  def render(self, uops: list[UOp], name: str = "kernel") -> str: return base64.b64encode(pickle.dumps(uops)).decode()

# ***** exact memory *****

_BITS_STORED = {dtypes.float16: "H", dtypes.bfloat16: "H", **{d: "B" for d in dtypes.fp8s}, dtypes.index: "q"}

@functools.cache
def _codec(dt: DType) -> tuple[struct.Struct, Callable[[Any], Any] | None, Callable[[Any], Any] | None]:
  """How `dt` (scalar or vector) sits in memory: a struct, and bits->value / value->bits for the formats struct lacks."""
  s = dt.scalar()
  st = struct.Struct(f"<{dt.count}{_BITS_STORED.get(s, s.fmt)}")
  # float16 too: through its bits, a NaN keeps its payload (see tg.uop.dtype.bits_to_float)
  if dtypes.is_float(s) and s in _BITS_STORED: return st, lambda b: bits_to_float(b, s), lambda x: float_to_bits(x, s)
  return st, None, None

def unpack_from(dt: DType, buf: Any, off: int) -> Any:
  st, dec, _ = _codec(dt)
  vals = st.unpack_from(buf, off)
  if dec is not None: vals = tuple(map(dec, vals))
  return vals if dt.count > 1 else vals[0]

def pack_into(dt: DType, buf: Any, off: int, val: Any) -> None:
  st, _, enc = _codec(dt)
  vals = val if dt.count > 1 else (val,)
  st.pack_into(buf, off, *(map(enc, vals) if enc is not None else vals))

class GlobalMem:
  """A kernel buffer: bytes, indexed in elements of the PARAM's dtype."""
  def __init__(self, mv: memoryview, base: DType, slot: int, kernel: str):
    self.mv, self.elsize, self.slot, self.kernel = mv, base.itemsize, slot, kernel
  def _off(self, i: int, dt: DType) -> int:
    if i < 0 or (off := i * self.elsize) + dt.itemsize > self.mv.nbytes:
      raise OutOfBoundsError(self.kernel, str(dt), i, self.slot, self.mv.nbytes // self.elsize)
    return off
  def load(self, i: int, dt: DType) -> Any: return unpack_from(dt, self.mv, self._off(i, dt))
  def store(self, i: int, dt: DType, val: Any) -> None: pack_into(dt, self.mv, self._off(i, dt), val)

class ListMem:
  """Register or local memory: a list of Python values, each already of the element dtype."""
  def __init__(self, ptr: PtrDType, what: str): self.vals, self.what = [truncate[ptr.base.scalar()](0)] * ptr.size, what
  def _check(self, i: int, n: int) -> None:
    if i < 0 or i + n > len(self.vals): raise IndexError(f"out of bounds: {n} elements at {i} of {self.what} ({len(self.vals)} elements)")
  def load(self, i: int, dt: DType) -> Any:
    self._check(i, dt.count)
    return tuple(self.vals[i:i + dt.count]) if dt.count > 1 else self.vals[i]
  def store(self, i: int, dt: DType, val: Any) -> None:
    self._check(i, dt.count)
    if dt.count > 1: self.vals[i:i + dt.count] = val
    else: self.vals[i] = val

# ***** per-lane value functions *****

def _alu(u: UOp) -> Callable[..., Any]:
  """The op on one lane's operands. Scalar ops skip exec_alu's checks, which only matter for vectors and divisions."""
  if u.dtype.count > 1 or u.op in (Ops.IDIV, Ops.MOD, Ops.FDIV): return lambda *a: exec_alu(u.op, u.dtype, a)
  f, t = python_alu[u.op], truncate[u.dtype]
  return lambda *a: t(f(*a))

def _cast(dt: DType) -> Callable[[Any], Any]:
  t = truncate[dt.scalar()]
  return (lambda x: tuple(map(t, x))) if dt.count > 1 else t

def _bitcast(src: DType, dst: DType) -> Callable[[Any], Any]:
  def f(x: Any) -> Any:
    buf = bytearray(src.itemsize)
    pack_into(src, buf, 0, x)
    return unpack_from(dst, buf, 0)
  return f

def _gep(lanes: tuple[int, ...]) -> Callable[[Any], Any]:
  if len(lanes) == 1: return lambda x: x[lanes[0]] if isinstance(x, tuple) else x
  return lambda x: tuple(x[j] for j in lanes)

def _lane_fn(u: UOp) -> Callable[..., Any] | None:
  if u.op in GroupOp.ALU: return _alu(u)
  if u.op is Ops.CAST: return (lambda p: p) if isinstance(u.dtype, PtrDType) else _cast(u.dtype)
  if u.op is Ops.BITCAST: return _bitcast(u.src[0].dtype, u.dtype)
  if u.op is Ops.VECTORIZE: return lambda *x: x
  if u.op is Ops.GEP: return _gep(u.arg)
  if u.op is Ops.INDEX: return (lambda m, i, g: (m, i) if g else None) if len(u.src) == 3 else (lambda m, i: (m, i))
  return None

# ***** the interpreter *****

@functools.cache
def _zero(dt: DType) -> Any: return dtypes.as_const((0,) * dt.count if dt.count > 1 else 0, dt)

class PythonProgram:
  """Runs the linear program once per workgroup (global_size of them, local_size threads each); GLOBAL RANGEs are plain loops."""
  def __init__(self, name: str, lib: bytes):
    self.name, self.uops = name, pickle.loads(base64.b64decode(lib))
    pos = {u: i for i, u in enumerate(self.uops)}
    self.srcs = [tuple(pos[s] for s in u.src) for u in self.uops]
    self.fns = [_lane_fn(u) for u in self.uops]
    self.jump: dict[int, int] = {}   # RANGE -> its END, END -> its RANGE, IF -> its ENDIF
    for i, u in enumerate(self.uops):
      if u.op is Ops.END: self.jump[i], self.jump[pos[u.src[-1]]] = pos[u.src[-1]], i
      elif u.op is Ops.ENDIF: self.jump[pos[u.src[0]]] = i
    params, variables = kernel_args(self.uops)
    self.slots, self.var_names = [p.arg for p in params], [v.arg[0] for v in variables]

  def __call__(self, *bufs: Any, global_size: tuple[int, int, int] = (1, 1, 1), local_size: tuple[int, int, int] = (1, 1, 1),
               vals: tuple[int, ...] = (), wait: bool = False) -> float | None:
    st = time.perf_counter()
    if len(bufs) != len(self.slots) or len(vals) != len(self.var_names):
      raise TypeError(f"{self.name} takes {len(self.slots)} buffers and {len(self.var_names)} vars, got {len(bufs)} and {len(vals)}")
    params = {u.arg: GlobalMem(memoryview(bufs[self.slots.index(u.arg)]).cast("B"), u.dtype.base, u.arg, self.name)
              for u in self.uops if u.op is Ops.PARAM}
    var_vals = dict(zip(self.var_names, vals))
    ls = tuple(local_size)
    lids = [(t % ls[0], t // ls[0] % ls[1], t // (ls[0] * ls[1])) for t in range(prod(ls))]
    for gz, gy, gx in itertools.product(*(range(g) for g in reversed(global_size))): self._run_group(params, var_vals, (gx, gy, gz), ls, lids)
    return time.perf_counter() - st if wait else None

  def _special(self, name: str, gid: tuple[int, ...], ls: tuple[int, ...], lids: list[tuple[int, ...]]) -> list[int]:
    """gidxN: the workgroup's id in dim N (global_size counts workgroups); lidxN: the thread's id in it; idxN: both combined."""
    d = int(name[-1])
    if name.startswith("gidx"): return [gid[d]] * len(lids)
    if name.startswith("lidx"): return [lid[d] for lid in lids]
    if name.startswith("idx"): return [gid[d] * ls[d] + lid[d] for lid in lids]
    raise NotImplementedError(f"unknown SPECIAL {name!r}: expected gidxN, lidxN or idxN")

  def _run_group(self, params: dict[int, GlobalMem], var_vals: dict[str, int], gid: tuple[int, ...], ls: tuple[int, ...],
                 lids: list[tuple[int, ...]]) -> None:
    uops, srcs, fns, jump, W = self.uops, self.srcs, self.fns, self.jump, len(lids)
    v: list[Any] = [None] * len(uops)
    masks = [[True] * W]   # which lanes are active, one entry per open IF
    ends: dict[int, int] = {}
    pc = 0
    while pc < len(uops):
      u, s = uops[pc], [v[j] for j in srcs[pc]]
      if (f := fns[pc]) is not None: v[pc] = [f(*a) for a in zip(*s)]
      elif u.op is Ops.LOAD:
        alt = s[1] if len(s) > 1 else [_zero(u.dtype)] * W  # what a lane that doesn't load (inactive) gets
        v[pc] = [a[0].load(a[1], u.dtype) if a is not None and m else x for a, m, x in zip(s[0], masks[-1], alt)]
      elif u.op is Ops.STORE:
        for a, m, x in zip(s[0], masks[-1], s[1]):
          if a is not None and m: a[0].store(a[1], u.src[1].dtype, x)
      elif u.op is Ops.RANGE:
        if any(e != s[0][0] for e in s[0]): raise RuntimeError(f"RANGE {u.arg} has different bounds across a workgroup: {s[0]}")
        if (end := s[0][0]) <= 0:
          pc = jump[pc] + 1
          continue
        ends[pc], v[pc] = end, [0] * W
      elif u.op is Ops.END:
        r = jump[pc]
        if (i := v[r][0] + 1) < ends[r]:
          v[r], pc = [i] * W, r + 1
          continue
      elif u.op is Ops.IF:
        masks.append(m := [a and bool(c) for a, c in zip(masks[-1], s[0])])
        if not any(m):
          pc = jump[pc]  # run the ENDIF, which pops the mask
          continue
      elif u.op is Ops.ENDIF: masks.pop()
      elif u.op in (Ops.CONST, Ops.VCONST): v[pc] = [u.arg] * W
      elif u.op is Ops.DEFINE_VAR: v[pc] = [var_vals[u.arg[0]]] * W
      elif u.op is Ops.SPECIAL: v[pc] = self._special(u.arg, gid, ls, lids)
      elif u.op is Ops.PARAM: v[pc] = [params[u.arg]] * W
      elif u.op is Ops.DEFINE_LOCAL: v[pc] = [ListMem(u.dtype, f"local {u.arg}")] * W
      elif u.op is Ops.DEFINE_REG: v[pc] = [ListMem(u.dtype, f"register {u.arg}") for _ in range(W)]
      elif u.op is Ops.AFTER: v[pc] = s[0]  # the buffer, once its sources (the END of a loop writing it) have run
      elif u.op not in (Ops.BARRIER, Ops.SINK, Ops.GROUP, Ops.NOOP):
        raise NotImplementedError(f"{u.op} is not part of a linear program (see tg.codegen.program)")
      pc += 1

class PythonDevice(Compiled):
  def __init__(self, device: str = "PYTHON"): super().__init__(device, MallocAllocator(), Compiler(), PythonProgram, PythonRenderer)
