"""CPU matmul, conv and training figures of issue #23, each system measured in its own process (running one in the same
process as another changes the other's figures): f32 matmul square 256-4096, tall-skinny (M x K x N = 4096 x 64 x 4096),
batched (64 x 128x128 @ 128x128) and matrix-vector / vector-matrix (4096) against numpy (OpenBLAS) and PyTorch; a
ResNet-style 3x3 conv (64->64 channels, 56x56, batch 16, padding 1) forward and backward (input and weight gradients,
without the forward) against PyTorch; the GPT training step of examples/train_gpt.py (4 layers, d_model 256, 4 heads, ctx 128, batch 16,
AdamW) in steps/s against the same model in PyTorch. tg runs jitted (TinyJit), so its figures are the kernels'.
PyTorch is optional: "not installed" when it isn't. --json for the figures; --only to run a subset (by row name prefix);
--cpu-time runs every system on one thread (CPU_THREADS, OPENBLAS/OMP/MKL_NUM_THREADS = 1) timed by its CPU time: on a
machine others load, wall time is mostly their load."""
from __future__ import annotations
import argparse, json, pathlib, sys, time
from typing import Callable
import numpy as np
from tensor import best as tensor_best  # bench/tensor.py (this folder is on sys.path)
from own_process import ONE_THREAD, best_of_rounds, measure, require

SYSTEMS = ("tg", "numpy", "torch")
GPT = dict(layers=4, dim=256, heads=4, ctx=128, batch=16, vocab=26)  # vocab: the characters of train_gpt.make_text(2000)

CLOCK = time.perf_counter  # time.thread_time under --cpu-time

WARM_S = 0.3  # each case runs this long before it is timed: the first calls of a process run at a lower clock, on cold threads

def best(fn: Callable[[], object], reps: int) -> float:
  """Best of reps after two calls (a TinyJit's capture) and WARM_S of warm-up, the same for every system: the first
  case of a process (matmul 256) measured tg at 127 GFLOP/s after two calls, 300+ after a warm-up."""
  end = time.perf_counter() + WARM_S
  fn(), fn()
  while time.perf_counter() < end: fn()
  return tensor_best(fn, reps, warmup=0, clock=CLOCK)

def matmul_cases() -> list[tuple[str, tuple[int, ...], tuple[int, ...], float]]:
  """(name, shape of a, shape of b, flops)."""
  cases = [(f"matmul {n}", (n, n), (n, n), 2 * n ** 3) for n in (256, 512, 1024, 2048, 4096)]
  cases += [("matmul 4096x64x4096", (4096, 64), (64, 4096), 2 * 4096 * 64 * 4096),
            ("matmul batched 64x128x128", (64, 128, 128), (64, 128, 128), 2 * 64 * 128 ** 3),
            ("matvec 4096", (4096, 4096), (4096,), 2 * 4096 ** 2), ("vecmat 4096", (4096,), (4096, 4096), 2 * 4096 ** 2)]
  return cases

CONV = dict(x=(16, 64, 56, 56), w=(64, 64, 3, 3))
CONV_FLOPS = 2 * 16 * 64 * 56 * 56 * 64 * 9

