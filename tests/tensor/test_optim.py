"""One and several steps of each optimizer against a numpy implementation of its published update rule."""
import numpy as np
import pytest
from tg.tensor import Tensor, Counters
from tg.tensor.nn import optim, BatchNorm2d

@pytest.fixture(autouse=True)
def training():
  """Every optimizer here steps in training mode (test_a_step_outside_training_raises: the one that doesn't)."""
  with Tensor.train(): yield

rng = np.random.default_rng(1)
W0, X = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)

def grad_of(w: np.ndarray) -> np.ndarray:
  """d/dw of sum((X @ w)^2) (the loss the tensor side uses)."""
  return 2 * X.T @ (X @ w)

def np_sgd(lr, momentum=0.0, weight_decay=0.0, nesterov=False):
  b = None
  def step(w):
    nonlocal b
    g = grad_of(w) + weight_decay * w
    if momentum:
      b = g if b is None else momentum * b + g
      g = g + momentum * b if nesterov else b
    return w - lr * g
  return step

def np_lars(lr, momentum=0.9, weight_decay=1e-4, nesterov=False, classic=True, tcoef=0.001):
  """You et al.'s LARS (tcoef=0: no trust ratio, SGD): the rate scaled by tcoef * |w| / (|g| + wd * |w|); classic momentum
  takes the scaled gradient into the buffer and steps by the buffer."""
  b = 0.0
  def step(w):
    nonlocal b
    g = grad_of(w)
    r = tcoef * np.linalg.norm(w) / (np.linalg.norm(g) + weight_decay * np.linalg.norm(w)) if tcoef else 1.0
    g = g + weight_decay * w
    if classic: g = g * r * lr
    if momentum:
      b = momentum * b + g
      g = g + momentum * b if nesterov else b
    return w - (g if classic else g * r * lr)
  return step

def np_lamb(lr, b1=0.9, b2=0.999, eps=1e-6, weight_decay=0.0, adam=False):
  m = v = 0
  t = 0
  def step(w):
    nonlocal m, v, t
    t += 1
    g = grad_of(w)
    m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
    up = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps) + weight_decay * w
    if not adam: up = up * (np.linalg.norm(w) / np.linalg.norm(up))
    return w - lr * up
  return step

def np_newton_schulz(g, steps, coeffs, eps=1e-7):
  x = g.T if g.shape[0] > g.shape[1] else g
  x = x / (np.linalg.norm(x) + eps)
  for _ in range(steps): x = sum(c * np.linalg.matrix_power(x @ x.T, i) @ x for i, c in enumerate(coeffs))
  return x.T if g.shape[0] > g.shape[1] else x

def np_muon(lr, momentum=0.95, weight_decay=0.1, ns_steps=5, coeffs=(3.4445, -4.775, 2.0315), nesterov=True):
  """Keller Jordan's Muon as tinygrad has it: SGD momentum, the step orthogonalized, weight decay after."""
  b = 0
  def step(w):
    nonlocal b
    g = grad_of(w)
    b = momentum * b + g
    d = np_newton_schulz(g + momentum * b if nesterov else b, ns_steps, coeffs)
    return w - lr * (d + weight_decay * w)
  return step

