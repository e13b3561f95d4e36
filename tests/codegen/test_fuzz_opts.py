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
