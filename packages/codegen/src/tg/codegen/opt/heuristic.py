"""Hand-written choice of opts: what usually works, found by measuring (bench/codegen.py, bench/train.py, bench/tensor.py).

- a reduce with two output axes that form an outer product (each has a load that doesn't depend on it: a matmul):
  an 8x16 (or 8x8, 4x4) register tile, UPCAST of the two innermost output axes, so every loaded value is used many
  times from registers; 8x16 measured best on the 2-core AVX-512 machine (bench/codegen.py: 116 GFLOP/s vs 72 for 8x8);
- any other reduce (convolutions and their gradients, a matmul with a small or odd axis, fused backward passes):
  UPCAST the output axis that the most loads don't depend on (their value, and all the math on it, is then computed
  once for all the lanes: the input of a conv for every output channel, a softmax gradient for every column), then
  the innermost output axis when some load doesn't depend on it either; then UNROLL the innermost reduce, fully when
  it is small (the math that doesn't depend on the output lanes is hoisted) - measured on the training step, the conv
  gradients 2-8x and a linear layer's input gradient 50x faster than with an UNROLL alone;
- a streaming reduce (no work to share between outputs: a sum, a max, the rows or columns of a matrix): vectors along
  the axis that memory is contiguous in. When that is the innermost reduce axis, ACCUM it by 64 (four AVX-512 registers
  of independent accumulators: 25 vs 5.9 GB/s for UNROLL by 8 on the rows of 4096x4096, 16 lanes 10 GB/s); when it is
  an output axis (a column sum), UPCAST it by 128 (each step of the walk down the rows reads eight whole cache lines:
  10.6 GB/s, 5.6 with 64 lanes, 0.3 with none). Measured on 2 busy cores; bench/cpu.py prints them beside the limit;
- any other reduce to one value: UNROLL it;
- elementwise: UPCAST the innermost axis to the widest vector the device has;
- on devices with workgroups: a LOCAL split of the innermost global axis; a long reduce to few outputs (a sum, a
  row-sum of a short matrix) is shared by a workgroup (GROUPTOP, partial sums in shared memory), or one thread would
  do all of it;
- on devices with tensor cores (AMD's WMMA on gfx11/gfx12): a half or bfloat16 matmul-shaped reduce whose two output axes are
  at least a tile (16) runs tile by tile on them (TC, opt/tc.py), and nothing else is applied."""
from __future__ import annotations
import math
from tg.uop import UOp, Ops, AxisType, GroupOp, dtypes, simplify_given_valid, split_terms
from tg.codegen.renderer import Renderer
from tg.codegen.opt.kernel import Opt, OptOps, KernelOptError, apply_opt
from tg.codegen.ranges import output_axes, reduce_axes, range_size
from tg.codegen.opt.tc import USE_TC, tc_candidates

STREAM_ACCUM, STREAM_UPCAST = (64, 32, 16), (128, 64, 32, 16)  # streaming reduces: accumulator lanes, output lanes
MIN_REUSE = 2     # an output axis is upcast when at least this much work doesn't depend on it (else clang vectorizes the plain loop better)
UPCAST_LANES = 256  # at most this many output lanes outside the matmul tile: 16 AVX-512 registers of accumulators

GROUP_MIN_REDUCE, GROUP_MAX_OUTPUTS = 256, 64  # a reduce this long to at most this many values is shared by a workgroup
EXPENSIVE = (Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.FDIV, Ops.RECIPROCAL, Ops.POW)

def _loads(k: UOp) -> list[UOp]:
  """The INDEXes a kernel loads through (into its parameters, not the ones it stores to)."""
  stored = {u.src[0] for u in k.toposort() if u.op is Ops.STORE}
  return [u for u in k.toposort() if u.op is Ops.INDEX and u not in stored and u.src[0].buffer_base.op is Ops.PARAM]

def _range_deps(k: UOp) -> dict[UOp, frozenset[UOp]]:
  """The RANGEs each value of the kernel depends on. A gated load's index is looked at under its gate (a windowed
  view's div/mod that the gate makes constant is no dependence)."""
  deps: dict[UOp, frozenset[UOp]] = {}
  for u in k.toposort():
    if u.op is Ops.RANGE: deps[u] = frozenset((u,))
    elif u.op is Ops.INDEX and len(u.src) == 3 and u.src[2].dtype == dtypes.bool:
      idx = simplify_given_valid(u.src[2], u.src[1])
      deps[u] = deps[u.src[2]].union(r for r in idx.toposort() if r.op is Ops.RANGE)
    else: deps[u] = frozenset().union(*(deps[s] for s in u.src))
  return deps

