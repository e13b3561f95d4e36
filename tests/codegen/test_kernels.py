"""Hand-written kernel ASTs (tinygrad's custom-kernel style) lowered and run on CPU and PYTHON, checked against numpy."""
import re, shutil, subprocess
import numpy as np
import pytest
from tg.uop import UOp, Ops, AxisType, KernelInfo, AddrSpace, dtypes, Context
from tg.codegen.pipeline import get_program, CompiledRunner
from tg.codegen.device import Device, Buffer
from tg.codegen.opt.kernel import Opt, OptOps, KernelOptError

DEVICES = ["CPU", "PYTHON"]
rng = np.random.default_rng(0)

def run(ast: UOp, device: str, arrays: list[np.ndarray], var_vals: dict | None = None, opts=None) -> list[np.ndarray]:
  """Run a kernel whose PARAM i is arrays[i] (inputs and outputs alike); returns the arrays after the run."""
  spec = get_program(ast, Device[device].renderer, opts=opts)
  bufs = []
  for a in arrays:
    b = Buffer(device, a.size, np_dtype(a)).allocate()
    b.copyin(memoryview(np.ascontiguousarray(a)).cast("B"))
    bufs.append(b)
  CompiledRunner(spec)(bufs, var_vals or {}, wait=True)
  outs = []
  for a, b in zip(arrays, bufs):
    o = np.empty_like(a)
    b.copyout(memoryview(o).cast("B"))
    outs.append(o)
  return outs

def np_dtype(a: np.ndarray): return next(d for d in dtypes.fields().values() if d.fmt and np.dtype(d.fmt) == a.dtype)

def sink(*x: UOp, name: str = "k", opts=()) -> UOp: return UOp.sink(*x, arg=KernelInfo(name=name, opts_to_apply=opts))

# ***** the kernels of the issue *****

def gemm_ast(M: int, N: int, K: int, opts=()) -> UOp:
  C, A, B = UOp.param(0, dtypes.float, (M, N)), UOp.param(1, dtypes.float, (M, K)), UOp.param(2, dtypes.float, (K, N))
  i, j = UOp.range(C.shape[0], 0), UOp.range(C.shape[1], 1)
  k = UOp.range(A.shape[1], 2, axis_type=AxisType.REDUCE)
  C = C[i, j].set(0.0)
  C = C[i, j].set(C.after(k)[i, j] + A[i, k] * B[k, j], end=k)
  return C.end(i, j).sink(arg=KernelInfo(name="gemm", opts_to_apply=opts))

@pytest.mark.parametrize("device", DEVICES)
def test_gemm_as_written_in_the_issue(device):
  a, b = rng.random((5, 7), np.float32), rng.random((7, 3), np.float32)
  c, _, _ = run(gemm_ast(5, 3, 7), device, [np.zeros((5, 3), np.float32), a, b])
  np.testing.assert_allclose(c, a @ b, rtol=1e-5)

@pytest.mark.parametrize("device", DEVICES)
def test_arange_and_eye(device):
  out = UOp.param(0, dtypes.int32, (10,))
  i = UOp.range(10, 0)
  (o,) = run(sink(out[i].store((i * 3 + 1).cast(dtypes.int32)).end(i)), device, [np.zeros(10, np.int32)])
  np.testing.assert_array_equal(o, np.arange(10) * 3 + 1)
  eye = UOp.param(0, dtypes.float, (4, 4))
  r, c = UOp.range(4, 0), UOp.range(4, 1)
  (e,) = run(sink(eye[r, c].store(r.eq(c).where(1.0, 0.0)).end(r, c)), device, [np.zeros((4, 4), np.float32)])
  np.testing.assert_array_equal(e, np.eye(4, dtype=np.float32))

@pytest.mark.parametrize("device", DEVICES)
def test_elementwise_two_outputs_in_a_group(device):
  o1, o2, a, b = (UOp.param(s, dtypes.float, (16,)) for s in range(4))
  i = UOp.range(16, 0)
  ast = sink(UOp.group(o1[i].store(a[i] + b[i]), o2[i].store(a[i] * b[i])).end(i))
  x, y = rng.random(16, np.float32), rng.random(16, np.float32)
  r1, r2, _, _ = run(ast, device, [np.zeros(16, np.float32), np.zeros(16, np.float32), x, y])
  np.testing.assert_array_equal(r1, x + y)
  np.testing.assert_array_equal(r2, x * y)

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("opts", [(), (Opt(OptOps.UNROLL, 0, 4),), (Opt(OptOps.UNROLL, 0, 0),)])
def test_sum(device, opts):
  out, a = UOp.param(0, dtypes.float, (1,)), UOp.param(1, dtypes.float, (64,))
  k = UOp.range(64, 0, AxisType.REDUCE)
  ast = sink(out[0].store(a[k].reduce(k, arg=Ops.ADD)), opts=opts)
  x = rng.random(64, np.float32)
  o, _ = run(ast, device, [np.zeros(1, np.float32), x])
  np.testing.assert_allclose(o[0], x.sum(dtype=np.float64), rtol=1e-6)

