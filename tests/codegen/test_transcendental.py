"""EXP2, LOG2 and SIN lowered to polynomials (tg.codegen.lower.transcendental), run on CPU (a C renderer without them)
and PYTHON (which never has them), against numpy in long double: at most MAX_ULP ulp everywhere, exact on specials."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.uop import AxisType, DType, KernelInfo, Ops, UOp, dtypes
from tg.codegen.device import Buffer, Device
from tg.codegen.pipeline import CompiledRunner, get_program
from tg.codegen.renderer import Renderer
from tg.codegen.renderer.cstyle import CRenderer
from tg.codegen.devices.clang import has_vector_math, vector_math_call, vector_math_lanes
from tg.codegen.opt.kernel import Opt, OptOps

class NoTranscendental(CRenderer):
  native_ops = CRenderer.native_ops - {Ops.EXP2, Ops.LOG2, Ops.SIN}

NP = {dtypes.float16: np.float16, dtypes.float32: np.float32, dtypes.float64: np.float64}
REF = {Ops.EXP2: np.exp2, Ops.LOG2: np.log2, Ops.SIN: np.sin}
MAX_ULP = 1.5  # measured: <= 1.03 ulp (float32, float64 on CPU with fma), <= 0.95 ulp on PYTHON; float16 rounds a float32 result
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 1.0, 0.5, 2.0, np.pi, -np.pi / 2]

def renderer(dev: str) -> Renderer: return NoTranscendental() if dev == "CPU" else Device[dev].renderer

def run_unary(op: Ops, x: np.ndarray, dt: DType, dev: str) -> np.ndarray:
  n = len(x)
  out, a = UOp.param(0, dt, (n,)), UOp.param(1, dt, (n,))
  i = UOp.range(n, 0, AxisType.LOOP)
  ast = out[i].store(a[i].alu(op)).end(i).sink(arg=KernelInfo(name=f"{op.name.lower()}_{dt.name}", opts_to_apply=()))
  spec = get_program(ast, renderer(dev))
  assert spec.device == dev and all(u.op is not op for u in spec.uops)  # really lowered
  bufs = [Buffer(dev, n, dt).allocate(), Buffer(dev, n, dt).allocate()]
  bufs[1].copyin(memoryview(np.ascontiguousarray(x)))
  CompiledRunner(spec)(bufs, {}, wait=True)
  got = np.empty_like(x)
  bufs[0].copyout(memoryview(got))
  return got

def ulp_error(got: np.ndarray, x: np.ndarray, op: Ops) -> np.ndarray:
  """|got - exact| in ulps of the exact result's dtype; 0 where both are the same special (nan, inf, signed zero), inf on mismatch."""
  with np.errstate(all="ignore"):
    exact = REF[op](x.astype(np.longdouble))
    rounded = exact.astype(x.dtype)
    err = np.abs(got.astype(np.longdouble) - exact) / np.spacing(np.abs(rounded)).astype(np.longdouble)
  same = (np.isnan(got) & np.isnan(rounded)) | ((got == rounded) & (np.signbit(got) == np.signbit(rounded)))
  special = ~np.isfinite(rounded) | ~np.isfinite(got) | (rounded == 0)
  return np.where(same, 0.0, np.where(special | np.isnan(err), np.inf, err))

def samples(op: Ops, dt: DType, n: int) -> np.ndarray:
  """Wide log-uniform magnitudes of both signs (denormals to the largest finite), a dense core range, and the specials."""
  rng = np.random.default_rng(hash((op, dt)) % 2**32)
  npdt, info = NP[dt], np.finfo(NP[dt])
  lo, hi = np.log2(float(info.smallest_subnormal)), np.log2(float(info.max))
  mags = np.exp2(rng.uniform(lo, hi, n))
  core = {Ops.EXP2: rng.uniform(-float(info.maxexp) - 30, info.maxexp + 5, n), Ops.LOG2: rng.uniform(0.5, 2.0, n),
          Ops.SIN: rng.uniform(-20.0, 20.0, n)}[op]
  with np.errstate(over="ignore"):
    x = np.concatenate([mags * rng.choice([-1.0, 1.0], n), core, SPECIALS, [info.max, info.smallest_subnormal, info.smallest_normal]])
  return x.astype(npdt)

