"""What a well-formed graph looks like at each stage, as pattern matchers that return True for a valid UOp.
`type_verify` checks every UOp of a graph and raises SpecError with the offending UOp printed."""
from __future__ import annotations
from typing import Iterable
from tg.uop.dtype import AddrSpace, PtrDType, dtypes
from tg.uop.ops import AxisType, GroupOp, KernelInfo, Ops
from tg.uop.rewrite import PatternMatcher, UPat
from tg.uop.symbolic import range_given_valid
from tg.uop.uop import Invalid, UOp, render

class SpecError(RuntimeError): pass

def _alu_ok(x: UOp) -> bool:
  s = x.src
  if x.op is Ops.WHERE: return s[0].dtype.scalar() == dtypes.bool and s[1].dtype == s[2].dtype == x.dtype
  if x.op in GroupOp.Comparison: return x.dtype.scalar() == dtypes.bool and s[0].dtype == s[1].dtype
  if x.op in (Ops.SHL, Ops.SHR): return s[0].dtype == x.dtype and dtypes.is_int(x.dtype)
  if x.op in (Ops.IDIV, Ops.MOD, Ops.AND, Ops.OR, Ops.XOR) and dtypes.is_float(x.dtype): return False
  if x.op is Ops.FDIV and dtypes.is_int(x.dtype): return False
  return all(u.dtype == x.dtype for u in s)

def _const_ok(x: UOp) -> bool:
  if x.arg is Invalid: return True  # (an index's masked-off value, or a lane not written: mask.where(x, Invalid))
  if x.dtype == dtypes.bool: return isinstance(x.arg, bool)
  if dtypes.is_int(x.dtype): return isinstance(x.arg, int) and not isinstance(x.arg, bool)
  return isinstance(x.arg, float) if dtypes.is_float(x.dtype) else False

def _is_ptr(u: UOp) -> bool: return isinstance(u.dtype, PtrDType)

# rules shared by every stage: values, ALU, variables
shared_spec = PatternMatcher([
  (UPat(Ops.CONST, name="x"), _const_ok),
  (UPat(Ops.VCONST, name="x"), lambda x: isinstance(x.arg, tuple) and len(x.arg) == x.dtype.count),
  (UPat(GroupOp.ALU, name="x"), _alu_ok),
  (UPat((Ops.CAST, Ops.BITCAST), name="x"), lambda x: len(x.src) == 1),
  (UPat(Ops.DEFINE_VAR, name="x"), lambda x: isinstance(x.arg, tuple) and len(x.arg) == 3 and x.arg[1] <= x.arg[2] and dtypes.is_int(x.dtype)),
  (UPat(Ops.BIND, src=(UPat(Ops.DEFINE_VAR), UPat(Ops.CONST)), name="x"), lambda x: x.dtype == x.src[0].dtype),
  (UPat(Ops.SINK, dtypes.void), lambda: True),
  (UPat(Ops.GROUP, dtypes.void), lambda: True),
  (UPat(Ops.NOOP), lambda: True),
  (UPat(Ops.CUSTOM), lambda: True),
])