@pytest.mark.parametrize("device", DEVICES)
def test_per_row_sum_into_a_register(device):
  out, a = UOp.param(0, dtypes.float, (6,)), UOp.param(1, dtypes.float, (6, 9))
  acc = UOp.placeholder((1,), dtypes.float, 0, AddrSpace.REG)
  i, k = UOp.range(6, 0), UOp.range(9, 1, AxisType.REDUCE)
  acc = acc.after(i)[0].set(0.0)  # after(i): the register is reset in every row's iteration, not once before the loop
  acc = acc[0].set(acc.after(k)[0] + a[i, k], end=k)
  ast = sink(out[i].store(acc[0]).end(i))
  x = rng.random((6, 9), np.float32)
  o, _ = run(ast, device, [np.zeros(6, np.float32), x])
  np.testing.assert_allclose(o, x.sum(axis=1), rtol=1e-6)

@pytest.mark.parametrize("device", DEVICES)
def test_upcast_range_with_contract_and_gep(device):
  # out[i] = a[4i+3] - a[4i] : the 4 elements of a row become one vector (CONTRACT), its lanes picked by GEP
  out, a = UOp.param(0, dtypes.float, (8,)), UOp.param(1, dtypes.float, (32,))
  i, u = UOp.range(8, 0), UOp.range(4, 1, AxisType.UPCAST)
  vec = a[i * 4 + u].contract(u)
  assert vec.dtype == dtypes.float.vec(4)
  ast = sink(out[i].store(vec.gep(3) - vec.gep(0)).end(i))
  x = rng.random(32, np.float32)
  o, _ = run(ast, device, [np.zeros(8, np.float32), x])
  np.testing.assert_array_equal(o, x[3::4] - x[0::4])

@pytest.mark.parametrize("device", DEVICES)
def test_two_reduces_over_one_range(device):
  out, a = UOp.param(0, dtypes.float, (5, 2)), UOp.param(1, dtypes.float, (5, 12))
  i, k = UOp.range(5, 0), UOp.range(12, 1, AxisType.REDUCE)
  s, m = a[i, k].reduce(k, arg=Ops.ADD), a[i, k].reduce(k, arg=Ops.MAX)
  ast = sink(UOp.group(out[i, 0].store(s), out[i, 1].store(m)).end(i))
  spec = get_program(ast, Device["PYTHON"].renderer)
  assert sum(u.op is Ops.RANGE for u in spec.uops) == 2, "both reduces share one loop over k"
  x = rng.standard_normal((5, 12)).astype(np.float32)
  o, _ = run(ast, device, [np.zeros((5, 2), np.float32), x])
  np.testing.assert_allclose(o[:, 0], x.sum(1), rtol=1e-5)
  np.testing.assert_array_equal(o[:, 1], x.max(1))

@pytest.mark.parametrize("device", DEVICES)
def test_gated_store_and_load(device):
  # out[i] = a[i-2] for 2 <= i < 10, untouched elsewhere; the load is gated too (a has 8 elements)
  out, a = UOp.param(0, dtypes.float, (12,)), UOp.param(1, dtypes.float, (8,))
  i = UOp.range(12, 0)
  ok = (i > 1) & (i < 10)
  ast = sink(out[i.valid(ok)].store(a[(i - 2).valid(ok)]).end(i))
  x = rng.random(8, np.float32)
  o, _ = run(ast, device, [np.full(12, -1, np.float32), x])
  np.testing.assert_array_equal(o, np.concatenate([[-1, -1], x, [-1, -1]]).astype(np.float32))

@pytest.mark.parametrize("device", DEVICES)
def test_index_math_with_div_mod_and_padding(device):
  # a flat index split by div/mod, with a zero border: out (6, 5) is a (4, 3) padded by 1
  out, a = UOp.param(0, dtypes.float, (30,)), UOp.param(1, dtypes.float, (12,))
  g = UOp.range(30, 0)
  r, c = g // 5 - 1, g % 5 - 1           # row and column in a, from -1 to one past the end
  inside = (r >= 0) & (r < 4) & (c >= 0) & (c < 3)
  val = a[(r * 3 + c).valid(inside)]
  ast = sink(out[g].store(val).end(g))
  x = rng.random(12, np.float32)
  o, _ = run(ast, device, [np.zeros(30, np.float32), x])
  np.testing.assert_array_equal(o.reshape(6, 5), np.pad(x.reshape(4, 3), 1))

@pytest.mark.parametrize("device", DEVICES)
def test_variables(device):
  n = UOp.variable("n", 1, 16)
  out, a = UOp.param(0, dtypes.float, (16,)), UOp.param(1, dtypes.float, (16,))
  i = UOp.range(n, 0)
  ast = sink(out[i].store(a[i] * 2.0).end(i))
  x = rng.random(16, np.float32)
  o, _ = run(ast, device, [np.zeros(16, np.float32), x], {"n": 5})
  np.testing.assert_array_equal(o, np.concatenate([x[:5] * 2, np.zeros(11, np.float32)]))

# ***** opts *****

def matmul_ast(M: int, N: int, K: int, opts=None) -> UOp:
  C, A, B = UOp.param(0, dtypes.float, (M, N)), UOp.param(1, dtypes.float, (M, K)), UOp.param(2, dtypes.float, (K, N))
  i, j, k = UOp.range(M, 0), UOp.range(N, 1), UOp.range(K, 2, AxisType.REDUCE)
  return C[i, j].store((A[i, k] * B[k, j]).reduce(k, arg=Ops.ADD)).end(i, j).sink(arg=KernelInfo(name="matmul", opts_to_apply=opts))

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("opts", [None, (), (Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.UPCAST, 1, 2), Opt(OptOps.UNROLL, 0, 2)),
                                  (Opt(OptOps.SWAP, 0, 1),), (Opt(OptOps.PADTO, 1, 8), Opt(OptOps.UPCAST, 1, 8))])
