"""The matmul tile comes from the CPU's vector registers (tg.codegen.devices.host, tg.codegen.opt.heuristic.matmul_tiles):
each ISA given as data picks a tile that fits its register file, and every tile gives numpy's product, bit for bit the
same as the others (each output is still summed in k order)."""
import pathlib
import numpy as np
import pytest
from hypothesis import given, strategies as st
from tg.uop import UOp, Ops, AxisType, KernelInfo, dtypes
from tg.codegen.pipeline import get_program, CompiledRunner
from tg.codegen.device import Buffer
from tg.codegen.opt.kernel import Opt, OptOps
import tg.codegen.opt.heuristic as heuristic
from tg.codegen.opt.heuristic import matmul_tiles, DEFAULT_TILES, MATVEC_ROWS, MATVEC_COLS, VECMAT_LANES, VECMAT_ROWS
from tg.codegen.renderer import VectorISA
from tg.codegen.renderer.cstyle import CRenderer
from tg.codegen.devices.host import ISAS, BASELINE, isa_from_macros, host_isa

ISA = dict((isa.name, isa) for _, isa in ISAS)

# the first lines of `clang -march=native -dM -E` on each kind of host (trimmed to the SIMD macros)
MACROS = {"avx512": "#define __AVX2__ 1\n#define __AVX512F__ 1\n#define __AVX__ 1\n#define __FMA__ 1\n#define __SSE2__ 1",
          "avx2": "#define __AVX2__ 1\n#define __AVX__ 1\n#define __FMA__ 1\n#define __SSE2__ 1\n#define __SSE4_2__ 1",
          "neon": "#define __ARM_ARCH 8\n#define __ARM_NEON 1\n#define __ARM_NEON__ 1\n#define __aarch64__ 1",
          "sse2": "#define __SSE2__ 1\n#define __SSE__ 1\n#define __x86_64__ 1",
          "scalar": "#define __riscv 1\n#define __riscv_xlen 64"}

@pytest.mark.parametrize("name", MACROS)
def test_isa_from_the_compilers_macros(name):
  assert isa_from_macros(MACROS[name]).name == name

def test_host_isa_agrees_with_proc_cpuinfo():
  """The compiler's view (-march=native) against the kernel's list of CPU flags, where there is one."""
  info = pathlib.Path("/proc/cpuinfo")
  text = info.read_text() if info.exists() else ""
  flags = next((set(line.split(":", 1)[1].split()) for line in text.splitlines() if line.startswith("flags")), None)
  if flags is None: pytest.skip("no x86 /proc/cpuinfo flags on this host")
  want = "avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else "avx" if "avx" in flags else "sse2"
  assert host_isa().name == want

# hand-computed: rows*v accumulators + v for a row of B + 1 broadcast <= 3/4 of the registers and r + v loads <= 3/4 of
# the r*v FMAs; of those the most accumulators, then the most rows (32 registers: 8 x 2 vectors, 19 of them; 16: 4 x 2)
@pytest.mark.parametrize("name,itemsize,tile", [("avx2", 4, (4, 16)), ("avx2", 8, (4, 8)), ("avx512", 4, (8, 32)),
                                                ("neon", 4, (8, 8)), ("sse2", 4, (4, 8))])
def test_best_tile_per_isa(name, itemsize, tile):
  assert matmul_tiles(ISA[name], itemsize)[0] == tile

# without panel_first (a conv's tile): the most FMAs per load, then the fewest registers
@pytest.mark.parametrize("name,tile", [("avx2", (4, 16)), ("avx512", (4, 64)), ("neon", (4, 16))])
def test_conv_tile_per_isa(name, tile):
  assert matmul_tiles(ISA[name], 4, panel_first=False)[0] == tile

