"""Gradients of the differentiable ops against central finite differences, in float64 (hypothesis over shapes/values)."""
import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from tg.tensor import Tensor, dtypes, no_grad

def check_grad(ft, xs, atol=1e-6, rtol=1e-5, elementwise=False):
  """tg's gradient of sum(ft(xs) * w) (w a fixed random weighting, so every output counts) equals central differences of
  the same function evaluated by tg in float64. Elementwise functions get every perturbation at once on a new leading axis."""
  ts = [Tensor(x, dtype=dtypes.float64, requires_grad=True) for x in xs]
  out = ft(*ts)
  w = np.random.default_rng(7).uniform(0.5, 1.5, out.shape)
  def fwd(*arrs): return (ft(*[Tensor(a, dtype=dtypes.float64) for a in arrs]).numpy() * w)
  eps = 1e-6
  for i, (x, t) in enumerate(zip(xs, ts)):
    steps = np.eye(x.size).reshape(x.size, *x.shape) * eps
    if elementwise:  # all inputs at the full rank, the perturbed one batched, the others with a leading 1
      nd = max(a.ndim for a in xs)
      full = [a.reshape((1,) * (nd - a.ndim) + a.shape) for a in xs]
      st_ = steps.reshape(x.size, *full[i].shape)
      big = fwd(*[np.concatenate([a + st_, a - st_]) if j == i else a[None] for j, a in enumerate(full)])
      sums = big.reshape(2 * x.size, -1).sum(1)
      want = ((sums[:x.size] - sums[x.size:]) / (2 * eps)).reshape(x.shape)
    else:
      def at(d): return fwd(*[x + d if j == i else a for j, a in enumerate(xs)]).sum()
      want = np.array([(at(d) - at(-d)) / (2 * eps) for d in steps]).reshape(x.shape)
    got = (out * Tensor(w, dtype=dtypes.float64)).sum().gradient(t)[0].numpy()
    np.testing.assert_allclose(got, want, atol=atol, rtol=rtol, err_msg=f"gradient of input {i}")

shapes = st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)
def arrays(shape, lo=-2.0, hi=2.0):
  return st.integers(0, 2**31).map(lambda s: np.random.default_rng(s).uniform(lo, hi, shape))

UNARY = {"exp": Tensor.exp, "sigmoid": Tensor.sigmoid, "tanh": Tensor.tanh, "sin": Tensor.sin, "cos": Tensor.cos, "gelu": Tensor.gelu,
         "silu": Tensor.silu, "softplus": Tensor.softplus, "mish": Tensor.mish, "elu": Tensor.elu, "softsign": Tensor.softsign,
         "square": Tensor.square, "neg": Tensor.neg, "leaky_relu": Tensor.leaky_relu, "relu": lambda x: (x + 0.013).relu()}
POSITIVE = {"log": Tensor.log, "sqrt": Tensor.sqrt, "rsqrt": Tensor.rsqrt, "reciprocal": Tensor.reciprocal, "log2": Tensor.log2,
            "pow": lambda x: x ** 1.7}

@settings(max_examples=8, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("name", list(UNARY) + list(POSITIVE))
def test_unary_grads(name, data):
  shape = data.draw(shapes)
  lo = 0.2 if name in POSITIVE else -2.0
  x = data.draw(arrays(shape, lo, 2.0))
  if name in ("relu", "leaky_relu"): x[np.abs(x + 0.013) < 1e-3] += 0.01  # away from the kink
  check_grad(UNARY.get(name) or POSITIVE[name], [x], elementwise=True)

BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / (b.abs() + 0.5),
          "maximum": lambda a, b: a.maximum(b), "pow": lambda a, b: (a.abs() + 0.5) ** b, "where": lambda a, b: (a > b).where(a * 2, b),
          "lerp": lambda a, b: a.lerp(b, 0.3)}