CASES = {
  "sgd": (lambda p: optim.SGD(p, lr=0.01), np_sgd(0.01)),
  "sgd_momentum_wd": (lambda p: optim.SGD(p, lr=0.01, momentum=0.9, weight_decay=0.1), np_sgd(0.01, 0.9, 0.1)),
  "sgd_nesterov": (lambda p: optim.SGD(p, lr=0.01, momentum=0.8, nesterov=True), np_sgd(0.01, 0.8, nesterov=True)),
  "sgd_classic": (lambda p: optim.SGD(p, lr=0.01, momentum=0.9, weight_decay=0.1, classic=True), np_lars(0.01, 0.9, 0.1, tcoef=0)),
  "sgd_classic_nesterov": (lambda p: optim.SGD(p, lr=0.01, momentum=0.8, nesterov=True, classic=True),
                           np_lars(0.01, 0.8, 0.0, nesterov=True, tcoef=0)),
  "lars": (lambda p: optim.LARS(p, lr=0.5), np_lars(0.5)),
  "lars_popular": (lambda p: optim.LARS(p, lr=0.5, momentum=0.5, weight_decay=0.01, classic=False, tcoef=0.01),
                   np_lars(0.5, 0.5, 0.01, classic=False, tcoef=0.01)),
  "adam": (lambda p: optim.Adam(p, lr=0.01), np_lamb(0.01, eps=1e-8, adam=True)),
  "adamw": (lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.1), np_lamb(0.01, eps=1e-8, weight_decay=0.1, adam=True)),
  "lamb": (lambda p: optim.LAMB(p, lr=0.01, weight_decay=0.05), np_lamb(0.01, weight_decay=0.05)),
  "muon": (lambda p: optim.Muon(p, lr=0.01), np_muon(0.01)),
  "muon_plain_cubic": (lambda p: optim.Muon(p, lr=0.02, momentum=0.9, weight_decay=0.0, ns_steps=3, ns_coefficients=(1.5, -0.5), nesterov=False),
                       np_muon(0.02, 0.9, 0.0, 3, (1.5, -0.5), nesterov=False)),
}

def test_newton_schulz_converges_to_the_polar_factor():
  # the cubic iteration (1.5, -0.5) converges to U V^T of the SVD G = U S V^T, for a wide and a tall (transposed) matrix
  for shape in ((3, 5), (6, 2)):
    g = np.random.default_rng(3).standard_normal(shape)
    u, _, vt = np.linalg.svd(g, full_matrices=False)
    np.testing.assert_allclose(Tensor(g.astype(np.float32)).newton_schulz(40, (1.5, -0.5)).numpy(), u @ vt, atol=1e-5)
  with pytest.raises(ValueError, match="needs a matrix"): Tensor.ones(3).newton_schulz(1, (1.0,))

def test_lr_is_float32_and_updates_keep_the_param_dtype():
  # a half default float made the learning rate of 1e10 inf; the update of a half parameter lands in half
  from tg.tensor import dtypes
  old, dtypes.default_float = dtypes.default_float, dtypes.half
  try:
    w = Tensor(np.ones(2, np.float32), requires_grad=True)
    opt = optim.SGD([w], lr=1e10)
    (w * 2).sum().backward()
    opt.step()
    np.testing.assert_array_equal(w.numpy(), np.float32(1) - np.float32(1e10) * 2)
    h = Tensor(np.ones(2, np.float16), requires_grad=True)
    opt = optim.Adam([h], lr=0.5)
    (h * 2).sum().backward()
    opt.step()
    assert h.dtype == dtypes.half and h.numpy().tolist() == [0.5, 0.5]
  finally: dtypes.default_float = old

@pytest.mark.parametrize("name", CASES)
def test_steps_match_numpy(name):
  make, ref = CASES[name]
  w = Tensor(W0.copy(), requires_grad=True)
  opt, x = make([w]), Tensor(X)
  expect = W0.astype(np.float64)
  for i in range(3):
    opt.zero_grad()
    ((x @ w) ** 2).sum().backward()
    opt.step()
    expect = ref(expect)
    np.testing.assert_allclose(w.numpy(), expect, rtol=1e-6 if i == 0 else 1e-5, atol=1e-6 if i == 0 else 1e-5, err_msg=f"step {i + 1}")