@given(vector_bytes=st.sampled_from([16, 32, 64]), registers=st.integers(4, 64), itemsize=st.sampled_from([2, 4, 8]))
def test_every_tile_fits_the_register_file(vector_bytes, registers, itemsize):
  isa = VectorISA("x", vector_bytes, registers)
  lanes = vector_bytes // itemsize
  *tiles, last = matmul_tiles(isa, itemsize)
  assert last == (4, 4)  # the last resort for narrow matrices
  for rows, cols in tiles:
    assert cols % lanes == 0 and rows * (cols // lanes) + cols // lanes + 1 <= registers, (rows, cols)
  assert matmul_tiles(None, itemsize) == DEFAULT_TILES

def matmul(m: int, k: int, n: int) -> UOp:
  C, A, B = UOp.param(0, dtypes.float, (m, n)), UOp.param(1, dtypes.float, (m, k)), UOp.param(2, dtypes.float, (k, n))
  i, j, r = UOp.range(m, 0), UOp.range(n, 1), UOp.range(k, 2, AxisType.REDUCE)
  return C[i, j].store((A[i, r] * B[r, j]).reduce(r, arg=Ops.ADD)).end(i, j).sink(arg=KernelInfo(name="mm"))

def execute(spec, out_shape: tuple[int, ...], *inputs: np.ndarray) -> np.ndarray:
  """Run a float32 kernel on the CPU: PARAM 0 the output, then the inputs."""
  bufs = [Buffer("CPU", int(np.prod(s)), dtypes.float).allocate() for s in (out_shape, *(x.shape for x in inputs))]
  for buf, x in zip(bufs[1:], inputs): buf.copyin(memoryview(np.ascontiguousarray(x)).cast("B"))
  CompiledRunner(spec)(bufs, {}, wait=True)
  out = np.empty(out_shape, np.float32)
  bufs[0].copyout(memoryview(out).cast("B"))
  return out

def run(ren: CRenderer, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, tuple[Opt, ...]]:
  spec = get_program(matmul(a.shape[0], a.shape[1], b.shape[1]), ren)
  return execute(spec, (a.shape[0], b.shape[1]), a, b), spec.applied_opts

def test_each_isa_tile_runs_and_matches_numpy():
  """The heuristics with each ISA given (not the host's) pick its tile and the column tiles outermost; the host runs the code
  of them all (only the speed differs) and each gives numpy's product, bit for bit the same as the model-free tiles."""
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((64, 48), dtype=np.float32), rng.standard_normal((48, 256), dtype=np.float32)
  want = a.astype(np.float64) @ b.astype(np.float64)
  plain, opts = run(CRenderer(), a, b)  # no ISA: the default tiles, no SWAP
  assert opts == (Opt(OptOps.UPCAST, 0, 8), Opt(OptOps.UPCAST, 1, 16))
  np.testing.assert_allclose(plain, want, rtol=1e-4, atol=1e-4)
  for _, isa in ISAS + (("", BASELINE),):
    got, opts = run(CRenderer(isa=lambda isa=isa: isa), a, b)
    ti, tj = matmul_tiles(isa, 4)[0]
    assert opts == (Opt(OptOps.UPCAST, 0, ti), Opt(OptOps.UPCAST, 1, tj), Opt(OptOps.SWAP, 0, 1)), isa.name
    np.testing.assert_array_equal(got, plain, err_msg=isa.name)

def test_few_column_tiles_stay_inside():
  """Fewer than MIN_PANELS column tiles: no SWAP (the cores split the row tiles instead)."""
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((256, 32), dtype=np.float32), rng.standard_normal((32, 32), dtype=np.float32)
  got, opts = run(CRenderer(isa=lambda: ISA["avx2"]), a, b)
  assert opts == (Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.UPCAST, 1, 16))
  np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)