@settings(max_examples=8, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_broadcast_grads(name, data):
  shape = data.draw(shapes)
  other = tuple(1 if data.draw(st.booleans()) else s for s in shape)[data.draw(st.integers(0, len(shape) - 1)):]
  a, b = data.draw(arrays(shape)), data.draw(arrays(other))
  assume(name not in ("maximum", "where") or np.abs(a - b).min() > 1e-3)  # away from the kink
  check_grad(BINARY[name], [a, b], elementwise=True)

REDUCE = {"sum": lambda x: x.sum(0), "mean": lambda x: x.mean(-1, keepdim=True), "max": lambda x: x.max(0), "min": lambda x: x.min(),
          "prod": lambda x: x.prod(-1), "std": lambda x: x.std(0), "var": lambda x: x.var(), "softmax": lambda x: x.softmax(-1),
          "log_softmax": lambda x: x.log_softmax(0), "logsumexp": lambda x: x.logsumexp(-1), "cumsum": lambda x: x.cumsum(-1),
          "layernorm": lambda x: x.layernorm()}

@settings(max_examples=3, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("name", list(REDUCE))
def test_reduce_grads(name, data):
  shape = data.draw(st.tuples(st.integers(2, 3), st.integers(2, 4)))
  check_grad(REDUCE[name], [data.draw(arrays(shape, 0.3 if name == "prod" else -2.0))])

MOVEMENT = {"reshape": lambda x: x.reshape(-1) * Tensor.arange(24, dtype=dtypes.float64), "permute": lambda x: x.permute(2, 0, 1),
            "pad": lambda x: x.pad((1, 2), mode="reflect"), "getitem": lambda x: x[1, ::-2, None, 1:],
            "tensor_index": lambda x: x[:, [2, 0, 2]], "flip": lambda x: x.flip(1), "cat": lambda x: x.cat(x[:1] * 2),
            "repeat": lambda x: x.repeat(2, 1, 1), "roll": lambda x: x.roll(1, 2), "gather": lambda x: x.gather(2, Tensor([[[3, 0]] * 3] * 2)),
            "expand": lambda x: x[:, :1].expand(2, 5, 4) * 1.0, "tril": lambda x: x.tril(), "interpolate": lambda x: x.interpolate((5, 3))}

@pytest.mark.parametrize("name", list(MOVEMENT))
def test_movement_grads(name):
  check_grad(MOVEMENT[name], [np.random.default_rng(1).uniform(-1, 1, (2, 3, 4))])

def test_nn_grads():
  rng = np.random.default_rng(3)
  check_grad(lambda x, w: x.conv2d(w, stride=2, padding=1), [rng.uniform(-1, 1, (1, 2, 5, 5)), rng.uniform(-1, 1, (2, 2, 3, 3))])
  check_grad(lambda x, w: x.conv_transpose2d(w, stride=2), [rng.uniform(-1, 1, (1, 2, 3, 3)), rng.uniform(-1, 1, (2, 1, 2, 2))])
  # conv2d's own backward (strided: a matmul and shifted taps; stride 1: the adjoint conv): groups, dilation, a stride that
  # leaves input rows unread, 1-d, asymmetric padding and padding past the kernel (the adjoint's padding is negative)
  check_grad(lambda x, w: x.conv2d(w, groups=2, dilation=2), [rng.uniform(-1, 1, (2, 4, 6, 5)), rng.uniform(-1, 1, (4, 2, 2, 2))])
  check_grad(lambda x, w: x.conv2d(w, padding=(2, 0, 1, 3)), [rng.uniform(-1, 1, (1, 2, 4, 5)), rng.uniform(-1, 1, (3, 2, 3, 3))])
  check_grad(lambda x, w: x.conv2d(w, padding=3, dilation=(1, 2)), [rng.uniform(-1, 1, (1, 2, 3, 4)), rng.uniform(-1, 1, (2, 2, 2, 2))])
  check_grad(lambda x, w: x.conv2d(w, stride=(2, 3)), [rng.uniform(-1, 1, (1, 2, 6, 7)), rng.uniform(-1, 1, (3, 2, 3, 2))])
  check_grad(lambda x, w: x.conv2d(w, padding=1), [rng.uniform(-1, 1, (2, 3, 7)), rng.uniform(-1, 1, (2, 3, 3))])
  check_grad(lambda x: x.max_pool2d(2) + x.avg_pool2d(2), [rng.permutation(32).reshape(1, 2, 4, 4) / 10.0])
  check_grad(lambda a, b: a @ b, [rng.uniform(-1, 1, (2, 3, 4)), rng.uniform(-1, 1, (4, 2))])
  check_grad(lambda q, k: q.scaled_dot_product_attention(k, k * 2, is_causal=True), [rng.uniform(-1, 1, (2, 3, 4)), rng.uniform(-1, 1, (2, 3, 4))])
  check_grad(lambda x: x.sparse_categorical_crossentropy(Tensor([1, 0, 2]), label_smoothing=0.1), [rng.uniform(-1, 1, (3, 4))])
  check_grad(lambda x: x.binary_crossentropy_logits(Tensor([1.0, 0.0, 1.0], dtype=dtypes.float64)), [rng.uniform(-1, 1, 3)])

def test_backward_accumulates_and_no_grad():
  w = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  (w * w).sum().backward()
  first = w.grad
  (w * 3).sum().backward()
  assert w.grad is first  # accumulated into the same tensor, as tinygrad's and PyTorch's
  np.testing.assert_allclose(w.grad.numpy(), 2 * np.array([1, 2, 3]) + 3)
  with no_grad():
    y = w * 2
  assert not y.requires_grad
  assert w.detach().requires_grad is None
  with pytest.raises(RuntimeError, match=r"gradient of a tensor of shape \(3,\) needs `gradient=`"): (w * 2).gradient(w)
  g = (w * 2).gradient(w, gradient=Tensor([1.0, 0.0, 2.0]))[0]
  np.testing.assert_allclose(g.numpy(), [2.0, 0.0, 4.0])
  x = Tensor([1.0], requires_grad=True)
  # no gradient reaches x: zeros, with tinygrad's materialize_grads or without (x ** 0 folds to 1 here, not in tinygrad)
  for kw in ({}, {"materialize_grads": True}): assert (x.detach() * 5).sum().gradient(x, **kw)[0].numpy().tolist() == [0.0]
  assert (x ** 0).sum().gradient(x)[0].numpy().tolist() == [0.0]

def test_constant_leaves_get_their_own_gradients():
  """Equal constants are one UOp: as leaves they must still be distinct (d/da of 2a + 3b is 2, not 5), and constant
  arithmetic folded before backward (ones + 1, zeros + 2) must not merge the paths to them."""
  a, b = Tensor.full((3,), 3.5, requires_grad=True), Tensor.full((3,), 3.5, requires_grad=True)
  (a * 2 + b * 3).sum().backward()
  assert a.grad.tolist() == [2.0] * 3 and b.grad.tolist() == [3.0] * 3
  o, z = Tensor.ones(2, 2, requires_grad=True), Tensor.zeros(2, 2, requires_grad=True)
  ((o + 1) * (z + 2)).sum().backward()
  assert o.grad.tolist() == [[2.0, 2.0]] * 2 and z.grad.tolist() == [[2.0, 2.0]] * 2
  assert o.tolist() == [[1.0, 1.0]] * 2 and z.tolist() == [[0.0, 0.0]] * 2
  e = Tensor.zeros(0, 3, requires_grad=True)
  e.clone().sum().backward()
  assert e.grad.shape == (0, 3)

def test_setting_requires_grad_makes_a_leaf():
  # `w.requires_grad = True` after creation (tinygrad's and PyTorch's idiom) gave w no gradient: only requires_grad_() did
  w, c = Tensor.ones(3), Tensor.ones(3)
  w.requires_grad = True
  (w * c * Tensor([1.0, 2.0, 3.0])).sum().backward()
  np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0, 3.0])
  assert c.grad is None

