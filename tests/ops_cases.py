"""Edge-value cases of the Tensor API (inf, NaN, -0.0, integer limits, negative division, ties) with numpy as the
reference, shared by tests/tensor/test_ops_sweep.py (CPU, PYTHON) and tests/amd/test_amd_ops_sweep.py (the virtual GPUs)."""
from __future__ import annotations
import warnings
from typing import Any, Callable
import numpy as np
from tg.tensor import Tensor

T = Tensor  # (short: the cases are one line each)

F = np.array([-np.inf, -2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 3.7, np.inf, np.nan], np.float32)
I8 = np.array([-128, -7, -1, 0, 5, 7, 127], np.int8)
D8 = np.array([3, -2, 2, -3, -4, 7, -1], np.int8)
I32 = np.array([-2**31, -7, -1, 0, 5, 7, 2**31 - 1], np.int32)
D32 = np.array([3, -2, 2, -3, -4, 7, -1], np.int32)
B = np.array([True, False, True, False])
C = np.array([True, True, False, False])

Case = tuple[str, Callable[..., Tensor], Callable[..., Any], tuple[np.ndarray, ...]]
ELEMENTWISE: list[Case] = [
  ("neg abs sign trunc floor ceil round(half to even) clip",
   lambda t: T.stack(-t, t.abs(), t.sign(), t.trunc(), t.floor(), t.ceil(), t.round(), t.clip(-1, 2)),
   lambda a: np.stack([-a, np.abs(a), np.sign(a), np.trunc(a), np.floor(a), np.ceil(a), np.round(a), np.clip(a, -1, 2)]), (F,)),
  ("relu6 hardsigmoid hardswish at inf (hardswish(-inf) = -inf * 0 = nan, as PyTorch)", lambda t: T.stack(t.relu6(), t.hardsigmoid(), t.hardswish()),
   lambda a: np.stack([np.clip(a, 0, 6), np.clip(a / 6 + 0.5, 0, 1), a * np.clip(a + 3, 0, 6) / 6]), (F[:-1],)),
  ("isnan isinf isfinite", lambda t: T.stack(t.isnan(), t.isinf(), t.isfinite()),
   lambda a: np.stack([np.isnan(a), np.isinf(a), np.isfinite(a)]), (F,)),
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
  ("logsumexp and logcumsumexp of -inf and inf", lambda t: t.logsumexp(1).cat(t.logcumsumexp(1).flatten()),
   lambda a: np.concatenate([np.logaddexp.reduce(a, 1), np.logaddexp.accumulate(a, 1).flatten()]),
   (np.array([[-np.inf, -np.inf, -np.inf], [-np.inf, 0, 1], [np.inf, 1, -np.inf]], np.float32),)),
  ("var/std with correction", lambda t: t.var(1, correction=0).cat(t.std(1, correction=2)),
   lambda a: np.concatenate([a.var(1), a.std(1, ddof=2)]), (np.array([[1, 2, 4, 8], [-1, -1, -1, -1]], np.float32),)),
  ("cumsum cumprod cummax", lambda t: t.cumsum(1).cat(t.cumprod(1), t.cummax(1).values),
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
