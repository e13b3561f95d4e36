"""Indexing: getitem, setitem, gather, scatter, masked_fill.

Basic indices (ints, slices with any step, None, Ellipsis) become movement ops, so a view never copies. An int is basic
beside tensor indices too (PyTorch's and tinygrad's rule; numpy counts it among them: x[0, :, idx] has idx's axis first
in numpy, last here). Tensor indices
become a one-hot compare against an arange and a sum over the indexed axis: one fused kernel, differentiable, with no
data-dependent shapes (only a bool index, whose result size depends on its values, reads the mask back to the host)."""
from __future__ import annotations
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence
import numpy as np
from tg.uop import UOp, dtypes, prod, simplify_size
from tg.codegen import CHECK_OOB
from tg.tensor.errors import TensorDtypeError, TensorShapeError, TensorValueError
from tg.tensor.graph import shape_text
from tg.tensor.realize import capturing

if TYPE_CHECKING:
  from tg.tensor.tensor import Tensor

@dataclass(frozen=True)
class _Sel:
  """Elements start, start+step, ... (m of them) of one axis; `drop` for an int index, `adv` for a tensor index. start
  and m may be symbolic (a slice to a bound variable, step 1)."""
  start: Any
  m: Any
  step: int
  drop: bool = False
  adv: bool = False
  def whole(self, n: Any) -> bool: return self.step == 1 and _is(self.start, 0) and _is(self.m, n)
  def empty(self) -> bool: return _is(self.m, 0)

def _is(x: Any, n: Any) -> bool:
  """x == n, for sizes that may be symbolic (a symbolic one is only itself)."""
  return x is n or isinstance(x, int) and isinstance(n, int) and x == n

def _from_end(e: Any, n: Any) -> Any:
  """A negative slice bound counted from the end of a symbolic size n, as Python's (max(n + e, 0)); others as they are."""
  return simplify_size((n + e).maximum(0)) if isinstance(e, int) and e < 0 else e

def _check_index(ix: Tensor, n: int, what: str, negative: bool) -> None:
  """With CHECK_OOB=1, an index tensor with a value outside the axis raises (reading it back: a debugging aid); without
  it, the one-hot compare makes an out-of-range index select nothing (0), as in tinygrad. Not while a TinyJit captures
  (reading data there raises; its first, plain call checked)."""
  if not CHECK_OOB or ix.numel() == 0 or capturing: return
  lo, hi = int(ix.min().item()), int(ix.max().item())
  if hi >= n or lo < (-n if negative else 0):
    raise IndexError(f"{what}: index {hi if hi >= n else lo} is out of bounds for an axis of size {n} (CHECK_OOB=1)")

def _as_index(ix: Tensor) -> Tensor:
  """Integer indices as int32 (int64 for 32- and 64-bit types), where index arithmetic and a compare with an arange
  are exact: an int8 index wrapped by + n overflows, and uint64 with arange's int32 promotes to fp8 (tinygrad's lattice).
  A uint64 index past int64's range turns negative."""
  want = dtypes.int64 if ix.dtype.itemsize >= 4 and ix.dtype != dtypes.int32 else dtypes.int32
  return ix if ix.dtype == want else ix.cast(want)

def _hits(ix: Tensor, n: int) -> Tensor:
  """(*ix.shape, n) bool: where each integer index of ix equals 0..n-1 (the one-hot of gather, scatter and one_hot)."""
  return _as_index(ix).unsqueeze(-1) == _tensor_types().arange(n, device=ix.device)

def _tensor_types() -> type:
  from tg.tensor.tensor import Tensor
  return Tensor

