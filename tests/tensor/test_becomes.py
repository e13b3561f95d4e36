"""After a realize, every live tensor whose graph holds a UOp that was just computed into a buffer reads that buffer:
nothing is computed twice, and a value computed before an in-place assign is not recomputed from the assigned buffer."""
import gc
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.uop import UOp, KernelInfo
import tg.tensor.schedule as sched
from tg.tensor import Tensor, Counters, dtypes, nn
from tg.tensor.jit import TinyJit

rng = np.random.default_rng(7)
def rand(*shape): return rng.standard_normal(shape).astype(np.float32)

def np_loss(x: np.ndarray, y: np.ndarray, w: np.ndarray, b: np.ndarray | float = 0.0) -> float:
  logits = x @ w.T + b
  z = logits - logits.max(1, keepdims=True)
  logp = z - np.log(np.exp(z).sum(1, keepdims=True))
  return float(-logp[np.arange(len(y)), y].mean())

def test_a_realized_reduce_is_not_computed_again(monkeypatch):
  built = []
  real = sched._schedule_uncached
  monkeypatch.setattr(sched, "_schedule_uncached", lambda outs: built.append(outs) or real(outs))
  for i in range(2):  # the second time on new data: both schedules come from the cache, the map too
    x = rand(16, 8) + i
    a = Tensor(x).realize()
    m = a.max(1, keepdim=True)
    y = (a - m).exp()              # kernels: the max (broadcast again, so it gets a buffer), then exp
    z = (a - m).square().sum(1)    # the same max: on its own it would be two kernels too
    Counters.reset()
    y.realize()
    assert Counters.kernels == 2
    Counters.reset()
    np.testing.assert_allclose(z.numpy(), np.square(x - x.max(1, keepdims=True)).sum(1), rtol=1e-5)
    assert Counters.kernels == 1, "z reads the max y's realize computed: only its own sum runs"
    np.testing.assert_allclose(y.numpy(), np.exp(x - x.max(1, keepdims=True)), rtol=1e-5)
    if i == 0: n_built = len(built)
  assert len(built) == n_built, "cache hits"

def test_with_bound_variables(monkeypatch):
  built = []
  real = sched._schedule_uncached
  monkeypatch.setattr(sched, "_schedule_uncached", lambda outs: built.append(outs) or real(outs))
  m = rand(8, 3)
  tm = Tensor(m).realize()
  for i, k in enumerate((3, 6, 2)):
    part = tm.shrink(((0, UOp.variable("n", 1, 8).bind(k)), None))
    s = part.sum(0, keepdim=True)
    y, z = (part - s).square().sum(0), (part * s).sum(0)  # both broadcast s: alone, each is two kernels
    Counters.reset()
    y.realize()
    assert Counters.kernels == 2
    Counters.reset()
    np.testing.assert_allclose(z.numpy(), (m[:k] * m[:k].sum(0)).sum(0), rtol=1e-5)
    assert Counters.kernels == 1, f"n={k}: z reads the s y's realize computed"
    np.testing.assert_allclose(y.numpy(), np.square(m[:k] - m[:k].sum(0)).sum(0), rtol=1e-5)
    if i == 0: n_built = len(built)
  assert len(built) == n_built, "other values of n hit the cache"

def test_every_live_tensor_sees_the_buffers_and_nothing_is_recomputed():
  x = rand(4, 8)
  a = Tensor(x).realize()
  sm = a.softmax(1)
  twice = sm * 2                 # built on sm before sm is realized
  sm.realize()
  Counters.reset()
  np.testing.assert_allclose(twice.numpy(), 2 * np.exp(x) / np.exp(x).sum(1, keepdims=True), rtol=1e-5)
  assert Counters.kernels == 1, "sm is a buffer in twice's graph: one elementwise kernel, not the softmax's three again"

