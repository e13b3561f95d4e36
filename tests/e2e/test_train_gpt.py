"""examples/train_gpt.py at a tiny size: the loss and every gradient of one step against a float64 numpy model (central
differences along a random direction per parameter), the AdamW update against numpy's, and a short jitted run whose
loss falls clearly."""
import math, pathlib, sys
import numpy as np
import pytest
from tg.tensor import Tensor
from tg.tensor.nn.optim import AdamW
from tg.tensor.nn.state import get_state_dict

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
import train_gpt  # noqa: E402

CFG, LR = dict(layers=1, dim=16, heads=2, ctx=8), 1e-2

def _np_ln(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
  y = x - x.mean(-1, keepdims=True)
  return y / np.sqrt((y * y).mean(-1, keepdims=True) + 1e-5) * w + b

def _np_gelu(x: np.ndarray) -> np.ndarray: return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))

def np_loss(P: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, heads: int) -> float:
  """The GPT's mean cross entropy written out in numpy (PyTorch's layout: Linear weights are (out, in))."""
  lin = lambda h, name: h @ P[name + ".weight"].T + P[name + ".bias"]  # noqa: E731
  h = P["tok.weight"][x] + P["pos.weight"][np.arange(x.shape[1])]
  b, t, d = h.shape
  for i in range(sum(1 for k in P if k.endswith(".qkv.weight"))):
    p = f"blocks.{i}."
    qkv = lin(_np_ln(h, P[p + "ln1.weight"], P[p + "ln1.bias"]), p + "qkv")
    q, k, v = (z.reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3) for z in np.split(qkv, 3, -1))
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // heads) + np.triu(np.full((t, t), -np.inf), 1)
    a = np.exp(s - s.max(-1, keepdims=True))
    o = (a / a.sum(-1, keepdims=True)) @ v
    h = h + lin(o.transpose(0, 2, 1, 3).reshape(b, t, d), p + "proj")
    h = h + lin(_np_gelu(lin(_np_ln(h, P[p + "ln2.weight"], P[p + "ln2.bias"]), p + "fc1")), p + "fc2")
  logits = lin(_np_ln(h, P["ln.weight"], P["ln.bias"]), "head")
  m = logits.max(-1, keepdims=True)
  logp = logits - m - np.log(np.exp(logits - m).sum(-1, keepdims=True))
  return float(-np.take_along_axis(logp, y[..., None], -1).mean())

@pytest.fixture(scope="module")
def run() -> dict:
  """One run at the tiny size shared by the tests (compiling is what they cost): the parameters before and after the
  first step, that step's gradients, batch and loss, then 39 jitted steps."""
  text = train_gpt.make_text(200)
  vocab = train_gpt.Vocab(text)
  data = train_gpt.batches(vocab.encode(text), 8, CFG["ctx"])
  Tensor.manual_seed(1)
  model = train_gpt.GPT(len(vocab), **CFG)
  params = get_state_dict(model)
  before = {k: t.numpy() for k, t in params.items()}
  # the first step by hand, its gradients realized before the update (read after it, a gradient the update fused would
  # be recomputed from the new weights)
  opt = AdamW(list(params.values()), lr=LR, weight_decay=0.01)
  x, y = next(data)
  with Tensor.train():
    opt.zero_grad()
    loss = model.loss(Tensor(x), Tensor(y))
    loss.backward()
    Tensor.realize_all(loss, *[t.grad for t in params.values()])
    grads = {k: t.grad.numpy() for k, t in params.items()}
    opt.step()
  after, losses = {k: t.numpy() for k, t in params.items()}, [loss.item()]
  step = train_gpt.make_step(model, lr=LR)
  losses += [step(Tensor(x), Tensor(y)).item() for x, y in (next(data) for _ in range(39))]
  return dict(vocab=vocab, x=x, y=y, before=before, after=after, grads=grads, losses=losses)

def test_text_is_the_grammar_and_deterministic():
  text = train_gpt.make_text(50, seed=3)
  assert text == train_gpt.make_text(50, seed=3) and text.count(".") == 50
  vocab = train_gpt.Vocab(text)
  assert "".join(vocab.chars[i] for i in vocab.encode(text)) == text

def test_loss_and_gradients_match_numpy_float64(run):
  P = {k: v.astype(np.float64) for k, v in run["before"].items()}
  x, y = run["x"], run["y"]
  np.testing.assert_allclose(run["losses"][0], np_loss(P, x, y, CFG["heads"]), rtol=1e-5)
  rng, eps = np.random.default_rng(0), 1e-5
  for name, g in run["grads"].items():
    d = rng.standard_normal(P[name].shape)
    plus, minus = ({**P, name: P[name] + s * eps * d} for s in (1, -1))
    fd = (np_loss(plus, x, y, CFG["heads"]) - np_loss(minus, x, y, CFG["heads"])) / (2 * eps)
    assert float((g.astype(np.float64) * d).sum()) == pytest.approx(fd, rel=2e-3, abs=1e-5), name

def test_adamw_step_matches_numpy(run):
  # the first AdamW step from m = v = 0: m_hat = g, v_hat = g^2, so p -= lr * (g / (|g| + eps) + wd * p)
  for name, g in run["grads"].items():
    p = run["before"][name]
    np.testing.assert_allclose(run["after"][name], p - LR * (g / (np.abs(g) + 1e-8) + 0.01 * p), rtol=1e-5, atol=1e-6, err_msg=name)

def test_short_run_loss_falls(run):
  losses = run["losses"]
  assert losses[0] == pytest.approx(math.log(len(run["vocab"])), rel=0.1)
  assert np.mean(losses[-5:]) < 0.8 * losses[0], losses
