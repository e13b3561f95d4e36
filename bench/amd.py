"""AMD on the virtual GPU (MOCKGPU=1): host-side dispatch overhead of an empty kernel (us per launch), end-to-end time of a
small Tensor program beside the CPU device, and a jitted step of several kernels replayed through the HCQ graph (one
submission per replay) beside the same step unbatched (one submission per kernel), and a half matmul on WMMA (the TC opt)
beside the same matmul without it (USE_TC=0): wave-instructions the virtual GPU ran and wall time per matmul, on gfx1100
and gfx1200 (the emulator's wall time is not the GPU's; the instruction count is the fairer figure). `--json` prints the
figures as JSON."""
import json, math, os, sys, time
os.environ.setdefault("MOCKGPU", "1")
os.environ.setdefault("MOCKGPU_ARCH", "rdna3,rdna4")
import numpy as np
from tg.codegen.device import Device, GlobalCounters
from tg.amd.device import AMDProgram
from tg.amd_emu import rdna3
from tg.amd_emu.codeobj import KernelDescriptor, write
from tg.tensor import Tensor, TinyJit
from tg.uop import Context

def empty_launch_us(n: int = 200) -> float:
  dev = Device["AMD"]
  prg = AMDProgram(dev, "empty", write("empty", rdna3.s_endpgm().to_bytes(), "rdna3", KernelDescriptor(rsrc1=0x41, rsrc2=2 << 1)))
  prg(wait=True)
  st = time.perf_counter()
  for _ in range(n): prg()
  dev.synchronize()
  return (time.perf_counter() - st) / n * 1e6

def program_ms(device: str, reps: int = 3) -> float:
  a, b = np.random.default_rng(0).uniform(-1, 1, (2, 16, 16)).astype(np.float32)
  def run() -> None: ((Tensor(a, device=device) @ Tensor(b, device=device)).relu().sum(axis=1)).numpy()
  run()
  st = time.perf_counter()
  for _ in range(reps): run()
  return (time.perf_counter() - st) / reps * 1e3

def jit_step(batch: bool, reps: int = 10) -> tuple[float, float]:
  """(submissions per replay, us per kernel, best of 3 runs) of a jitted step of 6 small elementwise kernels, inputs and outputs
  staying on the GPU: small, so that the host's share (launch path vs one graph submission) shows beside the emulation."""
  def f(x: Tensor) -> Tensor:
    for _ in range(6): x = (x * 1.01 + 0.5).relu().realize()
    return x
  step, dev = TinyJit(f, batch=batch), Device["AMD"]
  xs = [Tensor(np.random.default_rng(i).uniform(-1, 1, 32).astype(np.float32), device="AMD").realize() for i in range(3)]
  for x in xs * 2: step(x)
  best, subs = float("inf"), 0.0
  for _ in range(3):
    dev.synchronize()
    s0, k0, st = dev.submissions, GlobalCounters.kernel_count, time.perf_counter()
    for i in range(reps): step(xs[i % 3])
    dev.synchronize()
    best = min(best, (time.perf_counter() - st) / (GlobalCounters.kernel_count - k0) * 1e6)
    subs = (dev.submissions - s0) / reps
  return subs, best

def half_matmul(dev: str, tc: bool, n: int = 64, reps: int = 3) -> tuple[float, float]:
  """(wave-instructions, ms) per n x n x n half matmul on `dev`, with WMMA or without (USE_TC=0), the inputs on the GPU. Only the
  virtual GPU counts instructions (nan on a real one)."""
  rng = np.random.default_rng(0)
  a, b = (Tensor(rng.standard_normal((n, n)).astype(np.float16), device=dev).realize() for _ in range(2))
  d = Device[dev]
  with Context(USE_TC=int(tc)):
    (a @ b).realize()  # compile; the emulator swaps its quick builds for optimized ones in the background
    d.synchronize()
    executed, st = getattr(d.kfd.kfd, "executed", math.nan), time.perf_counter()
    for _ in range(reps): (a @ b).realize()
    d.synchronize()
  return (getattr(d.kfd.kfd, "executed", math.nan) - executed) / reps, (time.perf_counter() - st) / reps * 1e3

if __name__ == "__main__":
  figs = {"empty_kernel_launch_us (AMD mock)": empty_launch_us(), "matmul_relu_sum_16x16_ms (AMD mock)": program_ms("AMD"),
          "matmul_relu_sum_16x16_ms (CPU)": program_ms("CPU")}
  jit_step(False, reps=2)  # warm up: the emulator swaps its quick builds of the kernels for optimized ones in the background
  for batch, name in ((True, "HCQ graph"), (False, "unbatched")):
    subs, us = jit_step(batch)
    figs[f"jitted_6_kernel_step_submissions ({name})"], figs[f"jitted_6_kernel_step_us_per_kernel ({name})"] = subs, us
  for dev, arch in (("AMD", "gfx1100"), ("AMD:1", "gfx1200")):
    for tc, name in ((True, "WMMA"), (False, "no WMMA")):
      figs[f"half_matmul_64_wave_instructions ({arch}, {name})"], figs[f"half_matmul_64_ms ({arch}, {name})"] = half_matmul(dev, tc)
  if "--json" in sys.argv: print(json.dumps(figs))
  else:
    for k, v in figs.items(): print(f"{k:60s} {v:10.1f}")
