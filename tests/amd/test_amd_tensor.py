"""Tensor programs on the virtual GPUs (RDNA3 and RDNA4) equal the CPU device. They need LLVM 19 (clang-19, ld.lld-19):
without it they fail, naming the packages to install."""
from math import prod
import numpy as np
import pytest
from tg.tensor import Tensor
from tg.uop import Ops
from tg.tensor.nn.optim import SGD
from tg.codegen.device import Device
from tg.codegen.pipeline import get_program

ARCHS = pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])

def rand(*shape: int, seed: int = 0) -> np.ndarray: return np.random.default_rng(seed).uniform(-2, 2, shape).astype(np.float32)

def same(fn, *arrays: np.ndarray, dev: str, atol: float = 1e-5) -> None:
  """fn on `dev` equals fn on the CPU device."""
  got = fn(*[Tensor(a, device=dev) for a in arrays]).numpy()
  want = fn(*[Tensor(a, device="CPU") for a in arrays]).numpy()
  assert got.dtype == want.dtype and got.shape == want.shape
  np.testing.assert_allclose(got, want, atol=atol, rtol=1e-5)

@ARCHS
def test_llvm_elementwise(dev):
  a, b = rand(4, 8), rand(4, 8, seed=1)
  same(lambda x, y: (x * y + 1).exp2() - y.maximum(x) / (y.abs() + 1), a, b, dev=dev)
  same(lambda x, y: (x < y).where(x, y.cast("int32").cast("float32")), a, b, dev=dev)

@ARCHS
def test_llvm_sqrt(dev):
  same(lambda x: x.sqrt(), np.abs(rand(8)), dev=dev)

@ARCHS
def test_llvm_half(dev):
  a = rand(16)
  same(lambda x: (x.cast("float16") * 3).cast("float32"), a, dev=dev, atol=1e-2)

@ARCHS
def test_llvm_reductions(dev):
  a = rand(6, 10)
  same(lambda x: x.sum(axis=1), a, dev=dev)
  same(lambda x: x.max(axis=0) + x.mean(), a, dev=dev)

@ARCHS
def test_llvm_matmul(dev):
  same(lambda x, y: x @ y, rand(5, 7), rand(7, 3, seed=2), dev=dev, atol=1e-4)

@ARCHS
def test_llvm_conv(dev):
  same(lambda x, w: x.conv2d(w, padding=1).relu(), rand(1, 2, 5, 5), rand(3, 2, 3, 3, seed=3), dev=dev, atol=1e-4)

@ARCHS
def test_llvm_kernels_get_workgroups(dev):
  """The heuristics split a global axis into workgroup threads (LOCAL) for the amdgcn renderer: no one-thread launches."""
  a = rand(64, 64)
  for fn in (lambda x: x * 2 + 1, lambda x: x.sum(axis=1), lambda x: x @ x):
    kernels = [ei for ei in fn(Tensor(a, device=dev)).schedule() if ei.ast.op is Ops.SINK]
    assert kernels and all(prod(get_program(ei.ast, Device[dev].renderer).local_size) > 1 for ei in kernels)
    same(fn, a, dev=dev, atol=1e-3)

def train(dev: str, steps: int = 3) -> list[np.ndarray]:
  """A 4-8-2 MLP trained by SGD on fixed data: the final weights."""
  x, y = Tensor(rand(6, 4, seed=4), device=dev), Tensor(rand(6, 2, seed=5), device=dev)
  w1 = Tensor(rand(4, 8, seed=6) * 0.5, device=dev, requires_grad=True)
  w2 = Tensor(rand(8, 2, seed=7) * 0.5, device=dev, requires_grad=True)
  opt = SGD([w1, w2], lr=0.05)
  with Tensor.train():
    for _ in range(steps):
      loss = (((x @ w1).relu() @ w2 - y) ** 2).mean()
      opt.zero_grad()
      loss.backward()
      opt.step()
  return [w1.numpy(), w2.numpy()]

@ARCHS
def test_llvm_mlp_training(dev):
  for got, want in zip(train(dev), train("CPU")): np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)

@ARCHS
def test_half_tensor_to_float_every_element(dev):
  """A half buffer read as float: on gfx1200 LLVM converts the odd elements with s_cvt_hi_f32_f16 (once 0.0 in the emulator)."""
  h = (rand(2, 8) * 100).astype(np.float16)
  got = Tensor(h, device=dev).float().numpy()
  np.testing.assert_array_equal(got, h.astype(np.float32))
  np.testing.assert_array_equal(Tensor(h, device=dev).sum(axis=1, dtype="float32").numpy(), h.astype(np.float32).sum(1))

@ARCHS
def test_int8_elementwise_of_odd_size(dev):
  """27 int8 elements run one per workgroup: gfx1200 code loads each with s_load_u8 from an unaligned address."""
  x, y = np.arange(-8, 19, dtype=np.int8).reshape(3, 9), np.arange(1, 28, dtype=np.int8).reshape(3, 9)
  np.testing.assert_array_equal((Tensor(x, device=dev) * 3 + Tensor(y, device=dev)).numpy(), x * 3 + y)

@ARCHS
def test_bool_max_and_argmax_with_nan(dev):
  """A max of bools is an OR: LLVM IR compared i1 values signed (true is -1), so any() and the first-NaN test in argmax were
  always false on the GPU; the argmax reduce of a (1, 300) row needs a shared-memory reduce whose bool accumulator LLVM put in
  LDS through the dispatch packet, which the runtime doesn't pass (it raised "kernels that need dispatch_ptr")."""
  a = np.random.default_rng(0).standard_normal((1, 300)).astype(np.float32)
  np.testing.assert_array_equal(Tensor(a, device=dev).argmax(1).numpy(), a.argmax(1))
  a[0, 7] = a[0, 200] = np.nan
  np.testing.assert_array_equal(Tensor(a, device=dev).argmax(1).numpy(), [7])
  b = np.zeros(40, bool)
  b[33] = True
  assert Tensor(b, device=dev).max().item() is True and Tensor(b, device=dev).any().item() is True
  assert Tensor(np.zeros(40, bool), device=dev).any().item() is False
