"""Copies between the two virtual GPUs (AMD: gfx1100, AMD:1: gfx1200) go GPU to GPU: the destination's SDMA engine reads the
source's memory, mapped into its address space as a peer (one copy on the destination's queue, none on the source's, no
host staging); without that mapping the virtual GPU faults, as separate address spaces would. Answers are checked against
the numpy data copied."""
import numpy as np
import pytest
from tg.amd.driver import GPUFault, SDMAQueue
from tg.codegen.device import Buffer, Device
from tg.tensor import Tensor
from tg.uop import dtypes

PAIRS = pytest.mark.parametrize("src, dst", [("AMD", "AMD:1"), ("AMD:1", "AMD")])

def sdma_count(dev: str) -> int: return Device[dev].timelines[Device[dev].sdma].value

@PAIRS
@pytest.mark.parametrize("n", [1000, 100_000], ids=["slab", "own-bo"])
def test_copy_between_gpus_is_one_sdma_copy(src, dst, n):
  x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
  a = Buffer(src, n, dtypes.float32).allocate().copyin(memoryview(x).cast("B"))
  b = Buffer(dst, n, dtypes.float32).allocate()
  before = sdma_count(src), sdma_count(dst)
  b.copy_from(a)
  assert (sdma_count(src), sdma_count(dst)) == (before[0], before[1] + 1)  # the source's engine (copyout to the host) isn't used
  np.testing.assert_array_equal(b.numpy(), x)

@PAIRS
def test_tensor_to_other_gpu_after_a_kernel(src, dst):
  x = np.arange(300, dtype=np.float32)
  y = (Tensor(x, device=src) * 3 - 1).to(dst)  # the copy waits for the kernel on the source GPU
  assert y.device == dst
  np.testing.assert_array_equal(y.numpy(), x * 3 - 1)

def test_unmapped_peer_memory_faults_then_gpu_recovers():
  d0, d1 = Device["AMD"], Device["AMD:1"]
  mem = d0.allocator._alloc(1 << 20)  # a buffer object of its own, never mapped to AMD:1
  dest = d1.allocator._alloc(1 << 20)
  with pytest.raises(GPUFault, match=f"{mem.va:#x}"): d1.wait(d1.submit(d1.sdma, SDMAQueue.copy(dest.va, mem.va, 256), [dest]))
  x = np.arange(1 << 18, dtype=np.float32)
  a, b = Buffer("AMD", x.size, dtypes.float32).allocate().copyin(memoryview(x).cast("B")), Buffer("AMD:1", x.size, dtypes.float32).allocate()
  np.testing.assert_array_equal(b.copy_from(a).numpy(), x)
  d0.allocator._free(mem, 1 << 20)
  d1.allocator._free(dest, 1 << 20)

def test_freed_buffer_leaves_the_peer():
  d0, d1 = Device["AMD"], Device["AMD:1"]
  mem = d0.allocator._alloc(1 << 20)
  d0.kfd.map_peer(mem, d1.kfd.gpu_id)
  assert any(lo == mem.va for lo, *_ in d1.kfd.kfd.memory.ranges)
  d0.allocator._free(mem, 1 << 20)
  assert not any(lo <= mem.va < hi for lo, hi, *_ in d1.kfd.kfd.memory.ranges)
