"""A kernel's code compiled to one C function: a dispatch loop over basic blocks, each block a run of shape calls.

`run(st, mem, tab, budget)` starts at the PC in the state and returns why it stopped: the end of the program, a
barrier, a memory fault, the instruction budget, a jump to an address that is no block, or an instruction the
emulator cannot run. Blocks start at the entry, branch targets and after branches and barriers; every block
charges its length to the budget on entry.
"""
from __future__ import annotations
import ctypes
import functools
import re
import threading
from dataclasses import dataclass
from tg.codegen.device import Device
from tg.codegen.devices.cpu import ClangCompiler, CPUProgram
from .decode import decode
from .inst import Inst
from .kernel import shape_code, save_shapes, ShapeCode
from .shapes import shape_args, field_kind, PC, FAULT as FAULT_FLAG, pcode_of, FloatMode, DEFAULT_MODE

ENDPGM, BARRIER, FAULT, BUDGET, BADPC, UNSUPPORTED = range(6)
NOPS = re.compile(r"BUFFER_GL[01]_INV|GLOBAL_INV|GLOBAL_WB|GLOBAL_WBINV|V_NOP_E(32|64)|V_PIPEFLUSH.*|DS_NOP|"
                  r"S_(NOP|WAIT.*|DELAY_ALU|CLAUSE|SENDMSG.*|TTRACEDATA.*|.*_INV|SETPRIO|SLEEP|CODE_END|SET_INST_PREFETCH_DISTANCE|"
                  r"INST_PREFETCH|VERSION|BARRIER_SIGNAL.*|PREFETCH.*|ICACHE_INV|DCACHE_INV|GL1_INV|DENORM_MODE|ROUND_MODE|SETHALT)")
BARRIERS = ("S_BARRIER", "S_BARRIER_WAIT")

class ProgramBuildError(RuntimeError):
  """The C compiler failed on an emulated kernel's program."""

@dataclass
class Decoded:
  pc: int
  inst: Inst | None
  size: int
  error: str | None = None

def decode_code(code: bytes, arch: str, base: int) -> list[Decoded]:
  """Every instruction of the code; bytes that do not decode become a trap that raises when reached."""
  out, off = [], 0
  while off < len(code):
    try:
      inst = decode(code, arch, off)
      out.append(Decoded(base + off, inst, inst.size))
      off += inst.size
    except ValueError as e:
      out.append(Decoded(base + off, None, 4, f"{e} (bytes {code[off:off + 8].hex()})"))
      off += 4
  return out

def is_branch(inst: Inst) -> bool:
  text = pcode_of(inst.op) or ""
  return re.search(r"^\s*PC\s*=", text, re.M) is not None

def branch_target(d: Decoded) -> int | None:
  if d.inst is None or d.inst.op.fmt != "SOPP" or "simm16" not in d.inst.vals or not is_branch(d.inst): return None
  simm = d.inst.vals["simm16"]
  simm -= (simm >> 15) << 16
  return d.pc + 4 + simm * 4

class QuickClang(ClangCompiler):
  """The CPU device's compiler at -O0: a new program starts running at once while the -O2 build is made in the background."""
  flags = tuple("-O0" if f == "-O2" else f for f in ClangCompiler.flags)

