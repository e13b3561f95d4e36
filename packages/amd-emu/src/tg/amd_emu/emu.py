"""The emulator's runtime: memory maps, wave state, workgroups with barriers, dispatches and launches.

`AddressSpace` is a GPU address space of mapped ranges backed by host memory (numpy arrays, bytearrays, ctypes buffers);
anything outside them faults. `dispatch(...)` runs a grid of workgroups of a kernel whose code lives in that memory
or is given as bytes; `launch(...)` is the convenience for a code object plus Python/numpy arguments; `run_wave(...)`
runs a list of DSL instructions on one wave and returns its registers.
"""
from __future__ import annotations
import ctypes
import struct
from dataclasses import dataclass
from typing import Any, Sequence
import numpy as np
from .codeobj import KERNARG_MIN, CodeObject, Kernel, KernelDescriptor, hidden_args, load_image, read as read_codeobj
from .inst import Inst
from .waveprog import wave_program, ENDPGM, BARRIER, FAULT, BUDGET, BADPC, UNSUPPORTED
from .tier1 import RUNNING, DONE, WAITING
from .barrier import WORKGROUP, workgroup_word
from .shapes import FloatMode, DEFAULT_MODE, HWREG, HWREG_MODE, BARRIER_TABLE, \
  ST_WORDS, VGPR, SCC, PC, FAULT_ADDR, LDS_BASE, LDS_SIZE, SCRATCH_BASE, SCRATCH_SIZE, TAB, WAVE

DEFAULT_BUDGET = 10_000_000
LDS_BYTES = 64 * 1024

class MemoryFault(RuntimeError):
  """An access outside every mapped range: the address, and for a kernel's access the instruction's text, pc, wave and workgroup."""
  def __init__(self, msg: str, address: int, inst: str | None = None, pc: int | None = None, wave: int | None = None,
               workgroup: tuple[int, int, int] | None = None):
    super().__init__(msg)
    self.address, self.inst, self.pc, self.wave, self.workgroup = address, inst, pc, wave, workgroup

class WaveStop(RuntimeError):
  """A wave that stopped for another reason than a memory fault: `kind` is "budget" (a runaway loop), "badpc" (a jump into no
  instruction) or "illegal" (an instruction the emulator can't run); with the pc, the instruction's text, wave and workgroup."""
  def __init__(self, msg: str, kind: str, inst: str, pc: int, wave: int, workgroup: tuple[int, int, int] | None):
    super().__init__(msg)
    self.kind, self.inst, self.pc, self.wave, self.workgroup = kind, inst, pc, wave, workgroup

class AddressSpace:
  """A GPU address space: `map(addr, nbytes, backing)` makes [addr, addr+nbytes) valid, backed by host memory."""
  def __init__(self) -> None:
    self.ranges: list[tuple[int, int, int, Any]] = []  # (lo, hi, host address, backing kept alive)
    self._table: Any = None
    self.next_free = 0x100000000

  def map(self, addr: int, nbytes: int, backing: Any = None) -> np.ndarray:
    """Map a range; backing is anything with a writable buffer of >= nbytes (default: new zeroed memory). Returns a uint8 view."""
    if backing is None: backing = np.zeros(nbytes, np.uint8)
    arr = np.frombuffer(backing, np.uint8) if not isinstance(backing, np.ndarray) else backing.reshape(-1).view(np.uint8)
    if arr.nbytes < nbytes: raise ValueError(f"backing of {arr.nbytes} bytes is smaller than the mapping ({nbytes} bytes)")
    if not arr.flags.writeable: raise ValueError("backing memory must be writable")
    for lo, hi, _, _ in self.ranges:
      if addr < hi and lo < addr + nbytes: raise ValueError(f"mapping {addr:#x}+{nbytes:#x} overlaps {lo:#x}..{hi:#x}")
    if len(self.ranges) >= TAB: raise ValueError(f"too many mappings (the emulator's range table holds {TAB})")
    self.ranges.append((addr, addr + nbytes, arr.ctypes.data, arr))
    self.ranges.sort()
    self._table = None
    self.next_free = max(self.next_free, (addr + nbytes + 0xFFFF) & ~0xFFFF)
    return arr[:nbytes]

  def alloc(self, nbytes: int, backing: Any = None) -> int:
    """Map nbytes at a fresh 64 KiB-aligned address and return it."""
    addr = self.next_free
    self.map(addr, max(nbytes, 1), backing)
    return addr

  def unmap(self, addr: int) -> None:
    self.ranges = [r for r in self.ranges if r[0] != addr]
    self._table = None

  def view(self, addr: int, nbytes: int) -> np.ndarray:
    for lo, hi, _, arr in self.ranges:
      if lo <= addr and addr + nbytes <= hi: return arr[addr - lo:addr - lo + nbytes]
    raise MemoryFault(f"memory fault: host access at {addr:#x}+{nbytes}, no mapping", addr)

  def read(self, addr: int, nbytes: int) -> bytes: return self.view(addr, nbytes).tobytes()
  def write(self, addr: int, data: bytes) -> None: self.view(addr, len(data))[:] = np.frombuffer(data, np.uint8)

  @property
  def table(self) -> ctypes.Array:
    """lo[TAB], hi[TAB], host-minus-GPU delta[TAB]; unused entries have lo = 2**64-1 so the search never picks them."""
    if self._table is None:
      t = np.zeros((3, TAB), np.uint64)
      t[0] = 2**64 - 1
      for k, (lo, hi, host, _) in enumerate(self.ranges): t[:, k] = lo, hi, (host - lo) % 2**64
      self._table = (ctypes.c_uint64 * (3 * TAB)).from_buffer(t)
    return self._table