def test_a_tensor_realized_alone_is_read_by_the_tensors_built_on_it():
  # the walk that points other tensors at the buffers ran only when a schedule realized more than its outputs: a lazy z
  # built on x computed x again, from its inputs as they are when z is realized
  mem = np.arange(4, dtype=np.float32)
  x = Tensor.from_blob(mem.ctypes.data, (4,), dtype=dtypes.float32) * 2
  z = x + 1
  x.realize()
  mem[:] = 100                   # x's input changes after x is computed
  Counters.reset()
  np.testing.assert_array_equal(z.numpy(), np.arange(4) * 2 + 1)
  assert Counters.kernels == 1, "z reads x's buffer: its add is the only kernel"
  r = Tensor.rand(64)
  twice = r * 2
  r.realize()
  Counters.reset()
  np.testing.assert_array_equal(twice.numpy(), r.numpy() * 2)
  assert Counters.kernels == 1, "the random numbers are not drawn again"

def test_equal_tensors_built_on_their_own_stay_apart():
  # equal graphs are one UOp: pointing rv at the buffer w was realized into made w's assign write rv (BatchNorm's weight
  # and running_var are both Tensor.ones(n))
  w, rv = Tensor.ones(3), Tensor.ones(3)
  w.assign(Tensor([2.0, 3.0, 4.0])).realize()  # realizes w (its ones) into a buffer, then writes it
  np.testing.assert_array_equal(rv.numpy(), [1.0, 1.0, 1.0])
  rv.assign(rv * 5).realize()
  np.testing.assert_array_equal(w.numpy(), [2.0, 3.0, 4.0])
  np.testing.assert_array_equal(rv.numpy(), [5.0, 5.0, 5.0])

@pytest.mark.parametrize("write", ["assign", "setitem"])
def test_equal_tensors_realized_together_stay_apart(write):
  # realized in one schedule, the two equal graphs (one UOp) were given one buffer: writing a wrote b (PyTorch: apart)
  a, b = Tensor.ones(3).contiguous(), Tensor.ones(3).contiguous()
  Tensor.realize(a, b)
  if write == "assign": a.assign(a + 1).realize()
  else: a[1] = 5.0
  np.testing.assert_array_equal(a.numpy(), [2.0, 2.0, 2.0] if write == "assign" else [1.0, 5.0, 1.0])
  np.testing.assert_array_equal(b.numpy(), [1.0, 1.0, 1.0])

def _step(model, opt, x: Tensor, y: Tensor) -> Tensor:
  with Tensor.train():
    opt.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y)
    loss.backward()
    opt.step()
  return loss

# The bias add after the matmul is not a realized point (it fuses into the kernels that read the logits): the loss is
# realized with the step, before the update, or it would add the updated bias to the logits computed before the update.
def test_the_loss_returned_by_a_training_step_is_the_loss_before_the_update():
  Tensor.manual_seed(1)
  model = nn.Linear(6, 4)
  opt = nn.optim.SGD([model.weight, model.bias], lr=0.5)
  for i in range(3):  # the first call schedules, the later ones hit the schedule cache (new data, same graph)
    x, y = rand(8, 6), rng.integers(0, 4, 8).astype(np.int32)
    w, b = model.weight.numpy(), model.bias.numpy()
    loss = _step(model, opt, Tensor(x), Tensor(y)).item()
    assert not np.allclose(model.bias.numpy(), b), "the step updated the bias"
    np.testing.assert_allclose(loss, np_loss(x, y, w, b), rtol=1e-5, err_msg=f"step {i}")
    assert abs(np_loss(x, y, model.weight.numpy(), model.bias.numpy()) - loss) > 1e-3, "(and the loss after the update differs)"

def test_the_forward_runs_once_per_training_step():
  Tensor.manual_seed(2)
  model = nn.Linear(6, 4)
  opt = nn.optim.Adam([model.weight, model.bias], lr=0.1)
  x, y = Tensor(rand(8, 6)), Tensor(rng.integers(0, 4, 8).astype(np.int32))
  _step(model, opt, x, y).item()
  Counters.reset()
  loss = _step(model, opt, x, y)
  step_kernels = Counters.kernels
  loss.item()
  # the step realized the loss too (it reads the weights the step writes): nothing is left to run, the forward included
  assert Counters.kernels - step_kernels == 0

