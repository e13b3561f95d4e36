"""Reductions, linear algebra and NN functions against numpy references."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.tensor import Tensor, dtypes
from tensor_helpers import DEVICES, check, rand

def _lse(x, axis): return np.log(np.exp(x - x.max(axis, keepdims=True)).sum(axis, keepdims=True)) + x.max(axis, keepdims=True)

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("axis,keepdim", [(None, False), (0, False), (-1, True), ((0, 2), False)], ids=str)
def test_reductions(device, axis, keepdim):
  a = rand(3, 4, 5)
  for name in ["sum", "mean", "max", "min", "prod", "std", "var", "any", "all"]:
    npf = {"any": lambda x, **k: np.any(x > 0, **k), "all": lambda x, **k: np.all(x > -1.5, **k),
           "std": lambda x, **k: np.std(x, ddof=1, **k), "var": lambda x, **k: np.var(x, ddof=1, **k)}.get(name, getattr(np, name))
    tf = {"any": lambda x, **k: (x > 0).any(**k), "all": lambda x, **k: (x > -1.5).all(**k)}.get(name, getattr(Tensor, name))
    check(lambda x: tf(x, axis=axis, keepdim=keepdim), lambda x: npf(x, axis=axis, keepdims=keepdim), a, device=device, atol=1e-4, rtol=1e-4)

def test_arg_softmax_cumsum_logsumexp():
  a = rand(4, 6)
  a[1, 2] = a[1, 4] = 5.0  # ties: the first index wins
  check(lambda x: x.argmax(1), lambda x: np.argmax(x, 1).astype(np.int32), a)
  check(lambda x: x.argmin(0, keepdim=True), lambda x: np.argmin(x, 0, keepdims=True).astype(np.int32), a)
  check(lambda x: x.argmax(), lambda x: np.int32(np.argmax(x)), a)
  check(lambda x: x.softmax(-1), lambda x: np.exp(x - _lse(x, -1)), a)
  check(lambda x: x.log_softmax(0), lambda x: x - _lse(x, 0), a)
  check(lambda x: x.logsumexp(1), lambda x: _lse(x, 1)[:, 0], a)
  check(lambda x: x.cumsum(1), lambda x: np.cumsum(x, 1), a)
  check(lambda x: x.cumsum(0), lambda x: np.cumsum(x, 0), np.arange(7, dtype=np.int32))

def test_accumulation_dtypes():
  h = np.full(4096, 0.1, np.float16)
  out = Tensor(h).sum()
  assert out.dtype == dtypes.float16 and abs(float(out.item()) - 409.6) < 0.5  # a float16 accumulator would stall at 256
  assert Tensor([1, 2], dtype=dtypes.int8).sum().dtype == dtypes.int32
  assert Tensor([1, 2], dtype=dtypes.uint8).sum().dtype == dtypes.uint32
  assert Tensor([True, True]).sum().item() == 2
  assert Tensor([1.5, 2.5]).sum(acc_dtype=dtypes.float64).dtype == dtypes.float64

def test_zero_size_reductions():
  z = np.zeros((0, 3), np.float32)
  check(lambda x: x.sum(0), lambda x: x.sum(0), z)
  check(lambda x: x.sum(1), lambda x: x.sum(1), z)
  check(lambda x: x.max(1), lambda x: x.max(1), z)
  # tinygrad's semantics (PyTorch raises for max/min): a reduce over nothing is its identity, numpy's `initial=`
  for op, ident in (("max", -np.inf), ("min", np.inf), ("prod", 1.0)):
    check(lambda x: getattr(x, op)(0), lambda x: getattr(np, op)(x, 0, initial=ident), z)
  for dt in (np.int32, np.uint8, np.int64):
    info, zi = np.iinfo(dt), np.zeros((0, 3), dt)
    for op, ident in (("max", info.min), ("min", info.max), ("prod", 1), ("sum", 0)):
      np.testing.assert_array_equal(getattr(Tensor(zi), op)(0).numpy(), getattr(np, op)(zi, 0, initial=ident), err_msg=f"{op} {dt}")
  g = Tensor(z, requires_grad=True)
  g.clone().sum().backward()  # the empty reduce stays in the graph: the gradient reaches the leaf, also of size 0
  assert g.grad is not None and g.grad.numpy().shape == (0, 3)

@settings(max_examples=25, deadline=None)
@given(st.sampled_from([np.int8, np.int32, np.int64, np.uint8, np.uint32]), st.data())
def test_int_min_and_minimum_at_the_extremes(dt, data):
  # min was -max(-x): -INT_MIN overflows to INT_MIN, so a tensor holding INT_MIN had the wrong min
  info = np.iinfo(dt)
  vals = st.one_of(st.sampled_from([int(info.min), int(info.max), 0, -1 if info.min else 1]), st.integers(int(info.min), int(info.max)))
  a, b = (np.array(data.draw(st.lists(vals, min_size=6, max_size=6)), dt).reshape(2, 3) for _ in range(2))
  np.testing.assert_array_equal(Tensor(a).min(1).numpy(), a.min(1))
  np.testing.assert_array_equal(Tensor(a).min().numpy(), a.min())
  np.testing.assert_array_equal(Tensor(a).minimum(Tensor(b)).numpy(), np.minimum(a, b))

def test_size_is_the_shape():
  t = Tensor.ones(2, 3, 4)
  assert (t.size(), t.size(1), t.size(-1), Tensor(1.0).size()) == ((2, 3, 4), 3, 4, ())
  with pytest.raises(IndexError, match="axis 3 is out of range"): t.size(3)

@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4, 2)), ((2, 3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2)), ((0, 4), (4, 3))], ids=str)
def test_matmul(sa, sb):
  check(lambda x, y: x @ y, np.matmul, rand(*sa), rand(*sb, seed=1), atol=1e-4)
  check(lambda x, y: x.dot(y), np.matmul, rand(*sa).astype(np.int32), rand(*sb, seed=1).astype(np.int32), dtype=dtypes.int32)

def test_matmul_errors_and_linear_einsum():
  with pytest.raises(ValueError, match=r"matmul shapes \(2, 3\) and \(4, 5\) don't match: 3 != 4"): Tensor.ones(2, 3) @ Tensor.ones(4, 5)
  x, w, b = rand(2, 3), rand(4, 3, seed=1), rand(4, seed=2)
  check(lambda p, q, r: p.linear(q.T, r), lambda p, q, r: p @ q.T + r, x, w, b)
  a, c = rand(2, 3, 4), rand(4, 5, seed=3)
  check(lambda p, q: Tensor.einsum("bij,jk->bik", p, q), lambda p, q: np.einsum("bij,jk->bik", p, q), a, c, atol=1e-5)
  check(lambda p: Tensor.einsum("bij->jb", p), lambda p: np.einsum("bij->jb", p), a)
  check(lambda p, q: Tensor.einsum("ij,kj", p, q), lambda p, q: np.einsum("ij,kj", p, q), x, w)
  with pytest.raises(ValueError, match="letter 'j' has sizes 3 and 4"): Tensor.einsum("ij,jk->ik", Tensor(x), Tensor(c))

def np_conv(x, w, stride=1, padding=0, dilation=1, groups=1):
  """Direct N-d convolution (cross-correlation) as PyTorch defines it."""
  nd = w.ndim - 2
  x = np.pad(x, [(0, 0), (0, 0)] + [(padding, padding)] * nd)
  bs, cin = x.shape[:2]
  cout, cin_g, *k = w.shape
  osz = [(x.shape[2 + i] - dilation * (k[i] - 1) - 1) // stride + 1 for i in range(nd)]
  out = np.zeros((bs, cout, *osz), np.float64)
  for g in range(groups):
    xs = x[:, g * cin_g:(g + 1) * cin_g]
    for o in range(cout // groups):
      for pos in np.ndindex(*osz):
        sl = tuple(slice(p * stride, p * stride + dilation * (kk - 1) + 1, dilation) for p, kk in zip(pos, k))
        oc = g * (cout // groups) + o
        out[(slice(None), oc, *pos)] = (xs[(slice(None), slice(None), *sl)] * w[oc]).reshape(bs, -1).sum(1)
  return out.astype(np.float32)

@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 2), (3, 1, 1, 4)])
def test_conv2d(stride, padding, dilation, groups):
  x, w, b = rand(2, 4, 7, 6), rand(4, 4 // groups, 3, 2, seed=1), rand(4, seed=2)
  check(lambda p, q, r: p.conv2d(q, r, groups=groups, stride=stride, padding=padding, dilation=dilation),
        lambda p, q, r: np_conv(p, q, stride, padding, dilation, groups) + r.reshape(1, 4, 1, 1), x, w, b, atol=1e-4)

def test_conv1d_conv3d_and_errors():
  check(lambda p, q: p.conv2d(q, padding=1), lambda p, q: np_conv(p, q, padding=1), rand(1, 2, 9), rand(3, 2, 3, seed=1), atol=1e-4)
  check(lambda p, q: p.conv2d(q, stride=2), lambda p, q: np_conv(p, q, stride=2), rand(1, 1, 4, 5, 5), rand(2, 1, 2, 2, 3, seed=1), atol=1e-4)
  with pytest.raises(ValueError, match=r"input has 3 channels, weight \(4, 2, 3, 3\) with groups=1 expects 2"):
    Tensor.ones(1, 3, 5, 5).conv2d(Tensor.ones(4, 2, 3, 3))

def np_conv_transpose(x, w, stride, padding, output_padding, groups):
  """Scatter every input pixel times the kernel into the (uncropped) output, then crop the padding."""
  bs, cin, h, wd = x.shape
  cout_g, kh, kw = w.shape[1:]
  oh, ow = (h - 1) * stride + kh + output_padding, (wd - 1) * stride + kw + output_padding
  out = np.zeros((bs, cout_g * groups, oh, ow))
  for c in range(cin):
    g = c // (cin // groups)
    for i in range(h):
      for j in range(wd):
        out[:, g * cout_g:(g + 1) * cout_g, i * stride:i * stride + kh, j * stride:j * stride + kw] += x[:, c, i, j, None, None, None] * w[c]
  return out[:, :, padding:oh - padding, padding:ow - padding].astype(np.float32)

@pytest.mark.parametrize("stride,padding,output_padding,groups", [(1, 0, 0, 1), (2, 1, 1, 1), (2, 0, 0, 2), (3, 1, 0, 1)])
def test_conv_transpose2d(stride, padding, output_padding, groups):
  x, w = rand(2, 4, 3, 4), rand(4, 3, 3, 3, seed=1)
  check(lambda p, q: p.conv_transpose2d(q, groups=groups, stride=stride, padding=padding, output_padding=output_padding),
        lambda p, q: np_conv_transpose(p, q, stride, padding, output_padding, groups), x, w, atol=1e-4)

def test_pools():
  x = rand(2, 3, 7, 6)
  def np_pool(a, k, s, f, pad=0, fill=0.0):
    a = np.pad(a, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    oh, ow = (a.shape[2] - k) // s + 1, (a.shape[3] - k) // s + 1
    return np.stack([np.stack([f(a[:, :, i * s:i * s + k, j * s:j * s + k], axis=(2, 3)) for j in range(ow)], -1) for i in range(oh)], -2)
  check(lambda t: t.max_pool2d(2), lambda a: np_pool(a, 2, 2, np.max), x)
  check(lambda t: t.max_pool2d(3, stride=2, padding=1), lambda a: np_pool(a, 3, 2, np.max, 1, -np.inf), x)
  check(lambda t: t.avg_pool2d(3, stride=1), lambda a: np_pool(a, 3, 1, np.mean), x)

@pytest.mark.parametrize("mode,align", [("nearest", False), ("linear", False), ("linear", True)])
def test_interpolate(mode, align):
  x = rand(1, 2, 3, 4)
  def np_axis(a, ax, m):
    n = a.shape[ax]
    if mode == "nearest": return np.take(a, [min(n - 1, int(i * n / m)) for i in range(m)], ax)
    src = np.array([i * (n - 1) / (m - 1) for i in range(m)] if align else [max(0.0, (i + 0.5) * n / m - 0.5) for i in range(m)])
    lo = np.minimum(np.floor(src).astype(int), n - 1)
    hi, w = np.minimum(lo + 1, n - 1), (src - lo).reshape([-1 if i == ax else 1 for i in range(a.ndim)])
    return np.take(a, lo, ax) * (1 - w) + np.take(a, hi, ax) * w
  check(lambda t: t.interpolate((5, 2), mode=mode, align_corners=align), lambda a: np_axis(np_axis(a, 2, 5), 3, 2).astype(np.float32), x)

def test_norms_dropout_attention():
  x = rand(2, 3, 4)
  check(lambda t: t.layernorm(), lambda a: (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5), x, atol=1e-4)
  m, v, w, b = rand(3, seed=1), rand(3, low=0.5, high=2, seed=2), rand(3, seed=3), rand(3, seed=4)
  check(lambda t, p, q, r, s: t.batchnorm(r, s, p, q), lambda a, p, q, r, s: (a - p[:, None]) * (r * q)[:, None] + s[:, None], x, m, v, w, b)
  assert Tensor(x).dropout(0.5) is not None and np.array_equal(Tensor(x).dropout(0.5).numpy(), x)  # identity outside training
  with Tensor.train():
    d = Tensor.ones(1000).dropout(0.25).numpy()
    assert set(np.unique(d)) <= {0.0, np.float32(1 / 0.75)} and 0.15 < (d == 0).mean() < 0.35
  q, k, vv = rand(2, 3, 4), rand(2, 5, 4, seed=1), rand(2, 5, 2, seed=2)
  def np_sdpa(q, k, v, mask=None):
    s = q @ k.transpose(0, 2, 1) / 2.0
    if mask is not None: s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v
  check(lambda a, b_, c: a.scaled_dot_product_attention(b_, c), np_sdpa, q, k, vv, atol=1e-5)
  causal = np.tril(np.ones((3, 5), bool))
  check(lambda a, b_, c: a.scaled_dot_product_attention(b_, c, is_causal=True), lambda a, b_, c: np_sdpa(a, b_, c, causal), q, k, vv, atol=1e-5)
  mask = np.random.default_rng(0).random((3, 5)) > 0.3
  mask[:, 0] = True
  check(lambda a, b_, c: a.scaled_dot_product_attention(b_, c, attn_mask=Tensor(mask)), lambda a, b_, c: np_sdpa(a, b_, c, mask), q, k, vv, atol=1e-5)

def test_losses():
  logits, y = rand(4, 5), np.array([1, 0, 4, 2], np.int32)
  lsm = logits - _lse(logits, -1)
  check(lambda t: t.sparse_categorical_crossentropy(Tensor(y)), lambda a: -lsm[np.arange(4), y].mean(), logits)
  check(lambda t: t.cross_entropy(Tensor(y), reduction="sum"), lambda a: -lsm[np.arange(4), y].sum(), logits)
  y_ig = np.array([1, -1, 4, -1], np.int32)
  check(lambda t: t.sparse_categorical_crossentropy(Tensor(y_ig)), lambda a: -lsm[[0, 2], [1, 4]].mean(), logits)
  smooth = 0.1
  want = ((1 - smooth) * -lsm[np.arange(4), y] + smooth * -lsm.mean(-1)).mean()
  check(lambda t: t.sparse_categorical_crossentropy(Tensor(y), label_smoothing=smooth), lambda a: want, logits)
  probs = np.exp(lsm)
  check(lambda t: t.cross_entropy(Tensor(probs), reduction="none"), lambda a: -(lsm * probs).sum(-1), logits, atol=1e-5)
  p, t_ = rand(6, low=0.05, high=0.95), (rand(6, seed=1) > 0).astype(np.float32)
  check(lambda a: a.binary_crossentropy(Tensor(t_)), lambda a: -(t_ * np.log(a) + (1 - t_) * np.log(1 - a)).mean(), p)
  z = rand(6, seed=3)
  def sig(a): return 1 / (1 + np.exp(-a))
  check(lambda a: a.binary_crossentropy_logits(Tensor(t_)), lambda a: -(t_ * np.log(sig(a)) + (1 - t_) * np.log(1 - sig(a))).mean(), z)

@settings(max_examples=15, deadline=None)
@given(n=st.integers(0, 2000), dtype=st.sampled_from(["float32", "int32", "bool"]), seed=st.integers(0, 2**16))
def test_cumsum_of_any_length_matches_numpy(n, dtype, seed):
  """Lengths past a small scan (ordering._direct) run in blocks plus the running sum of the blocks' totals; values and dtype are
  numpy's (float64 reference), gradients are the reversed running sum of the output's gradient."""
  r = np.random.default_rng(seed)
  a = {"float32": lambda: r.standard_normal((2, n)).astype(np.float32), "int32": lambda: r.integers(-50, 50, (2, n)).astype(np.int32),
       "bool": lambda: r.random((2, n)) < 0.5}[dtype]()
  got = Tensor(a).cumsum(1)
  ref = np.cumsum(a.astype(np.float64), 1)
  np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-3 if dtype == "float32" else 0)
  assert got.dtype == (dtypes.float32 if dtype == "float32" else dtypes.int32)
  if dtype == "float32" and n:
    x = Tensor(a, requires_grad=True)
    g = r.standard_normal((2, n)).astype(np.float32)
    (x.cumsum(1) * Tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cumsum(g[:, ::-1].astype(np.float64), 1)[:, ::-1], rtol=1e-5, atol=1e-3)

def test_a_long_cumsum_does_linear_work():
  """65536 floats: the estimated operations of its kernels stay within 64 per element (one masked sum over all of them
  was n^2 / 2 = 2e9 and took 2 s)."""
  from tg.codegen import GlobalCounters
  x = Tensor(np.ones(65536, np.float32)).realize()
  GlobalCounters.reset()
  out = x.cumsum().numpy()
  assert GlobalCounters.global_ops < 64 * 65536, GlobalCounters.global_ops
  np.testing.assert_array_equal(out, np.arange(1, 65537, dtype=np.float32))

@settings(max_examples=6, deadline=None)
@given(n=st.integers(1, 1500), seed=st.integers(0, 2**16))
def test_cumprod_and_logcumsumexp_of_any_length_match_numpy(n, seed):
  """The other scans run in blocks the same way: cumprod of values near 1 (no overflow), logcumsumexp (each block's
  result combined with the blocks before by logaddexp), against float64."""
  r = np.random.default_rng(seed)
  a = (1 + r.standard_normal((2, n)) * 0.01).astype(np.float32)
  np.testing.assert_allclose(Tensor(a).cumprod(1).numpy(), np.cumprod(a.astype(np.float64), 1), rtol=1e-4)
  b = (r.standard_normal((2, n)) * 3).astype(np.float32)
  np.testing.assert_allclose(Tensor(b).logcumsumexp(1).numpy(), np.logaddexp.accumulate(b.astype(np.float64), 1), rtol=1e-5, atol=1e-4)

def test_softmin_and_normalize():
  """softmin is softmax of -x; normalize divides by the p-norm floored at eps (PyTorch's F.normalize), with a finite
  gradient on an all-zero row (1 / eps, the norm's floor, not 0 * inf through the root)."""
  from test_autograd import check_grad
  x = np.random.default_rng(4).standard_normal((3, 5))
  e = np.exp(-x - (-x).max(1, keepdims=True))
  np.testing.assert_allclose(Tensor(x.astype(np.float32)).softmin(1).numpy(), e / e.sum(1, keepdims=True), rtol=1e-5)
  z = x.copy()
  z[1] = 0
  for p in (1.0, 2.0, 3.0, np.inf):
    for dim in (0, 1):
      norm = np.linalg.norm(z, p, axis=dim, keepdims=True)
      np.testing.assert_allclose(Tensor(z.astype(np.float32)).normalize(p, dim).numpy(), z / np.maximum(norm, 1e-12), rtol=1e-5, atol=1e-6)
  check_grad(lambda t: t.normalize(2.0, 1), [x])
  check_grad(lambda t: t.normalize(3.0, 0), [x])
  t = Tensor(z, dtype=dtypes.float64, requires_grad=True)
  t.normalize(2.0, 1, eps=1e-3).sum().backward()
  np.testing.assert_allclose(t.grad.numpy()[1], np.full(5, 1e3))
