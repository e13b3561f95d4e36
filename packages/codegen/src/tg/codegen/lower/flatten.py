"""First lowering pass: shaped buffers become flat pointers, and one-trip loops disappear. `INDEX(RESHAPE(buf), i, j)` is row-major index math on
`buf`, and a gate written as `idx.valid(gate)` moves into the INDEX as its third source. A value that is Invalid in some
lanes (tinygrad's `mask.where(x, Invalid)`) carries its gate up through the math on it, to its STORE, which writes only
the valid lanes: the others keep what the buffer held."""
from __future__ import annotations
import functools
from tg.uop import UOp, Ops, GroupOp, UPat, PatternMatcher, PtrDType, dtypes, Invalid, prod

def _is_ptr(u: UOp) -> bool: return isinstance(u.dtype, PtrDType)

def _invalid(u: UOp) -> bool: return u.op is Ops.CONST and u.arg is Invalid

def _split_gate(i: UOp) -> tuple[UOp, UOp | None]:
  """gate.where(x, Invalid) (an index's or a value's) as (x, gate); anything else as (it, None)."""
  return (i.src[1], i.src[0]) if i.op is Ops.WHERE and _invalid(i.src[2]) else (i, None)

def _gated(u: UOp) -> tuple[UOp, UOp | None, bool]:
  """A value as (value, gate or None: valid everywhere, Invalid everywhere)."""
  return (u, None, True) if _invalid(u) else (*_split_gate(u), False)

def _invalid_up(x: UOp) -> UOp | None:
  """Math on a partly Invalid value is Invalid where it is (its gate moves up); on an Invalid value, Invalid."""
  if any(u.dtype.scalar() == dtypes.index for u in (x, *x.src)): return None  # (a gated index is the INDEX's business)
  parts = [_gated(s) for s in x.src]
  if not any(g is not None or dead for _, g, dead in parts): return None
  inv = UOp.const(x.dtype, Invalid)
  if x.op is Ops.WHERE:  # valid where the branch taken is: c ? t : f
    (c, _, _), (t, tg, tdead), (f, fg, fdead) = parts
    if tdead and fdead: return inv
    if fdead and tg is None and not tdead: return None  # the form the gate is read from
    gate = c.where(UOp.const(dtypes.bool, not tdead) if tg is None else tg, UOp.const(dtypes.bool, not fdead) if fg is None else fg)
    return gate.where(c.where(f if tdead else t, t if fdead else f), inv)
  if any(dead for _, _, dead in parts): return inv
  gates = [g for _, g, _ in parts if g is not None]
  return functools.reduce(lambda a, b: a & b, gates).where(x.replace(src=tuple(v for v, _, _ in parts)), inv)

def _store_valid(st: UOp) -> UOp | None:
  """A STORE of a partly Invalid value writes under its gate (a gated INDEX); of an Invalid value, nothing."""
  v, gate, dead = _gated(st.src[1])
  if gate is None and not dead: return None
  ix = st.src[0]
  if dead: gate, v = UOp.const(dtypes.bool, False), UOp.const(v.dtype, 0)
  return st.replace(src=(ix.replace(src=(ix.src[0], gate.where(ix.src[1], UOp.invalid()), *ix.src[2:])), v, *st.src[2:]))

def _reduce_of_invalid(x: UOp) -> None:
  if any(g is not None or dead for _, g, dead in map(_gated, x.src[:1])):
    raise ValueError("a reduce over Invalid lanes (mask.where(x, Invalid)) has no value: Invalid lanes can only be left unwritten "
                     "by a store; give the masked lanes a number (mask.where(x, 0)) to reduce them")

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
  (UPat(GroupOp.ALU | {Ops.CAST, Ops.BITCAST}, name="x"), _invalid_up),
  (UPat(Ops.STORE, src=(UPat(Ops.INDEX),), allow_any_len=True, name="st"), _store_valid),
  (UPat(Ops.REDUCE, name="x"), _reduce_of_invalid),
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
