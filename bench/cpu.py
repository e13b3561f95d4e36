"""CPU reductions at the memory limit and elementwise ops beside numpy (issue #23), in GB/s, for tg beside numpy, PyTorch
("not installed" when it isn't) and the limit: a plain streaming read in C (vector accumulators on every core, compiled by
tg.codegen.clib, run on tg's spinning thread pool: with a thread created per call it read 64 MB at 44 GB/s where PyTorch's
sum, on its OpenMP pool, reached 58). Reductions: sum, max, mean of 16M and 256M float32; min, prod, argmax, var, std and int32/half sums of
16M; row and column sums and maxes of 4096x4096. Their GB/s count the bytes read times the passes the op needs (var and
std read their input twice; argmax once, as numpy), so tg/limit says how close each pass is to the limit. Elementwise: x*y+z, where,
casts, exp/log/sin of 16M, GB/s read and written. Each system runs in a process of its own (one system's threads, memory
and frequency state must not change another's figures), the systems taking turns for --rounds rounds, each figure its best
round (the machine's memory bandwidth drifts by up to 2x over seconds). --json for machine-readable figures; --small skips the 256M
cases (1 GB each); --only NAME runs the cases whose name contains it; --cpu-time runs every system on one thread and times
its CPU time (wall time on a machine others use is mostly their load; one thread's CPU time mostly isn't)."""
from __future__ import annotations
import argparse, ctypes, json, os, time
from typing import Callable
import numpy as np
from tensor import best  # bench/tensor.py: best wall time after a warm-up run (this folder is on sys.path)
from own_process import best_of_rounds, measure, require

SYSTEMS = ("tg", "numpy", "torch", "limit")
REPS = 11

STREAM_C = """
typedef float tg_v16 __attribute__((vector_size(64), aligned(64)));
// part core_id of n_cores of a streaming read of a[1] floats at a[0], its sum to ((float*)a[2])[core_id]: the job ABI of
// tg's thread pool (tg.codegen.devices.cpu_pool), whose threads wait spinning as an OpenMP pool's do
void stream_part(const long long* a, int core_id, int n_cores) {
  const float* p = (const float*)a[0];
  long long chunk = (a[1] / n_cores) / 64 * 64;
  p += core_id * chunk;
  tg_v16 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
  for (long long i = 0; i + 64 <= chunk; i += 64) {
    s0 += *(const tg_v16*)(p + i); s1 += *(const tg_v16*)(p + i + 16);
    s2 += *(const tg_v16*)(p + i + 32); s3 += *(const tg_v16*)(p + i + 48);
  }
  tg_v16 s = (s0 + s1) + (s2 + s3);
  float t = 0;
  for (int k = 0; k < 16; k++) t += s[k];
  ((float*)a[2])[core_id] = t;
}
"""

# a case: (name, elements, dtype of the data, passes over it the op needs, what it computes); reductions are compared to
# the limit (their bytes read: elements x itemsize x passes), elementwise ops to numpy (bytes read and written)
REDUCE = [("sum", "float32", 1), ("max", "float32", 1), ("mean", "float32", 1)]
EXTRA = [("min", "float32", 1), ("prod", "float32", 1), ("argmax", "float32", 1), ("var", "float32", 2), ("std", "float32", 2),
         ("sum", "int32", 1), ("sum", "float16", 1)]
MATRIX = [("row sum", "sum", 1), ("col sum", "sum", 0), ("row max", "max", 1), ("col max", "max", 0)]
ELEMENTWISE = ["x*y+z", "where", "f32->f16", "f16->f32", "f32->i32", "i32->f32", "exp", "log", "sin"]
CAST = {"f32->f16": ("float32", "float16"), "f16->f32": ("float16", "float32"), "f32->i32": ("float32", "int32"), "i32->f32": ("int32", "float32")}
N16, N256 = 1 << 24, 1 << 28

