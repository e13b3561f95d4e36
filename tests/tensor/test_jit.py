"""TinyJit: replays equal plain runs (numpy as the reference), replays skip scheduling and compiling, every input (nested,
keyword) is an input, and what can't be replayed faithfully (changed shapes or Python values, duplicate inputs, non-tensor
outputs, nothing captured, a JIT in a JIT) is a typed error."""
import itertools, tracemalloc
from typing import Callable
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.tensor import Tensor, Counters, Device, Ops, UOp
from tg.tensor import nn
from tg.tensor.jit import TinyJit, JitError, JitInputError
from tg.codegen.devices.cpu import cpu_threads
from tg.codegen.device import Buffer

rng = np.random.default_rng(3)
def rand(*shape): return rng.standard_normal(shape).astype(np.float32)

def test_replay_matches_and_skips_scheduling():
  def f(x: Tensor, y: Tensor) -> Tensor: return (x * y + 1).relu().sum(0)
  jf = TinyJit(f)
  for i in range(5):
    x, y = rand(6, 4), rand(6, 4)
    Counters.reset()
    out = jf(Tensor(x), y=Tensor(y))
    np.testing.assert_allclose(out.numpy(), np.maximum(x * y + 1, 0).sum(0), rtol=1e-5, err_msg=f"call {i}")
    if i >= 2: assert (Counters.scheduled, Counters.compiled, Counters.kernels) == (0, 0, 1), "a replay only launches the kernel"
  assert len(jf.steps) == 1

def test_jitted_training_equals_plain_training():
  xs, ys = [rand(8, 5) for _ in range(5)], [rng.integers(0, 3, 8).astype(np.int32) for _ in range(5)]
  def train(jit: bool) -> np.ndarray:
    Tensor.manual_seed(0)
    model = nn.Linear(5, 3)
    opt = nn.optim.Adam(nn.state.get_parameters(model), lr=0.1)
    @Tensor.train()
    def step(x: Tensor, y: Tensor) -> Tensor:
      opt.zero_grad()
      loss = model(x).sparse_categorical_crossentropy(y)
      loss.backward()
      opt.step()
      return loss
    run = TinyJit(step) if jit else step
    losses = [run(Tensor(x), Tensor(y)).item() for x, y in zip(xs, ys)]
    return np.array(losses + model.weight.numpy().ravel().tolist())
  Counters.reset()
  jitted = train(True)
  np.testing.assert_allclose(jitted, train(False), rtol=1e-6, atol=1e-6)

def test_changed_shape_or_dtype_is_an_error():
  jf = TinyJit(lambda x: x * 2)
  for _ in range(3): jf(Tensor(rand(4)))
  with pytest.raises(ValueError, match=r"argument 0 is \(5,\) dtypes.float|argument 0 is \(5,\)"): jf(Tensor(rand(5)))
  with pytest.raises(ValueError, match="int32"): jf(Tensor(np.arange(4, dtype=np.int32)))
  jf.reset()
  for _ in range(3): np.testing.assert_array_equal(jf(Tensor(np.arange(5, dtype=np.int32))).numpy(), np.arange(5) * 2)

def test_an_input_returned_unchanged_is_the_new_input():
  jf = TinyJit(lambda x, y: (x, y + 1))
  for i in range(4):
    a, b = Tensor(rand(3)), rand(3)
    x, y = jf(a, Tensor(b))
    assert x is a
    np.testing.assert_allclose(y.numpy(), b + 1, rtol=1e-6)

def test_random_numbers_are_new_on_every_replay():
  # the RNG counter is a device buffer that the captured kernels advance: replays draw new masks
  @TinyJit
  def drop(x: Tensor) -> Tensor:
    with Tensor.train(): return x.dropout(0.5)
  x = Tensor.ones(64).realize()
  masks = [drop(x).numpy() for _ in range(5)]
  assert all(set(np.unique(m)) <= {0.0, 2.0} for m in masks)
  assert len({m.tobytes() for m in masks}) == 5, "every call, captured and replayed ones too, has its own mask"

