"""Sharded tensors on virtual CPU devices (CPU, CPU:1, CPU:2), checked against numpy on the whole arrays: the split,
elementwise work, movement, reductions along and across the split axis, matmul with either operand split, allreduce (ring
and naive), gradients and optimizer steps equal to one device's, TinyJit replays, state dicts, and copies between devices."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.tensor import Tensor, TinyJit, Context, nn
from tg.tensor.multi import MultiDeviceError, split_bounds, allreduce, allreduce_kind, one_memory, unshard
from tg.tensor.schedule import schedule as multi_schedule
from tg.tensor.multi import schedule_multi as multi_schedule_multi
from tg.tensor.realize import Counters
from tg.tensor.jit import _Batch
from tg.codegen.devices.cpu_pool import Lanes
from tg.tensor.nn.optim import Adam, AdamW, SGD
from tg.tensor.nn.state import get_parameters, get_state_dict, load_state_dict
from tg.tensor.errors import TensorValueError
from tg.uop import Ops, UOp, AxisType, KernelInfo, dtypes

D2, D3 = ("CPU", "CPU:1"), ("CPU", "CPU:1", "CPU:2")
rng = np.random.default_rng(0)

def pieces(t: Tensor) -> list[np.ndarray]:
  """The realized shards, each read from its own device's buffer."""
  t.realize()
  assert t.uop.op is Ops.MULTI
  return [Tensor(u).numpy() for u in t.uop.src]

def test_split_bounds_is_tinygrads():
  assert split_bounds(6, 2) == [(0, 3), (3, 6)]
  assert split_bounds(5, 3) == [(0, 2), (2, 4), (4, 5)]
  assert split_bounds(2, 3) == [(0, 1), (1, 2), (2, 2)]

@pytest.mark.parametrize("n, devs", [(6, D2), (5, D3), (2, D3)])
def test_shard_places_pieces(n, devs):
  a = rng.standard_normal((n, 3)).astype(np.float32)
  t = Tensor(a).shard(devs, axis=0)
  assert t.device == devs and t.shape == (n, 3)
  got = pieces(t)
  for (lo, hi), p, d, u in zip(split_bounds(n, len(devs)), got, devs, t.uop.src):
    np.testing.assert_array_equal(p, a[lo:hi])
    assert Tensor(u).device == d
  np.testing.assert_array_equal(t.numpy(), a)

@pytest.mark.parametrize("shape, axis, direct", [((7, 3), 0, True), ((1, 5, 2), 1, True), ((4, 3), None, True),
                                                 ((3, 4), 1, False), ((2, 4), 0, False)])  # across rows; D3 leaves (2, 4)'s last piece empty
def test_sharding_realized_data_copies_bytes_without_a_schedule(monkeypatch, shape, axis, direct):
  """A realized tensor whose pieces are runs of its bytes is copied to the devices straight (a training batch sharded every
  step costs no schedule); other splits still schedule their copies. The pieces are the same either way."""
  import tg.tensor.multi as multi
  scheduled = []
  monkeypatch.setattr(multi, "schedule", lambda outs: scheduled.append(outs) or multi_schedule(outs))
  a = rng.standard_normal(shape).astype(np.float32)
  t = Tensor(a).shard(D3, axis=axis)
  assert (not scheduled) == direct
  got = pieces(t)
  if axis is None:
    for p in got: np.testing.assert_array_equal(p, a)
  else:
    for p, (lo, hi) in zip(got, split_bounds(shape[axis], 3)): np.testing.assert_array_equal(p, np.take(a, range(lo, hi), axis))
  np.testing.assert_array_equal(t.numpy(), a)

def test_replicated_has_whole_copies():
  a = rng.standard_normal((3, 2)).astype(np.float32)
  t = Tensor(a, device=D3)
  assert t.device == D3 and t.shard_axis is None
  for p in pieces(t): np.testing.assert_array_equal(p, a)

def test_reading_a_whole_copy_schedules_nothing(monkeypatch):
  """A data-parallel loss (a whole copy on every device) is read from its first device's buffer: .item() every training
  step used to schedule a copy to one device first (~170 us of Python on two devices). A split one is still gathered."""
  import tg.tensor.tensor as tensor_mod
  a = rng.standard_normal((4, 3)).astype(np.float32)
  loss, split = Tensor(a).shard(D2, axis=0).sum().realize(), Tensor(a).shard(D2, axis=0).realize()
  scheduled = []
  monkeypatch.setattr(tensor_mod, "schedule_multi", lambda *args: scheduled.append(args) or multi_schedule_multi(*args))
  assert np.isclose(loss.item(), a.sum(), rtol=1e-5) and not scheduled
  np.testing.assert_array_equal(split.numpy(), a)
  assert scheduled

