"""Copies and kernels on their own timelines (tg.amd.timeline): with the compute queue held by a gate the host keeps closed,
a copy that uses none of the waiting kernels' buffers runs and finishes first, a copy of a waiting kernel's output waits
for that kernel (and then carries its result), and a kernel waits for the copy that fills its input."""
import numpy as np
import pytest
from tg.amd.driver import PAGE, SDMAQueue, Signal
from tg.codegen.device import Buffer, Device
from tg.codegen.pipeline import CompiledRunner, get_program
from tg.tensor import Tensor
from tg.uop import Ops, dtypes

ARCHS = pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])
N = 256

def closed_gate(d) -> Signal:
  """A signal at 0 that the compute queue waits to reach 1: everything queued on it after this waits for the host."""
  gate = Signal(d.kfd, d.kfd.alloc(PAGE, vram=False, uncached=True), 0)
  d.submit(d.compute, d.compute.wait_mem(gate.va, 1))
  return gate

def let_gpu_run(d, spins: int = 3) -> None:
  for _ in range(spins): d.kfd.check_faults(timeout_ms=1)  # the virtual GPU runs its queues while the host waits for events

def double_plus_one(dev: str) -> CompiledRunner:
  (k,) = [ei.ast for ei in (Tensor.empty(N, device=dev) * 2 + 1).schedule() if ei.ast.op is Ops.SINK]
  return CompiledRunner(get_program(k, Device[dev].renderer))

def buffers(dev: str, *arrays: np.ndarray) -> list[Buffer]:
  return [Buffer(dev, N, dtypes.float32).allocate().copyin(memoryview(a).cast("B")) for a in arrays]

@ARCHS
def test_copy_behind_no_kernel_finishes_first(dev):
  d, x = Device[dev], np.arange(N, dtype=np.float32)
  prg, (out, inp) = double_plus_one(dev), buffers(dev, x * 0, x)
  d.synchronize()
  gate = closed_gate(d)
  prg([out, inp], {})  # waits for the gate
  (other,) = buffers(dev, x + 7)  # a copy in and (below) out of a buffer no waiting kernel uses
  np.testing.assert_array_equal(other.numpy(), x + 7)
  assert gate.value == 0 and not d.timelines[d.compute].fence().done()  # the kernel hasn't run: the copies went first
  gate.value = 1
  np.testing.assert_array_equal(out.numpy(), x * 2 + 1)

@ARCHS
def test_copy_waits_for_the_kernel_that_writes_its_source(dev):
  d, x = Device[dev], np.arange(N, dtype=np.float32)
  prg, (out, inp, dst) = double_plus_one(dev), buffers(dev, x * 0, x, x * 0)
  d.synchronize()
  gate = closed_gate(d)
  prg([out, inp], {})
  copy = d.submit(d.sdma, SDMAQueue.copy(dst._buf.va, out._buf.va, out.nbytes), [dst._buf, out._buf])
  let_gpu_run(d)
  assert not copy.done()
  gate.value = 1
  d.wait(copy)
  np.testing.assert_array_equal(dst.numpy(), x * 2 + 1)

@ARCHS
def test_kernel_waits_for_the_copy_that_fills_its_input(dev):
  d, x = Device[dev], np.arange(N, dtype=np.float32)
  prg, (out, inp, src) = double_plus_one(dev), buffers(dev, x * 0, x * 0, x - 5)
  d.synchronize()
  gate = Signal(d.kfd, d.kfd.alloc(PAGE, vram=False, uncached=True), 0)
  d.submit(d.sdma, SDMAQueue.wait_mem(gate.va, 1))  # now the copy queue waits for the host
  d.submit(d.sdma, SDMAQueue.copy(inp._buf.va, src._buf.va, src.nbytes), [inp._buf, src._buf])
  prg([out, inp], {})
  let_gpu_run(d)
  assert not d.timelines[d.compute].fence().done()
  gate.value = 1
  np.testing.assert_array_equal(out.numpy(), (x - 5) * 2 + 1)