# ***** inputs: nested, keyword, scalar, duplicate, view *****

def test_tensors_in_lists_dicts_and_kwargs_are_inputs():
  # was silently wrong: f(a, [b]) replayed on the first call's b
  @TinyJit
  def f(a: Tensor, bs: list, d: dict, *, scale: Tensor) -> Tensor: return (a + bs[0] * bs[1][0] - d["c"]["e"]) * scale
  for i in range(5):
    a, b, b2, c, s = rand(3, 4), rand(3, 4), rand(3, 4), rand(3, 4), rand(3, 4)
    out = f(Tensor(a), [Tensor(b), (Tensor(b2),)], {"c": {"e": Tensor(c)}}, scale=Tensor(s))
    np.testing.assert_allclose(out.numpy(), (a + b * b2 - c) * s, rtol=1e-5, err_msg=f"call {i}")
  assert len(f.jit_cache) == 1

def test_kwargs_in_any_order():
  @TinyJit
  def div(first: Tensor, second: Tensor) -> Tensor: return first / second
  for i in range(6):
    a, b = rand(4), rand(4) + 3
    out = div(second=Tensor(b), first=Tensor(a)) if i % 2 else div(first=Tensor(a), second=Tensor(b))
    np.testing.assert_allclose(out.numpy(), a / b, rtol=1e-6)
  assert len(div.jit_cache) == 1

def test_positional_then_keyword_is_an_error():
  f = TinyJit(lambda a, b: a + b)
  for _ in range(2): f(Tensor(rand(3)), Tensor(rand(3)))
  with pytest.raises(JitInputError, match="argument 'b'"): f(Tensor(rand(3)), b=Tensor(rand(3)))

def test_a_changed_python_scalar_is_an_error_not_a_stale_result():
  # was silently wrong (#21): f(x, 3) then f(x, 6) returned x * 3
  f = TinyJit(lambda x, k: x * k)
  x = rand(4)
  for _ in range(3): np.testing.assert_allclose(f(Tensor(x), 3).numpy(), x * 3, rtol=1e-6)
  with pytest.raises(JitInputError, match=r"argument 1 is 6, but it was 3 .*baked"): f(Tensor(x), 6)
  with pytest.raises(JitInputError, match=r"argument 1 is 3\.0, but it was 3"): f(Tensor(x), 3.0)
  np.testing.assert_allclose(f(Tensor(x), 3).numpy(), x * 3, rtol=1e-6)
  f.reset()
  for _ in range(3): np.testing.assert_allclose(f(Tensor(x), 6).numpy(), x * 6, rtol=1e-6)

def test_duplicate_inputs_are_an_error():
  # was an internal KeyError; tinygrad raises on the first call already
  f = TinyJit(lambda a, b: a + b)
  x = Tensor(rand(2, 3)).realize()
  with pytest.raises(JitError, match="argument 0 and argument 1 are the same buffer"): f(x, x)
  with pytest.raises(JitError, match=r"argument 0 and argument 1\[0\] are the same buffer"): f(x, [x.reshape(3, 2).reshape(2, 3)])

def test_views_of_inputs_are_realized_so_a_changed_view_is_right():
  f = TinyJit(lambda a: a + 1)
  base = rand(10, 10)
  for i in range(1, 6):
    np.testing.assert_allclose(f(Tensor(base)[:, i:i + 2]).numpy(), base[:, i:i + 2] + 1, rtol=1e-6, err_msg=f"call {i}")

def test_an_output_that_reshapes_an_input_is_the_new_input():
  f = TinyJit(lambda a, b: (a.reshape(3, 2), a + b))
  for _ in range(4):
    a, b = rand(2, 3), rand(2, 3)
    x, y = f(Tensor(a), Tensor(b))
    np.testing.assert_array_equal(x.numpy(), a.reshape(3, 2))
    np.testing.assert_allclose(y.numpy(), a + b, rtol=1e-6)

