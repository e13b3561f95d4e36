"""Elementwise math built from the primitive ops: inverse and hyperbolic trigonometry, erf, log10, logaddexp, copysign,
integer division and closeness tests. Polynomial approximations are accurate to float32 rounding (about 1e-7)."""
from __future__ import annotations
import functools, math
from typing import TYPE_CHECKING, Any, Callable
from tg.uop import DType, dtypes, least_upper_float
from tg.tensor.errors import TensorDtypeError, TensorValueError
from tg.tensor.graph import shape_text

if TYPE_CHECKING:
  from tg.tensor.tensor import Tensor, Scalar

def narrow_float(dt: DType) -> bool:
  """half, bfloat16 and the fp8s: math on them is done in float32 and rounded once."""
  return dtypes.is_float(dt) and dt.itemsize < 4

def in_float32(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
  """fn of a half, bfloat16 or fp8 tensor computed in float32 and rounded once, as PyTorch does: a composite's steps each
  rounded to the narrow type drifted (half exp(10) was 21950, not 22030; fp8e5m2 exp(10) its max 57344, not 20480)."""
  @functools.wraps(fn)
  def wrapper(self: Tensor, *args: Any, **kw: Any) -> Tensor:
    return fn(self.float(), *args, **kw).cast(self.dtype) if narrow_float(self.dtype) else fn(self, *args, **kw)
  return wrapper

def _as_float(x: Tensor) -> Tensor: return x if dtypes.is_float(x.dtype) else x.cast(least_upper_float(x.dtype))
def _odd(x: Tensor, f: Callable[[Tensor], Tensor]) -> Tensor:
  """f (given on x >= 0) extended to an odd function: s * f(s * x), s = -1 where x < 0 and 1 elsewhere (NaN and -0.0 go
  through f as they are). sign(x) * f(|x|) had the gradient of sign at 0, which is 0: atan's, erf's and asinh's are not."""
  sgn = (x < 0).where(-1, 1).cast(x.dtype)
  return sgn * f(sgn * x)
def _horner(x: Tensor, coeffs: list[float]) -> Tensor:
  """sum(c_n x^n for n >= 0) by Horner's rule."""
  return functools.reduce(lambda acc, c: acc * x + c, coeffs[-2::-1], coeffs[-1])
def _branches(inside: Tensor, x: Tensor, small: Callable[[Tensor], Tensor], big: Callable[[Tensor], Tensor], small_fill: float = 0,
              big_fill: float = 0) -> Tensor:
  """small(x) where `inside`, else big(x). Each sees a harmless fill where it isn't taken, so it stays finite there and its
  zero share of the gradient stays zero (an inf or nan there made the gradient nan)."""
  return inside.where(small(inside.where(x, small_fill)), big(inside.where(big_fill, x)))
def _near_zero(x: Tensor, limit: float, small: Callable[[Tensor], Tensor], big: Callable[[Tensor], Tensor]) -> Tensor:
  """small(x), a series, for |x| < limit (where big's formula loses the digits of a tiny result to cancellation)."""
  return _branches(x.abs() < limit, x, small, big)
_EXPM1 = [1 / math.factorial(n) for n in range(1, 12)]  # x^1..x^11 for |x| < 0.5: the next term is 2e-11 of the sum
_LOG1P = [(-1) ** (n + 1) / n for n in range(1, 16)]  # x^1..x^15 for |x| < 0.25: the next term is 5e-11 of the sum
def expm1(x: Tensor) -> Tensor: return _near_zero(x, 0.5, lambda v: _horner(v, _EXPM1) * v, lambda v: v.exp() - 1)
def log1p(x: Tensor) -> Tensor: return _near_zero(x, 0.25, lambda v: _horner(v, _LOG1P) * v, lambda v: (1 + v).log())
def _signbit(x: Tensor) -> Tensor: return x.detach().bitcast({2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[x.dtype.itemsize]) < 0

# erf's Maclaurin coefficients 2/sqrt(pi) (-1)^n / (n! (2n + 1)), n = 0..10 (the next term is 1e-9 of erf(1))
_ERF_SERIES = [2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(11)]

class MathMixin:
  @in_float32
  def atan(self: Tensor) -> Tensor:
    """Cephes' range reduction (|x| > tan(3pi/8): pi/2 - atan(1/|x|); > tan(pi/8): pi/4 + atan((|x|-1)/(|x|+1))) and its
    degree-9 odd polynomial on |t| <= tan(pi/8). Each branch divides by a safe operand, so no unselected branch's inf
    reaches a gradient."""
    def on_positive(a: Tensor) -> Tensor:
      big, mid = a > 2.414213562373095, a > 0.4142135623730950
      m = big.where(1, a)  # (the middle branch of an infinite x is inf/inf)
      t = big.where(-big.where(a, 1).reciprocal(), mid.where((m - 1) / (m + 1), a))
      z = t * t
      poly = t * (1 + (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z)
      return mid.where(big.where(math.pi / 2, math.pi / 4) + poly, poly)  # (nothing added below: -0.0 keeps its sign)
    return _odd(_as_float(self), on_positive)
  @in_float32
  def asin(self: Tensor) -> Tensor:
    x = _as_float(self)
    return (x / ((1 - x) * (1 + x)).sqrt()).atan()
  @in_float32
  def acos(self: Tensor) -> Tensor: return math.pi / 2 - self.asin()
  @in_float32
  def expm1(self: Tensor) -> Tensor:
    """exp(x) - 1, exact to float rounding for a tiny x too (as PyTorch's)."""
    return expm1(_as_float(self))
  @in_float32
  def log1p(self: Tensor) -> Tensor:
    """log(1 + x), exact to float rounding for a tiny x too (as PyTorch's)."""
    return log1p(_as_float(self))
  @in_float32
  def sinh(self: Tensor) -> Tensor:
    """(expm1(x) - expm1(-x)) / 2: exp(x) - exp(-x) cancels to 0 for a tiny x."""
    x = _as_float(self)
    return (expm1(x) - expm1(-x)) / 2
  @in_float32
  def tanh(self: Tensor) -> Tensor:
    """Odd from x >= 0: -e / (e + 2), e = expm1(-2x), 1 at inf; as 2 sigmoid(2x) - 1 (tinygrad's) it cancelled for a tiny x
    (tanh(4.6e-8) was 1.2e-7)."""
    return _odd(_as_float(self), lambda a: -(e := expm1(-2 * a)) / (e + 2))
  @in_float32
  def cosh(self: Tensor) -> Tensor: return (self.exp() + (-self).exp()) / 2
  @in_float32
  def asinh(self: Tensor) -> Tensor:
    """Odd from x >= 0: log(x + sqrt(x^2 + 1)) cancels for negative x."""
    # log1p of x + x^2 / (1 + sqrt(x^2 + 1)): no cancellation for a tiny x; from 1e4 log(2x), before x^2 overflows
    return _odd(_as_float(self), lambda a: _branches(a <= 1e4, a, lambda v: log1p(v * (1 + v / (1 + (v * v + 1).sqrt()))),
                                                      lambda v: v.log() + math.log(2), big_fill=1e4))
  @in_float32
  def acosh(self: Tensor) -> Tensor:
    """log1p(t + sqrt(t (x + 1))), t = x - 1 (exact near 1, where x^2 - 1 lost the digits), and log(2x) from 1e4 on
    (x^2 overflowed to inf from 2e19); NaN below 1."""
    x = _as_float(self)
    return _branches(x <= 1e4, x, lambda v: log1p((v - 1) + ((v - 1) * (v + 1)).sqrt()), lambda v: v.log() + math.log(2),
                     small_fill=1, big_fill=1e4)
  @in_float32
  def atanh(self: Tensor) -> Tensor:
    x = _as_float(self)
    return log1p(2 * x / (1 - x)) / 2  # log((1 + x) / (1 - x)) cancelled to 0 for a tiny x
  @in_float32
  def erf(self: Tensor) -> Tensor:
    """Odd in x: from 1 on Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7), below it the Maclaurin series, so small
    values keep their relative accuracy (A&S gave 0 for erf(1e-8) and 5e-4 relative error at 1e-4)."""
    def on_positive(a: Tensor) -> Tensor:
      def abramowitz_stegun(v: Tensor) -> Tensor:
        v = (v >= 10).where(10, v)  # erf is 1 in float32 there; an inf would make the gradient nan
        t = (1 + 0.3275911 * v).reciprocal()
        return 1 - t * _horner(t, [0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429]) * (-v * v).exp()
      # below 1 the Maclaurin series, to x^21: A&S's absolute 1.5e-7 is all of erf(1e-7)
      return _branches(a < 1, a, lambda v: _horner(v * v, _ERF_SERIES) * v, abramowitz_stegun, big_fill=1)
    return _odd(_as_float(self), on_positive)
  @in_float32
  def log10(self: Tensor) -> Tensor: return self.log2() * math.log10(2)
  def logaddexp(self: Tensor, other: Tensor | Scalar) -> Tensor:
    """log(exp(self) + exp(other)) without overflow: the larger one factored out (detached: the value doesn't depend on it)."""
    a, b = _as_float(self)._broadcasted(other)
    m = a.maximum(b).detach()
    safe = m.isinf().where(0, m)  # both -inf (or an inf): shift by 0, and log(exp) gives the inf back
    return safe + ((a - safe).exp() + (b - safe).exp()).log()
  def copysign(self: Tensor, other: Tensor | Scalar) -> Tensor:
    """|self| with the sign of other, in the dtype they promote to (tinygrad's: an int copysign stays int; PyTorch's is
    float): a float's sign bit read through a bitcast, so -0.0 and NaN's sign count. Through abs, so the gradient at
    self = 0 is 0 (PyTorch's and tinygrad's)."""
    a, b = self._broadcasted(other)
    return (_signbit(b) if dtypes.is_float(b.dtype) else b < 0).where(-a.abs(), a.abs())
  def idiv(self: Tensor, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
    """Integer division rounded toward zero (C semantics, tinygrad's idiv); Python's // rounds down instead."""
    if not dtypes.is_int(self.dtype) and self.dtype != dtypes.bool:
      raise TensorDtypeError(f"idiv needs an integer tensor, got {self.dtype}; use div(rounding_mode='trunc') for floats")
    return self.div(x, reverse, rounding_mode="trunc")
  def newton_schulz(self: Tensor, steps: int, params: tuple[float, ...], eps: float = 1e-7) -> Tensor:
    """tinygrad's Newton-Schulz iteration over the last two dims: X <- sum_i params[i] (X X^T)^i X, from X = self / |self|
    (Frobenius, plus eps). With Muon's (3.4445, -4.775, 2.0315) it pushes every singular value towards 1: about the
    nearest semi-orthogonal matrix. A tall matrix is iterated transposed, so that X X^T is the small product."""
    if self.ndim < 2: raise TensorValueError(f"newton_schulz needs a matrix (two or more dims), got shape {shape_text(self.shape)}")
    if self.shape[-2] > self.shape[-1]: return self.transpose(-2, -1).newton_schulz(steps, params, eps).transpose(-2, -1)
    x = self / (self.square().sum((-2, -1), keepdim=True).sqrt() + eps)
    for _ in range(steps):
      gram, term, nxt = x @ x.transpose(-2, -1), x, params[0] * x
      for p in params[1:]:
        term = gram @ term
        nxt = nxt + p * term
      x = nxt
    return x
  def isclose(self: Tensor, other: Tensor | Scalar, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """|self - other| <= atol + rtol * |other| (numpy's and PyTorch's test), equal infinities close, NaN close to NaN only
    with equal_nan."""
    a, b = self._broadcasted(other)
    close = a.eq(b) | (a.isfinite() & b.isfinite() & ((a - b).abs() <= atol + rtol * b.abs()))
    return close | (a.isnan() & b.isnan()) if equal_nan else close
  def allclose(self: Tensor, other: Tensor | Scalar, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """A 0-d bool tensor, as tinygrad's (PyTorch returns a Python bool): .item() it."""
    return self.isclose(other, rtol, atol, equal_nan).all()
