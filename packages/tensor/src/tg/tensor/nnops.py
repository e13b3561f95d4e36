"""Neural-network functions on Tensors: convolution and pooling (windows made by movement ops, so a convolution is
one fused multiply-and-reduce kernel), normalization, dropout, losses, attention."""
from __future__ import annotations
import math
from typing import TYPE_CHECKING, Sequence
from tg.uop import dtypes

if TYPE_CHECKING:
  from tg.tensor.tensor import Tensor

def _tuple(x: int | Sequence[int], n: int) -> tuple[int, ...]: return (x,) * n if isinstance(x, int) else tuple(x)

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

  def conv2d(self: Tensor, weight: Tensor, bias: Tensor | None = None, groups: int = 1, stride: int | Sequence[int] = 1,
             dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0) -> Tensor:
    """N-d convolution (the name is PyTorch's; the spatial dims are weight.ndim - 2)."""
    nd = weight.ndim - 2
    if self.ndim != nd + 2: raise ValueError(f"conv of input {self.shape} with weight {weight.shape}: the input needs {nd + 2} dims")
    (bs, cin), (cout, cin_g) = self.shape[:2], weight.shape[:2]
    if cin != cin_g * groups: raise ValueError(f"input has {cin} channels, weight {weight.shape} with groups={groups} expects {cin_g * groups}")
    if cout % groups: raise ValueError(f"{cout} output channels don't split into {groups} groups")
    pads = _tuple(padding, nd)
    x = self.pad([(0, 0), (0, 0)] + [(p, p) for p in pads]) if any(pads) else self
    k = weight.shape[2:]
    win = x._pool(k, _tuple(stride, nd), _tuple(dilation, nd))  # (bs, cin, *o, *k)
    osz = win.shape[2:2 + nd]
    win = win.reshape(bs, groups, 1, cin_g, *osz, *k)
    w = weight.reshape(1, groups, cout // groups, cin_g, *[1] * nd, *k)
    axes = [3] + list(range(4 + nd, 4 + 2 * nd))
    out = (win * w).sum(axes).reshape(bs, cout, *osz)
    return out + bias.reshape(1, cout, *[1] * nd) if bias is not None else out

  def max_pool2d(self: Tensor, kernel_size: int | Sequence[int] = 2, stride: int | Sequence[int] | None = None,
                 dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0) -> Tensor:
    k = _tuple(kernel_size, 2)
    pads = _tuple(padding, 2)
    x = self.pad([(0, 0)] * (self.ndim - 2) + [(p, p) for p in pads], value=-math.inf) if any(pads) else self
    return x._pool(k, _tuple(stride if stride is not None else kernel_size, 2), _tuple(dilation, 2)).max((-2, -1))
  def avg_pool2d(self: Tensor, kernel_size: int | Sequence[int] = 2, stride: int | Sequence[int] | None = None,
                 dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0) -> Tensor:
    k = _tuple(kernel_size, 2)
    pads = _tuple(padding, 2)
    x = self.pad([(0, 0)] * (self.ndim - 2) + [(p, p) for p in pads]) if any(pads) else self
    return x._pool(k, _tuple(stride if stride is not None else kernel_size, 2), _tuple(dilation, 2)).mean((-2, -1))

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
    """Cross entropy of logits against class indices (integer Y) or class probabilities (float Y of the same shape)."""
    if dtypes.is_int(Y.dtype): return self.sparse_categorical_crossentropy(Y, label_smoothing=label_smoothing, reduction=reduction)
    n = self.shape[-1]
    y = Y * (1 - label_smoothing) + label_smoothing / n
    loss = -(self.log_softmax(-1) * y).sum(-1)
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
