"""GlobalCounters, Timing, Context(NOOPT/BEAM/DEBUG) and DEBUG=2's per-launch lines, as tinygrad users rely on them."""
import gc
import numpy as np
from tg.tensor import Tensor, GlobalCounters, Timing, Context
from tg.tensor.realize import get_runner
from tg.codegen import Buffer

def test_global_counters_count_ops_bytes_and_launches():
  n = 1000
  a, b = Tensor(np.ones(n, np.float32)).realize(), Tensor(np.ones(n, np.float32)).realize()
  (a + b).realize()  # compiled outside the count
  GlobalCounters.reset()
  for _ in range(3): (a + b).realize()
  assert GlobalCounters.kernel_count == 3
  assert GlobalCounters.global_ops == 3 * n  # one add per element
  assert GlobalCounters.global_mem == 3 * 3 * 4 * n  # two float32 loads and a store per element
  assert GlobalCounters.time_sum_s == 0.0  # launches are timed only with DEBUG >= 2

def _owned_bytes() -> int:
  """The bytes of every live Buffer that owns device memory, found by walking the heap: what mem_used must equal."""
  gc.collect()
  return sum(b.nbytes for b in gc.get_objects() if isinstance(b, Buffer) and b._owned)

def test_mem_used_is_live_device_bytes():
  live = _owned_bytes()
  assert GlobalCounters.mem_used == live
  t = Tensor.ones(256, 100).contiguous().realize()
  v = t.reshape(100, 256)  # a view allocates nothing
  assert v.numpy().shape == (100, 256)
  with_t = _owned_bytes()  # (collects garbage first: read mem_used after)
  assert GlobalCounters.mem_used == with_t
  del t, v
  without = _owned_bytes()
  assert GlobalCounters.mem_used == without <= with_t - 256 * 100 * 4  # (buffers of earlier tests may go too)

def test_mem_peak_is_the_high_point_since_reset():
  gc.collect()
  GlobalCounters.reset()
  assert GlobalCounters.mem_peak == GlobalCounters.mem_used
  t = Tensor.ones(256, 100).contiguous().realize()
  u = Tensor.ones(100).contiguous().realize()
  both = GlobalCounters.mem_used
  del t, u
  gc.collect()
  assert GlobalCounters.mem_used <= both - (256 * 100 + 100) * 4 and GlobalCounters.mem_peak >= both  # (other tests' buffers may go too)
  GlobalCounters.reset()
  assert GlobalCounters.mem_peak == GlobalCounters.mem_used < both

def test_a_chain_of_kernels_holds_two_intermediate_buffers_at_a_time():
  # every intermediate buffer lived until the whole schedule had run: the peak was the sum of them all (8 here)
  n = 1 << 18
  x = np.arange(n, dtype=np.float32)
  y = Tensor(x).realize()
  for i in range(8): y = (y * 0.5 + i).contiguous()  # eight kernels, each into a buffer of its own
  gc.collect()
  GlobalCounters.reset()
  before = GlobalCounters.mem_used
  out = y.numpy()
  assert GlobalCounters.mem_peak - before <= 2 * 4 * n, "a kernel's input and output at most: each input freed after it"
  want = x.copy()
  for i in range(8): want = want * 0.5 + i
  np.testing.assert_allclose(out, want, rtol=1e-6)

def test_debug2_prints_every_launch(capsys):
  a = Tensor(np.arange(64, dtype=np.float32)).realize()
  (a * 2).realize()
  capsys.readouterr()
  GlobalCounters.reset()
  with Context(DEBUG=2):
    for _ in range(3): (a * 2).realize()
  lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("***")]
  assert len(lines) == 3 and all("E_" in ln and "us" in ln and "GFLOP/s" in ln and "GB/s" in ln and "global" in ln for ln in lines)
  assert GlobalCounters.time_sum_s > 0

def test_debug2_prints_a_jit_replays_batch(capsys):
  """A replay launches its kernels with one call: DEBUG=2 prints one line for them, with their names and the time of all."""
  from tg.tensor.jit import TinyJit
  f = TinyJit(lambda a: ((a + 1).contiguous() * 2).sum().realize())
  a = Tensor(np.arange(64, dtype=np.float32)).realize()
  for _ in range(2): f(a)
  capsys.readouterr()
  GlobalCounters.reset()
  with Context(DEBUG=2): out = f(a).item()
  lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("***")]
  assert len(lines) == 1 and "batch of 2 kernels" in lines[0] and "E_64" in lines[0] and " us " in lines[0], lines
  assert GlobalCounters.kernel_count == 2 and GlobalCounters.time_sum_s > 0
  assert out == ((np.arange(64) + 1) * 2).sum()

def test_timing(capsys):
  with Timing("step ", on_exit=lambda ns: f" ({ns} ns)") as tm:
    sum(range(1000))
  out = capsys.readouterr().out
  assert out.startswith("step ") and " ms (" in out and tm.elapsed_ns > 0 and str(tm.elapsed_ns) in out
  with Timing(enabled=False): pass
  assert capsys.readouterr().out == ""

def test_noopt_context_builds_kernels_without_opts():
  x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
  a = Tensor(x).realize()
  ast = (a @ a).schedule()[-1].ast
  assert get_runner(ast, "CPU").p.applied_opts  # the heuristics optimize a matmul
  with Context(NOOPT=1, BEAM=0):
    assert get_runner(ast, "CPU").p.applied_opts == ()
    np.testing.assert_allclose((a @ a).numpy(), x @ x, rtol=1e-4, atol=1e-4)
