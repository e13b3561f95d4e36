"""Movement ops as index math: which element of its source an index into a view reads, and whether it reads one at all.

The scheduler uses it to turn tensor-level views into kernel index math; `UOp.index` uses it so that a kernel author's
`A.reshape(4, 64)[i, j]`, `C.flatten()[i]` or `B.permute(1, 0)[i, j]` index the buffer under the view."""
from __future__ import annotations
from typing import Sequence
from tg.uop.dtype import dtypes
from tg.uop.helpers import prod
from tg.uop.ops import GroupOp, Ops
from tg.uop.uop import UOp

def flat_index(idx: Sequence[UOp], shape: tuple) -> UOp:
  """The row-major position of `idx` in `shape`."""
  out = UOp.const(dtypes.index, 0)
  for i, s in zip(idx, shape):
    out = out * s + i if s != 1 else out
  return out

def unflat_index(flat: UOp, shape: tuple) -> tuple[UOp, ...]:
  """The index in `shape` of row-major position `flat`."""
  out = []
  stride = prod(shape)
  for s in shape:
    stride //= s
    out.append(UOp.const(dtypes.index, 0) if s == 1 else (flat // stride) % s if stride != 1 else flat % s)
  return tuple(out)

def move_index(u: UOp, idx: Sequence[UOp]) -> tuple[tuple[UOp, ...], UOp | None]:
  """For a movement op `u` and an index into it: the index into u.src[0], and the condition for it to exist (PAD's
  inside; None when every index does)."""
  src, op = u.src[0], u.op
  if op is Ops.RESHAPE: return unflat_index(flat_index(idx, u.shape), src.shape), None
  if op is Ops.EXPAND:
    return tuple(UOp.const(dtypes.index, 0) if s == 1 and n != 1 else i for i, s, n in zip(idx, src.shape, u.shape)), None
  if op is Ops.PERMUTE:
    new = [UOp.const(dtypes.index, 0)] * len(idx)
    for i, p in enumerate(u.arg): new[p] = idx[i]
    return tuple(new), None
  if op is Ops.SHRINK: return tuple(_shift(i, b, 1) if _nonzero(b) else i for i, (b, _) in zip(idx, u.arg)), None
  if op is Ops.FLIP: return tuple((s - 1 - i) if f else i for i, f, s in zip(idx, u.arg, u.shape)), None
  if op is Ops.PAD:
    conds = [c for i, (b, a), s in zip(idx, u.arg, src.shape)
             for c in ((i >= b) if _nonzero(b) else None, (i < b + s) if _nonzero(a) else None) if c is not None]
    inside = None
    for c in conds: inside = c if inside is None else inside & c
    return tuple(_shift(i, b, -1) if _nonzero(b) else i for i, (b, _) in zip(idx, u.arg)), inside
  raise ValueError(f"{op} is not a movement op")

def _shift(i: UOp, b: int | UOp, sign: int) -> UOp:
  """i + b (sign 1) or i - b (sign -1), a constant when both are: a constant index stays one through shrinks and pads (the
  scheduler skips reading a source where a constant index lies in a pad's padding)."""
  if i.op is Ops.CONST and isinstance(b, int): return UOp.const(i.dtype, i.arg + sign * b)
  return i + b if sign > 0 else i - b

def _nonzero(x: int | UOp) -> bool:
  """Might x (a pad or shrink amount, an int or symbolic) be nonzero?"""
  return not isinstance(x, int) or x != 0

def is_view(u: UOp) -> bool:
  """A movement op over a buffer other than the plain shape of a buffer (RESHAPE of a PARAM/DEFINE_*/AFTER)."""
  return u.op in GroupOp.Movement and not (u.op is Ops.RESHAPE and u.src[0].op not in GroupOp.Movement)

def view_index(view: UOp, idx: Sequence[UOp]) -> tuple[UOp, tuple[UOp, ...], UOp | None]:
  """Walk down the movement ops of a buffer view: the shaped buffer under them, the index into it, and the condition
  (from PADs) under which the element exists. One index into a view of several dimensions is a row-major position."""
  if len(idx) == 1 and len(view.shape) > 1 and is_view(view): idx = unflat_index(idx[0], view.shape)
  gate: UOp | None = None
  u, cur = view, tuple(idx)
  while is_view(u):
    cur, inside = move_index(u, cur)
    if inside is not None: gate = inside if gate is None else gate & inside
    u = u.src[0]
  return u, cur, gate
