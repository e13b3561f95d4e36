"""AMD on the virtual GPU (MOCKGPU=1): host-side dispatch overhead of an empty kernel (us per launch), and end-to-end
time of a small Tensor program beside the CPU device. `--json` prints the figures as JSON."""
import json, os, sys, time
os.environ.setdefault("MOCKGPU", "1")
import numpy as np
from tg.codegen.device import Device
from tg.amd.device import AMDProgram
from tg.amd_emu import rdna3
from tg.amd_emu.codeobj import KernelDescriptor, write
from tg.tensor import Tensor

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

if __name__ == "__main__":
  figs = {"empty_kernel_launch_us (AMD mock)": empty_launch_us(), "matmul_relu_sum_16x16_ms (AMD mock)": program_ms("AMD"),
          "matmul_relu_sum_16x16_ms (CPU)": program_ms("CPU")}
  if "--json" in sys.argv: print(json.dumps(figs))
  else:
    for k, v in figs.items(): print(f"{k:40s} {v:10.1f}")
