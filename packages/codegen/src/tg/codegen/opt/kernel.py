"""Kernel optimizations (opts) as rewrites of the RANGEs of a kernel AST: UPCAST, UNROLL, ACCUM, LOCAL, GROUP, GROUPTOP, PADTO,
SWAP, NOLOCALS, TC.

A kernel's axes are its RANGEs, ordered by (axis type, axis id). An Opt names an axis by its position among the
output axes (UPCAST, LOCAL, PADTO, SWAP) or among the reduce axes (UNROLL, ACCUM, GROUP, GROUPTOP); TC's axis picks one of the
ways to put the reduce on a tensor core (opt/tc.py), and it comes first and alone."""
from __future__ import annotations
from dataclasses import dataclass, replace
from enum import Enum, auto
from tg.uop import UOp, Ops, AxisType, KernelInfo, UPat, PatternMatcher, graph_rewrite, PtrDType, round_up
from tg.codegen.ranges import all_ranges, output_axes, reduce_axes, range_size
from tg.codegen.opt.tc import tc_candidates, wmma_tile

class OptOps(Enum):
  UPCAST = auto(); UNROLL = auto(); LOCAL = auto(); GROUP = auto(); GROUPTOP = auto(); NOLOCALS = auto()  # noqa: E702
  PADTO = auto(); SWAP = auto(); ACCUM = auto(); TC = auto(); BLOCK = auto()  # noqa: E702
  def __repr__(self) -> str: return f"OptOps.{self.name}"

@dataclass(frozen=True)
class Opt:
  op: OptOps
  axis: int | None = None
  arg: int | None = None
  def __repr__(self) -> str: return f"Opt(op={self.op!r}, axis={self.axis}, arg={self.arg})"

class KernelOptError(ValueError): pass


# ***** splitting a range: r -> outer*amt + inner, in every index, END and REDUCE *****
def _replace_ranges(ctx: dict[UOp, tuple[UOp, tuple[UOp, ...]]], x: UOp) -> UOp | None:
  if not any(s in ctx for s in x.src[1:]): return None
  return x.replace(src=(x.src[0], *[n for s in x.src[1:] for n in (ctx[s][1] if s in ctx else (s,))]))

pm_split = PatternMatcher([
  (UPat((Ops.END, Ops.REDUCE), name="x"), _replace_ranges),
  (UPat(Ops.RANGE, name="x"), lambda ctx, x: ctx[x][0] if x in ctx else None),
])