def test_a_tall_a_goes_in_blocks_of_rows_outside_the_panels():
  """A tall A with a B that fits L2: blocks of rows outermost (BLOCK, then SWAP), each block's tiles inside the panels, the
  same product bit for bit; an A of few blocks (one per core) and a B past ROW_BLOCK_B_BYTES keep the panels outermost."""
  rng = np.random.default_rng(4)
  a, b = rng.standard_normal((1024, 64), dtype=np.float32), rng.standard_normal((64, 128), dtype=np.float32)
  isa = ISA["avx512"]
  got, opts = run(CRenderer(isa=lambda: isa), a, b)
  ti, tj = matmul_tiles(isa, 4)[0]
  assert opts == (Opt(OptOps.UPCAST, 0, ti), Opt(OptOps.UPCAST, 1, tj), Opt(OptOps.SWAP, 0, 1),
                  Opt(OptOps.BLOCK, 1, 256 // ti), Opt(OptOps.SWAP, 0, 1))
  np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
  plain, _ = run(CRenderer(), a, b)
  np.testing.assert_array_equal(got, plain)
  assert heuristic._row_block(512, 256, 1 << 16) is None and heuristic._row_block(1024, 256, heuristic.ROW_BLOCK_B_BYTES * 2) is None
  assert heuristic._row_block(1024, 1 << 12, 1 << 16) == 128  # a long row of A: blocks of 128 rows

def test_packed_copy_stores_whole_vectors():
  """B copied to panels [N/16][K][16] (what a matmul reads contiguously): lane 0's address is spelled (j*K + k)*16, the
  others (j*K + k)*16 + l; the devectorizer sees one base and stores 16 lanes at once (it stored 1+8+4+2+1)."""
  K, N = 8, 32
  out, b = UOp.param(0, dtypes.float, (N * K,)), UOp.param(1, dtypes.float, (K * N,))
  jo, k, lane = UOp.range(N // 16, 0), UOp.range(K, 1), UOp.range(16, 2)
  ast = out[(jo * K + k) * 16 + lane].store(b[k * N + jo * 16 + lane]).end(jo, k, lane)
  spec = get_program(ast.sink(arg=KernelInfo(name="pack", opts_to_apply=(Opt(OptOps.UPCAST, 2, 16),))), CRenderer())
  assert spec.src.count("*((tg_float32x16*)(data0+") == 1 and spec.src.count("*((tg_float32x16*)(data1+") == 1, spec.src
  x = np.random.default_rng(2).standard_normal((K, N), dtype=np.float32)
  got = execute(spec, (x.size,), x)
  np.testing.assert_array_equal(got, x.reshape(K, N // 16, 16).transpose(1, 0, 2).ravel())

def conv(b: int, ci: int, co: int, hw: int, channels_last: bool = False) -> tuple[UOp, tuple[tuple[int, ...], ...]]:
  """A 3x3 conv without padding: out[n, o, y, x] = sum over c, i, j of inp[n, c, y+i, x+j] * w[o, c, i, j]; channels_last:
  the weights as w[c, i, j, o] (what tg.tensor's conv2d copies them to)."""
  wshape = (ci, 3, 3, co) if channels_last else (co, ci, 3, 3)
  out, inp, w = UOp.param(0, dtypes.float, (b, co, hw, hw)), UOp.param(1, dtypes.float, (b, ci, hw + 2, hw + 2)), UOp.param(2, dtypes.float, wshape)
  n, o, y, x = (UOp.range(s, i) for i, s in enumerate((b, co, hw, hw)))
  c, i, j = UOp.range(ci, 4, AxisType.REDUCE), UOp.range(3, 5, AxisType.REDUCE), UOp.range(3, 6, AxisType.REDUCE)
  wv = w[c, i, j, o] if channels_last else w[o, c, i, j]
  ast = out[n, o, y, x].store((inp[n, c, y + i, x + j] * wv).reduce(c, i, j, arg=Ops.ADD)).end(n, o, y, x)
  return ast.sink(arg=KernelInfo(name="conv")), ((b, co, hw, hw), (b, ci, hw + 2, hw + 2), wshape)

def test_conv_tile_fits_each_isas_registers():
  """The conv's output-channel x row tile: its accumulators fit the registers but four (AVX2 float32: 96 lanes, was 16 x 14 =
  224, spilled), the row gets whole vectors; the same numbers (numpy's) for every ISA's tile."""
  ast, shapes = conv(2, 16, 32, 16)
  rng = np.random.default_rng(3)
  inp, w = rng.standard_normal(shapes[1], dtype=np.float32), rng.standard_normal(shapes[2], dtype=np.float32)
  want = np.einsum("ncyxij,ocij->noyx", np.lib.stride_tricks.sliding_window_view(inp.astype(np.float64), (3, 3), (2, 3)), w)
  for _, isa in ISAS:
    spec = get_program(ast, CRenderer(isa=lambda isa=isa: isa))
    ups = [o for o in spec.applied_opts if o.op is OptOps.UPCAST]
    lanes = int(np.prod([o.arg for o in ups]))
    assert lanes <= (isa.registers - 4) * isa.lanes(4) and ups[-1].arg % min(isa.lanes(4), 16) == 0, (isa.name, spec.applied_opts)
    got = execute(spec, shapes[0], inp, w)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=isa.name)

@pytest.mark.parametrize("co,tile", [(16, (Opt(OptOps.UPCAST, 2, 14), Opt(OptOps.UPCAST, 1, 16))),
                                      (32, (Opt(OptOps.UPCAST, 3, 14), Opt(OptOps.UPCAST, 1, 32)))])
def test_conv_tile_rows(co, tile):
  """The direct conv's tile (_conv_tile) on AVX-512: rows any divisor of the output row (14 of 14, not 2: two FMAs in
  flight); with one register of channels (16) along y, where each input is a scalar broadcast (along x the 14 inputs
  came as a vector and a shuffle or two per lane: the small CNN's input gradient 2.3 vs 4.1 ms); with two along x.
  numpy's numbers either way."""
  ast, shapes = conv(2, 8, co, 14, channels_last=True)
  spec = get_program(ast, CRenderer(isa=lambda: ISA["avx512"]))
  assert spec.applied_opts == tile
  rng = np.random.default_rng(5)
  inp, w = rng.standard_normal(shapes[1], dtype=np.float32), rng.standard_normal(shapes[2], dtype=np.float32)
  want = np.einsum("ncyxij,cijo->noyx", np.lib.stride_tricks.sliding_window_view(inp.astype(np.float64), (3, 3), (2, 3)), w)
  np.testing.assert_allclose(execute(spec, shapes[0], inp, w), want, rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("isa,tile", [("avx512", (5, 4, 16)), ("avx2", (2, 4, 8))])
def test_dot_tile_of_a_linear_layer(isa, tile):
  """x @ W.T with W (10, 4608), as a Linear's forward: both operands contiguous along the reduce, 10 columns the matmul
  tile can't divide. Vectors of partial sums along the reduce (ACCUM) for a rows x columns tile of divisors whose
  accumulators and operand vectors fit the registers but two (hand-computed: AVX-512 4 x 5 = 20 + 9, AVX2 4 x 2 = 8 + 6,
  the most FMAs per load); numpy's product."""
  m, k, n = 128, 4608, 10
  C, A, W = UOp.param(0, dtypes.float, (m, n)), UOp.param(1, dtypes.float, (m, k)), UOp.param(2, dtypes.float, (n, k))
  i, j, r = UOp.range(m, 0), UOp.range(n, 1), UOp.range(k, 2, AxisType.REDUCE)
  ast = C[i, j].store((A[i, r] * W[j, r]).reduce(r, arg=Ops.ADD)).end(i, j).sink(arg=KernelInfo(name="linear"))
  spec = get_program(ast, CRenderer(isa=lambda: ISA[isa]))
  assert spec.applied_opts == (Opt(OptOps.UPCAST, 1, tile[0]), Opt(OptOps.UPCAST, 0, tile[1]), Opt(OptOps.ACCUM, 0, tile[2]))
  rng = np.random.default_rng(6)
  a, w = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((n, k), dtype=np.float32)
  np.testing.assert_allclose(execute(spec, (m, n), a, w), a.astype(np.float64) @ w.T, rtol=1e-4, atol=1e-3)

@pytest.mark.parametrize("rows_contiguous", [True, False])
@pytest.mark.parametrize("bias", [False, True])
def test_matvec_streams_the_matrix(rows_contiguous, bias):
  """A @ x (the reduce runs along A's rows) and x @ B (along B's columns), a bias added or not: the matrix is read along
  its contiguous axis (the reuse upcast read it 16 columns or 4 scalars at a time, 3x slower); numpy's product either
  way, and only on a CPU."""
  m, k = 64, 512
  out, mat, vec = UOp.param(0, dtypes.float, (m,)), UOp.param(1, dtypes.float, (m * k,)), UOp.param(2, dtypes.float, (k,))
  i, r = UOp.range(m, 0), UOp.range(k, 1, AxisType.REDUCE)
  val = (mat[i * k + r if rows_contiguous else r * m + i] * vec[r]).reduce(r, arg=Ops.ADD)
  ast = out[i].store(val + UOp.param(3, dtypes.float, (m,))[i] if bias else val).end(i).sink(arg=KernelInfo(name="mv"))
  a, x = np.random.default_rng(4).standard_normal((m, k) if rows_contiguous else (k, m), dtype=np.float32), np.ones(k, np.float32)
  x[::3] = -0.5
  b = np.arange(m, dtype=np.float32)
  spec = get_program(ast, CRenderer(isa=lambda: ISA["avx2"]))
  assert spec.applied_opts == (MATVEC_ROWS if rows_contiguous else MATVEC_COLS)[0]
  want = (a @ x.astype(np.float64) if rows_contiguous else x @ a.astype(np.float64)) + (b if bias else 0)
  np.testing.assert_allclose(execute(spec, (m,), a, x, *((b,) if bias else ())), want, rtol=1e-4, atol=1e-4)
  assert get_program(ast, CRenderer()).applied_opts not in (MATVEC_ROWS + MATVEC_COLS)  # no register file model: not a CPU

@pytest.mark.parametrize("n,bias", [(2 * VECMAT_LANES, False), (2 * VECMAT_LANES + 64, False), (2 * VECMAT_LANES, True)])
def test_big_vecmat_walks_column_strips(n, bias, monkeypatch):
  """x @ B (+ b) too big for the caches: 1024-column strips of accumulators down 8 rows a step when the columns come in
  1024s (else the plain column walk), a bias load outside the reduce no hindrance; numpy's product either way."""
  monkeypatch.setattr(heuristic, "VECMAT_MIN_BYTES", 1)
  k = 256
  out, mat, vec = UOp.param(0, dtypes.float, (n,)), UOp.param(1, dtypes.float, (k * n,)), UOp.param(2, dtypes.float, (k,))
  i, r = UOp.range(n, 0), UOp.range(k, 1, AxisType.REDUCE)
  val = (mat[r * n + i] * vec[r]).reduce(r, arg=Ops.ADD)
  ast = out[i].store(val + UOp.param(3, dtypes.float, (n,))[i] if bias else val).end(i).sink(arg=KernelInfo(name="vm"))
  rng = np.random.default_rng(5)
  a, x, b = rng.standard_normal((k, n), dtype=np.float32), rng.standard_normal(k, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
  spec = get_program(ast, CRenderer(isa=lambda: ISA["avx2"]))
  walk = (Opt(OptOps.UPCAST, 0, VECMAT_LANES), Opt(OptOps.UNROLL, 0, VECMAT_ROWS))
  assert spec.applied_opts == (walk if n % VECMAT_LANES == 0 else MATVEC_COLS[0])
  want = x @ a.astype(np.float64) + (b if bias else 0)
  np.testing.assert_allclose(execute(spec, (n,), a, x, *((b,) if bias else ())), want, rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("op", [Ops.ADD, Ops.MAX])
def test_big_column_reduce_walks_column_strips(op, monkeypatch):
  """A column sum or max of a matrix too big for the caches walks it as x @ B does (1024-column strips down 8 rows a
  step); numpy's sum and max (a NaN in a column is its max), and the plain column walk when the columns don't come in
  1024s."""
  monkeypatch.setattr(heuristic, "VECMAT_MIN_BYTES", 1)
  k, rng = 64, np.random.default_rng(6)
  for n in (2 * VECMAT_LANES, 2 * VECMAT_LANES + 64):
    out, mat = UOp.param(0, dtypes.float, (n,)), UOp.param(1, dtypes.float, (k * n,))
    i, r = UOp.range(n, 0), UOp.range(k, 1, AxisType.REDUCE)
    ast = out[i].store(mat[r * n + i].reduce(r, arg=op)).end(i).sink(arg=KernelInfo(name="cols"))
    a = rng.standard_normal((k, n), dtype=np.float32)
    a[rng.integers(0, k, 9), rng.integers(0, n, 9)] = np.nan
    spec = get_program(ast, CRenderer(isa=lambda: ISA["avx2"]))
    walk = (Opt(OptOps.UPCAST, 0, VECMAT_LANES), Opt(OptOps.UNROLL, 0, VECMAT_ROWS))
    assert (spec.applied_opts == walk) == (n % VECMAT_LANES == 0)
    want = a.astype(np.float64).sum(0) if op is Ops.ADD else a.max(0)
    np.testing.assert_allclose(execute(spec, (n,), a), want, rtol=1e-4, atol=1e-4)

def test_transpose_takes_a_tile_of_both_axes():
  """out[i, t] = x[t, i]: the load is contiguous along i, the store along t. With a register file model, i is upcast too
  (16 x 16: each cache line loaded is used whole); numpy's transpose, exactly, with each ISA."""
  T, C = 48, 64
  out, x = UOp.param(0, dtypes.float, (C, T)), UOp.param(1, dtypes.float, (T, C))
  i, t = UOp.range(C, 0), UOp.range(T, 1)
  ast = out[i, t].store(x[t, i]).end(i, t).sink(arg=KernelInfo(name="transpose"))
  data = np.random.default_rng(3).standard_normal((T, C), dtype=np.float32)
  for _, isa in ISAS:
    spec = get_program(ast, CRenderer(isa=lambda isa=isa: isa))
    assert spec.applied_opts[0] == Opt(OptOps.UPCAST, 0, 16), (isa.name, spec.applied_opts)
    np.testing.assert_array_equal(execute(spec, (C, T), data), data.T, err_msg=isa.name)
  assert [o.axis for o in get_program(ast, CRenderer()).applied_opts] == [1], "no model: the store's axis alone"
