"""Hand-written choice of opts: what usually works, found by measuring (bench/codegen.py, bench/train.py, bench/tensor.py).

- a reduce with two output axes that form an outer product (each has a load that doesn't depend on it: a matmul):
  a register tile, UPCAST of the two innermost output axes, so every loaded value is used many times from registers. On a
  CPU the tile is sized from its vector registers (Renderer.isa, the host's: tg.codegen.devices.host): rows x columns of
  accumulators plus a row of B and a broadcast of A fit the register file with room to spare, the most accumulators,
  then the most rows (matmul_tiles; AVX2: 4x16, 8 ymm accumulators; the 8x16 that AVX-512 liked fills all 16 ymm and
  spills: 29 vs 38 GFLOP/s single-threaded at 512; AVX-512: 8x32),
  then SWAP: the column tiles outside the row tiles, so a K x (tile columns) panel of B is reused by every row tile from
  cache (A is re-read every 16 columns instead of B every 4 rows, measured with AVX2's 4x16; 53 vs 41 GFLOP/s at 512,
  14 vs 7 at 2048); a tall A with a B that fits L2 goes in blocks of rows outside the panels (BLOCK, then SWAP: _row_block),
  so the block stays in L2 while every panel passes it. Other devices: 8x16, 8x8, 4x4 (measured on the AVX-512 machine
  before there was a model).
  matmul_panel tells tg.tensor the panel width, and it packs a big B into contiguous panels (a row strided by a power of
  two conflicts in the caches);
- a matrix-vector product on a CPU (one output axis, one reduce axis, a matrix and a vector load): it streams the matrix.
  Rows contiguous (A @ x): 8 rows upcast, ACCUM 16 along them; columns contiguous (x @ B): 64 columns upcast, UNROLL 2.
  Single-threaded CPU time at 4096: 3.8 -> 12.4 and 1.7 -> 6.2 GFLOP/s (numpy 12.6, 13.3): the reuse upcast below made
  both read the matrix 16 columns or 4 scalars at a time. A big x @ B walks 1024 columns at a time down 8 rows a step
  (_column_walk: 4 KB of each row in flight, the accumulators in L1); one whose columns don't come in 1024s is split by
  tg.tensor into partial sums of 16-row blocks (vecmat_block) so the column walk doesn't stride down all of B;
- a dot product on a CPU (both operands contiguous along the reduce: x @ W.T of a Linear whose few outputs the matmul
  tile can't divide): vectors of partial sums along the reduce and a tile of outputs sized by divisors (_dot_tile);
- a direct convolution on a CPU (output channels C x positions R, the weights depending on C alone and small enough to
  stay in L2): the matmul's register tile, C in the vector lanes, R the broadcast rows, as many as divide
  them and fit (_conv_tile);
- any other reduce (convolution gradients, a matmul with a small or odd axis, fused backward passes):
  UPCAST the output axis that the most loads don't depend on (their value, and all the math on it, is then computed
  once for all the lanes: the input of a conv for every output channel, a softmax gradient for every column), then
  the innermost output axis when some load doesn't depend on it either (applied first when only the other axis is
  contiguous in memory: the upcast applied last gets the fast vector lanes); then UNROLL the innermost reduce, fully when
  it is small (the math that doesn't depend on the output lanes is hoisted) - measured on the training step, the conv
  gradients 2-8x and a linear layer's input gradient 50x faster than with an UNROLL alone. On a CPU the tile's lanes stay
  within the vector registers but four, the axes before the vector one leave it whole registers, and registers to spare
  take one more axis the loads don't depend on (a conv's 16 x 14 tile spilled on AVX2; 8 x 8 is 1.4x faster);
- a streaming reduce (no work to share between outputs: a sum, a max, the rows or columns of a matrix): vectors along
  the axis that memory is contiguous in. When that is the innermost reduce axis, ACCUM it by 64 (64 lanes of independent
  accumulators, eight AVX2 registers on the measuring host, float_lanes says the register width: 25 vs 5.9 GB/s for
  UNROLL by 8 on the rows of 4096x4096, 16 lanes 10 GB/s; a short row takes fewer, down to one register: rows of
  256 with 16 lanes 2-4x faster than UNROLL by 8); when it is an output axis (a column sum), UPCAST it by as many
  lanes and UNROLL the rows by 8: each row's piece is on a page of its own, one row at a time waits on DRAM (4096x4096
  float32, one AVX-512 thread: 128 lanes of 8 rows 16-18 GB/s, of 4 rows 14, 256 lanes of one row 10; on the AVX2 host
  one row of 128 lanes took 10.6, of 64 5.6, none 0.3); a big matrix's columns in 1024s are walked as x @ B's (_column_walk).
  Measured on 2 busy cores; bench/cpu.py prints them beside the limit;
- any other reduce to one value: UNROLL it;
- elementwise: UPCAST the innermost axis to the widest vector the device has; a transpose (no load contiguous along the
  innermost axis, one along another) on a CPU upcasts that other axis by 16 first: a 16 x 16 tile uses each cache line it
  loads whole (1024 x 2048 float32: 7.3 -> 1.4 ms; reading down a column, the lines 8 KB apart left the caches before
  the next column came back for them); a copy that reads a row's next piece every step (a matmul's B packed into
  panels) walks the rows outside instead, reading each whole (_rows_in_order);
- on devices with workgroups: a LOCAL split of the innermost global axis; a long reduce to few outputs (a sum, a
  row-sum of a short matrix) is shared by a workgroup (GROUPTOP, partial sums in shared memory), or one thread would
  do all of it;
- on devices with tensor cores (AMD's WMMA on gfx11/gfx12): a half or bfloat16 matmul-shaped reduce whose two output axes are
  at least a tile (16) runs tile by tile on them (TC, opt/tc.py), and nothing else is applied."""
