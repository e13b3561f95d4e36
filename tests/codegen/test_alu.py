"""ALU ops run on CPU and PYTHON against numpy: every integer op on every integer dtype bit-exact (wraparound; C's truncating
division, x/0 == 0 in tg), bool ops, THREEFRY against Random123's known answers and tg.uop.ops' Python definition, MULACC
and POW within their error bounds, bitcasts between same-size types (NaN payloads kept); float + - * / sqrt correctly rounded
and MAX/TRUNC/RECIPROCAL/NEG/compares/WHERE exact on float16/bfloat16/float32/float64 (inf, nan, denormals, signed zeros),
EXP2/LOG2/SIN within their ulp bounds, CAST between every pair of dtypes (fp8 against hand-computed OCP and fnuz encodings
too; fp8 bits from floatconv_ref, not tg), and tg.uop.floatconv's bf16/fp8 builders. One kernel of many elements per (op,
dtype, device), so the suite stays fast."""
import math
import numpy as np
import pytest
from tg.uop import AxisType, DType, GroupOp, KernelInfo, Ops, UOp, dtypes
from tg.uop.dtype import float_to_fp8, fp8_to_float
from floatconv_ref import encode, decode
from tg.uop.ops import _threefry2x32
from tg.codegen.device import Buffer, Device
from tg.codegen.opt.kernel import Opt, OptOps
from tg.codegen.pipeline import CompiledRunner, get_program
from tg.codegen.program import ProgramSpec

DEVS = ["CPU", "PYTHON"]
N = 192
INTS = [dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64]
NP = {d: np.dtype(d.fmt) for d in INTS + [dtypes.bool, dtypes.float16, dtypes.float32, dtypes.float64]} | {dtypes.bfloat16: np.dtype(np.uint16)}

# ***** bfloat16 is held as its bits in uint16 arrays *****
def bf16_value(bits: np.ndarray) -> np.ndarray: return (bits.astype(np.uint32) << 16).view(np.float32)
def as_f(x: np.ndarray, dt: DType) -> np.ndarray: return bf16_value(x) if dt == dtypes.bfloat16 else x  # arithmetic values

# ***** running one kernel: out[i] = fn(in0[i], in1[i], ...) *****
def run(dev: str, out_dt: DType, fn, *ins: tuple[np.ndarray, DType], opts: tuple[Opt, ...] = ()) -> np.ndarray:
  return run_outs(dev, [out_dt], lambda *x: [fn(*x)], *ins, opts=opts)[0]

def alu_program(dev: str, out_dts: list[DType], fn, ins: list[DType], n: int, opts: tuple[Opt, ...] = ()) -> ProgramSpec:
  """One kernel: out_k[i] = fn(in0[i], in1[i], ...)[k] for every output k (with opts: none, or an UPCAST to vectors)."""
  m = len(out_dts)
  params = [UOp.param(m + k, dt, (n,)) for k, dt in enumerate(ins)]
  outs, i = [UOp.param(k, dt, (n,)) for k, dt in enumerate(out_dts)], UOp.range(n, 0, AxisType.LOOP)
  vals = fn(*[p[i] for p in params])
  ast = UOp.group(*[o[i].store(v) for o, v in zip(outs, vals)]).end(i).sink(arg=KernelInfo(name="alu", opts_to_apply=opts))
  return get_program(ast, Device[dev].renderer)

def run_outs(dev: str, out_dts: list[DType], fn, *ins: tuple[np.ndarray, DType], opts: tuple[Opt, ...] = ()) -> list[np.ndarray]:
  n, m = len(ins[0][0]), len(out_dts)
  spec = alu_program(dev, out_dts, fn, [dt for _, dt in ins], n, opts)
  bufs = [Buffer(dev, n, dt).allocate() for dt in out_dts] + [Buffer(dev, n, dt).allocate() for _, dt in ins]
  for b, (x, _) in zip(bufs[m:], ins): b.copyin(memoryview(np.ascontiguousarray(x)).cast("B"))
  CompiledRunner(spec)(bufs, {}, wait=True)
  got = [np.empty(n, NP[dt]) for dt in out_dts]
  for g, b in zip(got, bufs): b.copyout(memoryview(g).cast("B"))
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

