"""Software prefetches for loads and stores that move a page or more per loop step (CPU). The hardware prefetchers follow
a stream only within a 4 KB page, so a loop that walks down a column strip of a wide matrix (a transpose's rows, a matmul
epilogue's input and output one tile of rows per step) waits out the memory's latency on every line not in cache, a
store's as well (the line is read before it is written). Such an access gets a prefetch of the address it touches
`ahead` steps later, for writing if it stores: enough steps that about AHEAD_OPS operations run in between. A transpose
of a 2048x256 matrix written by the kernel before read 8 GB/s without."""
from __future__ import annotations
import math
from collections import Counter
from tg.uop import UOp, Ops, PtrDType, dtypes
from tg.codegen.ranges import shifted, stride

PAGE = 4096
AHEAD_OPS = 2000  # operations that run while a line arrives (~300 ns from memory at ~3 per cycle and 3 GHz)
MAX_AHEAD = 16
MIN_WORK = 8  # operations per prefetched access in a loop's step
FAR = 16 << 20  # bytes a loop walks that come from memory, not a cache
BIG_OUTPUT = 4 << 20  # bytes of a buffer whose stores get prefetches, more than a core's L2: a smaller output is likely in cache
# already (written by the last call of a loop), and prefetching it slowed matmuls of 256 and 512 by 6-10%, where 8 MB made 10% faster

def _index(access: UOp) -> UOp | None:
  """The INDEX a load or store goes through (a vector one through a CAST of it), if it is one into a kernel buffer."""
  idx = access.src[0].src[0] if access.src[0].op is Ops.CAST else access.src[0]
  return idx if idx.op is Ops.INDEX and idx.src[0].op is Ops.PARAM else None

def _work(uops: list[UOp]) -> dict[UOp, int]:
  """Operations one step of each loop runs: its body's, an inner loop's times its trip count (16 when not a constant)."""
  work: dict[UOp, int] = {}
  stack: list[UOp] = []
  for u in uops:
    if u.op is Ops.RANGE:
      stack.append(u)
      work[u] = 0
    elif u.op is Ops.END and stack:
      r = stack.pop()
      if stack: work[stack[-1]] += work[r] * (r.src[0].arg if r.src[0].op is Ops.CONST else 16)
    elif stack and u.op not in (Ops.CONST, Ops.VCONST): work[stack[-1]] += 1
  return work

def _trips(r: UOp) -> int:
  """A loop's trip count (a large one when it is not a constant)."""
  return r.src[0].arg if r.src[0].op is Ops.CONST else 1 << 30

def _ahead(work: int) -> int:
  """Steps ahead to prefetch in a loop doing `work` operations a step."""
  return max(1, min(MAX_AHEAD, math.ceil(AHEAD_OPS / max(work, 1))))

def _spans_pages(index: UOp, buf: PtrDType) -> bool:
  """Can an index into buf move a page per step for 4 steps (the fewest a prefetched loop runs)? A cheap test before
  stride's rewrite, which cost 20 ms a kernel in small kernels of many loads."""
  return (index.vmax - index.vmin) * buf.base.itemsize >= 3 * PAGE if isinstance(index.vmax, int) and isinstance(index.vmin, int) else True

def add_prefetches(uops: list[UOp], read: str, write: str) -> list[UOp]:
  """uops (a linearized kernel) with a CUSTOM statement (C, {0} the address: `read` before a load, `write` before a
  store into a buffer of BIG_OUTPUT bytes or more) before each access whose address moves a page or more per step of the
  innermost loop it depends on, in loops that run at least 4 times the steps ahead (a short loop's prefetches would
  mostly land past its end) and either do MIN_WORK operations per such access or walk FAR bytes: a loop doing little but
  load keeps many misses in flight by itself, and where its data fits the caches (a bias gradient's column sum)
  prefetches only take its load slots; from memory it still waits at every page (x @ B 4096: 24.5-25.8 -> 27.6-27.8
  GFLOP/s)."""
  work, loops = _work(uops), []
  found: dict[UOp, tuple[UOp, UOp, int]] = {}  # access -> (its INDEX, the loop it strides over, bytes a step)
  for u in uops:
    if u.op is Ops.RANGE: loops.append(u)
    elif u.op is Ops.END and loops: loops.pop()
    elif u.op in (Ops.LOAD, Ops.STORE) and (idx := _index(u)) is not None and isinstance(buf := idx.src[0].dtype, PtrDType) and \
         (u.op is Ops.LOAD or buf.size * buf.base.itemsize >= BIG_OUTPUT):
      deps = idx.src[1].toposort()
      r = next((r for r in reversed(loops) if r in deps), None)
      if r is not None and _trips(r) >= 4 * _ahead(work[r]) and _spans_pages(idx.src[1], buf) and \
         (step := stride(idx.src[1], r)) is not None and (moved := abs(step) * buf.base.itemsize) >= PAGE: found[u] = (idx, r, moved)
  per_loop = Counter(r for _, r, _ in found.values())
  out, have = [], set(uops)
  for u in uops:
    if u in found and (work[r := found[u][1]] >= MIN_WORK * per_loop[r] or _trips(r) * found[u][2] >= FAR):
      ahead = _ahead(work[r])
      idx = found[u][0]
      at = idx.replace(src=(idx.src[0], shifted(idx.src[1], r, ahead)))  # ungated: a prefetch can't fault
      pf = UOp(Ops.CUSTOM, dtypes.void, (at,), write if u.op is Ops.STORE else read)
      out += (new := [x for x in pf.toposort() if x not in have])
      have.update(new)
    out.append(u)
  return out
