"""Random sampling built on Tensor.rand (threefry on a device counter, so it is reproducible after manual_seed and
replays draw new numbers under TinyJit): *_like, randperm and multinomial."""
from __future__ import annotations
from typing import TYPE_CHECKING, Any
from tg.uop import DType, dtypes
from tg.tensor.errors import TensorValueError
from tg.tensor.graph import shape_text

if TYPE_CHECKING:
  from tg.tensor.tensor import Tensor

class SamplingMixin:
  def rand_like(self: Tensor, **kw: Any) -> Tensor:
    from tg.tensor.tensor import Tensor
    return self._placed_like(Tensor.rand, drawn=True, **{"dtype": self.dtype if dtypes.is_float(self.dtype) else None, **kw})
  def randn_like(self: Tensor, **kw: Any) -> Tensor:
    from tg.tensor.tensor import Tensor
    return self._placed_like(Tensor.randn, drawn=True, **{"dtype": self.dtype if dtypes.is_float(self.dtype) else None, **kw})
  @staticmethod
  def randperm(n: int, device: str | None = None, dtype: DType = dtypes.int32, **kw: Any) -> Tensor:
    """A uniformly random permutation of 0..n-1: the order that sorts n uniform draws."""
    from tg.tensor.tensor import Tensor
    if n < 0: raise TensorValueError(f"randperm needs n >= 0, got {n}")
    if n == 0: return Tensor.empty(0, device=device, dtype=dtype)
    return Tensor.rand(n, device=device).argsort().cast(dtype).requires_grad_(kw.get("requires_grad"))
  def multinomial(self: Tensor, num_samples: int = 1, replacement: bool = False) -> Tensor:
    """Class indices drawn with probabilities proportional to self's (non-negative) weights, (C,) or (B, C) -> (num_samples,)
    or (B, num_samples), int32. With replacement: inverse CDF of uniform draws. Without (tinygrad allows only one sample):
    the num_samples smallest of -log(u) / w, an exponential race whose winners are a weighted draw without replacement."""
    from tg.tensor.tensor import Tensor
    if not 1 <= self.ndim <= 2: raise TensorValueError(f"multinomial takes weights of shape (C,) or (B, C), got {shape_text(self.shape)}")
    if num_samples < 1: raise TensorValueError(f"multinomial needs num_samples >= 1, got {num_samples}")
    w = self.unsqueeze(0) if self.ndim == 1 else self
    b, c = w.shape
    if not replacement and num_samples > c: raise TensorValueError(f"can't draw {num_samples} classes out of {c} without replacement")
    w = w.float()
    if replacement:
      cdf = w.cumsum(1)
      u = Tensor.rand(b, num_samples, 1, device=self.device) * cdf[:, -1:].unsqueeze(1)
      out = (u >= cdf.unsqueeze(1)).sum(-1, acc_dtype=dtypes.int32).minimum(c - 1)
    else:
      keys = -(1 - Tensor.rand(b, c, device=self.device)).log() / w  # u in (0, 1]: finite keys for w > 0, inf for w = 0
      out = keys.argsort(-1)[:, :num_samples]
    return (out[0] if self.ndim == 1 else out).cast(dtypes.int32)
