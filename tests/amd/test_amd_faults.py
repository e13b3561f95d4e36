"""Crash tests: hand-written kernels (tg.amd_emu's DSL) that touch NULL or unmapped memory fault on the virtual GPU; the
fault arrives through KFD's memory-exception event as a RuntimeError naming it, and the device keeps working (checked with a
Tensor kernel, so these need LLVM 19 and fail without it)."""
import numpy as np
import pytest
from tg.codegen.device import Device
from tg.amd.device import AMDProgram
from tg.amd_emu import rdna3, rdna4
from tg.amd_emu.codeobj import KernelDescriptor, write
from tg.tensor import Tensor

ARCHS = pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])
UNMAPPED = 0xDEAD0000000

def kernel(dev: str, body) -> AMDProgram:
  """A one-wave kernel: v[0:1] = addr (low, high), then `body`, then s_endpgm. rsrc1: 16 VGPRs, 16 SGPRs; rsrc2: 2 user SGPRs."""
  d = Device[dev]
  isa, arch = (rdna3, "rdna3") if d.target == "gfx1100" else (rdna4, "rdna4")
  return lambda addr: AMDProgram(d, "crash", write("crash", b"".join(i.to_bytes() for i in [
    isa.v_mov_b32_e32(isa.v[0], addr & 0xFFFFFFFF), isa.v_mov_b32_e32(isa.v[1], addr >> 32), isa.s_mov_b32(isa.s[4], addr & 0xFFFFFFFF),
    isa.s_mov_b32(isa.s[5], addr >> 32), *body(isa), isa.s_endpgm()]), arch, KernelDescriptor(rsrc1=0x41, rsrc2=2 << 1)))

ACCESSES = {
  "global_load": lambda i: [i.global_load_b32(vdst=i.v[2], addr=i.v[0:1], saddr=i.NULL, offset=0), i.s_waitcnt(0)],
  "global_store": lambda i: [i.global_store_b32(addr=i.v[0:1], data=i.v[0], saddr=i.NULL, offset=0)],
  "flat_load": lambda i: [i.flat_load_b32(vdst=i.v[2], addr=i.v[0:1], offset=0), i.s_waitcnt(0)],
  "smem_load": lambda i: [i.s_load_b32(i.s[6], i.s[4:5], 0), i.s_waitcnt(0)],
  "global_atomic": lambda i: [i.global_atomic_add_u32(addr=i.v[0:1], data=i.v[0], saddr=i.NULL, offset=0)],
}

@ARCHS
@pytest.mark.parametrize("addr", [0, UNMAPPED], ids=["null", "unmapped"])
@pytest.mark.parametrize("access", list(ACCESSES))
def test_llvm_fault_then_next_kernel_runs(dev, access, addr):
  prg = kernel(dev, ACCESSES[access])(addr)
  with pytest.raises(RuntimeError, match="fault"): prg(global_size=(1, 1, 1), local_size=(32, 1, 1), wait=True)
  a = np.arange(8, dtype=np.float32)
  np.testing.assert_equal((Tensor(a, device=dev) * 2).numpy(), a * 2)