def split_range(ast: UOp, r: UOp, amt: int, inner_type: AxisType, inner_first: bool = False) -> UOp:
  """Split range r (size n, amt | n) into an outer range of n//amt and an inner range of amt with `inner_type`.
  inner_first puts the new axis first in the index (r = inner*(n//amt) + outer), as GROUPTOP does."""
  n = range_size(r)
  if n is None or amt <= 1 or n % amt != 0: raise KernelOptError(f"can't split axis {r.arg} of size {n} by {amt}")
  next_id = max(u.arg[0] for u in ast.toposort() if u.op is Ops.RANGE) + 1
  outer = UOp.range(n // amt, r.arg[0], r.arg[1])
  inner = UOp.range(amt, next_id, inner_type)
  expr = inner * (n // amt) + outer if inner_first else outer * amt + inner
  if amt == n: outer, expr = None, inner  # type: ignore[assignment]
  rngs = (inner,) if outer is None else (outer, inner)
  return graph_rewrite(ast, pm_split, ctx={r: (expr, rngs)}, bottom_up=True, name="split range")

def split_accumulators(ast: UOp, r: UOp, amt: int) -> UOp:
  """ACCUM: reduce axis r = outer*amt + lane, and each REDUCE over r becomes REDUCE(REDUCE(x, outer), lane) with lane an
  UNROLL axis: the amt lanes are amt independent accumulators (a vector register, no add chain across the lanes), folded
  into one value after the loop. UNROLL instead folds its lanes into the accumulator every iteration."""
  n = range_size(r)
  if n is None or not 1 < amt < n: raise KernelOptError(f"ACCUM needs 1 < {amt} < the axis size {n}")
  lane = UOp.range(amt, max(u.arg[0] for u in ast.toposort() if u.op is Ops.RANGE) + 1, AxisType.UNROLL)  # split_range's new axis
  ast = split_range(ast, r, amt, AxisType.UNROLL)
  def nest(red: UOp) -> UOp | None:
    if lane not in red.src[1:]: return None
    return red.src[0].reduce(*[x for x in red.src[1:] if x is not lane], arg=red.arg).reduce(lane, arg=red.arg)
  return graph_rewrite(ast, PatternMatcher([(UPat(Ops.REDUCE, name="red"), nest)]), name="split accumulators")

def retype_range(ast: UOp, r: UOp, new_type: AxisType, new_id: int | None = None) -> UOp:
  nr = UOp.range(r.src[0], r.arg[0] if new_id is None else new_id, new_type)
  return graph_rewrite(ast, pm_split, ctx={r: (nr, (nr,))}, bottom_up=True, name="retype range")

def pad_range(ast: UOp, r: UOp, amt: int) -> UOp:
  """Round axis r up to a multiple of amt; every INDEX that reads or writes through r is gated by r < n."""
  n = range_size(r)
  if n is None: raise KernelOptError("PADTO needs a constant axis size")
  new_n = round_up(n, amt)
  if new_n == n: return ast
  nr = UOp.range(new_n, r.arg[0], r.arg[1])
  ast = graph_rewrite(ast, pm_split, ctx={r: (nr, (nr,))}, bottom_up=True, name="pad range")
  valid = nr < n
  def gate(x: UOp) -> UOp | None:
    if nr not in x.src[1].toposort() or (len(x.src) > 2 and valid in x.src[2].toposort()): return None
    return x.replace(src=(x.src[0], x.src[1], valid if len(x.src) == 2 else x.src[2] & valid))
  return graph_rewrite(ast, PatternMatcher([(UPat(Ops.INDEX, name="x"), gate)]), name="pad gates")

def parallel_ranges(ast: UOp) -> list[UOp]:
  """LOOP ranges that every store to global memory is indexed by, and every load of a written buffer too:
  iterations of such a range touch disjoint memory, so they may run in parallel (become GLOBAL)."""
  stores = [u for u in ast.toposort() if u.op is Ops.STORE and u.src[0].op is Ops.INDEX and isinstance(u.src[0].src[0].dtype, PtrDType)
            and u.src[0].src[0].buffer_base.op is Ops.PARAM]
  if not stores: return []
  written = {s.src[0].src[0].buffer_base for s in stores}
  reads = [u for u in ast.toposort() if u.op is Ops.INDEX and u.src[0].buffer_base in written and u not in {s.src[0] for s in stores}]
  idx_deps = [set().union(*(s.toposort() for s in (x.src[0].src[1:] if x.op is Ops.STORE else x.src[1:]))) for x in stores + reads]
  return [r for r in all_ranges(ast) if r.arg[1] is AxisType.LOOP and all(r in d for d in idx_deps)]

def apply_tc(ast: UOp, opt: Opt, renderer: object, info: KernelInfo) -> UOp:
  """The reduce on a tensor core: candidate `opt.axis` of tc_candidates, its m and n padded to whole tiles (the padding's
  loads read 0, its stores are skipped)."""
  tcs = getattr(renderer, "tensor_cores", ())
  if not tcs: raise KernelOptError(f"{opt}: the device has no tensor cores")
  if info.dont_use_locals: raise KernelOptError(f"{opt}: a tensor core needs the wave's lanes as a local axis (NOLOCALS given)")
  if any(r.arg[1] not in (AxisType.GLOBAL, AxisType.LOOP, AxisType.REDUCE) for r in all_ranges(ast)):
    raise KernelOptError(f"{opt}: TC comes before every other opt")
  cands, i = tc_candidates(ast, tcs), opt.axis or 0
  if not 0 <= i < len(cands): raise KernelOptError(f"{opt}: the kernel has {len(cands)} ways to use a tensor core (a matmul-shaped "
                                                   f"reduce in {', '.join(sorted({t.dtype_in.name for t in tcs}))}, k a multiple of 16)")
  c = cands[i]
  if (range_size(c.m) or 0) % c.tc.dims[0] or (range_size(c.n) or 0) % c.tc.dims[1]:
    ast = pad_range(pad_range(ast, c.m, c.tc.dims[0]), c.n, c.tc.dims[1])
    c = tc_candidates(ast, tcs)[i]
  out, sub = wmma_tile(c, max(r.arg[0] for r in all_ranges(ast)) + 1)
  return graph_rewrite(ast.substitute({c.red: out}), pm_split, ctx=sub, bottom_up=True, name="tensor core")

def apply_opt(ast: UOp, opt: Opt, renderer: object) -> UOp:
  info: KernelInfo = ast.arg if isinstance(ast.arg, KernelInfo) else KernelInfo()
  if any(u.op is Ops.WMMA for u in ast.toposort()): raise KernelOptError(f"{opt}: no opt after TC (its lanes and registers are the tile's)")
  if opt.op is OptOps.NOLOCALS: return ast.replace(arg=replace(info, dont_use_locals=True, applied_opts=info.applied_opts + (opt,)))
  if opt.op is OptOps.TC: return apply_tc(ast, opt, renderer, info).replace(arg=replace(info, applied_opts=info.applied_opts + (opt,)))
  outs, reds = output_axes(ast), reduce_axes(ast)
  axes = reds if opt.op in (OptOps.UNROLL, OptOps.ACCUM, OptOps.GROUP, OptOps.GROUPTOP) else outs
  if opt.axis is None or not 0 <= opt.axis < len(axes): raise KernelOptError(f"{opt}: axis out of range, kernel has {len(axes)} such axes")
  r = axes[opt.axis]
  size = range_size(r)
  kinds = {x.arg[1] for x in all_ranges(ast)}
  if (opt.op in (OptOps.GROUP, OptOps.GROUPTOP) and kinds & {AxisType.UPCAST, AxisType.UNROLL}) or \
     (opt.op in (OptOps.UPCAST, OptOps.UNROLL, OptOps.ACCUM) and AxisType.GROUP_REDUCE in kinds):
    raise KernelOptError(f"{opt}: a reduce shared by a workgroup keeps scalar partials (no UPCAST/UNROLL with GROUP)")
  amt = opt.arg if opt.arg else size
  if opt.op is OptOps.UPCAST: ast = split_range(ast, r, amt, AxisType.UPCAST)  # type: ignore[arg-type]
  elif opt.op is OptOps.UNROLL: ast = split_range(ast, r, amt, AxisType.UNROLL)  # type: ignore[arg-type]
  elif opt.op is OptOps.ACCUM: ast = split_accumulators(ast, r, amt)  # type: ignore[arg-type]
  elif opt.op is OptOps.LOCAL:
    if not getattr(renderer, "has_local", False) or info.dont_use_locals: raise KernelOptError(f"{opt}: the device has no local dims")
    if r.arg[1] is not AxisType.GLOBAL: raise KernelOptError(f"{opt}: LOCAL splits a GLOBAL axis")
    ast = split_range(ast, r, amt, AxisType.LOCAL)  # type: ignore[arg-type]
  elif opt.op in (OptOps.GROUP, OptOps.GROUPTOP):
    if not getattr(renderer, "has_shared", False) or info.dont_use_locals: raise KernelOptError(f"{opt}: the device has no shared memory")
    ast = split_range(ast, r, amt, AxisType.GROUP_REDUCE, inner_first=opt.op is OptOps.GROUPTOP)  # type: ignore[arg-type]
  elif opt.op is OptOps.BLOCK:  # blocks of amt: the outer axis keeps r's place, the inner one is the innermost output loop
    if r.arg[1] not in (AxisType.LOOP, AxisType.GLOBAL): raise KernelOptError(f"{opt}: BLOCK splits a LOOP or GLOBAL axis")
    ast = split_range(ast, r, amt, r.arg[1])  # type: ignore[arg-type]
  elif opt.op is OptOps.PADTO:
    if r.arg[1] is AxisType.REDUCE: raise KernelOptError(f"{opt}: padding a reduce axis would change the result")
    ast = pad_range(ast, r, amt)  # type: ignore[arg-type]
  elif opt.op is OptOps.SWAP:
    if opt.arg is None or not 0 <= opt.arg < len(outs) or opt.arg == opt.axis: raise KernelOptError(f"{opt}: bad axis to swap with")
    o = outs[opt.arg]
    if o.arg[1] is not r.arg[1]: raise KernelOptError(f"{opt}: can only swap axes of one type")
    tmp = UOp.range(o.src[0], -1, o.arg[1])
    ast = retype_range(ast, o, o.arg[1], -1)
    ast = retype_range(ast, r, r.arg[1], o.arg[0])
    ast = retype_range(ast, tmp, o.arg[1], r.arg[0])
  info = ast.arg if isinstance(ast.arg, KernelInfo) else info
  return ast.replace(arg=replace(info, applied_opts=info.applied_opts + (opt,)))

def apply_opts(ast: UOp, opts: tuple[Opt, ...] | list[Opt], renderer: object) -> UOp:
  for o in opts: ast = apply_opt(ast, o, renderer)
  return ast

def globalize(ast: UOp) -> UOp:
  """Turn the parallel LOOP ranges into GLOBAL ones (done when the optimizer runs, not for kernels given exact opts)."""
  for r in parallel_ranges(ast): ast = retype_range(ast, r, AxisType.GLOBAL)
  return ast
