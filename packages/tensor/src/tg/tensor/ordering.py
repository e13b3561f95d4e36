"""Order along an axis: sort, argsort, topk and the running (cumulative) max, min, product and logsumexp.

No data-dependent control flow: a few fused kernels each, differentiable through the values picked. A small sort
compares every pair (n x n, one kernel); a larger one runs a bitonic network over integer keys that order as the values
and end in the element's index (log2(n)^2 / 2 steps of one kernel each: n log^2 n work). The running ops compare every
pair within blocks and scan the blocks' ends the same way (scan: n x 16). Sorting is stable (equal values keep their
order) and puts NaN last ascending, first descending, as PyTorch."""
from __future__ import annotations
import math
from typing import TYPE_CHECKING, Callable, NamedTuple
from tg.uop import DType, dtypes, all_int
from tg.tensor.errors import TensorValueError

if TYPE_CHECKING:
  from tg.tensor.tensor import Tensor

SCAN_BLOCK = 16  # elements a scan reduces by a masked _prefix (scan): 16 took 0.2 ms for a cumsum of 65536, 64 0.7, 256 2.8
SCAN_DIRECT = 1 << 18  # a scan whose rows x n^2 prefix elements are at most this is one masked reduce: fewer kernels (eager
# cummax of 300: 0.7 ms, in blocks 2.5); past it the blocks are faster (512 rows of 256: 5.4 -> 0.13 ms)
SORT_DIRECT = 1 << 27  # a sort of at most this many pairs (rows x n^2) compares every pair, in one kernel: eager, 1 x 4096
# took 5 ms that way and 16 by the network (its log2(n)^2 / 2 kernels), 256 x 512 9 and 14; past it the network is faster
# (1 x 16384: 33 -> 13 ms, the 50257 logits of a GPT-2 vocabulary 434 -> 19)

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

def _ordinal(x: Tensor) -> tuple[Tensor, Tensor | None]:
  """Signed integers that order as x's values (NaN above all, -0.0 equal to 0.0), 32-bit ones in int64 where x's items
  are 4 bytes or fewer (else int64), and where x holds -0.0 (None: not a float)."""
  if dtypes.is_float(x.dtype):
    f = x if x.dtype == dtypes.float64 else x.float()  # (exact)
    it = dtypes.int64 if f.dtype == dtypes.float64 else dtypes.int32
    bits, top = f.bitcast(it), dtypes.max(it)
    o = f.isnan().where(top, (f == 0).where(0, (bits < 0).where(bits ^ top, bits)))  # a negative's magnitude bits flipped
    return o.cast(dtypes.int64), bits == dtypes.min(it)
  if x.dtype == dtypes.uint64: return x.bitcast(dtypes.int64) ^ dtypes.min(dtypes.int64), None
  return x.cast(dtypes.int64) - (1 << 31 if x.dtype == dtypes.uint32 else 0), None

def _from_ordinal(o: Tensor, negzero: Tensor | None, dtype: DType) -> Tensor:
  """The values of _ordinal(x) back (a NaN comes back as the quiet NaN whose bits are the top ordinal)."""
  if dtypes.is_float(dtype):
    it = dtypes.int64 if dtype == dtypes.float64 else dtypes.int32
    assert negzero is not None
    bits = negzero.where(dtypes.min(it), (o < 0).where(o ^ dtypes.max(it), o)).cast(it)
    return bits.bitcast(dtypes.float64 if it == dtypes.int64 else dtypes.float32).cast(dtype)
  if dtype == dtypes.uint64: return (o ^ dtypes.min(dtypes.int64)).bitcast(dtypes.uint64)
  return (o + (1 << 31 if dtype == dtypes.uint32 else 0)).cast(dtype)

