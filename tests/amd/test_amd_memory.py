"""Device memory on the virtual GPUs: small buffers are sub-allocated from shared 2 MiB allocations (a KFD allocation
each no more), without overlapping; a host-to-GPU copy returns while the GPU is still busy with earlier work (the host
waits only for the staging memory it reuses), and lands after that work, in order."""
import time
import numpy as np
import pytest
from tg.amd.driver import PAGE, Signal
from tg.codegen.device import Device
from tg.amd.device import AMDProgram
from tg.amd_emu import rdna3, rdna4
from tg.amd_emu.codeobj import KernelDescriptor, load_image, write

ARCHS = pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])

@ARCHS
def test_small_buffers_share_allocations(dev):
  d, alloc = Device[dev], Device[dev].allocator
  before = len(d.kfd.kfd.bos)
  sizes = [4, 100, 256, 1000, 4096, 5000, 65536] * 20
  bufs = [alloc._alloc(n) for n in sizes]
  assert len(d.kfd.kfd.bos) - before <= 7  # at most one slab per size class (256 B .. 64 KiB): was one allocation per buffer
  spans = sorted((b.va, b.va + n) for b, n in zip(bufs, sizes))
  assert all(hi <= lo for (_, hi), (lo, _) in zip(spans, spans[1:]))  # no two buffers overlap
  data = [np.full(n, k % 251, np.uint8) for k, n in enumerate(sizes)]
  for b, x in zip(bufs, data): alloc.copyin(b, memoryview(x))
  for b, x in zip(bufs, data):
    out = np.empty_like(x)
    alloc.copyout(memoryview(out), b)
    np.testing.assert_array_equal(out, x)
  for b, n in zip(bufs, sizes): alloc._free(b, n)
  assert len(d.kfd.kfd.bos) - before <= 7

@ARCHS
def test_copyin_does_not_wait_for_busy_gpu(dev):
  """The compute queue is stalled on a gate the host holds closed: the copy is queued behind it and the call returns."""
  d = Device[dev]
  gate = Signal(d.kfd, d.kfd.alloc(PAGE, vram=False, uncached=True), 0)
  d.submit(d.compute, d.compute.wait_mem(gate.va, 1))
  buf, x = d.allocator.alloc(3 << 19), np.arange(3 << 17, dtype=np.float32)  # 1.5 MiB: both staging halves
  st = time.monotonic()
  d.allocator.copyin(buf, memoryview(x).cast("B"))
  assert time.monotonic() - st < 10 and gate.value == 0
  gate.value = 1
  out = np.empty_like(x)
  d.allocator.copyout(memoryview(out).cast("B"), buf)
  np.testing.assert_array_equal(out, x)

@ARCHS
def test_many_loaded_kernels_share_code_allocations(dev):
  """Each loaded kernel's image was an allocation (and an emulator mapping) of its own: a process that had loaded ~120 kernels
  died with "too many mappings". 300 loads of a code object now share a slab, each at its own place, and the last one runs."""
  d = Device[dev]
  isa = rdna3 if d.target == "gfx1100" else rdna4
  out = d.allocator.alloc(4)
  body = [isa.v_mov_b32_e32(isa.v[0], out.va & 0xFFFFFFFF), isa.v_mov_b32_e32(isa.v[1], out.va >> 32), isa.v_mov_b32_e32(isa.v[2], 1234),
          isa.global_store_b32(addr=isa.v[0:1], data=isa.v[2], saddr=isa.NULL, offset=0), isa.s_endpgm()]
  lib = write("store", b"".join(i.to_bytes() for i in body), "rdna3" if isa is rdna3 else "rdna4", KernelDescriptor(rsrc1=0x41, rsrc2=2 << 1))
  before = len(d.kfd.kfd.bos)
  progs = [AMDProgram(d, "store", lib) for _ in range(300)]
  slot = 1 << (len(load_image(lib)) - 1).bit_length()  # an image's power-of-two slot
  assert len(d.kfd.kfd.bos) - before <= -(-300 * slot // (2 << 20)) and len({p.pgm for p in progs}) == 300
  progs[-1](global_size=(1, 1, 1), local_size=(1, 1, 1), wait=True)
  got = np.empty(1, np.uint32)
  d.allocator.copyout(memoryview(got).cast("B"), out)
  assert got[0] == 1234