# Random123's known-answer vectors for threefry2x32, 20 rounds: (ctr0, ctr1), (key0, key1) -> (out0, out1)
THREEFRY_KAT = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
                ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
                ((0x243F6A88, 0x85A308D3), (0x13198A2E, 0x03707344), (0xC4923A9C, 0x483DF7A0))]
def _pack(words: tuple[int, int]) -> int: return (words[1] << 32) | words[0]

@pytest.mark.parametrize("dev", DEVS)
def test_threefry(dev: str):
  rng = np.random.default_rng(11)
  x, k = rng.integers(0, 2**64, N, np.uint64, endpoint=False), rng.integers(0, 2**64, N, np.uint64, endpoint=False)
  x[:3], k[:3] = [_pack(c) for c, _, _ in THREEFRY_KAT], [_pack(key) for _, key, _ in THREEFRY_KAT]
  u64 = dtypes.uint64
  got = run(dev, u64, lambda a, b: a.alu(Ops.THREEFRY, b), (x, u64), (k, u64))
  assert [int(g) for g in got[:3]] == [_pack(out) for _, _, out in THREEFRY_KAT]
  np.testing.assert_array_equal(got, np.array([_threefry2x32(int(a), int(b)) for a, b in zip(x, k)], np.uint64))

SAME_SIZE = [[dtypes.int8, dtypes.uint8], [dtypes.int16, dtypes.uint16, dtypes.float16, dtypes.bfloat16],
             [dtypes.int32, dtypes.uint32, dtypes.float32], [dtypes.int64, dtypes.uint64, dtypes.float64]]

# quiet and signalling NaNs with payloads and either sign: float16 (0x7e01, 0xfc01), bfloat16 (0x7f81, 0xffc1), float32, float64
NAN_BITS = {2: [0x7E01, 0xFC01, 0x7F81, 0xFFC1], 4: [0x7F800001, 0xFFC12345, 0x7FBFFFFF],
            8: [0x7FF0000000000001, 0xFFF8000000000123, 0x7FF7FFFFFFFFFFFF]}

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("group", SAME_SIZE, ids=lambda g: str(g[0].itemsize))
def test_bitcast_same_size(group: list[DType], dev: str):
  """Every bit pattern survives a bitcast between same-size types, NaNs with their payloads."""
  for frm in group:
    x = ints(dtypes.int8 if frm.itemsize == 1 else {2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[frm.itemsize], 14)
    x = np.concatenate([x, np.array(NAN_BITS.get(frm.itemsize, []), x.dtype)])
    for to in group:
      if to == frm: continue
      src = x.view(NP[frm])
      if dev == "PYTHON" and dtypes.float32 in (frm, to):
        # documented limit: PYTHON holds a float32 as a Python float, and CPython's struct widens it in C, which quiets a
        # signalling NaN (0x7f800001 -> 0x7fc00001); every other pattern, NaNs of every other float type included, is exact
        u = src.view(np.uint32)
        src = src[~(((u & 0x7FC00000) == 0x7F800000) & ((u & 0x3FFFFF) != 0))]
      got = run(dev, to, lambda a: a.bitcast(to), (src, frm))
      np.testing.assert_array_equal(got.view(f"u{to.itemsize}"), src.view(f"u{frm.itemsize}"), err_msg=f"{frm} -> {to}")

# ***** floats: exact references. A float dtype's values are handled as Python/numpy float64 (which holds every value of the
# narrower formats exactly); round_exact is the IEEE round-to-nearest-even of an exact int or float to a format *****
FLOATS = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]
FNUZ = [dtypes.fp8e4m3fnuz, dtypes.fp8e5m2fnuz]  # AMD's/Graphcore's: no inf, no -0.0, one NaN (0x80)
FP8 = [dtypes.fp8e4m3, dtypes.fp8e5m2, *FNUZ]
FP8_REF = dict(zip(FP8, ["e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz"]))  # floatconv_ref's names
NP |= {d: np.dtype(np.uint8) for d in FP8}
# (mantissa bits, exponent of the smallest normal, largest finite value)
FMT = {dtypes.float16: (10, -14, 65504.0), dtypes.bfloat16: (7, -126, float.fromhex("0x1.fep127")),
       dtypes.float32: (23, -126, float.fromhex("0x1.fffffep127")), dtypes.float64: (52, -1022, float.fromhex("0x1.fffffffffffffp1023")),
       dtypes.fp8e4m3: (3, -6, 448.0), dtypes.fp8e5m2: (2, -14, 57344.0), dtypes.fp8e4m3fnuz: (3, -7, 240.0),
       dtypes.fp8e5m2fnuz: (2, -15, 57344.0)}

