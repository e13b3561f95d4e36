"""Jitted training steps per second: Conv(1->16, 3x3) ReLU Conv(16->32, 3x3) ReLU Linear(->10), Adam, batch 128 of 1x16x16.
Printed beside PyTorch (CPU) when it is installed, each in a process of its own. Goal on the 2-core CI machine: >= 100
steps/s, and >= 1.25x PyTorch (issue #23). --cpu-time runs each system on one thread (own_process.ONE_THREAD) timed by
its CPU time: on a machine others load, wall time is mostly their load. Each figure is a system's best of --rounds
processes, the systems taking turns (see own_process.best_of_rounds)."""
import argparse, json, time
from own_process import ONE_THREAD, best_of_rounds, measure, require  # bench/own_process.py (this folder is on sys.path)
import numpy as np
from tg.tensor import Tensor, Device, Counters, nn
from tg.tensor.nn.optim import Adam
from tg.tensor.nn.state import get_parameters
from tg.tensor.jit import TinyJit

BS, STEPS, WARMUP = 128, 30, 3
CLOCK = time.perf_counter  # time.thread_time under --cpu-time

class Net:
  def __init__(self):
    self.c1, self.c2, self.fc = nn.Conv2d(1, 16, 3), nn.Conv2d(16, 32, 3), nn.Linear(32 * 12 * 12, 10)
  def __call__(self, x: Tensor) -> Tensor: return self.fc(self.c2(self.c1(x).relu()).relu().flatten(1))

def bench_tg(steps: int) -> dict[str, float]:
  model = Net()
  opt = Adam(get_parameters(model), lr=1e-3)
  @TinyJit
  @Tensor.train()
  def step(x: Tensor, y: Tensor) -> Tensor:
    opt.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y)
    loss.backward()
    opt.step()
    return loss
  rng = np.random.default_rng(0)
  xs = [Tensor(rng.random((BS, 1, 16, 16), np.float32)) for _ in range(2)]
  ys = [Tensor(rng.integers(0, 10, BS).astype(np.int32)) for _ in range(2)]
  for i in range(WARMUP): step(xs[i % 2], ys[i % 2]).item()
  Counters.reset()
  st = CLOCK()
  for i in range(steps): loss = step(xs[i % 2], ys[i % 2])
  loss.item()
  return {"steps_per_s": steps / (CLOCK() - st), "kernels_per_step": Counters.kernels // steps}

def bench_torch(steps: int) -> dict[str, float]:
  require("torch")
  import torch
  if CLOCK is time.thread_time: torch.set_num_threads(1)
  model = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3), torch.nn.ReLU(), torch.nn.Conv2d(16, 32, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(32 * 12 * 12, 10))
  opt = torch.optim.Adam(model.parameters(), lr=1e-3)
  x, y = torch.rand(BS, 1, 16, 16), torch.randint(0, 10, (BS,))
  def step() -> None:
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
  for _ in range(WARMUP): step()
  st = CLOCK()
  for _ in range(steps): step()
  return {"steps_per_s": steps / (CLOCK() - st)}

def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--steps", type=int, default=STEPS)
  ap.add_argument("--json", action="store_true")
  ap.add_argument("--cpu-time", action="store_true", help="one thread per system, timed by its CPU time (holds on a busy machine)")
  ap.add_argument("--rounds", type=int, default=3, help="each system's best of this many processes, the systems taking turns")
  ap.add_argument("--system", choices=("tg", "torch"), help=argparse.SUPPRESS)  # the child process measuring one system
  args = ap.parse_args()
  if args.system:
    global CLOCK
    if args.cpu_time: CLOCK = time.thread_time
    print(json.dumps({"tg": bench_tg, "torch": bench_torch}[args.system](args.steps)))
    return
  res = best_of_rounds({s: (lambda s=s: measure(__file__, ["--system", s, "--steps", str(args.steps)] + (["--cpu-time"] if args.cpu_time else []),
                                                env=ONE_THREAD if args.cpu_time else None)) for s in ("tg", "torch")}, args.rounds)
  tg, ref = res["tg"], res["torch"]
  sps, kernels, ref_sps = tg["steps_per_s"], tg["kernels_per_step"], ref and ref["steps_per_s"]
  if args.json:
    print(json.dumps({"tg_steps_per_s": sps, "kernels_per_step": kernels, "torch_steps_per_s": ref_sps, "goal": 100,
                      "mode": "cpu-time" if args.cpu_time else "wall"}))
    return
  print(f"{'':24s}{'steps/s':>10s}")
  print(f"{'tg (' + Device.DEFAULT + ', TinyJit)':24s}{sps:10.1f}   ({kernels} kernels per step; goal >= 100)")
  print(f"{'PyTorch (CPU)':24s}{ref_sps:10.1f}   (tg/PyTorch {sps / ref_sps:.2f}; goal >= 1.25)" if ref_sps
        else f"{'PyTorch (CPU)':24s}{'not installed':>10s}")

if __name__ == "__main__": main()
