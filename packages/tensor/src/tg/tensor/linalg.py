"""Matrix factorizations on the device, batched over the leading dims: QR by Householder reflections, SVD by one-sided
(Hestenes) Jacobi rotations of the QR's R. Plain tensor ops, so they run on any device; SVD reads one number per sweep
(is it done?), so it doesn't run inside a TinyJit."""
from __future__ import annotations
from typing import TYPE_CHECKING
from tg.uop import dtypes
from tg.tensor.errors import TensorValueError
from tg.tensor.graph import shape_text
if TYPE_CHECKING: from tg.tensor.tensor import Tensor

SWEEPS = 30  # at most this many Jacobi sweeps (each pair of columns once); quadratic convergence needs about 6-10

def _eye(n: int, like: Tensor) -> Tensor:
  """The n x n identity, broadcast to like's batch dims."""
  from tg.tensor.tensor import Tensor
  return Tensor.eye(n, dtype=like.dtype, device=like.device).reshape(*[1] * (like.ndim - 2), n, n).expand(*like.shape[:-2], n, n)

def _matrix(x: Tensor, op: str) -> tuple[int, int]:
  if x.ndim < 2: raise TensorValueError(f"{op} needs a matrix (two or more dims), got shape {shape_text(x.shape)}")
  if not dtypes.is_float(x.dtype): raise TensorValueError(f"{op} needs a float tensor, got {x.dtype}")
  return x.shape[-2], x.shape[-1]

def _round_robin(n: int) -> list[list[tuple[int, int]]]:
  """n - 1 rounds of n / 2 disjoint pairs of 0..n-1 (n even) in which every pair meets once: the circle method."""
  ring, rounds = list(range(1, n)), []
  for _ in range(n - 1):
    order = [0] + ring
    rounds.append([(order[i], order[n - 1 - i]) for i in range(n // 2)])
    ring = ring[-1:] + ring[:-1]
  return rounds

class LinalgMixin:
  def qr(self: Tensor) -> tuple[Tensor, Tensor]:
    """Q (m x m, orthogonal) and R (m x n, upper triangular) with Q @ R = self: tinygrad's complete factorization (numpy's
    and PyTorch's default is the reduced one, Q m x k). R's diagonal has LAPACK's signs (each reflection sends a column to
    -sign(its top) * its norm), so R is numpy's."""
    m, n = _matrix(self, "qr")
    from tg.tensor.tensor import Tensor
    r, q = self, _eye(m, self)
    rows, cols = Tensor.arange(m, device=self.device), Tensor.arange(n, device=self.device)
    for k in range(min(m - 1, n)):
      kt = Tensor([k], device=self.device)  # k as data: every step runs the same kernels (compiled once, not per k)
      x = (rows >= kt).where((cols == kt).where(r, 0).sum(-1), 0)  # column k from the diagonal down
      top, norm = (rows == kt).where(x, 0).sum(-1, keepdim=True), x.square().sum(-1, keepdim=True).sqrt()
      v = x - (rows == kt).where((top >= 0).where(-norm, norm), 0)  # x - beta e_k, beta = -sign(top) |x|
      vv = v.square().sum(-1, keepdim=True)
      scale = (vv > 0).where(2 / (vv > 0).where(vv, 1), 0).unsqueeze(-1)  # no reflection of a zero column
      v = v.unsqueeze(-1)
      r = (r - scale * v @ (v.transpose(-2, -1) @ r)).contiguous()
      q = (q - scale * (q @ v) @ v.transpose(-2, -1)).contiguous()
    return q, r

  def svd(self: Tensor, full_matrices: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """U, S, Vh with U @ diag(S) @ Vh = self, S descending (numpy's, PyTorch's and tinygrad's order; the singular vectors'
    signs are any). full_matrices: U is m x m and Vh n x n, else m x k and k x n (k = min(m, n)). The Jacobi rotations
    orthogonalize R's columns pair by pair, n / 2 disjoint pairs at a time, until no pair's cosine exceeds n times the
    dtype's epsilon (at most SWEEPS sweeps); U of a zero singular value is a zero column (tinygrad's too)."""
    m, n = _matrix(self, "svd")
    if m < n:
      u, s, vh = self.transpose(-2, -1).svd(full_matrices)
      return vh.transpose(-2, -1), s, u.transpose(-2, -1)
    q, r = self.qr()
    w = r[..., :n, :]
    npad = n + n % 2  # an odd n gets a zero column, which no rotation touches
    if npad != n: w = w.pad([(0, 0)] * (w.ndim - 1) + [(0, 1)])
    v = _eye(npad, w)
    eps = 2.0 ** -dtypes.finfo(w.dtype)[1]
    rounds = _round_robin(npad) if npad > 1 else []
    for _ in range(SWEEPS):
      worst = None
      for pairs in rounds:
        w, v, cos = _rotate(w, v, pairs)
        worst = cos if worst is None else worst.maximum(cos)
      if worst is None or worst.max().item() <= eps * n: break
    norms = w.square().sum(-2).sqrt()[..., :n]
    s, order = norms.sort(-1, descending=True)
    cols = order.unsqueeze(-2)
    u_small = w[..., :n].gather(-1, cols.expand(*w.shape[:-1], n)) / (s > 0).where(s, 1).unsqueeze(-2)
    vk = v[..., :n, :n].gather(-1, cols.expand(*v.shape[:-2], n, n))
    u = q @ u_small.pad([(0, 0)] * (u_small.ndim - 2) + [(0, m - n), (0, 0)])  # Q's first n columns times u_small
    if full_matrices and m > n: u = u.cat(q[..., n:], dim=-1)
    return u.contiguous(), s.contiguous(), vk.transpose(-2, -1).contiguous()

def _rotate(w: Tensor, v: Tensor, pairs: list[tuple[int, int]]) -> tuple[Tensor, Tensor, Tensor]:
  """One Jacobi rotation per pair (p, q) of columns, all at once: the one that makes w's columns p and q orthogonal,
  applied to w and v; also each pair's |cosine| before it."""
  from tg.tensor.tensor import Tensor
  ps, qs = [p for p, _ in pairs], [q for _, q in pairs]
  inverse = [0] * (2 * len(pairs))
  for i, c in enumerate(ps + qs): inverse[c] = i
  idx_p, idx_q, back = (Tensor(ix, device=w.device) for ix in (ps, qs, inverse))
  wp, wq, vp, vq = w[..., idx_p], w[..., idx_q], v[..., idx_p], v[..., idx_q]
  alpha, beta, gamma = wp.square().sum(-2), wq.square().sum(-2), (wp * wq).sum(-2)
  turn = gamma != 0
  zeta = (beta - alpha) / (2 * turn.where(gamma, 1))
  t = turn.where((zeta >= 0).where(1, -1) / (zeta.abs() + (1 + zeta.square()).sqrt()), 0)  # the smaller root of t^2 + 2 zeta t = 1
  c = 1 / (1 + t.square()).sqrt()
  s = c * t
  c, s = c.unsqueeze(-2), s.unsqueeze(-2)
  w = (c * wp - s * wq).cat(s * wp + c * wq, dim=-1)[..., back].contiguous()
  v = (c * vp - s * vq).cat(s * vp + c * vq, dim=-1)[..., back].contiguous()
  den = (alpha * beta).sqrt()
  return w, v, turn.where(gamma.abs() / (den > 0).where(den, 1), 0)