from __future__ import annotations
import math
from dataclasses import dataclass
from typing import Iterable
from tg.uop import UOp, Ops, AxisType, GroupOp, dtypes, simplify_given_valid, split_terms
from tg.codegen.renderer import Renderer, VectorISA
from tg.codegen.opt.kernel import Opt, OptOps, KernelOptError, apply_opt
from tg.codegen.ranges import output_axes, reduce_axes, range_size, stride
from tg.codegen.opt.tc import USE_TC, tc_candidates

STREAM_REGISTERS = 8  # vector registers of accumulators a streaming reduce takes (AVX2 has 16: loads and compares need the rest)
STREAM_ROWS = 8  # rows a column walk reads per step (UNROLL): each row's piece starts a new page, so one at a time waits on DRAM
MIN_REUSE = 2     # an output axis is upcast when at least this much work doesn't depend on it (else clang vectorizes the plain loop better)
UPCAST_LANES = 256  # at most this many output lanes outside the matmul tile: 16 AVX-512 registers of accumulators
DEFAULT_TILES = ((8, 16), (8, 8), (4, 4))  # matmul tiles on a device without a vector register file model (Renderer.isa)
ROOMY = 0.75  # a tile taking at most this much of the register file leaves the compiler room (14 x 32 on AVX-512, 31 registers, spilled)
MAX_LOADS_PER_FMA = 0.75  # a tile loading more per FMA than this waits on its loads (16 x 1 on AVX-512: 17 loads for 16 FMAs)
MIN_PANELS = 4      # column tiles go outermost (split over the cores) when there are at least this many

GROUP_MIN_REDUCE, GROUP_MAX_OUTPUTS = 256, 64  # a reduce this long to at most this many values is shared by a workgroup
EXPENSIVE = (Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.FDIV, Ops.RECIPROCAL, Ops.POW)

def _loads(k: UOp) -> list[UOp]:
  """The INDEXes a kernel loads through (into its parameters, not the ones it stores to)."""
  stored = {u.src[0] for u in k.toposort() if u.op is Ops.STORE}
  return [u for u in k.toposort() if u.op is Ops.INDEX and u not in stored and u.src[0].buffer_base.op is Ops.PARAM]

def _range_deps(k: UOp) -> dict[UOp, frozenset[UOp]]:
  """The RANGEs each value of the kernel depends on. A gated load's index is looked at under its gate (a windowed
  view's div/mod that the gate makes constant is no dependence)."""
  deps: dict[UOp, frozenset[UOp]] = {}
  for u in k.toposort():
    if u.op is Ops.RANGE: deps[u] = frozenset((u,))
    elif u.op is Ops.INDEX and len(u.src) == 3 and u.src[2].dtype == dtypes.bool:
      idx = simplify_given_valid(u.src[2], u.src[1])
      deps[u] = deps[u.src[2]].union(r for r in idx.toposort() if r.op is Ops.RANGE)
    else: deps[u] = frozenset().union(*(deps[s] for s in u.src))
  return deps

def _reuse(k: UOp, r: UOp, deps: dict[UOp, frozenset[UOp]]) -> int:
  """How much of the computed (not index) work inside the reduce doesn't depend on output axis r: upcasting r does it
  once for all its lanes (the input of a conv for every output channel, a softmax gradient for every column)."""
  red = {x for x in deps if x.op is Ops.RANGE and x.arg[1] is AxisType.REDUCE}
  stored = {u.src[0] for u in k.toposort() if u.op is Ops.STORE}
  score = 0
  for u in k.toposort():
    if (u.op is Ops.INDEX and u not in stored and u.src[0].buffer_base.op is Ops.PARAM) or \
       (u.op in GroupOp.ALU and u.dtype.scalar() not in (dtypes.index, dtypes.bool)):
      if r not in (d := deps[u]) and d & red: score += 8 if u.op in EXPENSIVE else 1
  return score

class _Kernel:
  """The kernel being optimized: opts are applied together, or none of them."""
  def __init__(self, k: UOp, ren: Renderer): self.k, self.ren = k, ren
  def attempt(self, *opts: Opt) -> bool:
    new = self.k
    try:
      for o in opts: new = apply_opt(new, o, self.ren)
    except KernelOptError: return False
    self.k = new
    return True
  def first(self, choices: Iterable[tuple[Opt, ...]]) -> tuple[Opt, ...] | None:
    """Apply the first of the choices that applies, and return it (None: none did)."""
    for opts in choices:
      if self.attempt(*opts): return opts
    return None

