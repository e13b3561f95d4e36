"""QR and SVD against numpy's LAPACK: the factors multiply back to the matrix, Q, U and V are orthogonal, R is numpy's R
(the same sign convention), S is numpy's singular values in descending order; batched, tall, wide, rank-deficient."""
import numpy as np
import pytest
from tg.tensor import Tensor, dtypes

rng = np.random.default_rng(11)

def rank_deficient() -> np.ndarray:
  a = rng.standard_normal((5, 4)).astype(np.float32)
  a[:, 2] = a[:, 0] - 2 * a[:, 1]  # rank 3: a zero singular value
  return a

MATRICES = {"square": rng.standard_normal((4, 4)).astype(np.float32), "tall": rng.standard_normal((6, 3)).astype(np.float32),
            "wide": rng.standard_normal((3, 5)).astype(np.float32), "batched": rng.standard_normal((2, 4, 3)).astype(np.float32),
            "rank 3": rank_deficient(), "float64": rng.standard_normal((5, 5)), "column": rng.standard_normal((4, 1)).astype(np.float32)}

def close(got: np.ndarray, want: np.ndarray, a: np.ndarray) -> None:
  tol = 1e-10 if a.dtype == np.float64 else 2e-5
  np.testing.assert_allclose(got, want, rtol=tol * 10, atol=tol * 10 * max(1.0, float(np.abs(a).max())))

def eye(n: int, a: np.ndarray) -> np.ndarray: return np.broadcast_to(np.eye(n), (*a.shape[:-2], n, n))
def t(x: np.ndarray) -> np.ndarray: return np.swapaxes(x, -1, -2)

@pytest.mark.parametrize("name", MATRICES)
def test_qr_is_lapacks(name):
  a = MATRICES[name]
  q, r = (x.numpy() for x in Tensor(a).qr())
  m, n = a.shape[-2:]
  assert q.shape == (*a.shape[:-2], m, m) and r.shape == a.shape and q.dtype == a.dtype  # tinygrad's complete factorization
  close(q @ r, a, a)
  close(q @ t(q), eye(m, a), a)
  assert (np.tril(r, -1) == 0).all() or np.abs(np.tril(r, -1)).max() < 1e-6
  if name != "rank 3":  # (past a rank-deficient column, R's rows are rounding noise's reflections, in LAPACK too)
    close(r[..., :min(m, n), :], np.linalg.qr(a)[1], a)

@pytest.mark.parametrize("name", MATRICES)
def test_svd_is_lapacks(name):
  a = MATRICES[name]
  m, n = a.shape[-2:]
  k = min(m, n)
  u, s, vh = (x.numpy() for x in Tensor(a).svd())
  assert u.shape == (*a.shape[:-2], m, m) and s.shape == (*a.shape[:-2], k) and vh.shape == (*a.shape[:-2], n, n)
  close(s, np.linalg.svd(a, compute_uv=False), a)
  close((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, a)
  close(vh @ t(vh), eye(n, a), a)
  if name != "rank 3": close(u @ t(u), eye(m, a), a)  # (a zero singular value's column of U is zero, as tinygrad's)
  u2, s2, vh2 = (x.numpy() for x in Tensor(a).svd(full_matrices=False))
  assert u2.shape[-1] == k and vh2.shape[-2] == k
  close((u2 * s2[..., None, :]) @ vh2, a, a)

def test_errors_name_the_problem():
  for op in (Tensor.qr, Tensor.svd):
    with pytest.raises(ValueError, match="matrix"): op(Tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="float"): op(Tensor([[1, 2], [3, 4]], dtype=dtypes.int32))
