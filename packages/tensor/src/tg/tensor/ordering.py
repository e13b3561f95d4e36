"""Order along an axis: sort, argsort, topk and the running (cumulative) max, min, product and logsumexp.

Everything is a comparison of pairs along the axis, reduced: no data-dependent control flow, a few fused kernels,
differentiable through the values picked. Sorting compares every pair (n x n: fine up to a few thousand); the running ops
compare every pair within blocks and scan the blocks' ends the same way (scan: n x 16). Sorting is stable (equal values
keep their order) and puts NaN last ascending, first descending, as PyTorch."""
from __future__ import annotations
import math
from typing import TYPE_CHECKING, Callable, NamedTuple
from tg.uop import dtypes, all_int
from tg.tensor.errors import TensorValueError

if TYPE_CHECKING:
  from tg.tensor.tensor import Tensor

SCAN_BLOCK = 16  # elements a scan reduces by a masked _prefix (scan): 16 took 0.2 ms for a cumsum of 65536, 64 0.7, 256 2.8
SCAN_DIRECT = 1 << 18  # a scan whose rows x n^2 prefix elements are at most this is one masked reduce: fewer kernels (eager
# cummax of 300: 0.7 ms, in blocks 2.5); past it the blocks are faster (512 rows of 256: 5.4 -> 0.13 ms)

class ValuesIndices(NamedTuple):
  """What sort, topk, cummax and cummin return: a tuple that also has PyTorch's .values and .indices."""
  values: Tensor
  indices: Tensor

def _direct(x: Tensor) -> bool:
  """Does a scan of x along its last axis run as one masked reduce (a block, or at most SCAN_DIRECT prefix elements)?"""
  return not all_int(x.shape) or x.shape[-1] <= SCAN_BLOCK or math.prod(x.shape) * x.shape[-1] <= SCAN_DIRECT

Scanned = tuple["Tensor", ...]