@pytest.mark.parametrize("realize", [None, "a metric", "the output"])
def test_a_value_realized_before_backward_still_passes_gradients(realize):
  x, w = rand(8, 6), rand(4, 6)
  tw = Tensor(w, requires_grad=True)
  out = (Tensor(x) @ tw.T).softmax(1)
  loss = (out * Tensor(x[:, :4])).sum()
  # either realizes the matmul, the softmax's max and sum into buffers, which out and loss then read
  if realize == "a metric": out.argmax(1).numpy()
  if realize == "the output": out.realize()
  loss.backward()
  e = np.exp(x @ w.T - (x @ w.T).max(1, keepdims=True))
  sm = e / e.sum(1, keepdims=True)
  g = x[:, :4]
  dlogits = sm * (g - (sm * g).sum(1, keepdims=True))
  assert tw.grad is not None
  np.testing.assert_allclose(tw.grad.numpy(), dlogits.T @ x, rtol=1e-4, atol=1e-5)

def test_a_realized_reshape_of_a_leaf_still_passes_gradients():
  """x.reshape(3, 2) read before backward: realizing it collapsed its reshapes onto x's buffer, and x got no gradient."""
  x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
  y = x.reshape(3, 2)
  y.numpy()
  g = np.arange(6, dtype=np.float32).reshape(3, 2) - 2
  (y * Tensor(g)).sum().backward()
  assert x.grad is not None
  np.testing.assert_array_equal(x.grad.numpy(), g.reshape(2, 3))

def test_a_leaf_realized_after_the_loss_still_gets_its_gradient():
  """loss.item(), then w.numpy() (a random leaf, unrealized until the loss was), then backward: w.grad was None. The
  loss's graph holds w's graph from before w was realized; autograd now knows it as w."""
  Tensor.manual_seed(5)
  w = Tensor.randn(3, requires_grad=True)
  loss = (w * w).sum()
  loss.item()
  wv = w.numpy()
  loss.backward()
  assert w.grad is not None
  np.testing.assert_allclose(w.grad.numpy(), 2 * wv, rtol=1e-6)

@pytest.mark.parametrize("realize", ["the product", "the loss"])
def test_backward_through_a_realized_value_does_not_run_its_assign_again(realize):
  """x += 1, then z = x * w realized, then backward: the gradient of w is x after the one increment. The graph autograd
  restores for z holds the ASSIGN, which ran when z was realized: running it again gave w.grad x + 2 and left x + 2."""
  x, w = Tensor([1.0, 2.0, 3.0]).realize(), Tensor([1.0, 1.0, 1.0], requires_grad=True)
  x += 1
  z = x * w
  loss = z.sum()
  (z if realize == "the product" else loss).numpy()
  loss.backward()
  np.testing.assert_array_equal(w.grad.numpy(), [2.0, 3.0, 4.0])
  np.testing.assert_array_equal(x.numpy(), [2.0, 3.0, 4.0])

def test_an_assign_is_not_run_again_by_a_tensor_built_on_it():
  a = Tensor([1.0, 2.0]).realize()
  b = a.assign(a + 1)
  c = b * 2                      # reads the assign
  (b - b.sum()).realize()        # runs the assign (and a sum)
  np.testing.assert_allclose(c.numpy(), [4.0, 6.0])
  np.testing.assert_allclose(a.numpy(), [2.0, 3.0], err_msg="the assign ran once")

def test_a_tensor_built_after_an_assign_reads_the_new_values():
  x = rand(5)
  a = Tensor(x).realize()
  s = a.sum()                    # live while a.sum() is realized below
  (a - a.sum()).realize()        # the sum gets a buffer: s becomes it
  a.assign(a * 2).realize()
  s2 = a.sum()                   # the same UOps as s's old graph (hash-consing), but built after the assign
  np.testing.assert_allclose(s2.numpy(), 2 * x.sum(), rtol=1e-5)
  np.testing.assert_allclose(s.numpy(), x.sum(), rtol=1e-5, err_msg="s was computed before the assign")
  np.testing.assert_allclose((a * 1).numpy(), 2 * x, rtol=1e-6)

def test_a_tensor_built_before_an_assign_reads_the_value_before_it():
  # c reads buffer a (the map put it there); realizing the next assign to a realizes c first, as PyTorch would compute it
  a = Tensor([1.0, 2.0]).realize()
  b = a.assign(a * 3)
  c = b + 1
  (b - b.sum()).realize()
  a.assign(a + 10).realize()
  np.testing.assert_allclose(c.numpy(), [4.0, 7.0])
  np.testing.assert_allclose((a + 1).numpy(), [14.0, 17.0])