@dataclass(frozen=True)
class _Facts:
  """What the choices look at, taken from the kernel before any opt."""
  outs: list[UOp]
  reds: list[UOp]
  sizes: list[int]            # of the output axes (0: symbolic)
  red_size: int | None        # of the first reduce axis
  deps: dict[UOp, frozenset[UOp]]
  loads: list[UOp]
  outer: bool                 # the two innermost output axes form an outer product (a matmul)
  @staticmethod
  def of(ast: UOp) -> _Facts:
    outs, reds, loads = output_axes(ast), reduce_axes(ast), _loads(ast)
    # a matmul: the two innermost output axes each have a load that doesn't depend on it (A[i,k] for j, B[k,j] for i)
    outer = len(outs) >= 2 and any(outs[-1] not in ld.toposort() and outs[-2] in ld.toposort() for ld in loads) and \
      any(outs[-2] not in ld.toposort() and outs[-1] in ld.toposort() for ld in loads)
    return _Facts(outs, reds, [range_size(r) or 0 for r in outs], range_size(reds[0]) if reds else None, _range_deps(ast), loads,
                  outer)

def hand_coded_optimizations(ast: UOp, ren: Renderer) -> UOp:
  if any(u.op is Ops.CONTRACT for u in ast.toposort()): return ast  # the kernel chose its own vector lanes: more would break them
  K, f = _Kernel(ast, ren), _Facts.of(ast)
  if _tensor_core(K): return K.k
  if f.reds:
    # the first that applies
    for choose in (_matmul_tile, _matvec, _dot_tile, _conv_tile, _group_reduce, _upcast_reduce, _stream_reduce, _unroll_reduce):
      if choose(K, f): break
  elif f.outs: _upcast_elementwise(K, f)
  if ren.has_local and ren.local_max is not None: _local_split(K)
  return K.k

def _tensor_core(K: _Kernel) -> bool:
  """TC with the first candidate whose rows and columns are at least a tile each (a thinner one would be mostly padding)."""
  cands = tc_candidates(K.k, K.ren.tensor_cores) if USE_TC else []
  return bool(K.first((Opt(OptOps.TC, i),) for i, c in enumerate(cands) if min(range_size(c.m) or 0, range_size(c.n) or 0) >= min(c.tc.dims[:2])))

def matmul_tiles(isa: VectorISA | None, itemsize: int, row_counts: Iterable[int] = (1, 2, 4, 8, 16),
                 panel_first: bool = True) -> tuple[tuple[int, int], ...]:
  """The register tiles (rows, columns) of a matmul's accumulators, best first. With a vector register file: r rows of v
  vectors take r*v accumulators, v registers for a row of B and one for the broadcast of A; each step of the reduce loads
  r + v values for r*v FMAs. panel_first: first the tiles that load at most MAX_LOADS_PER_FMA and leave the compiler room
  (ROOMY), the most accumulators first, then the most rows: a row of B is then fewer bytes per FMA, and a K x v panel of
  B stays in L1 for longer K (AVX-512 at K=256: 8 x 32 299 vs 4 x 64 232 GFLOP/s on 2 Sapphire Rapids cores, its 64 KB
  panel read from L2 every step; 1024-4096 square 305-359 -> 378-390, the FMA peak). The others (all of them without
  panel_first: a conv's tile, 4 x 64 233 vs 8 x 32 175 GFLOP/s) the most FMAs per load first; ties: the fewest registers."""
  if isa is None: return DEFAULT_TILES
  fits = [(r, v) for r in row_counts for v in (1, 2, 4, 8) if r * v + v + 1 <= isa.registers]
  def rank(rv: tuple[int, int]) -> tuple:
    (r, v), fmas = rv, rv[0] * rv[1]
    if panel_first and r + v <= MAX_LOADS_PER_FMA * fmas and fmas + v + 1 <= ROOMY * isa.registers: return (0, -fmas, -r, fmas + v)
    return (1, -fmas / (r + v), 0, fmas + v)
  fits.sort(key=rank)
  return tuple((r, v * isa.lanes(itemsize)) for r, v in fits) + ((4, 4),)

def _tiles_for(isa: VectorISA | None, itemsize: int, rows: int, cols: int) -> list[tuple[int, int]]:
  """The tiles that divide a rows x cols output into at least two tiles each way, best first."""
  return [(ti, tj) for ti, tj in matmul_tiles(isa, itemsize) if rows % ti == 0 and cols % tj == 0 and rows >= 2 * ti and cols >= 2 * tj]

def _panels_outside(isa: VectorISA | None, cols: int, tj: int) -> bool: return isa is not None and cols // tj >= MIN_PANELS

def matmul_panel(ren: Renderer, itemsize: int, rows: int, cols: int) -> int | None:
  """The width of the B panels (K x width) the heuristics' matmul of a rows x cols output reads one after another, each by
  every row tile (None: not so on this device or shape). A caller that packs B as [cols/width][K][width] makes each panel
  contiguous memory: a row of B strided by a power of two conflicts in the caches (measured single-threaded at 2048: 14
  GFLOP/s strided, 81 packed)."""
  tiles = _tiles_for(ren.isa, itemsize, rows, cols)
  return tiles[0][1] if tiles and _panels_outside(ren.isa, cols, tiles[0][1]) else None

