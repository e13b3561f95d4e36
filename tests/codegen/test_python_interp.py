"""The PYTHON device's interpreter on hand-built linear programs (the contract in tg.codegen.program), checked against numpy."""
import math, struct
import numpy as np
import pytest
from tg.uop import AddrSpace, AxisType, DType, Ops, UOp, dtypes, program_spec, truncate, type_verify
from tg.codegen.device import Buffer, Device
from tg.codegen.devices.python import PythonRenderer

f32, i32, idx_t = dtypes.float32, dtypes.int32, dtypes.index

def c(v: object, dt: DType = idx_t) -> UOp: return UOp.const(dt, v)
def param(slot: int, dt: DType, n: int) -> UOp: return UOp(Ops.PARAM, dt.ptr(n), arg=slot)
def reg(dt: DType, n: int, i: int = 0) -> UOp: return UOp(Ops.DEFINE_REG, dt.ptr(n, AddrSpace.REG), arg=i)
def local(dt: DType, n: int, i: int = 0) -> UOp: return UOp(Ops.DEFINE_LOCAL, dt.ptr(n, AddrSpace.LOCAL), arg=i)
def index(buf: UOp, i: UOp | int, gate: UOp | None = None) -> UOp:
  return UOp(Ops.INDEX, buf.dtype, (buf, i if isinstance(i, UOp) else c(i)) + ((gate,) if gate is not None else ()))
def load(addr: UOp, alt: UOp | None = None) -> UOp:
  return UOp(Ops.LOAD, addr.dtype.base, (addr,) + ((alt,) if alt is not None else ()))
def store(addr: UOp, val: UOp) -> UOp: return UOp(Ops.STORE, dtypes.void, (addr, val))
def vec_addr(addr: UOp, n: int) -> UOp: return UOp(Ops.CAST, addr.dtype.base.vec(n).ptr(addr.dtype.size), (addr,))
def end(body: UOp, rng: UOp) -> UOp: return UOp(Ops.END, dtypes.void, (body, rng))

def linear(*uops: UOp) -> list[UOp]:
  """The listed UOps in this order, each preceded by whichever of its sources aren't listed yet (the test writes the order
  that matters: what is inside a loop, what comes after it)."""
  out: dict[UOp, None] = {}
  for u in uops: out.update((x, None) for x in u.toposort() if x not in out)
  ret = list(out)
  type_verify(ret, program_spec)
  return ret

def run(uops: list[UOp], *arrays: np.ndarray, dts: tuple[DType, ...] = (), vals: tuple[int, ...] = (),
        global_size: tuple[int, int, int] = (1, 1, 1), local_size: tuple[int, int, int] = (1, 1, 1)) -> list[np.ndarray]:
  """Render, compile and run on PYTHON; the buffers' contents afterwards, as arrays of the inputs' numpy dtypes."""
  dev = Device["PYTHON"]
  prg = dev.runtime("test", dev.compiler.compile_cached(dev.renderer.render(uops)))
  bufs = [Buffer("PYTHON", a.size, dt).copyin(memoryview(np.ascontiguousarray(a)).cast("B"))
          for a, dt in zip(arrays, dts or [{np.dtype(d.fmt): d for d in dtypes.fields().values() if d.fmt}[a.dtype] for a in arrays])]
  prg(*[b._buf for b in bufs], global_size=global_size, local_size=local_size, vals=vals)
  return [np.frombuffer(b.copyout(memoryview(bytearray(b.nbytes))), dtype=a.dtype) for a, b in zip(arrays, bufs)]

def test_renderer_capabilities():
  r = Device["PYTHON"].renderer
  assert isinstance(r, PythonRenderer) and r.has_local and r.has_shared and r.vector_widths == (1, 2, 4, 8, 16)
  assert r.global_max == (2**31,) * 3 and r.local_max == (1024,) * 3 and r.shared_max == 65536

def test_loop_sum_into_register():
  n = 37
  a, out, acc = param(1, f32, n), param(0, f32, 1), reg(f32, 1)
  r = UOp.range(n, 0, AxisType.REDUCE)
  acc0 = index(acc, 0)
  update = store(acc0, load(acc0) + load(index(a, r)))
  closed = end(update, r)
  final = store(index(out, 0), load(index(acc.after(closed), 0)))
  prog = linear(store(acc0, c(0.0, f32)), r, update, closed, final)
  x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
  want = np.float32(0)
  for v in x: want = np.float32(want + v)  # the same order of float32 roundings
  got, _ = run(prog, np.zeros(1, np.float32), x)
  assert got[0] == want

