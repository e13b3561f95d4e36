"""tg.tensor.nn layers against numpy references (forward, and gradients where the layer adds its own math)."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view
from tg.tensor import Tensor, Context, dtypes, Ops, nn
from tg.tensor.realize import run_schedule

rng = np.random.default_rng(0)
def rand(*shape): return rng.standard_normal(shape).astype(np.float32)
def set_(t: Tensor, a: np.ndarray) -> np.ndarray:
  t.assign(Tensor(a)).realize()
  return a

def np_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
  """N-d cross-correlation as PyTorch defines it, by windows and einsum."""
  nd = w.ndim - 2
  s, p, d = ((v,) * nd if isinstance(v, int) else v for v in (stride, padding, dilation))
  x = np.pad(x, [(0, 0), (0, 0)] + [(q, q) for q in p])
  k = [(kk - 1) * dd + 1 for kk, dd in zip(w.shape[2:], d)]
  win = sliding_window_view(x, k, axis=tuple(range(2, 2 + nd)))
  win = win[(...,) + tuple(slice(None, None, dd) for dd in d)]
  win = win[(slice(None), slice(None)) + tuple(slice(None, None, ss) for ss in s)]
  n, cin = x.shape[:2]
  cout = w.shape[0]
  win = win.reshape(n, groups, cin // groups, *win.shape[2:])
  wg = w.reshape(groups, cout // groups, *w.shape[1:])
  letters = "hijk"[:nd]
  out = np.einsum(f"ngc{letters}{letters.upper()},goc{letters.upper()}->ngo{letters}", win, wg).reshape(n, cout, *win.shape[3:3 + nd])
  return out + b.reshape(1, -1, *[1] * nd) if b is not None else out

def np_conv_transpose2d(x, w, b, stride, padding, output_padding, groups):
  """Each input pixel scatters weight * value into the output (the definition)."""
  n, cin, h, wd = x.shape
  _, cout_g, kh, kw = w.shape
  oh, ow = (h - 1) * stride - 2 * padding + kh + output_padding, (wd - 1) * stride - 2 * padding + kw + output_padding
  full = np.zeros((n, cout_g * groups, oh + 2 * padding + kh, ow + 2 * padding + kw), np.float64)
  cin_g = cin // groups
  for g in range(groups):
    for i in range(h):
      for j in range(wd):
        contrib = np.einsum("nc,cokl->nokl", x[:, g * cin_g:(g + 1) * cin_g, i, j], w[g * cin_g:(g + 1) * cin_g])
        full[:, g * cout_g:(g + 1) * cout_g, i * stride:i * stride + kh, j * stride:j * stride + kw] += contrib
  return full[:, :, padding:padding + oh, padding:padding + ow] + b.reshape(1, -1, 1, 1)

def test_linear():
  l = nn.Linear(5, 3)
  w, b, x = set_(l.weight, rand(3, 5)), set_(l.bias, rand(3)), rand(4, 5)
  np.testing.assert_allclose(l(Tensor(x)).numpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)
  assert nn.Linear(5, 3, bias=False).bias is None

@pytest.mark.parametrize("kw", [{}, {"stride": 2, "padding": 1}, {"dilation": 2, "groups": 2}])
def test_conv2d(kw):
  c = nn.Conv2d(4, 6, 3, **kw)
  w, b, x = set_(c.weight, rand(*c.weight.shape)), set_(c.bias, rand(6)), rand(2, 4, 9, 8)
  np.testing.assert_allclose(c(Tensor(x)).numpy(), np_conv(x, w, b, **kw), rtol=1e-4, atol=1e-5)

def test_conv1d():
  c = nn.Conv1d(3, 5, 4, stride=2, padding=2)
  w, b, x = set_(c.weight, rand(5, 3, 4)), set_(c.bias, rand(5)), rand(2, 3, 11)
  assert c.weight.shape == (5, 3, 4)
  np.testing.assert_allclose(c(Tensor(x)).numpy(), np_conv(x, w, b, stride=2, padding=2), rtol=1e-4, atol=1e-5)

@pytest.mark.parametrize("stride,padding,output_padding,groups", [(1, 0, 0, 1), (2, 1, 1, 2)])
def test_conv_transpose2d(stride, padding, output_padding, groups):
  c = nn.ConvTranspose2d(4, 6, 3, stride=stride, padding=padding, output_padding=output_padding, groups=groups)
  assert c.weight.shape == (4, 6 // groups, 3, 3)
  w, b, x = set_(c.weight, rand(*c.weight.shape)), set_(c.bias, rand(6)), rand(2, 4, 5, 4)
  ref = np_conv_transpose2d(x.astype(np.float64), w.astype(np.float64), b, stride, padding, output_padding, groups)
  np.testing.assert_allclose(c(Tensor(x)).numpy(), ref, rtol=1e-4, atol=1e-5)

def test_batchnorm2d_train_then_eval():
  bn = nn.BatchNorm2d(3, momentum=0.25)
  w, b, x = set_(bn.weight, rand(3)), set_(bn.bias, rand(3)), rand(4, 3, 5, 5) * 2 + 1
  mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
  ref = (x - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-5) * w.reshape(1, 3, 1, 1) + b.reshape(1, 3, 1, 1)
  with Tensor.train():
    out = bn(Tensor(x))
    Tensor.realize_all(out, bn.running_mean, bn.running_var, bn.num_batches_tracked)
  np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)
  n = 4 * 5 * 5
  rm, rv = 0.25 * mean, 0.75 + 0.25 * var * n / (n - 1)
  np.testing.assert_allclose(bn.running_mean.numpy(), rm, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(bn.running_var.numpy(), rv, rtol=1e-5)
  assert bn.num_batches_tracked.item() == 1
  assert not Tensor.training
  out = bn(Tensor(x)).numpy()
  np.testing.assert_allclose(out, (x - rm.reshape(1, 3, 1, 1)) / np.sqrt(rv.reshape(1, 3, 1, 1) + 1e-5) * w.reshape(1, 3, 1, 1)
                             + b.reshape(1, 3, 1, 1), rtol=1e-4, atol=1e-4)

def test_batchnorm1d_gradient():
  bn = nn.BatchNorm1d(4, affine=False, track_running_stats=False)
  x = rand(6, 4)
  xt = Tensor(x, requires_grad=True)
  (bn(xt) * Tensor(np.arange(24, dtype=np.float32).reshape(6, 4))).sum().backward()
  # d/dx of sum(g * (x - mean) / std) for each column: (g - mean(g) - xhat * mean(g * xhat)) / std
  g = np.arange(24, dtype=np.float64).reshape(6, 4)
  std = np.sqrt(x.var(0) + 1e-5)
  xhat = (x - x.mean(0)) / std
  np.testing.assert_allclose(xt.grad.numpy(), (g - g.mean(0) - xhat * (g * xhat).mean(0)) / std, rtol=1e-3, atol=1e-3)

def test_layernorm_groupnorm_rmsnorm():
  x = rand(2, 6, 5)
  ln = nn.LayerNorm((6, 5))
  w, b = set_(ln.weight, rand(6, 5)), set_(ln.bias, rand(6, 5))
  m, v = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
  np.testing.assert_allclose(ln(Tensor(x)).numpy(), (x - m) / np.sqrt(v + 1e-5) * w + b, rtol=1e-4, atol=1e-4)
  with pytest.raises(ValueError, match="LayerNorm over"): ln(Tensor(rand(2, 5, 6)))
  gn = nn.GroupNorm(3, 6)
  w, b = set_(gn.weight, rand(6)), set_(gn.bias, rand(6))
  xg = x.reshape(2, 3, 10)
  ref = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5)).reshape(2, 6, 5) * w[:, None] + b[:, None]
  np.testing.assert_allclose(gn(Tensor(x)).numpy(), ref, rtol=1e-4, atol=1e-4)
  rms = nn.RMSNorm(5)
  w = set_(rms.weight, rand(5))
  np.testing.assert_allclose(rms(Tensor(x)).numpy(), x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w, rtol=1e-4, atol=1e-5)

def test_embedding_forward_and_gradient():
  emb = nn.Embedding(7, 3)
  w = set_(emb.weight, rand(7, 3))
  emb.weight.requires_grad_()
  idx = np.array([[1, 4, 4], [0, 6, 1]], np.int32)
  out = emb(Tensor(idx))
  np.testing.assert_array_equal(out.numpy(), w[idx])
  out = emb(Tensor(idx.ravel()))
  out.sum().backward()
  np.testing.assert_array_equal(emb.weight.grad.numpy()[:, 0], np.bincount(idx.ravel(), minlength=7))

def test_dropout_and_the_training_switch():
  d, x = nn.Dropout(0.25), Tensor.ones(4000)
  assert (d(x).numpy() == 1).all(), "dropout does nothing outside training"
  with Tensor.train():
    assert Tensor.training
    y = d(x).numpy()
  assert not Tensor.training
  with Context(TRAINING=1):  # tinygrad's switch, the same one
    assert Tensor.training and (d(x).numpy() == 0).any()
  assert not Tensor.training
  assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
  assert 0.2 < (y == 0).mean() < 0.3
  for bad in (-0.1, 1.1):
    with pytest.raises(ValueError, match="dropout probability"): nn.Dropout(bad)
    with pytest.raises(ValueError, match="dropout probability"): x.dropout(bad)  # outside training too

def test_dropout_of_one_zeroes_everything():
  """p = 1 drops every element, as PyTorch and tinygrad: it scaled by 1 / (1 - p) and raised ZeroDivisionError."""
  with Tensor.train():
    np.testing.assert_array_equal(Tensor.ones(100).dropout(1.0).numpy(), np.zeros(100, np.float32))
    np.testing.assert_array_equal(nn.Dropout(1.0)(Tensor.ones(3)).numpy(), np.zeros(3, np.float32))

def test_default_init_bounds():
  c = nn.Conv2d(2, 4, 3)
  w = c.weight.numpy()
  assert c.weight.dtype == dtypes.float32 and np.abs(w).max() <= 1 / np.sqrt(18) + 1e-6 and w.std() > 0.05

def test_layernorm_backward_on_a_random_input():
  """tinygrad's LayerNorm test: randn input, sum, backward. The random numbers are generated by one kernel (Tensor.randn is
  contiguous, as in tinygrad): lazily, threefry was inlined into every kernel reading x, once per read inside the reduces,
  and the test compiled for minutes."""
  ln = nn.LayerNorm((4, 5))
  w, b = set_(ln.weight, rand(4, 5)), set_(ln.bias, rand(4, 5))
  ln.weight.requires_grad_(), ln.bias.requires_grad_()
  x = Tensor.randn(3, 2, 4, 5, requires_grad=True)
  z = ln(x)
  z.sum().backward()
  sched = Tensor.schedule(z, x.grad, ln.weight.grad, ln.bias.grad)
  assert sum(any(u.op is Ops.THREEFRY for u in ei.ast.toposort()) for ei in sched) == 1
  run_schedule(sched)
  xn = x.numpy().astype(np.float64)
  m, std = xn.mean((2, 3), keepdims=True), np.sqrt(xn.var((2, 3), keepdims=True) + 1e-5)
  xhat = (xn - m) / std
  np.testing.assert_allclose(z.numpy(), xhat * w + b, rtol=1e-4, atol=1e-4)
  g = np.broadcast_to(w, xn.shape)  # d sum(xhat * w + b) / d xhat
  dx = (g - g.mean((2, 3), keepdims=True) - xhat * (g * xhat).mean((2, 3), keepdims=True)) / std
  np.testing.assert_allclose(x.grad.numpy(), dx, rtol=1e-3, atol=1e-4)
  np.testing.assert_allclose(ln.weight.grad.numpy(), xhat.sum((0, 1)), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(ln.bias.grad.numpy(), np.full((4, 5), 6.0))

@pytest.mark.parametrize("cls,spatial,k,d", [(nn.Conv1d, (11,), 3, 1), (nn.Conv2d, (9, 7), 5, 1), (nn.Conv2d, (8, 9), 9, 1),
                                             (nn.Conv2d, (10, 10), 3, 3), (nn.Conv2d, (6, 7), (2, 4), (1, 2))])
def test_conv_same_padding(cls, spatial, k, d):
  """padding="same" keeps the spatial size; the total padding d * (k - 1) is split with the odd one after (PyTorch's rule)."""
  c = cls(3, 4, k, padding="same", dilation=d)
  w, b, x = set_(c.weight, rand(*c.weight.shape)), set_(c.bias, rand(4)), rand(2, 3, *spatial)
  ks, ds = c.kernel_size, (d,) * len(spatial) if isinstance(d, int) else d
  pads = [(0, 0), (0, 0)] + [(dd * (kk - 1) // 2, dd * (kk - 1) - dd * (kk - 1) // 2) for kk, dd in zip(ks, ds)]
  out = c(Tensor(x)).numpy()
  assert out.shape == (2, 4, *spatial)
  np.testing.assert_allclose(out, np_conv(np.pad(x, pads), w, b, dilation=ds), rtol=1e-4, atol=1e-4)

def test_conv_same_padding_errors():
  with pytest.raises(ValueError, match="padding='same' needs stride 1"): nn.Conv2d(2, 2, 3, stride=2, padding="same")
  with pytest.raises(ValueError, match="'valid' is not a padding mode"): nn.Conv1d(2, 2, 3, padding="valid")

def test_conv_transpose1d():
  c = nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
  assert c.weight.shape == (4, 3, 3)
  w, b, x = set_(c.weight, rand(4, 3, 3)), set_(c.bias, rand(6)), rand(2, 4, 5)
  full = np.zeros((2, 6, (5 - 1) * 2 + 3 + 1), np.float64)  # each input scatters weight * value, then the padding is cut
  for g in range(2):
    for i in range(5): full[:, g * 3:(g + 1) * 3, i * 2:i * 2 + 3] += np.einsum("nc,cok->nok", x[:, g * 2:(g + 1) * 2, i], w[g * 2:(g + 1) * 2])
  ref = full[:, :, 1:1 + (5 - 1) * 2 - 2 + 3 + 1] + b.reshape(1, -1, 1)
  np.testing.assert_allclose(c(Tensor(x)).numpy(), ref, rtol=1e-4, atol=1e-5)

def _np_norm(x, axes, eps=1e-5):
  x = x.astype(np.float64)
  return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)

@pytest.mark.parametrize("shape", [(3, 4, 5, 6), (2, 4, 3, 2, 5)])
def test_instancenorm(shape):
  inorm = nn.InstanceNorm(4)
  w, b, x = set_(inorm.weight, rand(4)), set_(inorm.bias, rand(4)), rand(*shape) * 3 + 1
  bc = (1, -1) + (1,) * (len(shape) - 2)
  ref = _np_norm(x, tuple(range(2, len(shape)))) * w.reshape(bc) + b.reshape(bc)
  np.testing.assert_allclose(inorm(Tensor(x)).numpy(), ref, rtol=1e-4, atol=1e-4)
  assert nn.InstanceNorm(4, affine=False).weight is None
  with pytest.raises(ValueError, match="InstanceNorm of 4 channels"): inorm(Tensor(rand(2, 3, 5)))

def test_layernorm2d_normalizes_channels():
  ln = nn.LayerNorm2d(5)
  w, b, x = set_(ln.weight, rand(5)), set_(ln.bias, rand(5)), rand(2, 5, 3, 4)
  ref = _np_norm(x, 1) * w.reshape(1, 5, 1, 1) + b.reshape(1, 5, 1, 1)
  np.testing.assert_allclose(ln(Tensor(x)).numpy(), ref, rtol=1e-4, atol=1e-4)

def test_rmsnorm_half_is_computed_in_float():
  x = (rand(2, 8) * 300).astype(np.float16)  # squares past float16's 65504
  out = nn.RMSNorm(8, elementwise_affine=False)(Tensor(x))
  xf = x.astype(np.float64)
  assert out.dtype == dtypes.float16
  np.testing.assert_allclose(out.numpy().astype(np.float64), xf / np.sqrt((xf * xf).mean(-1, keepdims=True) + 1e-6), rtol=2e-3, atol=2e-3)

def _sig(v): return 1 / (1 + np.exp(-v))

@pytest.mark.parametrize("bias", [True, False])
def test_lstm_cell(bias):
  cell = nn.LSTMCell(6, 4, bias=bias)
  assert cell.weight_ih.shape == (16, 6) and cell.weight_hh.shape == (16, 4) and (cell.bias_ih is None) == (not bias)
  assert np.abs(cell.weight_ih.numpy()).max() <= 0.5 + 1e-6  # U(-1/sqrt(H), 1/sqrt(H))
  wi, wh = set_(cell.weight_ih, rand(16, 6)), set_(cell.weight_hh, rand(16, 4))
  bi, bh = (set_(cell.bias_ih, rand(16)), set_(cell.bias_hh, rand(16))) if bias else (np.zeros(16), np.zeros(16))
  def ref(x, h, c):
    i, f, g, o = np.split(x @ wi.T + bi + h @ wh.T + bh, 4, axis=1)
    c = _sig(f) * c + _sig(i) * np.tanh(g)
    return _sig(o) * np.tanh(c), c
  x = rand(3, 6)
  h, c = cell(Tensor(x))
  rh, rc = ref(x, np.zeros((3, 4)), np.zeros((3, 4)))
  np.testing.assert_allclose(h.numpy(), rh, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(c.numpy(), rc, rtol=1e-4, atol=1e-5)
  h, c = cell(Tensor(x), (h, c))
  rh, rc = ref(x, rh, rc)
  np.testing.assert_allclose(h.numpy(), rh, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(c.numpy(), rc, rtol=1e-4, atol=1e-5)

def test_embedding_is_one_gather_kernel():
  """One kernel, with no reduce in it (a load at each index, not a loop comparing against the whole vocabulary), nor an
  (N, vocab) one-hot buffer; out-of-range indices give zero rows (tinygrad's one-hot semantics)."""
  emb = nn.Embedding(50, 6)
  w = emb.weight.numpy()
  idx = np.array([[1, 5, 49], [0, 3, 7]], np.int32)
  out = emb(Tensor(idx))
  sched = out.schedule()
  assert len(sched) == 1 and not any(u.op is Ops.REDUCE for u in sched[0].ast.toposort())
  assert [b.size for b in sched[0].bufs] == [2 * 3 * 6, 6, 50 * 6]
  run_schedule(sched)
  np.testing.assert_array_equal(out.numpy(), w[idx])
  np.testing.assert_array_equal(emb(Tensor(np.array([50, -1, 2], np.int32))).numpy(), np.stack([np.zeros(6), np.zeros(6), w[2]]))
  assert emb(Tensor(np.zeros((4, 0), np.int32))).shape == (4, 0, 6)

def test_conv_transpose2d_whose_output_would_be_empty_says_so():
  """Padding past what a transposed conv produces names the output size (it raised a shrink out of bounds inside)."""
  x, w = Tensor.ones(2, 3, 7, 1), Tensor.ones(3, 3, 1, 1)
  with pytest.raises(ValueError, match=r"the output would be \(7, -1\); pad less"):
    x.conv_transpose2d(w, stride=(1, 2), padding=(0, 1), dilation=(1, 2))
  assert x.conv_transpose2d(w, stride=(1, 2), padding=(0, 0)).shape == (2, 3, 7, 1)
