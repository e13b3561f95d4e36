"""Sharded tensors on the two virtual GPUs (AMD: RDNA3, AMD:1: RDNA4): pieces, gradients equal to one device's, the
allreduce (naive and ring, through SDMA copies), a TinyJit replay, and copies between the GPUs and the host devices."""
import numpy as np
import pytest
from tg.tensor import Tensor, TinyJit, Context
from tg.tensor.realize import Counters

GPUS = ("AMD", "AMD:1")

def test_gradients_equal_single_device_on_two_gpus():
  rng = np.random.default_rng(0)
  x, w = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32)
  def run(shard: bool):
    W, X = Tensor(w, device="AMD", requires_grad=True), Tensor(x, device="AMD")
    if shard: W.to_(GPUS); X.shard_(GPUS, axis=0)
    loss = (X @ W).relu().sum()
    loss.backward()
    return loss.item(), W.grad.numpy()
  (l0, g0), (l1, g1) = run(False), run(True)
  assert l1 == pytest.approx(l0, rel=1e-6)
  np.testing.assert_allclose(g1, g0, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(g0, x.T @ ((x @ w) > 0).astype(np.float32), rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("src, dst", [("AMD", "AMD:1"), ("AMD:1", "AMD"), ("AMD:1", "CPU:1"), ("CPU", "AMD:1"), ("PYTHON", "AMD"),
                                      ("AMD:1", "PYTHON:1")])
def test_copies_between_gpus_and_host_devices(src, dst):
  a = np.arange(7, dtype=np.int32) - 3
  t = Tensor(a, device=src).to(dst)
  assert t.device == dst
  np.testing.assert_array_equal(t.numpy(), a)

def test_copies_between_gpus_and_null():
  """The NULL rules hold for the GPUs: a copy in runs, a copy out is an error naming NULL."""
  t = Tensor(np.arange(4, dtype=np.float32), device="AMD:1").to("NULL:1").realize()
  assert t.device == "NULL:1"
  with pytest.raises(RuntimeError, match="NULL device has no data"): t.to("AMD").realize()

@pytest.mark.parametrize("ring, copies", [(0, 2), (2, 4)])
def test_allreduce_on_two_gpus(ring, copies):
  """A sum across rows split unevenly (4 and 3) over the GPUs: every value to every GPU (naive) or chunks there and back
  (ring), the same result on both; max and argmax combine the same way."""
  a = np.arange(14, dtype=np.float32).reshape(7, 2) * np.float32(0.5) - 3
  t = Tensor(a).shard(GPUS, axis=0).realize()
  with Context(RING=ring):
    s = t.sum(0)
    Counters.reset()
    s.realize()
    assert Counters.copies == copies
    np.testing.assert_allclose(s.numpy(), a.sum(0), rtol=1e-6)
    np.testing.assert_array_equal(t.max(0).numpy(), a.max(0))
    np.testing.assert_array_equal(t.argmax(0).numpy(), a.argmax(0))

def test_jit_replays_a_step_on_two_gpus():
  w = np.arange(6, dtype=np.float32).reshape(2, 3)
  W = Tensor(w).to(GPUS).realize()
  step = TinyJit(lambda x: (x @ W).sum(0).realize())
  for i in range(1, 4):
    x = np.arange(14, dtype=np.float32).reshape(7, 2) * i
    np.testing.assert_allclose(step(Tensor(x).shard(GPUS, axis=0)).numpy(), (x @ w).sum(0), rtol=1e-6)
  assert step.calls == 3 and {b.device for ei in step.jit_cache for b in ei.bufs} == set(GPUS)