def test_matmul_with_opts(device, opts):
  a, b = rng.random((8, 12), np.float32), rng.random((12, 6), np.float32)
  c, _, _ = run(matmul_ast(8, 6, 12, opts), device, [np.zeros((8, 6), np.float32), a, b])
  np.testing.assert_allclose(c, a @ b, rtol=1e-5)

def wgrad_ast(nb: int, nt: int, m: int, n: int, opts=()) -> UOp:
  """A linear layer's weight gradient x^T @ dy, summed over batch and time (two reduce axes)."""
  C, A, B = UOp.param(0, dtypes.float, (m, n)), UOp.param(1, dtypes.float, (nb, nt, m)), UOp.param(2, dtypes.float, (nb, nt, n))
  i, j = UOp.range(m, 0), UOp.range(n, 1)
  b, t = UOp.range(nb, 2, axis_type=AxisType.REDUCE), UOp.range(nt, 3, axis_type=AxisType.REDUCE)
  return C[i, j].store((A[b, t, i] * B[b, t, j]).reduce(b, t, arg=Ops.ADD)).end(i, j).sink(arg=KernelInfo(name="wgrad", opts_to_apply=opts))

@pytest.mark.parametrize("device", DEVICES)
def test_upcast_lanes_nested_in_an_address_load_as_vectors(device):
  """The upcast lanes of dy[b, t, j*16 + c] sit inside the sum (row + (j*16 + c)): they are still one vector load (they
  were 16 scalar loads and inserts in the C source; clang 19 -O2 merges them back here, same CPU time, so this is about
  the code we emit, not a measured speedup)."""
  ast = wgrad_ast(2, 8, 16, 32, (Opt(OptOps.UPCAST, 0, 8), Opt(OptOps.UPCAST, 1, 16)))
  uops = get_program(ast, Device[device].renderer).uops
  loads = [u for u in uops if u.op is Ops.LOAD and (b := next((x for x in u.toposort() if x.op is Ops.PARAM), None)) is not None and b.arg in (1, 2)]
  assert loads and all(u.dtype.count in (8, 16) for u in loads), [u.dtype for u in loads]
  a, b = rng.random((2, 8, 16), np.float32), rng.random((2, 8, 32), np.float32)
  c, _, _ = run(ast, device, [np.zeros((16, 32), np.float32), a, b])
  np.testing.assert_allclose(c, np.einsum("bti,btj->ij", a, b), rtol=1e-5)

def test_bad_opts_raise():
  with pytest.raises(KernelOptError, match="split"): get_program(matmul_ast(8, 6, 12, (Opt(OptOps.UPCAST, 0, 3),)), Device["CPU"].renderer)
  with pytest.raises(KernelOptError, match="axis out of range"):
    get_program(matmul_ast(8, 6, 12, (Opt(OptOps.UNROLL, 3, 2),)), Device["CPU"].renderer)
  with pytest.raises(KernelOptError, match="no local dims"): get_program(matmul_ast(8, 6, 12, (Opt(OptOps.LOCAL, 0, 2),)), Device["CPU"].renderer)

def test_local_dims_on_a_workgroup_device():
  # PYTHON runs workgroups: LOCAL splits a global axis into workgroup threads
  ast = matmul_ast(8, 16, 4, (Opt(OptOps.LOCAL, 1, 4), Opt(OptOps.UPCAST, 0, 2)))
  from tg.codegen.opt.kernel import globalize
  spec = get_program(globalize(ast), Device["PYTHON"].renderer)
  assert spec.local_size == (4, 1, 1) and spec.global_size[0] == 4
  a, b = rng.random((8, 4), np.float32), rng.random((4, 16), np.float32)
  c, _, _ = run(globalize(ast), "PYTHON", [np.zeros((8, 16), np.float32), a, b])
  np.testing.assert_allclose(c, a @ b, rtol=1e-5)

def test_spec_checks_both_ends():
  with Context(SPEC=1):
    a, b = rng.random((4, 3), np.float32), rng.random((3, 5), np.float32)
    c, _, _ = run(gemm_ast(4, 5, 3), "CPU", [np.zeros((4, 5), np.float32), a, b])
  np.testing.assert_allclose(c, a @ b, rtol=1e-5)

@pytest.mark.parametrize("op", [OptOps.GROUP, OptOps.GROUPTOP])
def test_grouped_reduce_through_shared_memory(op):
  # the reduce is shared by 8 threads of a workgroup: partial sums meet in DEFINE_LOCAL across a BARRIER
  out, a = UOp.param(0, dtypes.float, (4,)), UOp.param(1, dtypes.float, (4, 32))
  i, k = UOp.range(4, 0, AxisType.GLOBAL), UOp.range(32, 1, AxisType.REDUCE)
  ast = out[i].store(a[i, k].reduce(k, arg=Ops.MAX) + a[i, k].reduce(k, arg=Ops.ADD)).end(i).sink(arg=KernelInfo(name="g"))
  spec = get_program(ast, Device["PYTHON"].renderer, opts=(Opt(op, 0, 8),))
  assert spec.local_size == (8, 1, 1) and any(u.op is Ops.BARRIER for u in spec.uops)
  x = rng.standard_normal((4, 32)).astype(np.float32)
  o, _ = run(ast, "PYTHON", [np.zeros(4, np.float32), x], opts=(Opt(op, 0, 8),))
  np.testing.assert_allclose(o, x.max(1) + x.sum(1), rtol=1e-5, atol=1e-5)