def test_device_names_canonical():
  t = Tensor([1.0]).shard(("cpu:0", "cpu:1"))
  assert t.device == ("CPU", "CPU:1")
  assert Tensor([1.0], device="cpu:2").device == "CPU:2"

# movement of the split axis: a reshape keeping pieces whole, a shrink and a pad (pieces get uneven), a flip and a strided
# slice (gathered first), an expand beside it; reductions along and across it
OPS = [lambda x: x.T.reshape(-1) * 2 + 1, lambda x: x[1:4].pad(((1, 2), (0, 1))).sum(1), lambda x: x.flip(0)[::2].max(0),
       lambda x: x.softmax(0).mean(1, keepdim=True), lambda x: x.relu().argmax(0),
       lambda x: x.unsqueeze(1).expand(x.shape[0], 3, x.shape[1]).sum(1)]

@pytest.mark.parametrize("axis", [0, 1, None])
def test_ops_match_numpy(axis):
  a = rng.standard_normal((5, 4)).astype(np.float32)
  for op in OPS: np.testing.assert_allclose(op(Tensor(a).shard(D3, axis=axis)).numpy(), op(Tensor(a)).numpy(), rtol=1e-5, atol=1e-6)

@settings(max_examples=6, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=2), ndev=st.integers(2, 3), data=st.data())
def test_sharded_elementwise_and_reduce_property(shape, ndev, data):
  """For any shape, split axis, device count (empty pieces included) and reduce axis: the same values as numpy."""
  a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 3
  axis = data.draw(st.integers(0, len(shape) - 1))
  red = data.draw(st.integers(0, len(shape) - 1))
  t = Tensor(a).shard(D3[:ndev], axis=axis)
  np.testing.assert_allclose((t * t - 1).sum(red).numpy(), (a * a - 1).sum(red), rtol=1e-6)
  np.testing.assert_allclose(t.max(red).numpy(), a.max(red))

# 7 rows: uneven on 2 devices (4, 3) and on 3 (3, 3, 1)
REDUCES = [("sum", np.sum), ("max", np.max), ("min", np.min), ("mean", np.mean), ("argmax", np.argmax), ("argmin", np.argmin)]
A74 = rng.standard_normal((7, 4)).astype(np.float32)

@pytest.mark.parametrize("devs", [D2, D3])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("name, ref", REDUCES)
def test_reductions_along_and_across_uneven_shards(devs, axis, name, ref):
  """Each reduction over the split axis, the other one and everything, against numpy (the arg-reductions' first index)."""
  for red in (0, 1, None):
    got = getattr(Tensor(A74).shard(devs, axis=axis), name)(red).numpy()
    np.testing.assert_allclose(got, ref(A74, axis=red), rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("devs", [D2, D3])
def test_elementwise_between_sharded_and_replicated(devs):
  """Pieces meet pieces split the same way, another way (moved to match) or a whole copy (cut to the pieces), broadcast too."""
  row = A74[0]
  cases = [(Tensor(A74).shard(devs, axis=0) + Tensor(A74).shard(devs, axis=0), A74 + A74),
           (Tensor(A74).shard(devs, axis=0) * Tensor(A74).shard(devs, axis=1), A74 * A74),
           (Tensor(A74).shard(devs, axis=0) - Tensor(A74, device=devs), A74 - A74),
           (Tensor(A74).shard(devs, axis=0) * Tensor(row).shard(devs), A74 * row),
           (Tensor(A74).shard(devs, axis=1) / Tensor(row + 2).shard(devs, axis=0), A74 / (row + 2))]
  for got, want in cases:
    assert got.device == devs
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)

def test_shard_in_place_on_either_axis():
  for axis in (None, 1):
    t = Tensor(A74)
    assert t.shard_(D3, axis=axis) is t and t.device == D3 and t.shard_axis == axis
    np.testing.assert_array_equal(t.numpy(), A74)

@pytest.mark.parametrize("axis", [None, 0])
def test_a_reshape_of_lazy_shards_reads_them_once_realized(axis):
  """A tensor built on a reshape of lazy shards (nn.Linear's bias, broadcast) reads their buffers once they are realized: it
  was pointed at the first device's piece (a wrong shape for a split, a whole copy on one device for a replicated one)."""
  b = (Tensor.arange(4) * 2).float().shard(D2, axis=axis)
  y = b.reshape(1, 4) + 1
  b.realize()
  assert y.device == D2
  np.testing.assert_array_equal(y.numpy(), [[1, 3, 5, 7]])