def test_a_value_built_before_an_assign_realized_with_one_built_after_reads_the_old_values():
  # realized together: the reader of the new values runs after the assign, the reader of the old ones before it
  a = Tensor([0.0, 1.0, 2.0]).realize()
  old = a * 3
  a.assign(a + 1)
  new = a * 2
  Tensor.realize_all(a, new, old)
  np.testing.assert_array_equal(old.numpy(), [0.0, 3.0, 6.0])
  np.testing.assert_array_equal(new.numpy(), [2.0, 4.0, 6.0])

@pytest.mark.parametrize("swap", [lambda a, b: (a * 1, b + 1), lambda a, b: (a * 1, b * 1)])
def test_assigns_that_read_each_others_old_values(swap):
  # a = f(b), b = g(old a), realized together: neither can wait for the other's readers, one value gets its own buffer first
  x, y = np.array([1.0, 2.0], np.float32), np.array([10.0, 20.0], np.float32)
  a, b = Tensor(x).realize(), Tensor(y).realize()
  old_a, new_a = swap(a, b)
  a.assign(new_a)
  b.assign(old_a + 1)
  Tensor.realize_all(a, b)
  ref_old_a, ref_new_a = swap(x, y)
  np.testing.assert_array_equal(a.numpy(), ref_new_a)
  np.testing.assert_array_equal(b.numpy(), ref_old_a + 1)

def test_a_reader_of_the_old_value_runs_before_the_assign_though_a_reader_of_the_new_value_comes_first():
  # the order was the graph's with each ASSIGN delayed until a kernel read its result: c's kernel (reading the assign)
  # came before v's (reading the buffer the assign writes), so the assign ran before v read the buffer
  a = Tensor([1.0, 2.0]).realize()
  v = a * 10                     # the value before the assign (PyTorch computes it here)
  c = a.assign(a + 1) * 3
  c.realize()                    # realizes v too, in the same schedule: it reads the buffer the assign writes
  np.testing.assert_array_equal(v.numpy(), [10.0, 20.0])
  np.testing.assert_array_equal(c.numpy(), [6.0, 9.0])
  np.testing.assert_array_equal(a.numpy(), [2.0, 3.0])

@settings(max_examples=25, deadline=None)
@given(ops=st.lists(st.sampled_from(["read", "assign"]), min_size=1, max_size=6), order=st.randoms(use_true_random=False))
def test_lazy_reads_and_assigns_give_what_running_each_at_once_gives(ops, order):
  """Reads (a * 2) and in-place updates (a += 1) built in any sequence and realized in any order: each read is the value
  at the point it was built, as PyTorch's eager execution computes it."""
  a, ref = Tensor([1.0, 2.0]).realize(), np.array([1.0, 2.0], np.float32)
  reads = []
  for op in ops:
    if op == "read": reads.append((a * 2, ref * 2))
    else: a.assign(a + 1); ref = ref + 1
  order.shuffle(reads)
  for t, want in reads: np.testing.assert_array_equal(t.numpy(), want)
  np.testing.assert_array_equal(a.numpy(), ref)

def test_one_kernel_reading_a_buffer_before_and_after_an_assign_reads_a_copy_of_the_old_value():
  a = Tensor([1.0, 2.0]).realize()
  c = (a * 1) + a.assign(a + 1)  # no order of two kernels is right: the old value is copied before the assign
  Counters.reset()
  np.testing.assert_array_equal(c.numpy(), [1.0 + 2.0, 2.0 + 3.0])
  assert Counters.kernels == 3, "the copy, the assign, the sum"
  np.testing.assert_array_equal(a.numpy(), [2.0, 3.0], err_msg="the assign wrote the buffer once, and a reads it")