def test_setting_requires_grad_again_every_step():
  """A training loop that sets `p.requires_grad = True` on its parameters each step (legal in tinygrad and PyTorch): the
  second time raised TypeError (the set of leaves compared the tensor with itself by ==, an elementwise Tensor)."""
  w = Tensor([1.0, 2.0])
  for step in range(3):
    w.grad = None
    w.requires_grad = True
    w.requires_grad_()
    (w * w * (step + 1)).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0 * (step + 1), 4.0 * (step + 1)])

def test_max_gradient_of_a_recomputed_exp():
  """d/dy of exp(x * y).max((0, 2)) with y broadcast over axis 1: the backward kernel recomputes exp(x * y) (vectorized)
  and compares it with the max the forward kernel found (scalar): libmvec's and libm's exp2f differed in the last bit and
  the gradient missed a maximum (0 for -1.2306; found by a torch differential fuzz). Against numpy in float64."""
  x = np.array([[[0.3194142282009125, -0.3589133024215698], [-1.9016352891921997, -0.10891472548246384]],
                [[-0.8037318587303162, 1.0801633596420288], [-0.2887665033340454, 0.08347535878419876]],
                [[-0.8496059775352478, -0.5106224417686462], [-0.011533061973750591, -1.485375165939331]],
                [[0.3006851077079773, -0.10607225447893143], [-1.1857198476791382, -2.398232936859131]]], np.float32)
  y = np.array([[[0.5130521059036255, -0.29758402705192566]], [[-0.5300084352493286, -0.23615463078022003]],
                [[1.8164759874343872, -0.049800969660282135]], [[0.08661926537752151, -1.4870728254318237]]], np.float32)
  X, Y = Tensor(x, requires_grad=True), Tensor(y, requires_grad=True)
  (X * Y).exp().max((0, 2)).sum().backward()
  z = np.exp(x.astype(np.float64) * y)
  hit = z == z.max((0, 2), keepdims=True)
  np.testing.assert_allclose(Y.grad.numpy(), (hit * z * x).sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(X.grad.numpy(), hit * z * y, rtol=1e-5, atol=1e-6)

@settings(max_examples=6, deadline=None)
@given(seed=st.sampled_from([611]) | st.integers(0, 2**16))
def test_max_gradient_of_a_recomputed_multiply_add(seed):
  """d/dx of (s * s + 1).max(0) for s a strided slice of x: the backward kernel recomputes s * s + 1 (16 wide) to find
  the maximum the forward kernel (2 wide, then scalar) stored. The C renderer fused the backward's a*b+c into one
  rounding and not the forward's, and the gradient of the maximum was 0 (seed 611, found by a torch differential fuzz).
  Against numpy in float32, which rounds the product and the sum each, as PyTorch."""
  x = np.random.default_rng(seed).standard_normal((32, 3, 32)).astype(np.float32)
  X = Tensor(x, requires_grad=True)
  s = X[10:18:2, 0, 4:24]
  (s * s + 1).reshape(20, 4).max(0).sum().backward()
  xs = x[10:18:2, 0, 4:24].reshape(20, 4)
  y = xs * xs + np.float32(1)
  hit = y == y.max(0)
  want = np.zeros_like(x)
  want[10:18:2, 0, 4:24] = (hit / hit.sum(0) * 2 * xs).reshape(4, 20)
  np.testing.assert_allclose(X.grad.numpy(), want, rtol=1e-6, atol=0)

def test_std_of_a_constant_row_has_a_zero_gradient():
  """std where the variance is 0 (a constant row, a single element) has gradient 0, as PyTorch: sqrt's infinite slope
  times the variance's zero gradient was nan (found by a torch differential fuzz). Elsewhere (x - mean) / ((n - c) std)."""
  x = np.array([[0.3, -1.2, 2.0, 0.7], [0.5, 0.5, 0.5, 0.5]])
  for correction in (0, 1):
    t = Tensor(x, dtype=dtypes.float64, requires_grad=True)
    t.std(1, correction=correction).sum().backward()
    d = x - x.mean(1, keepdims=True)
    sd = np.sqrt((d ** 2).sum(1, keepdims=True) / (4 - correction))
    want = np.where(sd == 0, 0, d / np.where(sd == 0, 1, (4 - correction) * sd))
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-12, atol=0)
  t = Tensor(np.array([[1.5]]), requires_grad=True)
  t.std(1, correction=0).sum().backward()
  assert t.grad.numpy().tolist() == [[0.0]]

