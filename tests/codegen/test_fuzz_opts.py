"""Fuzz: random legal opt sequences on random small kernels never change what the kernel computes."""
import numpy as np
from hypothesis import given, settings, strategies as st, HealthCheck
from tg.uop import UOp, Ops, AxisType, KernelInfo, dtypes
from tg.codegen.pipeline import get_program, CompiledRunner
from tg.codegen.device import Device, Buffer
from tg.codegen.opt.kernel import Opt, OptOps, KernelOptError, apply_opt
from tg.codegen.opt.search import actions

SIZES = st.sampled_from([1, 2, 3, 4, 6, 8])

def kernel(kind: str, m: int, n: int, k: int) -> tuple[UOp, list[tuple[int, ...]], callable]:
  """A kernel AST, the shapes of its buffers (output first), and a numpy reference."""
  if kind == "matmul":
    C, A, B = UOp.param(0, dtypes.float, (m, n)), UOp.param(1, dtypes.float, (m, k)), UOp.param(2, dtypes.float, (k, n))
    i, j, r = UOp.range(m, 0, AxisType.GLOBAL), UOp.range(n, 1, AxisType.GLOBAL), UOp.range(k, 2, AxisType.REDUCE)
    ast = C[i, j].store((A[i, r] * B[r, j]).reduce(r, arg=Ops.ADD)).end(i, j)
    return ast.sink(arg=KernelInfo(name="mm")), [(m, n), (m, k), (k, n)], lambda a, b: a @ b
  if kind == "rowmax":
    out, a = UOp.param(0, dtypes.float, (m,)), UOp.param(1, dtypes.float, (m, k))
    i, r = UOp.range(m, 0, AxisType.GLOBAL), UOp.range(k, 1, AxisType.REDUCE)
    ast = out[i].store(a[i, r].reduce(r, arg=Ops.MAX) + a[i, 0]).end(i)
    return ast.sink(arg=KernelInfo(name="rowmax")), [(m,), (m, k)], lambda a: a.max(1) + a[:, 0]
  out, a, b = UOp.param(0, dtypes.float, (m, n)), UOp.param(1, dtypes.float, (m, n)), UOp.param(2, dtypes.float, (n,))
  i, j = UOp.range(m, 0, AxisType.GLOBAL), UOp.range(n, 1, AxisType.GLOBAL)
  ast = out[i, j].store(a[i, j] * b[j] + a[(m - 1 - i), j]).end(i, j)
  return ast.sink(arg=KernelInfo(name="ew")), [(m, n), (m, n), (n,)], lambda a, b: a * b + a[::-1]

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["matmul", "rowmax", "elementwise"]), m=SIZES, n=SIZES, k=SIZES, picks=st.lists(st.integers(0, 10**6), max_size=3))
def test_random_opts_keep_results(kind, m, n, k, picks):
  ast, shapes, ref = kernel(kind, m, n, k)
  ren = Device["CPU"].renderer
  applied: list[Opt] = []
  for p in picks:  # each pick chooses among the opts legal on the kernel so far
    acts = actions(ast, ren)
    if not acts: break
    try: ast = apply_opt(ast, acts[p % len(acts)], ren)
    except KernelOptError: continue
    applied.append(acts[p % len(acts)])
  spec = get_program(ast, ren, opts=())
  rng = np.random.default_rng(m * 100 + n * 10 + k)
  ins = [rng.standard_normal(s).astype(np.float32) for s in shapes[1:]]
  bufs = [Buffer("CPU", int(np.prod(s)), dtypes.float).allocate() for s in shapes]
  for b, x in zip(bufs[1:], ins): b.copyin(memoryview(x).cast("B"))
  CompiledRunner(spec)(bufs, {}, wait=True)
  out = np.empty(shapes[0], np.float32)
  bufs[0].copyout(memoryview(out).cast("B"))
  np.testing.assert_allclose(out, ref(*ins), rtol=1e-5, atol=1e-5, err_msg=f"{kind} {m}x{n}x{k} with {applied}")

def test_the_fuzzer_applies_opts():
  ast, _, _ = kernel("matmul", 4, 8, 6)
  assert {a.op for a in actions(ast, Device["CPU"].renderer)} >= {OptOps.UPCAST, OptOps.UNROLL}

def test_fully_upcast_padded_conv():
  """A padded 1-d conv with every output upcast (27 lanes) and the window unrolled: clang 19's SLP vectorizer
  miscompiled the C of this kernel (one output lane wrong), so the CPU compiler runs with it off."""
  x_, w_, out_ = UOp.param(1, dtypes.float, (9,)), UOp.param(2, dtypes.float, (9,)), UOp.param(0, dtypes.float, (27,))
  co, x, k = UOp.range(3, 0, AxisType.GLOBAL), UOp.range(9, 1, AxisType.GLOBAL), UOp.range(3, 2, AxisType.REDUCE)
  pos = x + k - 1
  inside = (pos >= 0) & (pos < 9)
  val = inside.where(x_.index(pos.valid(inside)), 0.0) * w_[k * 3 + co]
  ast = out_[co * 9 + x].store(val.reduce(k, arg=Ops.ADD)).end(co, x).sink(arg=KernelInfo(name="conv1d"))
  spec = get_program(ast, Device["CPU"].renderer, opts=[Opt(OptOps.UPCAST, 0, 3), Opt(OptOps.UPCAST, 0, 9), Opt(OptOps.UNROLL, 0, 3)])
  rng = np.random.default_rng(0)
  xs, ws = rng.uniform(-2, 2, 9).astype(np.float32), rng.uniform(-2, 2, 9).astype(np.float32)
  bufs = [Buffer("CPU", n, dtypes.float).allocate() for n in (27, 9, 9)]
  for b, a in zip(bufs[1:], (xs, ws)): b.copyin(memoryview(a).cast("B"))
  CompiledRunner(spec)(bufs, {}, wait=True)
  out = np.empty(27, np.float32)
  bufs[0].copyout(memoryview(out).cast("B"))
  xp = np.pad(xs, 1)
  ref = np.array([[sum(xp[i + kk] * ws[kk * 3 + c] for kk in range(3)) for i in range(9)] for c in range(3)], np.float32).reshape(-1)
  np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