@pytest.mark.parametrize("waxis", [0, 1])
@pytest.mark.parametrize("opt_cls", [SGD, AdamW])
def test_model_parallel_linear_trains_as_one_device(waxis, opt_cls):
  """nn.Linear with its (lazily initialized) weight split on out-features (0) or in-features (1, an allreduce of the
  partial products) over 3 devices, the batch split by rows: the same steps as on one device."""
  x = rng.standard_normal((7, 5)).astype(np.float32)
  def train(devs):
    Tensor.manual_seed(6)
    m = nn.Linear(5, 3)
    if devs:
      m.weight.shard_(devs, axis=waxis)
      m.bias.shard_(devs, axis=0 if waxis == 0 else None)
    opt = opt_cls(get_parameters(m), lr=0.1)
    with Tensor.train():
      for _ in range(3):
        opt.zero_grad()
        m(Tensor(x).shard(devs, axis=0) if devs else Tensor(x)).square().mean().backward()
        opt.step()
    return m.weight.numpy(), m.bias.numpy()
  for a, b in zip(train(D3), train(None)): np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

def test_call_on_sharded_tensors_runs_per_shard():
  """Tensor.call's expression on sharded tensors stays split, with its own gradient or grad_fxn's."""
  p0, p1 = UOp.param(0, dtypes.float, (7, 4)), UOp.param(1, dtypes.float, (7, 4))
  x = Tensor(A74, requires_grad=True)
  y = Tensor.call(x.shard(D3, axis=0), Tensor(A74, device=D3), fxn=p0 * p1 + 1.0)
  assert y.device == D3
  np.testing.assert_allclose(y.numpy(), A74 * A74 + 1, rtol=1e-6)
  y.sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), A74, rtol=1e-6)
  z = Tensor(A74, requires_grad=True)
  w = Tensor.call(z.shard(D2, axis=1), fxn=p0 * p0, grad_fxn=lambda g, call: ((Tensor(g) * 3).uop,))
  w.sum().backward()
  np.testing.assert_allclose(w.numpy(), A74 * A74, rtol=1e-6)
  np.testing.assert_array_equal(z.grad.numpy(), np.full_like(A74, 3))  # grad_fxn's, not the expression's 2 * z