@dataclass
class Wave:
  """One wave's registers: `st` is the whole state; s, v, scc, pc... are views of it."""
  st: np.ndarray
  budget: ctypes.c_longlong
  done: bool = False
  waiting: bool = False
  barriers: np.ndarray | None = None  # the barrier table BARRIER_TABLE points at, when the wave owns it (barrier.py)

  @property
  def s(self) -> np.ndarray: return self.st[:128]
  @property
  def v(self) -> np.ndarray: return self.st[VGPR:].reshape(256, WAVE)
  @property
  def scc(self) -> int: return int(self.st[SCC])
  @property
  def vcc(self) -> int: return int(self.st[106])
  @property
  def exec(self) -> int: return int(self.st[126])
  @property
  def m0(self) -> int: return int(self.st[125])
  @property
  def pc(self) -> int: return int(self.st[PC]) | int(self.st[PC + 1]) << 32
  @property
  def ttmp(self) -> np.ndarray: return self.st[108:124]

def new_wave(pc: int, budget: int, mode: FloatMode = DEFAULT_MODE) -> Wave:
  """A wave alone in its workgroup (a dispatch points its waves at their workgroup's barrier table instead)."""
  st = np.zeros(ST_WORDS, np.uint32)
  st[PC], st[PC + 1] = pc & 0xFFFFFFFF, pc >> 32
  st[HWREG + HWREG_MODE] = mode.mode_reg
  st[126] = 0xFFFFFFFF
  bars = barrier_table(1)
  st[BARRIER_TABLE], st[BARRIER_TABLE + 1] = bars.ctypes.data & 0xFFFFFFFF, bars.ctypes.data >> 32
  return Wave(st, ctypes.c_longlong(budget), barriers=bars)

def barrier_table(waves: int, out: np.ndarray | None = None) -> np.ndarray:
  """A workgroup's 64 barrier words at its start: the workgroup barrier (-1) valid with `waves` members, the others unused."""
  out = np.zeros(64, np.uint32) if out is None else out
  out[:] = 0
  out[WORKGROUP & 63] = workgroup_word(waves)
  return out

def run_waves(prog: Any, waves: list[Wave], memory: AddressSpace, workgroup: tuple[int, int, int] | None = None, trace: Any = None) -> int:
  """Run the waves of one workgroup, round-robin, each until it ends or waits at a barrier; a barrier releases when every
  live wave has reached it. A `trace` (sqtt.record.Recorder) runs each wave instead, recording what it executes.
  Returns the wave-instructions executed."""
  prog.check()
  if trace is not None: return traced_waves(prog, waves, memory, workgroup, trace)
  n = len(waves)
  start = [w.budget.value for w in waves]
  state = (ctypes.c_ubyte * n)(*(DONE if w.done else WAITING if w.waiting else RUNNING for w in waves))
  rc, i = prog.run_group((ctypes.c_void_p * n)(*(w.st.ctypes.data for w in waves)),
                         (ctypes.c_void_p * n)(*(ctypes.addressof(w.budget) for w in waves)), state, ctypes.addressof(memory.table))
  for w, s in zip(waves, state): w.done, w.waiting = s == DONE, s == WAITING
  if rc != ENDPGM: raise_stop(prog, waves[i], rc, i, workgroup)
  return sum(s - w.budget.value for s, w in zip(start, waves))