def _bitonic(ts: tuple[Tensor, ...], keys: int) -> tuple[Tensor, ...]:
  """Tensors that travel together, sorted along their last axis (a power of two long) by their first `keys`, compared
  in turn, on which only identical places may tie (the padding). A bitonic network: merging sorted runs of k = 2, 4, .. into runs of 2k,
  each element compared with its partner (first across the run's middle, mirrored, then at distances k/2, k/4, .. 1),
  the lower place keeping the one that orders first. Every step is views and a select: one kernel, and one on the way back."""
  from tg.tensor.tensor import Tensor
  lead, n = ts[0].shape[:-1], ts[0].shape[-1]
  pos = Tensor.arange(n, device=ts[0].device)
  run = 1
  while run < n:
    dist = run
    while dist:
      parts = (run * 2, 1) if dist == run else (2, dist)  # mirrored across the run's middle, or the same place in the other half
      partner = tuple(t.reshape(*lead, n // (parts[0] * parts[1]), *parts).flip(-2).reshape(*lead, n) for t in ts)
      low = (pos & dist) == 0  # the lower place takes the partner if it orders first, the upper if it orders last
      a, b = [low.where(p, t) for p, t in zip(partner[:keys], ts)], [low.where(t, p) for p, t in zip(partner[:keys], ts)]
      swap = a[-1] < b[-1]
      for k in reversed(range(keys - 1)): swap = (a[k] < b[k]) | ((a[k] == b[k]) & swap)
      ts = tuple(swap.where(p, t).contiguous().contiguous_backward() for p, t in zip(partner, ts))  # (fused, a step would redo all before)
      dist //= 2
    run *= 2
  return ts

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

  def _sort_network(self: Tensor, descending: bool) -> tuple[Tensor, Tensor]:
    """sort along the last axis by _bitonic over keys: the value's _ordinal (negated descending), then twice the index
    plus whether the value is -0.0; one int64 (ordinal above, the rest below) for items of 4 bytes or fewer. The values
    come back from the keys, or when they need a gradient, travel through the network beside them."""
    from tg.tensor.tensor import Tensor
    n = self.shape[-1]
    o, negzero = _ordinal(self.detach())
    at = Tensor.arange(n, device=self.device, dtype=dtypes.int64)._broadcast_to(self.shape) * 2
    if negzero is not None: at = at + negzero.cast(dtypes.int64)
    o, packed = ~o if descending else o, self.dtype.itemsize <= 4
    keys = ((o << 32) | at,) if packed else (o, at)
    grow = ((0, 0),) * (self.ndim - 1) + ((0, (1 << (n - 1).bit_length()) - n),)  # to a power of two: last, as equal keys
    out = _bitonic(tuple(k.pad(grow, value=dtypes.max(dtypes.int64)) for k in keys) + ((self.pad(grow),) if self.requires_grad else ()), len(keys))
    out = tuple(t[..., :n] for t in out)
    o, at = (out[0] >> 32, out[0] & 0xFFFFFFFF) if packed else out[:2]
    vals = out[-1] if self.requires_grad else _from_ordinal(~o if descending else o, None if negzero is None else (at & 1).eq(1), self.dtype)
    return vals, (at >> 1).cast(dtypes.int32)
  def sort(self: Tensor, dim: int = -1, descending: bool = False) -> ValuesIndices:
    """(values, indices) along dim; stable (tinygrad's bitonic sort need not be, PyTorch's stable=True is)."""
    from tg.tensor.tensor import Tensor
    x, ax = self._last(dim)
    if x.shape[-1] <= 1: return ValuesIndices(self, self.zeros_like(dtype=dtypes.int32))  # nothing to order
    if all_int(x.shape) and math.prod(x.shape) * x.shape[-1] > SORT_DIRECT: vals, idx = x._sort_network(descending)
    else:
      onehot = x._sort_onehot(descending)
      vals, idx = x._pick(onehot), Tensor.arange(x.shape[-1], device=self.device)._broadcast_to(x.shape)._pick(onehot)
    return ValuesIndices(vals._unlast(ax, self.ndim), idx._unlast(ax, self.ndim))
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
  def cummax(self: Tensor, axis: int = 0) -> ValuesIndices:
    """The running maximum and the index where it was reached, as PyTorch and tinygrad (0.14) return them; of tied
    maxima the last index, PyTorch's (tinygrad gives the first)."""
    return self._cumext(axis, True)
  def cummin(self: Tensor, axis: int = 0) -> ValuesIndices:
    """The running minimum (see cummax)."""
    return self._cumext(axis, False)
  def cumprod(self: Tensor, axis: int = 0) -> Tensor:
    x, ax = self._last(axis)
    return x._scan(lambda p: p._prefix(1).prod(-1), lambda a, b: a * b, 1)._unlast(ax, self.ndim)
  def logcumsumexp(self: Tensor, axis: int = 0) -> Tensor:
    """log(cumsum(exp(x))), each prefix shifted by its own maximum (a shift by the global one underflows early terms)."""
    x, ax = self._last(axis)
    x = x if dtypes.is_float(x.dtype) else x.float()
    return x._scan(lambda p: p._prefix(-math.inf).logsumexp(-1), lambda a, b: a.logaddexp(b), -math.inf)._unlast(ax, self.ndim)