def test_grouped_reduce_needs_shared_memory():
  out, a = UOp.param(0, dtypes.float, (1,)), UOp.param(1, dtypes.float, (32,))
  k = UOp.range(32, 0, AxisType.REDUCE)
  with pytest.raises(KernelOptError, match="shared memory"):
    get_program(sink(out[0].store(a[k].reduce(k, arg=Ops.ADD)), opts=(Opt(OptOps.GROUP, 0, 8),)), Device["CPU"].renderer)

@pytest.mark.parametrize("device", DEVICES)
def test_reduce_that_an_output_loop_does_not_use(device):
  # out[r0] = sum(a): the reduce runs once, before the output loop, not inside it
  out, a = UOp.param(0, dtypes.float, (2,)), UOp.param(1, dtypes.float, (16,))
  r0, r1 = UOp.range(2, 0), UOp.range(16, 1, AxisType.REDUCE)
  o, _ = run(out[r0].store(a[r1].reduce(r1, arg=Ops.ADD)).end(r0).sink(arg=KernelInfo(name="r")), device,
             [np.zeros(2, np.float32), np.arange(16, dtype=np.float32)])
  np.testing.assert_array_equal(o, [120, 120])

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("opts", [None, ()])
def test_attention_without_softmax_nests_a_reduce_in_a_reduce(device, opts):
  # O[i,d] = sum_j (sum_e Q[i,e] K[j,e]) V[j,d]: the e loop runs inside the j loop whatever the axis ids say
  n, dd = 4, 3
  O, Q, K, V = (UOp.param(s, dtypes.float, (n, dd)) for s in range(4))
  i, d, j, e = UOp.range(n, 0), UOp.range(dd, 1), UOp.range(n, 3, AxisType.REDUCE), UOp.range(dd, 2, AxisType.REDUCE)
  score = (Q[i, e] * K[j, e]).reduce(e, arg=Ops.ADD)
  ast = O[i, d].store((score * V[j, d]).reduce(j, arg=Ops.ADD)).end(i, d).sink(arg=KernelInfo(name="attn"))
  q, k, v = (rng.random((n, dd), np.float32) for _ in range(3))
  o, *_ = run(ast, device, [np.zeros((n, dd), np.float32), q, k, v], opts=opts)
  np.testing.assert_allclose(o, (q @ k.T) @ v, rtol=1e-5)

@pytest.mark.parametrize("device", DEVICES)
def test_reduce_that_uses_a_middle_loop_only(device):
  # out[i,j,k] = sum_r a[r,j]: the accumulator is set in the j loop, so the r loop must run there too, not inside k
  # (CPU ran it inside k with the accumulator set outside k: out[i,j,k] came out (k+1) times the sum)
  out, a = UOp.param(0, dtypes.float, (3, 3, 5)), UOp.param(1, dtypes.float, (4, 3))
  i, j, k, r = UOp.range(3, 0), UOp.range(3, 1), UOp.range(5, 2), UOp.range(4, 3, AxisType.REDUCE)
  ast = out[i, j, k].store(a[r, j].reduce(r, arg=Ops.ADD)).end(i, j, k).sink(arg=KernelInfo(name="r_mid"))
  x = rng.random((4, 3), np.float32)
  o, _ = run(ast, device, [np.zeros((3, 3, 5), np.float32), x])
  np.testing.assert_allclose(o, np.broadcast_to(x.sum(0)[None, :, None], (3, 3, 5)), rtol=1e-6)

@pytest.mark.parametrize("device", DEVICES)
def test_own_register_beside_a_reduce_in_a_loop(device):
  """out[i] = sum over j of (a @ b)[i, j]: a register of the kernel's own (slot 0, 2 floats) sums, over the loop j, a REDUCE over e whose
  accumulator the lowering adds: the two must not share a slot."""
  out, a, b = UOp.param(0, dtypes.float, (5,)), UOp.param(1, dtypes.float, (5, 4)), UOp.param(2, dtypes.float, (4, 6))
  i, j, e = UOp.range(5, 0), UOp.range(6, 1, AxisType.REDUCE), UOp.range(4, 2, AxisType.REDUCE)
  acc = UOp.placeholder((2,), dtypes.float, 0, AddrSpace.REG)
  acc = acc.after(i)[1].set(0.0)
  acc = acc[1].set(acc.after(j)[1] + (a[i, e] * b[e, j]).reduce(e, arg=Ops.ADD), end=j)
  x, y = rng.random((5, 4), np.float32), rng.random((4, 6), np.float32)
  o, _, _ = run(sink(out[i].store(acc[1]).end(i)), device, [np.zeros(5, np.float32), x, y])
  np.testing.assert_allclose(o, (x @ y).sum(axis=1), rtol=1e-5)

# ***** ACCUM: independent accumulators for a reduce, and the heuristics' streaming reduces *****