def test_division_gradient_where_the_denominator_squared_overflows():
  """d(a/b)/db is -(a/b)/b: -a/(b*b) overflowed b*b to inf, so e/(1 + e) at e = exp(50) kept its numerator's 1/b and had
  gradient 1 (PyTorch and tinygrad: 0), and 1e20/1e20's slope in b was -0, not -1e-20."""
  x = Tensor([50.0, 88.0, 2.0], requires_grad=True)
  s = x.exp() / (1 + x.exp())
  e = np.exp(np.float64(2.0))
  np.testing.assert_allclose(s.sum().gradient(x)[0].numpy(), [0.0, 0.0, e / (1 + e) ** 2], rtol=1e-5, atol=0)
  a, b = Tensor([1e20, 3.0], requires_grad=True), Tensor([1e20, 7.0], requires_grad=True)
  np.testing.assert_allclose((a / b).sum().gradient(b)[0].numpy(), [-1e-20, -3 / 49], rtol=1e-6)

def test_backward_with_nothing_requiring_grad_fills_every_float_tensor():
  """tinygrad's backward (it has no requires_grad): with no tensor in the graph requiring grad, every live float tensor in it
  not marked requires_grad=False gets .grad, realized ones and intermediates too (PyTorch raises; tg raised). Where one
  requires grad, only those do, as PyTorch."""
  x, w = Tensor([1.0, 2.0]), Tensor(np.array([3.0, -1.0], np.float32))  # lazy and realized
  off, idx = Tensor([5.0, 5.0], requires_grad=False), Tensor([1, 0])
  h = x * w
  (h * h + off).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([1.0, 2.0]) * np.array([3.0, -1.0]) ** 2)
  np.testing.assert_allclose(w.grad.numpy(), 2 * np.array([3.0, -1.0]) * np.array([1.0, 2.0]) ** 2)
  np.testing.assert_allclose(h.grad.numpy(), 2 * np.array([3.0, -2.0]))
  assert off.grad is None and idx.grad is None
  a, b = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 4.0])
  (a * b).sum().backward()
  np.testing.assert_array_equal(a.grad.numpy(), [3.0, 4.0])
  assert b.grad is None
  with pytest.raises(RuntimeError, match="no float tensor"): (idx * 2).sum().backward()

