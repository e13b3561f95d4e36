"""GPU dims: on a device with workgroups, GLOBAL and LOCAL (and GROUP_REDUCE) ranges become SPECIAL thread ids instead of
loops (but an axis of symbolic size).

The innermost axis gets dimension 0. With more axes than the device has dimensions, the outer ones share the
last dimension (split again with div/mod). A dimension may not exceed the device's limit (global_max, local_max): when
that order breaks one, the axes are regrouped over the dimensions so that each fits, or a ValueError names the sizes."""
from __future__ import annotations
import itertools
from tg.uop import UOp, Ops, AxisType, UPat, PatternMatcher, graph_rewrite, prod
from tg.codegen.renderer import Renderer
from tg.codegen.ranges import all_ranges, range_size

MAX_REGROUP_AXES = 8  # regrouping tries every assignment of axes to dimensions: 3**8 at most

def _groups(rngs: list[UOp], maxes: tuple[int, ...]) -> list[list[UOp]]:
  """The axes (innermost first) of each dimension: one each, the rest in the last, unless that breaks a limit; then the
  first assignment of axes to dimensions under every limit."""
  inner_first, dims = list(reversed(rngs)), len(maxes)
  sizes = {r: range_size(r) for r in rngs}
  def fits(gs: list[list[UOp]]) -> bool: return all(prod([sizes[r] for r in g]) <= m for g, m in zip(gs, maxes))  # type: ignore[misc]
  default = [[r] for r in inner_first[:dims - 1]] + [inner_first[dims - 1:]]
  if fits(default): return default
  if len(rngs) <= MAX_REGROUP_AXES:
    for assign in itertools.product(range(dims), repeat=len(inner_first)):
      gs: list[list[UOp]] = [[r for r, d in zip(inner_first, assign) if d == k] for k in range(dims)]
      if fits(gs): return gs
  raise ValueError(f"GPU axes of sizes {[sizes[r] for r in inner_first]} don't fit the device's launch limits {maxes}")

def _ids(rngs: list[UOp], prefix: str, maxes: tuple[int, ...]) -> dict[UOp, UOp]:
  """RANGE -> index expression over at most len(maxes) SPECIALs, each at most its limit."""
  if not rngs: return {}
  out: dict[UOp, UOp] = {}
  for d, g in enumerate(_groups(rngs, maxes)):
    if not g: continue
    sizes = [range_size(r) for r in g]
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
  # (a GLOBAL axis of symbolic size stays a loop: a launch's sizes are fixed when the kernel is built)
  sub = _ids([r for r in rngs if r.arg[1] is AxisType.GLOBAL and range_size(r) is not None], "gidx", ren.global_max)
  sub |= _ids([r for r in rngs if r.arg[1] in (AxisType.LOCAL, AxisType.GROUP_REDUCE)], "lidx", ren.local_max or ())
  return graph_rewrite(sink, pm_gpudims, ctx=sub, bottom_up=True, name="gpudims") if sub else sink

def launch_size(uops: list[UOp], prefix: str) -> tuple[int, int, int]:
  dims = [1, 1, 1]
  for u in uops:
    if u.op is Ops.SPECIAL and u.arg.startswith(prefix): dims[int(u.arg[len(prefix):])] = u.src[0].arg
  return (dims[0], dims[1], dims[2])
