"""Attention benchmark: scaled_dot_product_attention's forward and forward+backward time through flash attention's
kernels and through the full score matrix (FLASH_ATTENTION=0), for N = 256 ... 4096 keys and queries (B=1, H=8, D=64,
float32), beside PyTorch's scaled_dot_product_attention when it is installed. Prints a table; --json for the figures."""
from __future__ import annotations
import argparse, json
import numpy as np
from tg.uop import Context
from tg.tensor import Tensor
from tensor import best  # bench/tensor.py: best wall time after a warm-up run (this folder is on sys.path)

def tg_times(arrays: list[np.ndarray], flash: int, causal: bool, device: str, reps: int) -> tuple[float, float]:
  q, k, v, g = (Tensor(a, device=device, requires_grad=True).realize() for a in arrays)
  def fwd() -> None:
    with Context(FLASH_ATTENTION=flash): q.scaled_dot_product_attention(k, v, is_causal=causal).realize()
  def fwd_bwd() -> None:
    q.grad = k.grad = v.grad = None
    with Context(FLASH_ATTENTION=flash):
      (q.scaled_dot_product_attention(k, v, is_causal=causal) * g.detach()).sum().backward()
      Tensor.realize(q.grad, k.grad, v.grad)  # type: ignore[arg-type]
  return best(fwd, reps), best(fwd_bwd, reps)

def torch_times(arrays: list[np.ndarray], causal: bool, reps: int) -> tuple[float, float] | None:
  try: import torch
  except ImportError: return None
  q, k, v, g = (torch.from_numpy(a).requires_grad_() for a in arrays)
  sdpa = torch.nn.functional.scaled_dot_product_attention
  def fwd_bwd() -> None:
    q.grad = k.grad = v.grad = None
    (sdpa(q, k, v, is_causal=causal) * g).sum().backward()
  with torch.no_grad(): t_fwd = best(lambda: sdpa(q, k, v, is_causal=causal), reps)
  return t_fwd, best(fwd_bwd, reps)

def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--json", action="store_true")
  ap.add_argument("--device", default="CPU")
  ap.add_argument("--sizes", default="256,512,1024,2048,4096", help="sequence lengths N, comma-separated")
  ap.add_argument("--naive-max", type=int, default=2048, help="largest N for the full score matrix (its memory grows as N^2)")
  ap.add_argument("--causal", action="store_true")
  ap.add_argument("--reps", type=int, default=3)
  args = ap.parse_args()
  rng = np.random.default_rng(0)
  rows = []
  for n in (int(s) for s in args.sizes.split(",")):
    arrays = [rng.standard_normal((1, 8, n, 64), dtype=np.float32) for _ in range(4)]
    reps = max(1, args.reps if n <= 1024 else args.reps // 2)
    flash = tg_times(arrays, 1, args.causal, args.device, reps)
    naive = tg_times(arrays, 0, args.causal, args.device, reps) if n <= args.naive_max else None
    torch_t = torch_times(arrays, args.causal, reps)
    flops = 4 * 8 * n * n * 64 / (2 if args.causal else 1)
    rows.append({"n": n, "flash_fwd_s": flash[0], "flash_fwd_bwd_s": flash[1], "naive_fwd_s": naive and naive[0],
                 "naive_fwd_bwd_s": naive and naive[1], "torch_fwd_s": torch_t and torch_t[0], "torch_fwd_bwd_s": torch_t and torch_t[1],
                 "flash_fwd_gflops": flops / flash[0] / 1e9})
  if args.json: print(json.dumps(rows, indent=1)); return
  def f(v: float | None, why: str) -> str: return f"{v * 1e3:9.1f}ms" if v is not None else f"{why:>11}"
  print(f"attention B=1 H=8 D=64 float32{' causal' if args.causal else ''} on {args.device}: forward | forward+backward"
        f"{'' if rows and rows[0]['torch_fwd_s'] is not None else ' (PyTorch not installed)'}")
  print(f"{'N':>5} {'flash':>11} {'naive':>11} {'torch':>11} | {'flash':>11} {'naive':>11} {'torch':>11} {'flash fwd':>14}")
  for r in rows:
    print(f"{r['n']:>5} {f(r['flash_fwd_s'], '-')} {f(r['naive_fwd_s'], 'skipped')} {f(r['torch_fwd_s'], 'not inst.')} | "
          f"{f(r['flash_fwd_bwd_s'], '-')} {f(r['naive_fwd_bwd_s'], 'skipped')} {f(r['torch_fwd_bwd_s'], 'not inst.')} "
          f"{r['flash_fwd_gflops']:8.2f} GFLOP/s")

if __name__ == "__main__": main()
