"""Loads, and the devectorizer.

pm_add_loads: an INDEX that is read becomes LOAD(INDEX) with a pointer dtype; a gated one gets a 0 for `alt`.
pm_devectorize: vector ALU becomes lanes of scalar ALU (the C compiler vectorizes them again); GEPs are pushed
down to the lanes; a vector LOAD or STORE is split into runs of consecutive addresses, each one vector access of
a width the renderer supports, or scalar accesses where the addresses are not consecutive."""
from __future__ import annotations
from tg.uop import UOp, Ops, UPat, PatternMatcher, GroupOp, PtrDType, dtypes, graph_rewrite, split_terms
from tg.uop.symbolic import symbolic
from tg.codegen.renderer import Renderer

def _ptr_index(x: UOp) -> UOp:
  """An element-typed INDEX as an address: its dtype becomes the buffer's pointer (a vector of pointers for vector indices)."""
  buf = x.src[0]
  ptr = buf.dtype if isinstance(buf.dtype, PtrDType) else buf.dtype.ptr()
  return x.replace(dtype=ptr.vec(x.dtype.count) if x.dtype.count > 1 else ptr)  # type: ignore[union-attr]

def _load(idx: UOp, value_dtype: object, deps: tuple[UOp, ...] = ()) -> UOp:
  alt = (UOp.const(value_dtype, 0),) if idx.gate is not None else ()  # type: ignore[arg-type]
  return UOp(Ops.LOAD, value_dtype, (idx, *alt, *deps))  # type: ignore[arg-type]

def _is_val_index(x: UOp) -> bool: return x.op is Ops.INDEX and not isinstance(x.dtype, PtrDType)

pm_add_loads = PatternMatcher([
  # every element-typed INDEX is first read; where it was really a STORE's or LOAD's address, the read is undone
  (UPat(Ops.INDEX, name="i"), lambda i: _load(_ptr_index(i), i.dtype) if _is_val_index(i) else None),
  (UPat(Ops.STORE, src=(UPat(Ops.LOAD, name="l"), UPat.var("v")), name="s"), lambda l, v, s: s.replace(src=(l.src[0], v))),
  (UPat(Ops.LOAD, src=(UPat(Ops.LOAD, name="l"),), allow_any_len=True, name="x"),
   lambda l, x: _load(l.src[0], x.dtype, x.src[1:])),
])

# ***** devectorizing *****
def no_vector_alu(ctx: Renderer | None, u: UOp) -> UOp | None:
  """Vector ALU the renderer can't do is split into lanes, or into chunks of the widest vector it can do."""
  n = u.dtype.count
  if n == 1 or isinstance(u.dtype, PtrDType): return None
  w = 1
  if ctx is not None and ctx.keeps_vector(u):
    if n in ctx.vector_alu_widths: return None
    w = max((x for x in ctx.vector_alu_widths if n % x == 0), default=1)
  chunks = [UOp(u.op, u.dtype.scalar().vec(w), tuple(s.gep(tuple(range(i, i + w)) if w > 1 else i) for s in u.src), u.arg)
            for i in range(0, n, w)]
  return UOp.vectorize(*[c.gep(j) if w > 1 else c for c in chunks for j in range(w)])

def cast_index_lanes(ctx: Renderer | None, u: UOp) -> UOp | None:
  """A vector CAST of index lanes that differ by constants (an upcast range's positions, `base + 0, base + 1, ...`) to an
  integer vector the renderer keeps: lane 0's cast broadcast plus the constant offsets (a wrapping cast commutes with +).
  Split, every lane was a scalar add, a cast and an insert (an argmax's index pass: 16 of each per vector of 16 loads)."""
  x, n = u.src[0], u.dtype.count
  if ctx is None or n == 1 or x.op is not Ops.VECTORIZE or x.dtype.scalar() != dtypes.index or len(set(x.src)) == 1: return None
  if not ctx.keeps_vector(UOp(Ops.ADD, u.dtype)) or (parts := [split_terms(s) for s in x.src])[0] is None: return None
  terms = sorted(parts[0][0], key=lambda tk: id(tk[0]))
  if any(p is None or sorted(p[0], key=lambda tk: id(tk[0])) != terms for p in parts[1:]): return None
  offs = UOp.const(u.dtype, tuple(p[1] - parts[0][1] for p in parts))  # type: ignore[index]
  return x.src[0].cast(u.dtype.scalar()).broadcast(n) + offs