kernel_spec = shared_spec + PatternMatcher([
  (UPat(Ops.PARAM, name="x"), lambda x: _is_ptr(x) and isinstance(x.arg, int) and not x.src and x.dtype.addrspace == AddrSpace.GLOBAL),  # type: ignore
  (UPat(Ops.DEFINE_LOCAL, name="x"), lambda x: _is_ptr(x) and x.dtype.addrspace == AddrSpace.LOCAL),  # type: ignore
  (UPat(Ops.DEFINE_REG, name="x"), lambda x: _is_ptr(x) and x.dtype.addrspace == AddrSpace.REG),  # type: ignore
  (UPat(Ops.RESHAPE, name="x"), lambda x: _is_ptr(x) and x.dtype == x.src[0].dtype),
  (UPat(Ops.RANGE, src=(UPat.var("e"),), name="x"),
   lambda x, e: dtypes.is_int(e.dtype) and isinstance(x.arg, tuple) and isinstance(x.arg[0], int) and isinstance(x.arg[-1], AxisType)),
  (UPat(Ops.SPECIAL, src=(UPat.var("e"),), name="x"), lambda x, e: dtypes.is_int(e.dtype) and isinstance(x.arg, str)),
  (UPat(Ops.INDEX, name="x"), lambda x: _is_ptr(x.src[0]) and all(dtypes.is_int(i.dtype) or i.dtype == dtypes.bool for i in x.src[1:])),
  (UPat(Ops.LOAD, src=(UPat(Ops.INDEX),), allow_any_len=True, name="x"), lambda x: True),
  (UPat(Ops.STORE, dtypes.void, src=(UPat((Ops.INDEX, Ops.CAST)), UPat.var()), allow_any_len=True), lambda: True),
  (UPat(Ops.END, dtypes.void, name="x"), lambda x: len(x.src) >= 2 and all(r.op is Ops.RANGE for r in x.src[1:])),
  (UPat(Ops.AFTER, name="x"), lambda x: x.dtype == x.src[0].dtype and len(x.src) >= 2),
  (UPat(Ops.REDUCE, name="x"), lambda x: x.arg in GroupOp.ALU and all(r.op is Ops.RANGE for r in x.src[1:]) and x.dtype == x.src[0].dtype),
  (UPat(Ops.VECTORIZE, name="x"), lambda x: len(x.src) == x.dtype.vcount and all(s.dtype == x.dtype.scalar() for s in x.src)),
  (UPat(Ops.GEP, name="x"), lambda x: isinstance(x.arg, tuple) and len(x.arg) == x.dtype.vcount),
  (UPat((Ops.CONTRACT, Ops.UNROLL), name="x"), lambda x: isinstance(x.arg, tuple)),
  (UPat(Ops.WMMA), lambda: True),
  (UPat(Ops.BARRIER, dtypes.void), lambda: True),
])

program_spec = shared_spec + PatternMatcher([
  (UPat(Ops.PARAM, name="x"), lambda x: _is_ptr(x) and isinstance(x.arg, int)),
  (UPat((Ops.DEFINE_LOCAL, Ops.DEFINE_REG), name="x"), lambda x: _is_ptr(x)),
  (UPat(Ops.RANGE, src=(UPat.var("e"),), name="x"), lambda x, e: dtypes.is_int(e.dtype)),
  (UPat(Ops.SPECIAL, name="x"), lambda x: isinstance(x.arg, str)),
  (UPat(Ops.INDEX, name="x"), lambda x: _is_ptr(x) and _is_ptr(x.src[0]) and len(x.src) in (2, 3)),
  (UPat(Ops.LOAD, src=(UPat((Ops.INDEX, Ops.CAST)),), allow_any_len=True), lambda: True),
  (UPat(Ops.STORE, dtypes.void, src=(UPat((Ops.INDEX, Ops.CAST)), UPat.var()), allow_any_len=True), lambda: True),
  (UPat(Ops.END, dtypes.void, name="x"), lambda x: all(r.op is Ops.RANGE for r in x.src[1:])),
  (UPat(Ops.AFTER, name="x"), lambda x: x.dtype == x.src[0].dtype),
  (UPat(Ops.VECTORIZE, name="x"), lambda x: len(x.src) == x.dtype.vcount),
  (UPat(Ops.GEP, name="x"), lambda x: isinstance(x.arg, tuple) and len(x.arg) == x.dtype.vcount),
  (UPat((Ops.IF, Ops.ENDIF, Ops.BARRIER, Ops.WMMA)), lambda: True),
])

def _movement_ok(x: UOp) -> bool:
  if not isinstance(x.arg, tuple): return False
  n = len(x.src[0].shape)
  if x.op is Ops.PERMUTE: return sorted(x.arg) == list(range(n))
  if x.op in (Ops.PAD, Ops.SHRINK): return len(x.arg) == n and all(isinstance(p, tuple) and len(p) == 2 for p in x.arg)
  if x.op is Ops.EXPAND: return len(x.arg) == n and all(s == e or s == 1 for s, e in zip(x.src[0].shape, x.arg))
  if x.op is Ops.FLIP: return len(x.arg) == n
  return True

