"""tg.codegen on the CPU device beside numpy: a*b+c and a sum over 16M float32 (GB/s), a 1024x1024 matmul (GFLOP/s)
with the default heuristics and with BEAM, and the latency to compile and run a small kernel (cold and warm cache).

  uv run python bench/codegen.py [--json] [--beam N]"""
from __future__ import annotations
import argparse, json, os, tempfile, time
import numpy as np
from tg.uop import UOp, Ops, AxisType, KernelInfo, dtypes, Context
from tg.codegen.pipeline import get_program, CompiledRunner
from tg.codegen.device import Device, Buffer

N16M, MM = 16 * 1024 * 1024, 1024

def bufs_for(arrays: list[np.ndarray]) -> list[Buffer]:
  out = []
  for a in arrays:
    b = Buffer("CPU", a.size, dtypes.float32).allocate()
    b.copyin(memoryview(a.reshape(-1)).cast("B"))
    out.append(b)
  return out

def best_time(runner: CompiledRunner, bufs: list[Buffer], runs: int = 5) -> float:
  return min(runner(bufs, {}, wait=True) for _ in range(runs))  # type: ignore[type-var]

def best_np(fn, runs: int = 5) -> float:
  ts = []
  for _ in range(runs):
    t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
  return min(ts)

def elementwise_ast(n: int) -> UOp:
  out, a, b, c = (UOp.param(i, dtypes.float, (n,)) for i in range(4))
  i = UOp.range(n, 0)
  return out[i].store(a[i] * b[i] + c[i]).end(i).sink(arg=KernelInfo(name="mul_add"))

def sum_ast(n: int) -> UOp:
  out, a = UOp.param(0, dtypes.float, (1,)), UOp.param(1, dtypes.float, (n,))
  k = UOp.range(n, 0, AxisType.REDUCE)
  return out[0].store(a[k].reduce(k, arg=Ops.ADD)).sink(arg=KernelInfo(name="sum"))

def matmul_ast(n: int) -> UOp:
  C, A, B = (UOp.param(i, dtypes.float, (n, n)) for i in range(3))
  i, j, k = UOp.range(n, 0), UOp.range(n, 1), UOp.range(n, 2, AxisType.REDUCE)
  return C[i, j].store((A[i, k] * B[k, j]).reduce(k, arg=Ops.ADD)).end(i, j).sink(arg=KernelInfo(name="matmul"))

def run(beam: int) -> list[dict]:
  rng = np.random.default_rng(0)
  ren = Device["CPU"].renderer
  rows = []
  a, b, c = (rng.random(N16M, dtype=np.float32) for _ in range(3))
  r = CompiledRunner(get_program(elementwise_ast(N16M), ren))
  t = best_time(r, bufs_for([np.empty_like(a), a, b, c]))
  tn = best_np(lambda: np.add(np.multiply(a, b), c))
  rows.append({"bench": "a*b+c 16M f32", "unit": "GB/s", "tg": 16 * N16M / t / 1e9, "numpy": 16 * N16M / tn / 1e9, "goal": 25})
  r = CompiledRunner(get_program(sum_ast(N16M), ren))
  t = best_time(r, bufs_for([np.zeros(1, np.float32), a]))
  tn = best_np(lambda: a.sum())
  rows.append({"bench": "sum 16M f32", "unit": "GB/s", "tg": 4 * N16M / t / 1e9, "numpy": 4 * N16M / tn / 1e9, "goal": 20})
  x, y = rng.random((MM, MM), dtype=np.float32), rng.random((MM, MM), dtype=np.float32)
  mm_bufs = bufs_for([np.empty_like(x), x, y])
  tn = best_np(lambda: x @ y)
  flops = 2 * MM ** 3
  spec = get_program(matmul_ast(MM), ren)
  t = best_time(CompiledRunner(spec), mm_bufs)
  rows.append({"bench": f"matmul {MM} heuristics {list(spec.applied_opts)}", "unit": "GFLOP/s", "tg": flops / t / 1e9,
               "numpy": flops / tn / 1e9, "goal": 100})
  if beam:
    with Context(BEAM=beam):
      spec = get_program(matmul_ast(MM), ren)
    t = best_time(CompiledRunner(spec), mm_bufs)
    rows.append({"bench": f"matmul {MM} BEAM={beam} {list(spec.applied_opts)}", "unit": "GFLOP/s", "tg": flops / t / 1e9,
                 "numpy": flops / tn / 1e9, "goal": 100})
  # latency of a small kernel: lower + compile + run, with an empty compile cache and then a warm one
  small = elementwise_ast(1024)
  sb = bufs_for([np.zeros(1024, np.float32)] * 4)
  with tempfile.TemporaryDirectory() as d:
    os.environ["CACHEDB"] = os.path.join(d, "cache.db")
    for label in ("cold", "warm"):
      t0 = time.perf_counter()
      CompiledRunner(get_program(small, ren))(sb, {}, wait=True)
      rows.append({"bench": f"compile+run small kernel ({label} cache)", "unit": "ms", "tg": (time.perf_counter() - t0) * 1e3,
                   "numpy": None, "goal": None})
  return rows

if __name__ == "__main__":
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--json", action="store_true")
  ap.add_argument("--beam", type=int, default=2)
  args = ap.parse_args()
  results = run(args.beam)
  if args.json: print(json.dumps(results, indent=1))
  else:
    for row in results:
      ref = f"{row['numpy']:9.1f}" if row["numpy"] is not None else "        -"
      goal = f">= {row['goal']}" if row["goal"] is not None else ""
      print(f"{row['bench']:<72} tg {row['tg']:9.1f}  numpy {ref}  {row['unit']:<8} {goal}")