def round_exact(x: int | float, dt: DType) -> float:
  """x rounded to nearest even in dt; overflow gives inf, except that fp8 saturates finite values to its largest (tg's
  conversion, as tinygrad's; OCP's saturating mode), and inf is e4m3's largest value (it has no inf; PyTorch's cast too).
  The fnuz formats make inf NaN and every zero +0.0 (PyTorch's and tinygrad's casts agree)."""
  mbits, emin, fmax = FMT[dt]
  if isinstance(x, float) and (np.isnan(x) or np.isinf(x)):
    if dt in FNUZ: return math.nan
    return math.copysign(fmax, x) if dt == dtypes.fp8e4m3 and np.isinf(x) else x
  if x == 0: return 0.0 if dt in FNUZ else float(x)
  n, d = x.as_integer_ratio() if isinstance(x, float) else (int(x), 1)
  neg, n = n < 0, abs(n)
  e = n.bit_length() - d.bit_length()
  if (n < d << e) if e >= 0 else (n << -e < d): e -= 1   # now 2**e <= n/d < 2**(e+1)
  q = max(e, emin) - mbits                                 # the spacing of dt around x is 2**q
  r, rem = divmod(n << max(-q, 0), d << max(q, 0))
  if 2 * rem > d << max(q, 0) or (2 * rem == d << max(q, 0) and r & 1): r += 1
  v = math.ldexp(r, q) if r.bit_length() + q <= 1024 else math.inf  # beyond float64
  if v > fmax: v = fmax if dt in FP8 else math.inf
  return -v if neg and not (v == 0 and dt in FNUZ) else v

def to_bits(vals, dt: DType) -> np.ndarray:
  """Values exactly representable in dt -> dt's storage array."""
  if dt == dtypes.bfloat16: return (np.array(vals, np.float32).view(np.uint32) >> 16).astype(np.uint16)
  if dt in FP8: return np.array([encode(int(np.float32(v).view(np.uint32)), FP8_REF[dt]) for v in vals], np.uint8)
  return np.array(vals, NP[dt])

def values(x: np.ndarray, dt: DType) -> np.ndarray:
  """dt's storage array -> float64 values."""
  if dt in FP8: return np.array([decode(int(b), FP8_REF[dt]) for b in x], np.uint32).view(np.float32).astype(np.float64)
  return as_f(x, dt).astype(np.float64)

def rounded(v: np.ndarray, dt: DType) -> np.ndarray: return to_bits([round_exact(float(x), dt) for x in v], dt)

def assert_same_float(got: np.ndarray, want: np.ndarray, dt: DType, msg: str = "") -> None:
  """Bit-exact (so the sign of zero counts), except that any NaN matches any NaN."""
  g, w = values(got, dt), values(want, dt)
  bad = ~((np.isnan(g) & np.isnan(w)) | (got.view(f"u{dt.itemsize}") == want.view(f"u{dt.itemsize}")))
  assert not bad.any(), f"{msg} {dt}: {bad.sum()} wrong, e.g. got {g[bad][:6]} want {w[bad][:6]} at {np.flatnonzero(bad)[:6]}"

