"""Layers as plain classes holding Tensors: calling one builds graph, nothing runs until realize.

Parameters are found by walking attributes (tg.tensor.nn.state), so a model is any object that holds layers.
Initializations follow PyTorch's defaults, so models trained there behave the same here."""
from __future__ import annotations
import math
from typing import Sequence
from tg.uop import dtypes
from tg.tensor.tensor import Tensor
from tg.tensor.errors import TensorValueError
from tg.tensor.graph import shape_text
from tg.tensor.nn import optim, state  # noqa: F401  (tg.tensor.nn.optim / .state as attributes, like tinygrad's nn)

def _pair(x: int | Sequence[int], n: int = 2) -> tuple[int, ...]: return (x,) * n if isinstance(x, int) else tuple(x)

def _bound_uniform(shape: tuple[int, ...], fan_in: int) -> Tensor:
  """PyTorch's default for weights and biases: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
  b = 1 / math.sqrt(max(fan_in, 1))
  return Tensor.uniform(*shape, low=-b, high=b)

class Linear:
  def __init__(self, in_features: int, out_features: int, bias: bool = True):
    self.weight = Tensor.kaiming_uniform(out_features, in_features, a=math.sqrt(5))
    self.bias = _bound_uniform((out_features,), in_features) if bias else None
  def __call__(self, x: Tensor) -> Tensor: return x.linear(self.weight.T, self.bias)

def _same_padding(kernel_size: tuple[int, ...], stride: int | Sequence[int], dilation: int | Sequence[int], padding: str) -> tuple[int, ...]:
  """padding="same" as the flat (left, right, top, bottom, ...) padding that keeps each spatial size: d * (k - 1) in all,
  the odd one on the right/bottom (PyTorch's split). Only with stride 1; only "same" (PyTorch also takes "valid",
  tinygrad doesn't: we follow tinygrad)."""
  if padding != "same": raise TensorValueError(f"padding {padding!r} is not a padding mode: the only string is 'same' (or give ints)")
  if any(s != 1 for s in _pair(stride, len(kernel_size))):
    raise TensorValueError(f"padding='same' needs stride 1, got stride {stride}: give the padding as ints for a strided convolution")
  totals = [d * (k - 1) for d, k in zip(_pair(dilation, len(kernel_size)), kernel_size)]
  return tuple(p for t in reversed(totals) for p in (t // 2, t - t // 2))

class Conv2d:
  """N-d convolution over the last len(kernel_size) axes (Conv1d and Conv2d fix that number). padding may be "same"."""
  ndim = 2
  def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int], stride: int | Sequence[int] = 1,
               padding: int | Sequence[int] | str = 0, dilation: int | Sequence[int] = 1, groups: int = 1, bias: bool = True):
    self.kernel_size = _pair(kernel_size, self.ndim)
    if isinstance(padding, str): padding = _same_padding(self.kernel_size, stride, dilation, padding)
    self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
    shape = (out_channels, in_channels // groups, *self.kernel_size)
    self.weight = Tensor.kaiming_uniform(*shape, a=math.sqrt(5))
    self.bias = _bound_uniform((out_channels,), math.prod(shape[1:])) if bias else None
  def __call__(self, x: Tensor) -> Tensor:
    return x.conv2d(self.weight, self.bias, self.groups, self.stride, self.dilation, self.padding)

class Conv1d(Conv2d):
  ndim = 1

class ConvTranspose2d(Conv2d):
  def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int], stride: int | Sequence[int] = 1,
               padding: int | Sequence[int] = 0, output_padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
               groups: int = 1, bias: bool = True):
    super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias)
    shape = (in_channels, out_channels // groups, *self.kernel_size)
    self.weight = Tensor.kaiming_uniform(*shape, a=math.sqrt(5))
    self.bias = _bound_uniform((out_channels,), math.prod(shape[1:])) if bias else None
    self.output_padding = output_padding
  def __call__(self, x: Tensor) -> Tensor:
    return x.conv_transpose2d(self.weight, self.bias, self.groups, self.stride, self.dilation, self.padding, self.output_padding)

class ConvTranspose1d(ConvTranspose2d):
  ndim = 1

class BatchNorm:
  """Batch normalization over every axis but the channel axis 1. In training (Tensor.training) it normalizes by the batch's
  statistics and updates the running ones lazily (they realize with whatever is realized next, e.g. the optimizer step);
  in eval it uses the running ones."""
  def __init__(self, sz: int, eps: float = 1e-5, affine: bool = True, track_running_stats: bool = True, momentum: float = 0.1):
    self.eps, self.momentum, self.track_running_stats = eps, momentum, track_running_stats
    self.weight, self.bias = (Tensor.ones(sz), Tensor.zeros(sz)) if affine else (None, None)
    if track_running_stats:
      self.running_mean, self.running_var = Tensor.zeros(sz, requires_grad=False), Tensor.ones(sz, requires_grad=False)
      self.num_batches_tracked = Tensor.zeros((), dtype=dtypes.int64, requires_grad=False)  # (0-d int64: PyTorch's and tinygrad's)
  def __call__(self, x: Tensor) -> Tensor:
    axes = tuple(i for i in range(x.ndim) if i != 1)
    if Tensor.training or not self.track_running_stats:
      mean = x.mean(axes)
      var = (x - mean.reshape(1, -1, *[1] * (x.ndim - 2))).square().mean(axes)
      if Tensor.training and self.track_running_stats:
        n = x.numel() // x.shape[1]
        m = self.momentum
        self.running_mean.assign((1 - m) * self.running_mean + m * mean.detach())
        self.running_var.assign((1 - m) * self.running_var + m * var.detach() * (n / max(n - 1, 1)))
        self.num_batches_tracked.assign(self.num_batches_tracked + 1)
    else: mean, var = self.running_mean, self.running_var
    return x.batchnorm(self.weight, self.bias, mean, (var + self.eps).rsqrt())
BatchNorm1d = BatchNorm2d = BatchNorm3d = BatchNorm

class LayerNorm:
  def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5, elementwise_affine: bool = True):
    self.normalized_shape = _pair(normalized_shape, 1)
    self.eps = eps
    self.weight, self.bias = (Tensor.ones(*self.normalized_shape), Tensor.zeros(*self.normalized_shape)) if elementwise_affine else (None, None)
  def __call__(self, x: Tensor) -> Tensor:
    n = len(self.normalized_shape)
    if x.shape[-n:] != self.normalized_shape: raise ValueError(f"LayerNorm over {self.normalized_shape}, input has shape {shape_text(x.shape)}")
    y = x.layernorm(tuple(range(-n, 0)), self.eps)
    return y if self.weight is None else y * self.weight + self.bias

