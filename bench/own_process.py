"""Each system's figures from a process of its own: measured in the same process as another, a system reads differently
(tinygrad's benchmark run first sped tg's matmul up; PyTorch run first slowed tg's training step down). A child prints
its figures as JSON on its last line, or exits with NOT_INSTALLED when its system can't be imported."""
from __future__ import annotations
import json, os, subprocess, sys

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
