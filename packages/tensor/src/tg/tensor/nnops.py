"""Neural-network functions on Tensors: convolution and pooling (windows made by movement ops, so a convolution is
one fused multiply-and-reduce kernel), normalization, dropout, losses, attention."""
from __future__ import annotations
import itertools, math
from typing import TYPE_CHECKING, Sequence
from tg.uop import UOp, Ops, dtypes

if TYPE_CHECKING:
  from tg.tensor.tensor import Tensor

def _tuple(x: int | Sequence[int], n: int) -> tuple[int, ...]: return (x,) * n if isinstance(x, int) else tuple(x)

def _channels_last(t: Tensor) -> Tensor:
  """t (bs, c, *spatial) as a copy with the channels innermost in memory, viewed in the same shape."""
  return t.permute(0, *range(2, t.ndim), 1).contiguous().permute(0, t.ndim - 1, *range(1, t.ndim - 1))

class NNMixin:
  def _window_last(self: Tensor, k: int, stride: int, dilation: int) -> Tensor:
    """(..., n) -> (..., o, k): the sliding windows of the last axis, by expand/reshape/pad/shrink only."""
    n = self.shape[-1]
    o = (n - dilation * (k - 1) - 1) // stride + 1
    if o <= 0: raise ValueError(f"a window of {k} (dilation {dilation}) doesn't fit in an axis of {n}")
    lead = self.shape[:-1]
    x = self.unsqueeze(-2).expand(*lead, k, n).reshape(*lead, k * n).pad([(0, 0)] * len(lead) + [(0, k * dilation)])
    x = x.reshape(*lead, k, n + dilation).shrink([None] * (len(lead) + 1) + [(0, (o - 1) * stride + 1)])
    if stride > 1:
      x = x.pad([(0, 0)] * (len(lead) + 1) + [(0, stride - 1)]).reshape(*lead, k, o, stride).shrink([None] * (len(lead) + 2) + [(0, 1)])
      x = x.reshape(*lead, k, o)
    return x.transpose(-1, -2)
  def _pool(self: Tensor, k: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...]) -> Tensor:
    """(..., *spatial) -> (..., *out_spatial, *k) over the last len(k) axes."""
    nd, lead, x = len(k), self.ndim - len(k), self
    for j in range(nd):
      ax = lead + j
      # window spatial axis j at the end: (lead, spatial but j, k_0..k_{j-1}, o_j, k_j), then put o_j back in place
      x = x.permute([i for i in range(x.ndim) if i != ax] + [ax])._window_last(k[j], stride[j], dilation[j])
      spatial = [lead + p if p < j else lead + nd - 1 + j if p == j else lead + p - 1 for p in range(nd)]
      x = x.permute(list(range(lead)) + spatial + list(range(lead + nd - 1, lead + nd - 1 + j)) + [x.ndim - 1])
    return x

  def _dilate(self: Tensor, stride: tuple[int, ...]) -> Tensor:
    """(bs, c, *n) -> (bs, c, *((n - 1) * s + 1)): s - 1 zeros between neighbours along each spatial axis."""
    x = self
    for j, s in enumerate(stride):
      if s == 1: continue
      ax, n = 2 + j, x.shape[2 + j]
      x = x.unsqueeze(ax + 1).pad([(0, s - 1) if i == ax + 1 else (0, 0) for i in range(x.ndim + 1)])
      x = x.reshape(*x.shape[:ax], n * s, *x.shape[ax + 2:]).shrink([(0, (n - 1) * s + 1) if i == ax else None for i in range(x.ndim - 1)])
    return x

  def _conv_input_grad(self: Tensor, weight: Tensor, size: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...],
                       groups: int) -> Tensor:
    """The gradient wrt a conv's input (of spatial size `size`), self being the output's: each output position's gradient
    times the whole kernel (a matmul over the output channels, with no padding zeros in it), then the products of each
    kernel tap added at the input positions it came from (one elementwise kernel)."""
    bs, cout, *o = self.shape
    cin_g, k = weight.shape[1], weight.shape[2:]
    npos, taps, cout_g = math.prod(o), math.prod(k), cout // groups
    g = self.reshape(bs, groups, cout_g, npos).permute(0, 3, 1, 2).reshape(bs, npos, groups, cout_g, 1)
    prods = (g * weight.reshape(groups, cout_g, cin_g * taps)).sum(3).contiguous()  # (bs, positions, groups, cin_g * taps)
    nd = len(k)
    prods = prods.reshape(bs, *o, groups * cin_g, *k).permute(0, nd + 1, *range(1, nd + 1), *range(nd + 2, 2 * nd + 2))
    out = None
    for tap in itertools.product(*[range(kk) for kk in k]):
      v = prods.shrink([None] * (2 + nd) + [(t, t + 1) for t in tap]).reshape(bs, groups * cin_g, *o)._dilate(stride)
      v = v.pad([(0, 0), (0, 0)] + [(t * d, n - t * d - m) for t, d, n, m in zip(tap, dilation, size, v.shape[2:])])
      out = v if out is None else out + v
    assert out is not None
    return out.contiguous()  # once: its readers (an activation's gradient, a bias's sum, the next weight's) would each redo the taps

  def conv2d(self: Tensor, weight: Tensor, bias: Tensor | None = None, groups: int = 1, stride: int | Sequence[int] = 1,
             dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0) -> Tensor:
    """N-d convolution (the name is PyTorch's; the spatial dims are weight.ndim - 2). Its gradients are written out here:
    wrt the input a matmul and a sum of shifted taps (_conv_input_grad), wrt the weight the input's windows against the
    output's gradient. (Differentiating the windowing itself would give a kernel dividing and testing every index.)"""
    from tg.tensor.tensor import Tensor
    nd = weight.ndim - 2
    if self.ndim != nd + 2: raise ValueError(f"conv of input {self.shape} with weight {weight.shape}: the input needs {nd + 2} dims")
    (bs, cin), (cout, cin_g) = self.shape[:2], weight.shape[:2]
    if cin != cin_g * groups: raise ValueError(f"input has {cin} channels, weight {weight.shape} with groups={groups} expects {cin_g * groups}")
    if cout % groups: raise ValueError(f"{cout} output channels don't split into {groups} groups")
    pads, st, dil, k = _tuple(padding, nd), _tuple(stride, nd), _tuple(dilation, nd), weight.shape[2:]
    x = self.pad([(0, 0), (0, 0)] + [(p, p) for p in pads]) if any(pads) else self
    win = x._pool(k, st, dil)  # (bs, cin, *o, *k)
    win = win.reshape(bs, groups, 1, cin_g, *win.shape[2:])
    osz = win.shape[4:4 + nd]
    # the weights are small: a copy with the output channels innermost lets a kernel load a vector of them at once
    wl = weight.permute(*range(1, nd + 2), 0).contiguous().permute(nd + 1, *range(nd + 1))
    w = wl.reshape(1, groups, cout // groups, cin_g, *[1] * nd, *k)
    out = (win * w).sum([3] + list(range(4 + nd, 4 + 2 * nd))).reshape(bs, cout, *osz)

    def grad_fxn(g: UOp, call: UOp) -> tuple[UOp, UOp]:
      gt, xt, wt = Tensor(g), Tensor(call.src[1]), Tensor(call.src[2])
      gx = gt._conv_input_grad(wt, xt.shape[2:], st, dil, groups)
      # the weight's gradient sums over batch and positions; with channels innermost (copies of x and g) the kernel's
      # innermost output axis (cin) is contiguous in memory and the reduce is an outer product of cout and cin
      xw = _channels_last(xt)._pool(k, st, dil).reshape(bs, groups, cin_g, *osz, *k)
      xw = xw.permute(0, *range(3, 3 + nd), 1, *range(3 + nd, 3 + 2 * nd), 2).reshape(bs, *osz, groups, 1, *k, cin_g)
      gl = _channels_last(gt).reshape(bs, groups, cout // groups, *osz).permute(0, *range(3, 3 + nd), 1, 2)
      gw = (xw * gl.reshape(bs, *osz, groups, cout // groups, *[1] * nd, 1)).sum(list(range(1 + nd)))
      return gx.uop, gw.reshape(cout, *k, cin_g).permute(0, nd + 1, *range(1, nd + 1)).uop
    out = Tensor(UOp(Ops.CALL, out.dtype, (out.detach().uop, x.uop, weight.uop), grad_fxn))
    return out + bias.reshape(1, cout, *[1] * nd) if bias is not None else out

  def conv_transpose2d(self: Tensor, weight: Tensor, bias: Tensor | None = None, groups: int = 1, stride: int | Sequence[int] = 1,
                       dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0, output_padding: int | Sequence[int] = 0) -> Tensor:
    """The adjoint of conv2d (what it does to an output's gradient), as a convolution: zeros between the inputs (stride),
    a full padding and the flipped kernel with in/out channels swapped. weight is (cin, cout // groups, *k), as in PyTorch."""
    nd = weight.ndim - 2
    if self.ndim != nd + 2: raise ValueError(f"conv_transpose of input {self.shape} with weight {weight.shape}: the input needs {nd + 2} dims")
    cin, cout_g, k = weight.shape[0], weight.shape[1], weight.shape[2:]
    if self.shape[1] != cin or cin % groups: raise ValueError(f"input has {self.shape[1]} channels, weight {weight.shape} expects {cin}")
    st, dil, pad, opad = _tuple(stride, nd), _tuple(dilation, nd), _tuple(padding, nd), _tuple(output_padding, nd)
    x = self._dilate(st)
    full = [(d * (kk - 1) - p, d * (kk - 1) - p + op) for kk, d, p, op in zip(k, dil, pad, opad)]
    x = x.pad([(0, 0), (0, 0)] + full)
    w = weight.reshape(groups, cin // groups, cout_g, *k).transpose(1, 2).reshape(groups * cout_g, cin // groups, *k).flip(list(range(2, 2 + nd)))
    return x.conv2d(w, bias, groups=groups, dilation=dil)

  def max_pool2d(self: Tensor, kernel_size: int | Sequence[int] = 2, stride: int | Sequence[int] | None = None,
                 dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0) -> Tensor:
    k = _tuple(kernel_size, 2)
    pads = _tuple(padding, 2)
    low = -math.inf if dtypes.is_float(self.dtype) else dtypes.min(self.dtype)  # an int pool stays int
    x = self.pad([(0, 0)] * (self.ndim - 2) + [(p, p) for p in pads], value=low) if any(pads) else self
    return x._pool(k, _tuple(stride if stride is not None else kernel_size, 2), _tuple(dilation, 2)).max((-2, -1))
  def avg_pool2d(self: Tensor, kernel_size: int | Sequence[int] = 2, stride: int | Sequence[int] | None = None,
                 dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0) -> Tensor:
    k = _tuple(kernel_size, 2)
    pads = _tuple(padding, 2)
    x = self.pad([(0, 0)] * (self.ndim - 2) + [(p, p) for p in pads]) if any(pads) else self
    return x._pool(k, _tuple(stride if stride is not None else kernel_size, 2), _tuple(dilation, 2)).mean((-2, -1))

  def interpolate(self: Tensor, size: Sequence[int], mode: str = "linear", align_corners: bool = False) -> Tensor:
    """Resize the trailing len(size) axes (PyTorch's F.interpolate; "linear" is bi/trilinear over them), one axis at a time
    as a gather of constant indices (and a blend of two for linear, in float; integer inputs are rounded back)."""
    from tg.tensor.tensor import Tensor
    if mode not in ("nearest", "linear"): raise ValueError(f"interpolate mode is 'nearest' or 'linear', not {mode!r}")
    if len(size) > self.ndim: raise ValueError(f"interpolate to {tuple(size)} needs at least {len(size)} dims, got shape {self.shape}")
    x = self if dtypes.is_float(self.dtype) or mode == "nearest" else self.float()
    for ax, m in zip(range(self.ndim - len(size), self.ndim), size):
      n = x.shape[ax]
      if n == m: continue
      pre: list[slice] = [slice(None)] * ax
      if mode == "nearest":
        x = x[(*pre, Tensor([min(n - 1, int(i * n / m)) for i in range(m)], device=x.device))]
        continue
      src = [i * (n - 1) / (m - 1) if m > 1 else 0.0 for i in range(m)] if align_corners else [max(0.0, (i + 0.5) * n / m - 0.5) for i in range(m)]
      lo = [min(int(s), n - 1) for s in src]
      hi = [min(i + 1, n - 1) for i in lo]
      w = Tensor([s - i for s, i in zip(src, lo)], device=x.device, dtype=x.dtype)
      a, b = x[(*pre, Tensor(lo, device=x.device))], x[(*pre, Tensor(hi, device=x.device))]
      x = a + (b - a) * w.reshape(m, *[1] * (x.ndim - ax - 1))
    return x if x.dtype == self.dtype else x.round().clip(dtypes.min(self.dtype), dtypes.max(self.dtype)).cast(self.dtype)
  def layernorm(self: Tensor, axis: int | Sequence[int] = -1, eps: float = 1e-5) -> Tensor:
    y = self - self.mean(axis, keepdim=True)
    return y * (y * y).mean(axis, keepdim=True).add(eps).rsqrt()
  def batchnorm(self: Tensor, weight: Tensor | None, bias: Tensor | None, mean: Tensor, invstd: Tensor,
                axis: int | Sequence[int] = 1) -> Tensor:
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    shape = tuple(s if i in axes else 1 for i, s in enumerate(self.shape))
    x = (self - mean.reshape(shape)) * (invstd.reshape(shape) if weight is None else (weight.reshape(shape) * invstd.reshape(shape)))
    return x + bias.reshape(shape) if bias is not None else x
  def dropout(self: Tensor, p: float = 0.5) -> Tensor:
    from tg.tensor.tensor import Tensor
    if not Tensor.training or p == 0: return self
    return (Tensor.rand(*self.shape, device=self.device) >= p).where(self, 0) * (1 / (1 - p))

  @staticmethod
  def einsum(formula: str, *operands: Tensor) -> Tensor:
    """Tensor.einsum("ij,jk->ik", a, b): every operand is aligned to one axis per letter, multiplied, and summed over the
    letters not in the output (a broadcasting product and one reduce: one kernel)."""
    return _einsum(formula, list(operands[0] if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else operands))

  def one_hot(self: Tensor, num_classes: int = -1) -> Tensor:
    from tg.tensor.tensor import Tensor
    if num_classes == -1: num_classes = int(self.max().item()) + 1
    return (self.unsqueeze(-1) == Tensor.arange(num_classes, device=self.device)).cast(dtypes.int32)
  def sparse_categorical_crossentropy(self: Tensor, Y: Tensor, ignore_index: int = -1, label_smoothing: float = 0.0,
                                      reduction: str = "mean") -> Tensor:
    """Cross entropy of logits (..., classes) against integer labels Y (...)."""
    from tg.tensor.tensor import Tensor
    n = self.shape[-1]
    log_probs = self.log_softmax(-1)
    mask = Y != ignore_index
    hit = (Y.unsqueeze(-1) == Tensor.arange(n, device=self.device)) & mask.unsqueeze(-1)
    nll = -(log_probs * hit).sum(-1)
    smooth = -log_probs.mean(-1) * mask
    loss = (1 - label_smoothing) * nll + label_smoothing * smooth
    if reduction == "none": return loss
    return loss.sum() / mask.sum().maximum(1) if reduction == "mean" else loss.sum()
  def cross_entropy(self: Tensor, Y: Tensor, reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits (N, C, ...) or (C,) against class indices (integer Y, (N, ...)) or class probabilities
    (float Y, the logits' shape); the classes are dim 1 as in PyTorch and tinygrad."""
    x = self.transpose(1, -1) if self.ndim > 2 else self
    if dtypes.is_int(Y.dtype): return x.sparse_categorical_crossentropy(Y, label_smoothing=label_smoothing, reduction=reduction)
    y = Y.transpose(1, -1) if Y.ndim > 2 else Y
    n = x.shape[-1]
    y = y * (1 - label_smoothing) + label_smoothing / n
    loss = -(x.log_softmax(-1) * y).sum(-1)
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss
  def binary_crossentropy(self: Tensor, Y: Tensor, reduction: str = "mean") -> Tensor:
    loss = -(Y * self.clip(1e-12, 1).log() + (1 - Y) * (1 - self).clip(1e-12, 1).log())
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss
  def binary_crossentropy_logits(self: Tensor, Y: Tensor, reduction: str = "mean") -> Tensor:
    loss = self.maximum(0) - self * Y + (1 + (-self.abs()).exp()).log()
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss
  def scaled_dot_product_attention(self: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                   is_causal: bool = False) -> Tensor:
    from tg.tensor.tensor import Tensor
    scores = self.matmul(key.transpose(-1, -2)) * (1 / math.sqrt(self.shape[-1]))
    if is_causal:
      causal = Tensor.ones(scores.shape[-2], scores.shape[-1], dtype=dtypes.bool, device=self.device).tril()
      scores = causal.where(scores, -math.inf)
    if attn_mask is not None: scores = attn_mask.where(scores, -math.inf) if attn_mask.dtype == dtypes.bool else scores + attn_mask
    return scores.softmax(-1).matmul(value)

def _einsum(formula: str, ops: list[Tensor]) -> Tensor:
  lhs, arrow, out = formula.replace(" ", "").partition("->")
  ins = lhs.split(",")
  if len(ins) != len(ops): raise ValueError(f"einsum {formula!r} names {len(ins)} operands, got {len(ops)}")
  if "." in formula: raise ValueError("einsum with '...' is not supported: name the axes")
  if not arrow: out = "".join(sorted(c for c in set(lhs) if c != "," and lhs.count(c) == 1))
  letters = sorted(set(lhs) - {","})
  sizes: dict[str, int] = {}
  aligned = []
  for spec, t in zip(ins, ops):
    if len(spec) != t.ndim: raise ValueError(f"einsum operand {spec!r} has {len(spec)} letters, the tensor has shape {t.shape}")
    if len(set(spec)) != len(spec): raise ValueError(f"einsum {spec!r}: a repeated letter (a diagonal) is not supported")
    for c, s in zip(spec, t.shape):
      if s != 1 and sizes.get(c, 1) not in (1, s):
        raise ValueError(f"einsum {formula!r}: letter {c!r} has sizes {sizes[c]} and {s} (shapes {[o.shape for o in ops]})")
      sizes[c] = max(sizes.get(c, 1), s)
    x = t.permute([spec.index(c) for c in letters if c in spec])
    aligned.append(x.reshape([t.shape[spec.index(c)] if c in spec else 1 for c in letters]))
  if any(c not in letters for c in out): raise ValueError(f"einsum {formula!r}: output letters must appear in the inputs")
  prod_ = aligned[0]
  for a in aligned[1:]: prod_ = prod_ * a
  prod_ = prod_.expand([sizes[c] for c in letters])
  summed = [i for i, c in enumerate(letters) if c not in out]
  red = prod_.sum(summed) if summed else prod_
  kept = [c for c in letters if c in out]
  return red.permute([kept.index(c) for c in out])