@pytest.mark.parametrize("device", DEVICES)
def test_accum_keeps_lanes_apart_until_the_loop_ends(device):
  """A row sum and a row max side by side (two REDUCEs over one axis) with ACCUM 16 on the 64-long rows: numpy's values,
  lane j accumulates elements j, j+16, ... in a vector register fed by whole-vector loads, folded once after the loop."""
  out, a = UOp.param(0, dtypes.float, (3,)), UOp.param(1, dtypes.float, (3, 64))
  i, k = UOp.range(3, 0), UOp.range(64, 1, AxisType.REDUCE)
  ast = sink(out[i].store(a[i, k].reduce(k, arg=Ops.ADD) * 2.0 + a[i, k].reduce(k, arg=Ops.MAX)).end(i), opts=(Opt(OptOps.ACCUM, 0, 16),))
  x = rng.standard_normal((3, 64)).astype(np.float32)
  o, _ = run(ast, device, [np.zeros(3, np.float32), x])
  np.testing.assert_allclose(o, x.sum(1) * 2 + x.max(1), rtol=1e-5, atol=1e-5)
  src = get_program(ast, Device["CPU"].renderer).src
  assert "acc0[16]" in src and "*((tg_float32x16*)(data1+" in src, "a 16-lane accumulator fed by vector loads"
  assert src.count("for (") == 2, "the lanes are not a loop"

