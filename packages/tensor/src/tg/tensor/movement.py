"""Movement: views of a tensor that become index math in kernels (never copies), and what is built from them."""
from __future__ import annotations
import re, weakref
from typing import TYPE_CHECKING, Any, Sequence
from tg.uop import UOp, Ops, dtypes, prod, cdiv
from tg.tensor.graph import dim_text, mop, same_size, shape_text
from tg.tensor.errors import TensorShapeError, TensorSymbolicError, TensorValueError, TensorUnsupportedError
from tg.tensor.realize import view_needs

if TYPE_CHECKING:
  from tg.tensor.tensor import Tensor

def _fits(b: int | UOp, e: int | UOp, s: int | UOp) -> bool:
  """Is 0 <= b <= e <= s for every value of the variables (sizes may be symbolic), or else for the values they are bound
  to? As tinygrad: x[:, i:i+2] of i bound to 3 in [1, 10] is a view of an 11-wide axis, for that value (at i=10 it is
  out of bounds). A TinyJit capturing such a view checks its replays' values against it (view_needs)."""
  if isinstance(s, UOp) and e is s and isinstance(b, int): return 0 <= b  # (up to the end of a symbolic axis)
  def holds(unbind: bool) -> bool:
    return all((x if isinstance(x, int) else (x.unbound() if unbind else x).simplify().vmin) >= 0 for x in (b, e - b, s - e))
  if holds(True): return True
  if not holds(False): return False
  if view_needs: view_needs[-1].extend(x.unbound() for x in (b, e - b, s - e) if isinstance(x, UOp))
  return True

def _symbolic_count(op: str, arg: int | UOp, d: int, n: int | UOp) -> TensorSymbolicError:
  """Equal pieces of a symbolic axis, or pieces of a symbolic size, come in a number that depends on the variables' values
  (tinygrad asserts too): the tensors returned can't be one list for every value."""
  return TensorSymbolicError(f"{op}({dim_text(arg)}) along dim {d} of size {dim_text(n)}: a symbolic axis or piece size gives a number "
                             "of pieces that depends on the variables' values; split into a list of sizes that add up to the axis")

def _einops_side(side: str, formula: str, ell: list[str]) -> list[list[str]]:
  """One side of an einops formula as its axes, each the list of names merged into it ("(h w)": two; "1" or "()": none);
  "..." stands for the names in ell, one axis each (merged into one inside parentheses)."""
  groups: list[list[str]] = []
  cur: list[str] | None = None
  for tok in re.findall(r"\.\.\.|\w+|\S", side):
    names = ell if tok == "..." else [tok] if tok.isidentifier() else None
    if tok == "(" and cur is None: cur = []
    elif tok == ")" and cur is not None:
      groups.append(cur)
      cur = None
    elif tok == "1" and cur is None: groups.append([])
    elif names is not None and cur is not None: cur.extend(names)
    elif names is not None: groups.extend([n] for n in names)
    else: raise TensorValueError(f"rearrange formula {formula!r}: unexpected {tok!r}")
  if cur is not None: raise TensorValueError(f"rearrange formula {formula!r}: a '(' is not closed")
  return groups

