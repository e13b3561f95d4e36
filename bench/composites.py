"""Composite expressions against numpy, each system in its own process: what the scheduler fuses and the heuristics tile
when ops meet (a matmul summed again, a cat of matmuls, a scan of one). A fusion that goes wrong runs 10-100x slower
than the same ops one at a time, so tg/numpy is printed for each and `<<<` marks one over SLOW. tg runs jitted (TinyJit),
so its figures are the kernels'. --json for the figures (seconds); --only to run the cases whose name contains it."""
from __future__ import annotations
import argparse, json, sys
from typing import Any, Callable
import numpy as np
from tensor import best  # bench/tensor.py (this folder is on sys.path)
from own_process import measure

SLOW = 3.0  # tg/numpy over this is marked
SHAPES = {"x": (512, 256), "w": (256, 256), "v": (256, 256), "y": (512, 256)}

# name -> f(x, w, v, y, lib): the same expression for both systems (lib: tg's Tensor class or numpy)
CASES: dict[str, Callable[..., Any]] = {
  "x@w + y@v": lambda x, w, v, y, lib: x @ w + y @ v,
  "(x@w)@v": lambda x, w, v, y, lib: (x @ w) @ v,
  "(x@w).sum(0)": lambda x, w, v, y, lib: (x @ w).sum(0),
  "(x@w).max(1)": lambda x, w, v, y, lib: (x @ w).max(1),
  "x@w * (y@v).sum(1)": lambda x, w, v, y, lib: (x @ w) * (y @ v).sum(1, **({"keepdims": True} if lib is np else {"keepdim": True})),
  "cat(x@w, y@v)": lambda x, w, v, y, lib: np.concatenate([x @ w, y @ v], 1) if lib is np else lib.cat(x @ w, y @ v, dim=1),
  "stack(x@w, y@v)": lambda x, w, v, y, lib: lib.stack([x @ w, y @ v]) if lib is np else lib.stack(x @ w, y @ v),
  "cumsum(x@w, 0)": lambda x, w, v, y, lib: np.cumsum(x @ w, 0) if lib is np else (x @ w).cumsum(0),
  "cumsum(x, 1)": lambda x, w, v, y, lib: np.cumsum(x, 1) if lib is np else x.cumsum(1),
  "(x@w).T contiguous": lambda x, w, v, y, lib: np.ascontiguousarray((x @ w).T) if lib is np else (x @ w).T.contiguous(),
  "x.T@y": lambda x, w, v, y, lib: x.T @ y,
  "relu(x@w)@v": lambda x, w, v, y, lib: np.maximum(x @ w, 0) @ v if lib is np else (x @ w).relu() @ v,
}

def worker(system: str, only: str) -> dict[str, float]:
  """Seconds of each case on one system."""
  rng = np.random.default_rng(0)
  arrays = {k: rng.standard_normal(s, dtype=np.float32) for k, s in SHAPES.items()}
  out = {}
  if system == "numpy":
    for name, f in CASES.items():
      if only in name: out[name] = best(lambda f=f: f(*arrays.values(), np), reps=10)
    return out
  from tg.tensor import Tensor
  from tg.tensor.jit import TinyJit
  ts = [Tensor(a).realize() for a in arrays.values()]
  for name, f in CASES.items():
    if only not in name: continue
    step = TinyJit(lambda *a, f=f: f(*a, Tensor).realize())
    got = [step(*ts) for _ in range(3)][-1].numpy()
    np.testing.assert_allclose(got, f(*arrays.values(), np), rtol=2e-3, atol=2e-2, err_msg=name)  # a fast wrong answer is no figure
    out[name] = best(lambda step=step: step(*ts), reps=10)
  return out

def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--json", action="store_true")
  ap.add_argument("--only", default="")
  ap.add_argument("--system", choices=("tg", "numpy"), help=argparse.SUPPRESS)  # the child process measuring one system
  args = ap.parse_args()
  if args.system:
    print(json.dumps(worker(args.system, args.only)))
    return
  res = {s: measure(__file__, ["--system", s, "--only", args.only]) or {} for s in ("tg", "numpy")}
  if args.json: print(json.dumps(res, indent=1)); return
  print(f"{'ms':24} {'tg':>9} {'numpy':>9} {'tg/numpy':>9}")
  for name, t in res["tg"].items():
    n = res["numpy"].get(name)
    ratio = t / n if n else float("nan")
    print(f"{name:24} {t * 1e3:9.3f} {n * 1e3 if n else float('nan'):9.3f} {ratio:9.2f}{'  <<<' if ratio > SLOW else ''}")

if __name__ == "__main__":
  sys.exit(main())
