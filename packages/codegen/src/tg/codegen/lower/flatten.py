"""First lowering pass: shaped buffers become flat pointers, and one-trip loops disappear. `INDEX(RESHAPE(buf), i, j)` is row-major index math on
`buf`, and a gate written as `idx.valid(gate)` moves into the INDEX as its third source."""
from __future__ import annotations
import functools
from tg.uop import UOp, Ops, UPat, PatternMatcher, PtrDType, dtypes, Invalid, prod

def _is_ptr(u: UOp) -> bool: return isinstance(u.dtype, PtrDType)

def _split_gate(i: UOp) -> tuple[UOp, UOp | None]:
  if i.op is Ops.WHERE and i.src[2].op is Ops.CONST and i.src[2].arg is Invalid: return i.src[1], i.src[0]
  return i, None

def flatten_index(x: UOp) -> UOp | None:
  buf, idxs = x.src[0], x.src[1:]
  if len(idxs) == 2 and idxs[1].dtype == dtypes.bool: return None  # already flat, with its gate
  shaped = buf.op is Ops.RESHAPE and _is_ptr(buf)
  parts = [_split_gate(i) for i in idxs]
  if not shaped and len(parts) == 1 and parts[0][1] is None: return None
  if len(parts) == 1: strides = [1]  # one flat index into a shaped buffer
  else:
    shape = buf.arg if shaped else ()
    if len(shape) != len(parts): raise IndexError(f"{len(parts)} indices into a buffer of shape {shape}")
    strides = [prod(shape[i + 1:]) for i in range(len(shape))]
  flat = sum_uops([i if st == 1 else i * st for (i, _), st in zip(parts, strides)])
  gates = [g for _, g in parts if g is not None]
  gate = functools.reduce(lambda a, b: a & b, gates) if gates else None
  return UOp(Ops.INDEX, x.dtype, (buf.src[0] if shaped else buf, flat) + ((gate,) if gate is not None else ()))

def sum_uops(xs: list[UOp]) -> UOp: return functools.reduce(lambda a, b: a + b, xs)

def drop_ranges(x: UOp) -> UOp | None:
  """A loop of one trip is no loop: END and REDUCE forget ranges that became the constant 0."""
  if all(r.op is Ops.RANGE for r in x.src[1:]): return None
  rngs = [r for r in x.src[1:] if r.op is Ops.RANGE]
  return x.src[0].end(*rngs) if x.op is Ops.END else x.src[0].reduce(*rngs, arg=x.arg)

pm_flatten = PatternMatcher([
  (UPat(Ops.RANGE, src=(UPat(Ops.CONST, arg=1),)), lambda: UOp.const(dtypes.index, 0)),
  (UPat((Ops.END, Ops.REDUCE), name="x"), drop_ranges),
  # AFTER of a shaped buffer is the shaped AFTER of the flat buffer, so INDEX sees the RESHAPE on top
  (UPat(Ops.AFTER, src=(UPat(Ops.RESHAPE, name="r"),), allow_any_len=True, name="a"),
   lambda a, r: r.replace(src=(a.replace(src=(r.src[0], *a.src[1:]), dtype=r.src[0].dtype),)) if _is_ptr(r) else None),
  (UPat(Ops.INDEX, name="x"), flatten_index),
  # an END or SINK of a shaped buffer is the END of the buffer itself
  (UPat(Ops.END, src=(UPat(Ops.RESHAPE, name="r"),), allow_any_len=True, name="e"),
   lambda e, r: e.replace(src=(r.src[0], *e.src[1:])) if _is_ptr(r) else None),
  (UPat(Ops.SINK, name="s"), lambda s: s.replace(src=tuple(x.src[0] if x.op is Ops.RESHAPE and _is_ptr(x) else x for x in s.src))
   if any(x.op is Ops.RESHAPE for x in s.src) else None),
])
