"""TinyJit launch cost: a replay of a jitted chain of 64 tiny kernels (16 floats each, so the time is the launching), with
the kernels batched into one launch (the default where the device can) beside launched one by one (batch=False); and
a whole call of a jitted function of one tiny kernel, f(a, b), beside that kernel's share of the batched chain: what
a call costs around its kernels (checking the inputs, swapping in their buffers, returning the output)."""
import argparse, json, time
import numpy as np
from tg.tensor import Tensor, Device
from tg.tensor.jit import TinyJit

KERNELS, REPLAYS = 64, 200

def us_per_call() -> float:
  """Best time of a call of a jitted one-kernel function."""
  jf = TinyJit(lambda a, b: (a + b).realize())
  a, b = Tensor(np.ones(16, np.float32)).realize(), Tensor(np.ones(16, np.float32)).realize()
  for _ in range(3): jf(a, b)
  best = float("inf")
  for _ in range(5):
    st = time.perf_counter()
    for _ in range(REPLAYS): jf(a, b)
    best = min(best, (time.perf_counter() - st) / REPLAYS)
  return best * 1e6

def us_per_kernel(batch: bool) -> float:
  def chain(a: Tensor, b: Tensor) -> Tensor:
    for _ in range(KERNELS): a = (a + b).realize()
    return a
  jf = TinyJit(chain, batch=batch)
  a, b = Tensor(np.ones(16, np.float32)).realize(), Tensor(np.ones(16, np.float32)).realize()
  for _ in range(3): jf(a, b)
  best = float("inf")
  for _ in range(5):
    st = time.perf_counter()
    for _ in range(REPLAYS // 5): jf(a, b)
    best = min(best, (time.perf_counter() - st) / (REPLAYS // 5))
  return best / KERNELS * 1e6

if __name__ == "__main__":
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--json", action="store_true")
  args = ap.parse_args()
  batched, single, call = us_per_kernel(True), us_per_kernel(False), us_per_call()
  if args.json:
    print(json.dumps({"batched_us_per_kernel": batched, "one_by_one_us_per_kernel": single, "one_kernel_call_us": call, "device": Device.DEFAULT}))
  else:
    print(f"{'jitted replay, ' + Device.DEFAULT:28s}{'us per kernel':>14}")
    print(f"{'batched (one launch)':28s}{batched:14.2f}")
    print(f"{'one by one':28s}{single:14.2f}")
    print(f"{'a one-kernel call':28s}{call:14.2f}   (its kernel batched: {batched:.2f})")