@pytest.mark.parametrize("devs", [D2, D3])
@pytest.mark.parametrize("xaxis, waxis", [(0, None), (None, 1), (None, 0), (1, 0), (0, 1)])
def test_matmul_both_ways(xaxis, waxis, devs):
  """Data parallel (x split by rows), model parallel (w split by columns: no allreduce, or by rows: an allreduce); 7 rows
  and 5 inner: uneven pieces on either device count."""
  x, w = rng.standard_normal((7, 5)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
  got = Tensor(x).shard(devs, axis=xaxis) @ Tensor(w).shard(devs, axis=waxis)
  np.testing.assert_allclose(got.numpy(), x @ w, rtol=1e-5, atol=1e-5)

def test_model_parallel_keeps_output_split():
  x, w = rng.standard_normal((3, 5)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
  xs, ws = Tensor(x, device=D2).realize(), Tensor(w).shard(D2, axis=1).realize()
  out = xs @ ws
  Counters.reset()
  got = pieces(out)
  assert Counters.copies == 0  # each device multiplies by its columns: nothing moves
  np.testing.assert_allclose(np.concatenate(got, 1), x @ w, rtol=1e-5, atol=1e-5)

@pytest.mark.parametrize("ring", [0, 2, 3])
@pytest.mark.parametrize("devs", [D2, D3])
def test_allreduce_ring_naive_and_one_kernel(ring, devs):
  a = rng.standard_normal((len(devs), 7, 3)).astype(np.float32)
  t = Tensor(a).shard(devs, axis=0).realize()
  with Context(RING=ring):
    s = t.sum(0)
    Counters.reset()
    got = pieces(s)
  for p in got: np.testing.assert_allclose(p, a.sum(0), rtol=1e-5, atol=1e-6)
  assert all(np.array_equal(p, got[0]) for p in got)  # the same bits on every device
  n = len(devs)
  # ring: chunks there and back; naive: every value to every device; one kernel: none
  assert Counters.copies == {0: n * (n - 1), 2: 2 * n * (n - 1), 3: 0}[ring]

@pytest.mark.parametrize("ring", [2, 3])
def test_allreduce_max_and_ints(ring):
  a = rng.integers(-50, 50, (3, 6)).astype(np.int32)
  t = Tensor(a).shard(D3, axis=0)
  with Context(RING=ring):
    np.testing.assert_array_equal(t.max(0).numpy(), a.max(0))
    np.testing.assert_array_equal(t.sum(0).numpy(), a.sum(0))

def test_allreduce_direct():
  vals = [Tensor(np.full((4,), i + 1, np.float32), device=d).uop for i, d in enumerate(D3)]
  with Context(RING=2): outs = allreduce(vals, Ops.ADD)
  for o in outs: np.testing.assert_array_equal(Tensor(o).numpy(), np.full((4,), 6.0))

def _grads(devs, xaxis):
  x, w, y = rng_g.standard_normal((8, 5)).astype(np.float32), rng_g.standard_normal((5, 3)).astype(np.float32), np.arange(8) % 3
  W, X, Y = Tensor(w, requires_grad=True), Tensor(x), Tensor(y.astype(np.int32))
  if devs:
    W.to_(devs)
    X.shard_(devs, axis=xaxis)
    Y.shard_(devs, axis=0)
  loss = (X @ W).relu().sparse_categorical_crossentropy(Y)
  loss.backward()
  return loss.item(), W.grad.numpy()
rng_g = np.random.default_rng(1)

@pytest.mark.parametrize("devs", [D2, D3])
def test_gradients_equal_single_device(devs):
  global rng_g
  rng_g = np.random.default_rng(1)
  l0, g0 = _grads(None, 0)
  rng_g = np.random.default_rng(1)
  l1, g1 = _grads(devs, 0)
  assert l0 == pytest.approx(l1, rel=1e-6)
  np.testing.assert_allclose(g1, g0, rtol=1e-5, atol=1e-7)

@pytest.mark.parametrize("axis", [None, 0])
def test_a_loss_read_before_backward_still_passes_gradients(axis):
  """Printing a sharded loss (realizing it) before backward: the gradient still reaches the leaf sharded on the way, as on
  one device (it was None: autograd didn't look through the realized MULTI to what it replaced)."""
  x, w = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32)
  X = Tensor(x, requires_grad=True)
  loss = (X.shard(D3, axis=axis) @ Tensor(w, device=D3)).sum()
  assert loss.item() == pytest.approx((x @ w).sum(), rel=1e-5)
  loss.backward()
  np.testing.assert_allclose(X.grad.numpy(), np.broadcast_to(w.sum(1), (5, 3)), rtol=1e-5)

def test_gradient_through_shard():
  """Sharding a tensor that needs grad passes each piece's gradient back to it."""
  a = rng.standard_normal((5, 3)).astype(np.float32)
  x = Tensor(a, requires_grad=True)
  (x.shard(D3, axis=0) * Tensor(a).shard(D3, axis=0)).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), a, rtol=1e-6)
  y = Tensor(a, requires_grad=True)
  (y.to(D2) * 3).sum().backward()  # whole copies are one value: the gradient once, not once per device
  np.testing.assert_allclose(y.grad.numpy(), np.full_like(a, 3))

def _train(devs, opt_cls, steps=4, jit=False):
  Tensor.manual_seed(0)
  data = np.random.default_rng(2)
  xs, ys = data.standard_normal((steps, 8, 5)).astype(np.float32), data.integers(0, 3, (steps, 8)).astype(np.int32)
  m = nn.Linear(5, 3)
  if devs:
    for p in get_parameters(m): p.to_(devs)
  opt = opt_cls(get_parameters(m), lr=0.1)
  def step(x, y):
    with Tensor.train():
      opt.zero_grad()
      loss = m(x).sparse_categorical_crossentropy(y).backward()
      opt.step()
      return loss
  fn = TinyJit(step) if jit else step
  losses = []
  for i in range(steps):
    x, y = Tensor(xs[i]), Tensor(ys[i])
    if devs: x, y = x.shard(devs, axis=0), y.shard(devs, axis=0)
    losses.append(fn(x, y).item())
  return losses, m.weight, fn

@pytest.mark.parametrize("opt_cls", [SGD, Adam, AdamW])
def test_optimizer_on_sharded_params(opt_cls):
  l0, w0, _ = _train(None, opt_cls)
  l1, w1, _ = _train(D2, opt_cls)
  np.testing.assert_allclose(l1, l0, rtol=1e-5)
  assert w1.device == D2
  np.testing.assert_allclose(w1.numpy(), w0.numpy(), rtol=1e-5, atol=1e-6)
  for p in pieces(w1): np.testing.assert_array_equal(p, pieces(w1)[0])  # the copies stay identical

def test_a_value_built_before_an_assign_reads_the_old_shards():
  a = Tensor(np.arange(4, dtype=np.float32)).shard(D2, axis=0).realize()
  old = a * 3
  a.assign(a + 1)
  new = a * 2
  Tensor.realize_all(a, new, old)  # new reads the assign: before the fix old ran after it too
  np.testing.assert_array_equal(old.numpy(), np.arange(4) * 3)
  np.testing.assert_array_equal(new.numpy(), (np.arange(4) + 1) * 2)

