"""The schedule cache: the same computation on other buffers reuses the schedule (and so the compiled kernels)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
import tg.tensor.schedule as sched
from tg.tensor import Tensor, Counters
from tg.tensor.realize import run_schedule

def test_same_graph_on_new_buffers_reuses_the_schedule(monkeypatch):
  built = []
  real = sched._schedule_uncached
  monkeypatch.setattr(sched, "_schedule_uncached", lambda outs: built.append(outs) or real(outs))
  a, b = Tensor([1.0, 2.0, 3.0]).realize(), Tensor([4.0, 5.0, 6.0]).realize()
  x, y = (a * 3.25 + 0.5).softmax(), (b * 3.25 + 0.5).softmax()   # constants no other test uses: a cold cache entry
  ix = x.schedule()
  Counters.reset()
  iy = y.schedule()
  assert len(built) == 1, "the second schedule came from the cache"
  assert [e.ast for e in ix] == [e.ast for e in iy] and all(p is not q for e, f in zip(ix, iy) for p, q in zip(e.bufs, f.bufs))
  run_schedule(ix); run_schedule(iy)
  assert Counters.compiled <= len(ix)  # (at most the first compile of each kernel; none for y's identical ones)
  for t, v in ((x, [1.0, 2.0, 3.0]), (y, [4.0, 5.0, 6.0])):
    e = np.exp(np.array(v) * 3.25 + 0.5)
    np.testing.assert_allclose(t.numpy(), e / e.sum(), rtol=1e-5)

@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), max_size=4))
def test_a_cache_hit_views_its_buffers_as_reshape_does(shape):
  """The cache-hit path builds its buffers' views without UOp.reshape's checks: the same UOp as reshape gives, for every
  shape of the buffer's size (0-d, (n,) itself, and with 1s)."""
  from tg.tensor.graph import new_buffer
  from tg.uop import dtypes
  b = new_buffer("CPU", int(np.prod(shape)), dtypes.float32)
  assert sched.buffer_view(b, tuple(shape)) is b.reshape(tuple(shape))

def test_reading_a_scheduled_tensor_before_its_items_run_raises():
  """Tensor.schedule() points the tensor at its buffer before any kernel wrote it: reading it then would be whatever the
  allocator handed out (zeros, or an earlier tensor's values), so it raises until run_schedule ran the items."""
  x = Tensor([1.0, 2.0]).realize() * 3
  items = x.schedule()
  with pytest.raises(RuntimeError, match="run_schedule"): x.numpy()
  y = x + 1  # a kernel reading x's buffer before it is written raises too, and leaves y unwritten, not wrong
  with pytest.raises(RuntimeError, match="run_schedule"): y.realize()
  with pytest.raises(RuntimeError, match="run_schedule"): y.numpy()
  run_schedule(items)
  np.testing.assert_array_equal(x.numpy(), [3.0, 6.0])
  np.testing.assert_array_equal((x + 1).numpy(), [4.0, 7.0])

def test_an_eager_training_step_schedules_from_the_cache():
  """Every step of an eager loop builds the same graph on new buffers: after the first steps each step is a cache hit.
  A matmul's and pow's backward is a closure made anew each call; the key held it, so every step added an entry (and
  scheduled again): the process grew without end."""
  from tg.tensor import nn
  from tg.tensor.nn import optim
  lin = nn.Linear(6, 3)
  opt = optim.Adam(nn.state.get_parameters(lin), lr=1e-2)
  x = Tensor(np.random.default_rng(0).standard_normal((4, 6), dtype=np.float32))
  sizes = []
  with Tensor.train():
    for _ in range(6):
      opt.zero_grad()
      (lin(x) ** 2.5).abs().sum().backward()
      opt.step()
      sizes.append(len(sched._cache))
  assert sizes[-1] == sizes[2], sizes

def test_the_cache_drops_its_oldest_entries_past_its_size(monkeypatch):
  monkeypatch.setattr(sched, "CACHE_ENTRIES", 3)
  monkeypatch.setattr(sched, "_cache", {})
  a = Tensor([1.0, 2.0]).realize()
  for k in range(6): (a * (100.5 + k)).realize()  # a graph of its own each (its constant)
  assert len(sched._cache) <= 3
  np.testing.assert_allclose((a * 100.5).numpy(), [100.5, 201.0])  # dropped, scheduled again