class IndexingMixin:
  def _index_plan(self: Tensor, indices: Any) -> tuple[list[_Sel], list[Any], list[Tensor]]:
    """Per input axis a selection; the output layout (a _Sel index, or None for a new axis); the tensor indices."""
    Tensor = _tensor_types()
    # a list with anything but ints in it (a slice, a list, a tensor) is a tuple of indices, as in PyTorch and tinygrad:
    # t[[[0, 2], [1, 3]]] is t[[0, 2], [1, 3]], two elements (numpy's array of indices selected four rows)
    if isinstance(indices, list) and not all(isinstance(i, (int, np.integer)) for i in indices): indices = tuple(indices)
    idx = list(indices) if isinstance(indices, tuple) else [indices]
    items: list[Any] = []
    for i in idx:  # lists, tuples in the index tuple and arrays are tensor indices; a bool index is the int indices of its True elements
      if isinstance(i, (list, tuple, np.ndarray)): i = Tensor(i, device=self.device)
      if isinstance(i, Tensor) and i.dtype == dtypes.bool:
        at = sum(1 for j in items if j is not None)
        if not any(j is Ellipsis for j in items) and i.shape != self.shape[at:at + i.ndim]:
          raise IndexError(f"a bool mask of shape {shape_text(i.shape)} at dim {at} doesn't match the tensor's "
                           f"{shape_text(self.shape[at:at + i.ndim])} there")
        items.extend(Tensor(n.astype(np.int32), device=self.device) for n in np.nonzero(i.numpy()))
      elif isinstance(i, bool): raise IndexError("a Python bool index is not supported; use a bool Tensor")
      else: items.append(i)
    consumed = sum(1 for i in items if i is not None and i is not Ellipsis)
    if sum(1 for i in items if i is Ellipsis) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > self.ndim: raise IndexError(f"too many indices for a tensor of shape {shape_text(self.shape)}: {consumed} indices")
    e = next((j for j, i in enumerate(items) if i is Ellipsis), len(items))
    items[e:e + 1] = [slice(None)] * (self.ndim - consumed)
    sels: list[_Sel] = []
    layout: list[Any] = []
    tensors: list[Tensor] = []
    for i in items:
      if i is None:
        layout.append(None)
        continue
      ax, n = len(sels), self.shape[len(sels)]
      if isinstance(i, Tensor):
        if not dtypes.is_int(i.dtype): raise IndexError(f"tensor indices must be integer or bool, got {i.dtype}")
        if i.device != self.device: raise RuntimeError(f"index on {i.device} for a tensor on {self.device}")
        sels.append(_Sel(0, n, 1, adv=True))
        tensors.append(i)
      elif isinstance(i, slice) and (isinstance(n, UOp) or any(isinstance(e, UOp) for e in (i.start, i.stop, i.step))):
        # x[:, :v] (v a bound variable), or a slice of a symbolic axis
        if i.step not in (None, 1): raise IndexError(f"a symbolic slice takes step 1, not {i.step}")
        start, stop = (_from_end(e, n) for e in (0 if i.start is None else i.start, n if i.stop is None else i.stop))
        sels.append(_Sel(start, stop if _is(start, 0) else simplify_size(stop - start), 1))
      elif isinstance(i, slice):
        start, stop, step = i.indices(n)
        sels.append(_Sel(start, len(range(start, stop, step)), step))
      elif isinstance(i, (int, np.integer)) and isinstance(n, UOp) and i < 0:  # from the end of a symbolic axis
        if n.vmin < -i: raise IndexError(f"index {i} may be out of bounds for axis {ax} of size {n} (as small as {n.vmin})")
        sels.append(_Sel(simplify_size(n + int(i)), 1, 1, drop=True))
      elif isinstance(i, UOp):  # a bound variable: one element, the same kernels for every value
        if (r := i.unbound()).vmin < 0 or not r.vmax < n: raise IndexError(f"index {i} may be out of bounds for axis {ax} with size {n}")
        sels.append(_Sel(i, 1, 1, drop=True))
      elif isinstance(i, (int, np.integer)):
        if not -n <= i < n: raise IndexError(f"index {i} is out of bounds for axis {ax} with size {n} (shape {shape_text(self.shape)})")
        sels.append(_Sel(int(i) % n, 1, 1, drop=True))
      else: raise IndexError(f"unsupported index {i!r} of type {type(i).__name__}")
      if not sels[-1].drop: layout.append(len(sels) - 1)
    return sels, layout, tensors

  def _select(self: Tensor, ax: int, s: _Sel) -> Tensor:
    """Axis ax restricted to the elements of s, by shrink, flip and a pad+reshape+shrink for the stride."""
    if s.empty(): return self._shrink_axis(ax, 0, 0)
    if not isinstance(s.m, int): return self._shrink_axis(ax, s.start, s.m if _is(s.start, 0) else s.start + s.m)  # (symbolic: step 1)
    lo = s.start + (s.m - 1) * s.step if s.step < 0 else s.start
    x = self._shrink_axis(ax, lo, lo + (s.m - 1) * abs(s.step) + 1)
    if s.step < 0: x = x.flip(ax)
    if abs(s.step) == 1: return x
    k = abs(s.step)
    x = x.pad([(0, s.m * k - x.shape[ax]) if i == ax else (0, 0) for i in range(x.ndim)])
    x = x.reshape(*x.shape[:ax], s.m, k, *x.shape[ax + 1:])._shrink_axis(ax + 1, 0, 1)
    return x.reshape(*x.shape[:ax], s.m, *x.shape[ax + 2:])
  def _place(self: Tensor, ax: int, s: _Sel, n: int) -> Tensor:
    """The inverse of _select: axis ax of m elements spread back to n, zero (or False) elsewhere."""
    x, k = self, abs(s.step)
    if k > 1:
      x = x.unsqueeze(ax + 1).pad([(0, k - 1) if i == ax + 1 else (0, 0) for i in range(x.ndim + 1)])
      x = x.reshape(*x.shape[:ax], s.m * k, *x.shape[ax + 2:])._shrink_axis(ax, 0, (s.m - 1) * k + 1)
    if s.step < 0: x = x.flip(ax)
    lo = s.start + (s.m - 1) * s.step if s.step < 0 else s.start
    return x.pad([(lo, n - lo - x.shape[ax]) if i == ax else (0, 0) for i in range(x.ndim)])
  def _shrink_axis(self: Tensor, ax: int, b: int, e: int) -> Tensor: return self.shrink([(b, e) if i == ax else None for i in range(self.ndim)])

  def __getitem__(self: Tensor, indices: Any) -> Tensor:
    sels, layout, tensors = self._index_plan(indices)
    x = self._basic_view(sels, layout)
    return x._gather_adv(_adv_dims(sels, layout), tensors) if tensors else x
  def _basic_view(self: Tensor, sels: list[_Sel], layout: list[Any]) -> Tensor:
    """The view the basic indices select: a tensor-indexed axis whole, a new axis of size 1, an int index's axis gone."""
    x = self
    for ax, s in enumerate(sels):
      if not s.adv and not s.whole(self.shape[ax]): x = x._select(ax, s)
    return x.reshape(tuple(1 if li is None else sels[li].m for li in layout))
  def _gather_adv(self: Tensor, dims: list[int], tensors: list[Tensor]) -> Tensor:
    """x indexed by integer tensors at axes dims (numpy's advanced indexing): the broadcast index shape replaces the
    axes, in place if they are adjacent, else in front."""
    idxs, b, rest, order = self._adv_plan(dims, tensors)
    k, ns = len(dims), [self.shape[d] for d in dims]
    x = self.permute(rest + dims).reshape(*[self.shape[i] for i in rest], *(1,) * len(b), *ns)
    mask = _one_hot(idxs, ns, self.device).reshape(*b, *ns)
    axes = tuple(range(x.ndim - k, x.ndim))
    return _pick(mask, x, axes).permute(order)
  def _scatter_adv(self: Tensor, dims: list[int], tensors: list[Tensor], v: Tensor) -> Tensor:
    """The inverse of _gather_adv: a copy of self with the elements it would gather replaced by v (of the gather's
    shape); of an element indexed twice, the last write (numpy's). A one-hot over the indexed axes only: its size is
    the count of indices times the size of those axes."""
    idxs, b, rest, order = self._adv_plan(dims, tensors)
    ns, nb, nr = [self.shape[d] for d in dims], prod(b), len(rest)
    v = v.permute([order.index(i) for i in range(len(order))]).reshape(*[self.shape[i] for i in rest], nb, *(1,) * len(dims))
    mask = _last_only(_one_hot(idxs, ns, self.device).reshape(nb, *ns), 0)
    written = _pick(mask, v, (nr,))
    x = self.permute(rest + dims)
    x = mask.any(0).where(written, x)
    return x.permute([(rest + dims).index(i) for i in range(self.ndim)])
  def _adv_plan(self: Tensor, dims: list[int], tensors: list[Tensor]) -> tuple[list[Tensor], tuple[int, ...], list[int], list[int]]:
    """For tensor indices at axes dims: the indices broadcast (flat, negatives wrapped), their shape b, the other axes,
    and the permutation from (other axes, b) to numpy's layout of the result."""
    idxs = _broadcast_all([_as_index(t) for t in tensors])
    b = idxs[0].shape
    for ix, d in zip(idxs, dims): _check_index(ix, self.shape[d], f"tensor index on axis {d}", True)
    idxs = [(ix < 0).where(ix + self.shape[d], ix).flatten() for ix, d in zip(idxs, dims)]
    rest = [i for i in range(self.ndim) if i not in dims]
    nr = len(rest)
    front = dims[0] if dims == list(range(dims[0], dims[0] + len(dims))) else 0
    return idxs, b, rest, list(range(front)) + list(range(nr, nr + len(b))) + list(range(front, nr))

  def __delitem__(self: Tensor, indices: Any) -> None: raise TypeError("a Tensor's items can't be deleted (its shape is fixed)")
  def __setitem__(self: Tensor, indices: Any, value: Any) -> None:
    """Write value into the selected elements, in place and at once (tinygrad's: every view of the buffer sees it). A view
    target (x[1][2] = v, x.T[1, 0] = v, x[::-1][0] = v) writes the buffer it views, as its assign() does (PyTorch's and
    tinygrad's). A value tensor of another dtype raises TensorDtypeError, as tinygrad's (PyTorch casts): a Python value
    or list takes the target's dtype. Following tinygrad where PyTorch differs: a target or value that requires grad
    raises NotImplementedError (PyTorch records the write)."""
    Tensor = _tensor_types()
    from tg.tensor.tensor import assign_now
    v = value if isinstance(value, Tensor) else Tensor(value, device="CPU" if self._on_disk() else self.device, dtype=self.dtype)
    if v.dtype != self.dtype:
      raise TensorDtypeError(f"setitem dtype mismatch: a {v.dtype} tensor into a tensor of {self.dtype}; setitem doesn't cast (tinygrad's rule, "
                             f"PyTorch's does); cast it first, v.cast({self.dtype})")
    if self.requires_grad or v.requires_grad: raise NotImplementedError("setitem of a tensor that requires grad, or with a value that does")
    if self._on_disk():  # DISK runs no kernels: its assign writes the file from a CPU copy
      self[indices].assign(v)
      return
    sels, layout, tensors = self._index_plan(indices)
    target = self[indices]
    if v.shape != target.shape:
      try: v = v._broadcast_to(target.shape)
      except ValueError:
        raise TensorShapeError(f"can't set a value of shape {shape_text(v.shape)} into a selection of shape {shape_text(target.shape)}") from None
    if any(s.empty() for s in sels) or _is(target.numel(), 0): return
    if tensors: v = self._basic_view(sels, layout)._scatter_adv(_adv_dims(sels, layout), tensors, v)
    v = v.reshape(tuple(s.m for s in sels))
    mask = v.ones_like(dtype=dtypes.bool)
    for ax, s in enumerate(sels):
      if not s.whole(self.shape[ax]): v, mask = v._place(ax, s, self.shape[ax]), mask._place(ax, s, self.shape[ax])
    self._borrowed = False  # (a write of some elements: into the buffer a contiguous() of a buffer reads, as tinygrad's)
    assign_now(self, mask.where(v, self))

  def gather(self: Tensor, dim: int, index: Tensor) -> Tensor:
    """out[i][j] = self[index[i][j]][j] (for dim 0): index has self's rank, and no axis longer than self's."""
    d = self._axis(dim)
    if index.ndim != self.ndim or any(a > b for i, (a, b) in enumerate(zip(index.shape, self.shape)) if i != d):
      raise TensorShapeError(f"gather index of shape {shape_text(index.shape)} doesn't fit a tensor of shape {shape_text(self.shape)} along dim {d}")
    n = self.shape[d]
    _check_index(index, n, f"gather along dim {d}", False)
    x = self.shrink([None if i == d else (0, s) for i, s in enumerate(index.shape)]).unsqueeze(-1).transpose(d, -1)
    return _pick(_hits(index, n), x, (-1,))
  def _scatter_setup(self: Tensor, dim: int, index: Tensor, src: Tensor | float | int, name: str) -> tuple[Tensor, Tensor, Any]:
    """For scatter-like ops along dim: src as (index shape + (1,)) in self's dtype, the one-hot mask (index shape + (n,))
    of where each goes, and `spread`, which puts a (index shape with 1 at dim, n) reduction back into self's shape."""
    Tensor = _tensor_types()
    d = self._axis(dim)
    if index.ndim != self.ndim or any(a > b for i, (a, b) in enumerate(zip(index.shape, self.shape)) if i != d):
      raise TensorShapeError(f"{name} index of shape {shape_text(index.shape)} doesn't fit a tensor of shape {shape_text(self.shape)} along dim {d}")
    if isinstance(src, Tensor):
      if src.ndim != index.ndim or any(a > b for a, b in zip(index.shape, src.shape)):
        raise TensorShapeError(f"{name} index of shape {shape_text(index.shape)} is larger than src of shape {shape_text(src.shape)}")
      if src.dtype != self.dtype: raise TensorDtypeError(f"{name} of a {src.dtype} src into a {self.dtype} tensor: cast src first")
    _check_index(index, self.shape[d], f"{name} along dim {d}", False)
    s = src if isinstance(src, Tensor) else Tensor.full(index.shape, src, device=self.device, dtype=self.dtype)
    s = s.shrink([(0, n) for n in index.shape]).cast(self.dtype).unsqueeze(-1)
    mask = _hits(index, self.shape[d])
    def spread(t: Tensor) -> Tensor:
      t = t.transpose(d, -1).squeeze(-1)
      return t.pad([(0, 0) if i == d else (0, n - t.shape[i]) for i, n in enumerate(self.shape)])
    return s, mask, spread
  def scatter(self: Tensor, dim: int, index: Tensor, src: Tensor | float | int, reduce: str | None = None) -> Tensor:
    """A copy of self with self[index[i][j]][j] = src[i][j] (for dim 0); reduce 'add' or 'multiply' combines a scalar src
    instead. A tensor src with a reduce is scatter_reduce's job: tinygrad raises TypeError for it (PyTorch takes it)."""
    if reduce not in (None, "add", "multiply"): raise TensorValueError(f"scatter reduce is 'add' or 'multiply', not {reduce!r}")
    if reduce is not None and isinstance(src, _tensor_types()):
      raise TypeError(f"scatter with reduce={reduce!r} takes a scalar src; for a tensor src use scatter_reduce")
    s, mask, spread = self._scatter_setup(dim, index, src, "scatter")
    d = self._axis(dim)
    hit = spread(mask.any(d, keepdim=True))
    if reduce == "multiply": return hit.where(self * spread(mask.where(s, 1).prod(d, keepdim=True)), self)
    if reduce is None: mask = _last_only(mask, d)
    picked = mask.where(s, False).max(d, keepdim=True) if self.dtype == dtypes.bool else mask.where(s, 0).sum(d, keepdim=True, acc_dtype=self.dtype)
    summed = spread(picked)
    if reduce == "add": return self + summed
    return hit.where(summed, self)
  def scatter_reduce(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, include_self: bool = True) -> Tensor:
    """A copy of self where each position index sends src values to ("sum", "prod", "mean", "amax", "amin") holds their
    reduction, with self's value among them if include_self. An integer mean rounds down (PyTorch's floor division)."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
      raise TensorValueError(f"scatter_reduce reduce is 'sum', 'prod', 'mean', 'amax' or 'amin', not {reduce!r}")
    s, mask, spread = self._scatter_setup(dim, index, src, "scatter_reduce")
    d = self._axis(dim)
    count = spread(mask.sum(d, keepdim=True, acc_dtype=dtypes.int32))
    if reduce in ("sum", "mean"): agg = spread(mask.where(s, 0).sum(d, keepdim=True, acc_dtype=self.dtype))
    elif reduce == "prod": agg = spread(mask.where(s, 1).prod(d, keepdim=True))
    elif reduce == "amax": agg = spread(mask.where(s, s.min().detach()).max(d, keepdim=True))
    else: agg = spread(mask.where(s, s.max().detach()).min(d, keepdim=True))
    if include_self:
      agg = {"sum": self + agg, "mean": self + agg, "prod": self * agg, "amax": self.maximum(agg), "amin": self.minimum(agg)}[reduce]
    if reduce == "mean":
      n = count + 1 if include_self else count
      agg = agg.div(n.cast(self.dtype), rounding_mode=None if dtypes.is_float(self.dtype) else "floor")
    return (count > 0).where(agg, self)
  def scatter_add(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """self with src added where index sends it (PyTorch's; tinygrad spells it scatter_reduce(..., "sum"))."""
    return self.scatter_reduce(dim, index, src, "sum")
  def masked_select(self: Tensor, mask: Tensor) -> Tensor:
    """The elements where the (broadcast) bool mask is true, flat. Its size depends on the mask: it is read to the host."""
    if mask.dtype != dtypes.bool: raise TensorDtypeError(f"masked_select needs a bool mask, got {mask.dtype}")
    from tg.tensor.tensor import broadcast_shape
    shape = broadcast_shape(self.shape, mask.shape)
    return self._broadcast_to(shape).flatten()[mask._broadcast_to(shape).flatten()]
  def nonzero(self: Tensor) -> Tensor:
    """(count, ndim) int32 indices of the nonzero elements in row-major order (NaN is nonzero). Its size depends on the
    values: they are read to the host."""
    Tensor = _tensor_types()
    return Tensor(np.argwhere(self.numpy() != 0).astype(np.int32).reshape(-1, self.ndim), device=self.device)
  def masked_fill(self: Tensor, mask: Tensor, value: Tensor | float | int | bool) -> Tensor: return mask.where(value, self)

def _adv_dims(sels: list[_Sel], layout: list[Any]) -> list[int]:
  """The axes of the basic view (_basic_view) that tensor indices index."""
  return [p for p, li in enumerate(layout) if li is not None and sels[li].adv]

def _one_hot(idxs: list[Tensor], ns: list[int], device: str) -> Tensor:
  """(B, *ns) bool: index i (of the flat indices idxs, one per axis) hits element (j1, j2, ...) of axes of sizes ns."""
  Tensor = _tensor_types()
  k = len(ns)
  masks = [ix.reshape(-1, *(1,) * k) == Tensor.arange(n, device=device).reshape(1, *(n if j == a else 1 for j in range(k)))
           for a, (ix, n) in enumerate(zip(idxs, ns))]
  return functools.reduce(lambda p, q: p & q, masks)

def _pick(mask: Tensor, x: Tensor, axes: tuple[int, ...]) -> Tensor:
  """The element of x where mask is True along axes (0, or False, where none is): a one-hot select, by sum (max for bool)."""
  return mask.where(x, False).max(axes) if x.dtype == dtypes.bool else mask.where(x, 0).sum(axes, acc_dtype=x.dtype)

def _last_only(mask: Tensor, axis: int) -> Tensor:
  """mask with only its last True along axis: a repeated index writes one value (the last, as numpy), not their sum."""
  Tensor = _tensor_types()
  n = mask.shape[axis]
  pos = Tensor.arange(n, device=mask.device).reshape([n if i == axis else 1 for i in range(mask.ndim)])
  return mask & pos.eq(mask.where(pos, -1).max(axis, keepdim=True))

def _broadcast_all(ts: Sequence[Tensor]) -> list[Tensor]:
  from tg.tensor.tensor import broadcast_shape
  shape = broadcast_shape(*[t.shape for t in ts])
  return [t._broadcast_to(shape) for t in ts]