def test_the_jitted_training_step_equals_the_plain_one_and_runs_fewer_kernels():
  xs, ys = [rand(8, 5) for _ in range(4)], [rng.integers(0, 3, 8).astype(np.int32) for _ in range(4)]
  def train(jit: bool) -> tuple[list[float], list[tuple[int, int]]]:
    Tensor.manual_seed(0)
    model = nn.Linear(5, 3, bias=False)
    opt = nn.optim.Adam(nn.state.get_parameters(model), lr=0.1)
    run = TinyJit(lambda x, y: _step(model, opt, x, y)) if jit else (lambda x, y: _step(model, opt, x, y))
    losses, ws, kernels = [], [], []
    for x, y in zip(xs, ys):
      ws.append(model.weight.numpy())
      Counters.reset()
      loss = run(Tensor(x), Tensor(y))
      step_kernels = Counters.kernels
      losses.append(loss.item())
      kernels.append((step_kernels, Counters.kernels - step_kernels))
    for w, x, y, loss in zip(ws, xs, ys, losses): np.testing.assert_allclose(loss, np_loss(x, y, w), rtol=1e-5)
    return losses, kernels
  jitted, jit_kernels = train(True)
  plain, plain_kernels = train(False)
  np.testing.assert_allclose(jitted, plain, rtol=1e-6)
  # the step realizes the loss (it reads the weights the step writes), plainly and in a replay: item() runs nothing
  assert all(k == (plain_kernels[-1][0], 0) for k in plain_kernels[1:])
  assert jit_kernels[2:] == [(plain_kernels[-1][0], 0)] * 2

def test_what_a_custom_kernel_writes_into_keeps_its_value():
  def add_one_k(A: UOp) -> UOp:
    i = UOp.range(A.shape[0], 0)
    return A[i].store(A[i] + 1.0).end(i).sink(arg=KernelInfo(name="add_one"))
  x = rand(6)
  xc = (Tensor(x) * 2).contiguous()
  (y,) = xc.custom_kernel(fxn=add_one_k)  # in place on the buffer xc's CONTIGUOUS gets
  (y - y.sum()).realize()                 # (a sum too: other live tensors are updated)
  np.testing.assert_allclose(xc.numpy(), 2 * x, rtol=1e-6, err_msg="xc is not the buffer the kernel added one to")
  np.testing.assert_allclose(y.numpy(), 2 * x + 1, rtol=1e-6)

def test_two_lazy_assigns_in_a_row_each_run_once():
  # the second assign's value reads the first assign: main ran the first one again when realizing the second ([15, 31, 47])
  x = Tensor([1.0, 3.0, 5.0]).realize()
  x.assign(x * 2 + 1)
  x.assign(x * 2 + 1)
  np.testing.assert_array_equal(x.numpy(), [7.0, 15.0, 23.0])

def test_an_inference_intermediate_is_freed_while_what_was_computed_from_it_lives():
  """h2 = f(h1) realized, then h1 dropped: h1's buffer goes back to the allocator. Realizing remembered h2's graph (which
  holds h1's buffer) for autograd even when no tensor required grad, so every intermediate of an inference lived as long
  as its output; with a tensor that requires grad alive it is still remembered (backward through h2 reaches w)."""
  from tg.codegen.device import GlobalCounters
  x = Tensor(np.ones((128, 128), np.float32)).realize()
  h1 = (x * 2).contiguous().realize()
  h2 = (h1 + 1).contiguous().realize()
  gc.collect()  # (a UOp's cached toposort refers back to it: a cycle; the garbage of other tests goes first)
  before = GlobalCounters.mem_used
  del h1
  gc.collect()
  assert before - GlobalCounters.mem_used >= 128 * 128 * 4  # (h1, and any other buffer only it kept)
  np.testing.assert_array_equal(h2.numpy(), np.full((128, 128), 3, np.float32))
  w = Tensor(np.full((128,), 0.5, np.float32), requires_grad=True)
  h1 = (x * w).contiguous().realize()
  (h1 + 1).contiguous().realize().sum().backward()
  np.testing.assert_array_equal(w.grad.numpy(), np.full((128,), 128, np.float32))