def test_max_gradient_is_shared_equally_past_a_staged_reduce():
  """A max over more than 2^16 elements reduces in stages of 4096; its gradient went to each stage's maxima by the stage:
  three tied maxima, two in one stage, got 1/4, 1/4 and 1/2 (PyTorch and tinygrad: 1/3 each). Also min and per row."""
  a = np.zeros(70000, np.float32)
  a[[0, 1, 69999]] = 1
  t = Tensor(a)
  np.testing.assert_allclose(t.max().gradient(t)[0].numpy(), np.where(a == 1, 1 / 3, 0), rtol=1e-6)
  np.testing.assert_allclose((-t).min().gradient(t)[0].numpy(), np.where(a == 1, -1 / 3, 0), rtol=1e-6)
  h = Tensor.ones(70000, dtype=dtypes.half)  # a count of 70,000 ties in half is inf: each got 0 (PyTorch: 1/70000)
  np.testing.assert_allclose(h.max().gradient(h)[0].numpy().astype(np.float64), np.float16(1 / 70000), rtol=1e-3)
  rows = Tensor(np.stack([a, a[::-1]]))
  g = rows.max(axis=1, keepdim=True).gradient(rows, gradient=Tensor([[1.0], [2.0]]))[0].numpy()
  np.testing.assert_allclose(g, np.stack([np.where(a == 1, 1 / 3, 0), np.where(a[::-1] == 1, 2 / 3, 0)]), rtol=1e-6)

def test_only_float_tensors_have_gradients():
  """As PyTorch and tinygrad: an int target raises (tg gave int32 ones, or zeros through a cast)."""
  x = Tensor([1, 2, 3])
  for loss in (x.sum(), x.float().sum()):
    with pytest.raises(RuntimeError, match="only float tensors have gradients"): loss.gradient(x)

def test_an_assign_passes_its_gradient_to_the_value_it_writes():
  """After y.assign(v), y is v: d y / d v is 1, and the contents v overwrote get none (they sent theirs before: 0 for x
  where y = x.clone(); y.assign(x * 3) gives 3, not 1). The same in PyTorch (copy_) and tinygrad."""
  x = Tensor([2.0])
  y = Tensor.zeros(1).contiguous().realize()
  y.assign(x * 3)
  assert y.sum().gradient(x)[0].tolist() == [3.0]
  x = Tensor([2.0], requires_grad=True)
  y = x.clone()
  y.assign(x * 3)
  y.sum().backward()
  assert x.grad.tolist() == [3.0]
  x = Tensor([2.0], requires_grad=True)
  y = x.clone()
  y.assign(y * y)  # reads the clone: d (x*x) / dx = 2x
  y.sum().backward()
  assert x.grad.tolist() == [4.0]

