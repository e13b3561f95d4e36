"""Fuzz: random reduce kernels (reduces that skip some output loops, two reduces side by side, a reduce nested in a
reduce) under random opts or the heuristics give numpy's answer on CPU and PYTHON. Loop placement bugs live here: an
accumulator set in one loop nest and updated in another gives values summed across outputs."""
import math
import numpy as np
from hypothesis import given, settings, strategies as st, HealthCheck
from tg.uop import UOp, Ops, AxisType, KernelInfo, dtypes
from tg.codegen.pipeline import get_program, CompiledRunner
from tg.codegen.device import Device, Buffer
from tg.codegen.opt.kernel import KernelOptError, apply_opt
from tg.codegen.opt.search import actions

class Operand:
  """A float input read at a subset of the kernel's loops (the others broadcast it)."""
  def __init__(self, slot: int, axes: list[int], sizes: list[int]):
    self.slot, self.axes, self.sizes, self.shape = slot, axes, sizes, [sizes[a] for a in axes]
  def load(self, rngs: list[UOp]) -> UOp:
    buf = UOp.param(self.slot, dtypes.float, (max(math.prod(self.shape), 1),))
    idx: UOp | int = 0
    for a, s in zip(self.axes, self.shape): idx = idx * s + rngs[a]
    return buf[idx]
  def full(self, x: np.ndarray) -> np.ndarray:
    """x broadcast over all loops of the kernel."""
    return np.broadcast_to(x.reshape([s if a in self.axes else 1 for a, s in enumerate(self.sizes)]), self.sizes)

@st.composite
def reduce_kernels(draw):
  """(ast, operands, numpy reference, output shape): out[outs] = combine of reduces over random subsets of the loops."""
  n_out, n_red = draw(st.integers(1, 3)), draw(st.integers(1, 2))
  sizes = draw(st.lists(st.sampled_from([1, 2, 3, 4, 5, 8]), min_size=n_out + n_red, max_size=n_out + n_red))
  rngs = [UOp.range(s, i, AxisType.LOOP if i < n_out else AxisType.REDUCE) for i, s in enumerate(sizes)]
  outs, reds = list(range(n_out)), list(range(n_out, n_out + n_red))
  operands: list[Operand] = []
  def operand(must: list[int]) -> Operand:
    extra = draw(st.lists(st.sampled_from(outs), unique=True, max_size=n_out))
    op = Operand(len(operands) + 1, sorted(set(must) | set(extra)), sizes)
    operands.append(op)
    return op
  kind = draw(st.sampled_from(["one", "two", "nested"]))
  red_op = draw(st.sampled_from([Ops.ADD, Ops.MAX]))
  np_red = np.sum if red_op is Ops.ADD else np.max
  if kind == "nested" and n_red == 2:  # sum_r0 (a[.., r0] * red_r1 b[.., r0, r1])
    a, b = operand([reds[0]]), operand(reds)
    inner = (b.load(rngs)).reduce(rngs[reds[1]], arg=red_op)
    ast_val = (a.load(rngs) * inner).reduce(rngs[reds[0]], arg=Ops.ADD)
    def ref(xa, xb):  # (the product is constant along r1: max picks that value)
      return (a.full(xa) * np_red(b.full(xb), axis=reds[1], keepdims=True)).sum(axis=reds[0], keepdims=True).max(axis=reds[1], keepdims=True)
  elif kind == "two":  # red_r0(a) + red_rlast(b): two accumulators, maybe over the same loop
    a, b = operand([reds[0]]), operand([reds[-1]])
    ast_val = a.load(rngs).reduce(rngs[reds[0]], arg=red_op) + b.load(rngs).reduce(rngs[reds[-1]], arg=Ops.ADD)
    def ref(xa, xb):
      ra = np_red(a.full(xa), axis=reds[0], keepdims=True)
      rb = b.full(xb).sum(axis=reds[-1], keepdims=True)
      return (ra + rb).max(axis=tuple(reds), keepdims=True)  # the other reduce axes are broadcast: all equal
  else:  # red over every reduce loop of a[...] * b[...]
    a, b = operand([reds[0]]), operand([])
    ast_val = (a.load(rngs) * b.load(rngs)).reduce(*[rngs[r] for r in reds], arg=red_op)
    def ref(xa, xb): return np_red(a.full(xa) * b.full(xb), axis=tuple(reds), keepdims=True)
  out_idx: UOp | int = 0
  for o in outs: out_idx = out_idx * sizes[o] + rngs[o]
  out_shape = [sizes[o] for o in outs]
  ast = UOp.param(0, dtypes.float, (math.prod(out_shape),))[out_idx].store(ast_val).end(*[rngs[o] for o in outs])
  return ast.sink(arg=KernelInfo(name="fuzz_reduce")), operands, lambda *xs: ref(*xs).reshape(out_shape), out_shape

