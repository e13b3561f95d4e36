"""ALU ops run on CPU and PYTHON against numpy: every integer op on every integer dtype bit-exact (wraparound; C's truncating
division, x/0 == 0 in tg), bool ops, THREEFRY against tg.uop.ops' Python definition, MULACC and POW within their error
bounds, bitcasts between same-size types. One kernel of many elements per (op, dtype, device), so the suite stays fast."""
import numpy as np
import pytest
from tg.uop import AxisType, DType, KernelInfo, Ops, UOp, dtypes
from tg.uop.ops import _threefry2x32
from tg.codegen.device import Buffer, Device
from tg.codegen.pipeline import CompiledRunner, get_program

DEVS = ["CPU", "PYTHON"]
N = 192
INTS = [dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64]
NP = {d: np.dtype(d.fmt) for d in INTS + [dtypes.bool, dtypes.float16, dtypes.float32, dtypes.float64]} | {dtypes.bfloat16: np.dtype(np.uint16)}

# ***** bfloat16 is held as its bits in uint16 arrays *****
def bf16_value(bits: np.ndarray) -> np.ndarray: return (bits.astype(np.uint32) << 16).view(np.float32)
def as_f(x: np.ndarray, dt: DType) -> np.ndarray: return bf16_value(x) if dt == dtypes.bfloat16 else x  # arithmetic values

# ***** running one kernel: out[i] = fn(in0[i], in1[i], ...) *****
def run(dev: str, out_dt: DType, fn, *ins: tuple[np.ndarray, DType]) -> np.ndarray:
  n = len(ins[0][0])
  params = [UOp.param(k + 1, dt, (n,)) for k, (_, dt) in enumerate(ins)]
  out, i = UOp.param(0, out_dt, (n,)), UOp.range(n, 0, AxisType.LOOP)
  ast = out[i].store(fn(*[p[i] for p in params])).end(i).sink(arg=KernelInfo(name="alu", opts_to_apply=()))
  spec = get_program(ast, Device[dev].renderer)
  bufs = [Buffer(dev, n, out_dt).allocate()] + [Buffer(dev, n, dt).allocate() for _, dt in ins]
  for b, (x, _) in zip(bufs[1:], ins): b.copyin(memoryview(np.ascontiguousarray(x)).cast("B"))
  CompiledRunner(spec)(bufs, {}, wait=True)
  got = np.empty(n, NP[out_dt])
  bufs[0].copyout(memoryview(got).cast("B"))
  return got

# ***** inputs *****
def ints(dt: DType, seed: int) -> np.ndarray:
  rng, info = np.random.default_rng(seed), np.iinfo(NP[dt])
  edge = [0, 1, info.max, info.min, info.max - 1, info.min + 1] + ([] if info.min == 0 else [-1, -2])
  return np.concatenate([np.array(edge, NP[dt]), rng.integers(info.min, info.max, N - len(edge), NP[dt], endpoint=True)])

# ***** integer ops *****
def c_div(a: np.ndarray, b: np.ndarray, mod: bool) -> np.ndarray:
  """C division (truncating toward zero) in Python ints; x/0 == 0 and x%0 == 0 in tg."""
  out = []
  for x, y in zip(a.tolist(), b.tolist()):
    q = 0 if y == 0 else abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
    out.append((x - q * y if y != 0 else 0) if mod else q)
  return np.array(out, dtype=object)

INT_BINARY = {Ops.ADD: np.add, Ops.SUB: np.subtract, Ops.MUL: np.multiply, Ops.MAX: np.maximum, Ops.AND: np.bitwise_and,
              Ops.OR: np.bitwise_or, Ops.XOR: np.bitwise_xor, Ops.IDIV: lambda a, b: c_div(a, b, False), Ops.MOD: lambda a, b: c_div(a, b, True)}
UOP_BINARY = {Ops.SUB: lambda a, b: a - b}

def wrap(v: np.ndarray, dt: DType) -> np.ndarray:
  bits = 8 * dt.itemsize
  return np.array([((int(x) + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1)) if dt in dtypes.sints else int(x) % (1 << bits) for x in v],
                  dtype=object).astype(NP[dt])

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("dt", INTS, ids=lambda d: d.name)
@pytest.mark.parametrize("op", list(INT_BINARY), ids=lambda o: o.name)
def test_int_binary(op: Ops, dt: DType, dev: str):
  a, b = ints(dt, 1), ints(dt, 2)
  b[::7] = 0  # division by zero is 0 in tg
  if op in (Ops.IDIV, Ops.MOD) and dt in dtypes.sints: b[(a == np.iinfo(NP[dt]).min) & (b == -1)] = 3  # INT_MIN // -1 overflows in C
  got = run(dev, dt, lambda x, y: UOP_BINARY[op](x, y) if op in UOP_BINARY else x.alu(op, y), (a, dt), (b, dt))
  with np.errstate(all="ignore"): want = wrap(INT_BINARY[op](a.astype(object), b.astype(object)), dt)
  np.testing.assert_array_equal(got, want)

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("dt", INTS, ids=lambda d: d.name)
def test_int_shifts_neg_compare(dt: DType, dev: str):
  """SHL/SHR by 0..bits-1 (SHR is arithmetic for signed types), NEG wraps, CMPLT/CMPNE/CMPEQ, WHERE."""
  a, b = ints(dt, 3), ints(dt, 4)
  sh = (np.arange(N) % (8 * dt.itemsize)).astype(NP[dt])
  np.testing.assert_array_equal(run(dev, dt, lambda x, s: x << s, (a, dt), (sh, dt)), wrap(a.astype(object) << sh.astype(object), dt))
  np.testing.assert_array_equal(run(dev, dt, lambda x, s: x >> s, (a, dt), (sh, dt)), np.right_shift(a, sh))
  np.testing.assert_array_equal(run(dev, dt, lambda x: x.alu(Ops.NEG), (a, dt)), wrap(-a.astype(object), dt))
  b[::3] = a[::3]
  for op, ref in ((Ops.CMPLT, np.less), (Ops.CMPNE, np.not_equal), (Ops.CMPEQ, np.equal)):
    np.testing.assert_array_equal(run(dev, dtypes.bool, lambda x, y: x.alu(op, y), (a, dt), (b, dt)), ref(a, b), err_msg=str(op))
  np.testing.assert_array_equal(run(dev, dt, lambda x, y: (x < y).where(x, y), (a, dt), (b, dt)), np.where(a < b, a, b))