def test_an_assign_into_a_realized_clone_leaves_the_leaf_and_a_reduce_target_backpropagates():
  """t = a.clone() (realized by the assign) then t.assign(a * 2): the gradient's graph held the write with t's old graph
  (a's) as its target, and realizing a.grad wrote a * 2 into a. An assign into a reduce of the leaf crashed the
  schedule. Values as PyTorch's."""
  a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  t = a.clone()
  t.assign(a * 2.0)
  (t * t).sum().backward()
  assert a.grad.tolist() == [8.0, 16.0, 24.0] and a.tolist() == [1.0, 2.0, 3.0]
  c = Tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
  s = c.sum(0)
  s.assign(Tensor([1.0, 2.0, 3.0]))
  (c * s).sum().backward()
  assert c.grad.tolist() == [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]

def test_chained_in_place_updates_of_a_computed_value_pass_every_gradient():
  """t = a * 1; t += a; t += a is 3a: autograd saw t's value before the first write at the second one (a got 2). As
  PyTorch and tinygrad."""
  a = Tensor([1.0, 2.0], requires_grad=True)
  t = a * 1.0
  t += a
  t += a
  t.sum().backward()
  assert a.grad.tolist() == [3.0, 3.0]
  a = Tensor([1.0, 2.0], requires_grad=True)
  t = a.clone()
  t *= 3.0
  t += a
  (t * t).sum().backward()
  assert a.grad.tolist() == [32.0, 64.0] and t.tolist() == [4.0, 8.0]

def test_a_read_realized_between_two_writes_keeps_the_value_it_read():
  """t2 = t1 * 3 taken before t1 += 1; t1 += t2: t2 is 3a (not 3(a + 1)), so d sum(t1) / da = 1 + 3 = 4 (it was 1). The
  history autograd kept made a loop, and every later backward in the process raised. As PyTorch and tinygrad."""
  a = Tensor([1.0, 2.0], requires_grad=True)
  t1 = a * 1.0
  t2 = t1 * 3.0
  t1 += 1.0
  t1 += t2
  t1.sum().backward()
  assert a.grad.tolist() == [4.0, 4.0] and t1.tolist() == [5.0, 9.0]
  b = Tensor([5.0, 6.0], requires_grad=True)
  (b * 4.0).sum().backward()
  assert b.grad.tolist() == [4.0, 4.0]

def test_a_write_through_a_view_of_a_2d_value_reaches_the_gradient():
  """t2 = t1[1]; t2 *= 3 with t1 = b * 1 of shape (2, 2): the row's gradient is 21, not 7. t1's value was remembered under
  its 2-d view of the buffer, and the write, which targets the bare buffer, didn't find it (a 1-d t1 was right). As
  PyTorch and tinygrad; the written value's gradient (t2 += a) reached a only then too."""
  b = Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
  t1 = b * 1.0
  t2 = t1[1]
  t2 *= 3.0
  (t2 * 7.0).sum().backward()
  assert b.grad.tolist() == [[0.0, 0.0], [21.0, 21.0]] and t1.tolist() == [[1.0, 2.0], [9.0, 12.0]]
  a, b = Tensor([1.0, 1.0], requires_grad=True), Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
  t1 = b * 1.0
  t2 = t1[:, 1]
  t2 += a
  (t2 * 7.0).sum().backward()
  assert a.grad.tolist() == [7.0, 7.0] and b.grad.tolist() == [[0.0, 7.0], [0.0, 7.0]]