VECMAT_BLOCK, VECMAT_MIN_BYTES = 16, 1 << 22  # rows of B per partial sum; a B at least this big (past a core's L2) is split

def vecmat_block(ren: Renderer, itemsize: int, k: int, n: int) -> int | None:
  """How many rows of B (k x n) a CPU vector-matrix product x @ B sums at a time (None: don't split). One kernel reducing
  all of k walks B as 64-column strips, each strip down all k rows (a 256-byte read every n*itemsize bytes): every step
  is a new page and a new DRAM row. Partial sums of blocks of 16 rows (a (k/16, n) kernel, then a column sum of the
  partials) read each block's rows side by side, 16 streams the prefetchers follow: at 4096 x 4096 on 2 loaded cores
  9.6 vs 3.9 GFLOP/s (blocks of 8: 9.2, 32: 7.9, 64: 8.1), for one more pass over n*k/16 values."""
  if ren.isa is None or k % VECMAT_BLOCK or k < 16 * VECMAT_BLOCK or k * n * itemsize < VECMAT_MIN_BYTES: return None
  return None if _column_walk(itemsize, k, n) else VECMAT_BLOCK

VECMAT_LANES, VECMAT_ROWS = 1024, 8  # a big matrix's column walk (x @ B, B.sum(0)): columns per accumulator strip, rows a step

def _column_walk(itemsize: int, k: int, n: int) -> tuple[tuple[Opt, ...], ...]:
  """The opts of one kernel reducing the k rows of a big CPU matrix B (k x n) to n columns, x @ B or B.sum(0): a strip of
  1024 columns of accumulators (4 KB, in L1) walks down B 8 rows a step, each row's 4 KB piece streamed (the strips split
  over the cores). For x @ B, against the 16-row partial sums
  (vecmat_block), in one process, median of 40, 4096 x 4096: one thread's CPU time 18.2 vs 16.0 GB/s of B (numpy 20.0),
  2 threads on a loaded machine 12.4 vs 3.4 (numpy 5.8): no pass over partials, no second kernel to wait for. Narrower
  strips read less of a row a step (512: 15.6 GB/s in C, 256: 13.3); 2048 lowers 5x slower for little more. float32 and
  other 4-byte B only: a float16 B walked so took 10.8 GB/s, in 16-row blocks 15.2 (none: ()). A column sum or max of
  4096 x 4096 (one thread's CPU time) 40 and 27 GB/s walked, 28.5 and 19.5 as 128 lanes of 8 rows (_stream_reduce's
  own); the price is lowering: a cold column sum 0.9 s, not 0.4 (the 1024 lanes devectorized one by one)."""
  if itemsize != 4 or n % VECMAT_LANES or n < 2 * VECMAT_LANES or k % VECMAT_ROWS or k * n * itemsize < VECMAT_MIN_BYTES: return ()
  return ((Opt(OptOps.UPCAST, 0, VECMAT_LANES), Opt(OptOps.UNROLL, 0, VECMAT_ROWS)),)