# ***** outputs and captures that can't be replayed *****

@pytest.mark.parametrize("wrap,unwrap", [(lambda t: t, lambda r: r), (lambda t: [t], lambda r: r[0]),
                                         (lambda t: {"out": (t,)}, lambda r: r["out"][0])])
def test_unrealized_outputs_are_realized(wrap, unwrap):
  f = TinyJit(lambda a, b: wrap(a * b + 1))
  for _ in range(4):
    a, b = rand(5), rand(5)
    out = unwrap(f(Tensor(a), Tensor(b)))
    assert out.uop.op is Ops.BUFFER or out.uop.src[0].op is Ops.BUFFER, "returned realized"
    np.testing.assert_allclose(out.numpy(), a * b + 1, rtol=1e-6, atol=1e-6)  # atol: near a*b = -1 the fused a*b+1 differs from numpy's two roundings
  assert len(f.jit_cache) == 1

def test_non_tensor_output_is_an_error():
  f = TinyJit(lambda a, i: (a + 1, i))
  with pytest.raises(JitError, match="returned a int"): f(Tensor(rand(3)), 1)

def test_none_output_and_in_place_update():
  @TinyJit
  def add(a: Tensor) -> None:
    a += 1
    a.realize()
  a = Tensor.zeros(1, dtype="int8").contiguous().realize()
  for _ in range(5): add(a)
  assert a.item() == 5

def test_nothing_launched_is_an_error():
  f = TinyJit(lambda a, b: None)
  with pytest.raises(JitError, match="launched no kernel"):
    for _ in range(3): f(Tensor(rand(3)), Tensor(rand(3)))

def test_jit_inside_jit_is_an_error():
  inner = TinyJit(lambda t: t + 1)
  outer = TinyJit(lambda t: inner(t) * 3)
  np.testing.assert_array_equal(outer(Tensor([1])).numpy(), [6])  # the first call runs plainly, as in tinygrad
  with pytest.raises(RuntimeError, match="having TinyJit inside another TinyJit is not supported"): outer(Tensor([1]))

# ***** methods, reset, prune, memory, jit_cache *****

def test_bound_method_and_reset():
  class Model:
    def __init__(self): self.w = Tensor(rand(4, 4))
    @TinyJit
    def __call__(self, x: Tensor) -> Tensor: return x @ self.w
  m = Model()
  w = m.w.numpy()
  for _ in range(4):
    x = rand(3, 4)
    np.testing.assert_allclose(m(Tensor(x)).numpy(), x @ w, rtol=1e-5)
  jit = m.__call__  # (this instance's TinyJit)
  assert isinstance(jit, TinyJit) and len(jit.jit_cache) == 1
  with pytest.raises(JitInputError, match=r"\(3, 4\)"): m(Tensor(rand(5, 4)))
  jit.reset()
  assert jit.jit_cache == []
  for _ in range(3):
    x = rand(5, 4)
    np.testing.assert_allclose(m(Tensor(x)).numpy(), x @ w, rtol=1e-5)

def test_a_jitted_method_captures_for_each_instance():
  """A TinyJit method decorator shared one capture among instances: m1.f(x) twice, then m2.f(x) replayed m1's kernels on m1's
  weight. Each instance has its own (tinygrad master's too), dropped with it; a dataclass instance (unhashable) is fine."""
  import gc
  from dataclasses import dataclass
  @dataclass
  class Scale:
    w: Tensor
    @TinyJit
    def f(self, x: Tensor) -> Tensor: return (x * self.w).realize()
  ws = [rand(4) for _ in range(3)]
  ms = [Scale(Tensor(w).realize()) for w in ws]
  for i in range(4):
    for m, w in zip(ms, ws):
      x = rand(4)
      np.testing.assert_allclose(m.f(Tensor(x)).numpy(), x * w, rtol=1e-6, err_msg=f"call {i}")
  assert all(len(m.f.jit_cache) == 1 for m in ms) and len({id(m.f) for m in ms}) == 3
  assert Scale.f.calls == 0, "the class's TinyJit itself ran nothing"
  del m, ms[1:]
  gc.collect()
  assert list(Scale.f.methods) == [id(ms[0])], "an instance's TinyJit goes with it"