def cases(small: bool) -> list[tuple[str, int, str, int]]:
  """(name, elements, dtype, passes): every row of the table."""
  sizes = [("16M", N16)] + ([] if small else [("256M", N256)])
  out = [(f"{op} {s}" + ("" if dt == "float32" else f" {dt}"), n, dt, p) for s, n in sizes for op, dt, p in REDUCE + (EXTRA if n == N16 else [])]
  out += [(f"{name} 4096x4096", N16, "float32", 1) for name, _, _ in MATRIX]
  return out + [(f"{name} 16M", N16, CAST[name][0] if name in CAST else "float32", 1) for name in ELEMENTWISE]

def op_of(name: str) -> str:
  """The op of a case: its name without the size and dtype."""
  return " ".join(w for w in name.split() if w[0] not in "0123456789" and w not in ("int32", "float16"))

def moved(name: str, n: int, dt: str, passes: int) -> int:
  """Bytes a case moves: what it reads (times its passes), and for an elementwise op also what it writes."""
  size, op = np.dtype(dt).itemsize, op_of(name)
  if op not in ELEMENTWISE: return n * size * passes
  if op in CAST: return n * (size + np.dtype(CAST[op][1]).itemsize)
  return n * 4 * {"x*y+z": 4, "where": 3}.get(op, 2) + (n if op == "where" else 0)  # where reads a bool mask too

def data(n: int, dt: str, op: str) -> np.ndarray:
  """Normal floats (uniform in [0.5, 2) for elementwise math, where log and sin take any), ints in [-1000, 1000)."""
  rng = np.random.default_rng(0)
  if dt == "int32": return rng.integers(-1000, 1000, n, dtype=np.int32)
  x = rng.uniform(0.5, 2.0, n).astype(np.float32) if op in ELEMENTWISE else rng.standard_normal(n, dtype=np.float32)
  return x.astype(dt)

def work(system: str, name: str, x: np.ndarray) -> Callable[[], object] | None:
  """The timed call of one case on one system (x: its data); None when the system has no such call."""
  op = op_of(name)
  if system == "limit":
    if op != "sum" or "4096" in name or x.dtype != np.float32: return None  # the limit: one streaming read per size
    from tg.codegen.clib import compile_c
    from tg.codegen.devices.clang import load_library
    from tg.codegen.devices.cpu import cpu_threads
    from tg.codegen.devices.cpu_pool import run_parallel
    job, sums = load_library(compile_c(STREAM_C)).stream_part, (ctypes.c_float * cpu_threads())()
    return lambda: run_parallel(job, [x.ctypes.data, x.size, ctypes.addressof(sums)], cpu_threads())
  if system == "torch":
    import torch
    if os.environ.get("CPU_THREADS") == "1": torch.set_num_threads(1)  # --cpu-time: one thread, as the others
    lib, t, cast = torch, torch.from_numpy(x), (lambda v, d: v.to(getattr(torch, d)))
    done = lambda v: v  # noqa: E731
  elif system == "numpy": lib, t, cast, done = np, x, (lambda v, d: v.astype(d)), (lambda v: v)
  else:
    from tg.tensor import Tensor
    lib, t, cast, done = None, Tensor(x).realize(), (lambda v, d: v.cast(d)), (lambda v: v.realize())
  y, z, c = t * 0.5, t + 1, t > 1  # the other operands of x*y+z and where (computed once, outside the timing)
  if system == "tg": y, z, c = y.realize(), z.realize(), c.realize()
  m = t.reshape(4096, 4096) if "4096" in name else t
  fns: dict[str, Callable[[], object]] = {
    **{row: (lambda meth=meth, ax=ax: getattr(m, meth)(ax)) for row, meth, ax in MATRIX},
    **{op: (lambda op=op: getattr(t, op)()) for op, _, _ in REDUCE + EXTRA},
    "x*y+z": lambda: t * y + z, **{k: (lambda k=k: cast(t, CAST[k][1])) for k in CAST},
    "where": lambda: (c.where(t, y) if lib is None else lib.where(c, t, y)),
    **{f: (lambda f=f: (getattr(t, f)() if lib is None else getattr(lib, f)(t))) for f in ("exp", "log", "sin")}}
  return lambda: done(fns[op]())

