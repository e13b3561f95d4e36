"""Pooling (ceil_mode, count_include_pad, return_indices, max_unpool2d, PyTorch padding forms), nll_loss,
binary_crossentropy_logits pos_weight, attention enable_gqa and the argument checks, against numpy loops."""
import itertools
import numpy as np
import pytest
from tg.tensor import Tensor, dtypes
from tensor_helpers import check, rand
from test_autograd import check_grad

def _np_pool(x, k, s, pads, ceil, op, count_include_pad=True, d=(1, 1)):
  """PyTorch's pool semantics written out: pads ((top, bottom), (left, right)); the window is clipped to the input
  (padding never wins a max); avg divides by the window clipped to input + padding, or to the input alone."""
  H, W = x.shape[-2:]
  def osz(n, kk, ss, p, dd):
    num = n + p[0] + p[1] - (dd * (kk - 1) + 1)
    o = (-(-num // ss) if ceil else num // ss) + 1
    return o - 1 if ceil and (o - 1) * ss >= n + p[0] else o
  oh, ow = osz(H, k[0], s[0], pads[0], d[0]), osz(W, k[1], s[1], pads[1], d[1])
  out, idx = np.zeros(x.shape[:-2] + (oh, ow), np.float64), np.zeros(x.shape[:-2] + (oh, ow), np.int64)
  for lead in np.ndindex(x.shape[:-2]):
    for i, j in itertools.product(range(oh), range(ow)):
      hs, ws = i * s[0] - pads[0][0], j * s[1] - pads[1][0]
      cells = [(hs + a * d[0], ws + b * d[1]) for a in range(k[0]) for b in range(k[1])]
      inside = [(h, w) for h, w in cells if 0 <= h < H and 0 <= w < W]
      vals = [x[lead + c] for c in inside]
      if op == "max":
        best = int(np.argmax(vals))
        out[lead + (i, j)], idx[lead + (i, j)] = vals[best], inside[best][0] * W + inside[best][1]
      else:
        he, we = min(hs + k[0], H + pads[0][1]), min(ws + k[1], W + pads[1][1])
        out[lead + (i, j)] = sum(vals) / ((he - hs) * (we - ws) if count_include_pad else len(inside))
  return out.astype(x.dtype), idx

CASES = [((3, 3), (2, 2), 1, True), ((3, 2), (2, 3), (1, 0), True), ((2, 2), (3, 3), 0, True),
         ((3, 3), (1, 2), (1, 1, 0, 1), False), ((3, 3), (2, 2), (0, 1, 1, 0), True)]

def _pads(padding):
  if isinstance(padding, int): return ((padding, padding),) * 2
  if len(padding) == 2: return tuple((p, p) for p in padding)
  return ((padding[2], padding[3]), (padding[0], padding[1]))  # flat (left, right, top, bottom)

@pytest.mark.parametrize("k,s,padding,ceil", CASES, ids=str)
def test_pools(k, s, padding, ceil):
  x = rand(2, 2, 7, 8)
  pads = _pads(padding)
  want, want_idx = _np_pool(x, k, s, pads, ceil, "max")
  out, idx = Tensor(x).max_pool2d(k, s, padding=padding, ceil_mode=ceil, return_indices=True)
  np.testing.assert_array_equal(out.numpy(), want)
  np.testing.assert_array_equal(idx.numpy(), want_idx)
  assert idx.dtype == dtypes.int32
  for cip in (True, False):
    check(lambda t, cip=cip: t.avg_pool2d(k, s, padding=padding, ceil_mode=ceil, count_include_pad=cip),
          lambda a, cip=cip: _np_pool(a, k, s, pads, ceil, "avg", cip)[0], x, atol=1e-6)
  # max_unpool2d puts each maximum back at its position, zeros elsewhere
  up = out.max_unpool2d(idx, k, s, padding=padding if isinstance(padding, int) or len(padding) == 2 else 0, output_size=x.shape)
  want_up = np.zeros_like(x).reshape(2, 2, -1)
  np.put_along_axis(want_up, want_idx.reshape(2, 2, -1), want.reshape(2, 2, -1), -1)
  np.testing.assert_array_equal(up.numpy(), want_up.reshape(x.shape))

def test_pool_ints_ties_and_grads():
  xi = np.array([[[[1, 5, 5], [5, 0, 2], [3, 3, 9]]]], np.int32)
  out, idx = Tensor(xi).max_pool2d(2, 1, padding=1, return_indices=True)
  assert out.dtype == dtypes.int32
  want, want_idx = _np_pool(xi, (2, 2), (1, 1), ((1, 1), (1, 1)), False, "max")
  np.testing.assert_array_equal(out.numpy(), want)
  np.testing.assert_array_equal(idx.numpy(), want_idx)  # ties: the first in the window, as PyTorch
  x = rand(1, 1, 5, 5, dtype=np.float64)
  check_grad(lambda t: t.avg_pool2d(3, 2, padding=1, ceil_mode=True, count_include_pad=False), [x])
  check_grad(lambda t: t.max_pool2d(2, 2, ceil_mode=True), [x])
  v = rand(1, 2, 2, 2, dtype=np.float64)
  check_grad(lambda t: t.max_unpool2d(Tensor([[[[0, 3], [10, 15]], [[5, 6], [9, 12]]]]), 2), [v])
  assert Tensor(v).max_unpool2d(Tensor.zeros(1, 2, 2, 2, dtype=dtypes.int32), 2).shape == (1, 2, 4, 4)

def test_padding_forms():
  x, w = rand(1, 2, 6, 7), rand(3, 2, 3, 3, seed=1)
  def ref(a, b, pads):  # conv of the explicitly padded (or cropped) input
    (t, bt), (lf, r) = pads
    a = np.pad(a, ((0, 0), (0, 0), (max(t, 0), max(bt, 0)), (max(lf, 0), max(r, 0))))
    a = a[:, :, max(-t, 0):a.shape[2] - max(-bt, 0), max(-lf, 0):a.shape[3] - max(-r, 0)]
    return np.einsum("nchwkl,ockl->nohw", np.lib.stride_tricks.sliding_window_view(a, (3, 3), axis=(2, 3)), b)
  for padding in ((1, 2, 0, 1), (2, 0), (-1, 1, 1, -1), 1):
    np.testing.assert_allclose(Tensor(x).conv2d(Tensor(w), padding=padding).numpy(), ref(x, w, _pads(padding)), atol=1e-5)
  with pytest.raises(ValueError, match=r"padding \(1, 2, 3\) for 2 spatial axes"): Tensor(x).conv2d(Tensor(w), padding=(1, 2, 3))
  # conv_transpose2d is conv2d's adjoint for every padding form: <conv(x), g> == <x, conv_transpose(g)>
  g = rand(1, 3, 7, 6, seed=3)
  out = Tensor(x).conv2d(Tensor(w), padding=(1, 0, 2, 1))
  assert out.shape == g.shape
  back = Tensor(g).conv_transpose2d(Tensor(w), padding=(1, 0, 2, 1))
  np.testing.assert_allclose((out.numpy() * g).sum(), (x * back.numpy()).sum(), rtol=1e-4)

def _np_nll(lp, y, w, ignore):
  c = lp.shape[1]
  lpm, ym = np.moveaxis(lp, 1, -1).reshape(-1, c), y.reshape(-1)
  keep = ym != ignore
  ww = np.where(keep, w[np.where(keep, ym, 0)], 0)
  terms = -lpm[np.arange(len(ym)), np.where(keep, ym, 0)] * ww
  return terms.reshape(y.shape), terms.sum(), terms.sum() / ww.sum()

def test_nll_loss():
  lp = np.log(np.random.default_rng(0).dirichlet(np.ones(4), (3, 5))).transpose(0, 2, 1).astype(np.float32)  # (3, 4, 5)
  y = np.random.default_rng(1).integers(0, 4, (3, 5)).astype(np.int32)
  w = np.array([1.0, 2.0, 0.5, 3.0], np.float32)
  for weight, ignore in ((None, None), (w, None), (w, 2), (None, 0)):
    none, total, mean = _np_nll(lp, y, w if weight is not None else np.ones(4, np.float32), -100 if ignore is None else ignore)
    kw = {"weight": Tensor(weight) if weight is not None else None, "ignore_index": ignore}
    np.testing.assert_allclose(Tensor(lp).nll_loss(Tensor(y), reduction="none", **kw).numpy(), none, rtol=1e-5)
    np.testing.assert_allclose(Tensor(lp).nll_loss(Tensor(y), reduction="sum", **kw).item(), total, rtol=1e-5)
    np.testing.assert_allclose(Tensor(lp).nll_loss(Tensor(y), **kw).item(), mean, rtol=1e-5)
  assert abs(Tensor([-1.0, -2.0, -0.5]).nll_loss(Tensor(2)).item() - 0.5) < 1e-7  # (C,) with a 0-d target
  lp2 = lp[:, :, 0].astype(np.float64)
  check_grad(lambda t: t.nll_loss(Tensor(y[:, 0]), weight=Tensor(w.astype(np.float64))), [lp2])
  with pytest.raises(RuntimeError, match=r"nll_loss target of shape \(3, 4\)"): Tensor(lp).nll_loss(Tensor.zeros(3, 4, dtype=dtypes.int32))
  with pytest.raises(ValueError, match="reduction is 'mean', 'sum' or 'none', not 'avg'"): Tensor(lp).nll_loss(Tensor(y), reduction="avg")

def test_bce_logits_pos_weight_and_loss_checks():
  x, y, pw = rand(4, 3, low=-30, high=30), (rand(4, 3, seed=1) > 0).astype(np.float32), np.array([0.5, 1.0, 3.0], np.float32)
  def ref(a, t, p):
    log_sig = -np.logaddexp(0, -a.astype(np.float64))
    return (-(p * t * log_sig + (1 - t) * (log_sig - a))).mean().astype(np.float32)
  check(lambda a, t, p: a.binary_crossentropy_logits(t, pos_weight=p), ref, x, y, pw)
  check(lambda a, t: a.binary_crossentropy_logits(t), lambda a, t: ref(a, t, np.ones(3, np.float32)), x, y)
  for fn in (lambda: Tensor(x).binary_crossentropy_logits(Tensor(y), "avg"), lambda: Tensor(x).sigmoid().binary_crossentropy(Tensor(y), "all"),
             lambda: Tensor(x).cross_entropy(Tensor(y), reduction="x"),
             lambda: Tensor(x).sparse_categorical_crossentropy(Tensor([0, 1, 2, 0]), reduction="")):
    with pytest.raises(ValueError, match="reduction is 'mean', 'sum' or 'none'"): fn()
  with pytest.raises(RuntimeError, match=r"cross_entropy with probability targets of shape \(4, 2\)"): Tensor(x).cross_entropy(Tensor.ones(4, 2))
  with pytest.raises(RuntimeError, match=r"class index targets of shape \(5,\) for logits of shape \(4, 3\)"):
    Tensor(x).cross_entropy(Tensor([0, 1, 2, 0, 1]))

def test_sdpa_gqa_and_checks():
  q, k, v = rand(2, 4, 3, 5), rand(2, 2, 6, 5, seed=1), rand(2, 2, 6, 5, seed=2)
  def ref(q, k, v):
    k, v = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)
    s = q @ k.swapaxes(-1, -2) / np.sqrt(5)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v
  check(lambda a, b, c: a.scaled_dot_product_attention(b, c, enable_gqa=True), ref, q, k, v, atol=1e-5)
  with pytest.raises(ValueError, match="is_causal or attn_mask, not both"):
    Tensor(q).scaled_dot_product_attention(Tensor(q), Tensor(q), attn_mask=Tensor.ones(3, 3, dtype=dtypes.bool), is_causal=True)
  for cls in (RuntimeError, IndexError):  # PyTorch's class and tinygrad's
    with pytest.raises(cls, match="4 query heads don't group into 3 key heads"):
      Tensor(q).scaled_dot_product_attention(Tensor(rand(2, 3, 6, 5)), Tensor(rand(2, 3, 6, 5)), enable_gqa=True)