def test_zero_trip_loop_and_nested_ranges():
  # out[i*3+j] = i*10+j for a 0-trip middle loop that must skip its body entirely
  out = param(0, i32, 6)
  ri, rj, rz = UOp.range(2, 0), UOp.range(3, 1), UOp.range(0, 2)
  st = store(index(out, ri * 3 + rj), (ri * 10 + rj).cast(i32))
  bad = store(index(out, 0), c(-1, i32))
  prog = linear(ri, rj, st, end(st, rj), rz, bad, end(bad, rz), end(end(st, rj), ri))
  got, = run(prog, np.zeros(6, np.int32))
  np.testing.assert_array_equal(got, [0, 1, 2, 10, 11, 12])

def test_gated_load_and_store():
  # out[i] = (i < 5 ? a[i+3] : 7) for i < 8, and only even i are written
  a, out = param(1, f32, 8), param(0, f32, 8)
  r = UOp.range(8, 0, AxisType.GLOBAL)
  val = load(index(a, r + 3, r < 5), c(7.0, f32))
  st = store(index(out, r, (r % 2).eq(0)), val)
  x = np.arange(8, dtype=np.float32) * 1.5
  got, _ = run(linear(r, st, end(st, r)), np.full(8, -1, np.float32), x)
  want = np.where(np.arange(8) < 5, x[(np.arange(8) + 3) % 8], 7.0)
  np.testing.assert_array_equal(got, np.where(np.arange(8) % 2 == 0, want, -1))

def test_vector_load_alu_store():
  # out[4i:4i+4] = a[4i:4i+4] * (1,2,3,4) + gep-reversed a, through float4 pointers
  a, out = param(1, f32, 16), param(0, f32, 16)
  r = UOp.range(4, 0, AxisType.GLOBAL)
  v = load(vec_addr(index(a, r * 4), 4))
  w = v * UOp.const(f32.vec(4), (1.0, 2.0, 3.0, 4.0)) + v.gep((3, 2, 1, 0))
  st = store(vec_addr(index(out, r * 4), 4), w)
  x = np.arange(16, dtype=np.float32) + 0.25
  got, _ = run(linear(r, st, end(st, r)), np.zeros(16, np.float32), x)
  xs = x.reshape(4, 4)
  np.testing.assert_array_equal(got.reshape(4, 4), xs * np.float32([1, 2, 3, 4]) + xs[:, ::-1])

def test_vectorize_and_gep_scalar():
  out = param(0, i32, 3)
  v = UOp.vectorize(c(5, i32), c(6, i32), c(7, i32))
  sts = [store(index(out, i), v.gep(2 - i)) for i in range(3)]
  got, = run(linear(*sts), np.zeros(3, np.int32))
  np.testing.assert_array_equal(got, [7, 6, 5])

@pytest.mark.parametrize("dt,npdt", [(dtypes.int8, np.int8), (dtypes.uint8, np.uint8), (dtypes.int16, np.int16),
                                     (dtypes.uint32, np.uint32), (dtypes.int64, np.int64)])
