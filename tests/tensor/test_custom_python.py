"""The custom kernels of tinygrad's docs (arange, sum, two outputs, Tensor.call's automatic backward) on the PYTHON
interpreter, the reference semantics, checked against numpy (test_custom.py runs them on the CPU)."""
import numpy as np
from tg.tensor import Tensor
from test_custom import add_mul_k, arange_k, sum_k
from custom_gemm import check_call_automatic_backward

rng = np.random.default_rng(4)
DEV = "PYTHON"

def test_arange_sum_and_two_outputs():
  np.testing.assert_array_equal(Tensor.custom_kernel(Tensor.empty(7, device=DEV), fxn=arange_k)[0].numpy(), np.arange(7, dtype=np.float32))
  x, y = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
  s = Tensor.custom_kernel(Tensor.empty(1, device=DEV), Tensor(x, device=DEV), fxn=sum_k)[0]
  np.testing.assert_allclose(s.numpy(), [x.astype(np.float64).sum()], rtol=1e-5, atol=1e-5)
  c, d, _, _ = Tensor.custom_kernel(Tensor.empty(16, device=DEV), Tensor.empty(16, device=DEV), Tensor(x, device=DEV), Tensor(y, device=DEV),
                                    fxn=add_mul_k)
  np.testing.assert_array_equal(c.numpy(), x + y)
  np.testing.assert_array_equal(d.numpy(), x * y)

def test_call_with_automatic_backward(): check_call_automatic_backward(DEV, rng)
