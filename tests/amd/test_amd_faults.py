"""Crash tests: hand-written kernels (tg.amd_emu's DSL) that touch NULL or unmapped memory, loop forever or run an illegal
instruction on the virtual GPU; the fault arrives through KFD's memory- or hardware-exception event as a GPUFault naming the
kernel, the pc as an offset into it, the instruction, wave, workgroup and address, and the device keeps working (checked with
Tensor kernels, so these need LLVM 19 and fail without it)."""
import numpy as np
import pytest
from tg.codegen.device import Device
from tg.amd.device import AMDProgram
from tg.amd.driver import GPUFault
from tg.amd_emu import rdna3, rdna4
from tg.amd_emu.codeobj import KernelDescriptor, write
from tg.tensor import Tensor

ARCHS = pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])
UNMAPPED = 0xDEAD0000000

def prologue(isa, addr: int) -> list:
  return [isa.v_mov_b32_e32(isa.v[0], addr & 0xFFFFFFFF), isa.v_mov_b32_e32(isa.v[1], addr >> 32), isa.s_mov_b32(isa.s[4], addr & 0xFFFFFFFF),
          isa.s_mov_b32(isa.s[5], addr >> 32)]

def isa_of(dev: str): return rdna3 if Device[dev].target == "gfx1100" else rdna4

def kernel(dev: str, body) -> AMDProgram:
  """A kernel: v[0:1] = s[4:5] = addr (low, high), then `body` (instructions or raw words), then s_endpgm. rsrc1: 16 VGPRs,
  16 SGPRs; rsrc2: 2 user SGPRs."""
  d, isa = Device[dev], isa_of(dev)
  return lambda addr: AMDProgram(d, "crash", write("crash", b"".join(i if isinstance(i, bytes) else i.to_bytes() for i in [
    *prologue(isa, addr), *body(isa), isa.s_endpgm()]), "rdna3" if isa is rdna3 else "rdna4", KernelDescriptor(rsrc1=0x41, rsrc2=2 << 1)))

def still_works(dev: str) -> None:
  """Later work runs and is right, twice (a device that re-raised the old fault would fail the second time too)."""
  for k in (2, 3):
    a = np.arange(8, dtype=np.float32)
    np.testing.assert_equal((Tensor(a, device=dev) * k).numpy(), a * k)

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
  with pytest.raises(GPUFault, match="memory fault in kernel crash"): prg(global_size=(1, 1, 1), local_size=(32, 1, 1), wait=True)
  still_works(dev)

@ARCHS
def test_memory_fault_says_where(dev):
  """Kernel, pc offset (the four 8-byte prologue moves before the load), instruction text, wave, workgroup and address."""
  isa = isa_of(dev)
  load = isa.global_load_b32(vdst=isa.v[2], addr=isa.v[0:1], saddr=isa.NULL, offset=0)
  prg = kernel(dev, lambda i: [load, i.s_waitcnt(0)])(UNMAPPED)
  with pytest.raises(GPUFault) as e: prg(global_size=(2, 1, 1), local_size=(64, 1, 1), wait=True)
  f = e.value
  assert (f.kind, f.kernel, f.pc, f.inst, f.wave, f.workgroup, f.address) == ("memory", "crash", 32, load.disasm(), 0, (0, 0, 0), UNMAPPED)
  assert str(f).startswith(f"GPU memory fault in kernel crash at pc 0x20 ({load.disasm()}), wave 0, workgroup (0, 0, 0): "
                           f"address {UNMAPPED:#x}, page not present")
  still_works(dev)

@ARCHS
def test_runaway_kernel_then_later_work_runs(dev):
  """An endless loop (after four 4-byte moves of inline 0) exhausts the virtual GPU's instruction budget: a hang the GPU
  resets, reported once, naming the loop."""
  prg = kernel(dev, lambda i: [i.s_branch(-1)])(0)
  with pytest.raises(GPUFault, match=r"GPU hang in kernel crash at pc 0x10 \(s_branch 65535\), wave 0, workgroup \(0, 0, 0\): .*runaway") as e:
    prg(global_size=(1, 1, 1), local_size=(32, 1, 1), wait=True)
  assert e.value.kind == "hang"
  still_works(dev)

@ARCHS
def test_illegal_instruction_then_later_work_runs(dev):
  """0xffffffff is no instruction on gfx11 or gfx12 (llvm-mc-19: 'invalid instruction encoding')."""
  prg = kernel(dev, lambda i: [b"\xff\xff\xff\xff"])(0)
  with pytest.raises(GPUFault, match=r"GPU illegal instruction in kernel crash at pc 0x10 \(undecodable word ffffffff\)") as e:
    prg(global_size=(1, 1, 1), local_size=(32, 1, 1), wait=True)
  assert e.value.kind == "illegal"
  still_works(dev)