@pytest.mark.parametrize("dev", DEVS)
def test_bool_ops(dev: str):
  a, b = np.arange(N) % 2 == 0, np.arange(N) % 3 == 0
  bt = dtypes.bool
  for op, ref in ((Ops.AND, np.logical_and), (Ops.OR, np.logical_or), (Ops.XOR, np.logical_xor), (Ops.CMPNE, np.not_equal),
                  (Ops.CMPEQ, np.equal), (Ops.CMPLT, np.less), (Ops.MAX, np.maximum)):
    np.testing.assert_array_equal(run(dev, bt, lambda x, y: x.alu(op, y), (a, bt), (b, bt)), ref(a, b), err_msg=str(op))
  np.testing.assert_array_equal(run(dev, bt, lambda x: x.alu(Ops.NEG), (a, bt)), ~a)

def ulps(got: np.ndarray, exact: np.ndarray, dt: DType) -> np.ndarray:
  """|got - exact| in ulps of dt at the exact value; 0 where both are the same special, inf on a mismatched special."""
  mbits = {dtypes.float16: 10, dtypes.bfloat16: 7, dtypes.float32: 23, dtypes.float64: 52}[dt]
  emin = {dtypes.float16: -14, dtypes.bfloat16: -126, dtypes.float32: -126, dtypes.float64: -1022}[dt]
  g = as_f(got, dt).astype(np.longdouble)
  with np.errstate(all="ignore"):
    e = np.maximum(np.floor(np.log2(np.abs(exact))), emin)
    err = np.abs(g - exact) / np.exp2(e - mbits)
  same = (np.isnan(g) & np.isnan(exact)) | (g == exact)
  return np.where(same, 0.0, np.where(np.isnan(err) | ~np.isfinite(exact), np.inf, err))

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64], ids=lambda d: d.name)
def test_mulacc_pow(dt: DType, dev: str):
  """MULACC is a*b+c with one rounding (fused, CPU) or two (PYTHON): both are within half an ulp of a*b rounded, plus c;
  POW is exp2(b*log2(a)) for a > 0."""
  rng = np.random.default_rng(10)
  a, b, c = (rng.uniform(-4, 4, N).astype(NP[dt]) for _ in range(3))
  got = run(dev, dt, lambda x, y, z: x.mulacc(y, z), (a, dt), (b, dt), (c, dt)).astype(np.longdouble)
  exact = a.astype(np.longdouble) * b + c
  assert (np.abs(got - exact) <= np.spacing(np.abs(a * b).astype(NP[dt])) / 2 + np.spacing(np.abs(exact).astype(NP[dt]))).all()
  pa, pb = np.abs(a) + 0.25, b
  err = ulps(run(dev, dt, lambda x, y: x.pow(y), (pa, dt), (pb, dt)), np.power(pa.astype(np.longdouble), pb), dt)
  assert err.max() <= 16, f"pow: {err.max()} ulp"  # the error of log2 is scaled by |b*log2(a)| <= 16

@pytest.mark.parametrize("dev", DEVS)
def test_threefry(dev: str):
  rng = np.random.default_rng(11)
  x, k = rng.integers(0, 2**64, N, np.uint64, endpoint=False), rng.integers(0, 2**64, N, np.uint64, endpoint=False)
  u64 = dtypes.uint64
  got = run(dev, u64, lambda a, b: a.alu(Ops.THREEFRY, b), (x, u64), (k, u64))
  np.testing.assert_array_equal(got, np.array([_threefry2x32(int(a), int(b)) for a, b in zip(x, k)], np.uint64))

SAME_SIZE = [[dtypes.int8, dtypes.uint8], [dtypes.int16, dtypes.uint16, dtypes.float16, dtypes.bfloat16],
             [dtypes.int32, dtypes.uint32, dtypes.float32], [dtypes.int64, dtypes.uint64, dtypes.float64]]

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("group", SAME_SIZE, ids=lambda g: str(g[0].itemsize))
def test_bitcast_same_size(group: list[DType], dev: str):
  """Every bit pattern survives a bitcast between same-size types."""
  for frm in group:
    x = ints(dtypes.int8 if frm.itemsize == 1 else {2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[frm.itemsize], 14)
    for to in group:
      if to == frm: continue
      src = x.view(NP[frm])
      # WORKAROUND (bug reported): PYTHON holds float values as Python floats, so a NaN's payload is lost when a float16/bfloat16/
      # float32 NaN is produced or consumed by the bitcast; NaN patterns are left out, every other pattern must match exactly
      src = src[~np.isnan(as_f(src, frm))] if dtypes.is_float(frm) else src
      if dtypes.is_float(to): src = src[~np.isnan(as_f(src.view(NP[to]), to))]
      got = run(dev, to, lambda a: a.bitcast(to), (src, frm))
      np.testing.assert_array_equal(got.view(f"u{to.itemsize}"), src.view(f"u{frm.itemsize}"), err_msg=f"{frm} -> {to}")
