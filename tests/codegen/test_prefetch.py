"""Software prefetches on the CPU (tg.codegen.lower.prefetch): a load or store that moves a page or more per loop step
gets a prefetch of the address it touches some steps later; accesses that stream, loops doing little but load over data
that fits the caches, and short loops get none. The prefetched address is checked by evaluating both index expressions at every step of the loop."""
import numpy as np
from tg.uop import UOp, Ops, graph_rewrite, symbolic
from tg.tensor import Tensor
from tg.codegen import Device
from tg.codegen.pipeline import get_program
from tg.codegen.lower.prefetch import PAGE, AHEAD_OPS, MAX_AHEAD, BIG_OUTPUT, add_prefetches

def program(t: Tensor):
  (item,) = [ei for ei in t.schedule() if ei.ast.op is Ops.SINK]
  return get_program(item.ast, Device["CPU"].renderer)

def prefetches(p) -> list[tuple[UOp, UOp]]:
  """(prefetch, the load after it) pairs of a program."""
  return [(u, p.uops[i + 1]) for i, u in enumerate(p.uops) if u.op is Ops.CUSTOM and "prefetch" in u.arg]

def at(expr: UOp, values: dict[UOp, int]) -> int:
  out = graph_rewrite(expr.substitute({r: r.const_like(v) for r, v in values.items()}), symbolic)
  assert out.op is Ops.CONST, out
  return out.arg

def test_a_transpose_prefetches_the_rows_it_reads_later():
  """Each of a 16x16 transpose tile's loads reads a row 1 KB past the last one's, a tile of 16 rows = 16 KB per step: it
  prefetches its own address `ahead` steps on, and every address is exactly that (at every step of the loop)."""
  x = Tensor(np.arange(2048 * 256, dtype=np.float32).reshape(2048, 256)).realize()
  p = program(x.T.contiguous())
  pairs = prefetches(p)
  loads = [u for u in p.uops if u.op is Ops.LOAD]
  assert len(pairs) == len(loads) >= 8 and all(ld.op is Ops.LOAD for _, ld in pairs)
  for pf, ld in pairs:
    want, got = ld.src[0].src[0] if ld.src[0].op is Ops.CAST else ld.src[0], pf.src[0]
    ranges = [r for r in got.src[1].toposort() if r.op is Ops.RANGE]
    step = max(ranges, key=lambda r: r.arg)  # the innermost loop: its steps are 16 KB apart
    outer = {r: 1 for r in ranges if r is not step}
    stride = at(want.src[1], {**outer, step: 1}) - at(want.src[1], {**outer, step: 0})
    assert stride * 4 >= PAGE
    ahead = (at(got.src[1], {**outer, step: 0}) - at(want.src[1], {**outer, step: 0})) // stride
    assert 1 <= ahead <= MAX_AHEAD
    for s in range(step.src[0].arg):
      assert at(got.src[1], {**outer, step: s}) == at(want.src[1], {**outer, step: s + ahead})
  np.testing.assert_array_equal(x.T.contiguous().numpy(), np.arange(2048 * 256, dtype=np.float32).reshape(2048, 256).T)

def test_streams_plain_loads_and_short_loops_get_none():
  """A contiguous copy streams; a column sum of 4 MB does little but load (its misses overlap by themselves, and its data
  fits the caches); a channels-last copy of 64 channels steps 4 times through its channel loop, too short to prefetch
  `ahead` steps of."""
  x = Tensor(np.ones((1024, 1024), dtype=np.float32)).realize()
  assert not prefetches(program(x + 1))
  assert not prefetches(program(x.sum(0)))
  assert not prefetches(program(Tensor(np.ones((4, 64, 56, 56), dtype=np.float32)).realize().permute(0, 2, 3, 1).contiguous()))

def loop_of_64(out_elements: int) -> tuple[list[UOp], UOp, UOp, UOp]:
  """A hand-made loop of 64 steps whose body loads a value 8 KB from the last, adds to it 99 times and stores the sum 8 KB
  from the last into a buffer of out_elements floats: (its uops, the range, the load, the store)."""
  from tg.uop import dtypes, AxisType
  src, dst = UOp.param(1, dtypes.float, (64 * 2048,)), UOp.param(0, dtypes.float, (out_elements,))
  r = UOp.range(64, 0, AxisType.LOOP)
  load = UOp(Ops.LOAD, dtypes.float, (src.index(r * 2048),))
  body = [load] + [load + float(i) for i in range(99)]
  store = dst.index(r * 2048).store(body[-1])
  uops = [src, dst, *r.toposort(), *load.toposort(), *body, *store.toposort(), UOp(Ops.END, dtypes.void, (store, r))]
  return list(dict.fromkeys(uops)), r, load, store

def test_the_prefetch_distance_covers_the_latency():
  """A loop step doing `work` operations prefetches ceil(AHEAD_OPS / work) steps ahead (at least 1, at most MAX_AHEAD),
  for writing before a store into a buffer bigger than a core's cache (BIG_OUTPUT)."""
  uops, r, load, store = loop_of_64(BIG_OUTPUT // 4)
  out = add_prefetches(uops, "read({0})", "write({0})")
  (pr,), (pw,) = [u for u in out if u.op is Ops.CUSTOM and u.arg == "read({0})"], [u for u in out if u.op is Ops.CUSTOM and u.arg == "write({0})"]
  assert out.index(pr) < out.index(load) and out.index(pw) < out.index(store)
  assert pr.src[0].src[0] is load.src[0].src[0] and pw.src[0].src[0] is store.src[0].src[0]
  work = sum(1 for u in uops[uops.index(r) + 1:-1] if u.op not in (Ops.CONST, Ops.VCONST))
  ahead = max(1, min(MAX_AHEAD, -(-AHEAD_OPS // work)))
  assert at(pr.src[0].src[1], {r: 0}) == at(pw.src[0].src[1], {r: 0}) == ahead * 2048

def test_stores_into_a_buffer_that_fits_the_cache_get_none():
  uops, *_ = loop_of_64(64 * 2048)
  assert [u.arg for u in add_prefetches(uops, "read({0})", "write({0})") if u.op is Ops.CUSTOM] == ["read({0})"]

def test_a_walk_through_memory_prefetches_even_when_it_only_loads():
  """x @ B with B 4096 x 4096 (64 MB) walks down B a few rows a step, each row's piece on a page of its own: from memory
  it waits at every page, loads being all it does or not (FAR)."""
  p = program(Tensor.empty(4096) @ Tensor.empty(4096, 4096))
  assert len(prefetches(p)) >= 8
  for pf, ld in prefetches(p): assert pf.src[0].src[0] is (ld.src[0].src[0] if ld.src[0].op is Ops.CAST else ld.src[0]).src[0]
