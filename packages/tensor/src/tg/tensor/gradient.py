"""Autograd as rewrite rules: for each forward op, the gradients of its sources given the gradient of its result.
The backward graph is UOps like any other, so it fuses like any other."""
from __future__ import annotations
import math
from typing import Any
from tg.uop import UOp, Ops, UPat, PatternMatcher, GroupOp, dtypes, sum_acc_dtype
from tg.tensor.errors import TensorValueError
from tg.tensor.graph import const_uop, device_of, device_uop, mop
from tg.tensor.multi import shard_grad

def _c(like: UOp, v: float) -> UOp: return const_uop(v, like.dtype, device_of(like), like.shape)

def _reduce_grad(ctx: UOp, ret: UOp) -> tuple[UOp | None, ...]:
  x, (op, axes) = ret.src[0], ret.arg
  if op is Ops.ADD: return (ctx.expand(x.shape),)
  if op is Ops.MAX:  # shared equally among the maxima
    mask = UOp(Ops.CMPEQ, dtypes.bool, (x, ret.expand(x.shape))).cast(ctx.dtype)
    count = UOp(Ops.REDUCE_AXIS, ctx.dtype, (mask,), (Ops.ADD, axes))
    return (mask * (ctx / count).expand(x.shape),)
  if op is Ops.MUL:  # the product of the others: ret / x, but where the reduce holds a zero that is 0 / 0
    zero = x.eq(_c(x, 0.0))
    nz = zero.where(_c(x, 1.0), x)
    nz_prod = UOp(Ops.REDUCE_AXIS, x.dtype, (nz,), (Ops.MUL, axes))
    zeros = UOp(Ops.REDUCE_AXIS, x.dtype, (zero.cast(x.dtype),), (Ops.ADD, axes))
    # a zero's is the product of the rest if it is the only one; with a zero elsewhere, every other input's is 0
    alone, none = zeros.eq(_c(zeros, 1.0)).expand(x.shape), zeros.eq(_c(zeros, 0.0)).expand(x.shape)
    others = zero.where(alone.where(nz_prod.expand(x.shape), _c(x, 0.0)), none.where(nz_prod.expand(x.shape) / nz, _c(x, 0.0)))
    return (ctx.expand(x.shape) * others,)
  raise NotImplementedError(f"no gradient for a reduce of {op}")

def as_call(kernel: UOp) -> UOp:
  """A CUSTOM_KERNEL as grad_fxn sees it: tinygrad's CALL, src[0] the kernel's AST and src[1:] its buffers (the kernel
  itself, to read an output after it, is custom.kernel_of(call))."""
  return UOp(Ops.CALL, kernel.dtype, (kernel.arg.ast, *kernel.src), kernel.arg)

def _user_grad(fxn: Any, ctx: UOp | tuple[UOp, ...], ret: UOp) -> list[UOp | None]:
  n = len(ret.src) - (ret.op is Ops.CALL)
  if fxn is None: raise RuntimeError(f"no gradient through a {ret.op} without grad_fxn")
  grads = list(fxn(*ctx, ret) if isinstance(ctx, tuple) else fxn(ctx, ret))
  if len(grads) != n: raise TensorValueError(f"grad_fxn returned {len(grads)} gradients for {n} inputs")
  return grads

def _sum_to(g: UOp, shape: tuple[int, ...]) -> UOp:
  """The gradient of a broadcast: a sum over the broadcast axes, accumulated as a forward sum is (half in float32)."""
  axes = tuple(i for i, (a, b) in enumerate(zip(g.shape, shape)) if a != b)
  if not axes: return g
  acc = sum_acc_dtype(g.dtype) if dtypes.is_float(g.dtype) else g.dtype
  return UOp(Ops.REDUCE_AXIS, acc, (g.cast(acc),), (Ops.ADD, axes)).cast(g.dtype)