@pytest.mark.parametrize("name", CASES)
def test_the_gradient_read_after_a_step_is_the_one_backward_computed(name):
  # PyTorch and tinygrad: p.grad after opt.step() is the gradient at the old weights; left lazy, it was computed again
  # from the updated weights (an elementwise gradient, fused into the update, was not stored)
  w = Tensor(W0.copy(), requires_grad=True)
  opt = CASES[name][0]([w])
  (w * w * 3).sum().backward()
  opt.step()
  assert not np.allclose(w.numpy(), W0), "the step moved the weights"
  np.testing.assert_allclose(w.grad.numpy(), 6 * W0, rtol=1e-6)

def test_a_step_fuses_and_learning_rate_is_a_tensor():
  ws = [Tensor(rng.standard_normal((8, 8)).astype(np.float32), requires_grad=True) for _ in range(3)]
  opt = optim.Adam(ws, lr=0.1)
  for w in ws: w.grad = w.detach() * 2
  Counters.reset()
  opt.step()
  assert Counters.kernels <= 2 + 3 * 3, "at most one kernel per updated tensor (m, v, w) plus the two step counters"
  before = ws[0].numpy()
  opt.lr.assign(Tensor([0.0])).realize()
  for w in ws: w.grad = w.detach() * 2
  Counters.reset()
  opt.step()
  assert Counters.compiled == 0, "a new learning rate reuses the kernels"
  np.testing.assert_array_equal(ws[0].numpy(), before)

def test_a_step_whose_gradient_reads_the_weight_broadcast_updates_in_place():
  """The gradient of relu(x + b) reads b broadcast over the batch; the update of b reads it through m and v's assigns,
  which run first, so b is updated in place: no temporary and copy kernel (one per parameter in the GPT's step)."""
  xn, bn = rng.standard_normal((32, 24)).astype(np.float32), rng.standard_normal(24).astype(np.float32)
  b = Tensor(bn.copy(), requires_grad=True)
  opt = optim.AdamW([b], lr=0.1, weight_decay=0.01)
  ((Tensor(xn) + b).relu().sum()).backward()
  Counters.reset()
  opt.step()
  assert Counters.kernels == 3, "the gradient, one kernel for m, v and b, one for the two step counters"
  g = (xn + bn > 0).sum(0).astype(np.float64)  # the first step: m_hat = g, v_hat = g^2
  np.testing.assert_allclose(b.numpy(), bn - 0.1 * (g / (np.abs(g) + 1e-8) + 0.01 * bn), rtol=1e-5, atol=1e-6)

def test_errors():
  with pytest.raises(ValueError, match="no parameters"): optim.SGD([Tensor([1.0], requires_grad=False)])
  w = Tensor([1.0], requires_grad=True)
  with pytest.raises(RuntimeError, match="no gradient"): optim.SGD([w]).step()
  with pytest.raises(ValueError, match="nesterov"): optim.SGD([w], nesterov=True)

def test_bad_hyperparameters_raise_value_error():
  """As PyTorch and tinygrad: a negative learning rate, momentum, weight decay or eps, or a beta outside [0, 1)."""
  w = lambda: [Tensor([1.0], requires_grad=True)]  # noqa: E731
  for make, word in ((lambda: optim.SGD(w(), lr=-0.1), "learning_rate"), (lambda: optim.SGD(w(), momentum=-0.1), "momentum"),
                     (lambda: optim.AdamW(w(), weight_decay=-0.1), "weight_decay"), (lambda: optim.Adam(w(), eps=-1e-8), "epsilon"),
                     (lambda: optim.Adam(w(), b1=1.0), "beta parameter at index 0")):
    with pytest.raises(ValueError, match=f"Invalid {word}"): make()

def test_a_step_outside_training_raises():
  """tinygrad's rule (PyTorch steps in any mode): a step while Tensor.training is False raises and changes nothing."""
  w = Tensor([1.0, 2.0], requires_grad=True)
  opt = optim.Adam([w])
  (w * w).sum().backward()
  with Tensor.train(False):
    with pytest.raises(RuntimeError, match="training mode"): opt.step()
  np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])
  opt.step()
  assert (w.numpy() < [1.0, 2.0]).all()