def traced_waves(prog: Any, waves: list[Wave], memory: AddressSpace, workgroup: tuple[int, int, int] | None, trace: Any) -> int:
  """run_waves' round-robin (tg_emu_group's) in Python, each wave stepped by the recorder."""
  tab, start = ctypes.addressof(memory.table), [w.budget.value for w in waves]
  while live := [w for w in waves if not w.done]:
    if all(w.waiting for w in live):
      for w in live: w.waiting = False
    for i, w in enumerate(waves):
      if w.done or w.waiting: continue
      rc = trace.run(prog, w, tab, workgroup, i)
      if rc == ENDPGM: w.done = True
      elif rc == BARRIER: w.waiting = True
      else: raise_stop(prog, w, rc, i, workgroup)
  return sum(s - w.budget.value for s, w in zip(start, waves))

def raise_stop(prog: Any, w: Wave, rc: int, wave: int, workgroup: tuple[int, int, int] | None) -> None:
  who = f"wave {wave}" + (f", workgroup {workgroup}" if workgroup is not None else "")
  pc = w.pc
  d = prog.by_pc.get(pc)
  text = "?"
  if d is not None and d.inst is not None:
    try: text = d.inst.disasm()
    except ValueError: text = d.inst.op.mnemonic
  if rc == FAULT:
    addr = int(w.st[FAULT_ADDR]) | int(w.st[FAULT_ADDR + 1]) << 32
    raise MemoryFault(f"memory fault: {text} at {addr:#x}, no mapping (pc={pc:#x}, {who})", addr, text, pc, wave, workgroup)
  stops = {BUDGET: ("budget", f"instruction budget exhausted at pc={pc:#x} ({text}, {who}): a runaway loop? pass a larger budget"),
           BADPC: ("badpc", f"jump to pc={pc:#x}, which is not the start of a block of this kernel's code ({who})"),
           UNSUPPORTED: ("illegal", f"{prog.unsupported.get(pc, 'unsupported instruction')} at pc={pc:#x} ({who})")}
  if rc in stops: raise WaveStop(stops[rc][1], stops[rc][0], text, pc, wave, workgroup)
  raise RuntimeError(f"emulator stopped with code {rc} at pc={pc:#x}")

MAX_BLOCK = 1024  # work-items per workgroup on RDNA (each id is a 10-bit field of v0)

def check_launch(grid: Sequence[int], block: Sequence[int], budget: int) -> None:
  """A ValueError naming the problem for a launch the hardware couldn't run (rather than a silent empty run or a crash)."""
  for what, dims in (("grid", grid), ("block", block)):
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, (int, np.integer)) and d >= 1 for d in dims):
      raise ValueError(f"{what} {tuple(dims)}: 1 to 3 dimensions, each an integer >= 1")
  if (n := int(np.prod(block))) > MAX_BLOCK: raise ValueError(f"block {tuple(block)}: {n} work-items per workgroup, at most {MAX_BLOCK}")
  if any(g * b >= 1 << 32 for g, b in zip(grid, block)):
    raise ValueError(f"grid {tuple(grid)} of blocks {tuple(block)}: 2**32 work-items or more in a dimension")
  if budget < 1: raise ValueError(f"budget {budget}: the instruction budget per wave must be at least 1")

