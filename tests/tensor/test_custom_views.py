"""Custom kernels that index their buffers through views (reshape, flatten, permute, shrink, pad, flip, slices), on the
CPU and the PYTHON interpreter, checked against numpy doing the same view."""
import numpy as np
import pytest
from tg.uop import UOp, Ops, AxisType, KernelInfo, dtypes
from tg.tensor import Tensor

DEVICES = ["CPU", "PYTHON"]
rng = np.random.default_rng(5)
def rand(*shape): return rng.standard_normal(shape).astype(np.float32)
def sink(x: UOp, name: str) -> UOp: return x.sink(arg=KernelInfo(name=name))

def copy_view_k(view) -> callable:
  """A kernel writing out[i] = view(A) at flat position i, for any view of A."""
  def k(O: UOp, A: UOp) -> UOp:
    V = view(A)
    i = UOp.range(O.shape[0], 0)
    return sink(O[i].store(V[i]).end(i), "copy_view")
  return k

VIEWS = {
  "reshape": (lambda A: A.reshape(4, 64), lambda a: a.reshape(4, 64)),
  "flatten": (lambda A: A.flatten(), lambda a: a.flatten()),
  "permute": (lambda A: A.permute(1, 0), lambda a: a.transpose(1, 0)),
  "transpose_unflatten": (lambda A: A.unflatten(1, (4, 4)).transpose(0, 2), lambda a: a.reshape(16, 4, 4).transpose(2, 1, 0)),
  "shrink_flip": (lambda A: A.shrink(((2, 10), None)).flip(0, 1), lambda a: a[2:10, ::-1][::-1]),
  "pad": (lambda A: A.pad(((1, 2), (0, 3))), lambda a: np.pad(a, ((1, 2), (0, 3)))),
  "expand_squeeze": (lambda A: A[3:4, :].expand(5, 16).unsqueeze(0).squeeze(0), lambda a: np.broadcast_to(a[3:4], (5, 16))),
  "slices": (lambda A: A[0, :], lambda a: a[0, :]),
  "slices_step": (lambda A: A[1:5, ::-1], lambda a: a[1:5, ::-1]),
}

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(VIEWS))
def test_copy_through_a_view(device, name):
  view, ref = VIEWS[name]
  a = rand(16, 16)
  want = ref(a)
  out = Tensor.custom_kernel(Tensor.empty(want.size, device=device), Tensor(a, device=device), fxn=copy_view_k(view))[0]
  np.testing.assert_array_equal(out.numpy(), want.reshape(-1))

def test_view_shapes_and_sizes():
  p = UOp.param(0, dtypes.int32, (16, 16))
  assert p.size == 256 and p.shape == (16, 16) and UOp.param(0, dtypes.int32, 7).size == 7
  assert p.flatten().shape == (256,) and p.reshape(4, -1).shape == (4, 64) and p.permute(1, 0).shape == (16, 16)
  assert p[0, :].shape == (16,) and p[2:5, 1:3].shape == (3, 2) and p.pad(((1, 2), None)).shape == (19, 16)
  assert p.unsqueeze(-1).shape == (16, 16, 1) and p.unflatten(0, (2, 8)).shape == (2, 8, 16) and p.shrink(((0, 4), None)).size == 64
  # a buffer's reshape of a reshape is one reshape of the buffer
  assert p.reshape(4, 64).reshape(8, 32).src[0] is p.src[0] and p.reshape(4, 64).flatten() is p.src[0]
  for bad in (lambda: p.reshape(3, 5), lambda: p.permute(0, 0), lambda: p.shrink(((0, 17), None)), lambda: p[0, ::2]):
    with pytest.raises((ValueError, IndexError)): bad()

@pytest.mark.parametrize("device", DEVICES)
def test_gemm_through_views_writes_flattened_output(device):
  """C.flatten()[i*N + j] = sum_k A.reshape(M, K)[i, k] * B^T[k, j]: B is given transposed and read through permute."""
  M, K, N = 4, 6, 5
  def gemm(C: UOp, A: UOp, Bt: UOp) -> UOp:
    A2, B = A.reshape(M, K), Bt.permute(1, 0)
    i, j, k = UOp.range(M, 0), UOp.range(N, 1), UOp.range(K, 2, AxisType.REDUCE)
    return sink(C.flatten()[i * N + j].store((A2[i, k] * B[k, j]).reduce(k, arg=Ops.ADD)).end(i, j), "gemm_views")
  a, bt = rand(M * K), rand(N, K)
  c = Tensor.custom_kernel(Tensor.empty(M, N, device=device), Tensor(a, device=device), Tensor(bt, device=device), fxn=gemm)[0]
  np.testing.assert_allclose(c.numpy(), a.reshape(M, K) @ bt.T, rtol=1e-5, atol=1e-5)

@pytest.mark.parametrize("device", DEVICES)
def test_store_through_a_view(device):
  """Writing through a permuted slice writes the buffer under it (here: the transpose of a 3x5 input into rows 1..5)."""
  def k(O: UOp, A: UOp) -> UOp:
    i, j = UOp.range(5, 0), UOp.range(3, 1)
    return sink(O[1:6, :].permute(1, 0)[j, i].store(A[j, i]).end(i, j), "store_view")
  a = rand(3, 5)
  out = Tensor.custom_kernel(Tensor.zeros(7, 3, device=device).contiguous(), Tensor(a, device=device), fxn=k)[0].numpy()
  want = np.zeros((7, 3), np.float32)
  want[1:6, :] = a.T
  np.testing.assert_array_equal(out, want)

@pytest.mark.parametrize("device", DEVICES)
def test_after_on_a_view_orders_and_indexes_the_buffer(device):
  """Write A transposed into O through a permuted view, then (after those stores) read it back through the same view."""
  def k(O: UOp, P: UOp, A: UOp) -> UOp:
    T = O.permute(1, 0)
    i, j = UOp.range(3, 0), UOp.range(5, 1)
    st = T[i, j].store(A[i, j]).end(i, j)
    r, c = UOp.range(5, 2), UOp.range(3, 3)
    return sink(P[r, c].store(T.after(st)[c, r] * 2.0).end(r, c), "after_view")
  a = rand(3, 5)
  o, p, _ = Tensor.custom_kernel(Tensor.empty(5, 3, device=device), Tensor.empty(5, 3, device=device), Tensor(a, device=device), fxn=k)
  np.testing.assert_array_equal(o.numpy(), a.T)
  np.testing.assert_array_equal(p.numpy(), a.T * 2.0)