class MovementMixin:
  def _mop(self: Tensor, op: Ops, arg: Any) -> Tensor:
    """A movement op; one that changes nothing (x[0:n], a reshape to the same shape) is the tensor itself, as tinygrad's:
    a new tensor on the same graph took an assign for itself, and b[0:2].assign(x) of a 2-row b was lost with it."""
    if (u := mop(op, self._uop, arg)) is self._uop: return self
    out = self._apply(lambda _: u)
    # the first tensor of a chain of views, while it lives (a matmul's result is a reshape of a temporary, gone at once)
    out._view_of = ref if (ref := self._view_of) is not None and ref() is not None else weakref.ref(self)
    return out

  def reshape(self: Tensor, shape: Any = (), *more: Any) -> Tensor:
    shp = shape_args((shape, *more))
    if None in shp: shp = tuple(self.shape[i] if s is None else s for i, s in enumerate(shp))  # None keeps that dimension
    if shp.count(-1) > 1: raise TensorValueError(f"reshape to {shp}: only one dimension can be -1")
    if -1 in shp:
      known = prod(s for s in shp if s != -1)
      if known == 0 or self.numel() % known:
        raise TensorShapeError(f"can't reshape {shape_text(self.shape)} ({dim_text(self.numel())} elements) to {shape_text(shp)}")
      shp = tuple(self.numel() // known if s == -1 else s for s in shp)
    if not same_size(prod(shp), self.numel()):
      raise TensorShapeError(f"can't reshape {shape_text(self.shape)} ({dim_text(self.numel())} elements) to {shape_text(shp)}")
    return self._mop(Ops.RESHAPE, shp)
  def view(self: Tensor, shape: Any = (), *more: Any) -> Tensor: return self.reshape(shape, *more)
  def rearrange(self: Tensor, formula: str, **sizes: int) -> Tensor:
    """einops' rearrange, as tinygrad has it: "b c (h w) -> b (c h) w" splits, reorders and merges axes by name; `sizes`
    give the parts of a split the shape doesn't fix, "..." the axes no name takes, "1" or "()" a unit axis."""
    if formula.count("->") != 1: raise TensorValueError(f"rearrange formula {formula!r} needs one '->'")
    sides = formula.split("->")
    named = len(_einops_side(sides[0].replace("...", ""), formula, []))
    ell = [f"...{i}" for i in range(self.ndim - named)] if "..." in sides[0] else []
    lhs, rhs = (_einops_side(side, formula, ell) for side in sides)
    names = [n for g in lhs for n in g]
    if len(lhs) != self.ndim: raise TensorShapeError(f"rearrange {formula!r}: the left side names {len(lhs)} axes, the tensor has {self.ndim}")
    if sorted(names) != sorted(n for g in rhs for n in g) or len(set(names)) != len(names):
      raise TensorValueError(f"rearrange {formula!r}: each name must appear once on each side")
    dims = dict(sizes)
    for g, n in zip(lhs, self.shape):
      known, unknown = prod(dims[x] for x in g if x in dims), [x for x in g if x not in dims]
      if len(unknown) > 1: raise TensorValueError(f"rearrange {formula!r}: give the size of {' or '.join(unknown[1:])}")
      if unknown: dims[unknown[0]] = n // known if known and n % known == 0 else -1
      if prod(dims[x] for x in g) != n: raise TensorShapeError(f"rearrange {formula!r}: an axis of {n} doesn't split as {g} with {sizes}")
    x = self.reshape([dims[n] for n in names]).permute([names.index(n) for g in rhs for n in g])
    return x.reshape([prod(dims[n] for n in g) for g in rhs])
  def expand(self: Tensor, shape: Any = (), *more: Any) -> Tensor:
    shp = shape_args((shape, *more))
    x = self.reshape((1,) * (len(shp) - self.ndim) + self.shape) if len(shp) > self.ndim else self
    new = tuple(s if n == -1 or same_size(s, n) else n for s, n in zip(x.shape, shp))
    if len(new) != x.ndim or any(s != n and s != 1 for s, n in zip(x.shape, new)):
      raise TensorShapeError(f"can't expand {shape_text(self.shape)} to {shape_text(shp)}")
    return x._mop(Ops.EXPAND, new)
  def permute(self: Tensor, order: Any = (), *more: Any) -> Tensor:
    o = tuple(self._axis(a) for a in shape_args((order, *more)))
    if sorted(o) != list(range(self.ndim)): raise TensorShapeError(f"permute order {o} is not a permutation of {self.ndim} axes")
    return self._mop(Ops.PERMUTE, o)
  def transpose(self: Tensor, dim0: int = 1, dim1: int = 0) -> Tensor:
    order = list(range(self.ndim))
    a, b = self._axis(dim0), self._axis(dim1)
    order[a], order[b] = order[b], order[a]
    return self.permute(order)
  @property
  def T(self: Tensor) -> Tensor: return self.transpose(-1, -2) if self.ndim > 1 else self
  def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    if self.ndim == 0: return self.reshape(1)
    s, e = self._axis(start_dim), self._axis(end_dim)
    return self.reshape(self.shape[:s] + (prod(self.shape[s:e + 1]),) + self.shape[e + 1:])
  def unflatten(self: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    d = self._axis(dim)
    return self.reshape(self.shape[:d] + tuple(sizes) + self.shape[d + 1:])
  def squeeze(self: Tensor, dim: int | None = None) -> Tensor:
    if dim is None: return self.reshape(tuple(s for s in self.shape if s != 1))
    if self.ndim == 0:  # a 0-d tensor squeezes to itself (dim 0 or -1; _axis raises for others)
      self._axis(dim)
      return self
    d = self._axis(dim)
    return self if self.shape[d] != 1 else self.reshape(self.shape[:d] + self.shape[d + 1:])
  def unsqueeze(self: Tensor, dim: int) -> Tensor:
    d = dim + self.ndim + 1 if dim < 0 else dim
    if not 0 <= d <= self.ndim: raise IndexError(f"unsqueeze dim {dim} is out of range for {self.ndim} dimensions")
    return self.reshape(self.shape[:d] + (1,) + self.shape[d:])
  def shrink(self: Tensor, arg: Sequence[tuple[int, int | UOp] | None]) -> Tensor:
    """Keep [begin, end) of each axis (None keeps all). A bound can be an expression of bound variables (UOp.variable(...)
    .bind(n)) that fits the axis at their values: the view has that symbolic size, and the same kernels run for every value."""
    full = tuple((0, s) if a is None else a for a, s in zip(arg, self.shape))
    if any(not _fits(b, e, s) for (b, e), s in zip(full, self.shape)):
      raise TensorValueError(f"shrink ({', '.join(f'({dim_text(b)}, {dim_text(e)})' for b, e in full)}) is out of bounds of {shape_text(self.shape)}")
    return self._mop(Ops.SHRINK, full)
  def shrink_to(self: Tensor, shape: Any = (), *more: int | None) -> Tensor:
    """The first shape[i] elements of each axis (None keeps the axis)."""
    new = _target_shape(self.shape, shape_args((shape, *more)), "shrink_to")
    if any(n > s for n, s in zip(new, self.shape)):
      raise TensorShapeError(f"shrink_to {shape_text(new)} is bigger than the tensor's shape {shape_text(self.shape)}")
    return self.shrink([(0, n) for n in new])
  def pad_to(self: Tensor, shape: Any = (), *more: int | None) -> Tensor:
    """Zeros after the elements of each axis up to shape[i] (None keeps the axis)."""
    new = _target_shape(self.shape, shape_args((shape, *more)), "pad_to")
    if any(n < s for n, s in zip(new, self.shape)):
      raise TensorShapeError(f"pad_to {shape_text(new)} is smaller than the tensor's shape {shape_text(self.shape)}")
    return self.pad([(0, n - s) for n, s in zip(new, self.shape)])
  def flip(self: Tensor, axis: int | Sequence[int]) -> Tensor:
    listed = [self._axis(a) for a in ((axis,) if isinstance(axis, int) else axis)]
    if len(set(listed)) != len(listed): raise TensorValueError(f"flip axes {axis} name an axis twice")
    axes = set(listed)
    return self._mop(Ops.FLIP, tuple(i in axes for i in range(self.ndim)))
  def pad(self: Tensor, padding: Sequence[int] | Sequence[tuple[int, int] | None], mode: str = "constant", value: float = 0.0) -> Tensor:
    """Pad with (before, after) per axis, or PyTorch's flat (last_before, last_after, ...) list; modes constant, reflect,
    replicate and circular. A negative side crops: after padding, but in circular mode before it (the wrap is of what
    is left), as PyTorch and tinygrad."""
    if padding and all(isinstance(p, (int, UOp)) for p in padding):  # (a bound variable is a size too)
      flat = list(padding)
      if len(flat) % 2: raise TensorValueError(f"a flat padding has pairs, got {len(flat)} numbers")
      pads = [(0, 0)] * (self.ndim - len(flat) // 2) + [(flat[i], flat[i + 1]) for i in range(len(flat) - 2, -1, -2)]
    else: pads = [(0, 0) if p is None else tuple(p) for p in padding]  # type: ignore[misc]
    if len(pads) != self.ndim: raise TensorValueError(f"padding for {len(pads)} axes of a tensor with {self.ndim}")
    if mode == "circular" and any(b < 0 or a < 0 for b, a in pads):
      x = self.shrink([(max(0, -b), s + min(0, a)) for (b, a), s in zip(pads, self.shape)])  # type: ignore[misc]
      return x.pad([(max(0, b), max(0, a)) for b, a in pads], mode)  # type: ignore[misc]
    if mode != "constant":  # negative sides crop after the padding
      x = self._pad_mode([(max(0, b), max(0, a)) for b, a in pads], mode)  # type: ignore[misc]
      return x.shrink([(max(0, -b), s - max(0, -a)) for (b, a), s in zip(pads, x.shape)]) if any(b < 0 or a < 0 for b, a in pads) else x
    if any(b < 0 or a < 0 for b, a in pads):  # negative padding crops
      x = self.shrink([(max(0, -b), s + min(0, a)) for (b, a), s in zip(pads, self.shape)])
      return x.pad([(max(0, b), max(0, a)) for b, a in pads], value=value)
    ret = self._mop(Ops.PAD, tuple(pads))
    if value == 0: return ret
    inside = self.ones_like(dtype=dtypes.bool)._mop(Ops.PAD, tuple(pads))
    return inside.where(ret, value)
  def _pad_mode(self: Tensor, pads: list[tuple[int, int]], mode: str) -> Tensor:
    from tg.tensor.tensor import Tensor
    x = self
    for ax, (b, a) in enumerate(pads):
      if b == 0 and a == 0: continue
      n = x.shape[ax]
      def piece(lo: int, hi: int, t: Tensor = x, ax: int = ax) -> Tensor: return t.shrink([(lo, hi) if i == ax else None for i in range(t.ndim)])
      if mode == "reflect":
        if b >= n or a >= n: raise TensorValueError(f"reflect padding {b, a} must be smaller than the axis ({n})")
        parts = [piece(1, b + 1).flip(ax), x, piece(n - a - 1, n - 1).flip(ax)]
      elif mode == "replicate": parts = [piece(0, 1).expand(*[b if i == ax else s for i, s in enumerate(x.shape)]) if b else None, x,
                                         piece(n - 1, n).expand(*[a if i == ax else s for i, s in enumerate(x.shape)]) if a else None]
      elif mode == "circular":
        if b > n or a > n: raise TensorUnsupportedError(f"circular padding {b, a} can't exceed the axis ({n}): wrapping more than once")
        parts = [piece(n - b, n), x, piece(0, a)]
      else: raise TensorUnsupportedError(f"unknown pad mode {mode!r}: constant, reflect, replicate or circular")
      x = Tensor.cat(*[p for p in parts if p is not None and p.shape[ax] > 0], dim=ax)
    return x

  def cat(self: Tensor, *others: Tensor, dim: int = 0) -> Tensor:
    ts = [self, *others]
    d = self._axis(dim)
    for t in ts:
      if t.ndim != self.ndim or any(not same_size(a, b) for i, (a, b) in enumerate(zip(t.shape, self.shape)) if i != d):
        raise TensorShapeError(f"cat of shapes {[x.shape for x in ts]} along dim {d}: the other dims must match")
    total, start, out = sum(t.shape[d] for t in ts), 0, None
    for t in ts:
      padded = t.pad([(start, total - start - t.shape[d]) if i == d else (0, 0) for i in range(t.ndim)])
      out = padded if out is None else out + padded
      start += t.shape[d]
    assert out is not None
    return out
  def stack(self: Tensor | Sequence[Tensor], *others: Tensor, dim: int = 0) -> Tensor:
    """Tensor.stack(a, b, c) or Tensor.stack((a, b, c)), or a.stack(b, c)."""
    if isinstance(self, (list, tuple)):
      if others: raise TensorValueError("stack takes tensors, or one sequence of them, not both")
      self, *others = self  # type: ignore[assignment]
    return self.unsqueeze(dim).cat(*[t.unsqueeze(dim) for t in others], dim=dim)  # type: ignore[union-attr]
  def split(self: Tensor, sizes: int | Sequence[int], dim: int = 0) -> list[Tensor]:
    """Pieces of `sizes` elements along dim (the last may be smaller), or of each given size (which may be symbolic). An
    empty dim splits into one empty piece, as in PyTorch and tinygrad."""
    d = self._axis(dim)
    n = self.shape[d]
    if isinstance(sizes, UOp) or isinstance(sizes, int) and not isinstance(n, int): raise _symbolic_count("split", sizes, d, n)
    if isinstance(sizes, int) and (sizes < 0 or sizes == 0 < n): raise TensorValueError(f"split into pieces of {sizes}: give a positive size")
    lens = ([min(sizes, n - i) for i in range(0, n, sizes or 1)] or [0]) if isinstance(sizes, int) else list(sizes)
    if not same_size(sum(lens), n): raise TensorValueError(f"split sizes {lens} don't add up to {n}")
    out, start = [], 0
    for ln in lens:
      out.append(self.shrink([(start, start + ln) if i == d else None for i in range(self.ndim)]))
      start += ln
    return out
  def chunk(self: Tensor, chunks: int, dim: int = 0) -> list[Tensor]:
    if chunks <= 0: raise TensorValueError(f"chunk into {chunks} chunks: give a positive number")
    d = self._axis(dim)
    if not isinstance(n := self.shape[d], int): raise _symbolic_count("chunk", chunks, d, n)
    return self.split(cdiv(n, chunks) if n else 1, dim)
  def repeat(self: Tensor, *repeats: Any) -> Tensor:
    reps = tuple(repeats[0]) if len(repeats) == 1 and isinstance(repeats[0], (tuple, list)) else tuple(repeats)
    if len(reps) < self.ndim:
      raise TensorShapeError(f"repeat{reps} of a tensor of shape {shape_text(self.shape)}: give a count for each of its {self.ndim} dims")
    x = self.reshape((1,) * (len(reps) - self.ndim) + self.shape)
    expanded = x.reshape(tuple(v for s in x.shape for v in (1, s))).expand(tuple(v for r, s in zip(reps, x.shape) for v in (r, s)))
    return expanded.reshape(tuple(r * s for r, s in zip(reps, x.shape)))
  def repeat_interleave(self: Tensor, repeats: int, dim: int | None = None) -> Tensor:
    x, d = (self.flatten(), 0) if dim is None else (self, self._axis(dim))
    return x.unsqueeze(d + 1).expand(*x.shape[:d + 1], repeats, *x.shape[d + 1:]).flatten(d, d + 1)
  def roll(self: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    if dims is None: return self.flatten().roll(shifts, 0).reshape(self.shape)
    sh, ds = (shifts,) if isinstance(shifts, int) else tuple(shifts), (dims,) if isinstance(dims, int) else tuple(dims)
    if len(sh) != len(ds): raise TensorValueError(f"roll has {len(sh)} shifts for {len(ds)} dims")
    x = self
    for s, d in zip(sh, ds):
      d, n = x._axis(d), x.shape[x._axis(d)]
      if isinstance(n, UOp):  # a symbolic size: index by (i - s) mod n, as one kernel serves every value of n
        from tg.tensor.tensor import Tensor
        back = n - s % n  # in (0, 2n): i + back can't overflow, as i - s did for a shift near -2^63
        x = x[(slice(None),) * d + ((Tensor.arange(n, device=x.device) + back) % n,)]
        continue
      if n == 0 or s % n == 0: continue
      s %= n
      x = x._pad_mode([(s, 0) if i == d else (0, 0) for i in range(x.ndim)], "circular").shrink([(0, n) if i == d else None for i in range(x.ndim)])
    return x
  def _tri(self: Tensor, diagonal: int, upper: bool) -> Tensor:
    from tg.tensor.tensor import Tensor
    r, c = self.shape[-2:]
    rows = Tensor.arange(r, device=self.device).unsqueeze(1)
    cols = Tensor.arange(c, device=self.device).unsqueeze(0)
    keep = (cols - rows >= diagonal) if upper else (cols - rows <= diagonal)
    return keep.where(self, self.zeros_like())
  def tril(self: Tensor, diagonal: int = 0) -> Tensor: return self._tri(diagonal, False)
  def triu(self: Tensor, diagonal: int = 0) -> Tensor: return self._tri(diagonal, True)

  def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes as a last axis (PyTorch's; tinygrad's takes square 2-d only): a view, by
    flattening each plane, padding a row of one extra element and taking the first column."""
    d1, d2 = self._axis(dim1), self._axis(dim2)
    if d1 == d2: raise TensorValueError(f"diagonal dims must differ, got {dim1} and {dim2}")
    x = self.permute([i for i in range(self.ndim) if i not in (d1, d2)] + [d1, d2])
    r, c = x.shape[-2:]
    lead = x.shape[:-2]
    x = x.shrink([None] * len(lead) + [(min(max(0, -offset), r), r), (min(max(0, offset), c), c)])
    if (m := min(x.shape[-2:])) == 0: return x.reshape(*lead, 0)
    x = x.shrink([None] * len(lead) + [(0, m), (0, m)]).reshape(*lead, m * m).pad([(0, 0)] * len(lead) + [(0, m)])
    return x.reshape(*lead, m, m + 1).shrink([None] * len(lead) + [None, (0, 1)]).reshape(*lead, m)
  def diag(self: Tensor, diagonal: int = 0) -> Tensor:
    """1-d: the square matrix with self on the given diagonal (a view: each element padded by a row of zeros); 2-d: its
    diagonal (PyTorch's; tinygrad's takes 1-d only)."""
    if self.ndim == 2: return self.diagonal(diagonal)
    if self.ndim != 1: raise TensorValueError(f"diag takes a 1-d or 2-d tensor, got shape {shape_text(self.shape)}")
    n, k = self.shape[0], abs(diagonal)
    m = self.unsqueeze(-1).pad([(0, 0), (0, n)]).flatten().shrink([(0, n * n)]).reshape(n, n)
    return m.pad([(0, k), (k, 0)] if diagonal > 0 else [(k, 0), (0, k)])
  def unfold(self: Tensor, dim: int, size: int, step: int) -> Tensor:
    """The windows of `size` elements every `step` along dim: dim becomes the window count, and a last axis of `size` is
    added (PyTorch's and tinygrad's layout). A view."""
    d = self._axis(dim)
    if size < 0 or step <= 0: raise TensorValueError(f"unfold needs size >= 0 and step > 0, got size={size}, step={step}")
    if size > self.shape[d]: raise TensorShapeError(f"unfold size {size} is larger than dim {d} ({self.shape[d]})")
    x = self.permute([i for i in range(self.ndim) if i != d] + [d])
    if size == 0: x = x.shrink([None] * (x.ndim - 1) + [(0, 0)]).unsqueeze(-2).expand(*x.shape[:-1], x.shape[-1] // step + 1, 0)
    else: x = x._window_last(size, step, 1)
    return x.permute(*range(d), x.ndim - 2, *range(d, x.ndim - 2), x.ndim - 1)
  def meshgrid(self: Tensor, *others: Tensor, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-d (or 0-d) tensors, as views: "ij" (matrix) or "xy" (Cartesian: the first two swapped)."""
    if indexing not in ("ij", "xy"): raise TensorValueError(f"meshgrid indexing is 'ij' or 'xy', not {indexing!r}")
    ts = [t.flatten() for t in (self, *others)]
    shape = [t.shape[0] for t in ts]
    if indexing == "xy" and len(ts) > 1: shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, t in enumerate(ts):
      pos = (1 - i if i < 2 else i) if indexing == "xy" and len(ts) > 1 else i
      out.append(t.reshape([-1 if j == pos else 1 for j in range(len(ts))]).expand(shape))
    return tuple(out)

def shape_args(args: tuple) -> tuple:
  """A shape or an order from f's arguments: f(2, 3), f((2, 3)), or as tinygrad's signatures allow, f(shape=(2, 3))."""
  return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else tuple(args)

def _target_shape(shape: tuple[int, ...], new: tuple, name: str) -> tuple[int, ...]:
  """shrink_to/pad_to's shape, None meaning the axis's own size."""
  if len(new) != len(shape): raise TensorShapeError(f"{name} {shape_text(new)} has {len(new)} axes, the tensor {len(shape)} {shape_text(shape)}")
  return tuple(s if n is None else n for n, s in zip(new, shape))