def whole_vector(v: UOp) -> UOp | None:
  """VECTORIZE(x[0], x[1], ..., x[n-1]) is x."""
  x = v.src[0].src[0] if v.src[0].op is Ops.GEP else None
  if x is None or x.dtype.count != len(v.src) or isinstance(x.dtype, PtrDType): return None
  return x if all(s.op is Ops.GEP and s.src[0] is x and s.arg == (i,) for i, s in enumerate(v.src)) else None

def gep_through(g: UOp) -> UOp | None:
  x, lanes = g.src[0], g.arg
  if x.op is Ops.VECTORIZE: return UOp.vectorize(*[x.src[i] for i in lanes])
  if x.op is Ops.VCONST: return UOp.vectorize(*[UOp.const(x.dtype.scalar(), x.arg[i]) for i in lanes])
  if x.op is Ops.GEP: return x.src[0].gep(tuple(x.arg[i] for i in lanes))
  if x.op is Ops.CONST: return x if len(lanes) == 1 else x.broadcast(len(lanes))
  if lanes == tuple(range(x.dtype.vcount)): return x
  if len(lanes) > 1 and x.op is not Ops.LOAD: return UOp.vectorize(*[x.gep(i) for i in lanes])
  return None

def _folds_own_lanes(x: UOp) -> bool:
  return x.op in GroupOp.Binary and len(x.src) == 2 and all(s.op is Ops.GEP for s in x.src) and x.src[0].src[0] is x.src[1].src[0]

def push_gep(g: UOp) -> UOp | None:
  """GEP of a vector op is the op on the GEPs of its sources: take only the lanes that are used. Loads stay whole, so
  the devectorizer sees all their addresses at once and finds the contiguous runs."""
  x, lanes = g.src[0], g.arg
  # (only lanes taken once: pushing a broadcast through would compute the same lane several times; not into a fold of one
  # vector's own lanes, expander.fold_lanes: its whole vector ops would become a scalar per lane)
  if _folds_own_lanes(x): return None
  if (x.op in GroupOp.ALU or x.op in (Ops.CAST, Ops.BITCAST)) and len(set(lanes)) == len(lanes):
    return UOp(x.op, x.dtype.scalar().vec(len(lanes)), tuple(s.gep(lanes) for s in x.src), x.arg)
  return gep_through(g)

def _lane_addrs(idx: UOp) -> list[tuple[UOp, UOp | None]]:
  """(index, gate) of each lane of a vector INDEX, simplified: all lanes in one rewrite (of a SINK holding them), so the
  parts they share are simplified once, not once per lane (a 100-lane accumulator tile took 17 s lane by lane)."""
  n, gated = idx.dtype.vcount, len(idx.src) > 2
  lanes = [idx.src[1].gep(i) for i in range(n)] + ([idx.src[2].gep(i) for i in range(n)] if gated else [])
  done = graph_rewrite(UOp.sink(*lanes), pm_devectorize_math, name="lane addresses").src
  return [(done[i], done[n + i] if gated else None) for i in range(n)]

def _base_offset(idx: UOp) -> tuple[object, int]:
  """idx as base + constant, the base a key of its terms and their coefficients in any spelling: x + (y + 3) is (x + y) + 3
  (symbolic keeps that spelling, it is no smaller), and (i*4 + j)*16 is i*64 + j*16, so the lanes of an ACCUM or UPCAST
  split inside a row offset share one base (lane 0 of a store to a packed [i][j][16] layout is spelled as the product)."""
  if idx.op is Ops.CONST: return (), idx.arg
  if idx.op not in (Ops.ADD, Ops.MUL) or (split := split_terms(idx)) is None: return idx, 0
  terms, const, _ = split
  coefs: dict[UOp, int] = {}
  for t, c in terms: coefs[t] = coefs.get(t, 0) + c
  return frozenset((t, c) for t, c in coefs.items() if c != 0), const

