"""Train a small character-level GPT (pre-norm transformer blocks, causal flash attention, AdamW) on text this script
writes itself: sentences from a small grammar (no download). The full size is issue #23's benchmark model: 4 layers,
d_model 256, 4 heads, context 128, batch 16.  uv run python examples/train_gpt.py  (--layers/--dim/--heads/--ctx/
--batch shrink it; the loss falls from ln(vocab) ~ 3.3 towards the grammar's entropy)."""
import argparse, math, sys, time
import numpy as np
from tg.tensor import Tensor, Device, nn
from tg.tensor.nn.optim import AdamW
from tg.tensor.nn.state import get_parameters
from tg.tensor.jit import TinyJit

SUBJECTS = ["the cat", "a dog", "my friend", "the old man", "a small bird", "the teacher", "our neighbour", "the child"]
VERBS = ["sees", "likes", "follows", "finds", "paints", "watches", "calls", "helps"]
OBJECTS = ["the river", "a red ball", "the garden", "an apple", "the moon", "a quiet house", "the market", "a letter"]
ENDINGS = ["", " today", " at night", " in the rain", " every morning", " again"]

def make_text(n_sentences: int, seed: int = 0) -> str:
  """n sentences 'subject verb object[ ending][, and subject verb object].': a grammar with a few hundred words'
  worth of structure, so a model that learns it has a loss well below the uniform one."""
  rng = np.random.default_rng(seed)
  def clause() -> str: return f"{SUBJECTS[rng.integers(len(SUBJECTS))]} {VERBS[rng.integers(len(VERBS))]} {OBJECTS[rng.integers(len(OBJECTS))]}"
  out = []
  for _ in range(n_sentences):
    s = clause() + ENDINGS[rng.integers(len(ENDINGS))]
    if rng.random() < 0.3: s += ", and " + clause()
    out.append(s + ".")
  return " ".join(out)

class Vocab:
  """The characters of a text as token ids 0..n-1 (sorted, so the ids don't depend on the order they appear in)."""
  def __init__(self, text: str): self.chars = sorted(set(text))
  def __len__(self) -> int: return len(self.chars)
  def encode(self, s: str) -> np.ndarray:
    idx = {c: i for i, c in enumerate(self.chars)}
    return np.array([idx[c] for c in s], dtype=np.int32)

class Block:
  """x + attn(ln(x)), then x + mlp(ln(x)): GPT-2's pre-norm block, a 4x GELU MLP."""
  def __init__(self, dim: int, heads: int):
    self.heads = heads
    self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
    self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
    self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
  def attn(self, x: Tensor) -> Tensor:
    b, t, d = x.shape
    q, k, v = (y.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for y in self.qkv(x).chunk(3, dim=-1))
    return self.proj(q.scaled_dot_product_attention(k, v, is_causal=True).transpose(1, 2).reshape(b, t, d))
  def __call__(self, x: Tensor) -> Tensor:
    x = x + self.attn(self.ln1(x))
    return x + self.fc2(self.fc1(self.ln2(x)).gelu())

class GPT:
  def __init__(self, vocab: int, layers: int = 4, dim: int = 256, heads: int = 4, ctx: int = 128):
    if dim % heads: raise ValueError(f"d_model {dim} doesn't split into {heads} heads: pick a multiple of the head count")
    self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(ctx, dim)
    self.blocks = [Block(dim, heads) for _ in range(layers)]
    self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab)
  def __call__(self, idx: Tensor) -> Tensor:
    x = self.tok(idx) + self.pos(Tensor.arange(idx.shape[1], device=idx.device))
    for blk in self.blocks: x = blk(x)
    return self.head(self.ln(x))
  def loss(self, x: Tensor, y: Tensor) -> Tensor: return self(x).sparse_categorical_crossentropy(y)

def batches(tokens: np.ndarray, batch: int, ctx: int, seed: int = 1):
  """Endless random windows: inputs tokens[i:i+ctx], targets one character later."""
  rng = np.random.default_rng(seed)
  while True:
    i = rng.integers(0, len(tokens) - ctx - 1, batch)
    win = np.stack([tokens[j:j + ctx + 1] for j in i])
    yield win[:, :-1], win[:, 1:]

def make_step(model: GPT, lr: float):
  opt = AdamW(get_parameters(model), lr=lr, weight_decay=0.01)
  @TinyJit
  def step(x: Tensor, y: Tensor) -> Tensor:
    with Tensor.train():
      opt.zero_grad()
      loss = model.loss(x, y)
      loss.backward()
      opt.step()
      return loss
  return step

def main() -> tuple[float, float]:
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--steps", type=int, default=200)
  ap.add_argument("--layers", type=int, default=4)
  ap.add_argument("--dim", type=int, default=256)
  ap.add_argument("--heads", type=int, default=4)
  ap.add_argument("--ctx", type=int, default=128)
  ap.add_argument("--batch", type=int, default=16)
  ap.add_argument("--lr", type=float, default=1e-3)
  args = ap.parse_args()
  text = make_text(4000)
  vocab = Vocab(text)
  tokens = vocab.encode(text)
  Tensor.manual_seed(0)
  model = GPT(len(vocab), args.layers, args.dim, args.heads, args.ctx)
  step = make_step(model, args.lr)
  data, start, first = batches(tokens, args.batch, args.ctx), time.perf_counter(), math.nan
  for i in range(1, args.steps + 1):
    x, y = next(data)
    loss = step(Tensor(x), Tensor(y))
    if i == 1: first = loss.item()
    if i % 10 == 0 or i == args.steps:
      sys.stdout.write(f"\rstep {i}/{args.steps} loss {loss.item():.3f}")
      sys.stdout.flush()
  last = loss.item()
  print(f"\nloss {first:.3f} -> {last:.3f} (uniform {math.log(len(vocab)):.3f}) after {args.steps} steps in "
        f"{time.perf_counter() - start:.1f} s on {Device.DEFAULT}")
  return first, last

if __name__ == "__main__": main()