@pytest.mark.parametrize("view", ["x.flatten()", "x.flatten(start_dim=1)", "x.reshape(-1)", "x.view(4, 108)"])
def test_a_realized_view_of_a_leaf_then_backward(view):
  """As tinygrad's test_flatten: x.flatten() realized (no kernel: the buffer itself, in its own shape), then backward
  through the same view. The realized view was remembered as the bare buffer, under every view of x, x's own included,
  mapped to a graph that holds it: backward walked that loop forever."""
  xn = np.random.default_rng(0).standard_normal((4, 3, 6, 6)).astype(np.float32)
  x = Tensor(xn, requires_grad=True)
  f = lambda x: eval(view, {"x": x})  # noqa: E731
  np.testing.assert_array_equal(f(x).realize().numpy().reshape(-1), xn.reshape(-1))
  w = np.arange(432, dtype=np.float32)
  (g,) = (f(x) * Tensor(w.reshape(f(x).shape))).sum().gradient(x)
  np.testing.assert_array_equal(g.numpy().reshape(-1), w)
  y = f(x).realize()
  (y * Tensor(w.reshape(y.shape))).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy().reshape(-1), w)

def test_a_loop_in_the_remembered_graphs_raises_instead_of_hanging():
  """A remembered graph that holds its own view (the bug above) makes backward raise, naming the loop, not spin."""
  x = Tensor(np.ones((2, 3), np.float32), requires_grad=True)
  b = sched.view_base(x.uop)
  Tensor.live.realized[b] = x.uop  # x's graph holds b: a loop
  try:
    with pytest.raises(RuntimeError, match="a loop"): (x * 2).sum().backward()
  finally: del Tensor.live.realized[b]

def test_a_reader_of_an_old_value_that_holds_another_pending_assign():
  """r = b * 2 + a with a *= 2 pending reads b's value from before b.assign(...): it holds a's assign (a's new value),
  which had made it look like a reader of the new values, and it ran after b's write (found by an in-place fuzz)."""
  A, B = np.arange(4, dtype=np.float32), np.arange(4, dtype=np.float32) * 10
  a, b = Tensor(A.copy()).contiguous().realize(), Tensor(B.copy()).contiguous().realize()
  a *= 2
  r = b * 2 + a
  b.assign(a.flip(0) + 1)
  b.realize()
  np.testing.assert_array_equal(r.numpy(), B * 2 + A * 2)
  np.testing.assert_array_equal(b.numpy(), (A * 2)[::-1] + 1)

def test_a_reader_whose_write_runs_as_an_old_value_reader_keeps_its_own_readers_first():
  """Realizing b *= 2 first runs the pending a.assign(b.flip(0) + 1), which reads b's old value; r, which reads a's old
  value, must then run before that write too (readers of the readers' writes, until none is left)."""
  A = np.arange(16, dtype=np.float32).reshape(4, 4) - 5
  a, b = Tensor(A.copy()).contiguous().realize(), Tensor(A.copy() * 10).contiguous().realize()
  r = a[3:4, 0:2].sum(0)
  a.assign(b.flip(0) + 1)
  b *= 2
  b[0:2, 0:2] = a[0:2, 0:2] * 3
  np.testing.assert_array_equal(r.numpy(), A[3:4, 0:2].sum(0))
  np.testing.assert_array_equal(a.numpy(), A[::-1] * 10 + 1)

@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(["read", "read_slice", "set", "iadd", "imul", "assign_flip", "set_from", "realize"]),
                                st.sampled_from("ab"), st.integers(0, 3), st.integers(1, 4)), min_size=1, max_size=9))
