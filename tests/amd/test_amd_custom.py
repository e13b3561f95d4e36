"""Hand-written kernels (Tensor.custom_kernel) on the virtual GPUs: gemm through buffer views, a sum, arange and a kernel
with two outputs, checked against numpy."""
import numpy as np
import pytest
from tg.uop import UOp, Ops, AxisType, KernelInfo, dtypes
from tg.tensor import Tensor
from custom_gemm import check_call_automatic_backward, check_gemm_custom_backward

ARCHS = pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])
rng = np.random.default_rng(9)
def sink(x: UOp, name: str) -> UOp: return x.sink(arg=KernelInfo(name=name))

def gemm_views_k(C: UOp, A: UOp, Bt: UOp) -> UOp:
  """C.flatten()[i*N + j] = A.reshape(M, K)[i, k] * Bt.permute(1, 0)[k, j], summed over k."""
  (M, N), K = C.shape, Bt.shape[1]
  A2, B = A.reshape(M, K), Bt.permute(1, 0)
  i, j, k = UOp.range(M, 0), UOp.range(N, 1), UOp.range(K, 2, AxisType.REDUCE)
  return sink(C.flatten()[i * N + j].store((A2[i, k] * B[k, j]).reduce(k, arg=Ops.ADD)).end(i, j), "gemm_views")
def sum_arange_k(S: UOp, R: UOp, A: UOp) -> UOp:
  """Two outputs: S[0] = sum(A), R[i] = i."""
  k, i = UOp.range(A.size, 0, AxisType.REDUCE), UOp.range(R.size, 1)
  return sink(UOp.group(S[0].store(A[k].reduce(k, arg=Ops.ADD)), R[i].store(i.cast(dtypes.float)).end(i)), "sum_arange")

@ARCHS
def test_custom_kernels_on_the_virtual_gpu(dev):
  a, bt = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal((5, 6)).astype(np.float32)
  c = Tensor.custom_kernel(Tensor.empty(4, 5, device=dev), Tensor(a.reshape(-1), device=dev), Tensor(bt, device=dev), fxn=gemm_views_k)[0]
  np.testing.assert_allclose(c.numpy(), a @ bt.T, rtol=1e-5, atol=1e-5)
  x = rng.standard_normal(32).astype(np.float32)
  s, r, _ = Tensor.custom_kernel(Tensor.empty(1, device=dev), Tensor.empty(7, device=dev), Tensor(x, device=dev), fxn=sum_arange_k)
  np.testing.assert_allclose(s.numpy(), [x.sum()], rtol=1e-5, atol=1e-5)
  np.testing.assert_array_equal(r.numpy(), np.arange(7, dtype=np.float32))

@ARCHS
def test_custom_backward_on_the_virtual_gpu(dev):
  """A gemm kernel whose gradient is given by grad_fxn (two more gemms as tensor ops), on the GPU."""
  check_gemm_custom_backward(dev, 3, 4, 2, rng)

@ARCHS
def test_call_with_automatic_backward_on_the_virtual_gpu(dev):
  check_call_automatic_backward(dev, rng)
