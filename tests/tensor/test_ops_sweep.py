"""A differential sweep of the Tensor API a tinygrad user calls (test_ops.py style) at the values where implementations
differ: inf, NaN, -0.0, integer limits, negative division, ties. numpy is the reference (and hand-worked values where
tinygrad's documented behaviour is not numpy's); result dtypes follow tinygrad's promotion. The edge-value cases are data
(tests/ops_cases.py) so tests/amd runs the same ones on the virtual GPUs."""
from __future__ import annotations
import math
from typing import Callable
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.tensor import Tensor
from tensor_helpers import DEVICES
from ops_cases import ELEMENTWISE, REDUCE, run_case

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", ELEMENTWISE + REDUCE, ids=lambda c: c[0])
def test_edge_values_match_numpy(case, device):
  run_case(case, device)

ints = st.lists(st.integers(-2**31, 2**31 - 1), min_size=8, max_size=8)
@settings(max_examples=30, deadline=None)
@given(ints, ints.map(lambda v: [x or 1 for x in v]))
def test_int_floordiv_and_mod_are_pythons(a, b):
  """// and % of int32 round toward -inf, the remainder taking the divisor's sign (Python, numpy, PyTorch and tinygrad)."""
  ta, tb = Tensor(np.array(a, np.int32)), Tensor(np.array(b, np.int32))
  wrap = lambda v: (v + 2**31) % 2**32 - 2**31  # noqa: E731  (INT_MIN // -1 wraps, as numpy)
  assert (ta // tb).tolist() == [wrap(x // y) for x, y in zip(a, b)]
  assert (ta % tb).tolist() == [x % y for x, y in zip(a, b)]

# ***** regressions: each gave a wrong answer, crashed or lacked an API a tinygrad program calls *****

def test_sign_of_nan_is_nan():
  np.testing.assert_array_equal(Tensor(np.array([np.nan, -np.inf, -0.0, 2.0], np.float32)).sign().numpy(), [np.nan, -1, 0, 1])

def test_pow_zero_is_one_everywhere_and_passes_a_zero_gradient():
  t = Tensor(np.array([-1.0, 0.0, np.nan, np.inf], np.float32), requires_grad=True)
  y = t ** 0
  y.sum().backward()  # tinygrad keeps x ** 0 in the graph: no "no tensor requires grad"
  np.testing.assert_array_equal(y.numpy(), np.ones(4, np.float32))
  np.testing.assert_array_equal(t.grad.numpy(), np.zeros(4, np.float32))

@pytest.mark.parametrize("when", ["item", "realize the output"])
def test_a_realized_result_still_passes_gradients(when):
  # loss.item() then loss.backward() is every training loop's print: the loss became a buffer, its graph forgotten
  w = Tensor(np.array([1.0, -2.0, 3.0], np.float32), requires_grad=True)
  out = w * w
  if when == "item":
    loss = out.sum()
    assert loss.item() == 14.0
  else:
    out.realize()
    loss = out.sum()  # built on the realized output
  loss.backward()
  np.testing.assert_array_equal(w.grad.numpy(), [2.0, -4.0, 6.0])

def np_pool(x: np.ndarray, k: tuple[int, ...], s: tuple[int, ...], pad: int, fn: Callable) -> np.ndarray:
  """Pool over the last len(k) axes of x by explicit windows; padding is -inf (max) or counted zeros (mean)."""
  nd = len(k)
  xp = np.pad(x, [(0, 0)] * (x.ndim - nd) + [(pad, pad)] * nd, constant_values=-np.inf if fn is np.max else 0)
  osz = [(n - kk) // ss + 1 for n, kk, ss in zip(xp.shape[-nd:], k, s)]
  out = np.empty(x.shape[:-nd] + tuple(osz), x.dtype)
  for pos in np.ndindex(*osz):
    win = xp[(...,) + tuple(slice(p * ss, p * ss + kk) for p, ss, kk in zip(pos, s, k))]
    out[(...,) + pos] = fn(win.reshape(*x.shape[:-nd], -1), axis=-1)
  return out

@pytest.mark.parametrize("k,s,pad", [((3,), (2,), 1), ((2, 2, 2), (2, 2, 2), 0), ((2, 3, 2), (1, 2, 1), 1)])
def test_pools_of_one_and_three_dims(k, s, pad):
  # max_pool2d/avg_pool2d pool len(kernel_size) axes, as tinygrad (its tests pool 1-d and 3-d through them)
  x = np.random.default_rng(0).standard_normal((2, 2, 5, 6, 4)[-(2 + len(k)):]).astype(np.float32)
  np.testing.assert_allclose(Tensor(x).max_pool2d(k, s, padding=pad).numpy(), np_pool(x, k, s, pad, np.max), rtol=1e-6)
  np.testing.assert_allclose(Tensor(x).avg_pool2d(k, s, padding=pad).numpy(), np_pool(x, k, s, pad, np.mean), rtol=1e-5, atol=1e-6)

def test_one_d_max_pool_indices_unpool():
  x = np.random.default_rng(1).standard_normal((1, 2, 9)).astype(np.float32)
  out, idx = Tensor(x).max_pool2d((3,), return_indices=True)
  np.testing.assert_array_equal(idx.numpy(), x.reshape(1, 2, 3, 3).argmax(-1) + np.arange(0, 9, 3))
  back = np.zeros_like(x)
  np.put_along_axis(back, idx.numpy().astype(np.int64), out.numpy(), -1)
  np.testing.assert_array_equal(out.max_unpool2d(idx, (3,)).numpy(), back)

def test_binary_crossentropy_clamps_each_log_at_minus_100():
  # PyTorch's documented clamp: p of exactly 0 or 1 gives 100 per wrong term and 0 per right one, and a finite gradient
  p = Tensor(np.array([0.0, 1.0, 0.0, 1.0, 0.5], np.float32), requires_grad=True)
  y = Tensor(np.array([1.0, 0.0, 0.0, 1.0, 1.0], np.float32))
  loss = p.binary_crossentropy(y, reduction="none")
  np.testing.assert_allclose(loss.numpy(), [100, 100, 0, 0, math.log(2)], rtol=1e-6)
  loss.sum().backward()
  assert np.isfinite(p.grad.numpy()).all()

def test_cross_entropy_ignore_index():
  x = np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32)
  y = np.array([1, -100, 4, 3])
  logp = x - np.log(np.exp(x).sum(1, keepdims=True))
  kept = [0, 2, 3]
  np.testing.assert_allclose(Tensor(x).cross_entropy(Tensor(y)).numpy(), -logp[kept, y[kept]].mean(), rtol=1e-5)  # PyTorch's default -100
  np.testing.assert_allclose(Tensor(x).cross_entropy(Tensor(y), ignore_index=3, reduction="sum").numpy(), -logp[[0, 2], [1, 4]].sum(), rtol=1e-5)

def test_rearrange_splits_reorders_and_merges():
  x = np.arange(2 * 3 * 12).reshape(2, 3, 12)
  t = Tensor(x)
  np.testing.assert_array_equal(t.rearrange("b c (h w) -> w b (h c)", w=3).numpy(), x.reshape(2, 3, 4, 3).transpose(3, 0, 2, 1).reshape(3, 2, 12))
  np.testing.assert_array_equal(t.rearrange("b ... -> ... b").numpy(), x.transpose(1, 2, 0))
  np.testing.assert_array_equal(t.rearrange("... w -> (...) 1 w").numpy(), x.reshape(6, 1, 12))
  with pytest.raises(ValueError, match="give the size of w"): t.rearrange("b c (h w) -> b c h w")
  with pytest.raises(ValueError, match="doesn't split"): t.rearrange("b c (h w) -> b c h w", h=5)
  with pytest.raises(ValueError, match="once on each side"): t.rearrange("b c w -> b c")

def test_sequential_bfloat16_contiguous_backward():
  from tg.tensor import nn
  from tg.uop import Ops
  x = Tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
  l1, l2 = nn.Linear(3, 2), nn.Linear(2, 1)
  np.testing.assert_allclose(x.sequential([l1, Tensor.relu, l2]).numpy(), l2(l1(x).relu()).numpy(), rtol=1e-6)
  np.testing.assert_array_equal(Tensor([1.5, 2.7]).bfloat16().float().numpy(), [1.5, 2.703125])  # 2.7 to bf16's 8 bits
  w = Tensor(np.array([1.0, -2.0, 3.0], np.float32), requires_grad=True)
  y = (w * 3).contiguous_backward()
  g = (y * y).sum().gradient(w)[0]
  assert any(u.op is Ops.CONTIGUOUS for u in g.uop.toposort())
  np.testing.assert_array_equal(g.numpy(), [18, -36, 54])

@pytest.mark.parametrize("x,want", [([2.0, 0.0, 3.0], [0, 6, 0]), ([2.0, 0.0, 0.0], [0, 0, 0]), ([2.0, 4.0, -1.0], [-4, -2, 8])])
def test_prod_gradient_with_zeros_is_the_product_of_the_others(x, want):
  # ret / x was 0 / 0 = nan at a zero (PyTorch gives the product of the others)
  t = Tensor(np.array(x, np.float32), requires_grad=True)
  t.prod().backward()
  np.testing.assert_array_equal(t.grad.numpy(), want)

def test_cumprod_gradient_through_a_zero():
  t = Tensor(np.array([2.0, 0.0, 3.0], np.float32), requires_grad=True)
  t.cumprod(0).sum().backward()  # d/dx of x0 + x0 x1 + x0 x1 x2 at (2, 0, 3)
  np.testing.assert_array_equal(t.grad.numpy(), [1, 2 + 6, 0])

def test_pow_gradients_where_the_derivative_is_infinite_or_nan():
  # PyTorch's and tinygrad's (test_ops' test_pow_zero_tensor): at a base of 0, d/dx x**y is inf for 0 < y < 1 and -inf
  # for y < 0; a negative base with a fractional exponent is nan, in value and gradient
  x = Tensor(np.array([0.0, 0.0, -1.0, -2.0, 4.0], np.float32), requires_grad=True)
  y = Tensor(np.array([0.3, -0.3, 0.5, 3.0, 0.5], np.float32), requires_grad=True)
  (x ** y).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [np.inf, -np.inf, np.nan, 12.0, 0.25], rtol=1e-6)
  np.testing.assert_allclose(y.grad.numpy(), [0.0, -np.inf, np.nan, np.nan, 2 * math.log(4)], rtol=1e-6)

