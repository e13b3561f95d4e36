"""Flash attention's kernels on the virtual GPUs (tiny sizes: the emulator is slow): the output and the gradients of q,
k and v against numpy's (float64, the gradients by the chain rule through softmax), causal with grouped queries."""
import numpy as np
import pytest
from tg.tensor import Tensor

rng = np.random.default_rng(5)

def np_attention_grads(q, k, v, g):
  """Causal attention of q (h, n, d) over k, v (1, m, d) and the gradients of sum(out * g)."""
  s = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
  s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
  p = np.exp(s - s.max(-1, keepdims=True))
  p /= p.sum(-1, keepdims=True)
  dp = g @ v.swapaxes(-1, -2)
  ds = p * (dp - (dp * p).sum(-1, keepdims=True)) / np.sqrt(q.shape[-1])
  return p @ v, ds @ k, (ds.swapaxes(-1, -2) @ q).sum(0, keepdims=True), (p.swapaxes(-1, -2) @ g).sum(0, keepdims=True)

@pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])
def test_flash_attention_on_the_virtual_gpu(dev):
  arrays = [rng.standard_normal(s) for s in ((2, 3, 2), (1, 5, 2), (1, 5, 2), (2, 3, 2))]
  q, k, v = (Tensor(a.astype(np.float32), device=dev, requires_grad=True) for a in arrays[:3])
  o = q.scaled_dot_product_attention(k, v, is_causal=True, enable_gqa=True)
  (o * Tensor(arrays[3].astype(np.float32), device=dev)).sum().backward()
  for got, want in zip((o, q.grad, k.grad, v.grad), np_attention_grads(*arrays)):
    np.testing.assert_allclose(got.numpy(), want, atol=1e-5, rtol=1e-4)  # type: ignore[union-attr]
