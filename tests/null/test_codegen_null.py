"""Generated code inspected without running it (the NULL device compiles nothing): loops, vector widths, threads."""
import re
from tg.uop import UOp, Ops, AxisType, KernelInfo, dtypes
from tg.codegen.pipeline import get_program
from tg.codegen.device import Device
from tg.codegen.opt.kernel import Opt, OptOps

def elementwise(n: int, opts=None) -> UOp:
  out, a = UOp.param(0, dtypes.float, (n,)), UOp.param(1, dtypes.float, (n,))
  i = UOp.range(n, 0)
  return out[i].store(a[i] * 2.0).end(i).sink(arg=KernelInfo(name="double", opts_to_apply=opts))

def loops(src: str) -> int: return src.count("for (")

def test_null_renders_c_without_compiling():
  p = get_program(elementwise(64, ()), Device["NULL"].renderer)
  assert loops(p.src) == 1 and "void double(" in p.src
  assert Device["NULL"].compiler.compile(p.src) == b""

def test_upcast_makes_vector_loads_and_one_fewer_loop_trip():
  p = get_program(elementwise(64, (Opt(OptOps.UPCAST, 0, 8),)), Device["NULL"].renderer)
  assert "tg_float32x8" in p.src and re.search(r"\*\(\(tg_float32x8\*\)\(data1\+", p.src), "one 8-wide load"
  assert re.search(r"ridx0 < 8ll", p.src), "64 elements in 8 trips of 8 lanes"
  assert loops(p.src) == 1

def test_full_upcast_has_no_loop():
  p = get_program(elementwise(4, (Opt(OptOps.UPCAST, 0, 0),)), Device["NULL"].renderer)
  assert loops(p.src) == 0 and "tg_float32x4" in p.src

def test_matmul_heuristics_tile_and_thread():
  C, A, B = (UOp.param(i, dtypes.float, (256, 256)) for i in range(3))
  i, j, k = UOp.range(256, 0), UOp.range(256, 1), UOp.range(256, 2, AxisType.REDUCE)
  ast = C[i, j].store((A[i, k] * B[k, j]).reduce(k, arg=Ops.ADD)).end(i, j).sink(arg=KernelInfo(name="mm"))
  p = get_program(ast, Device["NULL"].renderer)
  assert [o.op for o in p.applied_opts] == [OptOps.UPCAST, OptOps.UPCAST, OptOps.SWAP]
  assert loops(p.src) == 3, "two output loops (the tile is in registers) and the reduce loop"
  cols = p.applied_opts[1].arg
  assert f"({256 // cols}ll*(long long)core_id)" in p.src, "the outer loop, over the column tiles (SWAP), is split over threads"
  assert p.estimates_flops >= 2 * 256 ** 3

def test_reduce_unroll_breaks_the_add_chain():
  out, a = UOp.param(0, dtypes.float, (1,)), UOp.param(1, dtypes.float, (256,))
  k = UOp.range(256, 0, AxisType.REDUCE)
  p = get_program(out[0].store(a[k].reduce(k, arg=Ops.ADD)).sink(arg=KernelInfo(name="s", opts_to_apply=(Opt(OptOps.UNROLL, 0, 8),))),
                  Device["NULL"].renderer)
  assert re.search(r"ridx0 < 32ll", p.src) and "tg_float32x8" in p.src