def _reuse(k: UOp, r: UOp, deps: dict[UOp, frozenset[UOp]]) -> int:
  """How much of the computed (not index) work inside the reduce doesn't depend on output axis r: upcasting r does it
  once for all its lanes (the input of a conv for every output channel, a softmax gradient for every column)."""
  red = {x for x in deps if x.op is Ops.RANGE and x.arg[1] is AxisType.REDUCE}
  stored = {u.src[0] for u in k.toposort() if u.op is Ops.STORE}
  score = 0
  for u in k.toposort():
    if (u.op is Ops.INDEX and u not in stored and u.src[0].buffer_base.op is Ops.PARAM) or \
       (u.op in GroupOp.ALU and u.dtype.scalar() not in (dtypes.index, dtypes.bool)):
      if r not in (d := deps[u]) and d & red: score += 8 if u.op in EXPENSIVE else 1
  return score

class _Kernel:
  """The kernel being optimized: opts are applied together, or none of them."""
  def __init__(self, k: UOp, ren: Renderer): self.k, self.ren = k, ren
  def attempt(self, *opts: Opt) -> bool:
    new = self.k
    try:
      for o in opts: new = apply_opt(new, o, self.ren)
    except KernelOptError: return False
    self.k = new
    return True

def hand_coded_optimizations(ast: UOp, ren: Renderer) -> UOp:
  if any(u.op is Ops.CONTRACT for u in ast.toposort()): return ast  # the kernel chose its own vector lanes: more would break them
  K = _Kernel(ast, ren)
  if _tensor_core(K): return K.k
  outs, reds = output_axes(ast), reduce_axes(ast)
  sizes = [range_size(r) or 0 for r in outs]
  red_size = range_size(reds[0]) if reds else None
  loads = _loads(ast)
  deps = _range_deps(ast)
  # a matmul: the two innermost output axes each have a load that doesn't depend on it (A[i,k] for j, B[k,j] for i)
  outer = len(outs) >= 2 and any(outs[-1] not in ld.toposort() and outs[-2] in ld.toposort() for ld in loads) and \
    any(outs[-2] not in ld.toposort() and outs[-1] in ld.toposort() for ld in loads)
  tiled = False
  if reds and outer and red_size is not None and red_size >= 16:
    n = len(outs)
    # a tile of accumulators in registers, the innermost axis in the vector lanes
    tiled = any(sizes[-2] % ti == 0 and sizes[-1] % tj == 0 and sizes[-2] >= 2 * ti and sizes[-1] >= 2 * tj and
                K.attempt(Opt(OptOps.UPCAST, n - 2, ti), Opt(OptOps.UPCAST, n - 1, tj)) for ti, tj in ((8, 16), (8, 8), (4, 4)))
  if reds and not tiled and ren.has_shared and red_size is not None and red_size >= GROUP_MIN_REDUCE and \
     math.prod(sizes) <= GROUP_MAX_OUTPUTS and any(red_size % a == 0 and K.attempt(Opt(OptOps.GROUPTOP, 0, a)) for a in (16, 8, 4)): pass
  elif reds and outs and not tiled and _upcast_reduce(K, deps): pass
  elif reds and not tiled and _stream_reduce(K, loads): pass
  elif reds and not tiled and red_size is not None:
    for amt in (8, 4, 2):
      if red_size % amt == 0 and red_size >= 4 * amt and K.attempt(Opt(OptOps.UNROLL, 0, amt)): break
  elif not reds and outs:
    widest = max(ren.vector_widths)
    for amt in (widest, 4, 2):
      if amt > 1 and sizes[-1] % amt == 0 and sizes[-1] >= amt and K.attempt(Opt(OptOps.UPCAST, len(outs) - 1, amt)): break
  if ren.has_local and ren.local_max is not None:
    glob = [r for r in output_axes(K.k) if r.arg[1] is AxisType.GLOBAL]
    if glob and (s := range_size(glob[-1])) is not None:
      for amt in (16, 8, 4, 2):
        if s % amt == 0 and s > amt and K.attempt(Opt(OptOps.LOCAL, len(output_axes(K.k)) - 1 - _trailing_non_global(K.k), amt)): break
  return K.k

def _tensor_core(K: _Kernel) -> bool:
  """TC with the first candidate whose rows and columns are at least a tile each (a thinner one would be mostly padding)."""
  for i, c in enumerate(tc_candidates(K.k, K.ren.tensor_cores) if USE_TC else ()):
    if min(range_size(c.m) or 0, range_size(c.n) or 0) >= min(c.tc.dims[:2]) and K.attempt(Opt(OptOps.TC, i)): return True
  return False

