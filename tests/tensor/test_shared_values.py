"""Elementwise values the scheduler stores once instead of recomputing in each kernel that reads them: a value several
kernels read that costs more to recompute than to store (a residual stream), and a computed operand a reduce broadcasts
(a layernorm's output into a matmul), a reduce padded into a bigger tensor (a piece of a cat). The values are numpy's;
the kernels read fewer buffers or run fewer loops."""
import numpy as np
from tg.tensor import Tensor
from tg.tensor.schedule import schedule

rng = np.random.default_rng(0)

def kernels(*outs: Tensor) -> list:
  return [ei for ei in schedule([o.uop for o in outs])[0]]

def test_a_residual_stream_read_by_several_kernels_is_stored_on_the_way():
  """Each partial sum is read by kernels of its own (a layer's layernorm) and by the next: each is stored, and no kernel
  re-reads every earlier buffer."""
  arrs = [rng.standard_normal((64, 64), dtype=np.float32) for _ in range(8)]
  x, outs, want = Tensor(arrs[0]), [], arrs[0].astype(np.float64)
  for a in arrs[1:]:
    x, want = x + Tensor(a), want + a
    outs += [(x.sum(1), want.sum(1)), (x.max(1), want.max(1))]
  items = kernels(*(o for o, _ in outs))
  assert max(len(ei.bufs) for ei in items) <= 4, "each kernel reads at most 3 buffers, not all 8"
  for got, ref in outs: np.testing.assert_allclose(got.numpy(), ref, rtol=1e-4, atol=1e-3)

def test_a_sum_read_by_several_kernels_only_through_its_total_is_stored_once():
  """The partial sums are read by the next sum alone: the total is stored, by one kernel, and the three reduces read it
  (storing each partial sum on the way was 7 kernels, each writing a buffer read once)."""
  arrs = [rng.standard_normal((64, 64), dtype=np.float32) for _ in range(8)]
  x = Tensor(arrs[0])
  for a in arrs[1:]: x = x + Tensor(a)
  outs = [x.sum(1), x.max(1), (x * x).sum(0)]
  assert len(kernels(*outs)) == 4
  want = np.sum(arrs, axis=0, dtype=np.float64)
  for got, ref in zip(outs, (want.sum(1), want.max(1), (want * want).sum(0))):
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-4, atol=1e-3)

def test_a_gelu_gradient_read_by_several_kernels_is_one_kernel():
  """The GELU's gradient, read by four reduces, is stored by one kernel: its terms, each the sum or product of shared
  inputs, were stored one by one (11 kernels)."""
  h, g = (rng.standard_normal((256, 64), dtype=np.float32) for _ in range(2))
  x = Tensor(h, requires_grad=True)
  x.gelu().backward(Tensor(g))
  dh = x.grad
  items = kernels(dh.sum(0), (dh * 2).sum(1), dh.max(0), dh.min(1))
  assert len(items) == 5, [ei.ast.arg.name for ei in items]
  c = np.sqrt(2 / np.pi)
  t = np.tanh(c * (h + 0.044715 * h ** 3))
  want = g * (0.5 * (1 + t) + 0.5 * h * (1 - t * t) * c * (1 + 3 * 0.044715 * h * h))
  np.testing.assert_allclose(dh.numpy(), want, rtol=1e-4, atol=1e-5)

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

def test_a_cat_of_matmuls_computes_each_in_its_own_kernel():
  """Each piece of a cat of matmuls (a padded reduce) is stored before the pad: fused into the cat's kernel, every element
  ran every piece's reduce loop with its loads masked off outside the piece (three 1024x256x256 pieces: 107 ms, not 1.5)."""
  from tg.uop import Ops
  a, b, c, d = (rng.standard_normal(s, dtype=np.float32) for s in ((64, 32), (32, 16), (32, 16), (32, 8)))
  out = Tensor.cat(Tensor(a) @ Tensor(b), Tensor(a) @ Tensor(c), (Tensor(a) @ Tensor(d)).relu(), dim=-1)
  reduces = [sum(u.op is Ops.REDUCE for u in ei.ast.toposort()) for ei in kernels(out)]
  assert sorted(reduces) == [0, 1, 1, 1], reduces
  np.testing.assert_allclose(out.numpy(), np.concatenate([a @ b, a @ c, np.maximum(a @ d, 0)], -1), rtol=1e-4, atol=1e-4)

def test_a_matmul_reduced_again_is_computed_in_its_own_kernel():
  """A contraction summed or maxed again ((x @ w).sum(0), a row max of scores) is stored first: in the second reduce's
  kernel it ran without its register tile (512x256x256: 8.3 ms against numpy's 0.25). A reduce of a plain load (a staged
  sum's two levels) stays one kernel."""
  from tg.uop import Ops
  x, w = rng.standard_normal((64, 32), dtype=np.float32), rng.standard_normal((32, 48), dtype=np.float32)
  for out, ref in (((Tensor(x) @ Tensor(w)).sum(0), (x @ w).sum(0)), ((Tensor(x) @ Tensor(w)).max(1), (x @ w).max(1))):
    assert [sum(u.op is Ops.REDUCE for u in ei.ast.toposort()) for ei in kernels(out)] == [1, 1]
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)
  assert len(kernels(Tensor(x).reshape(16, 128).sum(1).sum(0))) == 1

def test_a_matmul_read_through_one_stored_value_is_computed_in_its_kernel():
  """x + h @ w + b, read by three reduces (a layernorm's), is stored by the matmul's own kernel: the matmul was stored
  first for its three readers, then the sum from it (two passes over the output and a kernel more)."""
  x, h, w, b = (rng.standard_normal(s, dtype=np.float32) for s in ((64, 32), (64, 48), (48, 32), (32,)))
  xn = Tensor(x) + Tensor(h) @ Tensor(w) + Tensor(b)
  outs = [xn.sum(1), xn.max(1), (xn * xn).sum(0)]
  assert len(kernels(*outs)) == 4
  want = x + h.astype(np.float64) @ w + b
  for got, ref in zip(outs, (want.sum(1), want.max(1), (want * want).sum(0))):
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-4, atol=1e-3)