def run(ast: UOp, device: str, inputs: list[np.ndarray], out_shape: list[int], opts) -> np.ndarray:
  spec = get_program(ast, Device[device].renderer, opts=opts)
  bufs = [Buffer(device, max(math.prod(out_shape), 1), dtypes.float).allocate()]
  for x in inputs:
    bufs.append(b := Buffer(device, max(x.size, 1), dtypes.float).allocate())
    b.copyin(memoryview(np.ascontiguousarray(x.reshape(-1))).cast("B"))
  CompiledRunner(spec)(bufs, {}, wait=True)
  out = np.empty(out_shape, np.float32)
  bufs[0].copyout(memoryview(out).cast("B"))
  return out

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(k=reduce_kernels(), picks=st.one_of(st.none(), st.lists(st.integers(0, 10**6), max_size=3)), seed=st.integers(0, 2**16))
def test_random_reduce_kernels_match_numpy(k, picks, seed):
  ast, operands, ref, out_shape = k
  rng = np.random.default_rng(seed)
  inputs = [rng.standard_normal(op.shape or [1]).astype(np.float32).reshape(op.shape) for op in operands]
  want = ref(*inputs)
  for device in ("CPU", "PYTHON"):
    ren, opt_ast, applied = Device[device].renderer, ast, []
    for p in (picks or []):  # each pick chooses among the opts legal on the kernel so far
      if not (acts := actions(opt_ast, ren)): break
      try: opt_ast = apply_opt(opt_ast, acts[p % len(acts)], ren)
      except KernelOptError: continue
      applied.append(acts[p % len(acts)])
    got = run(opt_ast, device, inputs, out_shape, None if picks is None else ())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"{device} with {'heuristics' if picks is None else applied}")

def test_nested_grouped_reduces_keep_their_shares_apart():
  """sum_i a[i] * sum_j b[i, j] with both reduces split over a workgroup (GROUP on each): the inner reduce's shares in
  shared memory are per thread of the outer one too (found by the fuzz above: they shared slots, and the PYTHON device
  gave 6.25 for -3.93). Every split of the two loops, against numpy."""
  from tg.codegen.opt.kernel import Opt, OptOps
  i, j = UOp.range(8, 2, AxisType.REDUCE), UOp.range(8, 3, AxisType.REDUCE)
  a, b = UOp.param(1, dtypes.float, (8,)), UOp.param(2, dtypes.float, (64,))
  val = (a[i] * b[i * 8 + j].reduce(j, arg=Ops.ADD)).reduce(i, arg=Ops.ADD)
  ast = UOp.param(0, dtypes.float, (1,))[0].store(val).sink(arg=KernelInfo(name="nested_groups"))
  rng = np.random.default_rng(0)
  xa, xb = rng.standard_normal(8).astype(np.float32), rng.standard_normal(64).astype(np.float32)
  for outer in (2, 4):  # (8: the whole outer loop, which leaves no axis 1)
    for inner in (2, 4, 8):
      k = apply_opt(apply_opt(ast, Opt(OptOps.GROUP, 0, outer), Device["PYTHON"].renderer), Opt(OptOps.GROUP, 1, inner), Device["PYTHON"].renderer)
      np.testing.assert_allclose(run(k, "PYTHON", [xa, xb], [1], ()), [(xa * xb.reshape(8, 8).sum(1)).sum()], rtol=1e-5, err_msg=f"{outer} x {inner}")