def access_groups(addrs: list[tuple[UOp, UOp | None]], widths: tuple[int, ...]) -> list[tuple[list[list[int]], int]]:
  """Group lanes into accesses: lanes with the same base and gate whose constant offsets are consecutive share one
  access of a supported width. Each access lists, per element, the lanes that read or write that element."""
  by_base: dict[tuple[object, UOp | None], dict[int, list[int]]] = {}
  for lane, (idx, gate) in enumerate(addrs):
    base, off = _base_offset(idx)
    by_base.setdefault((base, gate), {}).setdefault(off, []).append(lane)
  out: list[tuple[list[list[int]], int]] = []
  for offs in by_base.values():
    keys = sorted(offs)
    i = 0
    while i < len(keys):
      w = next((c for c in sorted(widths, reverse=True) if c > 1 and i + c <= len(keys) and keys[i + c - 1] - keys[i] == c - 1), 1)
      out.append(([offs[k] for k in keys[i:i + w]], w))
      i += w
  return out

def _scalar_addr(idx: UOp, a: tuple[UOp, UOp | None], w: int) -> UOp:
  buf = idx.src[0]
  one = UOp(Ops.INDEX, buf.dtype, (buf, a[0]) + ((a[1],) if a[1] is not None else ()))
  if w == 1: return one
  ptr: PtrDType = buf.dtype  # type: ignore[assignment]
  return UOp(Ops.CAST, ptr.base.vec(w).ptr(ptr.size, ptr.addrspace), (one,))

def _widths(ctx: Renderer, idx: UOp) -> tuple[int, ...]:
  return (1,) if idx.dtype.base.scalar() == dtypes.bool else ctx.vector_widths  # no vectors of bool (C has none)

def split_load(ctx: Renderer, l: UOp) -> UOp | None:
  idx = l.src[0]
  if idx.op is not Ops.INDEX or idx.dtype.vcount == 1: return None
  addrs = _lane_addrs(idx)
  lanes: list[UOp | None] = [None] * len(addrs)
  for elems, w in access_groups(addrs, _widths(ctx, idx)):
    ld = _load(_scalar_addr(idx, addrs[elems[0][0]], w), l.dtype.scalar().vec(w), l.src[2 if len(idx.src) > 2 else 1:])
    for k, ls in enumerate(elems):
      for lane in ls: lanes[lane] = ld.gep(k) if w > 1 else ld
  return UOp.vectorize(*lanes)  # type: ignore[arg-type]

def split_store(ctx: Renderer, s: UOp) -> UOp | None:
  idx, v = s.src[0], s.src[1]
  if idx.op is not Ops.INDEX or idx.dtype.vcount == 1: return None
  addrs = _lane_addrs(idx)
  stores = []
  for elems, w in access_groups(addrs, _widths(ctx, idx)):
    val = v.gep(tuple(ls[-1] for ls in elems)) if w > 1 else v.gep(elems[0][-1])
    stores.append(s.replace(src=(_scalar_addr(idx, addrs[elems[0][0]], w), val)))
  return UOp.group(*stores)

pm_push_gep = PatternMatcher([(UPat(Ops.GEP, name="g"), push_gep)])

pm_devectorize_math = symbolic + PatternMatcher([
  (UPat(Ops.CAST, name="u"), cast_index_lanes),
  (UPat(GroupOp.ALU | {Ops.CAST, Ops.BITCAST}, name="u"), no_vector_alu),
  (UPat(Ops.GEP, name="g"), gep_through),
  (UPat(Ops.VECTORIZE, name="v"), whole_vector),
])

pm_devectorize = pm_devectorize_math + PatternMatcher([
  (UPat(Ops.LOAD, name="l"), split_load),
  (UPat(Ops.STORE, name="s"), split_store),
])