def _mlp_steps(devs, steps=3):
  """Adam steps of a two-layer MLP under cross-entropy: each step's loss, gradients (realized with the update, as a
  training loop that logs them does) and updated weights."""
  Tensor.manual_seed(3)
  data = np.random.default_rng(4)
  model = [nn.Linear(6, 8), nn.Linear(8, 4)]
  params = get_parameters(model)
  if devs:
    for p in params: p.to_(devs)
  opt = Adam(params, lr=0.05)
  out = []
  for _ in range(steps):
    x, y = Tensor(data.standard_normal((10, 6)).astype(np.float32)), Tensor(data.integers(0, 4, 10).astype(np.int32))
    if devs: x, y = x.shard(devs, axis=0), y.shard(devs, axis=0)
    with Tensor.train():
      opt.zero_grad()
      loss = model[1](model[0](x).relu()).cross_entropy(y.one_hot(4).float()).backward()
      grads = [p.grad for p in params]
      Tensor.realize_all(loss, *grads, *opt.schedule_step())
    out.append((loss.item(), [g.numpy() for g in grads], [p.numpy() for p in params]))
  return out

def test_adam_cross_entropy_on_shards_equals_one_device():
  for (l0, g0, w0), (l1, g1, w1) in zip(_mlp_steps(None), _mlp_steps(("CPU:0", "CPU:1"))):
    assert l1 == pytest.approx(l0, rel=1e-5)
    for a, b in zip(g1 + w1, g0 + w0): np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("ring", [0, 1])
