"""Scratch (the private segment) through the driver: clang-19 kernels with a stack array and a non-inlined callee run on
both virtual GPUs from the scratch backing the compute queue allocates and programs (COMPUTE_TMPRING_SIZE,
COMPUTE_DISPATCH_SCRATCH_BASE), and the virtual GPU faults on a dispatch whose scratch setup is wrong, as hardware would.
These need LLVM 19 (clang-19, ld.lld-19) and fail when it is missing."""
import functools, pathlib, subprocess, tempfile
import numpy as np
import pytest
from tg.amd import hw
from tg.amd.compiler import find_tool
from tg.amd.device import AMDProgram
from tg.amd.driver import GPUFault, KFDAlloc, ScratchLayout
from tg.codegen.device import Device

ARCHS = pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])
SRC = pathlib.Path(__file__).with_name("scratch_kernels.c")
N, BLOCK = 96, 64  # two workgroups of two waves: scratch slots are shared by waves and reused by workgroups

@functools.cache
def code_object(mcpu: str) -> bytes:
  with tempfile.TemporaryDirectory() as d:
    subprocess.run([find_tool("clang"), "-target", "amdgcn-amd-amdhsa", f"-mcpu={mcpu}", "-nogpulib", "-O2", "-x", "c", "-c", str(SRC),
                    "-o", f"{d}/k.o"], check=True, capture_output=True)
    subprocess.run([find_tool("lld"), "-shared", f"{d}/k.o", "-o", f"{d}/k.hsaco"], check=True, capture_output=True)
    return pathlib.Path(f"{d}/k.hsaco").read_bytes()

def expected(idx: np.ndarray) -> np.ndarray:
  t = np.arange(len(idx))
  priv = t[:, None] * 100 + np.arange(64)
  k = idx & 63
  own = priv[:, :40] ^ np.arange(40)
  return priv[t, k] + own[t, (k * 3) % 40] + priv[t, (idx * 5) & 63]

@functools.cache
def program(dev: str) -> AMDProgram:
  """One load per device: each load is a new emulated program to build."""
  return AMDProgram(Device[dev], "stack_call", code_object(Device[dev].target))

def run(dev: str) -> tuple[np.ndarray, np.ndarray]:
  d, prg = Device[dev], program(dev)
  idx = np.random.default_rng(7).integers(0, 10000, N).astype(np.int32)
  out, ib = d.allocator.alloc(N * 4), d.allocator.alloc(N * 4)
  d.allocator.copyin(ib, memoryview(idx).cast("B"))
  prg(out, ib, global_size=(-(-N // BLOCK), 1, 1), local_size=(BLOCK, 1, 1), wait=True)
  res = np.empty(N, np.int32)
  d.allocator.copyout(memoryview(res).cast("B"), out)
  return res, expected(idx)

@ARCHS
def test_stack_array_and_call_through_the_driver(dev):
  d = Device[dev]
  kd = program(dev).kernel.descriptor
  assert kd.private_segment_size >= 64 * 4 + 40 * 4 and kd.rsrc2 & hw.RSRC2_SCRATCH_EN  # the kernel really needs scratch
  np.testing.assert_array_equal(*run(dev))
  assert d.compute.scratch_layout.lane_bytes >= kd.private_segment_size

def test_scratch_layout_hand_computed():
  """The virtual GPUs' topology: 192 SIMDs / 2 per CU = 96 CUs x 32 scratch slots, 12 arrays / 2 per engine = 6 engines."""
  props = {"simd_count": 192, "simd_per_cu": 2, "max_slots_scratch_cu": 32, "array_count": 12, "simd_arrays_per_engine": 2}
  lay = ScratchLayout.for_lanes(props, (11, 0, 0), 468)  # 468 * 32 = 14976 bytes a wave, rounded up to 256: 15104 = 59 units
  assert (lay.waves, lay.ses, lay.wave_bytes, lay.lane_bytes) == (512, 6, 15104, 472)
  assert lay.tmpring == 512 | 59 << 12 and lay.nbytes == 512 * 6 * 15104
  assert ScratchLayout.from_tmpring(lay.tmpring, 6, (12, 0, 0)) == lay
  with pytest.raises(ValueError, match="scratch per work-item"): ScratchLayout.for_lanes(props, (11, 0, 0), 1 << 18)
  assert ScratchLayout.for_lanes(props, (12, 0, 0), 1 << 18).wave_bytes == 1 << 23  # gc 12's WAVESIZE is 3 bits wider

def wrong_setups(d):
  q, good = d.compute, d.compute.scratch_layout
  return {
    "no backing (TMPRING_SIZE 0)": lambda: setattr(q, "scratch_layout", ScratchLayout(0, good.ses, 0)),
    "WAVESIZE too small": lambda: setattr(q, "scratch_layout", ScratchLayout(good.waves, good.ses, hw.SCRATCH_UNIT)),
    "too few wave slots": lambda: setattr(q, "scratch_layout", ScratchLayout(0, good.ses, good.wave_bytes)),
    "base not mapped": lambda: setattr(q, "scratch", KFDAlloc(0xDEAD00000000, q.scratch.size, 0, False)),
    "backing too short": lambda: setattr(q, "scratch_layout", ScratchLayout(good.waves * 2, good.ses, good.wave_bytes)),
  }

@ARCHS
@pytest.mark.parametrize("wrong", ["no backing (TMPRING_SIZE 0)", "WAVESIZE too small", "too few wave slots", "base not mapped",
                                   "backing too short"])
def test_wrong_scratch_setup_faults_then_right_one_runs(dev, wrong):
  d = Device[dev]
  program(dev)  # loaded (and the scratch set up) before the setup is broken
  q = d.compute
  saved = (q.scratch, q.scratch_layout)
  wrong_setups(d)[wrong]()
  try:
    with pytest.raises(GPUFault, match="memory fault") as e: run(dev)
  finally: q.scratch, q.scratch_layout = saved
  assert e.value.kind == "memory"
  np.testing.assert_array_equal(*run(dev))

@ARCHS
def test_scratch_disabled_in_rsrc2_faults(dev):
  """A kernel that uses scratch dispatched without SCRATCH_EN gets none: its first scratch access faults."""
  prg = program(dev)
  rsrc = prg.rsrc
  prg.rsrc = (rsrc[0], rsrc[1] & ~hw.RSRC2_SCRATCH_EN, rsrc[2])
  try:
    with pytest.raises(GPUFault, match=r"memory fault in kernel stack_call at pc 0x[0-9a-f]+ \((scratch|flat)_store"): run(dev)
  finally: prg.rsrc = rsrc
  np.testing.assert_array_equal(*run(dev))