def scan(xs: Scanned, running: Callable[[Scanned], Scanned], combine: Callable[[Scanned, Scanned], Scanned], identity: tuple) -> Scanned:
  """An inclusive scan along the last axis of tensors of one shape that travel together (a running max and where it was).
  `running` scans a small one (_direct: a reduce of each _prefix); a bigger one scans blocks of SCAN_BLOCK and combines
  each with the scan of the ends of the blocks before it (the same way, a level per SCAN_BLOCK-fold of length), `identity`
  standing in before the first: about n * SCAN_BLOCK / 2 operations, where one _prefix of all n takes n^2 / 2 (a cumsum
  of 65536 floats took 2 s, numpy 0.17 ms; it takes 0.2 ms)."""
  n, lead = xs[0].shape[-1], xs[0].shape[:-1]
  if _direct(xs[0]): return running(xs)
  m, keep = -(-n // SCAN_BLOCK), ((0, 0),) * len(lead)
  inner = scan(tuple(x.pad(keep + ((0, m * SCAN_BLOCK - n),)).reshape(*lead, m, SCAN_BLOCK) for x in xs), running, combine, identity)  # (past n: cut)
  ends = scan(tuple(x[..., -1] for x in inner), running, combine, identity)
  before = tuple(x.pad(keep + ((1, 0),), value=i)[..., :m].unsqueeze(-1) for x, i in zip(ends, identity))  # the blocks before
  return tuple(x.reshape(*lead, m * SCAN_BLOCK)[..., :n] for x in combine(inner, before))

def _lowest(x: Tensor) -> float | int | bool:
  return -math.inf if dtypes.is_float(x.dtype) else False if x.dtype == dtypes.bool else dtypes.min(x.dtype)

class OrderingMixin:
  def _last(self: Tensor, axis: int) -> tuple[Tensor, int]:
    """self with `axis` moved last, and the axis resolved."""
    ax = self._axis(axis)
    if self.ndim == 0: return self.reshape(1), 0
    return self.permute([i for i in range(self.ndim) if i != ax] + [ax]), ax
  def _unlast(self: Tensor, ax: int, ndim: int) -> Tensor:
    """The inverse of _last for a tensor of `ndim` dims (0-d comes back 0-d)."""
    if ndim == 0: return self.reshape(())
    order = list(range(ndim - 1))
    order.insert(ax, ndim - 1)
    return self.permute(order)
  def _prefix(self: Tensor, fill: float | int | bool) -> Tensor:
    """(..., n) -> (..., n, n) with [..., i, j] = self[..., j] for j <= i, else fill: the prefix each running op reduces."""
    from tg.tensor.tensor import Tensor
    n = self.shape[-1]
    lower = Tensor.ones(n, n, dtype=dtypes.bool, device=self.device).tril()
    return lower.where(self.unsqueeze(-2), fill)
  def _scan(self: Tensor, running: Callable[[Tensor], Tensor], combine: Callable[[Tensor, Tensor], Tensor], identity: float | int) -> Tensor:
    """An inclusive scan along the last axis (scan: `running` scans a small one by a reduce of each _prefix)."""
    return scan((self,), lambda x: (running(x[0]),), lambda a, b: (combine(a[0], b[0]),), (identity,))[0]
  def _sort_onehot(self: Tensor, descending: bool) -> Tensor:
    """For (..., n): (..., r, i) true where element i lands at rank r. Element j goes before i if it orders before it, or
    ties with it and j < i; i's rank is how many go before it."""
    from tg.tensor.tensor import Tensor
    n = self.shape[-1]
    a, b = self.unsqueeze(-1), self.unsqueeze(-2)  # a: element i (rows), b: element j (columns)
    if dtypes.is_float(self.dtype):  # NaN orders after every number
      an, bn = a.isnan(), b.isnan()
      less = (b < a) | (an & bn.logical_not()) if not descending else (b > a) | (bn & an.logical_not())
      tie = b.eq(a) | (an & bn)
    else:
      less, tie = (b < a) if not descending else (b > a), b.eq(a)
    idx = Tensor.arange(n, device=self.device)
    before = less | (tie & (idx.unsqueeze(0) < idx.unsqueeze(1)))
    rank = before.sum(-1, acc_dtype=dtypes.int32)
    return rank.unsqueeze(-2).eq(idx.unsqueeze(-1))
  def _pick(self: Tensor, onehot: Tensor) -> Tensor:
    """For self (..., n) and a one-hot (..., m, n): the element each row of onehot selects. Floats by a max over the
    lowest value elsewhere, which keeps -0.0 (a sum of it and zeros is +0.0: PyTorch's sort keeps the sign)."""
    if self.dtype == dtypes.bool: return onehot.where(self.unsqueeze(-2), False).any(-1)
    if dtypes.is_float(self.dtype): return onehot.where(self.unsqueeze(-2), -math.inf).max(-1)
    return onehot.where(self.unsqueeze(-2), 0).sum(-1, acc_dtype=self.dtype)

  def sort(self: Tensor, dim: int = -1, descending: bool = False) -> ValuesIndices:
    """(values, indices) along dim; stable (tinygrad's bitonic sort need not be, PyTorch's stable=True is)."""
    from tg.tensor.tensor import Tensor
    x, ax = self._last(dim)
    if x.shape[-1] <= 1: return ValuesIndices(self, self.zeros_like(dtype=dtypes.int32))  # nothing to order
    onehot = x._sort_onehot(descending)
    idx = Tensor.arange(x.shape[-1], device=self.device)._broadcast_to(x.shape)
    return ValuesIndices(x._pick(onehot)._unlast(ax, self.ndim), idx._pick(onehot)._unlast(ax, self.ndim))
  def argsort(self: Tensor, dim: int = -1, descending: bool = False) -> Tensor: return self.sort(dim, descending).indices
  def topk(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted_: bool = True) -> ValuesIndices:
    """The k largest (or smallest) along dim with their indices, in order (sorted_=False gives the same order)."""
    n = self.shape[self._axis(dim)] if self.ndim else 1
    if not 0 <= k <= n: raise TensorValueError(f"topk k={k} is out of range for an axis of {n}")
    vals, idx = self.sort(dim, descending=largest)
    if self.ndim == 0: return ValuesIndices(vals, idx)
    ax = self._axis(dim)
    keep = [(0, k) if i == ax else None for i in range(self.ndim)]
    return ValuesIndices(vals.shrink(keep), idx.shrink(keep))

  def _cumext(self: Tensor, axis: int, largest: bool) -> ValuesIndices:
    from tg.tensor.tensor import Tensor
    orig, ax = self._last(axis)
    x = orig if largest else orig._flipped()  # the running min is the running max of the order reversed
    vals, idx = x._running_max(Tensor.arange(x.shape[-1], device=self.device, dtype=dtypes.int32)._broadcast_to(x.shape))
    return ValuesIndices((vals if largest else vals._flipped())._unlast(ax, self.ndim), idx._unlast(ax, self.ndim))
  def _running_max(self: Tensor, at: Tensor) -> tuple[Tensor, Tensor]:
    """The running maximum along the last axis and `at` where it was reached last (PyTorch's index; a NaN is the maximum
    from where it is), as a scan: a block's own result unless the blocks before hold a greater maximum (a later NaN or
    an equal value is the block's own)."""
    from tg.tensor.tensor import Tensor
    def running(x: Scanned) -> Scanned:
      n = x[0].shape[-1]
      pre, idx = x[0]._prefix(_lowest(x[0])), Tensor.arange(n, device=self.device)
      m = pre.max(-1, keepdim=True)
      same = pre.eq(m) | (pre.isnan() & m.isnan()) if dtypes.is_float(pre.dtype) else pre.eq(m)
      hit = same & (idx.unsqueeze(0) <= idx.unsqueeze(1))
      onehot = hit.where(idx, -1).max(-1).unsqueeze(-1).eq(idx)
      return x[0]._pick(onehot), x[1]._pick(onehot)
    def combine(block: Scanned, before: Scanned) -> Scanned:
      take = before[0] > block[0] if self.dtype != dtypes.bool else before[0] & block[0].logical_not()
      if dtypes.is_float(self.dtype): take = take | (before[0].isnan() & block[0].isnan().logical_not())
      return take.where(before[0], block[0]), take.where(before[1], block[1])
    vals, where = scan((self, at), running, combine, (_lowest(self), -1))
    return vals, where
  def cummax(self: Tensor, axis: int = 0, return_indices: bool = False) -> Tensor | ValuesIndices:
    """The running maximum, as tinygrad's; with return_indices, also the index where it was (last) reached, as
    PyTorch's cummax (which always returns both)."""
    r = self._cumext(axis, True)
    return r if return_indices else r.values
  def cummin(self: Tensor, axis: int = 0, return_indices: bool = False) -> Tensor | ValuesIndices:
    """The running minimum (see cummax)."""
    r = self._cumext(axis, False)
    return r if return_indices else r.values
  def cumprod(self: Tensor, axis: int = 0) -> Tensor:
    x, ax = self._last(axis)
    return x._scan(lambda p: p._prefix(1).prod(-1), lambda a, b: a * b, 1)._unlast(ax, self.ndim)
  def logcumsumexp(self: Tensor, axis: int = 0) -> Tensor:
    """log(cumsum(exp(x))), each prefix shifted by its own maximum (a shift by the global one underflows early terms)."""
    x, ax = self._last(axis)
    x = x if dtypes.is_float(x.dtype) else x.float()
    return x._scan(lambda p: p._prefix(-math.inf).logsumexp(-1), lambda a, b: a.logaddexp(b), -math.inf)._unlast(ax, self.ndim)
