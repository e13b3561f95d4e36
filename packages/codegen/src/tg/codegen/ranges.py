"""A kernel's axes are its RANGEs: ordered by (axis type, axis id), split into output and reduce axes. Opts name axes by
these positions, and the lowering passes order loops by the same key."""
from __future__ import annotations
import functools
from tg.uop import UOp, Ops, AxisType, graph_rewrite, symbolic

AXIS_ORDER = {t: i for i, t in enumerate((AxisType.GLOBAL, AxisType.THREAD, AxisType.LOCAL, AxisType.LOOP, AxisType.GROUP_REDUCE,
                                          AxisType.REDUCE, AxisType.UPCAST, AxisType.UNROLL))}

def range_key(r: UOp) -> tuple[int, int]: return (AXIS_ORDER[r.arg[1]], r.arg[0])
def all_ranges(ast: UOp) -> list[UOp]: return sorted((u for u in ast.toposort() if u.op is Ops.RANGE), key=range_key)
def output_axes(ast: UOp) -> list[UOp]: return [r for r in all_ranges(ast) if r.arg[1] in (AxisType.GLOBAL, AxisType.LOOP, AxisType.LOCAL)]
def reduce_axes(ast: UOp) -> list[UOp]: return [r for r in all_ranges(ast) if r.arg[1] is AxisType.REDUCE]
def range_size(r: UOp) -> int | None: return r.src[0].arg if r.src[0].op is Ops.CONST else None

def shifted(expr: UOp, r: UOp, n: int) -> UOp:
  """expr at the step of loop r n steps later (through a stand-in: a rewrite of r into r + n would find r again)."""
  at = UOp.variable("tg_step", r.vmin, r.vmax, r.dtype)
  return expr.substitute({r: at}).substitute({at: r + n})

@functools.lru_cache(maxsize=4096)
def stride(expr: UOp, r: UOp) -> int | None:
  """How far expr (an index) moves when r steps by one, if that is a constant."""
  step = graph_rewrite(shifted(expr, r, 1) - expr, symbolic, name="stride")
  return step.arg if step.op is Ops.CONST else None
