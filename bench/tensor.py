"""tg.tensor benchmark: Python overhead of a tiny op, elementwise, reduce, matmul and conv2d through the Tensor API,
beside numpy (and PyTorch on CPU when it is importable). Prints a table; --json for machine-readable figures."""
from __future__ import annotations
import argparse, json, time
from typing import Callable
import numpy as np
from tg.tensor import Tensor

def best(fn: Callable[[], object], reps: int = 5) -> float:
  """Best wall time of fn in seconds (after one warm-up run that compiles)."""
  fn()
  times = []
  for _ in range(reps):
    t0 = time.perf_counter()
    fn()
    times.append(time.perf_counter() - t0)
  return min(times)

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
  if args.json: print(json.dumps(rows, indent=1)); return
  print(f"{'bench':34} {'tg':>10} {'numpy':>10} {'torch':>10} {'tg rate':>12}")
  for r in rows:
    f = lambda v: f"{v * 1e3:8.3f}ms" if v is not None else f"{'-':>10}"  # noqa: E731
    rate = f"{r['tg_s'] * 1e6:.0f} us" if r["unit"] == "us^-1" else f"{r['tg_rate']:.2f} {r['unit']}"
    print(f"{r['bench']:34} {f(r['tg_s'])} {f(r['numpy_s'])} {f(r['torch_s'])} {rate:>12}")

if __name__ == "__main__": main()
