"""graph_rewrite throughput: UOps rewritten per second on index math and on 100,000-node chains, with the compiled
pattern matchers (the default) beside the interpreted ones (UPAT_INTERPRET=1), in one run. Each figure is the best of
--runs runs, each on a freshly built graph after a gc.collect, the interpreted and compiled runs taking turns. Time is
the process's CPU time: on a machine shared with other work, wall time mostly measures the neighbours.

  uv run python bench/uop.py           a table
  uv run python bench/uop.py --json    the same figures as JSON
"""
from __future__ import annotations
import argparse, gc, json, math, random, time
from typing import Callable
from tg.uop import Context, Ops, PatternMatcher, UOp, UPat, graph_rewrite

CHAIN = 100_000

def random_index_graph(rng: random.Random, n_ops: int) -> UOp:
  """A SINK over random expressions of bounded index variables and ranges, built from `n_ops` random operations."""
  leaves = [UOp.variable(f"v{i}", 0, rng.randint(1, 64)) for i in range(8)] + [UOp.range(rng.randint(1, 32), i) for i in range(4)]
  pool = list(leaves)
  for _ in range(n_ops):
    a, b, c = rng.choice(pool[-50:]), rng.choice(pool), rng.randint(1, 16)
    op = rng.choice(["add", "mul", "div", "mod", "addc", "lt"])
    if op == "add": e = a + b
    elif op == "mul": e = a * c
    elif op == "div": e = a // c
    elif op == "mod": e = a % c
    elif op == "addc": e = a + c
    else: e = (a < b).where(a, b + c)
    pool.append(e)
  return UOp.sink(*pool[-100:])

def add_chain(n: int) -> UOp:
  u = UOp.variable("x", 0, 10)
  for _ in range(n): u = u + 1
  return u

def sum_chain(n: int) -> UOp:
  """x0 + x1 + ... over distinct variables: nothing folds, so simplify visits every node and keeps it."""
  u = UOp.variable("x0", 0, 10)
  for i in range(1, n): u = u + UOp.variable(f"x{i}", 0, 10)
  return u

one_to_two = PatternMatcher([(UPat(Ops.CONST, arg=1, name="c"), lambda c: c.const_like(2))])
never = PatternMatcher([(UPat(Ops.MUL, src=(UPat.var("x"), UPat.cvar("c"))), lambda x, c: None)])

def timed(name: str, build: Callable[[], UOp], work: Callable[[UOp], UOp], check: Callable[[UOp], bool]) -> tuple[int, float]:
  # collect first: the graphs of the run before are cycles (a cached toposort refers back to its root), and while they
  # live, hash-consing hands `build` their nodes with vmin/vmax and shapes already cached
  gc.collect()
  g = build()
  n = len(g.toposort())
  gc.collect()  # the garbage of building is not the timed run's to collect
  t0 = time.process_time()
  out = work(g)
  dt = time.process_time() - t0
  if not check(out): raise AssertionError(f"{name}: wrong result, a {out.op} of {len(out.toposort())} UOps")
  return n, dt

def run(name: str, build: Callable[[], UOp], work: Callable[[UOp], UOp], check: Callable[[UOp], bool], runs: int) -> dict:
  """The best of `runs` timings of each matcher, interpreted and compiled runs taking turns."""
  di = dt = math.inf
  for _ in range(runs):
    with Context(UPAT_INTERPRET=1): di = min(di, timed(name, build, work, check)[1])
    n, t = timed(name, build, work, check)
    dt = min(dt, t)
  return {"case": name, "uops": n, "seconds": dt, "uops_per_s": n / dt, "us_per_uop": dt / n * 1e6,
          "interpreted_us_per_uop": di / n * 1e6, "speedup": di / dt}

def cases(rng: random.Random, runs: int) -> list[dict]:
  seed = rng.random()
  return [
    run("simplify random index graph", lambda: random_index_graph(random.Random(seed), CHAIN // 10 * 3), lambda g: g.simplify(),
        lambda out: out.op is Ops.SINK, runs),
    run("simplify x+1+1+... (100k)", lambda: add_chain(CHAIN), lambda g: g.simplify(),
        lambda out: out.op is Ops.ADD and out.src[1].arg == CHAIN, runs),
    run("simplify x0+x1+... (100k)", lambda: sum_chain(CHAIN), lambda g: g.simplify(),
        lambda out: sum(u.op is Ops.DEFINE_VAR for u in out.toposort()) == CHAIN and {u.op for u in out.toposort()} == {Ops.ADD, Ops.DEFINE_VAR},
        runs),
    run("rewrite chain: const 1 -> 2 (100k)", lambda: add_chain(CHAIN), lambda g: graph_rewrite(g, one_to_two),
        lambda out: out.src[1].arg == 2 and len(out.toposort()) == CHAIN + 2, runs),
    run("rewrite chain: no match (100k)", lambda: add_chain(CHAIN), lambda g: graph_rewrite(g, never), lambda out: len(out.toposort()) == CHAIN + 2,
        runs),
    run("rewrite chain bottom_up: const 1 -> 2 (100k)", lambda: add_chain(CHAIN), lambda g: graph_rewrite(g, one_to_two, bottom_up=True),
        lambda out: out.src[1].arg == 2, runs),
  ]

def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--runs", type=int, default=3, help="runs per case and matcher; the best counts")
  args = ap.parse_args()
  if args.runs < 1: ap.error("--runs must be at least 1")
  rows = cases(random.Random(args.seed), args.runs)
  if args.json: print(json.dumps(rows, indent=2)); return
  print(f"{'case':<46}{'uops':>9}{'seconds':>10}{'uops/s':>12}{'us/uop':>9}{'interp us/uop':>15}{'speedup':>9}")
  for r in rows: print(f"{r['case']:<46}{r['uops']:>9}{r['seconds']:>10.3f}{r['uops_per_s']:>12,.0f}{r['us_per_uop']:>9.1f}"
                       f"{r['interpreted_us_per_uop']:>15.1f}{r['speedup']:>8.2f}x")

if __name__ == "__main__": main()