def tg_rows(only: str) -> dict[str, float]:
  from tg.tensor import Tensor
  from tg.tensor.jit import TinyJit
  rng, out = np.random.default_rng(0), {}
  for name, sa, sb, _ in matmul_cases():
    if not name.startswith(only): continue
    a, b = Tensor(rng.standard_normal(sa, dtype=np.float32)).realize(), Tensor(rng.standard_normal(sb, dtype=np.float32)).realize()
    mm = TinyJit(lambda a, b: (a @ b).realize())
    out[name] = best(lambda: mm(a, b), 3 if sa[0] >= 2048 else 10)
  if "conv".startswith(only) or only.startswith("conv"):
    x = Tensor(rng.standard_normal(CONV["x"], dtype=np.float32)).realize()
    w = Tensor(rng.standard_normal(CONV["w"], dtype=np.float32) * 0.05).realize()
    g = Tensor(rng.standard_normal((16, 64, 56, 56), dtype=np.float32)).realize()
    fwd = TinyJit(lambda x, w: x.conv2d(w, padding=1).realize())
    out["conv2d 3x3 64->64 56x56 b16 fwd"] = best(lambda: fwd(x, w), 5)
    def grads(x: Tensor, w: Tensor, g: Tensor) -> list[Tensor]:
      x, w = x.detach().requires_grad_(), w.detach().requires_grad_()
      (x.conv2d(w, padding=1) * g).sum().backward()
      Tensor.realize_all(x.grad, w.grad)
      return [x.grad, w.grad]
    bwd = TinyJit(grads)
    out["conv2d 3x3 64->64 56x56 b16 bwd"] = best(lambda: bwd(x, w, g), 5)
  if "gpt".startswith(only) or only.startswith("gpt"):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
    import train_gpt
    text = train_gpt.make_text(2000)
    vocab = train_gpt.Vocab(text)
    if len(vocab) != GPT["vocab"]: raise RuntimeError(f"the text has {len(vocab)} characters: set GPT['vocab'] (PyTorch's twin) to it")
    data = train_gpt.batches(vocab.encode(text), GPT["batch"], GPT["ctx"])
    Tensor.manual_seed(0)
    step = train_gpt.make_step(train_gpt.GPT(len(vocab), GPT["layers"], GPT["dim"], GPT["heads"], GPT["ctx"]), 1e-3)
    batches = [tuple(Tensor(a).realize() for a in next(data)) for _ in range(2)]
    it = iter(range(1 << 30))
    out["gpt train step"] = best(lambda: step(*batches[next(it) % 2]).item(), 3)
  return out

def numpy_rows(only: str) -> dict[str, float]:
  rng, out = np.random.default_rng(0), {}
  for name, sa, sb, _ in matmul_cases():
    if not name.startswith(only): continue
    a, b = rng.standard_normal(sa, dtype=np.float32), rng.standard_normal(sb, dtype=np.float32)
    out[name] = best(lambda: a @ b, 3 if sa[0] >= 2048 else 10)
  return out

def torch_rows(only: str) -> dict[str, float]:
  import torch
  rng, out = np.random.default_rng(0), {}
  for name, sa, sb, _ in matmul_cases():
    if not name.startswith(only): continue
    a, b = torch.from_numpy(rng.standard_normal(sa, dtype=np.float32)), torch.from_numpy(rng.standard_normal(sb, dtype=np.float32))
    out[name] = best(lambda: a @ b, 3 if sa[0] >= 2048 else 10)
  if "conv".startswith(only) or only.startswith("conv"):
    x = torch.from_numpy(rng.standard_normal(CONV["x"], dtype=np.float32)).requires_grad_()
    w = torch.from_numpy(rng.standard_normal(CONV["w"], dtype=np.float32) * 0.05).requires_grad_()
    g = torch.from_numpy(rng.standard_normal((16, 64, 56, 56), dtype=np.float32))
    with torch.no_grad(): out["conv2d 3x3 64->64 56x56 b16 fwd"] = best(lambda: torch.nn.functional.conv2d(x, w, padding=1), 5)
    # the backward alone, as tg's (whose gradients don't need the forward's value): the graph of one forward, kept
    y = torch.nn.functional.conv2d(x, w, padding=1)
    out["conv2d 3x3 64->64 56x56 b16 bwd"] = best(lambda: torch.autograd.grad(y, (x, w), g, retain_graph=True), 5)
  if "gpt".startswith(only) or only.startswith("gpt"): out["gpt train step"] = torch_gpt_step()
  return out

