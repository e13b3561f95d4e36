"""Layers as plain classes holding Tensors: calling one builds graph, nothing runs until realize.

Parameters are found by walking attributes (tg.tensor.nn.state), so a model is any object that holds layers.
Initializations follow PyTorch's defaults, so models trained there behave the same here."""
from __future__ import annotations
import math
from typing import Sequence
from tg.uop import dtypes
from tg.tensor.tensor import Tensor
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

class Conv2d:
  """N-d convolution over the last len(kernel_size) axes (Conv1d and Conv2d fix that number)."""
  ndim = 2
  def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int], stride: int | Sequence[int] = 1,
               padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int = 1, bias: bool = True):
    self.kernel_size = _pair(kernel_size, self.ndim)
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

class BatchNorm:
  """Batch normalization over every axis but the channel axis 1. In training (Tensor.training) it normalizes by the batch's
  statistics and updates the running ones lazily (they realize with whatever is realized next, e.g. the optimizer step);
  in eval it uses the running ones."""
  def __init__(self, sz: int, eps: float = 1e-5, affine: bool = True, track_running_stats: bool = True, momentum: float = 0.1):
    self.eps, self.momentum, self.track_running_stats = eps, momentum, track_running_stats
    self.weight, self.bias = (Tensor.ones(sz), Tensor.zeros(sz)) if affine else (None, None)
    if track_running_stats:
      self.running_mean, self.running_var = Tensor.zeros(sz, requires_grad=False), Tensor.ones(sz, requires_grad=False)
      self.num_batches_tracked = Tensor.zeros(1, dtype=dtypes.int32, requires_grad=False)
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
BatchNorm1d = BatchNorm2d = BatchNorm

class LayerNorm:
  def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5, elementwise_affine: bool = True):
    self.normalized_shape = _pair(normalized_shape, 1)
    self.eps = eps
    self.weight, self.bias = (Tensor.ones(*self.normalized_shape), Tensor.zeros(*self.normalized_shape)) if elementwise_affine else (None, None)
  def __call__(self, x: Tensor) -> Tensor:
    n = len(self.normalized_shape)
    if x.shape[-n:] != self.normalized_shape: raise ValueError(f"LayerNorm over {self.normalized_shape}, input has shape {x.shape}")
    y = x.layernorm(tuple(range(-n, 0)), self.eps)
    return y if self.weight is None else y * self.weight + self.bias

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
    y = x * (x.square().mean(-1, keepdim=True) + self.eps).rsqrt()
    return y if self.weight is None else y * self.weight

class Embedding:
  """A lookup table; the lookup is a one-hot select from the table (where, not a product: a NaN row stays in its row),
  so it fuses and has a gradient."""
  def __init__(self, vocab_size: int, embed_size: int):
    self.vocab_size, self.embed_size = vocab_size, embed_size
    self.weight = Tensor.normal(vocab_size, embed_size)
  def __call__(self, idx: Tensor) -> Tensor:
    hit = idx.reshape(-1, 1) == Tensor.arange(self.vocab_size, device=idx.device)
    return hit.unsqueeze(-1).where(self.weight, 0).sum(-2).reshape(*idx.shape, self.embed_size)

class Dropout:
  def __init__(self, p: float = 0.5):
    if not 0 <= p < 1: raise ValueError(f"dropout probability {p} is not in [0, 1)")
    self.p = p
  def __call__(self, x: Tensor) -> Tensor: return x.dropout(self.p)
