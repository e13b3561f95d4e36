"""A big CPU x @ B (one row of x) whose columns come in 1024s is one kernel walking 1024-column strips down B; another
sums B in 16-row blocks (tg.codegen.vecmat_block): a kernel of partial sums, then their column sum. The products are the
same, summed in another order, so the result is numpy's within float rounding, for every leading shape of x, with
gradients; small, integer and many-row products stay one kernel."""
import numpy as np
import pytest
import tg.codegen.opt.heuristic as heuristic
from tg.tensor import Tensor, GlobalCounters, dtypes
from tg.codegen import Device, vecmat_block
from tg.codegen.renderer import Renderer

rng = np.random.default_rng(0)

def run(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
  """a @ b and the kernels it ran."""
  ta, tb = Tensor(a).realize(), Tensor(b).realize()
  GlobalCounters.reset()
  out = (ta @ tb).numpy()
  return out, GlobalCounters.kernel_count

@pytest.mark.parametrize("lead", [(), (1,), (1, 1)])
@pytest.mark.parametrize("k,n,want", [(512, 96, 2), (256, 2048, 1)])
def test_big_vecmat_is_numpys(lead, k, n, want, monkeypatch):
  """Columns not in 1024s: the partial sums are a kernel of their own; in 1024s: the strips walk all of B in one."""
  monkeypatch.setattr(heuristic, "VECMAT_MIN_BYTES", 1)
  a, b = rng.standard_normal((*lead, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
  out, kernels = run(a, b)
  assert kernels == want
  assert out.shape == (a @ b).shape
  np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)

def test_one_kernel_when_not_blocked(monkeypatch):
  monkeypatch.setattr(heuristic, "VECMAT_MIN_BYTES", 1)
  cases = [(rng.standard_normal((2, 512), dtype=np.float32), rng.standard_normal((512, 96), dtype=np.float32)),  # two rows of x
           (rng.integers(-9, 9, (512,), dtype=np.int32), rng.integers(-9, 9, (512, 96), dtype=np.int32)),  # exact already
           (rng.standard_normal((200,), dtype=np.float32), rng.standard_normal((200, 96), dtype=np.float32))]  # not whole blocks
  for a, b in cases:
    out, kernels = run(a, b)
    assert kernels == 1, (a.shape, a.dtype)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)

def test_gradients_through_the_blocks(monkeypatch):
  monkeypatch.setattr(heuristic, "VECMAT_MIN_BYTES", 1)
  a, b, g = (rng.standard_normal(s, dtype=np.float32) for s in ((512,), (512, 96), (96,)))
  ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  ((ta @ tb) * Tensor(g)).sum().backward()
  np.testing.assert_allclose(ta.grad.numpy(), b.astype(np.float64) @ g, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(tb.grad.numpy(), np.outer(a, g), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("k,n", [(4095, 4096), (4097, 2048), (4096, 4095), (4096, 1024)])
def test_big_vecmat_of_odd_sizes(k, n):
  """Rows or columns that don't divide into the walk's steps or strips (the blocks, or the plain column walk) are numpy's."""
  a, b = rng.standard_normal((1, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
  np.testing.assert_allclose(run(a, b)[0], a.astype(np.float64) @ b, rtol=1e-4, atol=2e-4)

def test_which_products_are_blocked():
  cpu = Device["CPU"].renderer
  assert vecmat_block(cpu, 4, 4096, 4096) is None  # 64 MB of B in 1024-column strips: walked in one kernel
  assert vecmat_block(cpu, 4, 4096, 4000) == 16  # 64 MB of B, columns not in 1024s
  assert vecmat_block(cpu, 2, 4096, 4096) == 16  # float16: the walk is for 4-byte values
  assert vecmat_block(cpu, 4, 4096, 64) is None   # 1 MB: fits the caches
  assert vecmat_block(cpu, 4, 4104, 4096) is None  # not whole blocks
  assert vecmat_block(Renderer(), 4, 4096, 4096) is None  # no host vector registers (not a CPU)
  assert Tensor.ones(4096).matmul(Tensor.ones(4096, 4096, dtype=dtypes.float32)).shape == (4096,)