def test_reads_and_in_place_writes_of_two_tensors_give_what_running_each_at_once_gives(steps):
  """Two tensors, lazy reads of both (whole and sliced), in-place writes of either (+=, *=, setitem of a slice, an assign
  of the other's flip, a slice set from the other) and realizes in any sequence: every read and both tensors end as numpy
  running each step at once says."""
  base = np.arange(16, dtype=np.float32).reshape(4, 4) - 6
  ref = {"a": base.copy(), "b": base * 2}
  ts, reads = {n: Tensor(v.copy()).contiguous().realize() for n, v in ref.items()}, []
  for op, n, lo, hi in steps:
    o, hi = "b" if n == "a" else "a", max(hi, lo + 1)
    if op == "read": reads.append((ts[n] * 2 + ts[o], ref[n] * 2 + ref[o]))
    elif op == "read_slice": reads.append((ts[n][lo:hi, 1:3].sum(0), ref[n][lo:hi, 1:3].sum(0)))
    elif op == "set": ts[n][lo:hi, 0:2] = float(lo - 2); ref[n][lo:hi, 0:2] = lo - 2
    elif op == "iadd": ts[n] += ts[o]; ref[n] = ref[n] + ref[o]
    elif op == "imul": ts[n] *= 2; ref[n] = ref[n] * 2
    elif op == "assign_flip": ts[n].assign(ts[o].flip(0) + 1); ref[n] = ref[o][::-1] + 1
    elif op == "set_from": ts[n][lo:hi, 1:3] = ts[o][lo:hi, 1:3] * 3; ref[n][lo:hi, 1:3] = ref[o][lo:hi, 1:3] * 3
    else: ts[n].realize()
  for t, want in reads: np.testing.assert_array_equal(t.numpy(), want)
  for n in "ab": np.testing.assert_array_equal(ts[n].numpy(), ref[n])

def test_an_assign_to_a_slice_that_is_the_whole_tensor_writes_it():
  """b[0:2].assign(x) of a 2-row b: the slice changes nothing, so it is b itself (tinygrad's), and the write reaches b. A
  new tensor on b's graph took the assign for itself, lost with the temporary (found by an in-place fuzz); a slice of
  some rows writes through at once."""
  A = np.arange(6, dtype=np.float32).reshape(2, 3)
  a, b = Tensor(A.copy()).contiguous().realize(), Tensor(A * 10).contiguous().realize()
  assert b[0:2] is b and b[:, :] is b and b.reshape(2, 3) is b
  b[0:2].assign(a[0:2] - 1)
  np.testing.assert_array_equal(b.numpy(), A - 1)
  b[0:1].assign(a[1:2] * 2)
  np.testing.assert_array_equal(b.numpy(), np.stack([A[1] * 2, A[1] - 1]))

@settings(max_examples=25, deadline=None)
@given(ops=st.lists(st.sampled_from(["read", "assign", "assign a read", "setitem a read"]), min_size=1, max_size=6),
       order=st.randoms(use_true_random=False))
def test_reads_used_by_a_write_keep_the_value_they_read(ops, order):
  """A lazy read that a later write into the buffer consumes (t2 = t1.sum(); t1[1] = t2 * 2) is still the value it read:
  it was fused into the write and, still lazy, computed again from the new buffer (43, not 10)."""
  a, ref = Tensor([1.0, 2.0]).realize(), np.array([1.0, 2.0], np.float32)
  reads = []
  for op in ops:
    if op == "read": reads.append((a.sum() * 2, ref.sum() * 2))
    elif op == "assign": a.assign(a + 1); ref = ref + 1
    elif reads and op == "assign a read": a.assign(reads[-1][0] + a); ref = reads[-1][1] + ref
    elif reads:
      a[1] = reads[-1][0] * 0.5
      ref = ref.copy()
      ref[1] = reads[-1][1] * 0.5
  order.shuffle(reads)
  for t, want in reads: np.testing.assert_array_equal(t.numpy(), want)
  np.testing.assert_array_equal(a.numpy(), ref)
  t1 = Tensor([[1.0, 2.0], [3.0, 4.0]]).clone()
  t2 = t1.sum()
  t1[1] = t2 * 2.0
  assert (t2.item(), t1.tolist()) == (10.0, [[1.0, 2.0], [20.0, 20.0]])

def test_a_read_consumed_by_a_write_keeps_its_value_in_an_autograd_graph_too():
  """t2 = t1 + 0 (t1 computed from a leaf) consumed by t1.assign(t2 * 3): t2 was left fused into the write for autograd's
  graphs, and read the written value later ([3, -6], not [1, -2]); the gradient stays a's."""
  a = Tensor([1.0, -2.0], requires_grad=True)
  t1 = a * 1.0
  t2 = t1 + 0.0
  t1.assign(t2 * 3.0)
  assert t1.tolist() == [3.0, -6.0] and t2.tolist() == [1.0, -2.0]
  t1.sum().backward()
  assert a.grad.tolist() == [3.0, 3.0]