def test_an_in_place_write_into_a_detach_passes_the_written_values_gradient():
  """t = b.detach(); t += b * 3 (or t *= b * 3): t shares b's memory (b becomes [4, 8], as in PyTorch), and its gradient
  is the written value's, with t's detached read of b taken as b was: 3 (and [3, 6]). b got 0, t being a detach()."""
  b = Tensor([1.0, 2.0], requires_grad=True)
  t = b.detach()
  t += b * 3.0
  t.sum().backward()
  assert b.grad.tolist() == [3.0, 3.0] and t.tolist() == [4.0, 8.0] and b.tolist() == [4.0, 8.0]
  b = Tensor([1.0, 2.0], requires_grad=True)
  t = b.detach()
  t *= b * 3.0
  t.sum().backward()
  assert b.grad.tolist() == [3.0, 6.0] and t.tolist() == [3.0, 12.0]

def test_an_assign_through_a_row_of_a_clone_cuts_that_rows_gradient():
  """t2 = a.clone(); t2[1].assign(v): row 1 of t2 is v now, so a's gradient there is 0 (PyTorch's; tinygrad raises). tg
  wrote the row and sent the gradient as if nothing was written: the write, into the bare buffer, reads no view of it,
  and t2's value was remembered under its 2-d view. The buffer now knows that view."""
  a = Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
  t2 = a.clone()
  t2[1].assign(Tensor([5.0, 6.0]))
  (t2 * Tensor([[1.0, 10.0], [100.0, 1000.0]])).sum().backward()
  assert a.grad.tolist() == [[1.0, 10.0], [0.0, 0.0]] and t2.tolist() == [[1.0, 2.0], [5.0, 6.0]]

def test_backward_again_without_requires_grad_accumulates():
  """tinygrad's backward (no tensor requires grad) run three times adds the gradient three times, as one with
  requires_grad does. Reading the first gradient realized the graph's max (a shared part of log_softmax) into a buffer,
  and nothing remembered what it was: the second and third backward found no path to x and added 0."""
  rng = np.random.default_rng(0)
  xs, ws, ms = (rng.standard_normal(s).astype(np.float32) for s in ((1, 3), (3, 3), (1, 3)))
  x, w, m = Tensor(xs), Tensor(ws), Tensor(ms)
  out = x.dot(w).relu().log_softmax().mul(m).add(m).sum()
  grads = []
  for _ in range(3):
    out.backward()
    grads.append((x.grad.numpy(), w.grad.numpy()))
  ref_x, ref_w = (Tensor(v, requires_grad=True) for v in (xs, ws))
  ref_x.dot(ref_w).relu().log_softmax().mul(Tensor(ms)).add(Tensor(ms)).sum().backward()
  for k, (gx, gw) in enumerate(grads, 1):
    np.testing.assert_allclose(gx, k * ref_x.grad.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gw, k * ref_w.grad.numpy(), rtol=1e-6, atol=1e-6)

def test_gradient_asked_twice_without_requires_grad():
  x = Tensor([3.0, 1.0, 2.0])
  out = x.max()
  first = out.gradient(x)[0].numpy()
  np.testing.assert_array_equal(first, [1, 0, 0])
  np.testing.assert_array_equal(out.gradient(x)[0].numpy(), first)

def test_two_clones_of_one_value_are_two_leaves():
  """Tensor(3.5).clone() twice: equal graphs were one UOp, so backward gave each clone the gradient of both (2, not 1)."""
  w1, w2 = Tensor(3.5).clone(), Tensor(3.5).clone()
  (w1 * 2 + w2 * 5).backward()
  assert (w1.grad.item(), w2.grad.item()) == (2.0, 5.0)

@pytest.mark.parametrize("make", [lambda b: b.clone(), lambda b: b * 1.0], ids=["clone", "computed"])
def test_two_in_place_writes_into_a_2d_value_count_once_each(make):
  """t = b.clone(); t *= 3; t *= 5 gives b the gradient 15, as PyTorch and tinygrad do. A 2-d value's first write was
  applied to the remembered history twice (once for its buffer, once for the 2-d view of it): 45."""
  b = Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
  t = make(b)
  t *= 3.0
  t *= 5.0
  (t * Tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
  np.testing.assert_allclose(b.grad.numpy(), 15 * np.array([[1.0, 2.0], [3.0, 4.0]]))
  np.testing.assert_allclose(t.numpy(), 15 * np.array([[1.0, 2.0], [3.0, 4.0]]))
