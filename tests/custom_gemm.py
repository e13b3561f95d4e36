"""A gemm written as a custom kernel with its backward given by grad_fxn, and Tensor.call with its automatic backward, checked
against numpy: shared by the host devices' tests (tests/tensor/test_custom*.py) and the virtual GPUs' (tests/amd/test_amd_custom.py)."""
import numpy as np
from tg.uop import UOp, Ops, AxisType, KernelInfo
from tg.tensor import Tensor

def gemm_k(C: UOp, A: UOp, B: UOp) -> UOp:
  i, j, k = UOp.range(C.shape[0], 0), UOp.range(C.shape[1], 1), UOp.range(A.shape[1], 2, AxisType.REDUCE)
  return C[i, j].store((A[i, k] * B[k, j]).reduce(k, arg=Ops.ADD)).end(i, j).sink(arg=KernelInfo(name="gemm"))

def gemm_backward(gradient: UOp, kernel: UOp) -> tuple:
  """The gradient as two more gemms, written with tensor ops."""
  _, _, a, b = kernel.src  # the kernel's AST, then its buffers (c, a, b), as tinygrad's
  return None, (Tensor(gradient) @ Tensor(b).T).uop, (Tensor(a).T @ Tensor(gradient)).uop

def check_gemm_custom_backward(device: str, m: int, k: int, n: int, rng: np.random.Generator) -> tuple[Tensor, Tensor]:
  """c = a @ b by the custom kernel, then (c * g).sum() backward: c, a.grad and b.grad against numpy. Returns (a, b)."""
  a_np, b_np, g_np = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (m, n)))
  a, b = Tensor(a_np, requires_grad=True, device=device), Tensor(b_np, requires_grad=True, device=device)
  c = Tensor.custom_kernel(Tensor.empty(m, n, device=device), a, b, fxn=gemm_k, grad_fxn=gemm_backward)[0]
  (c * Tensor(g_np, device=device)).sum().backward()
  np.testing.assert_allclose(c.numpy(), a_np @ b_np, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(a.grad.numpy(), g_np @ b_np.T, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(b.grad.numpy(), a_np.T @ g_np, rtol=1e-5, atol=1e-5)
  return a, b

def check_call_automatic_backward(device: str, rng: np.random.Generator) -> None:
  """Tensor.call(a, b, fxn=p0*p1 + p0) and its automatic backward: sum's gradients are b + 1 and a (derived by hand)."""
  from tg.uop import dtypes
  a_np, b_np = rng.uniform(0.5, 1.5, (3, 4)).astype(np.float32), rng.uniform(0.5, 1.5, (3, 4)).astype(np.float32)
  p0, p1 = UOp.param(0, dtypes.float, (3, 4)), UOp.param(1, dtypes.float, (3, 4))
  a, b = Tensor(a_np, requires_grad=True, device=device), Tensor(b_np, requires_grad=True, device=device)
  out = Tensor.call(a, b, fxn=p0 * p1 + p0)
  out.sum().backward()
  np.testing.assert_allclose(out.numpy(), a_np * b_np + a_np, rtol=1e-6)
  np.testing.assert_allclose(a.grad.numpy(), b_np + 1, rtol=1e-6)
  np.testing.assert_allclose(b.grad.numpy(), a_np, rtol=1e-6)
