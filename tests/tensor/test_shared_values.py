"""Elementwise values the scheduler stores once instead of recomputing in each kernel that reads them: a value several
kernels read that costs more to recompute than to store (a residual stream), and a computed operand a reduce broadcasts
(a layernorm's output into a matmul). The values are numpy's; the kernels read fewer buffers."""
import numpy as np
from tg.tensor import Tensor
from tg.tensor.schedule import schedule

rng = np.random.default_rng(0)

def kernels(*outs: Tensor) -> list:
  return [ei for ei in schedule([o.uop for o in outs])[0]]

def test_a_sum_of_many_buffers_read_by_several_kernels_is_stored_on_the_way():
  arrs = [rng.standard_normal((64, 64), dtype=np.float32) for _ in range(8)]
  x = Tensor(arrs[0])
  for a in arrs[1:]: x = x + Tensor(a)
  outs = [x.sum(1), x.max(1), (x * x).sum(0)]
  items = kernels(*outs)
  assert max(len(ei.bufs) for ei in items) <= 4, "each kernel reads at most 3 buffers, not all 8"
  want = np.sum(arrs, axis=0, dtype=np.float64)
  for got, ref in zip(outs, (want.sum(1), want.max(1), (want * want).sum(0))):
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-4, atol=1e-3)

def test_a_sum_read_by_one_kernel_fuses_into_it():
  arrs = [rng.standard_normal((64, 64), dtype=np.float32) for _ in range(8)]
  x = Tensor(arrs[0])
  for a in arrs[1:]: x = x + Tensor(a)
  assert len(kernels(x.sum(1))) == 1

def test_a_computed_matmul_operand_is_stored_once():
  a, b, w = (rng.standard_normal(s, dtype=np.float32) for s in ((64, 32), (64, 32), (32, 64)))
  out = (Tensor(a) * Tensor(b)) @ Tensor(w)
  items = kernels(out)
  assert len(items) == 2 and len(items[-1].bufs) == 3, "the product a*b in a kernel of its own, the matmul reads it"
  np.testing.assert_allclose(out.numpy(), (a.astype(np.float64) * b) @ w, rtol=1e-4, atol=1e-4)

def test_a_broadcast_into_elementwise_work_still_fuses():
  a, b = (rng.standard_normal((64, 32), dtype=np.float32) for _ in range(2))
  out = ((Tensor(a) * Tensor(b)).reshape(64, 32, 1).expand(64, 32, 64) + 1).contiguous()
  assert len(kernels(out)) == 1
  np.testing.assert_allclose(out.numpy(), np.broadcast_to((a.astype(np.float64) * b)[:, :, None] + 1, (64, 32, 64)), rtol=1e-6, atol=1e-6)