def floats(dt: DType, seed: int, n: int = N) -> list[float]:
  """Specials (+-0, +-inf, nan, denormals, the largest finite, ties), then values over the whole exponent range, then
  values of moderate size; each exactly representable in dt."""
  mbits, emin, fmax = FMT[dt]
  dmin = math.ldexp(1.0, emin - mbits)
  edge = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, dmin, -dmin, dmin * (2**mbits - 1), -dmin * 3, math.ldexp(1.0, emin),
          -math.ldexp(1.0, emin), fmax, -fmax, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -7.75, 100.0, -127.5]
  rng = np.random.default_rng(seed)
  wide = np.ldexp(rng.uniform(1, 2, (n - len(edge)) // 2) * rng.choice([-1, 1], (n - len(edge)) // 2),
                  rng.integers(emin - mbits, math.frexp(fmax)[1], (n - len(edge)) // 2))
  mid = rng.standard_normal(n - len(edge) - len(wide)) * 8
  return edge + [round_exact(float(x), dt) for x in np.concatenate([wide, mid])]

# ***** float ALU ops: + - * / sqrt correctly rounded, the rest exact *****
def np_max(a: np.ndarray, b: np.ndarray) -> np.ndarray: return np.where((a >= b) | np.isnan(a), a, b)  # numpy's maximum, ties -> a

FLOAT_OPS = {Ops.ADD: np.add, Ops.SUB: np.subtract, Ops.MUL: np.multiply, Ops.FDIV: np.divide, Ops.MAX: np_max, Ops.SQRT: np.sqrt,
             Ops.TRUNC: np.trunc, Ops.RECIPROCAL: np.reciprocal, Ops.NEG: np.negative}

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("op", list(FLOAT_OPS), ids=lambda o: o.name)
def test_float_op(op: Ops, dt: DType, dev: str):
  """The exact result in float64 (exact for NEG/MAX/TRUNC; for + - * / sqrt float64 has more than 2p+2 bits, so rounding
  its result to dt rounds the exact result correctly), rounded to dt."""
  a, b = floats(dt, 20), floats(dt, 21)
  b[-40:-30], b[-30:-20], b[-20:-10] = a[-40:-30], [-x for x in a[-30:-20]], [-x for x in a[:10]]  # x-x, x+-x, signs of zero
  if op in (Ops.MAX, Ops.MUL, Ops.FDIV): b[:24] = [-0.0, 0.0] + list(reversed(a[2:24]))  # specials against specials, +0 vs -0
  xa, xb = to_bits(a, dt), to_bits(b, dt)
  nargs = 2 if op in GroupOp.Binary else 1
  got = run(dev, dt, lambda *x: x[0].alu(op, *x[1:]), *[(xa, dt), (xb, dt)][:nargs])
  with np.errstate(all="ignore"): want = rounded(FLOAT_OPS[op](*[values(xa, dt), values(xb, dt)][:nargs]), dt)
  assert_same_float(got, want, dt, op.name)

@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64], ids=lambda d: d.name)
def test_vector_sqrt_is_one_op_and_correctly_rounded(dt: DType):
  """SQRT of 16 lanes at once in C (tg_vsqrt: clang's vector builtin, one instruction; gcc lane by lane; it was 16 scalar
  sqrts, 40% of an AdamW update's time): correctly rounded as the scalar one, specials and denormals included."""
  x, up = to_bits(floats(dt, 24), dt), (Opt(OptOps.UPCAST, 0, 16),)
  src = alu_program("CPU", [dt], lambda v: [v.alu(Ops.SQRT)], [dt], len(x), up).src
  assert "tg_vsqrt(" in src[src.index("void alu("):] and "__builtin_sqrt" not in src[src.index("void alu("):]
  got = run("CPU", dt, lambda v: v.alu(Ops.SQRT), (x, dt), opts=up)
  with np.errstate(all="ignore"): want = rounded(np.sqrt(values(x, dt)), dt)
  assert_same_float(got, want, dt, "SQRT x16")

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: d.name)
def test_float_compare_where(dt: DType, dev: str):
  """CMPLT/CMPNE/CMPEQ (NaN compares unequal, -0 == +0) and WHERE selecting bit-exact values."""
  a, b = floats(dt, 22), floats(dt, 23)
  b[:24], b[-20:] = list(reversed(a[:24])), a[-20:]
  xa, xb = to_bits(a, dt), to_bits(b, dt)
  va, vb = values(xa, dt), values(xb, dt)
  cmps = [Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ]
  got = run_outs(dev, [dtypes.bool] * 3 + [dt], lambda x, y: [x.alu(op, y) for op in cmps] + [(x < y).where(x, y)], (xa, dt), (xb, dt))
  for g, op, ref in zip(got, cmps, (np.less, np.not_equal, np.equal)): np.testing.assert_array_equal(g, ref(va, vb), err_msg=op.name)
  assert_same_float(got[3], np.where(va < vb, xa, xb), dt, "WHERE")