pm_gradient = PatternMatcher([
  (UPat(Ops.CAST, name="ret"), lambda ctx, ret: (ctx.cast(ret.src[0].dtype),) if dtypes.is_float(ret.src[0].dtype) else (None,)),
  (UPat(Ops.RECIPROCAL, name="ret"), lambda ctx, ret: (-ctx * ret * ret,)),
  (UPat(Ops.SIN, name="ret"), lambda ctx, ret: (ctx * (_c(ret, math.pi / 2) - ret.src[0]).sin(),)),
  (UPat(Ops.LOG2, name="ret"), lambda ctx, ret: (ctx / (ret.src[0] * _c(ret, math.log(2))),)),
  # a gradient of exactly 0 stays 0 where exp2 overflowed (0 * inf): sigmoid(-400), tanh and gelu at extremes
  (UPat(Ops.EXP2, name="ret"), lambda ctx, ret: (ctx.ne(_c(ctx, 0.0)).where(ctx * ret * _c(ret, math.log(2)), _c(ctx, 0.0)),)),
  (UPat(Ops.SQRT, name="ret"), lambda ctx, ret: (ctx / (ret * _c(ret, 2.0)),)),
  (UPat((Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.TRUNC, Ops.IDIV, Ops.MOD, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.THREEFRY), name="ret"),
   lambda ctx, ret: (None,) * len(ret.src)),
  (UPat(Ops.WHERE, name="ret"), lambda ctx, ret: (None, ret.src[0].where(ctx, _c(ctx, 0.0)), ret.src[0].where(_c(ctx, 0.0), ctx))),
  (UPat(Ops.ADD), lambda ctx: (ctx, ctx)),
  (UPat(Ops.SUB), lambda ctx: (ctx, -ctx)),
  (UPat(Ops.NEG), lambda ctx: (-ctx,)),
  (UPat(Ops.MUL, name="ret"), lambda ctx, ret: (ret.src[1] * ctx, ret.src[0] * ctx)),
  # a/b's slope in b is -(a/b)/b, as PyTorch's: -a/(b*b) overflowed b*b where a/b doesn't, and e/(1 + e) at e = exp(50) kept
  # the 1/b of the numerator's slope (its gradient 1, not 0)
  (UPat(Ops.FDIV, name="ret"), lambda ctx, ret: (ctx / ret.src[1], -ctx * (ret / ret.src[1]))),
  (UPat(Ops.MAX, name="ret"), lambda ctx, ret: (
    ctx * ((ret.src[0] > ret.src[1]).cast(ctx.dtype) + ret.src[0].eq(ret.src[1]).cast(ctx.dtype) * _c(ctx, 0.5)),
    ctx * ((ret.src[1] > ret.src[0]).cast(ctx.dtype) + ret.src[0].eq(ret.src[1]).cast(ctx.dtype) * _c(ctx, 0.5)))),
  (UPat(Ops.POW, name="ret"), lambda ctx, ret: (
    ctx * ret.src[1] * ret / ret.src[0], ctx * ret * ret.src[0].log2() * _c(ret, math.log(2)))),
  (UPat(Ops.REDUCE_AXIS, name="ret"), _reduce_grad),
  (UPat(Ops.CONTIGUOUS, name="ret"), lambda ctx, ret: (ctx,) + (None,) * (len(ret.src) - 1)),
  # an assign's value is what its target holds after it: the gradient goes to the value, none to the contents it overwrote
  (UPat(Ops.ASSIGN, name="ret"), lambda ctx, ret: (None, ctx) + (None,) * (len(ret.src) - 2)),
  (UPat(Ops.DETACH), lambda ctx: (None,)),
  # a custom kernel's grad_fxn (or a CALL's) splits its outputs' gradients among the inputs: it takes one per output the root
  # reads (compute_gradient keeps them apart; tinygrad's grad_fxn(grad_c, grad_d, call)), and sees the kernel as tinygrad's
  # CALL (and tg's Tensor.call) spells it: src[0] its AST, src[1:] its buffers
  (UPat(Ops.CUSTOM_KERNEL, name="ret"), lambda ctx, ret: tuple(_user_grad(ret.arg.grad_fxn, ctx, as_call(ret)))),
  (UPat(Ops.CALL, name="ret"), lambda ctx, ret: (None, *_user_grad(ret.arg, ctx, ret))),
  (UPat(Ops.COPY, name="ret"), lambda ctx, ret: (UOp(Ops.COPY, ctx.dtype, (ctx, device_uop(device_of(ret.src[0])))), None)),
  (UPat(Ops.MULTI, name="ret"), lambda ctx, ret: shard_grad(ctx, ret)),
  (UPat(Ops.RESHAPE, name="ret"), lambda ctx, ret: (ctx.reshape(ret.src[0].shape),)),
  (UPat(Ops.EXPAND, name="ret"), lambda ctx, ret: (_sum_to(ctx, ret.src[0].shape),)),
  (UPat(Ops.PERMUTE, name="ret"), lambda ctx, ret: (mop(Ops.PERMUTE, ctx, tuple(ret.arg.index(i) for i in range(len(ret.arg)))),)),
  (UPat(Ops.PAD, name="ret"), lambda ctx, ret: (mop(Ops.SHRINK, ctx, tuple((b, b + s) for (b, _), s in zip(ret.arg, ret.src[0].shape))),)),
  (UPat(Ops.SHRINK, name="ret"), lambda ctx, ret: (mop(Ops.PAD, ctx, tuple((b, s - e) for (b, e), s in zip(ret.arg, ret.src[0].shape))),)),
  (UPat(Ops.FLIP, name="ret"), lambda ctx, ret: (mop(Ops.FLIP, ctx, ret.arg),)),
])

def compute_gradient(root: UOp, root_grad: UOp, targets: set[UOp]) -> dict[UOp, UOp]:
  """d root / d t for every UOp t on a path from a target to root, given d root / d root = root_grad."""
  # only UOps between the targets and the root carry gradient
  needed: dict[UOp, bool] = {}
  for u in root.toposort(): needed[u] = u in targets or (u.op is not Ops.DETACH and any(needed[s] for s in u.src))
  grads: dict[UOp, UOp] = {root: root_grad}
  outputs: dict[UOp, dict[UOp, UOp]] = {}  # a custom kernel's: the gradient of each output the root reads, by its buffer
  for u in reversed(list(root.toposort())):
    if u not in grads or not u.src or not needed[u]: continue
    if u.op in (Ops.BUFFER, Ops.CONST, Ops.DEFINE_VAR, Ops.BIND): continue
    if u.op is Ops.AFTER and (k := u.src[1]).op is Ops.CUSTOM_KERNEL:  # kept apart, not summed: grad_fxn takes one per output
      per = outputs.setdefault(k, {})
      per[u.src[0]] = per[u.src[0]] + grads[u] if u.src[0] in per else grads[u]
      grads[k] = grads[u]  # (k is reached)
      continue
    ctx = tuple(outputs[u][b] for b in u.src if b in outputs[u]) if u in outputs else grads[u]
    srcs = pm_gradient.rewrite(u, ctx=ctx)
    if srcs is None:
      if u.op in GroupOp.Movement or u.op in GroupOp.ALU: raise NotImplementedError(f"no gradient rule for {u.op}")
      continue
    for s, g in zip(u.src, srcs):
      if g is None or not needed[s]: continue
      grads[s] = grads[s] + g if s in grads else g
  return grads