@pytest.mark.parametrize("dev,n", [("CPU", 4000), ("PYTHON", 150)])
@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.float32, dtypes.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("op", [Ops.EXP2, Ops.LOG2, Ops.SIN], ids=lambda o: o.name)
def test_within_ulp(op: Ops, dt: DType, dev: str, n: int):
  x = samples(op, dt, n)
  err = ulp_error(run_unary(op, x, dt, dev), x, op)
  assert err.max() <= MAX_ULP, f"{op} {dt} on {dev}: {err.max()} ulp at x={x[np.argmax(err)]!r}"

HUGE = {dtypes.float32: [1e30, -1e30, 1e38, 3.4028235e38, 8e33, 2.0**24, 2.0**9 + 0.5, 511.9, 1e6, 102551.0],
        dtypes.float64: [1e30, 1e38, 1e300, 1.7976931348623157e308, -1e22, 2.0**60, 2.0**18, 6381956970095103 * 2.0**797, 5e15, 1e6]}

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64], ids=lambda d: d.name)
def test_sin_huge_and_near_multiples_of_pi(dt: DType, dev: str):
  """Payne-Hanek: huge arguments, including the double closest to a multiple of pi/2 (6381956970095103 * 2^797), and the
  Cody-Waite boundary (2^kb) and arguments just either side of multiples of pi."""
  npdt = NP[dt]
  k = np.arange(1, 60, dtype=np.float64) * np.pi
  x = np.concatenate([HUGE[dt], k, np.nextafter(k.astype(npdt), npdt(np.inf)), -k]).astype(npdt)
  err = ulp_error(run_unary(Ops.SIN, x, dt, dev), x, Ops.SIN)
  assert err.max() <= MAX_ULP, f"sin {dt} on {dev}: {err.max()} ulp at x={x[np.argmax(err)]!r}"

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
def test_specials_exact(dev: str):
  x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1e-45, -3.0, 1e-45, 1.0, 128.0, -150.0, -149.0, 127.99999], np.float32)
  with np.errstate(all="ignore"):
    for op in (Ops.EXP2, Ops.LOG2, Ops.SIN):
      got, want = run_unary(op, x, dtypes.float32, dev), REF[op](x.astype(np.float64)).astype(np.float32)
      np.testing.assert_array_equal(got, want, err_msg=f"{op}")
      assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all(), f"{op}: sign of {x}"

@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=64, max_size=64),
       st.sampled_from([Ops.EXP2, Ops.LOG2, Ops.SIN]))
def test_float32_property(xs: list[float], op: Ops):
  """Any float32 (hypothesis favours edge values: denormals, the largest floats, powers of two) is within MAX_ULP on CPU."""
  x = np.array(xs, np.float32)
  err = ulp_error(run_unary(op, x, dtypes.float32, "CPU"), x, op)
  assert err.max() <= MAX_ULP, f"{op}: {err.max()} ulp at x={x[np.argmax(err)]!r}"

def test_native_ops_are_kept():
  """A renderer that has the ops keeps them (the C renderer calls libm's, or one lane of libmvec's where the vector
  lanes call it: see test_one_lane_and_eight_lanes_agree_bit_for_bit)."""
  a, out = UOp.param(1, dtypes.float32, (4,)), UOp.param(0, dtypes.float32, (4,))
  i = UOp.range(4, 0, AxisType.LOOP)
  ast = out[i].store(a[i].exp2().log2().sin()).end(i).sink(arg=KernelInfo(name="native", opts_to_apply=()))
  src = get_program(ast, CRenderer()).src
  assert all((f"{vector_math_call(fn + 'f')}(" if has_vector_math() else f"__builtin_{fn}f(") in src for fn in ("exp2", "log2", "sin"))

@pytest.mark.parametrize("upcast", [1, 16])
def test_transcendental_2_uses_the_polynomials_where_the_device_has_its_own(upcast: int):
  """Context(TRANSCENDENTAL=2) (tinygrad's switch): the C renderer, which has libm's and libmvec's, computes the
  polynomials instead, in scalar and vector kernels alike, within MAX_ULP of numpy; the kernels built before are not reused."""
  from tg.tensor import Tensor
  from tg.uop import Context
  x = np.random.default_rng(3).uniform(-40, 40, 256).astype(np.float32)
  a, out = UOp.param(1, dtypes.float32, (256,)), UOp.param(0, dtypes.float32, (256,))
  i = UOp.range(256, 0, AxisType.LOOP)
  ast = out[i].store(a[i].exp2()).end(i).sink(arg=KernelInfo(name="t2", opts_to_apply=(Opt(OptOps.UPCAST, 0, upcast),) if upcast > 1 else ()))
  with Context(TRANSCENDENTAL=2):
    src = get_program(ast, CRenderer()).src
    got = {Ops.EXP2: Tensor(x).exp2().numpy(), Ops.SIN: Tensor(x).sin().numpy(), Ops.LOG2: Tensor(np.abs(x) + 0.5).log2().numpy()}
  assert "exp2" not in src and "_ZGV" not in src, src
  for op, y in got.items(): assert ulp_error(y, np.abs(x) + 0.5 if op is Ops.LOG2 else x, op).max() <= MAX_ULP, op