# ***** transcendentals on the renderers that have them (C: libm builtins, PYTHON: math) *****
TRANS = {Ops.EXP2: np.exp2, Ops.LOG2: np.log2, Ops.SIN: np.sin}

def trans_inputs(op: Ops, dt: DType) -> list[float]:
  mbits, emin, fmax = FMT[dt]
  emax, rng = math.frexp(fmax)[1], np.random.default_rng(30)
  specials = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, math.ldexp(1.0, emin - mbits), math.ldexp(1.0, emin)]
  if op is Ops.EXP2: xs = rng.uniform(emin - mbits - 2, emax - 1, N) + [0.0] * N  # denormal results, underflow to 0; no overflow
  elif op is Ops.LOG2: xs = np.ldexp(rng.uniform(1, 2, N), rng.integers(emin - mbits, emax, N))
  else: xs = np.concatenate([rng.uniform(-10, 10, N // 2), np.ldexp(rng.uniform(-2, 2, N // 2), rng.integers(emin - mbits, emax, N // 2))])
  return specials + [float(emax + 1), -float(emax)] * (op is Ops.EXP2) + [round_exact(float(x), dt) for x in xs[:N - len(specials) - 2]]

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("op", list(TRANS), ids=lambda o: o.name)
def test_transcendental_native(op: Ops, dt: DType, dev: str):
  """Against numpy in long double (~11 more bits than float64): CPU calls libm (within 1 ulp); PYTHON has no transcendentals and
  runs tg.codegen.lower.transcendental's polynomials (within 1.5 ulp, as tests/codegen/test_transcendental.py states).
  Specials exact, the sign of zero too."""
  x = to_bits(trans_inputs(op, dt), dt)
  got = run(dev, dt, lambda v: v.alu(op), (x, dt))
  with np.errstate(all="ignore"): exact = TRANS[op](values(x, dt).astype(np.longdouble))
  mbits, _, fmax = FMT[dt]
  exact[exact > fmax * (1 + 2.0**-(mbits + 1))] = np.inf  # rounds to inf
  err = ulps(got, exact, dt)
  assert err.max() <= (1.0 if dev == "CPU" else 1.5), f"{op.name} {dt}: {err.max()} ulp at {values(x, dt)[np.argmax(err)]}"
  zero = exact == 0
  np.testing.assert_array_equal(np.signbit(values(got, dt)[zero]), np.signbit(exact[zero]), err_msg="sign of zero")

# ***** casts between every pair of dtypes *****
ALL = [dtypes.bool, *INTS, *FP8, *FLOATS]

def cast_inputs(dt: DType) -> list:
  """Values of dt that are in range of many targets, ties and double-rounding traps for the float targets."""
  if dt == dtypes.bool: return [True, False] * (N // 2)
  if dt in FP8: return values(np.arange(256, dtype=np.uint8), dt).tolist()
  if dt in INTS:
    info = np.iinfo(NP[dt])
    traps = [2049, 2051, 4097, 257, 259, 65519, 65520, 448, 464, 57344, 61439, 61440, 2**24 + 1, 2**24 + 3, 2**30 + 2**22 + 1,
             2**53 + 1, 2**53 + 3, 2**60 + 2**36 + 1, 2**62 + 2**54 + 1, 2**63 - 1, 2**64 - 1, 2**64 - 2**39, 2**64 - 2**39 - 1]
    traps += [-t for t in traps]
    vals = [int(x) for x in ints(dt, 40)] + [t for t in traps if info.min <= t <= info.max]
    return vals + [int(x) for x in np.random.default_rng(41).integers(max(info.min, -300), min(info.max, 300), len(vals) // 2, endpoint=True)]
  traps = [1 + 2**-8 + 2**-40, 1 + 2**-4 + 2**-40, 1 + 2**-11 + 2**-40, 1 + 2**-24 + 2**-60, 127.9, -128.9, 255.5, -0.9, 2**31 - 1.0,
           -2.0**31, 2**32 - 2048.0, 2.0**63, -2.0**63, 2**64 - 4096.0, 65519.0, 65520.0, 464.0, 61440.0, float.fromhex("0x1.fefp127")]
  vals = [round_exact(t, dt) for t in traps] + floats(dt, 42)
  return vals + [round_exact(float(x), dt) for x in np.random.default_rng(43).uniform(-300, 300, N // 2)]

def cast_ref(v, frm: DType, to: DType):
  """(wanted value, whether it is defined): float -> int is undefined where the truncated value is out of range."""
  if to == dtypes.bool: return bool(v), True
  if to in INTS:
    if frm in INTS or frm == dtypes.bool: return int(v), True  # wrapped below
    if not math.isfinite(v): return 0, False
    t, info = math.trunc(v), np.iinfo(NP[to])
    return t, info.min <= t <= info.max
  return round_exact(int(v) if isinstance(v, bool) else v, to), True

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("frm", ALL, ids=lambda d: d.name)
def test_cast(frm: DType, dev: str):
  """One kernel casting dt to every other dtype: ints wrap, floats round to nearest even, float -> int truncates, x -> bool
  is x != 0 (NaN too)."""
  vals = cast_inputs(frm)
  x = np.array(vals, np.bool_) if frm == dtypes.bool else np.array(vals, object).astype(NP[frm]) if frm in INTS else to_bits(vals, frm)
  tos = [t for t in ALL if t != frm]
  got = run_outs(dev, tos, lambda v: [v.cast(t) for t in tos], (x, frm))
  for g, to in zip(got, tos):
    want, ok = zip(*[cast_ref(v, frm, to) for v in vals])
    ok = np.array(ok)
    if to == dtypes.bool: np.testing.assert_array_equal(g, np.array(want), err_msg=f"{frm} -> {to}")
    elif to in INTS: np.testing.assert_array_equal(g[ok], wrap(np.array(want, object)[ok], to), err_msg=f"{frm} -> {to}")
    else: assert_same_float(g, to_bits(want, to), to, f"{frm} ->")

FP8_HAND = {  # (value, bits) by hand from the OCP 8-bit float spec; ties go to even; fp8 saturates finite overflow (tg's choice)
  dtypes.fp8e4m3: [(1.0, 0x38), (-2.0, 0xC0), (0.5, 0x30), (448.0, 0x7E), (464.0, 0x7E), (1e9, 0x7E), (math.inf, 0x7E), (-math.inf, 0xFE),
                   (2**-6, 0x08), (2**-9, 0x01), (2**-10, 0x00), (1.5 * 2**-9, 0x02), (1.0625, 0x38), (1.1875, 0x3A), (-0.0, 0x80)],
  dtypes.fp8e5m2: [(1.0, 0x3C), (-2.0, 0xC0), (57344.0, 0x7B), (61440.0, 0x7B), (1e9, 0x7B), (math.inf, 0x7C), (-math.inf, 0xFC),
                   (2**-14, 0x04), (2**-16, 0x01), (2**-17, 0x00), (1.125, 0x3C), (1.375, 0x3E), (-0.0, 0x80)],
  # fnuz: bias 8 (e4m3) and 16 (e5m2), every exponent finite, 0x80 the one NaN: +-inf is NaN, a zero is 0x00, overflow saturates
  dtypes.fp8e4m3fnuz: [(1.0, 0x40), (-2.0, 0xC8), (0.5, 0x38), (-1.5, 0xC4), (240.0, 0x7F), (248.0, 0x7F), (1e9, 0x7F), (-1e9, 0xFF),
                       (math.inf, 0x80), (-math.inf, 0x80), (2**-7, 0x08), (2**-10, 0x01), (2**-11, 0x00), (-2**-11, 0x00),
                       (1.5 * 2**-10, 0x02), (1.0625, 0x40), (1.1875, 0x42), (-0.0, 0x00)],
  dtypes.fp8e5m2fnuz: [(1.0, 0x40), (-2.0, 0xC4), (57344.0, 0x7F), (61440.0, 0x7F), (-1e9, 0xFF), (math.inf, 0x80), (-math.inf, 0x80),
                       (2**-15, 0x04), (2**-17, 0x01), (2**-18, 0x00), (-2**-18, 0x00), (1.125, 0x40), (1.375, 0x42), (-0.0, 0x00)]}
FP8_NAN = {dtypes.fp8e4m3: (0x7F, 0xFF), dtypes.fp8e5m2: (0x7E, 0xFE), dtypes.fp8e4m3fnuz: (0x80, 0x80), dtypes.fp8e5m2fnuz: (0x80, 0x80)}

FP8_DECODE = {dtypes.fp8e4m3: [(0x7E, 448.0), (0xFE, -448.0), (0x01, 2**-9), (0x08, 2**-6), (0x07, 7 * 2**-9), (0x39, 1.125), (0x80, -0.0)],
              dtypes.fp8e5m2: [(0x7B, 57344.0), (0x01, 2**-16), (0x04, 2**-14), (0x7C, math.inf), (0xFC, -math.inf), (0x3D, 1.25), (0x80, -0.0)],
              dtypes.fp8e4m3fnuz: [(0x7F, 240.0), (0xFF, -240.0), (0x01, 2**-10), (0x08, 2**-7), (0x07, 7 * 2**-10), (0x49, 2.25), (0x00, 0.0)],
              dtypes.fp8e5m2fnuz: [(0x7F, 57344.0), (0x01, 2**-17), (0x04, 2**-15), (0x7C, 32768.0), (0xFC, -32768.0), (0x45, 2.5),
                                   (0x00, 0.0)]}

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("dt", FP8, ids=lambda d: d.name)
def test_fp8_hand_values(dt: DType, dev: str):
  """float32 -> fp8 -> float32 against hand-computed OCP and fnuz encodings; NaN is 0x7f (e4m3) or 0x7e (e5m2) with its sign,
  0x80 (fnuz), and decodes to NaN."""
  vals, bits = zip(*FP8_HAND[dt])
  nan_bits = list(FP8_NAN[dt])
  assert [float_to_fp8(v, dt) for v in vals + (math.nan, -math.nan)] == list(bits) + nan_bits
  got = run(dev, dt, lambda v: v.cast(dt), (np.array(vals + (math.nan, -math.nan), np.float32), dtypes.float32))
  np.testing.assert_array_equal(got, list(bits) + nan_bits)
  dbits, dvals = zip(*FP8_DECODE[dt])
  want = np.array(dvals + (math.nan, math.nan), np.float32)
  got_py = np.array([fp8_to_float(b, dt) for b in dbits + FP8_NAN[dt]], np.float32)
  assert_same_float(got_py, want, dtypes.float32, "fp8_to_float")
  back = run(dev, dtypes.float32, lambda v: v.cast(dtypes.float32), (np.array(dbits + FP8_NAN[dt], np.uint8), dt))
  assert_same_float(back, want, dtypes.float32, f"{dt} ->")

# ***** tg.uop's float-conversion builders (the emulator's pseudocode and WMMA build these), run on CPU *****
def _f32_specials(rng: np.random.Generator) -> np.ndarray:
  tie = np.array([0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x00000001, 0x80400000, 0x7F800000, 0xFF800000], np.uint32).view(np.float32)
  return np.concatenate([tie, np.float32([0.0, -0.0, 1.0, -2.5]), rng.normal(0, 1e3, N - 11).astype(np.float32)])

def test_f32_to_bf16_bits_rounds_to_nearest_even() -> None:
  from tg.uop import f32_to_bf16_bits
  from tg.uop.dtype import float_to_bits
  x = _f32_specials(np.random.default_rng(5))
  got = run("CPU", dtypes.uint32, f32_to_bf16_bits, (x, dtypes.float32))
  assert [int(g) for g in got] == [float_to_bits(float(v), dtypes.bfloat16) for v in x]  # round_to_float_format's exact rounding
  assert got[0] == 0x3F80 and got[1] == 0x3F82  # 1 + 2^-8 ties down to even 0x3F80; 0x3F818000 ties up to 0x3F82
  nan = run("CPU", dtypes.uint32, f32_to_bf16_bits, (np.array([0x7F800001, 0xFFC00000] * (N // 2), np.uint32).view(np.float32), dtypes.float32))
  assert list(nan[:2]) == [0x7FC0, 0xFFC0]  # a signalling NaN comes back quiet, the sign kept

# dtype: (the overflow boundary, halfway above the largest finite value; whether that tie overflows (the largest code is odd);
# what an overflow and an infinity give without saturation), by hand
FP8_OVERFLOW = {dtypes.fp8e4m3: (464.0, False, 0x7F), dtypes.fp8e5m2: (61440.0, True, 0x7C), dtypes.fp8e4m3fnuz: (248.0, True, 0x80),
                dtypes.fp8e5m2fnuz: (61440.0, True, 0x80)}

@pytest.mark.parametrize("dt", FP8, ids=lambda d: d.name)
def test_fp8_builders_round_trip_and_overflow(dt: DType) -> None:
  """Every fp8 code decodes as floatconv_ref's; f32 -> fp8 rounds to nearest even as floatconv_ref's encoder, except that past
  the overflow boundary (hand-computed: 464 ties down to 448, 61440 and 248 tie up) the non-saturating conversion
  (saturate=False: the emulator's v_cvt_pk_fp8_f32, PyTorch's fnuz casts) gives NaN (E4M3, fnuz) or infinity (E5M2)
  where a cast saturates."""
  from tg.uop import f32_to_fp8_bits, fp8_bits_to_f32
  codes = np.arange(256, dtype=np.uint32)
  dec = run("CPU", dtypes.float32, lambda c: fp8_bits_to_f32(c, dt), (codes, dtypes.uint32))
  want = values(codes.astype(np.uint8), dt).astype(np.float32)
  np.testing.assert_array_equal(np.isnan(dec), np.isnan(want))
  np.testing.assert_array_equal(dec[~np.isnan(want)], want[~np.isnan(want)])
  boundary, tie_over, over = FP8_OVERFLOW[dt]
  edge = np.float32([boundary, -boundary, np.nextafter(np.float32(boundary), 0), np.nan])
  x = np.concatenate([_f32_specials(np.random.default_rng(6))[:N - 4] / 16, edge])
  got = run("CPU", dtypes.uint32, lambda v: f32_to_fp8_bits(v, dt, saturate=False), (x, dtypes.float32))
  for v, g in zip(x, got):
    if math.isnan(v): assert g == FP8_NAN[dt][0]
    elif abs(v) > boundary or (abs(v) == boundary and tie_over): assert g == over | (0x80 if v < 0 else 0), v
    else: assert g == encode(int(v.view(np.uint32)), FP8_REF[dt]), v