tensor_spec = shared_spec + PatternMatcher([
  (UPat((Ops.UNIQUE, Ops.DEVICE, Ops.BUFFER, Ops.BUFFER_VIEW, Ops.COPY, Ops.CONTIGUOUS, Ops.DETACH, Ops.ASSIGN, Ops.KERNEL, Ops.CALL,
         Ops.CUSTOM_KERNEL, Ops.AFTER, Ops.PARAM, Ops.IOTA)), lambda: True),
  (UPat(GroupOp.Movement, name="x"), _movement_ok),
  (UPat(Ops.REDUCE_AXIS, name="x"),
   lambda x: isinstance(x.arg, tuple) and x.arg[0] in GroupOp.ALU and all(0 <= a < len(x.src[0].shape) for a in x.arg[1])),
])

def type_verify(uops: UOp | Iterable[UOp], spec: PatternMatcher) -> None:
  """Check every UOp (of a graph, or a linear list) against a spec; raise SpecError naming the first that fails.
  A kernel graph gets the whole-kernel checks of verify_kernel too."""
  for u in (uops.toposort() if isinstance(uops, UOp) else uops):
    ok = spec.rewrite(u)
    if ok is not True:
      raise SpecError(f"UOp fails the spec ({'no rule matches' if ok is None else 'rule says invalid'}): {u.op} {u.dtype} arg={u.arg!r}\n{u!r}")
  if spec is kernel_spec and isinstance(uops, UOp): verify_kernel(uops)

# ***** whole-kernel checks: what no single UOp's rule can see *****
def buffer_name(buf: UOp) -> str:
  b = buf.buffer_base
  return f"{b.op.name} {b.arg} ({b.dtype})"

def verify_kernel(ast: UOp) -> None:
  """A kernel's RANGE ids are unique, each STORE writes its buffer's dtype, and every index whose range is known
  statically stays inside its buffer (an index under a gate, only where the gate holds)."""
  name = ast.arg.name if isinstance(ast.arg, KernelInfo) else "kernel"
  ranges: dict[int, UOp] = {}
  for u in ast.toposort():
    if u.op is Ops.RANGE and (prev := ranges.setdefault(u.arg[0], u)) is not u:
      raise SpecError(f"kernel {name!r}: two RANGEs have id {u.arg[0]} (ends {render(prev.src[0])} and {render(u.src[0])}, "
                      f"{prev.arg[-1]} and {u.arg[-1]}): give each loop its own id")
    if u.op is Ops.STORE and u.src[0].op is Ops.INDEX and u.src[1].dtype.scalar() != u.src[0].dtype.scalar():
      raise SpecError(f"kernel {name!r}: a STORE of {u.src[1].dtype} into {buffer_name(u.src[0].src[0])}: cast the value first")
    if u.op is Ops.INDEX and isinstance(u.src[0].dtype, PtrDType): _check_bounds(name, u)

def _check_bounds(name: str, idx: UOp) -> None:
  buf, ixs = idx.src[0], [i for i in idx.src[1:] if i.dtype != dtypes.bool]
  shape = buf.shape if len(ixs) > 1 else (buf.dtype.size,)  # type: ignore[attr-defined]
  if len(ixs) != len(shape): return
  gated = [i.op is Ops.WHERE and i.src[2].op is Ops.CONST and i.src[2].arg is Invalid for i in ixs]
  gate = None  # a gate on any one index guards the whole access
  for i, g in zip(ixs, gated):
    if g: gate = i.src[0] if gate is None else gate & i.src[0]
  for axis, (i, n, g) in enumerate(zip(ixs, shape, gated)):
    if not isinstance(n, int) or n < 0: continue
    e = i.src[1] if g else i
    lo, hi = range_given_valid(gate, e) if gate is not None else (e.vmin, e.vmax)
    if isinstance(lo, int) and isinstance(hi, int) and (lo < 0 or hi >= n):
      where = f"axis {axis} of shape {tuple(shape)}" if len(shape) > 1 else f"its {n} elements"
      raise SpecError(f"kernel {name!r}: index {render(e)} into {buffer_name(buf)} spans [{lo}, {hi}], past {where} [0, {n - 1}]")