def worker(system: str, small: bool, only: str, cpu_time: bool) -> dict[str, float | None]:
  """GB/s of every case (whose name contains `only`) on one system (run in its own process)."""
  out: dict[str, float | None] = {}
  for name, n, dt, passes in cases(small):
    if only not in name: continue
    x = data(n, dt, op_of(name))  # one big array alive at a time
    fn = work(system, name, x)
    t = None if fn is None else best(fn, REPS, clock=time.thread_time if cpu_time else time.perf_counter)
    out[name] = None if t is None else moved(name, n, dt, passes) / t / 1e9
    del fn, x
  return out

def run_system(system: str, small: bool, only: str, cpu_time: bool) -> dict[str, float | None] | None:
  """The figures of one system from a fresh process (None: it is not installed)."""
  args = ["--worker", system, "--only", only] + (["--small"] if small else []) + (["--cpu-time"] if cpu_time else [])
  return measure(__file__, args, env={"CPU_THREADS": "1"} if cpu_time else None)

def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--json", action="store_true")
  ap.add_argument("--small", action="store_true", help="skip the 256M cases")
  ap.add_argument("--only", default="", help="only the cases whose name contains this")
  ap.add_argument("--cpu-time", action="store_true", help="one thread per system, timed by its CPU time (holds on a busy machine)")
  ap.add_argument("--rounds", type=int, default=3, help="each system's best of this many processes, the systems taking turns")
  ap.add_argument("--worker", choices=SYSTEMS, help=argparse.SUPPRESS)
  args = ap.parse_args()
  if args.worker:
    if args.worker == "torch": require("torch")
    print(json.dumps(worker(args.worker, args.small, args.only, args.cpu_time)))
    return
  res = best_of_rounds({s: (lambda s=s: run_system(s, args.small, "sum" if s == "limit" else args.only, args.cpu_time)) for s in SYSTEMS},
                       args.rounds)
  rows = []
  for name, n, _, _ in cases(args.small):
    if args.only not in name: continue
    fig = {s: (r.get(name) if isinstance(r, dict) else None) for s, r in res.items()}
    key = "sum 256M" if n == N256 else "sum 16M"
    limit = res["limit"].get(key) if isinstance(res["limit"], dict) and op_of(name) not in ELEMENTWISE else None
    ratio = lambda a, b: a / b if a and b else None  # noqa: E731
    rows.append({"case": name, **{f"{s}_GBps": fig[s] for s in SYSTEMS if s != "limit"}, "limit_GBps": limit,
                 "tg/numpy": ratio(fig["tg"], fig["numpy"]), "tg/torch": ratio(fig["tg"], fig["torch"]), "tg/limit": ratio(fig["tg"], limit)})
  if args.json: print(json.dumps({"rows": rows, "not_installed": [s for s, r in res.items() if r is None]}, indent=1)); return
  for s, r in res.items():
    if r is None: print(f"{s}: not installed")
  f = lambda v, w=9: f"{v:{w}.2f}" if v is not None else f"{'-':>{w}}"  # noqa: E731
  print(f"{'GB/s':22} {'tg':>9} {'numpy':>9} {'torch':>9} {'limit':>9} {'tg/numpy':>9} {'tg/torch':>9} {'tg/limit':>9}")
  for r in rows:
    print(f"{r['case']:22} {f(r['tg_GBps'])} {f(r['numpy_GBps'])} {f(r['torch_GBps'])} {f(r['limit_GBps'])} {f(r['tg/numpy'])} "
          f"{f(r['tg/torch'])} {f(r['tg/limit'])}")

if __name__ == "__main__": main()