@pytest.mark.parametrize("device", DEVICES)
def test_accum_folds_its_lanes_as_a_tree_of_vectors(device):
  """ACCUM 128 on rows of 1024: lane j sums elements j, j+128, ... in order, then the lanes fold by halves (lane j with
  j+64, then j+32, ...: the order written out in numpy below, bit for bit), as whole vectors in the C source (no lane by
  lane chain after the loop). The max of the same rows propagates a NaN from any lane, and is numpy's elsewhere."""
  out, mx, a = UOp.param(0, dtypes.float, (4,)), UOp.param(1, dtypes.float, (4,)), UOp.param(2, dtypes.float, (4, 1024))
  i, k = UOp.range(4, 0), UOp.range(1024, 1, AxisType.REDUCE)
  ast = sink(UOp.group(out[i].store(a[i, k].reduce(k, arg=Ops.ADD)), mx[i].store(a[i, k].reduce(k, arg=Ops.MAX))).end(i),
             opts=(Opt(OptOps.ACCUM, 0, 128),))
  x = rng.standard_normal((4, 1024)).astype(np.float32)
  x[1, 5], x[2, 127], x[3, 1000] = np.nan, np.nan, np.nan  # NaNs in different lanes (5, 127, 1000 % 128 = 104)
  s, m, _ = run(ast, device, [np.zeros(4, np.float32), np.zeros(4, np.float32), x])
  lanes = np.zeros((4, 128), np.float32)
  for step in range(8): lanes = lanes + x[:, step * 128:(step + 1) * 128]
  while lanes.shape[1] > 1: lanes = lanes[:, :lanes.shape[1] // 2] + lanes[:, lanes.shape[1] // 2:]
  np.testing.assert_array_equal(s, lanes[:, 0])
  np.testing.assert_array_equal(m, [x[0].max(), np.nan, np.nan, np.nan])
  src = get_program(ast, Device["CPU"].renderer).src
  assert re.search(r"tg_float32x16 \w+ = \(\(tg_float32x16\)\(\(\(tg_int32x16\)\(\(\(\w+>=", src), "the max folds whole vectors"
  assert len(re.findall(r"= \w+\[\d+\];", src)) < 128, "no lane-by-lane fold of the 128 lanes (the halves of the last vector are taken lane by lane)"

def test_accum_rejects_what_it_cannot_split():
  out, a = UOp.param(0, dtypes.float, (1,)), UOp.param(1, dtypes.float, (24,))
  k = UOp.range(24, 0, AxisType.REDUCE)
  for amt in (24, 5):
    with pytest.raises(KernelOptError):
      get_program(sink(out[0].store(a[k].reduce(k, arg=Ops.ADD)), opts=(Opt(OptOps.ACCUM, 0, amt),)), Device["CPU"].renderer)

@pytest.mark.parametrize("shape,axis,op,registers,rows", [((2, 4096), 1, OptOps.ACCUM, 1, False), ((256, 512), 0, OptOps.UPCAST, 1, True),
                                                          ((1, 8192), 1, OptOps.ACCUM, 1, False), ((100, 512), 0, OptOps.UPCAST, 2, False)])
def test_heuristics_stream_reduces_along_contiguous_memory(shape, axis, op, registers, rows):
  """Row sums get STREAM_REGISTERS vector registers of accumulator lanes along the row, column sums as many output lanes
  along the row and STREAM_ROWS rows a step, or twice the lanes when the rows don't divide (module docstring of
  tg.codegen.opt.heuristic), sized by the host's vector width (AVX2: 64 float lanes, AVX-512: 128); the sums are numpy's."""
  from tg.codegen.opt.kernel import globalize
  from tg.codegen.opt.heuristic import STREAM_REGISTERS, STREAM_ROWS, float_lanes
  out, a = UOp.param(0, dtypes.float, (shape[1 - axis],)), UOp.param(1, dtypes.float, shape)
  o, r = UOp.range(shape[1 - axis], 0), UOp.range(shape[axis], 1, AxisType.REDUCE)
  ast = globalize(out[o].store((a[o, r] if axis == 1 else a[r, o]).reduce(r, arg=Ops.ADD)).end(o).sink(arg=KernelInfo(name="s")))
  ren = Device["CPU"].renderer
  spec = get_program(ast, ren)
  assert spec.applied_opts[:1] == (Opt(op, 0, registers * STREAM_REGISTERS * float_lanes(ren)),)
  assert (Opt(OptOps.UNROLL, 0, STREAM_ROWS) in spec.applied_opts) == rows
  x = rng.standard_normal(shape).astype(np.float32)
  got, _ = run(ast, "CPU", [np.zeros(shape[1 - axis], np.float32), x])
  np.testing.assert_allclose(got, x.sum(axis), rtol=1e-4, atol=1e-3)

def test_short_rows_take_a_vector_of_accumulators():
  """Rows of 256 (a LayerNorm's over d_model 256): 16 lanes of partial sums, 16 steps each (an UNROLL by 8 folded every 8
  values across the lanes, serially: 2-4x slower); numpy's sums."""
  from tg.codegen.opt.kernel import globalize
  out, a = UOp.param(0, dtypes.float, (64,)), UOp.param(1, dtypes.float, (64, 256))
  o, r = UOp.range(64, 0), UOp.range(256, 1, AxisType.REDUCE)
  ast = globalize(out[o].store(a[o, r].reduce(r, arg=Ops.ADD)).end(o).sink(arg=KernelInfo(name="s")))
  assert get_program(ast, Device["CPU"].renderer).applied_opts == (Opt(OptOps.ACCUM, 0, 16),)
  x = rng.standard_normal((64, 256)).astype(np.float32)
  got, _ = run(ast, "CPU", [np.zeros(64, np.float32), x])
  np.testing.assert_allclose(got, x.sum(1), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("panels", [True, False])
def test_panel_pack_reads_rows_in_order(panels):
  """Packing B (256 x 1024) into 32-wide panels walks the rows outside the panels (SWAP): each row is read whole, in
  order, where the panel-major loop read 128 bytes a row, a page apart. A copy in its own order keeps its loops."""
  from tg.codegen.opt.kernel import globalize
  out, a = UOp.param(0, dtypes.float, (32 * 256 * 32,)), UOp.param(1, dtypes.float, (256 * 1024,))
  p, k, l = UOp.range(32, 0), UOp.range(256, 1), UOp.range(32, 2)
  src = a[k * 1024 + p * 32 + l] if panels else a[(p * 256 + k) * 32 + l]
  ast = globalize(out[(p * 256 + k) * 32 + l].store(src).end(p, k, l).sink(arg=KernelInfo(name="pack")))
  spec = get_program(ast, Device["CPU"].renderer)
  assert (Opt(OptOps.SWAP, 0, 1) in spec.applied_opts) == panels
  x = rng.standard_normal(256 * 1024).astype(np.float32)
  got, _ = run(ast, "CPU", [np.zeros(32 * 256 * 32, np.float32), x])
  want = x.reshape(256, 32, 32).transpose(1, 0, 2) if panels else x.reshape(32, 256, 32)
  np.testing.assert_array_equal(got, want.reshape(-1))

# ***** vector compares, max, selects and casts in C (GCC/clang vector extensions) *****

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64])
def test_vector_compare_max_where_and_cast(device, dt):
  """16 lanes at once: max (NaN propagates, of equal values the first wins), compares and selects on NaN, infinities and
  signed zeros, casts float -> int32 and int32 -> float; the same values as numpy and as the hand-written rule. The C source
  computes them as whole vectors (no lane is taken out of a vector)."""
  n, f = 64, np.float32 if dt == dtypes.float32 else np.float64
  o1, o2, o3, a, b, c = (UOp.param(0, dt, (n,)), UOp.param(1, dt, (n,)), UOp.param(2, dtypes.int32, (n,)), UOp.param(3, dt, (n,)),
                         UOp.param(4, dt, (n,)), UOp.param(5, dtypes.int32, (n,)))
  i = UOp.range(n, 0)
  x, y = a[i], b[i]
  picked = (x < y).where(y, x.ne(y).where(x - y, x.eq(y).where(-x, y)))
  ast = sink(UOp.group(o1[i].store(x.maximum(y)), o2[i].store(picked + c[i].cast(dt)), o3[i].store((x * 100.0).cast(dtypes.int32)))
             .end(i), opts=(Opt(OptOps.UPCAST, 0, 16),))
  special = np.array([np.nan, 1.0, -np.inf, np.inf, 0.0, -0.0, 2.5, np.nan], f)
  xa = np.concatenate([special, np.roll(special, 3), rng.standard_normal(n - 16).astype(f)])
  ya = np.concatenate([np.roll(special, 1), special, rng.standard_normal(n - 16).astype(f)])
  ya[20:24] = xa[20:24]
  ca = rng.integers(-1000, 1000, n).astype(np.int32)
  r1, r2, r3, *_ = run(ast, device, [np.zeros(n, f), np.zeros(n, f), np.zeros(n, np.int32), xa, ya, ca])
  want_max = np.where((xa >= ya) | np.isnan(xa), xa, ya)
  np.testing.assert_array_equal(r1, want_max)
  assert np.array_equal(np.signbit(r1), np.signbit(want_max)), "of +0 and -0 the first wins"
  np.testing.assert_array_equal(r1[~(np.isnan(xa) | np.isnan(ya))], np.maximum(xa, ya)[~(np.isnan(xa) | np.isnan(ya))])
  want = np.where(xa < ya, ya, np.where(xa != ya, xa - ya, np.where(xa == ya, -xa, ya))) + ca.astype(f)
  np.testing.assert_array_equal(r2, want)
  fin = np.isfinite(xa)
  np.testing.assert_array_equal(r3[fin], (xa[fin] * f(100)).astype(np.int32))  # C truncates, as numpy
  if device == "CPU":
    src = get_program(ast, Device["CPU"].renderer).src
    assert "tg_boolx16" in src and "__builtin_convertvector" in src and not re.search(r"= v\d+\[\d+\];", src), src

