"""Each system's figures from a process of its own: measured in the same process as another, a system reads differently
(tinygrad's benchmark run first sped tg's matmul up; PyTorch run first slowed tg's training step down). A child prints
its figures as JSON on its last line, or exits with NOT_INSTALLED when its system can't be imported."""
from __future__ import annotations
import json, os, subprocess, sys
from typing import Callable

NOT_INSTALLED = 3
# --cpu-time's environment: every system on one thread, so its CPU time (time.thread_time) is its whole cost
ONE_THREAD = {v: "1" for v in ("CPU_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}

def require(module: str) -> None:
  """In a child: exit with NOT_INSTALLED unless `module` imports."""
  try: __import__(module)
  except ImportError: sys.exit(NOT_INSTALLED)

def measure(script: str, args: list[str], env: dict[str, str] | None = None) -> dict | None:
  """Run `script args` in a fresh interpreter and return the JSON it printed last (None: its system is not installed)."""
  r = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})
  if r.returncode == NOT_INSTALLED: return None
  if r.returncode != 0: raise RuntimeError(f"{os.path.basename(script)} {' '.join(args)} failed:\n{r.stderr[-3000:]}")
  return json.loads(r.stdout.splitlines()[-1])

def best_of_rounds(runs: dict[str, Callable[[], dict | None]], rounds: int, best: Callable[..., float] = max) -> dict[str, dict | None]:
  """Each system's figures as the best (`best`: max for rates, min for times) of `rounds` fresh processes, the systems
  taking turns: this machine's memory bandwidth drifts by up to 2x over seconds, so systems measured one after another
  would be measured on different machines. A figure of None (no such case) stays None; a system not installed is None."""
  out: dict[str, dict | None] = {}
  for _ in range(rounds):
    for system, run in runs.items():
      if system in out and out[system] is None: continue  # not installed
      fig = run()
      prev = out.get(system) or {}
      out[system] = None if fig is None else {k: best((v for v in (prev.get(k), x) if v is not None), default=None) for k, x in fig.items()}
  return out
