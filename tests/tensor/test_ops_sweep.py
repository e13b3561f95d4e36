"""A differential sweep of the Tensor API a tinygrad user calls (test_ops.py style) at the values where implementations
differ: inf, NaN, -0.0, integer limits, negative division, ties. numpy is the reference (and hand-worked values where
tinygrad's documented behaviour is not numpy's); result dtypes follow tinygrad's promotion. The cases are data
(ELEMENTWISE, REDUCE) so tests/amd runs the same ones on the virtual GPUs."""
from __future__ import annotations
import warnings
from typing import Any, Callable
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.tensor import Tensor
from tensor_helpers import DEVICES

F = np.array([-np.inf, -2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 3.7, np.inf, np.nan], np.float32)
I8 = np.array([-128, -7, -1, 0, 5, 7, 127], np.int8)
D8 = np.array([3, -2, 2, -3, -4, 7, -1], np.int8)
I32 = np.array([-2**31, -7, -1, 0, 5, 7, 2**31 - 1], np.int32)
D32 = np.array([3, -2, 2, -3, -4, 7, -1], np.int32)
B = np.array([True, False, True, False])
C = np.array([True, True, False, False])

Case = tuple[str, Callable[..., Tensor], Callable[..., Any], tuple[np.ndarray, ...]]
ELEMENTWISE: list[Case] = [
  ("neg", lambda t: -t, np.negative, (F,)),
  ("abs", lambda t: t.abs(), np.abs, (F,)),
  ("sign", lambda t: t.sign(), np.sign, (F,)),
  ("trunc", lambda t: t.trunc(), np.trunc, (F,)),
  ("floor", lambda t: t.floor(), np.floor, (F,)),
  ("ceil", lambda t: t.ceil(), np.ceil, (F,)),
  ("round half to even", lambda t: t.round(), np.round, (F,)),
  ("isnan", lambda t: t.isnan(), np.isnan, (F,)),
  ("isinf", lambda t: t.isinf(), np.isinf, (F,)),
  ("isfinite", lambda t: t.isfinite(), np.isfinite, (F,)),
  ("clip", lambda t: t.clip(-1, 2), lambda a: np.clip(a, -1, 2), (F,)),
  ("maximum with nan", lambda a, b: a.maximum(b), np.maximum, (F, F[::-1].copy())),
  ("float // and %", lambda a, b: (a // b).cat(a % b), lambda a, b: np.concatenate([a // b, np.mod(a, b)]),
   (np.array([-7.5, -7.0, 7.5, 5.0, 1.0], np.float32), np.array([2.0, -2.0, -2.0, -3.0, 0.5], np.float32))),
  ("pow negative bases", lambda t: (t ** 2).cat(t ** 3, t ** -1, t ** 0.5, t ** 0),
   lambda a: np.concatenate([a ** 2, a ** 3, np.float32(1) / a, np.sqrt(a), a ** 0]), (np.array([-2.0, -1.5, 0.5, 2.0, 3.0], np.float32),)),
  ("int8 wraps", lambda a, b: (a + a).cat(a * 3, -a, a - b), lambda a, b: np.concatenate([a + a, a * np.int8(3), -a, a - b]), (I8, D8)),
  ("int8 // % of negatives", lambda a, b: (a // b).cat(a % b), lambda a, b: np.concatenate([a // b, a % b]), (I8, D8)),
  ("int32 // % of negatives", lambda a, b: (a // b).cat(a % b, a.div(b, rounding_mode="trunc")),
   lambda a, b: np.concatenate([a // b, a % b, np.fix(a.astype(np.float64) / b).astype(np.int32)]), (I32, D32)),
  ("int32 bits", lambda a, b: (a & b).cat(a | b, a ^ b, ~a, a << 2, a >> 1),
   lambda a, b: np.concatenate([a & b, a | b, a ^ b, ~a, a << 2, a >> 1]), (I32, D32)),
  ("int abs sign", lambda a: a.abs().cat(a.sign()), lambda a: np.concatenate([np.abs(a), np.sign(a)]), (I32,)),
  ("uint8 wraps", lambda a: (a + 200).cat(a - 3, a * 7), lambda a: np.concatenate([a + np.uint8(200), a - np.uint8(3), a * np.uint8(7)]),
   (np.array([0, 1, 55, 255], np.uint8),)),
  ("bool ops", lambda a, b: (a & b).cat(a | b, a ^ b, ~a, a == b, a < b),
   lambda a, b: np.concatenate([a & b, a | b, a ^ b, ~a, a == b, a < b]), (B, C)),
  ("half", lambda t: (t * 2).cat(t.round()), lambda a: np.concatenate([a * np.float16(2), np.round(a)]),
   (np.array([0.5, 1.5, 2.5, -2.5, 65504.0], np.float16),)),
]
REDUCE: list[Case] = [
  ("max/min with nan", lambda t: t.max(1).cat(t.min(1)), lambda a: np.concatenate([a.max(1), a.min(1)]),
   (np.array([[1, np.nan, 3], [-np.inf, -np.inf, -np.inf], [2, 5, 5]], np.float32),)),
  ("argmax/argmin ties and nan", lambda t: t.argmax(1).cat(t.argmin(1)), lambda a: np.concatenate([a.argmax(1), a.argmin(1)]).astype(np.int32),
   (np.array([[1, 3, 3, 0], [1, np.nan, 3, np.nan], [0, -1, -1, 0]], np.float32),)),
  ("int8 argmax at the limits", lambda t: t.argmax().reshape(1).cat(t.argmin().reshape(1)),
   lambda a: np.array([a.argmax(), a.argmin()], np.int32), (I8,)),
  ("any all", lambda t: t.any(1).cat(t.all(1)), lambda a: np.concatenate([a.any(1), a.all(1)]),
   (np.array([[True, False], [False, False], [True, True]]),)),
  ("int sums widen", lambda t: t.sum().reshape(1).cat(t.prod().reshape(1)), lambda a: np.array([a.astype(np.int64).sum(), 0], np.int32), (I8,)),
  ("softmax of -inf rows", lambda t: t.softmax(1).cat(t.log_softmax(1)),
   lambda a: np.array([[np.nan] * 3, [0.26894142, 0.7310586, 0], [np.nan] * 3, [-1.3132617, -0.31326166, -np.inf]], np.float32),
   (np.array([[-np.inf, -np.inf, -np.inf], [0, 1, -np.inf]], np.float32),)),
  ("var/std with correction", lambda t: t.var(1, correction=0).cat(t.std(1, correction=2)),
   lambda a: np.concatenate([a.var(1), a.std(1, ddof=2)]), (np.array([[1, 2, 4, 8], [-1, -1, -1, -1]], np.float32),)),
  ("cumsum cumprod cummax", lambda t: t.cumsum(1).cat(t.cumprod(1), t.cummax(1)[0]),
   lambda a: np.concatenate([a.cumsum(1), a.cumprod(1), np.maximum.accumulate(a, 1)]), (np.array([[1, -2, 3, 0.5], [2, 2, -1, 4]], np.float32),)),
]

def run_case(case: Case, device: str) -> None:
  name, fn_t, fn_np, arrays = case
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    want = np.asarray(fn_np(*arrays))
  got = fn_t(*[Tensor(a, device=device) for a in arrays]).numpy()
  assert got.dtype == want.dtype, f"{name}: dtype {got.dtype}, numpy's {want.dtype}"
  if want.dtype.kind in "biu": np.testing.assert_array_equal(got, want, err_msg=name)
  else: np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-6, atol=1e-6, equal_nan=True, err_msg=name)

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
