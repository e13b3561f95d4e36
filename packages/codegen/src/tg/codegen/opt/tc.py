"""Tensor cores (the TC opt): a matmul-shaped reduce, sum over k of a[.., m, .., k] * b[.., k, .., n] in a narrow float with a
float32 accumulator, computed 16x16 tile by tile by a wave-wide matrix instruction (renderer.tensor_cores, Ops.WMMA).

The rows m and columns n of each tile and its 16-wide slice of k become the wave's lanes (a LOCAL range of 32) and the
registers each lane holds, in the instruction's layout: the operands are gathered per lane (CONTRACT over the elements of k
it holds), the accumulator is the lane's 8 slots of D (an UNROLL that the store expands), and the loop over k runs over tiles.
This module finds the candidates and builds the tile; opt/kernel.py pads the axes and rewrites the kernel's ranges.
USE_TC=0 keeps the heuristics and BEAM from choosing TC (bench/amd.py compares); an explicit TC opt still applies."""
from __future__ import annotations
from dataclasses import dataclass
from tg.uop import UOp, Ops, AxisType, ContextVar
from tg.codegen.renderer import TensorCore
from tg.codegen.ranges import output_axes, range_size

USE_TC = ContextVar("USE_TC", 1)

@dataclass(frozen=True)
class TCMatch:
  """One way to put a kernel's reduce on a tensor core: `a` gives the rows m, `b` the columns n, both run along k."""
  tc: TensorCore
  red: UOp
  a: UOp
  b: UOp
  m: UOp
  n: UOp
  k: UOp

def _narrow(x: UOp, tc: TensorCore) -> UOp | None:
  """x as the instruction's input dtype: itself, or what a cast to float32 widened."""
  if x.op is Ops.CAST and x.src[0].dtype == tc.dtype_in: x = x.src[0]
  return x if x.dtype == tc.dtype_in else None

def matmul_operands(red: UOp, tc: TensorCore) -> tuple[UOp, UOp] | None:
  """(x, y) when `red` is an ADD reduce in tc's output dtype of x * y (the product maybe in float32, maybe widened after)."""
  if red.arg is not Ops.ADD or red.dtype != tc.dtype_out: return None
  x = red.src[0].src[0] if red.src[0].op is Ops.CAST else red.src[0]
  if x.op is not Ops.MUL: return None
  a, b = _narrow(x.src[0], tc), _narrow(x.src[1], tc)
  return None if a is None or b is None else (a, b)

def tc_candidates(ast: UOp, tcs: tuple[TensorCore, ...]) -> list[TCMatch]:
  """Every (tensor core, m, n, k) that fits the kernel's one reduce, innermost axes first. k must be a whole number of tiles;
  m and n are padded by the caller."""
  reds = [u for u in ast.toposort() if u.op is Ops.REDUCE] if tcs else []
  if len(reds) != 1: return []
  red, outs = reds[0], output_axes(ast)[::-1]
  out: list[TCMatch] = []
  for tc in tcs:
    if (ops := matmul_operands(red, tc)) is None: continue
    for a, b in (ops, ops[::-1]):
      da, db = set(a.toposort()), set(b.toposort())
      ks = [r for r in red.src[1:] if r in da and r in db and (range_size(r) or 1) % tc.dims[2] == 0]
      ms = [r for r in outs if r in da and r not in db and range_size(r) is not None]
      ns = [r for r in outs if r in db and r not in da and range_size(r) is not None]
      out += [TCMatch(tc, red, a, b, m, n, k) for k in ks for n in ns for m in ms]
  return out

def wmma_tile(c: TCMatch, first_id: int) -> tuple[UOp, dict[UOp, tuple[UOp, tuple[UOp, ...]]]]:
  """The reduce as WMMA tiles (an UNROLL over the lane's slots of D) and, for the kernel's other uses of m and n, what they
  become and the ranges that replace them (m and n must be whole tiles). New ranges are numbered from first_id."""
  tc, (tm, tn, tk) = c.tc, c.tc.dims
  lane = UOp.range(tc.threads, first_id, AxisType.LOCAL)
  slot = UOp.range(tc.slots, first_id + 1, AxisType.UPCAST)
  elem = UOp.range(tc.elements, first_id + 2, AxisType.UNROLL)
  mo, no = (UOp.range(range_size(r) // t, r.arg[0], r.arg[1]) for r, t in ((c.m, tm), (c.n, tn)))  # type: ignore[operator]
  ko = UOp.range(range_size(c.k) // tk, c.k.arg[0], AxisType.REDUCE)  # type: ignore[operator]
  half, within = lane // (tc.threads // 2), lane % (tc.threads // 2)
  k = ko * tk + elem + (half * tc.k_half if tc.k_half else 0)
  def operand(x: UOp, r: UOp, idx: UOp) -> UOp:
    return UOp(Ops.CONTRACT, tc.dtype_in.vec(tc.elements), (x.substitute({r: idx, c.k: k}),), ((elem.arg[0], tc.elements),))
  acc = tc.dtype_out.vec(tc.slots)
  w = UOp(Ops.WMMA, acc, (operand(c.a, c.m, mo * tm + within), operand(c.b, c.n, no * tn + within), UOp.const(acc, 0)), tc)
  red = UOp(Ops.REDUCE, acc, (w, ko, *(r for r in c.red.src[1:] if r is not c.k)), Ops.ADD)
  row = slot * tc.row_stride + half * tc.half_row
  return UOp(Ops.UNROLL, tc.dtype_out, (red,), ((slot.arg[0], tc.slots),)), {c.m: (mo * tm + row, (mo, lane, slot)), c.n: (no * tn + within, (no,))}
