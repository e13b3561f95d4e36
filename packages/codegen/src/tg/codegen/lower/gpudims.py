"""GPU dims: on a device with workgroups, GLOBAL and LOCAL (and GROUP_REDUCE) ranges become SPECIAL thread ids instead of
loops.

The innermost axis gets dimension 0. With more axes than the device has dimensions, the outer ones share the
last dimension (split again with div/mod)."""
from __future__ import annotations
from tg.uop import UOp, Ops, AxisType, UPat, PatternMatcher, graph_rewrite, prod
from tg.codegen.renderer import Renderer
from tg.codegen.ranges import all_ranges, range_size

def _ids(rngs: list[UOp], prefix: str, dims: int) -> dict[UOp, UOp]:
  """RANGE -> index expression over at most `dims` SPECIALs."""
  if not rngs: return {}
  inner_first = list(reversed(rngs))
  groups = [[r] for r in inner_first[:dims - 1]] + [inner_first[dims - 1:]]
  out: dict[UOp, UOp] = {}
  for d, g in enumerate(groups):
    if not g: continue
    sizes = [range_size(r) for r in g]
    if any(s is None for s in sizes): raise NotImplementedError("symbolic GPU dims")
    sp = UOp.special(prod(sizes), f"{prefix}{d}")  # type: ignore[arg-type]
    stride = 1
    for r, s in zip(g, sizes):
      out[r] = (sp // stride) % s if len(g) > 1 else sp
      stride *= s  # type: ignore[operator]
  return out

def _drop_from_end(ctx: dict[UOp, UOp], e: UOp) -> UOp | None:
  if not any(r in ctx for r in e.src[1:]): return None
  return e.src[0].end(*[r for r in e.src[1:] if r not in ctx])

pm_gpudims = PatternMatcher([
  (UPat(Ops.END, name="e"), _drop_from_end),
  (UPat(Ops.RANGE, name="r"), lambda ctx, r: ctx.get(r)),
])

def add_gpudims(sink: UOp, ren: Renderer) -> UOp:
  if ren.global_max is None: return sink
  rngs = all_ranges(sink)
  sub = _ids([r for r in rngs if r.arg[1] is AxisType.GLOBAL], "gidx", len(ren.global_max))
  sub |= _ids([r for r in rngs if r.arg[1] in (AxisType.LOCAL, AxisType.GROUP_REDUCE)], "lidx", len(ren.local_max or ()))
  return graph_rewrite(sink, pm_gpudims, ctx=sub, bottom_up=True, name="gpudims") if sub else sink

def launch_size(uops: list[UOp], prefix: str) -> tuple[int, int, int]:
  dims = [1, 1, 1]
  for u in uops:
    if u.op is Ops.SPECIAL and u.arg.startswith(prefix): dims[int(u.arg[len(prefix):])] = u.src[0].arg
  return (dims[0], dims[1], dims[2])
