"""A CPU matmul whose B is big copies B to contiguous K x w panels first (w the tile's columns: 16 on AVX2, 32 on AVX-512;
tg.tensor.tensor._packed, the width from tg.codegen.matmul_panel): one more kernel, the same bits as the strided read,
numpy's product and gradients."""
import numpy as np
import pytest
import tg.tensor.tensor as tensor_mod
from tg.tensor import Tensor, GlobalCounters
from tg.codegen import Device, matmul_panel

rng = np.random.default_rng(0)

def product(a: np.ndarray, b: np.ndarray, pack: bool, monkeypatch) -> tuple[np.ndarray, int]:
  """a @ b and the kernels it ran, B packed or not (by the size it takes to pack)."""
  monkeypatch.setattr(tensor_mod, "PACK_MIN_BYTES", 1 if pack else 1 << 62)
  ta, tb = Tensor(a).realize(), Tensor(b).realize()
  GlobalCounters.reset()
  out = (ta @ tb).numpy()
  return out, GlobalCounters.kernel_count

# 256 columns: at least 4 panels on every host (AVX2 reads 16-wide panels, AVX-512 32-wide ones)
@pytest.mark.parametrize("shape_a,shape_b", [((64, 96), (96, 256)), ((2, 64, 32), (2, 32, 256)), ((3, 64, 32), (32, 256))])
def test_packed_b_gives_the_same_bits(shape_a, shape_b, monkeypatch):
  a, b = rng.standard_normal(shape_a, dtype=np.float32), rng.standard_normal(shape_b, dtype=np.float32)
  assert matmul_panel(Device["CPU"].renderer, 4, 64, shape_b[-1]) is not None, "the CPU heuristics read this B by panels"
  packed, n_packed = product(a, b, True, monkeypatch)
  plain, n_plain = product(a, b, False, monkeypatch)
  assert (n_packed, n_plain) == (2, 1), "the pack is a kernel of its own"
  np.testing.assert_array_equal(packed, plain)  # each output still summed in k order: the layout of B changes no bits
  np.testing.assert_allclose(packed, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)

def test_no_pack_for_few_rows_or_no_panels(monkeypatch):
  monkeypatch.setattr(tensor_mod, "PACK_MIN_BYTES", 1)
  for sa, sb in (((8, 64), (64, 128)), ((64, 64), (64, 48))):  # 8 rows of A: not worth a copy; 48 columns: no 4 panels of 16
    a, b = rng.standard_normal(sa, dtype=np.float32), rng.standard_normal(sb, dtype=np.float32)
    ta, tb = Tensor(a).realize(), Tensor(b).realize()
    GlobalCounters.reset()
    np.testing.assert_allclose((ta @ tb).numpy(), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert GlobalCounters.kernel_count == 1, (sa, sb)

def test_gradients_through_the_pack(monkeypatch):
  monkeypatch.setattr(tensor_mod, "PACK_MIN_BYTES", 1)
  a, b, g = (rng.standard_normal(s, dtype=np.float32) for s in ((64, 48), (48, 128), (64, 128)))
  ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  ((ta @ tb) * Tensor(g)).sum().backward()
  np.testing.assert_allclose(ta.grad.numpy(), g.astype(np.float64) @ b.T, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(tb.grad.numpy(), a.T.astype(np.float64) @ g, rtol=1e-4, atol=1e-4)

def test_transposed_b_is_packed_at_any_size():
  """A Linear's weight.T: its columns are rows of the weight, a gather each; packed even when small."""
  a, w = rng.standard_normal((64, 32), dtype=np.float32), rng.standard_normal((256, 32), dtype=np.float32)
  ta, tw = Tensor(a).realize(), Tensor(w).realize()
  GlobalCounters.reset()
  np.testing.assert_allclose((ta @ tw.T).numpy(), a.astype(np.float64) @ w.T, rtol=1e-4, atol=1e-4)
  assert GlobalCounters.kernel_count == 2, "the pack, then the product"

def test_gradients_through_a_packed_transposed_b_with_leading_axes():
  a, w, g = (rng.standard_normal(s, dtype=np.float32) for s in ((2, 64, 32), (256, 32), (2, 64, 256)))
  ta, tw = Tensor(a, requires_grad=True), Tensor(w, requires_grad=True)
  ((ta @ tw.T) * Tensor(g)).sum().backward()
  np.testing.assert_allclose(ta.grad.numpy(), g.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(tw.grad.numpy(), np.einsum("bmn,bmk->nk", g.astype(np.float64), a), rtol=1e-4, atol=1e-3)

def test_transposed_a_is_copied_to_rows_first(monkeypatch):
  """A big g.T (a weight gradient's A): copied to its own layout, then the product (B packed too)."""
  monkeypatch.setattr(tensor_mod, "PACK_MIN_BYTES", 1)
  g, x = rng.standard_normal((96, 64), dtype=np.float32), rng.standard_normal((96, 256), dtype=np.float32)
  tg_, tx = Tensor(g).realize(), Tensor(x).realize()
  GlobalCounters.reset()
  np.testing.assert_allclose((tg_.T @ tx).numpy(), g.T.astype(np.float64) @ x, rtol=1e-4, atol=1e-4)
  assert GlobalCounters.kernel_count == 3, "A's copy, B's panels, the product"

# the weight gradient takes the narrower of x and g to transpose (k <= n: x, else g), and w or a Linear's weight.T
@pytest.mark.parametrize("k,n", [(64, 128), (128, 64)])
@pytest.mark.parametrize("transposed", [False, True])
def test_weight_gradients_of_every_layout(k, n, transposed, monkeypatch):
  monkeypatch.setattr(tensor_mod, "PACK_MIN_BYTES", 1)
  a, w, g = (rng.standard_normal(s, dtype=np.float32) for s in ((2, 80, k), (n, k) if transposed else (k, n), (2, 80, n)))
  ta, tw = Tensor(a, requires_grad=True), Tensor(w, requires_grad=True)
  ((ta @ (tw.T if transposed else tw)) * Tensor(g)).sum().backward()
  want = np.einsum("bmk,bmn->kn", a.astype(np.float64), g)
  np.testing.assert_allclose(tw.grad.numpy(), want.T if transposed else want, rtol=1e-4, atol=1e-3)
  np.testing.assert_allclose(ta.grad.numpy(), g.astype(np.float64) @ (w if transposed else w.T), rtol=1e-4, atol=1e-4)

def test_half_products_are_exact_in_the_float32_sum():
  """As PyTorch and tinygrad: a half matmul or conv multiplies in float32 (a product of halves is exact there), then sums
  and rounds once; each product was rounded to half first, 1 ulp off in 40% of outputs (a . b below gave 3.2305, not
  3.2324, the exact value rounded to half)."""
  a = np.array([1.1064453125, 0.7978515625, 0.63623046875], np.float16)
  b = np.array([1.3701171875, 0.9482421875, 1.5078125], np.float16)
  exact = np.float16(a.astype(np.float64) @ b.astype(np.float64))
  assert (Tensor(a) @ Tensor(b)).item() == exact == np.float16(3.232421875)
  assert Tensor(a).reshape(1, 3, 1, 1).conv2d(Tensor(b).reshape(1, 3, 1, 1)).item() == exact
  rng = np.random.default_rng(7)
  A, B = rng.uniform(-2, 2, (16, 2)).astype(np.float16), rng.uniform(-2, 2, (2, 16)).astype(np.float16)
  np.testing.assert_array_equal((Tensor(A) @ Tensor(B)).numpy(), (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float16))
