"""The driver on the virtual GPU without kernels: copies both ways (host <-> AMD, AMD <-> CPU, AMD <-> AMD), signals
(queue waits, host waits, timeouts), and malformed PM4/SDMA packets, which the virtual GPU rejects naming what is wrong."""
import time
import numpy as np
import pytest
from tg.amd import hw
from tg.amd.driver import PAGE, HWQueue, KFDDevice, PM4Queue, SDMAQueue, Signal
from tg.amd.kfd import QUEUE_TYPE_SDMA
from tg.amd.mockgpu import MockError, MockKFD
from tg.codegen.device import Device
from tg.tensor import Tensor

ARCHS = pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])
STAGING = 2 << 20  # the device's host-visible staging buffer: bigger copies go in pieces

@ARCHS
@pytest.mark.parametrize("nbytes", [1, 4099, STAGING, STAGING + STAGING // 2 + 5])
def test_copy_host_amd_host(dev, nbytes):
  a = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
  np.testing.assert_array_equal(Tensor(a, device=dev).numpy(), a)

@ARCHS
def test_copy_allocator_offsets(dev):
  """copyin/copyout through the allocator, into and out of the middle of a buffer."""
  alloc = Device[dev].allocator
  buf = alloc.alloc(4096)
  whole = np.arange(1024, dtype=np.float32)
  alloc.copyin(buf, memoryview(whole).cast("B"))
  part = np.arange(10, dtype=np.float32) * -1
  alloc.copyin(alloc.offset(buf, part.nbytes, 100 * 4), memoryview(part).cast("B"))
  out = np.empty(1024, np.float32)
  alloc.copyout(memoryview(out).cast("B"), buf)
  np.testing.assert_array_equal(out, np.concatenate([whole[:100], part, whole[110:]]))
  mid = np.empty(20, np.float32)
  alloc.copyout(memoryview(mid).cast("B"), alloc.offset(buf, mid.nbytes, 95 * 4))
  np.testing.assert_array_equal(mid, out[95:115])
  alloc.free(buf, 4096)

@ARCHS
def test_copy_amd_cpu_and_back(dev):
  a = np.random.default_rng(1).standard_normal((33, 17)).astype(np.float32)
  on_cpu = Tensor(a, device=dev).to("CPU")
  assert on_cpu.device == "CPU"
  np.testing.assert_array_equal(on_cpu.numpy(), a)
  back = Tensor(a * 2, device="CPU").to(dev)
  assert back.device == dev
  np.testing.assert_array_equal(back.numpy(), a * 2)

def test_copy_between_amd_devices():
  a = np.arange(1000, dtype=np.int32)
  t = Tensor(a, device="AMD").to("AMD:1")
  assert t.device == "AMD:1"
  np.testing.assert_array_equal(t.numpy(), a)
  np.testing.assert_array_equal(t.to("AMD").numpy(), a)

@pytest.fixture(params=["rdna3", "rdna4"])
def gpu(request) -> KFDDevice:
  """A fresh virtual GPU of its own: a malformed packet left in a ring cannot reach the other tests."""
  return KFDDevice(MockKFD(request.param))

def signal(dev: KFDDevice) -> Signal: return Signal(dev, dev.alloc(PAGE, vram=False, uncached=True), 0)

def test_signal_wait_times_out(gpu):
  s = signal(gpu)
  st = time.monotonic()
  with pytest.raises(TimeoutError, match=rf"signal at {s.va:#x} is 0, waited 0.2s for 3"): s.wait(3, timeout=0.2)
  assert 0.2 <= time.monotonic() - st < 5

@pytest.mark.parametrize("queue", [PM4Queue, SDMAQueue])
def test_queue_waits_for_signal(gpu, queue):
  """A queue stalls on WAIT_REG_MEM / POLL_REGMEM until the host sets the signal, then writes its own."""
  gate, done = signal(gpu), signal(gpu)
  q = queue(gpu)
  q.submit(q.wait_mem(gate.va, 2) + (q.release_mem(done.va, 7) if queue is PM4Queue else q.fence(done.va, 7)))
  with pytest.raises(TimeoutError): done.wait(7, timeout=0.05)
  gate.value = 1
  with pytest.raises(TimeoutError): done.wait(7, timeout=0.05)
  assert done.value == 0
  gate.value = 2
  done.wait(7, timeout=5)
  assert done.value == 7

def test_sdma_copy_packet_then_fence(gpu):
  src, dst, s = gpu.alloc(PAGE, vram=False), gpu.alloc(PAGE, vram=False), signal(gpu)
  src.view()[:] = bytes(range(256)) * 16
  q = SDMAQueue(gpu)
  q.submit(q.copy(dst.va + 8, src.va, 100) + q.fence(s.va, 1))
  s.wait(1, timeout=5)
  assert bytes(dst.view(8, 100)) == bytes(range(100)) and bytes(dst.view(0, 8)) == bytes(8)

def test_packets_wrap_around_the_ring(gpu):
  """A 1024-dword ring filled several times over: packets that straddle its end are read whole."""
  q, s = HWQueue(gpu, QUEUE_TYPE_SDMA, ring_size=4096), signal(gpu)
  for v in range(1, 401):
    q.submit(SDMAQueue.fence(s.va, v) + SDMAQueue.wait_mem(s.va, v))
    assert s.value == v

def test_indirect_buffer_runs_then_the_ring_continues(gpu):
  """Packets in an indirect buffer run where the INDIRECT_BUFFER packet stands: the IB's release writes 5 before the ring's 6."""
  q, first, second = PM4Queue(gpu), signal(gpu), signal(gpu)
  ib_words = q.release_mem(first.va, 5) + q.barrier()
  ib = gpu.alloc(PAGE, vram=False)
  ib.write_dwords(ib_words)
  q.submit(q.indirect(ib.va, len(ib_words)) + q.wait_mem(first.va, 5) + q.release_mem(second.va, 6))
  second.wait(6, timeout=5)
  assert (first.value, second.value) == (5, 6)
  with pytest.raises(ValueError, match="indirect buffer of 0 dwords"): q.indirect(ib.va, 0)

PM4 = hw.pm4_header
BAD_PM4 = {
  "not_type3": ([0x40000000], r"packet header 0x40000000 at ring dword 0 is not type 3"),
  "short_dispatch": ([PM4(hw.PACKET3_DISPATCH_DIRECT, 3), 1, 1, 1], r"packet 0x15 has 3 body dwords, expected 4"),
  "past_wptr": ([PM4(hw.PACKET3_RELEASE_MEM, 7), 0, 0], r"packet 0x49 of 8 dwords runs past the write pointer"),
  "unknown_opcode": ([PM4(0x7F, 1), 0], r"unsupported packet opcode 0x7f"),
  "sh_reg_window": ([PM4(hw.PACKET3_SET_SH_REG, 3), 0x3FF, 1, 2], r"SET_SH_REG at offset 0x3ff with 2 values is outside the SH register window"),
  "wait_on_register": ([PM4(hw.PACKET3_WAIT_REG_MEM, 6), hw.WAIT_FUNC_GEQ, 0, 0, 1, 0xFFFFFFFF, 4], r"WAIT_REG_MEM on a register"),
  "ib_not_valid": ([PM4(hw.PACKET3_INDIRECT_BUFFER, 3), 0x1000, 0, 4], r"INDIRECT_BUFFER at 0x1000 \(0x4\) is not valid"),
}
BAD_SDMA = {
  "unknown_opcode": ([0x7E], r"SDMA: unsupported opcode 126 \(header 0x0000007e\) at ring dword 0"),
  "copy_subop": ([hw.SDMA_OP_COPY | 3 << 8, 0, 0, 0, 0, 0, 0], r"SDMA: copy sub-op 3 is not supported"),
  "past_wptr": ([hw.SDMA_OP_COPY, 3, 0], r"SDMA: packet op 1 of 7 dwords runs past the write pointer"),
  "poll_register": ([hw.SDMA_OP_POLL_REGMEM | hw.POLL_FUNC_GEQ << 28, 0, 0, 1, 0xFFFFFFFF, 0], r"POLL_REGMEM on a register"),
}

@pytest.mark.parametrize("name", list(BAD_PM4))
def test_malformed_pm4_rejected(gpu, name):
  words, msg = BAD_PM4[name]
  with pytest.raises(MockError, match=f"PM4: {msg}"): PM4Queue(gpu).submit(words)

@pytest.mark.parametrize("name", list(BAD_SDMA))
def test_malformed_sdma_rejected(gpu, name):
  words, msg = BAD_SDMA[name]
  with pytest.raises(MockError, match=msg): SDMAQueue(gpu).submit(words)

def test_no_gpu_names_kfd_and_mockgpu(monkeypatch, tmp_path):
  """DEV=AMD without a GPU and without MOCKGPU: a NoGPUError naming /dev/kfd and the MOCKGPU=1 switch, not a raw sysfs error."""
  import tg.amd.device as amd
  monkeypatch.delenv("MOCKGPU")
  monkeypatch.setattr(amd, "KFD_PATH", str(tmp_path / "kfd"))
  with pytest.raises(amd.NoGPUError, match=r"kfd does not exist .*set MOCKGPU=1"): amd.AMDDevice("AMD:5")
