"""Multi-device: allreduce bandwidth on two CPU devices (CPU:0, CPU:1) for 1-256 MB per device beside a plain memcpy (numpy
copyto) of the same bytes (goal: >= 50% of memcpy from 16 MB up): the one-kernel allreduce (RING=3, the default on devices
of one host memory), the ring (RING=2) and the naive one (RING=0), which copy between the devices; and data-parallel
training of the digits CNN (examples/train_digits.py's model, jitted Adam steps, a fresh batch sharded every step) on two
devices beside one, in steps/s (their steps in turn, the median step).
Bandwidth is the bytes of one device's tensor over the time of the jitted allreduce (best of several replays)."""
import argparse, json, sys, time
from typing import Callable
from pathlib import Path
import numpy as np
from tg.tensor import Tensor, Context
from tg.codegen.device import Device
from tg.tensor.jit import TinyJit
from tg.tensor.nn.optim import Adam
from tg.tensor.nn.state import get_parameters

DEVS = ("CPU:0", "CPU:1")
KINDS = {"one kernel": 3, "ring": 2, "naive": 0}  # RING values

def best_of(fn, reps: int) -> float:
  best = float("inf")
  for _ in range(reps):
    st = time.perf_counter()
    fn()
    best = min(best, time.perf_counter() - st)
  return best

def memcpy_s(nbytes: int, reps: int) -> float:
  """numpy's copy between two buffers of one of the devices: memory from the same allocator as the allreduce's (numpy's own
  arrays get huge pages by their own rule), touched before the timing as the jitted allreduce's buffers are."""
  src, dst = (Tensor.ones(nbytes // 4, device=DEVS[0]).contiguous().realize() for _ in range(2))
  a, b = (np.frombuffer(Device[DEVS[0]].allocator.host_view(t._buffer()._buf), np.float32) for t in (src, dst))
  return best_of(lambda: np.copyto(b, a), reps)

def allreduce_s(nbytes: int, ring: int, reps: int) -> float:
  n = nbytes // 4
  x = Tensor.ones(len(DEVS), n).contiguous().shard(DEVS, axis=0).realize()
  with Context(RING=ring):
    step = TinyJit(lambda t: t.sum(0))
    for _ in range(3): step(x)  # run, capture, first replay
    return best_of(lambda: step(x).realize(), reps)

def trainer(devices: int, batch: int) -> Callable[[], None]:
  """One jitted Adam step of the digits CNN on a fresh batch (sharded over the first `devices` of DEVS when more than one)."""
  sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
  from train_digits import Net
  Tensor.manual_seed(0)
  model = Net(8)
  devs = DEVS[:devices] if devices > 1 else None
  if devs:
    for p in get_parameters(model): p.to_(devs)
  opt = Adam(get_parameters(model), lr=1e-2)
  @TinyJit
  def step(x: Tensor, y: Tensor) -> Tensor:
    with Tensor.train():
      opt.zero_grad()
      loss = model(x).sparse_categorical_crossentropy(y).backward()
      opt.step()
      return loss
  rng = np.random.default_rng(0)
  def one() -> None:
    x, y = Tensor(rng.random((batch, 1, 8, 8), np.float32)), Tensor(rng.integers(0, 10, batch).astype(np.int32))
    step(*((x.shard(devs, axis=0), y.shard(devs, axis=0)) if devs else (x, y))).item()
  for _ in range(3): one()  # run, capture, first replay
  return one

def train_steps_per_s(steps: int, batch: int) -> dict[str, float]:
  """Steps/s of one device and of two, their steps taken in turn (so both see the same load on a shared machine), from
  the median step time."""
  runs = {"one_device_steps_per_s": trainer(1, batch), "two_devices_steps_per_s": trainer(2, batch)}
  times: dict[str, list[float]] = {k: [] for k in runs}
  for _ in range(steps):
    for k, fn in runs.items(): times[k].append(best_of(fn, 1))
  return {k: 1 / float(np.median(t)) for k, t in times.items()}

if __name__ == "__main__":
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--json", action="store_true")
  ap.add_argument("--max-mb", type=int, default=256)
  ap.add_argument("--reps", type=int, default=20)  # best of: on a busy machine a few replays may all be interrupted
  ap.add_argument("--steps", type=int, default=100)
  ap.add_argument("--batch", type=int, default=64)
  args = ap.parse_args()
  rows = []
  mb = 1
  while mb <= args.max_mb:
    nbytes = mb << 20
    ref = memcpy_s(nbytes, args.reps)
    times = {kind: allreduce_s(nbytes, ring, args.reps) for kind, ring in KINDS.items()}
    rows.append({"MB": mb, "memcpy_GBps": nbytes / ref / 1e9, **{f"{k}_GBps": nbytes / t / 1e9 for k, t in times.items()}})
    mb *= 4
  train = train_steps_per_s(args.steps, args.batch)
  if args.json: print(json.dumps({"allreduce": rows, "train": train, "devices": DEVS}))
  else:
    print(f"allreduce of one device's tensor over {', '.join(DEVS)}, GB/s (and % of memcpy)")
    print(f"{'MB':>6}{'memcpy':>10}" + "".join(f"{k:>16}" for k in KINDS))
    for r in rows:
      m = r["memcpy_GBps"]
      print(f"{r['MB']:6d}{m:10.2f}" + "".join(f"{r[f'{k}_GBps']:10.2f} ({r[f'{k}_GBps'] / m:4.0%})" for k in KINDS))
    print(f"digits CNN, batch {args.batch}, jitted Adam steps: one device {train['one_device_steps_per_s']:.1f} steps/s, "
          f"two devices (data parallel) {train['two_devices_steps_per_s']:.1f} steps/s")