def test_attention_takes_dropout_p_in_its_place():
  # (q, k, v, attn_mask, dropout_p, is_causal): PyTorch's and tinygrad's order; in training each weight is dropped or doubled
  rng = np.random.default_rng(3)
  q, k = rng.standard_normal((1, 1, 6, 4)).astype(np.float32), rng.standard_normal((1, 1, 8, 4)).astype(np.float32)
  s = q @ k.transpose(0, 1, 3, 2) / 2
  w = np.exp(s - s.max(-1, keepdims=True))
  w /= w.sum(-1, keepdims=True)
  v = np.eye(8, dtype=np.float32).reshape(1, 1, 8, 8)  # the output is the weights themselves
  np.testing.assert_allclose(Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), None, 0.5).numpy(), w, rtol=1e-5)  # not training
  with Tensor.train():
    out = Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), None, 0.5).numpy()
  kept = out != 0
  assert 0 < kept.mean() < 1
  np.testing.assert_allclose(out[kept], 2 * w[kept], rtol=1e-5)

@pytest.mark.parametrize("fn,match", [(lambda: Tensor.arange(0, 5, 0), "step must not be 0"), (lambda: Tensor.zeros(4).chunk(0), "positive"),
                                      (lambda: Tensor.zeros(2, 3).repeat(2), "a count for each of its 2 dims"),
                                      (lambda: ~Tensor([1.5]), "bitwise not")])
def test_bad_arguments_raise_typed_errors_naming_the_problem(fn, match):
  # these raised ZeroDivisionError, or named the wrong operation
  with pytest.raises((ValueError, TypeError), match=match): fn()

def test_softmax_takes_a_dtype():
  # tinygrad's softmax(axis, dtype) and log_softmax(axis, dtype): computed in the dtype given
  x = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, -1.0]], np.float16)
  e = np.exp(x.astype(np.float32) - x.astype(np.float32).max(1, keepdims=True))
  sm = e / e.sum(1, keepdims=True)
  got = Tensor(x).softmax(-1, dtype="float32")
  assert got.dtype == Tensor([1.0]).dtype
  np.testing.assert_allclose(got.numpy(), sm, rtol=1e-6)
  np.testing.assert_allclose(Tensor(x).log_softmax(1, dtype="float32").numpy(), np.log(sm), rtol=1e-6)
