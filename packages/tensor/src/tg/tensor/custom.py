"""Kernels written by hand inside tensor programs.

custom_kernel: fxn gets one PARAM per input (with its shape) and returns a kernel AST (a SINK), the same kind of AST the
scheduler makes; the tensors come back as the inputs after the kernel ran (AFTER), so kernels chain, and grad_fxn (if
given) says how gradients go through it. call: fxn is an expression over UOp.param(i, dtype, shape); it becomes tensor
ops (so it fuses, and gradients flow through it), or with grad_fxn a CALL whose backward is grad_fxn's."""
from __future__ import annotations
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable
from tg.uop import UOp, Ops, dtypes
from tg.tensor.errors import TensorValueError
from tg.tensor.graph import private_copy
from tg.tensor.multi import MultiDeviceError, realized_multi

if TYPE_CHECKING:
  from tg.tensor.tensor import Tensor

GradFxn = Callable[[UOp, UOp], "tuple[UOp | None, ...] | list[UOp | None]"]

@dataclass(frozen=True)
class CustomKernel:
  """The arg of a CUSTOM_KERNEL UOp: the user's AST, and grad_fxn(*gradients, kernel) -> a gradient (or None) per buffer,
  given a gradient for each output the loss reads (in buffer order), where kernel.src[0] is the AST and kernel.src[1:] the
  buffers (tinygrad's CALL, and Tensor.call's)."""
  ast: UOp
  grad_fxn: GradFxn | None = None

_BINARY: dict[Ops, Callable[[Any, Any], Any]] = {
  Ops.ADD: operator.add, Ops.SUB: operator.sub, Ops.MUL: operator.mul, Ops.FDIV: operator.truediv, Ops.MAX: lambda a, b: a.maximum(b),
  Ops.CMPLT: operator.lt, Ops.CMPNE: operator.ne, Ops.CMPEQ: operator.eq, Ops.POW: operator.pow, Ops.IDIV: operator.floordiv,
  Ops.MOD: operator.mod, Ops.AND: operator.and_, Ops.OR: operator.or_, Ops.XOR: operator.xor}
_UNARY: dict[Ops, Callable[[Any], Any]] = {
  Ops.NEG: operator.neg, Ops.RECIPROCAL: lambda a: a.reciprocal(), Ops.EXP2: lambda a: a.exp2(), Ops.LOG2: lambda a: a.log2(),
  Ops.SQRT: lambda a: a.sqrt(), Ops.SIN: lambda a: a.sin(), Ops.TRUNC: lambda a: a.trunc()}

def _evaluate(fxn: UOp, ts: list[Tensor]) -> Tensor:
  """The expression over PARAMs as tensor ops on ts (PARAM i is ts[i])."""
  vals: dict[UOp, Any] = {}
  for u in fxn.toposort():
    if u.op is Ops.PARAM:
      if not 0 <= u.arg < len(ts): raise IndexError(f"the expression uses PARAM {u.arg}, the call has {len(ts)} tensors")
      t = ts[u.arg]
      if u.dtype.base != t.dtype: raise TypeError(f"PARAM {u.arg} is {u.dtype.base}, the tensor is {t.dtype}")
      if u.dtype.size != t.numel(): raise TensorValueError(f"PARAM {u.arg} has shape {u.shape}, the tensor {t.shape}")
      vals[u] = t
    elif u.op is Ops.RESHAPE and u.src[0].op is Ops.PARAM:
      if tuple(u.arg) != vals[u.src[0]].shape: raise TensorValueError(f"PARAM {u.src[0].arg} has shape {u.arg}, the tensor {vals[u.src[0]].shape}")
      vals[u] = vals[u.src[0]]
    elif u.op is Ops.CONST: vals[u] = u.arg
    elif u.op in _BINARY: vals[u] = _BINARY[u.op](*(vals[s] for s in u.src))
    elif u.op in _UNARY: vals[u] = _UNARY[u.op](vals[u.src[0]])
    elif u.op is Ops.WHERE: vals[u] = vals[u.src[0]].where(vals[u.src[1]], vals[u.src[2]])
    elif u.op is Ops.CAST: vals[u] = vals[u.src[0]].cast(u.dtype)
    else: raise NotImplementedError(f"Tensor.call can't evaluate {u.op} (elementwise expressions over PARAMs only)")
  out = vals[fxn]
  return out if not isinstance(out, (int, float, bool)) else ts[0].full_like(out)