def test_an_optimizer_group_steps_each_as_alone():
  """OptimizerGroup(SGD over w, AdamW over v): both updates in one step, each as its optimizer alone gives (numpy)."""
  a, b = np.array([1.0, -2.0, 3.0], np.float32), np.array([0.5, 0.25], np.float32)
  w, v = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  group = optim.OptimizerGroup(optim.SGD([w], lr=0.1), optim.AdamW([v], lr=0.01, weight_decay=0.0))
  assert group.params == [w, v] and group[1].params == [v]
  for _ in range(2):
    group.zero_grad()
    ((w * w).sum() + (v * 3).sum()).backward()
    group.step()
  a1 = a - 0.1 * 2 * a
  np.testing.assert_allclose(w.numpy(), a1 - 0.1 * 2 * a1, rtol=1e-6)
  np.testing.assert_allclose(v.numpy(), b - 2 * 0.01, rtol=1e-5)  # Adam's first steps move a constant gradient by lr each
  with pytest.raises(ValueError, match="at least one"): optim.OptimizerGroup()

@pytest.mark.parametrize("make, ref", [(lambda p: optim.SGD(p, lr=0.01, momentum=0.9, classic=True), lambda: np_lars(0.01, 0.9, 0.0, tcoef=0)),
                                       (lambda p: optim.LARS(p, lr=0.5), lambda: np_lars(0.5))], ids=["sgd_classic", "lars"])
def test_classic_momentum_on_half_params(make, ref):
  """Classic momentum's b = m*b + lr*g is float32 (the learning rate is): assigned to a half parameter's buffer it raised
  (assign doesn't cast, tinygrad's rule); the buffer is kept in the parameter's dtype, as PyTorch's."""
  from tg.tensor import dtypes
  w = Tensor(W0.astype(np.float16), requires_grad=True)
  opt, x, step = make([w]), Tensor(X.astype(np.float16)), ref()
  expect = W0.astype(np.float16).astype(np.float64)
  for _ in range(2):
    opt.zero_grad()
    ((x @ w) ** 2).sum().backward()
    opt.step()
    expect = step(expect)
  assert w.dtype == dtypes.half
  np.testing.assert_allclose(w.numpy(), expect, rtol=2e-2, atol=2e-2)

def test_a_parameter_without_a_gradient_is_an_error_of_tinygrads_class():
  """tinygrad asserts (AssertionError), tg's error is a RuntimeError too; the message says what to do."""
  a, b = Tensor([1.0], requires_grad=True), Tensor([2.0], requires_grad=True)
  (a * 3).sum().backward()
  for cls in (AssertionError, RuntimeError):
    with pytest.raises(cls, match="no gradient: call backward"): optim.SGD([a, b]).step()

def test_is_param_is_what_an_optimizer_updates():
  """tinygrad 0.14's is_param: True for a tensor not marked requires_grad=False (a clone, a weight), False for BatchNorm's
  running statistics; is_param_(False) keeps an optimizer off a tensor, as requires_grad=False does. The 0-d parameters
  (tinygrad's test_const_backward_pass_optimizer) crashed every optimizer's step: the (1,) learning rate made the update
  (1,). SGD's steps by hand: 3.5 - 0.5 * 1 and 3.5 - 0.5 * 2."""
  w1, w2, stat = Tensor(3.5).clone(), Tensor(3.5).clone(), Tensor([1.0]).is_param_(False)
  assert w1.is_param and w2.is_param and not stat.is_param and stat.requires_grad is False
  assert not BatchNorm2d(4).running_mean.is_param and BatchNorm2d(4).weight.is_param
  opt = optim.SGD([w1, w2, stat], lr=0.5)
  (w1 + 2 * w2 + stat.sum()).backward()
  opt.step()
  assert (w1.item(), w2.item(), stat.tolist()) == (3.0, 2.5, [1.0]) and stat.is_param_().is_param