def test_jit_replays_multi_device_step(ring):
  l0, w0, _ = _train(None, Adam, steps=5)
  with Context(RING=ring): l1, w1, fn = _train(D2, Adam, steps=5, jit=True)
  assert fn.calls == 5 and {b.device for ei in fn.jit_cache for b in ei.bufs} == set(D2)
  copies = [ei for ei in fn.jit_cache if ei.ast.op is Ops.COPY]
  assert (len(copies) > 0) == (ring == 0)  # the naive allreduce's copies; the one-kernel one (the default on CPU:n) has none
  # each device's kernels in as few batches as the allreduce allows (naive: forward and backward, then the update, with
  # the copies between), never a lone kernel
  assert all(isinstance(x, _Batch) or x.runner is None for x in fn.launches)
  if ring == 0: assert [x.steps[0].item.bufs[0].device for x in fn.launches if isinstance(x, _Batch)] == ["CPU", "CPU:1", "CPU", "CPU:1"]
  np.testing.assert_allclose(l1, l0, rtol=1e-5)
  np.testing.assert_allclose(w1.numpy(), w0.numpy(), rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("threads, devs, lanes", [("2", D2, True), ("4", D2, False), ("2", D3, False)])
def test_jit_runs_cpu_devices_side_by_side_with_a_core_each(monkeypatch, threads, devs, lanes):
  """A replay of CPU:n kernels is one launch of lanes (a device per core, its kernels on that core) when there is a core
  for each device and no second one; per-device batches otherwise. The training equals one device's either way."""
  monkeypatch.setenv("CPU_THREADS", threads)
  l0, w0, _ = _train(None, Adam, steps=5)
  l1, w1, fn = _train(devs, Adam, steps=5, jit=True)
  assert (len(fn.launches) == 1 and isinstance(fn.launches[0], _Batch) and isinstance(fn.launches[0].graph.batch, Lanes)) == lanes
  np.testing.assert_allclose(l1, l0, rtol=1e-5)
  np.testing.assert_allclose(w1.numpy(), w0.numpy(), rtol=1e-5, atol=1e-6)

def test_assign_into_split_tensor():
  a, b = rng.standard_normal((5, 2)).astype(np.float32), rng.standard_normal((5, 2)).astype(np.float32)
  t = Tensor(a).shard(D3, axis=0).realize()
  t.assign(Tensor(b, device=D3)).realize()  # a whole copy is cut to the target's pieces
  np.testing.assert_array_equal(t.numpy(), b)
  t += 1
  np.testing.assert_array_equal(np.concatenate(pieces(t)), b + 1)

@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("view", ["cols", "rows", "transposed row", "reshape"])
def test_assign_into_a_view_of_a_sharded_tensor_writes_the_shards(axis, view):
  """A view of a sharded tensor is written through into its shards, as a view of one buffer is (the write went into a
  copy and was lost: out[:, 2:3].assign(v) left out unchanged)."""
  a = rng.standard_normal((6, 4)).astype(np.float32)
  sel = {"cols": lambda x: x[:, 2:3], "rows": lambda x: x[1:3], "transposed row": lambda x: x.T[1], "reshape": lambda x: x.reshape(3, 8)}[view]
  v = rng.standard_normal(sel(a).shape).astype(np.float32)
  t = Tensor(a).shard(D3, axis=axis).realize()
  sel(t).assign(Tensor(v).shard(D3)).realize()
  want = a.copy()
  sel(want)[...] = v
  np.testing.assert_array_equal(t.numpy(), want)
  assert t.device == D3

def test_load_state_dict_takes_a_sharded_values_placement():
  """tinygrad's rule: a sharded state dict tensor keeps its own devices and axis (the model's weight was on D2 by axis 1),
  unless the model is on one device: there it is gathered (a model stays unsharded)."""
  one = nn.Linear(4, 6)
  wn = rng.standard_normal((6, 4)).astype(np.float32)
  load_state_dict(one, {"weight": Tensor(wn).shard(D3, axis=1), "bias": Tensor.zeros(6).shard(D2)})
  assert one.weight.device == "CPU" and one.bias.device == "CPU"
  np.testing.assert_array_equal(one.weight.numpy(), wn)
  m = nn.Linear(4, 6)
  m.weight.shard_(D2, axis=1)
  w, b = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((6,)).astype(np.float32)
  load_state_dict(m, {"weight": Tensor(w).shard(D3, axis=0), "bias": Tensor(b)})
  assert m.weight.device == D3
  np.testing.assert_array_equal(m.weight.numpy(), w)
  np.testing.assert_array_equal(m.bias.numpy(), b)

def test_load_state_dict_into_sharded_params():
  m = nn.Linear(4, 6)
  m.weight.shard_(D2, axis=0)
  m.bias.shard_(D2, axis=0)
  w, b = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((6,)).astype(np.float32)
  load_state_dict(m, {"weight": Tensor(w), "bias": Tensor(b)})
  assert m.weight.device == D2
  np.testing.assert_array_equal(np.concatenate(pieces(m.weight)), w)
  np.testing.assert_array_equal(get_state_dict(m)["bias"].numpy(), b)
  x = rng.standard_normal((3, 4)).astype(np.float32)
  np.testing.assert_allclose(m(Tensor(x, device=D2)).numpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)

def test_to_one_device_gathers():
  a = rng.standard_normal((5, 3)).astype(np.float32)
  t = Tensor(a).shard(D3, axis=1)
  for dev in ("CPU:1", "CPU:3", "PYTHON"):
    g = t.to(dev)
    assert g.device == dev
    np.testing.assert_array_equal(g.numpy(), a)

def test_random_on_several_devices_matches_one():
  Tensor.manual_seed(5)
  one = Tensor.rand(4, 3).numpy()
  Tensor.manual_seed(5)
  many = Tensor.rand(4, 3, device=D2)
  assert many.device == D2
  np.testing.assert_array_equal(many.numpy(), one)

def test_errors():
  x, y = Tensor.ones(4).shard(D2, axis=0), Tensor.ones(4).shard(D3, axis=0)
  with pytest.raises(MultiDeviceError, match="different devices"): unshard([x.uop + y.uop])  # Tensor ops check before this
  with pytest.raises(MultiDeviceError, match="already sharded"): x.shard(D3)
  with pytest.raises(TensorValueError, match="appears twice"): Tensor.ones(4).shard(("CPU:1", "cpu:1"))
  with pytest.raises(RuntimeError, match="different devices"): x + Tensor.ones(4)

COPY_DEVICES = ["CPU", "CPU:1", "PYTHON", "PYTHON:1"]

@pytest.mark.parametrize("src", COPY_DEVICES)
@pytest.mark.parametrize("dst", COPY_DEVICES)
def test_copies_between_device_kinds(src, dst):
  a = np.arange(10, dtype=np.int32) * 3 - 7
  t = Tensor(a, device=src).to(dst)
  assert t.device == dst
  np.testing.assert_array_equal((t + 1).numpy(), a + 1)

@pytest.mark.parametrize("host", COPY_DEVICES)
def test_copies_to_and_from_null(host, monkeypatch):
  """The NULL rules with every host device kind: a copy into NULL:n runs (and stores nothing), NULL to NULL runs, a copy
  out of NULL is an error unless NULL_ALLOW_COPYOUT=1 (then zeros)."""
  a = np.arange(6, dtype=np.float32)
  n = Tensor(a, device=host).to("NULL:1")
  assert n.device == "NULL:1"
  n.to("NULL").realize()  # NULL to NULL runs (nothing to copy)
  with pytest.raises(RuntimeError, match="NULL device has no data"): n.to(host).realize()
  monkeypatch.setenv("NULL_ALLOW_COPYOUT", "1")
  np.testing.assert_array_equal(Tensor(a, device="NULL").to(host).numpy(), np.zeros(6))

def _gemm_k(C: UOp, A: UOp, B: UOp) -> UOp:
  i, j, k = UOp.range(C.shape[0], 0), UOp.range(C.shape[1], 1), UOp.range(A.shape[1], 2, AxisType.REDUCE)
  return C[i, j].store((A[i, k] * B[k, j]).reduce(k, arg=Ops.ADD)).end(i, j).sink(arg=KernelInfo(name="gemm"))

def test_custom_kernel_runs_once_per_shard():
  """tinygrad's sharded custom-kernel example: a gemm kernel on rows split over devices, B whole on each."""
  a, b = rng.standard_normal((5, 4)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
  c, _, _ = Tensor.custom_kernel(Tensor.empty(5, 3).shard(D2, axis=0), Tensor(a).shard(D2, axis=0), Tensor(b, device=D2), fxn=_gemm_k)
  assert c.device == D2
  Counters.reset()
  got = pieces(c)
  assert Counters.kernels == 2 and [p.shape for p in got] == [(3, 3), (2, 3)]  # one gemm per device, on its rows
  np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5, atol=1e-6)
  with pytest.raises(MultiDeviceError, match="same devices"): Tensor.custom_kernel(Tensor.empty(5, 3).shard(D2, axis=0), Tensor(a), fxn=_gemm_k)

def test_allreduce_kind():
  assert allreduce_kind(D2, 1 << 30) == allreduce_kind(D3, 4) == "kernel"  # CPU:n share the host's memory
  null2, null3 = ("NULL", "NULL:1"), ("NULL", "NULL:1", "NULL:2")
  assert not one_memory(null2) and not one_memory(("CPU", "PYTHON"))
  assert allreduce_kind(null3, 256 << 10) == "ring" and allreduce_kind(null3, (256 << 10) - 1) == allreduce_kind(null2, 1 << 30) == "naive"
  for ring, kind in ((0, "naive"), (2, "ring"), (3, "kernel")):
    with Context(RING=ring): assert allreduce_kind(null3, 1) == kind
  with Context(RING=4), pytest.raises(TensorValueError, match="RING=4"): allreduce_kind(D2, 4)
  with Context(RING=3), pytest.raises(MultiDeviceError, match="one host memory"):
    allreduce([Tensor.ones(4, device=d).uop for d in ("CPU", "PYTHON")], Ops.ADD)

@pytest.mark.parametrize("devs", [D2, D3])
def test_allreduce_default_on_cpu_devices_is_one_kernel(devs):
  a = rng.standard_normal((len(devs), 33)).astype(np.float32)
  t = Tensor(a).shard(devs, axis=0).realize()
  s = t.sum(0)
  Counters.reset()
  got = pieces(s)
  assert (Counters.copies, Counters.kernels) == (0, 1)  # the pieces are buffers: one kernel reads them all, writes every result
  for p in got: np.testing.assert_array_equal(p, got[0])
  np.testing.assert_allclose(got[0], a.sum(0), rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("nt_min", [0, 1 << 40])
def test_big_allreduce_stores_past_the_caches(nt_min):
  """From ALLREDUCE_NT_MIN_BYTES of results up the one kernel's stores are nontemporal (a plain store reads each line
  first), below it plain; the sums are the same either way, in a jitted replay too."""
  a = rng.standard_normal((2, 1000)).astype(np.float32)
  t = Tensor(a).shard(D2, axis=0).realize()
  with Context(ALLREDUCE_NT_MIN_BYTES=nt_min):
    step = TinyJit(lambda t: t.sum(0))
    got = [pieces(step(t)) for _ in range(3)]
  src = "".join(s.runner.p.src for s in step.steps if s.runner is not None and s.runner.p.name.startswith("allreduce"))
  assert src and ("tg_nt_store(" in src) == (nt_min == 0)
  for p in got[-1]: np.testing.assert_allclose(p, a.sum(0), rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("opt", [Adam, AdamW])
def test_optimizer_state_offloaded_to_the_cpu(opt):
  """A sharded parameter whose optimizer state was moved to the CPU (p.to_("CPU"), to save device memory) steps as with
  the state on its devices: the gradient goes to the state, the step back to the parameter's shards (tinygrad's
  test_lamb_cpu_offload; it raised 'tensors on different devices')."""
  w0 = rng.standard_normal((4, 6)).astype(np.float32)
  out = []
  for offload in (False, True):
    w = Tensor(w0, requires_grad=True).shard(D2, axis=1)
    o = opt([w])
    if offload:
      for s in o.m + o.v + [o.b1_t, o.b2_t]: s.to_("CPU")
    with Tensor.train():
      for _ in range(3):
        o.zero_grad()
        (w * w).sum().backward()
        o.step()
    assert w.device == D2 and o.m[0].device == ("CPU" if offload else D2)
    out.append(w.numpy())
  np.testing.assert_allclose(out[1], out[0], rtol=1e-6)
  assert not np.allclose(out[0], w0)

def test_shard_like():
  a, b = Tensor(rng.standard_normal((4, 6)).astype(np.float32)), Tensor.zeros(4, 6).shard(D3, axis=1)
  s = a.shard_like(b)
  assert s.device == D3 and s.shard_axis == 1
  np.testing.assert_array_equal(s.numpy(), a.numpy())
  assert s.shard_like(Tensor.zeros(1, device="CPU:1")).device == "CPU:1"

def test_a_sharded_constant_made_a_leaf():
  """t.requires_grad = True on a sharded constant (a BatchNorm's weight after shard_) gives it pieces of its own (it
  raised: a buffer was made on the tuple of devices); two equal ones keep their gradients apart."""
  w, w2 = Tensor.ones(3).shard(D2), Tensor.ones(3).shard(D2)
  w.requires_grad, w2.requires_grad = True, True
  (w * 2 + w2 * 3).sum().backward()
  np.testing.assert_array_equal(w.grad.numpy(), [2.0] * 3)
  np.testing.assert_array_equal(w2.grad.numpy(), [3.0] * 3)
  assert w.device == D2

def test_attention_of_sharded_tensors():
  """Flash attention's kernels read one buffer: on tensors sharded by batch they read the pieces as one (NaN, 7e13) and gave
  no gradient. Sharded attention takes the plain path, equal to the unsharded one (tinygrad's test_sdpa_causal_shard_batch)."""
  qn = rng.standard_normal((2, 1, 4, 4)).astype(np.float32)
  ref = Tensor(qn, requires_grad=True)
  want = ref.scaled_dot_product_attention(ref, ref, is_causal=True)
  want.sum().backward()
  q = Tensor(qn).shard(D2, 0)
  q.requires_grad_(True)
  out = q.scaled_dot_product_attention(q, q, is_causal=True)
  np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
  out.sum().backward()
  np.testing.assert_allclose(q.grad.numpy(), ref.grad.numpy(), rtol=1e-4, atol=1e-5)

def test_like_constructors_keep_the_split_and_where_checks_devices():
  """tinygrad's test_multitensor: rand_like, full_like and kin of a tensor sharded along an axis are split along it too
  (they were whole on each device), and take no device=; where() with its condition and values on different devices
  raises as + does (a sharded condition with values on one device gave a (4, 4) array for a (2, 4) shape)."""
  t = Tensor(rng.standard_normal((8, 6)).astype(np.float32)).shard(D2, axis=0)
  for make in (Tensor.rand_like, Tensor.randn_like, Tensor.zeros_like, Tensor.empty_like, lambda x: x.full_like(3.0)):
    like = make(t)
    assert like.device == D2 and like.shard_axis == 0 and like.shape == (8, 6) and like.dtype == t.dtype
  np.testing.assert_array_equal(t.full_like(3.0).numpy(), np.full((8, 6), 3.0, np.float32))
  r = Tensor.rand_like(t).numpy()
  assert ((r >= 0) & (r < 1)).all() and len(np.unique(r)) > 40
  with pytest.raises(RuntimeError, match="no device="): Tensor.rand_like(t, device=D3)
  assert Tensor.rand_like(t, requires_grad=True).requires_grad and Tensor.rand_like(t).requires_grad is None
  with pytest.raises(RuntimeError, match="different devices"): (t > 0).where(Tensor.ones(6), 0.0)
  with pytest.raises(RuntimeError, match="different devices"): Tensor.ones(6, dtype=dtypes.bool).where(t, 0.0)

def test_a_sharded_intermediate_realized_before_backward_keeps_the_gradients():
  """A weight sharded lazily is computed with the first realize of what reads it; its new pieces were not remembered as
  what it was, so a realized intermediate (h.realize(), h.shard_axis) left the weight without a gradient."""
  wn, xn = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
  want = (xn.T @ (xn @ wn > 0)).astype(np.float32)  # d sum(relu(x @ w)) / dw
  w = Tensor(wn, requires_grad=True)
  w.shard_(D2)
  h = (Tensor(xn).shard(D2, 0) @ w).relu()
  h.realize()
  h.sum().backward()
  np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-5, atol=1e-6)
