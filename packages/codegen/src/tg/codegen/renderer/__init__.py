"""Renderer: what a device can do (the lowering passes read these capabilities) and how to turn a linear
program (see tg.codegen.program) into the source text its compiler takes."""
from __future__ import annotations
from dataclasses import dataclass
from tg.uop import UOp, Ops, DType, GroupOp, dtypes

@dataclass(frozen=True)
class TensorCore:
  """A wave-wide 16x16x16 matrix multiply-accumulate (AMD's WMMA): D (16x16, dtype_out) = A (16xK) * B (Kx16) + C, each
  matrix spread over the `threads` lanes of a wave. Lane l holds row (A) or column (B) l % 16 and `elements` of its K
  values, K = k_half * (l // 16) + e; its slot i of C and D is row row_stride * i + half_row * (l // 16), column l % 16
  (the ISA's register layouts: RDNA3 repeats A and B in both half-waves, RDNA4 splits K between them)."""
  dtype_in: DType
  dtype_out: DType
  elements: int    # A/B elements per lane
  k_half: int      # K offset of the upper half-wave's elements
  row_stride: int  # C/D: rows between a lane's consecutive slots
  half_row: int    # C/D: rows between the half-waves
  dims: tuple[int, int, int] = (16, 16, 16)  # M, N, K
  threads: int = 32
  slots: int = 8   # C/D elements per lane

@dataclass(frozen=True)
class VectorISA:
  """A CPU's SIMD register file: the matmul tile (tg.codegen.opt.heuristic) is sized so its accumulators, a row of B and
  a broadcast of A fit in the registers."""
  name: str
  vector_bytes: int  # of one register
  registers: int     # architectural vector registers
  def lanes(self, itemsize: int) -> int: return max(self.vector_bytes // itemsize, 1)

class Renderer:
  device: str = ""
  has_local: bool = False           # workgroups with local ids
  has_shared: bool = False          # DEFINE_LOCAL memory
  has_threads: bool = False         # CPU: the outermost GLOBAL range is split over host threads
  global_max: tuple[int, ...] | None = None   # limits of SPECIAL gidx dims (None: no GPU dims, ranges stay loops)
  local_max: tuple[int, ...] | None = None
  shared_max: int = 0
  vector_widths: tuple[int, ...] = (1,)      # widths a LOAD/STORE/ALU may have; everything else is split
  max_upcast: int = 64                       # at most this many lanes of unrolled work per thread
  supported_dtypes: frozenset[DType] | None = None   # None: every dtype
  native_ops: frozenset[Ops] = GroupOp.ALU - {Ops.MULACC, Ops.POW, Ops.THREEFRY, Ops.SIN, Ops.EXP2, Ops.LOG2}  # the rest is decomposed
  vector_alu: frozenset[Ops] = frozenset()      # ops kept on float vectors (of vector_alu_widths lanes); the rest is split
  vector_alu_widths: tuple[int, ...] = ()
  emulated_dtypes: frozenset[DType] = frozenset()  # stored as bits, computed in float32 (bfloat16, fp8 on C)
  uop_conversions: frozenset[DType] = frozenset()  # of those, the ones whose float32 casts are tg.uop.floatconv's graphs (LLVM's fp8)
  tensor_cores: tuple[TensorCore, ...] = ()  # matrix instructions the TC opt can use (tried in order)
  prefetch: tuple[str, str] | None = None    # statements fetching address {0} to read, to write: accesses striding pages get one (lower/prefetch.py)
  index32: bool = False                      # index math in int32 where vmin/vmax prove it fits (GPUs: 64-bit math is slow)
  @property
  def isa(self) -> VectorISA | None: return None  # a CPU's vector registers (None: not a SIMD CPU, e.g. a GPU or the interpreter)
  def native_for(self, op: Ops, dtype: DType) -> bool:
    """Whether the device computes `op` on scalars of `dtype` itself (a renderer whose hardware has it for some float types only,
    such as AMD's exp2/log2 for float32/float16, narrows this)."""
    return op in self.native_ops
  def keeps_vector(self, u: UOp) -> bool:
    """Whether vector ALU u (or a vector CAST) is rendered as one vector op; else the devectorizer splits it into lanes."""
    return u.op in self.vector_alu and dtypes.is_float(u.dtype) and u.dtype.scalar() not in self.emulated_dtypes
  def render(self, uops: list[UOp], name: str = "kernel") -> str: raise NotImplementedError(f"{type(self).__name__} can't render")
  def threads_for(self, uops: list[UOp]) -> int:
    """How many host threads run the outermost GLOBAL loop (has_threads devices)."""
    return 1
  def __reduce__(self) -> tuple: return (type(self), ())
