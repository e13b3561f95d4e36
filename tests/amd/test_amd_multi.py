"""Sharded tensors on the two virtual GPUs (AMD: RDNA3, AMD:1: RDNA4): pieces, gradients equal to one device's, and copies
between the GPUs and the host devices."""
import numpy as np
import pytest
from tg.tensor import Tensor

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

@pytest.mark.parametrize("src, dst", [("AMD", "AMD:1"), ("AMD:1", "CPU:1"), ("CPU", "AMD:1"), ("PYTHON", "AMD")])
def test_copies_between_gpus_and_host_devices(src, dst):
  a = np.arange(7, dtype=np.int32) - 3
  t = Tensor(a, device=src).to(dst)
  assert t.device == dst
  np.testing.assert_array_equal(t.numpy(), a)
