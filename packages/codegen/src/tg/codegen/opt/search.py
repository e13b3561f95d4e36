"""Choosing opts: hand-written heuristics by default, or BEAM=n: a beam search over candidates scored by a timer (NOOPT=1:
none). The timer (the pipeline's time_kernel) builds and runs a candidate; the search itself only applies opts, so it
sits below the pipeline. The beam's choice is cached on disk, keyed by the kernel and the device."""
from __future__ import annotations
import hashlib, math, pickle
from typing import Callable
from tg.uop import UOp, Ops, ContextVar, DEBUG
from tg.codegen.renderer import Renderer
from tg.codegen.opt.kernel import Opt, OptOps, KernelOptError, apply_opt, globalize
from tg.codegen.ranges import output_axes, reduce_axes, range_size
from tg.codegen.opt.heuristic import hand_coded_optimizations
from tg.codegen.opt.tc import USE_TC, tc_candidates
from tg.codegen.diskcache import diskcache_get, diskcache_put

BEAM = ContextVar("BEAM", 0)
IGNORE_BEAM_CACHE = ContextVar("IGNORE_BEAM_CACHE", 0)  # search again instead of reading what a search found before
NOOPT = ContextVar("NOOPT", 0)  # no opts at all: each kernel as lowered (its output ranges still map to the launch grid)

def choose_opts(ast: UOp, ren: Renderer, timer: Callable[[UOp], float]) -> UOp:
  ast = globalize(ast)
  if NOOPT: return ast
  if BEAM >= 1 and ren.device: return beam_search(ast, ren, int(BEAM), timer)
  return hand_coded_optimizations(ast, ren)

def actions(k: UOp, ren: Renderer) -> list[Opt]:
  """Every opt the search may try next: UPCAST/UNROLL/ACCUM/LOCAL splits, GROUP/GROUPTOP (a reduce shared by a workgroup), PADTO
  (round an axis up so it splits), SWAP (output axes' order), BLOCK (an output axis in blocks, the other loops inside them),
  NOLOCALS, TC (each way to put the reduce on a tensor core); apply_opt rejects those that don't fit the kernel."""
  outs, reds = output_axes(k), reduce_axes(k)
  def divides(r: UOp, a: int) -> bool: return (range_size(r) or 1) % a == 0
  acts = [Opt(OptOps.UPCAST, i, a) for i, r in enumerate(outs) for a in (2, 3, 4, 8) if divides(r, a) and range_size(r) != a]
  acts += [Opt(OptOps.UPCAST, i, 0) for i, r in enumerate(outs) if (range_size(r) or 99) <= 8]
  acts += [Opt(OptOps.UNROLL, i, a) for i, r in enumerate(reds) for a in (2, 4, 8, 16) if divides(r, a)]
  acts += [Opt(OptOps.ACCUM, i, a) for i, r in enumerate(reds) for a in (2, 4, 16, 64) if divides(r, a) and (range_size(r) or 0) > a]
  acts += [Opt(OptOps.PADTO, i, a) for i, r in enumerate(outs) for a in (8, 16, 32) if (range_size(r) or 0) > a and not divides(r, a)]
  acts += [Opt(OptOps.SWAP, i, j) for i, r in enumerate(outs) for j, o in enumerate(outs) if i < j and r.arg[1] is o.arg[1]]
  acts += [Opt(OptOps.BLOCK, i, a) for i, r in enumerate(outs) for a in (4, 8, 16, 32) if divides(r, a) and (range_size(r) or 0) > a]
  if ren.has_local:
    acts += [Opt(OptOps.LOCAL, i, a) for i, r in enumerate(outs) for a in (2, 4, 8, 16, 32) if divides(r, a)]
    acts.append(Opt(OptOps.NOLOCALS))
  acts += [Opt(OptOps.TC, i) for i in range(len(tc_candidates(k, ren.tensor_cores)) if USE_TC else 0)]
  if ren.has_shared:
    acts += [Opt(op, i, a) for op in (OptOps.GROUP, OptOps.GROUPTOP) for i, r in enumerate(reds) for a in (4, 8, 16, 32) if divides(r, a)]
  return acts

def upcast_lanes(k: UOp) -> int:
  return math.prod(range_size(u) or 1 for u in k.toposort() if u.op is Ops.RANGE and u.arg[1].name in ("UPCAST", "UNROLL"))

def beam_search(ast: UOp, ren: Renderer, width: int, timer: Callable[[UOp], float]) -> UOp:
  """The `width` fastest kernels (by `timer`, seconds; inf for a candidate that fails), grown one opt at a time while the
  best gets faster."""
  key = hashlib.sha256(pickle.dumps((ast, ren.device, type(ren).__name__, width))).hexdigest()
  if not IGNORE_BEAM_CACHE and (opts := diskcache_get("beam", key)) is not None:
    for o in opts: ast = apply_opt(ast, o, ren)
    return ast
  beam: list[tuple[UOp, float]] = [(ast, timer(ast))]
  best = beam[0]
  while True:
    candidates: list[UOp] = []
    for k, _ in beam:
      for act in actions(k, ren):
        try: nk = apply_opt(k, act, ren)
        except KernelOptError: continue
        if upcast_lanes(nk) <= ren.max_upcast: candidates.append(nk)
    timed = sorted(((c, timer(c)) for c in candidates), key=lambda x: x[1])[:width]
    if not timed or timed[0][1] >= best[1]: break
    best, beam = timed[0], timed
    if DEBUG >= 2: print(f"BEAM {best[1] * 1e6:8.1f} us  {best[0].arg.applied_opts}")
  applied = best[0].arg.applied_opts if hasattr(best[0].arg, "applied_opts") else ()
  diskcache_put("beam", key, tuple(o for o in applied if o not in (ast.arg.applied_opts if hasattr(ast.arg, "applied_opts") else ())))
  return best[0]