class Program:
  """The compiled code of one kernel: first a quick -O0 build, swapped for the -O2 one when that is ready (tiered JIT)."""
  def __init__(self, code: bytes, arch: str, base: int, entry: int, mode: FloatMode = DEFAULT_MODE):
    self.arch, self.base, self.code, self.entry, self.mode = arch, base, code, entry, mode
    self.insts = decode_code(code, arch, base)
    self.by_pc = {d.pc: d for d in self.insts}
    self.unsupported: dict[int, str] = {}
    self.build_error: BaseException | None = None
    self.src = self.render()
    self.libs: list[CPUProgram] = []
    self.load(QuickClang().compile_cached(self.src))
    self.optimized = threading.Thread(target=self.optimize, daemon=True)
    self.optimized.start()

  def optimize(self) -> None:
    """The background -O2 build; its failure is kept for check() to raise, never left as a silent slow tier."""
    try:
      save_shapes()
      self.load(Device["CPU"].compiler.compile_cached(self.src))
    except Exception as e:  # any failure of the build thread must reach the caller
      self.build_error = e

  def check(self) -> None:
    """Raise the background build's error, if it failed (and forget this program, so the next use builds it again)."""
    if self.build_error is not None:
      program.cache_clear()
      raise ProgramBuildError(f"the optimized (-O2) build of the emulated kernel failed: {type(self.build_error).__name__}: "
                              f"{self.build_error}") from self.build_error

  def load(self, lib: bytes) -> None:
    prg = CPUProgram("run", lib)
    prg.fxn.argtypes = [ctypes.c_void_p] * 4
    prg.fxn.restype = ctypes.c_int
    self.libs.append(prg)  # the old build stays loaded: a call may still be running in it
    self.fxn = prg.fxn

  def wait_optimized(self) -> None:
    self.optimized.join()
    self.check()

  def render(self) -> str:
    starts = {self.base, self.entry}
    for i, d in enumerate(self.insts):
      t = branch_target(d)
      if t is not None: starts.add(t)
      ends = d.inst is not None and (is_branch(d.inst) or d.inst.op.name in BARRIERS or d.inst.op.name.startswith("S_ENDPGM"))
      if ends and i + 1 < len(self.insts):
        starts.add(self.insts[i + 1].pc)
    shapes: dict[str, ShapeCode] = {}
    prelude: dict[str, None] = {}
    body: list[str] = []
    lens = self.block_len = self.block_lengths(starts)  # block start pc -> instructions (SQTT recording steps by blocks)
    for d in self.insts:
      if d.pc in starts:
        body.append(f"    case {d.pc - self.base}: if ((*budget -= {lens[d.pc]}) < 0) {{ {set_pc(d.pc)} return {BUDGET}; }}")
      body.extend(self.emit(d, shapes, prelude))
    return "\n".join([*prelude, *(s.src for s in shapes.values()),
                      "int run(unsigned int* st, unsigned char* mem, unsigned long long* tab, long long* budget) {",
                      "  for (;;) {",
                      f"    unsigned long long pc = (unsigned long long)st[{PC}] | ((unsigned long long)st[{PC + 1}] << 32);",
                      f"    switch (pc - {self.base}ull) {{", *body, f"    default: return {BADPC};", "    }", "  }", "}"])

  def block_lengths(self, starts: set[int]) -> dict[int, int]:
    out, cur = {}, None
    for d in self.insts:
      if d.pc in starts: cur = d.pc; out[cur] = 0
      if cur is not None: out[cur] += 1
    return out

  def emit(self, d: Decoded, shapes: dict[str, ShapeCode], prelude: dict[str, None]) -> list[str]:
    """The C statements of one instruction."""
    if d.inst is None:
      self.unsupported[d.pc] = f"cannot decode: {d.error}"
      return [f"      {set_pc(d.pc)} return {UNSUPPORTED};"]
    op = d.inst.op
    nxt = d.pc + d.size
    if op.name.startswith("S_ENDPGM"): return [f"      {set_pc(d.pc)} return {ENDPGM};"]
    if op.name in BARRIERS: return [f"      {set_pc(nxt)} return {BARRIER};"]
    if NOPS.fullmatch(op.name): return []
    sc = shape_code(d.inst, self.mode)
    if sc.error is not None:
      self.unsupported[d.pc] = f"{op.mnemonic} is not supported by the emulator ({sc.error})"
      return [f"      {set_pc(d.pc)} return {UNSUPPORTED};"]
    shapes.setdefault(sc.name, sc)
    for p in sc.prelude: prelude.setdefault(p, None)
    vals = dict(zip(var_fields(d.inst), shape_args(d.inst)))
    call = ", ".join([["st", "mem", "tab"][p] for p in sc.params] + [f"{vals[v[2:]]}ll" for v in sc.variables] + ["0", "1"])
    lines = []
    branch = is_branch(d.inst)
    if branch or "PC" in (pcode_of(op) or ""): lines.append(f"      {set_pc(d.pc)}")
    lines.append(f"      {sc.name}({call});")
    if 1 in sc.params: lines.append(f"      if (st[{FAULT_FLAG}]) {{ {set_pc(d.pc)} return {FAULT}; }}")
    if branch: lines.append("      continue;")
    return lines

def var_fields(inst: Inst) -> list[str]:
  """The field names whose values shape_args returns, in order."""
  return [f.name for f in inst.fmt.values if field_kind(inst, f.name)[0] in ("s", "v", "lit", "n")]

def set_pc(pc: int) -> str: return f"st[{PC}] = {pc & 0xFFFFFFFF}u; st[{PC + 1}] = {pc >> 32}u;"

@functools.lru_cache(maxsize=64)
def program(code: bytes, arch: str, base: int, entry: int, mode: FloatMode = DEFAULT_MODE) -> Program:
  """The compiled program of some code at a base address entered at `entry` (cached per code, arch and addresses)."""
  return Program(code, arch, base, entry, mode)