@pytest.mark.parametrize("op", [Ops.EXP2, Ops.LOG2, Ops.SIN], ids=lambda o: o.name)
def test_one_lane_and_eight_lanes_agree_bit_for_bit(op: Ops):
  """A kernel's scalar exp2 and a vectorized one (8 or 16 lanes) give the same bits: a max's gradient compares the input
  recomputed in another kernel with the max, and libm's scalar exp2f differed from libmvec's in the last bit (the
  gradient missed the maximum); libmvec's 8- and 16-lane exp2f differ too, so every call takes the host's one width."""
  x = samples(op, dtypes.float32, 4000).astype(np.float32)
  x = np.concatenate([x, np.ones(-len(x) % 16, np.float32)])
  n = len(x)
  def run(opts: tuple) -> np.ndarray:
    out, a = UOp.param(0, dtypes.float32, (n,)), UOp.param(1, dtypes.float32, (n,))
    i = UOp.range(n, 0, AxisType.LOOP)
    ast = out[i].store(a[i].alu(op)).end(i).sink(arg=KernelInfo(name=f"lanes{len(opts)}", opts_to_apply=opts))
    bufs = [Buffer("CPU", n, dtypes.float32).allocate(), Buffer("CPU", n, dtypes.float32).allocate()]
    bufs[1].copyin(memoryview(x))
    CompiledRunner(get_program(ast, Device["CPU"].renderer))(bufs, {}, wait=True)
    return bufs[0].numpy()
  one = run(()).view(np.uint32)
  for lanes in (8, 16): np.testing.assert_array_equal(one, run((Opt(OptOps.UPCAST, 0, lanes),)).view(np.uint32), err_msg=f"{lanes} lanes")

VEC_MAX_ULP = 2.5  # glibc's libmvec (AVX2): measured <= 0.83 ulp exp2, 2.06 log2, 1.76 sin (AVX-512: within the same bound)

@pytest.mark.skipif(not has_vector_math(), reason="needs glibc's libmvec and AVX2")
@pytest.mark.parametrize("op", [Ops.EXP2, Ops.LOG2, Ops.SIN], ids=lambda o: o.name)
def test_vector_lanes_call_libmvec(op: Ops):
  """16 float32 lanes at once (UPCAST 16) on the CPU's own renderer: one call of libmvec's 16-lane function on an AVX-512
  host, two of its 8-lane one on an AVX2 host, within VEC_MAX_ULP of numpy in long double, specials and huge sin
  arguments exact to the same rule."""
  x = np.concatenate([samples(op, dtypes.float32, 4000), HUGE[dtypes.float32]]).astype(np.float32)
  x = np.concatenate([x, np.ones(-len(x) % 16, np.float32)])
  n = len(x)
  out, a = UOp.param(0, dtypes.float32, (n,)), UOp.param(1, dtypes.float32, (n,))
  i = UOp.range(n, 0, AxisType.LOOP)
  ast = out[i].store(a[i].alu(op)).end(i).sink(arg=KernelInfo(name=f"v{op.name.lower()}", opts_to_apply=(Opt(OptOps.UPCAST, 0, 16),)))
  spec = get_program(ast, Device["CPU"].renderer)
  assert spec.src.count(f"{vector_math_call(op.name.lower() + 'f')}(") == 1 + 16 // vector_math_lanes(), spec.src  # declaration, calls
  bufs = [Buffer("CPU", n, dtypes.float32).allocate(), Buffer("CPU", n, dtypes.float32).allocate()]
  bufs[1].copyin(memoryview(x))
  CompiledRunner(spec)(bufs, {}, wait=True)
  got = np.empty_like(x)
  bufs[0].copyout(memoryview(got))
  err = ulp_error(got, x, op)
  assert err.max() <= VEC_MAX_ULP, f"{op}: {err.max()} ulp at x={x[np.argmax(err)]!r}"