def _matmul_tile(K: _Kernel, f: _Facts) -> bool:
  """A tile of accumulators in registers, the innermost axis in the vector lanes; on a CPU the column tiles outermost (SWAP)
  when there are enough of them to share between the cores."""
  if not f.outer or f.red_size is None or f.red_size < 16: return False
  n, (s2, s1) = len(f.outs), f.sizes[-2:]
  itemsize = next(u.dtype.itemsize for u in K.k.toposort() if u.op is Ops.REDUCE)
  swap = (Opt(OptOps.SWAP, n - 2, n - 1),)
  chosen = K.first((Opt(OptOps.UPCAST, n - 2, ti), Opt(OptOps.UPCAST, n - 1, tj)) + (swap if _panels_outside(K.ren.isa, s1, tj) else ())
                   for ti, tj in _tiles_for(K.ren.isa, itemsize, s2, s1))
  if chosen is not None and len(chosen) == 3 and (rows := _row_block(s2, f.red_size * itemsize, s1 * f.red_size * itemsize)):
    K.attempt(Opt(OptOps.BLOCK, n - 1, rows // chosen[0].arg), Opt(OptOps.SWAP, n - 2, n - 1))  # blocks, then the panels in each
  return chosen is not None

ROW_BLOCK_B_BYTES = 1 << 20  # a B at most this big (in L2) is read once per block of rows of A, not once in all

def _row_block(rows: int, row_bytes: int, b_bytes: int) -> int | None:
  """The rows of A a matmul whose B panels are outermost works through at a time, all of B's panels each (None: A
  whole). Each B panel swept all of A, 2 MB at K = 256, from L3 once per panel; a block of 256 rows (128 past K = 512)
  stays in L2 for all the panels, and B is re-read per block instead. 2048 x 256 x 768 in C on 2 cores: 333 -> 380
  GFLOP/s (PyTorch 383); tg's 2048 x 256 x 768 307-316 -> 326-346, 2048 x 512 x 512 275-283 -> 297-306. A 64 MB B
  re-read per block was slower (4096^3: 290 -> 275), and so was one block per core (512^3: B read whole by each)."""
  block = 256 if row_bytes <= 1 << 11 else 128
  return block if b_bytes <= ROW_BLOCK_B_BYTES and rows % block == 0 and rows >= 4 * block else None

def _dot_tile(K: _Kernel, f: _Facts) -> bool:
  """Both operands contiguous along the innermost reduce (x @ W.T of a Linear with 10 outputs, which the matmul tile
  can't divide): a vector of partial sums per output along the reduce (ACCUM, the lanes added after the loop) and a
  rows x columns tile of outputs, any divisors that fit the registers with a vector of each operand, so every vector
  loaded feeds several FMAs. The small CNN's 128 x 10 x 4608: 320 -> 116 us single-threaded (16 x 10 lanes of outputs
  shuffled from scalar loads before)."""
  if K.ren.isa is None or len(f.outs) < 2 or not f.reds: return False
  n, lanes, red = range_size(f.reds[-1]) or 0, float_lanes(K.ren), set(f.reds)
  reducing = [ld for ld in f.loads if f.deps[ld] & red]
  if n % lanes or n < 16 * lanes or len(reducing) != 2 or not all(f.reds[-1] in unit_stride_axes(ld) for ld in reducing): return False
  i, j = f.outs[-2:]
  if sorted(len(f.deps[ld] & {i, j}) for ld in reducing) != [1, 1] or f.deps[reducing[0]] & {i, j} == f.deps[reducing[1]] & {i, j}: return False
  rows, cols = f.sizes[-2:]
  tiles = [(a, b) for a in _divisors(rows) for b in _divisors(cols) if a * b + a + b <= K.ren.isa.registers - 2]
  tiles.sort(key=lambda t: (-t[0] * t[1] / (t[0] + t[1]), t[0] * t[1]))
  pos = len(f.outs) - 2
  # (the columns first: upcast whole, they leave the output axes and the rows keep their position)
  return bool(K.first((Opt(OptOps.UPCAST, pos + 1, b), Opt(OptOps.UPCAST, pos, a), Opt(OptOps.ACCUM, len(f.reds) - 1, lanes)) for a, b in tiles))

CONV_PANEL_BYTES = 1 << 18  # a conv's weights (reduce x tile columns) at most this big: re-read by every row tile from L2

def _conv_tile(K: _Kernel, f: _Facts) -> bool:
  """A direct convolution on a CPU: a matmul register tile over output channels C x output positions R. The weights load
  depends on C of the output axes only (a channels-last copy: unit stride in C), the input on R but not C; C takes the
  vector lanes (a row of weights), R the rows (a broadcast of an input each), sized as the matmul's tile. With the 14-wide
  row as the lanes instead (what _upcast_reduce gives), every accumulator was shuffled together from the loads: 56x56
  64->64 single-threaded 34 GFLOP/s with 16 x 14, 61 swapped, 104 with 4 rows x 64 channels. The weights stay in L2
  (CONV_PANEL_BYTES): a conv's weight gradient has the same shape with a 50k-long reduce, and it is 2.5x slower tiled."""
  red_total = math.prod(range_size(r) or 0 for r in f.reds)
  if K.ren.isa is None or len(f.outs) < 2 or red_total < 16: return False  # (a 1-channel conv: clang's loop is better, see below)
  itemsize = next(u.dtype.itemsize for u in K.k.toposort() if u.op is Ops.REDUCE)
  outs, reds = set(f.outs), set(f.reds)
  reducing = [ld for ld in f.loads if f.deps[ld] & reds]
  for ci, c in enumerate(f.outs):
    if not any(f.deps[ld] & outs == {c} and c in unit_stride_axes(ld) for ld in reducing): continue
    cands = [i for i in reversed(range(len(f.outs))) if i != ci and any(f.outs[i] in (d := f.deps[ld]) and c not in d for ld in reducing)]
    if not cands: continue
    strided = [i for i in cands if not _unit_stride(f.outs[i], reducing)]
    rows, cols = f.sizes[cands[0]], f.sizes[ci]
    # any divisor of the rows from 8 up: a 14-wide row as 2 rows of 16 channels kept two FMAs in flight (a weight
    # gradient's 3-wide window is no such row: as the tile's rows its loads were gathered from scalars)
    for ti, tj in matmul_tiles(K.ren.isa, itemsize, sorted({1, 2, 4, 8, 16} | {d for d in _divisors(rows) if d >= 8}), panel_first=False):
      if rows % ti or cols % tj or red_total * tj * itemsize > CONV_PANEL_BYTES: continue
      # one register of channels: each input feeds one FMA, so its load should be a broadcast from memory. Rows along an
      # axis the input is strided in keep them scalar; along its contiguous row they became a vector load and a shuffle
      # or two per lane (the CNN's 16-channel input gradient, 14 x 16 tile: 4.1 vs 2.3 ms single-threaded)
      ri = next((i for i in strided if f.sizes[i] % ti == 0), cands[0]) if tj == K.ren.isa.lanes(itemsize) else cands[0]
      # an axis upcast whole leaves the output axes: the other's position moves down when it came after
      if K.attempt(Opt(OptOps.UPCAST, ri, ti), Opt(OptOps.UPCAST, ci - (ti == f.sizes[ri] and ri < ci), tj)):
        if tj == K.ren.isa.lanes(itemsize) and (win := _padded_window(reducing, f.outs[ri], f.reds)) is not None:
          K.attempt(Opt(OptOps.UNROLL, f.reds.index(win), range_size(win) or 0))
        return True
  return False

WINDOW_UNROLL = 3  # the longest kernel window a padded conv's tile unrolls (measured: 3x3 only)

def _padded_window(reducing: list[UOp], row: UOp, reds: list[UOp]) -> UOp | None:
  """The window axis (reduce) an input's padding gate pairs with the tile's rows (h + kh inside the input), if short:
  unrolled, each row's gate is a constant and the gated loads it rules out are gone. The small CNN's input gradient
  (a 3x3 conv of 32 channels padded by 2 to 14x14, 14 rows x 16 channels, one thread): 2.25 -> 2.10 ms. Not with more than
  a register of channels (ResNet's 4 x 64 tile took 2x as long), nor without padding (the forward, 1.54 -> 1.84 ms)."""
  for ld in reducing:
    if len(ld.src) < 3 or ld.src[2].dtype != dtypes.bool: continue
    for u in ld.src[2].toposort():
      rs = {x for x in u.src[0].toposort() if x.op is Ops.RANGE} if u.op is Ops.CMPLT else set()
      if row in rs and (win := [r for r in reds if r in rs and (range_size(r) or 0) <= WINDOW_UNROLL]): return win[0]
  return None

MATVEC_ROWS = ((Opt(OptOps.UPCAST, 0, 8), Opt(OptOps.ACCUM, 0, 16)), (Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.ACCUM, 0, 16)))
MATVEC_COLS = ((Opt(OptOps.UPCAST, 0, 64), Opt(OptOps.UNROLL, 0, 2)), (Opt(OptOps.UPCAST, 0, 16), Opt(OptOps.UNROLL, 0, 2)))

def _matvec(K: _Kernel, f: _Facts) -> bool:
  """A matrix-vector product on a CPU, streamed along the matrix's contiguous axis (see the module docstring). Loads
  outside the reduce (a bias added to each output) don't matter: 4096 x 4096, one thread's CPU time, x @ B + b 25.1 GB/s
  of the matrix, not 6.2; A @ x + b 25.4, not 8.3."""
  if K.ren.isa is None or len(f.outs) != 1 or len(f.reds) != 1 or (f.red_size or 0) < 256: return False
  (o,), (r,) = f.outs, f.reds
  reducing = [ld for ld in f.loads if r in f.deps[ld]]
  mat = [ld for ld in reducing if o in f.deps[ld]]
  if len(reducing) != 2 or len(mat) != 1 or not any(f.deps[ld] == {r} for ld in reducing): return False
  if r in unit_stride_axes(mat[0]): return bool(K.first(MATVEC_ROWS))
  return o in unit_stride_axes(mat[0]) and bool(K.first(_column_walk(mat[0].dtype.itemsize, f.red_size or 0, f.sizes[0]) + MATVEC_COLS))

def _group_reduce(K: _Kernel, f: _Facts) -> bool:
  """A long reduce to few outputs shared by a workgroup (partial sums in shared memory)."""
  if not K.ren.has_shared or f.red_size is None or f.red_size < GROUP_MIN_REDUCE or math.prod(f.sizes) > GROUP_MAX_OUTPUTS: return False
  return bool(K.first((Opt(OptOps.GROUPTOP, 0, a),) for a in (16, 8, 4) if f.red_size % a == 0))

def _unroll_reduce(K: _Kernel, f: _Facts) -> bool:
  """Independent accumulators for the first reduce: they break the add chain."""
  if f.red_size is None: return False
  return bool(K.first((Opt(OptOps.UNROLL, 0, amt),) for amt in (8, 4, 2) if f.red_size % amt == 0 and f.red_size >= 4 * amt))

def _rows_in_order(K: _Kernel, f: _Facts) -> None:
  """On a CPU, a copy whose loads continue along the outer of its two loop axes where the vector (innermost) axis ends,
  and jump a row along the inner one (packing a matmul's B into panels: each step the next row's 128 bytes): the two loop
  axes swapped, so it reads whole rows in order and writes a stream per panel. Reads missing the caches stall the loop,
  writes don't. Packing 2048 x 768 float32 into 32-wide panels, from DRAM: 0.86 -> 0.46 ms; 2048 x 1024: 1.1 -> 0.75
  (a GPT step's weight-gradient packs 8.7 -> 5.2 ms); rows of 1 KB: 0.37 -> 0.33."""
  if K.ren.isa is None or len(f.outs) < 3 or not f.loads: return
  (i, j), run = f.outs[-3:-1], f.sizes[-1]
  steps = [(stride(ld.src[1], i), stride(ld.src[1], j)) for ld in f.loads]
  if all(f.outs[-1] in unit_stride_axes(ld) for ld in f.loads) and all(a == run and b is not None and b > a for a, b in steps):
    K.attempt(Opt(OptOps.SWAP, len(f.outs) - 3, len(f.outs) - 2))

def _upcast_elementwise(K: _Kernel, f: _Facts) -> bool:
  """The innermost axis in the widest vector the device has; first, in a transpose (a load contiguous along another output
  axis), a tile of that axis too; rows read in order (_rows_in_order)."""
  _rows_in_order(K, f)
  across = [i for i, r in enumerate(f.outs[:-1]) if _unit_stride(r, f.loads) and not _unit_stride(f.outs[-1], f.loads)]
  if across and K.ren.isa is not None:
    i = across[-1]
    K.first((Opt(OptOps.UPCAST, i, amt),) for amt in (16, 8, 4) if f.sizes[i] % amt == 0 and f.sizes[i] >= amt)
  return bool(K.first((Opt(OptOps.UPCAST, len(output_axes(K.k)) - 1, amt),) for amt in (max(K.ren.vector_widths), 4, 2)
                 if amt > 1 and f.sizes[-1] % amt == 0 and f.sizes[-1] >= amt))

def _local_split(K: _Kernel) -> bool:
  """On devices with workgroups: a LOCAL split of the innermost global axis."""
  glob = [r for r in output_axes(K.k) if r.arg[1] is AxisType.GLOBAL]
  if not glob or (s := range_size(glob[-1])) is None: return False
  pos = len(output_axes(K.k)) - 1 - _trailing_non_global(K.k)
  return bool(K.first((Opt(OptOps.LOCAL, pos, amt),) for amt in (16, 8, 4, 2) if s % amt == 0 and s > amt))

def _upcast_reduce(K: _Kernel, f: _Facts) -> bool:
  """UPCAST the output axis that the most work doesn't depend on, then the rows of the tile, then UNROLL the innermost
  reduce; False when no output axis is worth upcasting (then the plain reduce UNROLL applies)."""
  if not f.outs: return False
  k0, outs = K.k, f.outs
  # the output axis with the most work that doesn't depend on it (ties: the one that takes the bigger upcast, then the inner one), then the
  # innermost axis when some work doesn't depend on it either (an outer product: conv input x weight)
  scores = [(_reuse(k0, r, f.deps), _amount(range_size(r) or 0), i) for i, r in enumerate(outs) if (range_size(r) or 0) > 1]
  red_total = math.prod(range_size(r) or 1 for r in f.reds)
  # a load shared by all lanes pays off over a long reduce; over a short one (a 1-channel conv) clang's own vectorizing
  # of the plain innermost loop is better (measured 0.16 vs 0.75 ms)
  if not scores or (best := max(scores))[0] < (1 if red_total >= 16 else MIN_REUSE): return False
  rest = [sc for sc in scores if sc[2] != best[2] and sc[0] > 0 and sc[1] >= 4]
  rows: tuple[int, tuple[int, ...]] | None = None
  if best[2] != len(outs) - 1 and (range_size(outs[-1]) or 0) > 1 and _reuse(k0, outs[-1], f.deps) > 0:
    rows = (len(outs) - 1, tuple(range(16, 1, -1)))  # the rows of the tile: a big divisor (a conv's row of 30 as 15 rows: 3.4x faster than 3)
  elif best[2] == len(outs) - 1 and rest:
    rows = (max(rest)[2], (8, 4, 2))  # the innermost axis is the best: the other operand of the outer product gives the rows
  # the upcast applied last gives the fastest-moving vector lanes: below the best axis that is the innermost one, unless
  # only the best axis is contiguous in memory (a conv's weight gradient from channels-last input: its channels, not its
  # 3-wide window; 3x faster). (Reordering the other case measured no better.)
  order = [(best[2], (16, 8, 4, 2))] + ([rows] if rows else [])
  if rows and rows[0] == len(outs) - 1 and _unit_stride(outs[best[2]], f.loads) and not _unit_stride(outs[rows[0]], f.loads): order.reverse()
  budget, reg = _register_lanes(K.ren, f)
  if K.ren.isa is not None and (more := [sc for sc in rest if sc[2] not in (o[0] for o in order)]):
    order.insert(len(order) - 1, (max(more)[2], (8, 4, 2)))  # registers to spare: one more axis the loads don't depend on
  lanes, gone = 1, []  # gone: the positions of axes a whole upcast took out of the output axes
  for i, (pos, amts) in enumerate(order):
    n = len(output_axes(K.k))
    # the axes before the last (vector) one leave it a whole register for each of their lanes
    lanes *= _upcast(K, pos - sum(g < pos for g in gone), amts, lanes, budget // (reg if i < len(order) - 1 else 1))
    if len(output_axes(K.k)) < n: gone.append(pos)
  if lanes < min(128, budget): _unroll_inner(K, k0, f.deps)
  return True

def _register_lanes(ren: Renderer, f: _Facts) -> tuple[int, int]:
  """(accumulator lanes a tile may take, lanes of one register): on a CPU the vector registers but four for the loads
  (AVX2 float32: 96, 8); elsewhere UPCAST_LANES, 1."""
  if ren.isa is None: return UPCAST_LANES, 1
  lanes = ren.isa.lanes(next((u.dtype.itemsize for u in f.deps if u.op is Ops.REDUCE), 4))
  return (ren.isa.registers - 4) * lanes, lanes

def unit_stride_axes(idx: UOp) -> set[UOp]:
  """The RANGEs a load's index steps by one element with (the address is r + rest, r not in rest)."""
  if (split := split_terms(idx.src[1])) is None: return set()
  terms = split[0]
  return {t for t, c in terms if t.op is Ops.RANGE and c == 1 and sum(1 for u, _ in terms if t in u.toposort()) == 1}

def float_lanes(ren: Renderer) -> int:
  """float32 lanes of one vector register: the one place the reduce side reads the vector width. The renderer's ISA
  (the host's, for CPU); 8 (AVX2's ymm) where the renderer has none."""
  return ren.isa.lanes(4) if ren.isa is not None else 8

def _stream_reduce(K: _Kernel, f: _Facts) -> bool:
  """Vectors along the axis every reducing load is contiguous in (see the module docstring); False when there is none.
  Accumulator lanes: STREAM_REGISTERS registers, or fewer; output lanes of a column walk: as many, STREAM_ROWS rows a step
  (twice the lanes, one row a step, when the rows don't divide)."""
  acc = STREAM_REGISTERS * float_lanes(K.ren)
  accums, upcasts = (acc, acc // 2, acc // 4, acc // 8), (2 * acc, acc, acc // 2, acc // 4)
  reds, outs = f.reds, f.outs
  reading = [ld for ld in f.loads if any(r in ld.toposort() for r in reds)]
  if not reading: return False
  common = set.intersection(*(unit_stride_axes(ld) for ld in reading))
  if reds[-1] in common:
    n = range_size(reds[-1]) or 0
    # (at least 16 steps per lane: the lanes are folded after the loop, which a short row would pay for)
    return bool(K.first((Opt(OptOps.ACCUM, len(reds) - 1, a),) for a in accums if n % a == 0 and n >= 16 * a))
  if outs and outs[-1] in common:
    n, m = range_size(outs[-1]) or 0, range_size(reds[-1]) or 0
    rows = (Opt(OptOps.UNROLL, len(reds) - 1, STREAM_ROWS),) if m % STREAM_ROWS == 0 and m >= 2 * STREAM_ROWS else ()
    # (without rows in flight, twice the lanes: each row's piece is then twice as long)
    # (a narrow axis, a bias gradient's 16 or 32 channels-last channels: all of it)
    amts = [a for a in (upcasts[1:] if rows else upcasts) if n % a == 0 and n >= 2 * a] or ([n] if 1 < n <= acc else [])
    walk = _column_walk(reading[0].dtype.itemsize, m, n) if len(outs) == len(reds) == len(reading) == 1 else ()  # a big matrix's columns
    return bool(K.first(walk + tuple((Opt(OptOps.UPCAST, len(outs) - 1, a),) + rows for a in amts)))
  return False

def _unit_stride(r: UOp, loads: list[UOp]) -> bool:
  """r and r+1 are neighbours in memory for some load (its lanes load as one vector)."""
  return any(r in unit_stride_axes(ld) for ld in loads)

def _upcast(K: _Kernel, pos: int, amts: tuple[int, ...], lanes: int, budget: int) -> int:
  """UPCAST output axis `pos` by the first amount that divides it and keeps the tile within `budget` lanes (the whole axis
  first when it is small); returns the amount (1: none applied)."""
  s = range_size(output_axes(K.k)[pos]) or 0
  fits = [a for a in ((s,) if 1 < s <= 16 else ()) + amts if 1 < a <= s and s % a == 0 and lanes * a <= budget]
  done = K.first((Opt(OptOps.UPCAST, pos, a),) for a in fits)
  return done[0].arg or 1 if done is not None else 1

def _unroll_inner(K: _Kernel, k0: UOp, deps: dict[UOp, frozenset[UOp]]) -> None:
  """The innermost reduce: fully unrolled when small (what doesn't depend on the output lanes is hoisted), else by 4 -
  unless expensive math depends on it: the unrolled lanes would redo it for every output lane. (Not after a big tile: it
  already has enough independent accumulators; measured: a conv's 16x12 tile 2.1 ms plain, 2.7 ms with its 3-wide window
  unrolled.)"""
  reds = reduce_axes(K.k)
  if not reds or (rs := range_size(reds[-1])) is None: return
  costly = any(u.op in EXPENSIVE and reds[-1] in deps.get(u, ()) for u in k0.toposort())
  amts = ((rs,) if rs <= 16 else ()) + (() if costly else (4, 2))
  K.first((Opt(OptOps.UNROLL, len(reds) - 1, amt),) for amt in amts if rs % amt == 0 and rs >= amt)

def _divisors(n: int) -> list[int]: return [d for d in range(1, n + 1) if n % d == 0]

def _amount(s: int) -> int:
  """How many lanes an UPCAST of an axis of size s takes: all of it when small, else the biggest of 16, 8, 4, 2 dividing it."""
  return s if s <= 16 else next((a for a in (16, 8, 4, 2) if s % a == 0), 1)

def _trailing_non_global(k: UOp) -> int:
  outs = output_axes(k)
  n = 0
  for r in reversed(outs):
    if r.arg[1] is AxisType.GLOBAL: break
    n += 1
  return n
