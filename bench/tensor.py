"""tg.tensor benchmark: Python overhead of a tiny op, elementwise, reduce, matmul, conv2d and a LayerNorm step (cold and warm)
beside numpy (and PyTorch on CPU when it is importable). Prints a table; --json for machine-readable figures."""
from __future__ import annotations
import argparse, json, os, tempfile, time
from typing import Callable
import numpy as np
from tg.tensor import Tensor, nn

def best(fn: Callable[[], object], reps: int = 5, warmup: int = 1, clock: Callable[[], float] = time.perf_counter) -> float:
  """Best wall time of fn in seconds (after warm-up runs that compile; a TinyJit captures on its second call); `clock`
  time.thread_time: the calling thread's CPU time instead."""
  for _ in range(warmup): fn()
  times = []
  for _ in range(reps):
    t0 = clock()
    fn()
    times.append(clock() - t0)
  return min(times)

def layernorm_step(shape: tuple[int, ...] = (20, 5, 10, 10)) -> Callable[[], object]:
  """tinygrad's LayerNorm test step: a randn input, LayerNorm over the last two axes, sum, backward, every gradient read.
  It took minutes here: the random input was recomputed inside every kernel reading it (now Tensor.rand is contiguous)
  and the weight gradient's 100-lane tile was devectorized lane by lane."""
  ln = nn.LayerNorm(shape[-2:])
  ln.weight.requires_grad_(), ln.bias.requires_grad_()
  def step() -> object:
    x = Tensor.randn(*shape, requires_grad=True)
    ln.weight.grad = ln.bias.grad = None
    ln(x).sum().backward()
    return [t.numpy() for t in (x, x.grad, ln.weight.grad, ln.bias.grad)]
  return step

def cold(fn: Callable[[], object]) -> float:
  """Wall time of fn's first run with an empty compile cache (what a new user's first call, or a test, pays)."""
  old = os.environ.get("CACHEDB")
  with tempfile.TemporaryDirectory() as d:
    os.environ["CACHEDB"] = os.path.join(d, "cache.db")
    try:
      t0 = time.perf_counter()
      fn()
      return time.perf_counter() - t0
    finally:
      if old is None: del os.environ["CACHEDB"]
      else: os.environ["CACHEDB"] = old

def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--json", action="store_true")
  ap.add_argument("--device", default="CPU")
  args = ap.parse_args()
  try: import torch
  except ImportError: torch = None
  dev, n = args.device, 1 << 24
  rng = np.random.default_rng(0)
  a, b, c = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
  ta, tb, tc = (Tensor(x, device=dev).realize() for x in (a, b, c))
  m1, m2 = rng.standard_normal((1024, 1024), dtype=np.float32), rng.standard_normal((1024, 1024), dtype=np.float32)
  tm1, tm2 = Tensor(m1, device=dev).realize(), Tensor(m2, device=dev).realize()
  x, w = rng.standard_normal((32, 32, 32, 32), dtype=np.float32), rng.standard_normal((64, 32, 3, 3), dtype=np.float32)
  tx, tw = Tensor(x, device=dev).realize(), Tensor(w, device=dev).realize()
  conv_flops = 2 * 32 * 64 * 30 * 30 * 32 * 9
  small = Tensor([1.0, 2.0], device=dev).realize()
  rows = []
  def row(name: str, t_tg: float, t_np: float | None, t_torch: float | None, work: float, unit: str) -> None:
    rows.append({"bench": name, "tg_s": t_tg, "numpy_s": t_np, "torch_s": t_torch, "tg_rate": work / t_tg, "unit": unit})
  row("tiny op overhead (x+1 realize)", best(lambda: (small + 1).realize(), 50), best(lambda: np.add(a[:2], 1), 50), None, 1e-6,
      "us^-1")
  row("a*b+c 16M f32", best(lambda: (ta * tb + tc).realize()), best(lambda: a * b + c),
      best(lambda: torch.from_numpy(a) * torch.from_numpy(b) + torch.from_numpy(c)) if torch else None, 16 * n / 1e9, "GB/s")
  row("sum 16M f32", best(lambda: ta.sum().realize()), best(lambda: a.sum()), best(lambda: torch.from_numpy(a).sum()) if torch else None,
      4 * n / 1e9, "GB/s")
  row("matmul 1024", best(lambda: (tm1 @ tm2).realize()), best(lambda: m1 @ m2),
      best(lambda: torch.from_numpy(m1) @ torch.from_numpy(m2)) if torch else None, 2 * 1024 ** 3 / 1e9, "GFLOP/s")
  row("conv2d 32x32->64 32x32 3x3", best(lambda: tx.conv2d(tw).realize(), 3), None,
      best(lambda: torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w)), 3) if torch else None, conv_flops / 1e9, "GFLOP/s")
  for f in ("rand", "randn"):  # threefry (and Box-Muller) of 1M float32, numpy's generator beside
    row(f"{f} 1M f32", best(lambda f=f: getattr(Tensor, f)(1 << 20, device=dev).realize()),
        best(lambda f=f: getattr(rng, {"rand": "random", "randn": "standard_normal"}[f])(1 << 20, dtype=np.float32)),
        best(lambda f=f: getattr(torch, f)(1 << 20)) if torch else None, 4 * (1 << 20) / 1e9, "GB/s")
  def torch_ln() -> object:
    x = torch.randn(20, 5, 10, 10, requires_grad=True)
    layer = torch.nn.LayerNorm([10, 10])
    layer(x).sum().backward()
    return x.grad
  ln = layernorm_step()
  row("layernorm fwd+bwd 20x5x10x10, cold", cold(ln), None, cold(torch_ln) if torch else None, 1, "calls/s")
  row("layernorm fwd+bwd 20x5x10x10", best(ln), None, best(torch_ln) if torch else None, 1, "calls/s")
  if args.json: print(json.dumps(rows, indent=1)); return
  print(f"{'bench':34} {'tg':>10} {'numpy':>10} {'torch':>10} {'tg rate':>12}")
  for r in rows:
    f = lambda v: f"{v * 1e3:8.3f}ms" if v is not None else f"{'-':>10}"  # noqa: E731
    rate = f"{r['tg_s'] * 1e6:.0f} us" if r["unit"] == "us^-1" else f"{r['tg_rate']:.2f} {r['unit']}"
    print(f"{r['bench']:34} {f(r['tg_s'])} {f(r['numpy_s'])} {f(r['torch_s'])} {rate:>12}")

if __name__ == "__main__": main()
