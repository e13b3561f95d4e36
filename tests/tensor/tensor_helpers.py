"""Shared by the tg.tensor tests: numpy as the reference, on every host device."""
from __future__ import annotations
from typing import Any, Callable
import numpy as np
from tg.tensor import Tensor

DEVICES = ["CPU", "PYTHON"]  # PYTHON is an interpreter: keep its shapes small

def check(fn_t: Callable[..., Any], fn_np: Callable[..., Any], *arrays: np.ndarray, device: str = "CPU", atol: float = 1e-5,
          rtol: float = 1e-5, dtype: Any = None) -> None:
  """fn_t over Tensors of `arrays` equals fn_np over the arrays (values, shape and numpy dtype kind)."""
  ts = [Tensor(a, device=device, dtype=dtype) for a in arrays]
  got, want = fn_t(*ts), np.asarray(fn_np(*arrays))
  out = got.numpy() if isinstance(got, Tensor) else np.asarray(got)
  assert out.shape == want.shape, f"shape {out.shape} != numpy's {want.shape}"
  if want.dtype == np.bool_ or np.issubdtype(want.dtype, np.integer): np.testing.assert_array_equal(out, want)
  else: np.testing.assert_allclose(out, want, atol=atol, rtol=rtol, equal_nan=True)

def rand(*shape: int, low: float = -2.0, high: float = 2.0, dtype: Any = np.float32, seed: int = 0) -> np.ndarray:
  return np.random.default_rng(seed).uniform(low, high, shape).astype(dtype)