def kernel_of(call: UOp) -> UOp:
  """The CUSTOM_KERNEL a grad_fxn's kernel argument (gradient.as_call's) stands for: the same UOp, rebuilt from its parts."""
  return UOp(Ops.CUSTOM_KERNEL, dtypes.void, call.src[1:], call.arg)

class CustomMixin:
  def custom_kernel(self: Tensor, *others: Tensor, fxn: Callable[..., UOp], grad_fxn: GradFxn | None = None) -> list[Tensor]:
    """Run the kernel fxn(*params) on these tensors' buffers (PARAM i is tensor i); returns each tensor after the kernel.
    The kernel writes the buffers it stores into in place, as an assign does: a tensor built before it on one of them
    reads the old contents (the scheduler runs its readers first), one built after the new."""
    from tg.tensor.tensor import Tensor
    from tg.tensor.schedule import stored_params
    ts = [self, *others]
    if any(t.is_sharded for t in ts): return _per_shard(ts, fxn, grad_fxn)
    ast = fxn(*[UOp.param(i, t.dtype, t.shape) for i, t in enumerate(ts)])
    if not isinstance(ast, UOp) or ast.op is not Ops.SINK: raise TypeError(f"custom_kernel's fxn must return a kernel SINK, got {ast!r:.80}")
    # an input only read is realized where it is, shared with every other reader (flash attention's backward kernels read
    # the forward's Q, K and V: each was copied out of the heads three times)
    stored = stored_params(ast)
    srcs = tuple(_written_buffer(t) if i in stored else t.uop for i, t in enumerate(ts))
    kernel = UOp(Ops.CUSTOM_KERNEL, dtypes.void, srcs, CustomKernel(ast, grad_fxn))
    return [Tensor(UOp(Ops.AFTER, s.dtype, (s, kernel))) for s in srcs]

  def as_param(self: Tensor, slot: int) -> UOp:
    """PARAM `slot` with this tensor's dtype and shape, to write Tensor.call expressions with (`a.as_param(0) * b.as_param(1)`).
    tinygrad wraps it in a Tensor; here it is the UOp, since call's fxn is a UOp expression."""
    return UOp.param(slot, self.dtype, self.shape)

  def call(self: Tensor, *others: Tensor, fxn: UOp, grad_fxn: GradFxn | None = None) -> Tensor:
    """fxn (an expression over UOp.param(i, dtype, shape)) applied to these tensors. Without grad_fxn its gradient is the
    expression's own; with one, grad_fxn(gradient, call) gives a gradient (or None) per tensor (call.src[1:] are their UOps)."""
    from tg.tensor.tensor import Tensor
    ts = [self, *others]
    value = _evaluate(fxn, ts)
    if grad_fxn is None: return value
    return Tensor(UOp(Ops.CALL, value.dtype, (value.detach().uop, *(t.uop for t in ts)), grad_fxn))

def _written_buffer(t: Tensor) -> UOp:
  """The buffer a custom kernel writes t into: t's own when t names one, else a private copy of t's value (of what a pending
  contiguous() copies): t.contiguous() would be the same UOp as a user's x.contiguous(), which must keep x's values."""
  from tg.tensor.schedule import names_buffer
  if names_buffer(t.uop): return t.uop
  return private_copy(t.uop.src[0] if t.uop.op is Ops.CONTIGUOUS else t.uop)

def _per_shard(ts: list[Tensor], fxn: Callable[..., UOp], grad_fxn: GradFxn | None) -> list[Tensor]:
  """custom_kernel on sharded tensors (all on the same devices): the kernel runs once per device on that device's pieces
  (fxn sees the pieces' shapes), as tinygrad's sharded custom kernels do; the results are split as the inputs were."""
  from tg.tensor.tensor import Tensor
  if any(t.device != ts[0].device for t in ts):
    raise MultiDeviceError(f"custom_kernel on tensors on {' and '.join(sorted({str(t.device) for t in ts}))}: shard them on the same devices")
  multis = [(t if realized_multi(t.uop) else t.contiguous().realize()).uop for t in ts]
  runs = [Tensor(multis[0].src[i]).custom_kernel(*[Tensor(m.src[i]) for m in multis[1:]], fxn=fxn, grad_fxn=grad_fxn)
          for i in range(len(multis[0].src))]
  return [Tensor(UOp(Ops.MULTI, m.dtype, tuple(r[k].uop for r in runs), m.arg)) for k, m in enumerate(multis)]