@pytest.mark.parametrize("device", DEVICES)
def test_vector_shifts_unsigned_casts_and_threefry(device):
  """16 lanes of what Tensor.rand computes: THREEFRY on uint64 (Random123's known answers in the first lanes), its
  halves cast to uint32, shifts, and uint32 -> float32 / uint64 casts; numpy's values. The C source keeps the lanes
  whole (one lane at a time, a 1M-element rand took 7.7 ms; vectors 1.2)."""
  n, u32, u64 = 64, dtypes.uint32, dtypes.uint64
  o1, o2, o3, a, k = (UOp.param(0, u64, (n,)), UOp.param(1, u32, (n,)), UOp.param(2, dtypes.float32, (n,)), UOp.param(3, u64, (n,)),
                      UOp.param(4, u64, (n,)))
  i = UOp.range(n, 0)
  hi = (a[i] >> 32).cast(u32)
  rot = (hi << 13) | (hi >> 19)
  ast = sink(UOp.group(o1[i].store(a[i].alu(Ops.THREEFRY, k[i])), o2[i].store(rot ^ a[i].cast(u32)),
                       o3[i].store((rot >> 8).cast(dtypes.float32) * 2.0 ** -24 + rot.cast(u64).cast(dtypes.float32)))
             .end(i), opts=(Opt(OptOps.UPCAST, 0, 16),))
  kat = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)), ((0xFFFFFFFF,) * 2, (0xFFFFFFFF,) * 2, (0x1CB996FC, 0xBB002BE7))]
  pack = lambda w: (w[1] << 32) | w[0]  # noqa: E731
  xa, ka = rng.integers(0, 2**64, n, np.uint64, endpoint=False), rng.integers(0, 2**64, n, np.uint64, endpoint=False)
  xa[:2], ka[:2] = [pack(c) for c, _, _ in kat], [pack(key) for _, key, _ in kat]
  r1, r2, r3, *_ = run(ast, device, [np.zeros(n, np.uint64), np.zeros(n, np.uint32), np.zeros(n, np.float32), xa, ka])
  assert [int(v) for v in r1[:2]] == [pack(out) for _, _, out in kat]
  h = (xa >> np.uint64(32)).astype(np.uint32)
  rot_np = (h << np.uint32(13)) | (h >> np.uint32(19))
  np.testing.assert_array_equal(r2, rot_np ^ xa.astype(np.uint32))
  np.testing.assert_array_equal(r3, (rot_np >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24) + rot_np.astype(np.float32))
  if device == "CPU":
    src = get_program(ast, Device["CPU"].renderer).src
    assert "tg_uint32x16" in src and not re.search(r"= v\d+\[\d+\];", src), src

# ***** nontemporal stores *****

def _disassembly(lib: bytes, tmp_path) -> str:
  (so := tmp_path / "k.so").write_bytes(lib)
  return subprocess.run(["objdump", "-d", str(so)], capture_output=True, text=True, check=True).stdout