def test_prune_drops_kernels_that_dont_depend_on_inputs():
  weights = Tensor(rand(16)).realize()
  def w2(x: Tensor) -> Tensor: return (weights * 2).contiguous() + x
  plain, pruned = TinyJit(w2), TinyJit(w2, prune=True)
  for jf in (plain, pruned):
    for _ in range(4):
      a = rand(16)
      np.testing.assert_allclose(jf(Tensor(a)).numpy(), weights.numpy() * 2 + a, rtol=1e-6)
  assert (len(plain.jit_cache), len(pruned.jit_cache)) == (2, 1)

def test_prune_keeps_state_updated_in_place():
  # the RNG counter kernels read no input, but each replay advances the counter: they must stay
  @TinyJit
  def noisy(x: Tensor) -> Tensor: return x + Tensor.rand(8)
  noisy.prune = True
  x = Tensor.zeros(8).contiguous().realize()
  outs = [noisy(x).numpy() for _ in range(5)]
  assert len({o.tobytes() for o in outs}) == 5

def test_random_numbers_equal_the_unjitted_ones_for_the_same_seed():
  # tinygrad's "jit vs no-jit random regeneration": the same seed gives the same draws, call by call
  def f(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    rn = Tensor.randn(*a.shape) * a + Tensor.randn(*a.shape) * b
    return (a + b) * rn, rn + Tensor.rand(*a.shape)
  a, b = Tensor(rand(4, 4)).realize(), Tensor(rand(4, 4)).realize()
  def draws(fn: Callable) -> list[np.ndarray]:
    Tensor.manual_seed(1234)
    return [o.numpy() for _ in range(5) for o in fn(a, b)]
  plain, jitted = draws(f), draws(TinyJit(f))
  for i, (p, j) in enumerate(zip(plain, jitted)): np.testing.assert_array_equal(j, p, err_msg=f"output {i}")
  assert len({p.tobytes() for p in plain}) == 10

def test_replays_dont_grow_memory():
  # a 4 MB intermediate per call: replays reuse the captured buffers, so memory stays flat
  @TinyJit
  def f(x: Tensor) -> Tensor: return (x.reshape(1000, 1) * Tensor.ones(1, 1000)).contiguous().sum(1)
  x = rand(1000)
  for _ in range(3): f(Tensor(x))
  tracemalloc.start()
  try:
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(20): out = f(Tensor(x))
    grown = tracemalloc.get_traced_memory()[0] - before
  finally: tracemalloc.stop()
  np.testing.assert_allclose(out.numpy(), x * 1000, rtol=1e-5)
  assert grown < 1_000_000, f"memory grew {grown} bytes over 20 replays"

def test_free_intermediates_gives_back_only_scratch_memory():
  ext = Tensor([1, 24, 23, 45, 1])  # data the kernels only read: kept
  @TinyJit
  def f(x: Tensor) -> Tensor: return (x * 2 + ext).reshape(5, 1).expand(5, 100).contiguous().sum()  # scratch: 5x100 int32
  for i in range(3): assert f(Tensor([i, 1, 2, 3, 4])).item() == 100 * (2 * i + 114)  # hand-computed: sum(2x + ext) * 100
  assert f.free_intermediates() == 5 * 100 * 4
  assert f.free_intermediates() == 0, "freed already"
  for i in (11, 12):
    assert f(Tensor([i, 1, 2, 3, 4])).item() == 100 * (2 * i + 114)
    assert f.free_intermediates() == 2000

def test_free_intermediates_keeps_state_updated_in_place():
  acc = Tensor([1]).contiguous().realize()
  @TinyJit
  def add(y: Tensor) -> Tensor:
    acc.assign(acc + y).realize()
    return acc
  for _ in range(5): add(Tensor([1]))
  assert add.free_intermediates() == 0
  add(Tensor([2]))
  assert acc.item() == 8

# ***** an output passed back in; reading data while capturing *****

def test_an_output_passed_back_in_is_read_before_it_is_written():
  """buf = f(buf, frame): the previous output comes back as an input, the same buffer the replay writes. Its first kernel
  wrote it before the second read it ([11] where numpy gives [10]); the input is copied first, as in tinygrad, and only then."""
  @TinyJit
  def f(buf: Tensor, frame: Tensor) -> tuple[Tensor, Tensor]:
    nb = buf[1:].cat(frame)
    return nb.contiguous(), nb[:1].contiguous()
  buf, ref = Tensor([0, 1, 2]).contiguous().realize(), np.array([0, 1, 2])
  for i in range(6):
    Counters.reset()
    buf, first = f(buf, Tensor([10 + i]))
    ref = np.concatenate([ref[1:], [10 + i]])
    np.testing.assert_array_equal(buf.numpy(), ref, err_msg=f"call {i}")
    np.testing.assert_array_equal(first.numpy(), ref[:1], err_msg=f"call {i}")
    assert Counters.copies == (i >= 2), "a replay copies the input it writes, and nothing else"
  for i in range(3):  # inputs apart from the outputs: no copy
    Counters.reset()
    np.testing.assert_array_equal(f(Tensor([5, 6, 7]), Tensor([i]))[0].numpy(), [6, 7, i])
    assert Counters.copies == 0

@pytest.mark.parametrize("n", [1000, 1 << 20])
def test_an_output_passed_back_into_one_kernel_that_reads_and_writes_it(n):
  """One kernel reading the buffer it writes: reversed, its second half read the first half it had just written (a race
  between the chunks of a threaded kernel with a shifted read, the 1 << 20 case). An output returned unchanged as the input
  is the input's value at the call, not the buffer the replay overwrote."""
  f = TinyJit(lambda buf, new: (buf, buf.flip(0) + new))
  g = TinyJit(lambda buf, new: buf[n // 2:].cat(new))
  a, ref = Tensor(np.arange(n, dtype=np.int32)).realize(), np.arange(n, dtype=np.int32)
  b, ref_b = Tensor.zeros(n, dtype="int32").contiguous().realize(), np.zeros(n, np.int32)
  for i in range(5):
    same, a = f(a, Tensor(np.full(n, i, np.int32)))
    np.testing.assert_array_equal(a.numpy(), ref[::-1] + i, err_msg=f"call {i}")
    np.testing.assert_array_equal(same.numpy(), ref, err_msg=f"call {i}: the input returned")
    ref = ref[::-1] + i
    b, ref_b = g(b, Tensor(np.full(n // 2, i + 1, np.int32))), np.concatenate([ref_b[n // 2:], np.full(n // 2, i + 1, np.int32)])
    np.testing.assert_array_equal(b.numpy(), ref_b, err_msg=f"call {i}")

@pytest.mark.parametrize("fn", [lambda x, m: x.masked_select(m), lambda x, m: Tensor(x.tolist()) + x,
                                lambda x, m: Tensor.zeros(int(x.sum().item())).contiguous() + x.sum(),
                                lambda x, m: x[m].sum(), lambda x, m: x + x.numpy().max()],
                         ids=["masked_select", "tolist", "item", "bool_index", "numpy"])
def test_reading_tensor_data_while_capturing_is_an_error(fn):
  """A value read during the capture (.item(), .tolist(), .numpy(), an op whose size depends on values) was baked into the
  replays: masked_select kept the first mask's count, Tensor(x.tolist()) the first x. Now the capture raises JitError, as
  tinygrad's; the first (plain) call is right, and so is every call of the function unjitted."""
  jf = TinyJit(fn)
  x, m = np.array([3.0, 1.0, 2.0, 4.0], np.float32), np.array([True, False, True, True])
  np.testing.assert_allclose(jf(Tensor(x), Tensor(m)).numpy(), fn(Tensor(x), Tensor(m)).numpy())
  for _ in range(2):
    with pytest.raises(JitError, match="cannot access tensor data during JIT capture.*outside the jitted function"): jf(Tensor(x), Tensor(m))
  assert jf.jit_cache == []

def test_shard_inside_a_jitted_function_copies_every_call():
  """x.shard(...) of an input inside the function copied its pieces straight from its bytes, outside any kernel: the
  replays reused the capture's pieces (the second input's values every call)."""
  f = TinyJit(lambda x: (x.shard(("CPU:0", "CPU:1"), axis=0) * 2).to("CPU:0"))
  for i in range(5):
    x = rand(4, 3)
    np.testing.assert_allclose(f(Tensor(x)).numpy(), x * 2, rtol=1e-6, err_msg=f"call {i}")

def test_check_oob_reads_indices_but_not_while_capturing():
  """CHECK_OOB=1 reads index tensors back to check them: the plain first call does, the capture doesn't (it would raise),
  and the jitted loss equals numpy's."""
  from tg.tensor import Context
  f = TinyJit(lambda x, y: x.sparse_categorical_crossentropy(y).realize())
  with Context(CHECK_OOB=1):
    for i in range(4):
      x, y = rand(5, 3), rng.integers(0, 3, 5).astype(np.int32)
      logp = x - np.log(np.exp(x).sum(1, keepdims=True))
      np.testing.assert_allclose(f(Tensor(x), Tensor(y)).numpy(), -logp[np.arange(5), y].mean(), rtol=1e-5, err_msg=f"call {i}")
    with pytest.raises(IndexError, match="out of bounds"): TinyJit(f.fxn)(Tensor(rand(2, 3)), Tensor([0, 3]))

# ***** batching: consecutive kernels launched by one call where the device can *****

def test_batched_replay_equals_unbatched_and_numpy():
  # a chain of small kernels, one big enough to run on several threads, and a symbolic size: all in one batch on the CPU
  def f(a: Tensor, b: Tensor, big: Tensor, v: UOp) -> tuple[Tensor, Tensor]:
    for _ in range(6): a = (a * 0.5 + b).realize()
    wide = (big.reshape(1000, 1) * Tensor.ones(1, 1000)).contiguous().sum(1).realize()
    return a.shrink(((0, v),)).sum() + wide.sum() * 0, wide
  var = UOp.variable("n", 1, 8)
  def run(jf: TinyJit) -> list[np.ndarray]:
    r = np.random.default_rng(5)
    outs = []
    for k in (3, 8, 1, 5, 2):
      a, b, big = r.standard_normal(8).astype(np.float32), r.standard_normal(8).astype(np.float32), r.standard_normal(1000).astype(np.float32)
      Counters.reset()
      s, wide = jf(Tensor(a), Tensor(b), Tensor(big), var.bind(k))
      outs += [s.numpy(), wide.numpy()]
      ref = a
      for _ in range(6): ref = ref * 0.5 + b
      np.testing.assert_allclose(outs[-2], ref[:k].sum(), rtol=1e-5, atol=1e-5, err_msg=f"n={k}")
      np.testing.assert_allclose(outs[-1], big * 1000, rtol=1e-5)
    assert Counters.kernels == len(jf.jit_cache), "every captured kernel ran once in the last replay"
    return outs
  batched = TinyJit(f)
  got = run(batched)
  if Device.DEFAULT == "CPU":
    assert len(batched.launches) == 1 and len(batched.jit_cache) > 6, "one launch for all the kernels"
    assert cpu_threads() == 1 or any(st.runner.p.global_size[0] > 1 for st in batched.steps), "a threaded kernel in the batch"
  plain = TinyJit(f, batch=False)
  for g, p in zip(got, run(plain)): np.testing.assert_array_equal(g, p)
  assert len(plain.launches) == len(plain.jit_cache)

def _fake_steps(spec: list[tuple[int, list[int], list[int]]]) -> list:
  """Steps of a capture without kernels: (device number, or -1 for a copy from device 0 to 1; buffers read; written).
  Buffer k lives on device k % 2 (a copy reads one of device 0's and writes one of device 1's)."""
  from types import SimpleNamespace
  from tg.tensor.jit import _Step
  from tg.tensor.schedule import ExecItem
  from tg.uop import dtypes
  bufs = [Buffer(f"CPU:{k % 2}", 1, dtypes.float32) for k in range(8)]
  steps = []
  for dev, reads, writes in spec:
    if dev < 0: steps.append(_Step(ExecItem(UOp(Ops.COPY, dtypes.float32), [bufs[writes[0]], bufs[reads[0]]]), None, []))
    else:
      own = [bufs[k] for k in writes + reads]
      runner = SimpleNamespace(p=SimpleNamespace(outs=list(range(len(writes))), ins=list(range(len(writes), len(own)))))
      steps.append(_Step(ExecItem(UOp(Ops.SINK, dtypes.void), own), runner, []))  # type: ignore[arg-type]
  return steps

def _accesses(steps: list) -> list:
  """For every step (by identity), the step that last wrote each buffer it reads or writes, and the readers since: what
  an order must keep for the same values to be read and left behind."""
  last: dict[int, tuple] = {}
  seen = []
  for step in steps:
    b = step.item.bufs
    seen.append((id(step), tuple(last.get(id(b[j])) for j in step.reads()), tuple(last.get(id(b[j])) for j in step.writes())))
    for j in step.writes(): last[id(b[j])] = (id(step),)
  return sorted(seen) + sorted(last.items())

@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 1), st.lists(st.integers(0, 7), max_size=2), st.integers(0, 7)), min_size=1, max_size=12))
def test_by_device_keeps_every_dependency_and_groups_devices(raw):
  """The replay order of a multi-device capture (kernels gathered per device) reads and leaves the same values as the
  captured order, and switches device no more often."""
  from tg.tensor.jit import _by_device
  spec = []
  for dev, reads, w in raw:
    if dev < 0: spec.append((-1, [2 * (w // 2)], [2 * (w // 2) + 1]))  # device 0's buffer to device 1's
    else: spec.append((dev, [2 * (r // 2) + dev for r in reads], [2 * (w // 2) + dev]))
  steps = _fake_steps(spec)
  order = _by_device(steps)
  assert sorted(map(id, order)) == sorted(map(id, steps))
  assert _accesses(order) == _accesses(steps)
  runs = lambda s: len([k for k, _ in itertools.groupby(x.item.bufs[0].device for x in s if x.runner is not None)])  # noqa: E731
  assert runs(order) <= runs(steps)

def test_jit_0_calls_the_function_every_time():
  """Context(JIT=0) (or JIT=0 in the environment) turns TinyJit off, as tinygrad's: the Python body runs on every call and
  nothing is captured. Context(JIT=0) raised KeyError (no such setting)."""
  from tg.tensor import Context
  runs = []
  @TinyJit
  def add(a: Tensor, b: Tensor) -> Tensor:
    runs.append(1)
    return (a + b).realize()
  with Context(JIT=0):
    for i in range(4): np.testing.assert_array_equal(add(Tensor([i]), Tensor([10])).numpy(), [i + 10])
  assert len(runs) == 4 and add.jit_cache == []

def test_captured_is_tinygrads_handle_on_the_capture():
  """Code written for tinygrad reads jit.captured.jit_cache and calls jit.captured.free_intermediates(): None until the
  second call captures, then the captured kernels (it raised AttributeError)."""
  @TinyJit
  def f(x: Tensor) -> Tensor: return ((x + 1).contiguous() * 2).realize()
  f(Tensor([1.0, 2.0]))
  assert f.captured is None
  f(Tensor([1.0, 2.0]))
  assert f.captured is not None and len(f.captured.jit_cache) == 2
  f.captured.free_intermediates()
  np.testing.assert_array_equal(f(Tensor([3.0, 4.0])).numpy(), [8.0, 10.0])
  f.reset()
  assert f.captured is None

SAVE_AND_REPLAY = """
import pickle, sys
import numpy as np
from tg.tensor import Tensor
from tg.uop import UOp
jit = pickle.loads(open(sys.argv[1], "rb").read())
x = Tensor(np.full((4, 8), 2.0, np.float32)).realize()
out = jit(x, UOp.variable("n", 1, 8).bind(3))
print(out.numpy().tolist())
"""

def test_a_captured_jit_pickles_and_replays_in_another_process(tmp_path):
  """As tinygrad's test_pickle_jit: a captured TinyJit pickles with its kernels and the buffers they read (here a weight
  and a bias), and replays in a fresh process, whose buffer numbers name other buffers; without its function (a local
  one, which doesn't pickle), so reset() leaves it nothing to capture."""
  import pickle, subprocess, sys
  wn, bn = rng.standard_normal((8, 5)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
  params = [Tensor(wn).realize(), Tensor(bn).realize()]
  @TinyJit
  def f(x: Tensor, n: UOp) -> Tensor: return (x[:, :n] @ params[0][:n] + params[1]).relu().realize()
  for k in (2, 5, 3): f(Tensor(rng.standard_normal((4, 8)).astype(np.float32)).realize(), UOp.variable("n", 1, 8).bind(k))
  (tmp_path / "f.pkl").write_bytes(pickle.dumps(f))
  want = np.maximum(np.full((4, 3), 2.0, np.float32) @ wn[:3] + bn, 0)
  ran = subprocess.run([sys.executable, "-c", SAVE_AND_REPLAY, str(tmp_path / "f.pkl")], capture_output=True, text=True, check=True)
  np.testing.assert_allclose(eval(ran.stdout), want, rtol=1e-5)
  g = pickle.loads(pickle.dumps(f))
  del f
  params.clear()  # (the pickled copies hold their own)
  np.testing.assert_allclose(g(Tensor(np.full((4, 8), 2.0, np.float32)), UOp.variable("n", 1, 8).bind(3)).numpy(), want, rtol=1e-5)
  g.reset()
  with pytest.raises(JitError, match="unpickled without its function"): g(Tensor.ones(4, 8), UOp.variable("n", 1, 8).bind(3))

def test_a_jitted_step_with_writes_left_lazy_and_reads_of_its_state_between_steps():
  """A step that updates state in place without returning it (b += x) still updates it on every replay: the writes a call
  leaves pending are realized (so captured) with its outputs. Lazy reads of the state taken between steps read it as it
  was then: they run before the capture (else captured, they ran again in every replay) and before a replay's writes.
  Against numpy over warm-up, capture and replays (found by an in-place fuzz under TinyJit)."""
  a, b = Tensor(np.ones(3, np.float32)).contiguous().realize(), Tensor(np.full(3, 2, np.float32)).contiguous().realize()
  ra, rb = np.ones(3, np.float32), np.full(3, 2, np.float32)
  def step(x):
    a.assign(b.flip(0) - x)
    b.assign(b + x)
    return (a * 1).realize()
  j, reads = TinyJit(step), []
  for it in range(5):
    x = np.arange(3, dtype=np.float32) * (it + 1)
    np.testing.assert_array_equal(j(Tensor(x)).numpy(), rb[::-1] - x)
    ra, rb = rb[::-1] - x, rb + x
    reads.append((a * 3 - b, ra * 3 - rb))
  for t, want in reads: np.testing.assert_array_equal(t.numpy(), want)
  np.testing.assert_array_equal(b.numpy(), rb)
