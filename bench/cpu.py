"""CPU reductions at the memory limit (issue #23): sum, max and mean of 16M and 256M float32, and the row and column sums of
a 4096x4096 matrix, in GB/s read, for tg beside numpy, PyTorch ("not installed" when it isn't) and the limit: a plain
streaming read in C (vector accumulators on every core, compiled by tg.codegen.clib). Each system runs in a process of
its own (one system's threads, memory and frequency state must not change another's figures). Prints the ratios tg/PyTorch
and tg/limit; --json for machine-readable figures; --small skips the 256M cases (1 GB each)."""
from __future__ import annotations
import argparse, ctypes, json, os, subprocess, sys
from typing import Callable
import numpy as np
from tensor import best  # bench/tensor.py: best wall time after a warm-up run (this folder is on sys.path)

SYSTEMS = ("tg", "numpy", "torch", "limit")
REPS = 11

STREAM_C = """
#include <pthread.h>
typedef float tg_v16 __attribute__((vector_size(64), aligned(64)));
struct part { const float* p; long long n; float out; };
static void* read_part(void* arg) {
  struct part* j = arg;
  tg_v16 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
  for (long long i = 0; i + 64 <= j->n; i += 64) {
    s0 += *(const tg_v16*)(j->p + i); s1 += *(const tg_v16*)(j->p + i + 16);
    s2 += *(const tg_v16*)(j->p + i + 32); s3 += *(const tg_v16*)(j->p + i + 48);
  }
  tg_v16 s = (s0 + s1) + (s2 + s3);
  float t = 0;
  for (int k = 0; k < 16; k++) t += s[k];
  j->out = t;
  return 0;
}
float stream_read(const float* p, long long n, int threads) {
  pthread_t th[64]; struct part parts[64];
  long long chunk = (n / threads) / 64 * 64;
  for (int i = 0; i < threads; i++) { parts[i].p = p + i * chunk; parts[i].n = chunk; }
  for (int i = 1; i < threads; i++) pthread_create(&th[i], 0, read_part, &parts[i]);
  read_part(&parts[0]);
  float t = parts[0].out;
  for (int i = 1; i < threads; i++) { pthread_join(th[i], 0); t += parts[i].out; }
  return t;
}
"""

def cases(small: bool) -> list[tuple[str, int]]:
  """(name, floats read)."""
  sizes = [("16M", 1 << 24)] + ([] if small else [("256M", 1 << 28)])
  return [(f"{op} {s}", n) for s, n in sizes for op in ("sum", "max", "mean")] + [("row sum 4096x4096", 1 << 24), ("col sum 4096x4096", 1 << 24)]

def work(system: str, name: str, x: np.ndarray) -> Callable[[], object] | None:
  """The timed call of one case on one system (x: the float32 data); None when the system has no such call."""
  op, m = name.split()[0], x.reshape(4096, 4096) if "4096" in name else x
  if system == "numpy":
    return {"sum": lambda: x.sum(), "max": lambda: x.max(), "mean": lambda: x.mean(), "row": lambda: m.sum(1), "col": lambda: m.sum(0)}[op]
  if system == "torch":
    import torch
    tx, tm = torch.from_numpy(x), torch.from_numpy(m)
    return {"sum": lambda: tx.sum(), "max": lambda: tx.max(), "mean": lambda: tx.mean(), "row": lambda: tm.sum(1), "col": lambda: tm.sum(0)}[op]
  if system == "tg":
    from tg.tensor import Tensor
    t = Tensor(x).realize()
    tm2 = t.reshape(4096, 4096) if "4096" in name else t
    return {"sum": lambda: t.sum().realize(), "max": lambda: t.max().realize(), "mean": lambda: t.mean().realize(),
            "row": lambda: tm2.sum(1).realize(), "col": lambda: tm2.sum(0).realize()}[op]
  if op != "sum" or "4096" in name: return None  # the limit: one streaming read per size
  from tg.codegen.clib import compile_c
  from tg.codegen.devices.clang import load_library
  from tg.codegen.devices.cpu import cpu_threads
  fn = load_library(compile_c(STREAM_C)).stream_read
  fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_void_p, ctypes.c_longlong, ctypes.c_int]
  return lambda: fn(x.ctypes.data, x.size, cpu_threads())

def worker(system: str, small: bool) -> dict[str, float | None]:
  """GB/s of every case on one system (run in its own process)."""
  out: dict[str, float | None] = {}
  data: dict[int, np.ndarray] = {}
  for name, n in cases(small):
    if n not in data: data = {n: np.random.default_rng(0).standard_normal(n, dtype=np.float32)}  # one big array alive at a time
    fn = work(system, name, data[n])
    out[name] = None if fn is None else 4 * n / best(fn, REPS) / 1e9
  return out

def run_system(system: str, small: bool) -> dict[str, float | None] | str:
  """The figures of one system from a fresh process, or why there are none."""
  if system == "torch":
    probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True)
    if probe.returncode != 0: return "not installed"
  args = [sys.executable, __file__, "--worker", system] + (["--small"] if small else [])
  r = subprocess.run(args, capture_output=True, text=True, env=os.environ.copy())
  if r.returncode != 0: return f"failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}"
  return json.loads(r.stdout.strip().splitlines()[-1])

def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--json", action="store_true")
  ap.add_argument("--small", action="store_true", help="skip the 256M cases")
  ap.add_argument("--worker", choices=SYSTEMS, help=argparse.SUPPRESS)
  args = ap.parse_args()
  if args.worker: print(json.dumps(worker(args.worker, args.small))); return
  res = {s: run_system(s, args.small) for s in SYSTEMS}
  rows = []
  for name, _ in cases(args.small):
    fig = {s: (r.get(name) if isinstance(r, dict) else None) for s, r in res.items()}
    size = name.split()[1]
    limit = next((r[k] for k in (f"sum {size}", "sum 16M") if isinstance(r := res["limit"], dict) and r.get(k)), None)
    rows.append({"case": name, **{f"{s}_GBps": fig[s] for s in SYSTEMS if s != "limit"}, "limit_GBps": limit,
                 "tg/torch": fig["tg"] / fig["torch"] if fig["tg"] and fig["torch"] else None,
                 "tg/limit": fig["tg"] / limit if fig["tg"] and limit else None})
  if args.json: print(json.dumps({"rows": rows, "status": {s: r for s, r in res.items() if isinstance(r, str)}}, indent=1)); return
  for s, r in res.items():
    if isinstance(r, str): print(f"{s}: {r}")
  f = lambda v, w=9: f"{v:{w}.2f}" if v is not None else f"{'-':>{w}}"  # noqa: E731
  print(f"{'GB/s read':20} {'tg':>9} {'numpy':>9} {'torch':>9} {'limit':>9} {'tg/torch':>9} {'tg/limit':>9}")
  for r in rows:
    print(f"{r['case']:20} {f(r['tg_GBps'])} {f(r['numpy_GBps'])} {f(r['torch_GBps'])} {f(r['limit_GBps'])} {f(r['tg/torch'])} {f(r['tg/limit'])}")

if __name__ == "__main__": main()