def _upcast_reduce(K: _Kernel, deps: dict[UOp, frozenset[UOp]]) -> bool:
  """False when no output axis is worth upcasting (then the plain reduce UNROLL applies)."""
  k0 = K.k
  lanes = 1
  def upcast(pos: int, amts: tuple[int, ...]) -> int:
    """UPCAST output axis `pos` by the first amount that divides it and fits; the whole axis when it is small."""
    s = range_size(output_axes(K.k)[pos]) or 0
    for amt in ((s,) if 1 < s <= 16 else ()) + amts:
      if 1 < amt <= s and s % amt == 0 and lanes * amt <= UPCAST_LANES and K.attempt(Opt(OptOps.UPCAST, pos, amt)): return amt
    return 1
  # the output axis with the most work that doesn't depend on it (ties: the one that takes the bigger upcast, then the inner one), then the
  # innermost axis when some work doesn't depend on it either (an outer product: conv input x weight)
  outs = output_axes(K.k)
  scores = [(_reuse(k0, r, deps), _amount(range_size(r) or 0), i) for i, r in enumerate(outs) if (range_size(r) or 0) > 1]
  red_total = math.prod(range_size(r) or 1 for r in reduce_axes(K.k))
  # a load shared by all lanes pays off over a long reduce; over a short one (a 1-channel conv) clang's own vectorizing
  # of the plain innermost loop is better (measured 0.16 vs 0.75 ms)
  if not scores or (best := max(scores))[0] < (1 if red_total >= 16 else MIN_REUSE): return False
  lanes *= upcast(best[2], (16, 8, 4, 2))
  if best[2] != len(outs) - 1 and (range_size((inner := output_axes(K.k)[-1])) or 0) > 1 and _reuse(k0, inner, deps) > 0:
    # the rows of the tile: a big divisor (a conv's row of 30 as 15 rows: 3.4x faster than 3)
    lanes *= upcast(len(output_axes(K.k)) - 1, tuple(range(16, 1, -1)))
  elif best[2] == len(outs) - 1 and (rest := [sc for sc in scores if sc[2] != best[2] and sc[0] > 0 and sc[1] >= 4]):
    # the vector lanes are the innermost axis: the other operand of the outer product gives the rows of the tile
    lanes *= upcast(max(rest)[2], (8, 4, 2))
  # the innermost reduce: fully unrolled when small (what doesn't depend on the output lanes is hoisted), else by 4 -
  # unless expensive math depends on it: the unrolled lanes would redo it for every output lane - or a big tile already
  # has enough independent accumulators (measured: a conv's 16x12 tile 2.1 ms plain, 2.7 ms with its 3-wide window unrolled)
  reds = reduce_axes(K.k)
  if reds and (rs := range_size(reds[-1])) is not None and lanes < 128:
    costly = any(u.op in EXPENSIVE and reds[-1] in deps.get(u, ()) for u in k0.toposort())
    for amt in ((rs,) if rs <= 16 else ()) + (() if costly else (4, 2)):
      if rs % amt == 0 and rs >= amt and K.attempt(Opt(OptOps.UNROLL, len(reds) - 1, amt)): break
  return True

def unit_stride_axes(idx: UOp) -> set[UOp]:
  """The RANGEs a load's index steps by one element with (the address is r + rest, r not in rest)."""
  if (split := split_terms(idx.src[1])) is None: return set()
  terms = split[0]
  return {t for t, c in terms if t.op is Ops.RANGE and c == 1 and sum(1 for u, _ in terms if t in u.toposort()) == 1}

def _stream_reduce(K: _Kernel, loads: list[UOp]) -> bool:
  """Vectors along the axis every reducing load is contiguous in (see the module docstring); False when there is none."""
  reds, outs = reduce_axes(K.k), output_axes(K.k)
  reading = [ld for ld in loads if any(r in ld.toposort() for r in reds)]
  if not reading: return False
  common = set.intersection(*(unit_stride_axes(ld) for ld in reading))
  if reds[-1] in common:
    n = range_size(reds[-1]) or 0
    # (at least 16 steps per lane: the lanes are folded one by one after the loop, which a short row would pay for)
    return any(n % a == 0 and n >= 16 * a and K.attempt(Opt(OptOps.ACCUM, len(reds) - 1, a)) for a in STREAM_ACCUM)
  if outs and outs[-1] in common:
    n = range_size(outs[-1]) or 0
    return any(n % a == 0 and n >= 2 * a and K.attempt(Opt(OptOps.UPCAST, len(outs) - 1, a)) for a in STREAM_UPCAST)
  return False

def _amount(s: int) -> int:
  """How many lanes an UPCAST of an axis of size s takes: all of it when small, else the biggest of 16, 8, 4, 2 dividing it."""
  return s if s <= 16 else next((a for a in (16, 8, 4, 2) if s % a == 0), 1)

def _trailing_non_global(k: UOp) -> int:
  outs = output_axes(k)
  n = 0
  for r in reversed(outs):
    if r.arg[1] is AxisType.GLOBAL: break
    n += 1
  return n
