"""Hand-written choice of opts: what usually works, found by measuring (see bench/codegen.py).

- a reduce with two or more output axes (a matmul): an 8x16 (or 8x8, 4x4) register tile, UPCAST of the two innermost
  output axes, so every loaded value is used many times from registers (else an UNROLL of the reduce); 8x16 measured
  best on the 2-core AVX-512 machine (bench/codegen.py: 116 GFLOP/s vs 72 for 8x8);
- a reduce over everything else: UNROLL it, so independent accumulators break the add chain;
- elementwise: UPCAST the innermost axis to the widest vector the device has;
- on devices with workgroups: a LOCAL split of the innermost global axis."""
from __future__ import annotations
from tg.uop import UOp, Ops, AxisType
from tg.codegen.renderer import Renderer
from tg.codegen.opt.kernel import Opt, OptOps, KernelOptError, apply_opt, output_axes, reduce_axes, range_size

def hand_coded_optimizations(ast: UOp, ren: Renderer) -> UOp:
  if any(u.op is Ops.CONTRACT for u in ast.toposort): return ast  # the kernel chose its own vector lanes: more would break them
  k = ast
  def attempt(*opts: Opt) -> bool:
    """Apply opts together, or none of them."""
    nonlocal k
    new = k
    try:
      for o in opts: new = apply_opt(new, o, ren)
    except KernelOptError: return False
    k = new
    return True
  outs, reds = output_axes(k), reduce_axes(k)
  sizes = [range_size(r) or 0 for r in outs]
  red_size = range_size(reds[0]) if reds else None
  if reds and len(outs) >= 2 and red_size is not None and red_size >= 16:
    n = len(outs)
    # a tile of accumulators in registers, the innermost axis in the vector lanes
    tiled = any(sizes[-2] % ti == 0 and sizes[-1] % tj == 0 and sizes[-2] >= 2 * ti and sizes[-1] >= 2 * tj and
                attempt(Opt(OptOps.UPCAST, n - 2, ti), Opt(OptOps.UPCAST, n - 1, tj)) for ti, tj in ((8, 16), (8, 8), (4, 4)))
    if not tiled:
      for amt in (4, 2):
        if red_size % amt == 0 and attempt(Opt(OptOps.UNROLL, 0, amt)): break
  elif reds and red_size is not None:
    for amt in (8, 4, 2):
      if red_size % amt == 0 and red_size >= 4 * amt and attempt(Opt(OptOps.UNROLL, 0, amt)): break
  elif outs:
    widest = max(ren.vector_widths)
    for amt in (widest, 4, 2):
      if amt > 1 and sizes[-1] % amt == 0 and sizes[-1] >= amt and attempt(Opt(OptOps.UPCAST, len(outs) - 1, amt)): break
  if ren.has_local and ren.local_max is not None:
    glob = [r for r in output_axes(k) if r.arg[1] is AxisType.GLOBAL]
    if glob and (s := range_size(glob[-1])) is not None:
      for amt in (16, 8, 4, 2):
        if s % amt == 0 and s > amt and attempt(Opt(OptOps.LOCAL, len(output_axes(k)) - 1 - _trailing_non_global(k), amt)): break
  return k

def _trailing_non_global(k: UOp) -> int:
  outs = output_axes(k)
  n = 0
  for r in reversed(outs):
    if r.arg[1] is AxisType.GLOBAL: break
    n += 1
  return n