@pytest.mark.parametrize("cc", [c for c in ("clang", "clang-19", "gcc") if shutil.which(c)])
def test_nontemporal_store_streams_with_clang_and_is_plain_elsewhere(cc, monkeypatch, tmp_path):
  """Two results of one sum stored past the caches (the one-kernel allreduce's stores): clang's streaming stores (movnt*),
  gcc's plain ones (it has no __builtin_nontemporal_store), the same values either way; the vectorizer keeps the hint."""
  monkeypatch.setenv("CC", cc)
  n = 1000
  O0, O1, A, B = (UOp.param(k, dtypes.float, (n,)) for k in range(4))
  i = UOp.range(n, 0)
  acc = A[i] + B[i]
  ast = UOp.group(O0[i].store(acc, nontemporal=True), O1[i].store(acc, nontemporal=True)).end(i).sink(arg=KernelInfo(name="nt_sum"))
  a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
  o0, o1, _, _ = run(ast, "CPU", [np.zeros(n, np.float32), np.zeros(n, np.float32), a, b])
  np.testing.assert_array_equal(o0, a + b)
  np.testing.assert_array_equal(o1, a + b)
  spec = get_program(ast, Device["CPU"].renderer)
  stores = [ln for ln in spec.src.splitlines() if re.match(r"\s*(if \(.*\) )?(\*|tg_nt_store\()", ln)]
  assert stores and all("tg_nt_store(" in ln for ln in stores) and "tg_float32x" in spec.src  # vectorized, every store streaming
  is_clang = "clang" in Device["CPU"].compiler.version.partition("\n")[0].lower()
  assert ("movnt" in _disassembly(Device["CPU"].compiler.compile(spec.src), tmp_path)) == is_clang

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", [dtypes.int32, dtypes.int64, dtypes.uint32])
def test_vector_integer_lanes(device, dt):
  """16 integer lanes at once: + - * wrap around as the scalars do, max, bitwise ops, compares and selects, and/or of
  compares, a compare's mask cast to an int (1, not the mask's -1); numpy's values. The C source computes them as whole
  vectors (an int sum or argmax ran lane by lane)."""
  n, f = 64, np.dtype(dt.fmt)
  o1, o2, o3, a, b = (UOp.param(0, dt, (n,)), UOp.param(1, dt, (n,)), UOp.param(2, dtypes.int32, (n,)), UOp.param(3, dt, (n,)),
                      UOp.param(4, dt, (n,)))
  i = UOp.range(n, 0)
  x, y = a[i], b[i]
  ast = sink(UOp.group(o1[i].store(x.maximum(y) + x * y - (y ^ (x & y)) | 5), o2[i].store((x < y).where(x, y * x)),
                       o3[i].store(((x < y) | x.eq(y) & (y < 2)).cast(dtypes.int32) + x.ne(y).cast(dtypes.int32) * 2))
             .end(i), opts=(Opt(OptOps.UPCAST, 0, 16),))
  info = np.iinfo(f)
  xa = rng.integers(info.min, info.max, n, dtype=f, endpoint=True)
  ya = rng.integers(info.min, info.max, n, dtype=f, endpoint=True)
  xa[:4], ya[:4], ya[4:8] = [info.max, info.min, 0, info.max], [info.max, info.min, info.min, 2], xa[4:8]
  r1, r2, r3, *_ = run(ast, device, [np.zeros(n, f), np.zeros(n, f), np.zeros(n, np.int32), xa, ya])
  with np.errstate(over="ignore"):
    np.testing.assert_array_equal(r1, np.maximum(xa, ya) + xa * ya - (ya ^ (xa & ya)) | 5)
    np.testing.assert_array_equal(r2, np.where(xa < ya, xa, ya * xa))
  np.testing.assert_array_equal(r3, ((xa < ya) | (xa == ya) & (ya < 2)).astype(np.int32) + (xa != ya) * 2)
  if device == "CPU":
    src = get_program(ast, Device["CPU"].renderer).src
    assert not re.search(r"= v\d+\[\d+\];", src), src

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", [dtypes.int32, dtypes.int64])
def test_vector_positions_and_bitcasts(device, dt):
  """An upcast range's positions cast to integer lanes (an argmax's indices) and float lanes bitcast to int32: numpy's
  values, and in C whole vectors (each position was a scalar add, cast and insert, each bitcast a memcpy per lane)."""
  n = 256
  o, a = UOp.param(0, dt, (n,)), UOp.param(1, dtypes.float, (n,))
  r, i = UOp.range(4, 0), UOp.range(64, 1)
  pos = r * 64 + i
  ast = sink(o[pos].store((pos * 3 + 7).cast(dt) + a[pos].bitcast(dtypes.int32).cast(dt)).end(r, i), opts=(Opt(OptOps.UPCAST, 1, 16),))
  xa = rng.standard_normal(n).astype(np.float32)
  xa[:3] = [-0.0, np.inf, np.nan]
  r0, _ = run(ast, device, [np.zeros(n, np.dtype(dt.fmt)), xa])
  np.testing.assert_array_equal(r0, np.arange(n) * 3 + 7 + xa.view(np.int32).astype(np.dtype(dt.fmt)))
  if device == "CPU":
    src = get_program(ast, Device["CPU"].renderer).src
    # no lane taken out, no lanes put together (a broadcast is fine)
    assert not re.search(r"= v\d+\[\d+\];|\{(v\d+), (?!\1\b)v\d+", src) and "memcpy" not in src, src

@pytest.mark.parametrize("device", DEVICES)
def test_vector_half_casts(device):
  """float32 -> float16 -> float32 on 16 lanes: round to nearest even, overflow to inf, NaN stays NaN, subnormal halves;
  numpy's values, converted as whole vectors in C."""
  n = 64
  o, a = UOp.param(0, dtypes.float, (n,)), UOp.param(1, dtypes.float, (n,))
  i = UOp.range(n, 0)
  ast = sink(o[i].store(a[i].cast(dtypes.half).cast(dtypes.float) * 3.0).end(i), opts=(Opt(OptOps.UPCAST, 0, 16),))
  xa = np.concatenate([np.array([np.nan, np.inf, -np.inf, 65520.0, 65519.0, 1e-7, -3e-6, 1 + 2 ** -11, 1 + 3 * 2 ** -11, -0.0], np.float32),
                       rng.standard_normal(n - 10).astype(np.float32) * 100])
  (r, _) = run(ast, device, [np.zeros(n, np.float32), xa])
  with np.errstate(over="ignore"):
    np.testing.assert_array_equal(r, xa.astype(np.float16).astype(np.float32) * np.float32(3.0))
  if device == "CPU":
    src = get_program(ast, Device["CPU"].renderer).src
    assert "__builtin_convertvector" in src and not re.search(r"= v\d+\[\d+\];", src), src

# ***** transposes *****

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("tile", [4, 8, 16])
def test_transposed_tiles_are_shuffled(device, tile):
  """out = a.T through tiles of tile x tile (both axes upcast, as the heuristics transpose): numpy's values. In C each
  tile is a network of two-vector shuffles, log2(tile) steps, where lane by lane it was tile^2 extracts and inserts (a
  2048 x 256 float transpose 279 -> 131 us)."""
  n, m = 2 * tile, 3 * tile
  out, a = UOp.param(0, dtypes.float32, (m, n)), UOp.param(1, dtypes.float32, (n, m))
  i, j = UOp.range(n, 0), UOp.range(m, 1)
  ast = sink(out[j, i].store(a[i, j]).end(i, j), opts=(Opt(OptOps.UPCAST, 0, tile), Opt(OptOps.UPCAST, 1, tile)))
  x = rng.standard_normal((n, m)).astype(np.float32)
  np.testing.assert_array_equal(run(ast, device, [np.zeros(m * n, np.float32), x.reshape(-1)])[0].reshape(m, n), x.T)
  if device == "CPU":
    src = get_program(ast, Device["CPU"].renderer).src
    assert src.count("__builtin_shufflevector") == tile * (tile.bit_length() - 1) and not re.search(r"= v\d+\[\d+\];", src), src