class LayerNorm2d(LayerNorm):
  """LayerNorm over the channel axis 1 of an (N, C, H, W) input: each pixel's C values normalized together."""
  def __init__(self, channels: int, eps: float = 1e-5, elementwise_affine: bool = True): super().__init__(channels, eps, elementwise_affine)
  def __call__(self, x: Tensor) -> Tensor: return super().__call__(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

class InstanceNorm:
  """Each sample's each channel normalized over its spatial axes (any number of them). affine defaults to True, as in
  tinygrad (PyTorch's InstanceNorm2d defaults to False); no running statistics."""
  def __init__(self, num_features: int, eps: float = 1e-5, affine: bool = True):
    self.num_features, self.eps = num_features, eps
    self.weight, self.bias = (Tensor.ones(num_features), Tensor.zeros(num_features)) if affine else (None, None)
  def __call__(self, x: Tensor) -> Tensor:
    if x.ndim < 3 or x.shape[1] != self.num_features:
      raise TensorValueError(f"InstanceNorm of {self.num_features} channels needs an (N, {self.num_features}, ...) input, got {shape_text(x.shape)}")
    y = x.reshape(x.shape[0], self.num_features, -1).layernorm(-1, self.eps).reshape(x.shape)
    if self.weight is None: return y
    shape = (1, -1, *[1] * (x.ndim - 2))
    return y * self.weight.reshape(shape) + self.bias.reshape(shape)

class GroupNorm:
  def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True):
    if num_channels % num_groups: raise ValueError(f"{num_channels} channels don't split into {num_groups} groups")
    self.num_groups, self.eps = num_groups, eps
    self.weight, self.bias = (Tensor.ones(num_channels), Tensor.zeros(num_channels)) if affine else (None, None)
  def __call__(self, x: Tensor) -> Tensor:
    y = x.reshape(x.shape[0], self.num_groups, -1).layernorm(-1, self.eps).reshape(x.shape)
    if self.weight is None: return y
    shape = (1, -1, *[1] * (x.ndim - 2))
    return y * self.weight.reshape(shape) + self.bias.reshape(shape)

