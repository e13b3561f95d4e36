"""Elementwise math built from the primitive ops: inverse and hyperbolic trigonometry, erf, log10, logaddexp, copysign,
integer division and closeness tests. Polynomial approximations are accurate to float32 rounding (about 1e-7)."""
from __future__ import annotations
import functools, math
from typing import TYPE_CHECKING, Callable
from tg.uop import dtypes, least_upper_float

if TYPE_CHECKING:
  from tg.tensor.tensor import Tensor, Scalar

def _as_float(x: Tensor) -> Tensor: return x if dtypes.is_float(x.dtype) else x.cast(least_upper_float(x.dtype))
def _odd(x: Tensor, f: Callable[[Tensor], Tensor]) -> Tensor:
  """f (given on x >= 0) extended to an odd function: s * f(s * x), s = -1 where x < 0 and 1 elsewhere (NaN and -0.0 go
  through f as they are). sign(x) * f(|x|) had the gradient of sign at 0, which is 0: atan's, erf's and asinh's are not."""
  sgn = (x < 0).where(-1, 1).cast(x.dtype)
  return sgn * f(sgn * x)
def _signbit(x: Tensor) -> Tensor: return x.bitcast({2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[x.dtype.itemsize]) < 0

# erf's Maclaurin coefficients 2/sqrt(pi) (-1)^n / (n! (2n + 1)), n = 0..10 (the next term is 1e-9 of erf(1))
_ERF_SERIES = [2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(11)]

class MathMixin:
  def atan(self: Tensor) -> Tensor:
    """Cephes' range reduction (|x| > tan(3pi/8): pi/2 - atan(1/|x|); > tan(pi/8): pi/4 + atan((|x|-1)/(|x|+1))) and its
    degree-9 odd polynomial on |t| <= tan(pi/8). Each branch divides by a safe operand, so no unselected branch's inf
    reaches a gradient."""
    def on_positive(a: Tensor) -> Tensor:
      big, mid = a > 2.414213562373095, a > 0.4142135623730950
      t = big.where(-big.where(a, 1).reciprocal(), mid.where((a - 1) / (a + 1), a))
      z = t * t
      poly = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * t + t
      return big.where(math.pi / 2, mid.where(math.pi / 4, 0.0)) + poly
    return _odd(_as_float(self), on_positive)
  def asin(self: Tensor) -> Tensor:
    x = _as_float(self)
    return (x / ((1 - x) * (1 + x)).sqrt()).atan()
  def acos(self: Tensor) -> Tensor: return math.pi / 2 - self.asin()
  def sinh(self: Tensor) -> Tensor: return (self.exp() - (-self).exp()) / 2
  def cosh(self: Tensor) -> Tensor: return (self.exp() + (-self).exp()) / 2
  def asinh(self: Tensor) -> Tensor:
    """Odd from x >= 0: log(x + sqrt(x^2 + 1)) cancels for negative x."""
    return _odd(_as_float(self), lambda a: (a + (a * a + 1).sqrt()).log())
  def acosh(self: Tensor) -> Tensor:
    x = _as_float(self)
    return (x + (x * x - 1).sqrt()).log()
  def atanh(self: Tensor) -> Tensor:
    x = _as_float(self)
    return ((1 + x) / (1 - x)).log() / 2
  def erf(self: Tensor) -> Tensor:
    """Odd in x: from 1 on Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7), below it the Maclaurin series, so small
    values keep their relative accuracy (A&S gave 0 for erf(1e-8) and 5e-4 relative error at 1e-4)."""
    def on_positive(a: Tensor) -> Tensor:
      # each branch on its own range of a (0 elsewhere; A&S's capped at 10, where erf is 1 in float32), so the branch not
      # taken stays finite and its zero share of the gradient zero: erf'(inf) was nan
      small = a < 1
      sa, la = small.where(a, 0), small.where(1, (a >= 10).where(10, a))  # (NaN is neither: it goes through A&S's)
      z = sa * sa  # below 1 the Maclaurin series, to x^21: A&S's absolute 1.5e-7 is all of erf(1e-7)
      series = functools.reduce(lambda acc, c: acc * z + c, _ERF_SERIES[-2::-1], _ERF_SERIES[-1]) * sa
      t = (1 + 0.3275911 * la).reciprocal()
      poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
      return small.where(series, 1 - poly * (-la * la).exp())
    return _odd(_as_float(self), on_positive)
  def log10(self: Tensor) -> Tensor: return self.log2() * math.log10(2)
  def logaddexp(self: Tensor, other: Tensor | Scalar) -> Tensor:
    """log(exp(self) + exp(other)) without overflow: the larger one factored out (detached: the value doesn't depend on it)."""
    a, b = _as_float(self)._broadcasted(other)
    m = a.maximum(b).detach()
    safe = m.isinf().where(0, m)  # both -inf (or an inf): shift by 0, and log(exp) gives the inf back
    return safe + ((a - safe).exp() + (b - safe).exp()).log()
  def copysign(self: Tensor, other: Tensor | Scalar) -> Tensor:
    """|self| with the sign bit of other, as float: sign bits read through a bitcast, so -0.0 and NaN's sign count."""
    a, b = _as_float(self)._broadcasted(other)
    return _signbit(a).ne(_signbit(b)).where(-a, a)
  def idiv(self: Tensor, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
    """Integer division rounded toward zero (C semantics, tinygrad's idiv); Python's // rounds down instead."""
    if not dtypes.is_int(self.dtype) and self.dtype != dtypes.bool:
      raise TypeError(f"idiv needs an integer tensor, got {self.dtype}; use div(rounding_mode='trunc') for floats")
    return self.div(x, reverse, rounding_mode="trunc")
  def isclose(self: Tensor, other: Tensor | Scalar, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """|self - other| <= atol + rtol * |other| (numpy's and PyTorch's test), equal infinities close, NaN close to NaN only
    with equal_nan."""
    a, b = self._broadcasted(other)
    close = a.eq(b) | (a.isfinite() & b.isfinite() & ((a - b).abs() <= atol + rtol * b.abs()))
    return close | (a.isnan() & b.isnan()) if equal_nan else close
  def allclose(self: Tensor, other: Tensor | Scalar, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    return bool(self.isclose(other, rtol, atol, equal_nan).all().item())