def dispatch(memory: AddressSpace, code: bytes, entry: int, descriptor: KernelDescriptor, kernarg_addr: int, grid: Sequence[int],
             block: Sequence[int], arch: str, code_addr: int = 0, budget: int = DEFAULT_BUDGET, dispatch_ptr: int = 0,
             scratch: tuple[int, int] | None = None, trace: Any = None) -> int:
  """Run a grid of workgroups. `code` is the code mapped at `code_addr` (PC-relative data reads go through `memory`),
  `entry` the kernel's first instruction's address; grid counts workgroups, block work-items per workgroup. `scratch` is
  (host address, bytes per work-item) of backing memory a runtime provides, wave w of a workgroup at address + w * 32 * bytes
  (by default the descriptor's private segment size, in memory of the dispatch's own). `trace` records the executed
  instructions for an SQTT stream (see run_waves). Returns the wave-instructions executed."""
  executed = 0
  gx, gy, gz = (list(grid) + [1, 1])[:3]
  bx, by, bz = (list(block) + [1, 1])[:3]
  mode = FloatMode.of(descriptor.rsrc1, arch)
  prog = wave_program(bytes(code), arch, code_addr, entry, mode)
  nthreads = bx * by * bz
  nwaves = (nthreads + WAVE - 1) // WAVE
  tid = np.arange(nwaves * WAVE)
  packed = (tid % bx) | ((tid // bx % by) << 10) | ((tid // (bx * by)) << 20)
  user = user_sgprs(descriptor, kernarg_addr, dispatch_ptr)
  ids_at = descriptor.user_sgpr_count or len(user)
  lds, bars = np.zeros(LDS_BYTES, np.uint8), np.zeros(64, np.uint32)
  if scratch is None:
    scratch_size = (descriptor.private_segment_size + 3) & ~3
    own_scratch = np.zeros(max(scratch_size, 4) * WAVE * nwaves, np.uint8)
    scratch = (own_scratch.ctypes.data, scratch_size)
  scratch_addr, scratch_size = scratch
  template = np.stack([new_wave(entry, budget, mode).st for _ in range(nwaves)])  # every workgroup's waves, less the ids
  template[:, :len(user)] = user
  template[:, VGPR:VGPR + WAVE] = packed.reshape(nwaves, WAVE)
  template[:, 126] = [(1 << min(WAVE, nthreads - w * WAVE)) - 1 for w in range(nwaves)]
  template[:, LDS_BASE], template[:, LDS_BASE + 1], template[:, LDS_SIZE] = lds.ctypes.data & 0xFFFFFFFF, lds.ctypes.data >> 32, LDS_BYTES
  template[:, BARRIER_TABLE], template[:, BARRIER_TABLE + 1] = bars.ctypes.data & 0xFFFFFFFF, bars.ctypes.data >> 32
  sbase = scratch_addr + np.arange(nwaves, dtype=np.uint64) * (WAVE * scratch_size)
  template[:, SCRATCH_BASE], template[:, SCRATCH_BASE + 1], template[:, SCRATCH_SIZE] = sbase & 0xFFFFFFFF, sbase >> 32, scratch_size
  id_slots = [ids_at + i for i in range(sum(descriptor.workgroup_ids))]
  for wz in range(gz):
    for wy in range(gy):
      for wx in range(gx):
        lds[:] = 0
        barrier_table(nwaves, bars)
        sts = template.copy()
        sts[:, id_slots] = [v for on, v in zip(descriptor.workgroup_ids, (wx, wy, wz)) if on]
        if arch == "rdna4": sts[:, 108 + 9], sts[:, 108 + 10], sts[:, 108 + 11], sts[:, 108 + 7] = wx, wy, wz, wy | wz << 16
        executed += run_waves(prog, [Wave(st, ctypes.c_longlong(budget)) for st in sts], memory, (wx, wy, wz), trace)
  return executed

def user_sgprs(kd: KernelDescriptor, kernarg_addr: int, dispatch_ptr: int) -> list[int]:
  out: list[int] = []
  for name in kd.user_sgprs:
    if name == "private_segment_buffer": out += [0, 0, 0, 0]
    elif name in ("dispatch_ptr", "queue_ptr", "dispatch_id", "flat_scratch_init"):
      val = dispatch_ptr if name == "dispatch_ptr" else 0
      out += [val & 0xFFFFFFFF, val >> 32]
    elif name == "kernarg_segment_ptr": out += [kernarg_addr & 0xFFFFFFFF, kernarg_addr >> 32]
    elif name == "private_segment_size": out.append(kd.private_segment_size)
  return out

def launch(code_object: bytes | CodeObject, kernel: str | None, grid: Sequence[int], block: Sequence[int], args: Sequence[Any],
           arch: str | None = None, budget: int = DEFAULT_BUDGET, memory: AddressSpace | None = None, trace: Any = None) -> int:
  """Run a kernel of a code object. args follow the kernel's argument list: numpy arrays are mapped and passed by address
  (and hold the results afterwards), ints and floats are packed at their offsets; hidden arguments are filled in;
  `trace` as in dispatch. Returns the number of wave-instructions executed."""
  check_launch(grid, block, budget)
  data = code_object if isinstance(code_object, (bytes, bytearray)) else None
  co = read_codeobj(bytes(data)) if data is not None else code_object
  assert isinstance(co, CodeObject)
  if kernel is None:
    if len(co.kernels) != 1: raise ValueError(f"the code object has kernels {sorted(co.kernels)}: name one")
    kernel = next(iter(co.kernels))
  if kernel not in co.kernels: raise ValueError(f"no kernel {kernel!r} in the code object (kernels: {', '.join(sorted(co.kernels))})")
  k: Kernel = co.kernels[kernel]
  arch = arch or co.arch
  mem = memory or AddressSpace()
  image = load_image(bytes(data)) if data is not None else b""
  base = mem.alloc(max(len(image), co.text_addr + len(co.text)))
  if image: mem.write(base, image)
  else: mem.write(base + co.text_addr, co.text)
  kernarg = bytearray(max(k.descriptor.kernarg_size, KERNARG_MIN))
  user_args = [a for a in k.args if not a.get(".value_kind", "").startswith("hidden_")]
  if len(args) != len(user_args):
    raise ValueError(f"{kernel} takes {len(user_args)} arguments ({', '.join(a.get('.name', '?') for a in user_args)}), got {len(args)}")
  gx, gy, gz = (list(grid) + [1, 1])[:3]
  bx, by, bz = (list(block) + [1, 1])[:3]
  hidden = hidden_args((gx, gy, gz), (bx, by, bz))
  for meta, val in zip(user_args, args): pack_arg(kernarg, meta, val, mem)
  for meta in k.args:
    if (v := hidden.get(meta.get(".value_kind", ""))) is not None: pack_arg(kernarg, meta, v, mem)
  ka = mem.alloc(len(kernarg))
  mem.write(ka, bytes(kernarg))
  return dispatch(mem, co.text, base + co.text_addr + k.code_offset, k.descriptor, ka, (gx, gy, gz), (bx, by, bz), arch,
                  base + co.text_addr, budget, trace=trace)

def pack_arg(kernarg: bytearray, meta: dict, val: Any, mem: AddressSpace) -> None:
  off, size = meta[".offset"], meta[".size"]
  if isinstance(val, np.ndarray):
    if not val.flags.c_contiguous: raise ValueError(f"argument {meta.get('.name')}: numpy arrays must be C-contiguous")
    addr = mem.alloc(val.nbytes, val)
    struct.pack_into("<Q", kernarg, off, addr)
  elif isinstance(val, float): struct.pack_into("<f" if size == 4 else "<d", kernarg, off, val)
  elif isinstance(val, (int, np.integer)): kernarg[off:off + size] = (int(val) % (1 << (8 * size))).to_bytes(size, "little")
  else: raise TypeError(f"argument {meta.get('.name')}: expected a numpy array, int or float, got {type(val).__name__}")

def run_wave(insts: Sequence[Inst] | bytes, arch: str = "rdna3", sgprs: dict[int, int] | None = None, vgprs: dict[int, Any] | None = None,
             exec_mask: int = 0xFFFFFFFF, memory: AddressSpace | None = None, budget: int = DEFAULT_BUDGET, lds: np.ndarray | None = None,
             scc: int = 0, mode: FloatMode | None = None, tier: int | None = None) -> Wave:
  """Run instructions (an s_endpgm is appended) on one wave; sgprs {index: value}, vgprs {index: 32 lane values}. The float
  mode defaults to what LLVM's kernel descriptors set: f32 denormals kept, IEEE mode on RDNA3. tier 1 or 2 pins the
  program to one tier (tg.amd_emu.waveprog); by default it starts in tier 1 and moves up when hot."""
  code = insts if isinstance(insts, bytes) else b"".join(i.to_bytes() for i in insts)
  from .asm import assemble
  code += assemble("s_endpgm", arch)
  mode = mode or FloatMode(ieee=arch == "rdna3")
  prog = wave_program(code, arch, 0, 0, mode, tier)
  w = new_wave(0, budget, mode)
  for i, val in (sgprs or {}).items(): w.st[i] = val & 0xFFFFFFFF
  for i, vals in (vgprs or {}).items():  # integers as their 32-bit pattern, floats as f32 bits
    arr = np.asarray(vals)
    bits = arr.astype(np.uint64).astype(np.uint32) if arr.dtype.kind in "iu" else arr.astype(np.float32).view(np.uint32)
    w.st[VGPR + i * WAVE:VGPR + (i + 1) * WAVE] = bits
  w.st[126] = exec_mask
  w.st[SCC] = scc
  lds_arr = lds if lds is not None else np.zeros(LDS_BYTES, np.uint8)
  w.st[LDS_BASE], w.st[LDS_BASE + 1], w.st[LDS_SIZE] = lds_arr.ctypes.data & 0xFFFFFFFF, lds_arr.ctypes.data >> 32, lds_arr.nbytes
  run_waves(prog, [w], memory or AddressSpace())
  w.lds = lds_arr  # type: ignore[attr-defined]
  return w