class RMSNorm:
  def __init__(self, dim: int, eps: float = 1e-6, elementwise_affine: bool = True):
    self.eps = eps
    self.weight = Tensor.ones(dim) if elementwise_affine else None
  def __call__(self, x: Tensor) -> Tensor:
    """Normalized in float32 whatever x's dtype (a half input's squares would overflow), then back to x's dtype."""
    xf = x.float()
    y = (xf * (xf.square().mean(-1, keepdim=True) + self.eps).rsqrt()).cast(x.dtype)
    return y if self.weight is None else y * self.weight

class LSTMCell:
  """One LSTM step, PyTorch's gates and layout: weight_ih (4H, I), weight_hh (4H, H), gates in the order input, forget,
  cell, output; every weight and bias U(-1/sqrt(H), 1/sqrt(H)). Called with x (N, I) and (h, c) (zeros when None), it
  returns the new (h, c), realized as their own buffers (contiguous) so a loop over time doesn't grow one graph."""
  def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
    self.hidden_size = hidden_size
    self.weight_ih = _bound_uniform((4 * hidden_size, input_size), hidden_size)
    self.weight_hh = _bound_uniform((4 * hidden_size, hidden_size), hidden_size)
    self.bias_ih, self.bias_hh = (_bound_uniform((4 * hidden_size,), hidden_size), _bound_uniform((4 * hidden_size,), hidden_size)) \
      if bias else (None, None)
  def __call__(self, x: Tensor, hc: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    if hc is None: hc = (Tensor.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device),) * 2
    h, c = hc
    gates = x.linear(self.weight_ih.T, self.bias_ih) + h.linear(self.weight_hh.T, self.bias_hh)
    i, f, g, o = gates.chunk(4, dim=1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return (o.sigmoid() * c.tanh()).contiguous(), c.contiguous()

class Embedding:
  """A lookup table; the lookup is a one-hot select from the table (where, not a product: a NaN row stays in its row),
  so it has a gradient, and the scheduler makes it a gather: one kernel loading each row at its index, no loop over the
  vocabulary (an index out of range gives zeros, as tinygrad's)."""
  def __init__(self, vocab_size: int, embed_size: int):
    self.vocab_size, self.embed_size = vocab_size, embed_size
    self.weight = Tensor.normal(vocab_size, embed_size)
  def __call__(self, idx: Tensor) -> Tensor:
    hit = idx.reshape(-1, 1) == Tensor.arange(self.vocab_size, device=idx.device)
    return hit.unsqueeze(-1).where(self.weight, 0).sum(-2).reshape(*idx.shape, self.embed_size)

class Dropout:
  def __init__(self, p: float = 0.5):
    if not 0 <= p <= 1: raise TensorValueError(f"dropout probability {p} is not in [0, 1]")
    self.p = p
  def __call__(self, x: Tensor) -> Tensor: return x.dropout(self.p)