def test_int_wraparound(dt: DType, npdt: type):
  # out[i] = a[i] * 3 + 100, and a[i] << 3, in the narrow type: numpy wraps the same way
  a, out, out2 = param(2, dt, 6), param(0, dt, 6), param(1, dt, 6)
  r = UOp.range(6, 0)
  x = load(index(a, r))
  s1, s2 = store(index(out, r), x * c(3, dt) + c(100, dt)), store(index(out2, r), x << c(3, dt))
  info = np.iinfo(npdt)
  data = np.array([info.min, info.max, 0, 1, info.max // 2 + 7, info.min + 3], dtype=npdt)
  got, got2, _ = run(linear(r, s1, s2, end(UOp.group(s1, s2), r)), np.zeros(6, npdt), np.zeros(6, npdt), data)
  with np.errstate(over="ignore"):
    np.testing.assert_array_equal(got, data * npdt(3) + npdt(100))
    np.testing.assert_array_equal(got2, data << npdt(3))

def test_int_division_truncates_and_by_zero_is_safe():
  a, b, q, m = param(2, i32, 4), param(3, i32, 4), param(0, i32, 4), param(1, i32, 4)
  r = UOp.range(4, 0)
  x, y = load(index(a, r)), load(index(b, r))
  s1, s2 = store(index(q, r), x // y), store(index(m, r), x % y)
  xs, ys = np.array([7, -7, 7, 5], np.int32), np.array([2, 2, -2, 0], np.int32)
  gq, gm, _, _ = run(linear(r, s1, s2, end(UOp.group(s1, s2), r)), np.zeros(4, np.int32), np.zeros(4, np.int32), xs, ys)
  np.testing.assert_array_equal(gq[:3], np.trunc(xs[:3] / ys[:3]).astype(np.int32))  # C truncates toward zero
  np.testing.assert_array_equal(gm[:3], np.fmod(xs[:3], ys[:3]))
  assert gq[3] == 0 and gm[3] == 0  # UB in C: the interpreter follows exec_alu and doesn't crash

def test_half_rounding():
  # (a + b) in half rounds every step: 2048 + 1 is 2048 in float16 (ties to even), 1/3 rounds to the nearest half
  a, b, out = param(1, dtypes.half, 3), param(2, dtypes.half, 3), param(0, dtypes.half, 3)
  r = UOp.range(3, 0)
  st = store(index(out, r), load(index(a, r)) + load(index(b, r)) * c(3.0, dtypes.half))
  xa, xb = np.array([2048, 0.1, 65000], np.float16), np.array([1 / 3, 1 / 3, 1000], np.float16)
  got, _, _ = run(linear(r, st, end(st, r)), np.zeros(3, np.float16), xa, xb)
  with np.errstate(over="ignore"): want = xa + xb * np.float16(3)
  np.testing.assert_array_equal(got, want)
  assert np.isinf(got[2])

# by hand: 2.0 = 1.0*2^1 and -5.0 = -1.25*2^2, exponent bias 7 (e4m3), 15 (e5m2), 8 (e4m3fnuz), 16 (e5m2fnuz)
FP8_TWO_MINUS_FIVE = {dtypes.fp8e4m3: [0x40, 0x80 | 9 << 3 | 2], dtypes.fp8e5m2: [0x40, 0x80 | 17 << 2 | 1],
                      dtypes.fp8e4m3fnuz: [9 << 3, 0x80 | 10 << 3 | 2], dtypes.fp8e5m2fnuz: [17 << 2, 0x80 | 18 << 2 | 1]}

@pytest.mark.parametrize("dt", [dtypes.bfloat16, *FP8_TWO_MINUS_FIVE])
def test_narrow_float_memory(dt: DType):
  # float32 -> dt, doubled in dt, stored as dt's bit pattern; a second loop reads it back to float32
  a, mid, out = param(2, f32, 4), param(1, dt, 4), param(0, f32, 4)
  r, r2 = UOp.range(4, 0), UOp.range(4, 1)
  s1 = store(index(mid, r), load(index(a, r)).cast(dt) * c(2.0, dt))
  closed = end(s1, r)
  s2 = store(index(out, r2), load(index(mid.after(closed), r2)).cast(f32))
  x = np.array([1.0, -2.5, 0.3, 100.7], np.float32)
  bits_np = np.uint16 if dt.itemsize == 2 else np.uint8
  got, bits, _ = run(linear(r, s1, closed, r2, s2, end(s2, r2)), np.zeros(4, np.float32), np.zeros(4, bits_np), x, dts=(f32, dt, f32))
  want = [truncate[dt](truncate[dt](float(v)) * 2.0) for v in x]
  np.testing.assert_array_equal(got, np.array(want, np.float32))
  np.testing.assert_array_equal(got[:2], [2.0, -5.0])
  if dt == dtypes.bfloat16:  # bfloat16 is the top half of a float32, and these values are exact in it
    np.testing.assert_array_equal(bits, (got.view(np.uint32) >> 16).astype(np.uint16))
  else: assert list(bits[:2]) == FP8_TWO_MINUS_FIVE[dt]

def test_casts_and_bitcast():
  a, o_int, o_bits, o_u8 = param(3, f32, 4), param(0, i32, 4), param(1, dtypes.uint32, 4), param(2, dtypes.uint8, 4)
  r = UOp.range(4, 0)
  x = load(index(a, r))
  sts = [store(index(o_int, r), x.cast(i32)), store(index(o_bits, r), x.bitcast(dtypes.uint32)),
         store(index(o_u8, r), x.cast(i32).cast(dtypes.uint8))]
  xs = np.array([-2.7, 3.9, 1e3, -0.0], np.float32)
  gi, gb, gu, _ = run(linear(r, *sts, end(UOp.group(*sts), r)), np.zeros(4, np.int32), np.zeros(4, np.uint32), np.zeros(4, np.uint8), xs)
  np.testing.assert_array_equal(gi, xs.astype(np.int32))
  np.testing.assert_array_equal(gb, xs.view(np.uint32))
  np.testing.assert_array_equal(gu, xs.astype(np.int32).astype(np.uint8))

def test_if_endif():
  # if (i >= 2) out[i] = i * 2; else nothing
  out = param(0, i32, 4)
  r = UOp.range(4, 0)
  cond = UOp(Ops.IF, dtypes.void, ((r < 2).logical_not(),))
  st = store(index(out, r), (r * 2).cast(i32))
  endif = UOp(Ops.ENDIF, dtypes.void, (cond,))
  got, = run(linear(r, cond, st, endif, end(endif, r)), np.full(4, -1, np.int32))
  np.testing.assert_array_equal(got, [-1, -1, 4, 6])

def test_divergent_if_in_a_workgroup():
  # 4 threads in one group: only odd lanes enter the IF and store; a BARRIER after it is reached by all
  out = param(0, i32, 4)
  l = UOp.special(4, "lidx0")
  cond = UOp(Ops.IF, dtypes.void, ((l % 2).eq(1),))
  st = store(index(out, l), (l * 5).cast(i32))
  endif = UOp(Ops.ENDIF, dtypes.void, (cond,))
  got, = run(linear(cond, st, endif, UOp(Ops.BARRIER, dtypes.void, (endif,))), np.full(4, -1, np.int32), local_size=(4, 1, 1))
  np.testing.assert_array_equal(got, [-1, 5, -1, 15])

def test_define_var():
  # out[i] = i * k for i < n: variables come in name order (k before n)
  out = param(0, i32, 8)
  n, k = UOp.variable("n", 1, 8), UOp.variable("k", 0, 100)
  r = UOp.range(n, 0)
  st = store(index(out, r), (r * k).cast(i32))
  got, = run(linear(r, st, end(st, r)), np.zeros(8, np.int32), vals=(5, 3))
  np.testing.assert_array_equal(got, [0, 5, 10, 0, 0, 0, 0, 0])

def test_workgroup_exchange_through_local_memory():
  # 3 groups of 2 threads: each thread writes its value to shared memory, then (after a BARRIER) reads its neighbour's
  a, out, shared = param(1, f32, 6), param(0, f32, 6), local(f32, 2)
  g, l = UOp.special(3, "gidx0"), UOp.special(2, "lidx0")
  gi = g * 2 + l
  st = store(index(shared, l), load(index(a, gi)) * c(10.0, f32))
  bar = UOp(Ops.BARRIER, dtypes.void, (st,))
  swapped = load(index(shared.after(bar), c(1) - l))
  fin = store(index(out, gi), swapped + load(index(a, gi)))
  x = np.arange(6, dtype=np.float32)
  got, _ = run(linear(st, bar, fin), np.zeros(6, np.float32), x, global_size=(3, 1, 1), local_size=(2, 1, 1))
  np.testing.assert_array_equal(got, x.reshape(3, 2)[:, ::-1].reshape(6) * 10 + x)

def test_2d_launch_ids():
  # gidx1/lidx1 are the second dimension; idx0 is the global thread id of dimension 0
  out = param(0, i32, 4 * 6)
  gx, gy, lx, ly = UOp.special(2, "gidx0"), UOp.special(3, "gidx1"), UOp.special(2, "lidx0"), UOp.special(2, "lidx1")
  row, col = gy * 2 + ly, gx * 2 + lx
  st = store(index(out, row * 4 + col), (row * 100 + UOp.special(4, "idx0")).cast(i32))
  got, = run(linear(st), np.zeros(24, np.int32), global_size=(2, 3, 1), local_size=(2, 2, 1))
  rows, cols = np.meshgrid(np.arange(6), np.arange(4), indexing="ij")
  np.testing.assert_array_equal(got.reshape(6, 4), rows * 100 + cols)

def test_float_special_values():
  a, out = param(1, f32, 4), param(0, f32, 4)
  r = UOp.range(4, 0)
  x = load(index(a, r))
  st = store(index(out, r), (x / (x - x)).maximum(x.sqrt()))
  xs = np.array([1.0, 0.0, -4.0, 4.0], np.float32)
  got, _ = run(linear(r, st, end(st, r)), np.zeros(4, np.float32), xs)
  # 1/0=inf, 0/0=nan, -4/0=-inf and sqrt(-4)=nan, 4/0=inf: MAX propagates NaN
  assert got[0] == math.inf and math.isnan(got[1]) and math.isnan(got[2]) and got[3] == math.inf

def test_out_of_bounds_is_an_error():
  out = param(0, i32, 2)
  with pytest.raises(IndexError, match="out of bounds"): run(linear(store(index(out, 2), c(1, i32))), np.zeros(2, np.int32))

def test_struct_layout_matches_numpy():
  # sanity of the memory path itself: a float64 copy kernel moves exact bits
  a, out = param(1, dtypes.float64, 3), param(0, dtypes.float64, 3)
  r = UOp.range(3, 0)
  st = store(index(out, r), load(index(a, r)))
  xs = np.array([math.pi, -1e-310, 1e308])
  got, _ = run(linear(r, st, end(st, r)), np.zeros(3), xs)
  assert struct.pack("<3d", *got) == xs.tobytes()