def torch_gpt_step() -> float:
  """examples/train_gpt.py's model in PyTorch (same blocks: pre-norm, causal SDPA, 4x tanh-GELU MLP), AdamW."""
  import torch
  F, nn = torch.nn.functional, torch.nn
  d, h, t, vocab = GPT["dim"], GPT["heads"], GPT["ctx"], GPT["vocab"]
  class Block(nn.Module):
    def __init__(self):
      super().__init__()
      self.ln1, self.ln2, self.qkv, self.proj = nn.LayerNorm(d), nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
      self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
    def forward(self, x):
      b = x.shape[0]
      q, k, v = (z.reshape(b, t, h, d // h).transpose(1, 2) for z in self.qkv(self.ln1(x)).chunk(3, -1))
      x = x + self.proj(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d))
      return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
  class Model(nn.Module):
    def __init__(self):
      super().__init__()
      self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(t, d)
      self.blocks = nn.Sequential(*[Block() for _ in range(GPT["layers"])])
      self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)
    def forward(self, idx): return self.head(self.ln(self.blocks(self.tok(idx) + self.pos(torch.arange(t)))))
  model = Model()
  opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
  x, y = torch.randint(0, vocab, (GPT["batch"], t)), torch.randint(0, vocab, (GPT["batch"], t))
  def step() -> None:
    opt.zero_grad()
    F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1)).backward()
    opt.step()
  return best(step, 3)

def work(name: str) -> tuple[float, str]:
  """What a row's time is divided by: its flops (GFLOP/s), or one step (steps/s)."""
  if name.startswith("gpt"): return 1.0, "steps/s"
  if name.startswith("conv"): return CONV_FLOPS * (2 if name.endswith("bwd") else 1) / 1e9, "GFLOP/s"
  return next(f for n, _, _, f in matmul_cases() if n == name) / 1e9, "GFLOP/s"

def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--json", action="store_true")
  ap.add_argument("--only", default="", help="only the rows whose name starts with this (matmul, matvec, conv, gpt)")
  ap.add_argument("--cpu-time", action="store_true", help="one thread per system, timed by its CPU time (holds on a busy machine)")
  ap.add_argument("--system", choices=SYSTEMS, help=argparse.SUPPRESS)  # the child process measuring one system
  ap.add_argument("--rounds", type=int, default=1, help="each system's best of this many processes, the systems taking turns")
  args = ap.parse_args()
  if args.system:
    global CLOCK
    if args.cpu_time: CLOCK = time.thread_time
    if args.system == "torch": require("torch")
    print(json.dumps({"tg": tg_rows, "numpy": numpy_rows, "torch": torch_rows}[args.system](args.only)))
    return
  res = best_of_rounds({s: (lambda s=s: measure(__file__, ["--system", s, "--only", args.only] + (["--cpu-time"] if args.cpu_time else []),
                                                env=ONE_THREAD if args.cpu_time else None)) for s in SYSTEMS}, args.rounds, best=min)
  rows = [{"bench": n, **{f"{s}_s": (res[s] or {}).get(n) for s in SYSTEMS}, "unit": work(n)[1]} for n in res["tg"]]
  if args.json: print(json.dumps(rows, indent=1)); return
  print(f"{'bench (rate; ratio = tg / reference)':36} {'tg':>9} {'numpy':>9} {'torch':>13} {'tg/numpy':>9} {'tg/torch':>9}")
  for r in rows:
    w, unit = work(r["bench"])
    rate = lambda s: f"{w / r[s + '_s']:9.2f}" if r[s + "_s"] else f"{'-':>9}"  # noqa: E731
    ratio = lambda s: f"{r[s + '_s'] and r[s + '_s'] / r['tg_s']:9.2f}" if r[s + "_s"] else f"{'-':>9}"  # noqa: E731
    print(f"{r['bench'] + ' (' + unit + ')':36} {rate('tg')} {rate('numpy')} {rate('torch') if res['torch'] else 'not installed':>13} "
          f"{ratio('numpy')} {ratio('torch')}")

if __name__ == "__main__": main()
