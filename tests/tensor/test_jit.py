"""TinyJit: replays equal plain runs, replays skip scheduling and compiling, and a changed input signature is an error."""
import numpy as np
import pytest
from tg.tensor import Tensor, Counters
from tg.tensor import nn
from tg.tensor.jit import TinyJit

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
