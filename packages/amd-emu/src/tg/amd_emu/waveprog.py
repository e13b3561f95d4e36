"""A kernel's code as a wave program in two tiers, both run by `WaveProgram.run_group` (tier1.tg_emu_group: a workgroup's waves).

(Wave program, not tg.codegen's ProgramSpec nor a device Program: the emulator's compiled form of machine code.)
Tier 1 (tg.amd_emu.tier1) starts at once: a table of calls of shapes compiled before and shared by every program. A
program that runs more than TIERUP wave-instructions there is hot: its whole code becomes one C function (a dispatch
loop over basic blocks, each a run of direct shape calls) compiled at -O2 in the background (tier 2), and the waves move
to it at their next block start. Both tiers come from one plan of the code and leave the same state.

Each wave starts at the PC in its state and stops for one of these reasons: the end of the program, a barrier, a memory fault, the
instruction budget, a jump to an address that is no block (or past the end of the code), or an instruction the emulator
cannot run. Blocks start at the entry, branch targets and after branches and barriers; every block charges its length
to the budget on entry.
"""
from __future__ import annotations
import ctypes
import functools
import re
import threading
from dataclasses import dataclass
import numpy as np
from tg.codegen import CLibrary, compile_c
from .decode import decode
from .inst import Inst
from .shape_c import shape_code, save_shapes, ShapeCode
from .isa import Op
from .shapes import shape_args, shape_kinds, PC, FAULT as FAULT_FLAG, pcode_of, FloatMode, DEFAULT_MODE
from . import shapelib
from .tier1 import interpreter, group_runner, ENDPGM, BARRIER, FAULT, BUDGET, BADPC, UNSUPPORTED, YIELD, BLOCK, STOP, CALL, \
  SET_PC, CHECK_FAULT, BRANCH

__all__ = ["WaveProgram", "wave_program", "ProgramBuildError", "ENDPGM", "BARRIER", "FAULT", "BUDGET", "BADPC", "UNSUPPORTED", "NOPS", "BARRIERS"]

NOPS = re.compile(r"BUFFER_GL[01]_INV|GLOBAL_INV|GLOBAL_WB|GLOBAL_WBINV|V_NOP_E(32|64)|V_PIPEFLUSH.*|DS_NOP|"
                  r"S_(NOP|WAIT.*|DELAY_ALU|CLAUSE|SENDMSG.*|TTRACEDATA.*|.*_INV|SETPRIO|SLEEP|CODE_END|SET_INST_PREFETCH_DISTANCE|"
                  r"INST_PREFETCH|VERSION|PREFETCH.*|ICACHE_INV|DCACHE_INV|GL1_INV|DENORM_MODE|ROUND_MODE|SETHALT)")
BARRIERS = ("S_BARRIER", "S_BARRIER_WAIT")
TG_RUN = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_void_p] * 5)  # a tier's entry: state, memory, range table, budget, context
TIERUP = 2_000_000  # wave-instructions in tier 1 before a program is hot (a clang -O2 run costs what tier 1 runs in ~0.1 s)
NEVER = 1 << 62

class ProgramBuildError(RuntimeError):
  """The C compiler failed on an emulated kernel's program."""

@dataclass
class Decoded:
  pc: int
  inst: Inst | None
  size: int
  error: str | None = None

@dataclass(frozen=True)
class Step:
  """One instruction's part: a shape call (sc, its variables' values, flags) or a stop with a return code at a pc."""
  pc: int
  sc: ShapeCode | None = None
  args: tuple[int, ...] = ()
  flags: int = 0
  rc: int = 0
  stop_pc: int = 0

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

@functools.cache
def op_flow(op: Op) -> tuple[bool, bool]:
  """(a branch: its pseudocode assigns PC, it reads or writes PC at all), once per opcode."""
  text = pcode_of(op) or ""
  return re.search(r"^\s*PC\s*=", text, re.M) is not None, "PC" in text

def is_branch(inst: Inst) -> bool: return op_flow(inst.op)[0]

def branch_target(d: Decoded) -> int | None:
  if d.inst is None or d.inst.op.fmt != "SOPP" or "simm16" not in d.inst.vals or not is_branch(d.inst): return None
  simm = d.inst.vals["simm16"]
  simm -= (simm >> 15) << 16
  return d.pc + 4 + simm * 4

class WaveProgram:
  """The code of one kernel, run in tier 1 until hot, then in tier 2. tier=1 or 2 pins it to one tier (tests, benchmarks)."""
  def __init__(self, code: bytes, arch: str, base: int, entry: int, mode: FloatMode = DEFAULT_MODE, tier: int | None = None):
    if tier not in (None, 1, 2): raise ValueError(f"tier {tier!r}: 1 (shape table), 2 (whole-program C) or None (tier 1 until hot)")
    self.arch, self.base, self.code, self.entry, self.mode, self.tier = arch, base, code, entry, mode, tier
    self.insts = decode_code(code, arch, base)
    self.by_pc = {d.pc: d for d in self.insts}
    self.end = base + sum(d.size for d in self.insts)
    self.unsupported: dict[int, str] = {}
    self.starts = self.block_starts()
    self.lens = self.block_lengths()
    self.steps = {d.pc: s for d in self.insts if (s := self.step(d)) is not None}
    self.build_error: BaseException | None = None
    self.lock = threading.Lock()
    self.optimized: threading.Thread | None = None
    self.ctl = ctypes.c_longlong(NEVER if tier == 1 else TIERUP)
    self.libs: list[CLibrary] = []
    if tier == 2: self.load(self.build())
    else:
      self.start_tier1()
      save_shapes()

  # ***** the plan both tiers follow *****

  def block_starts(self) -> set[int]:
    starts = {self.base, self.entry}
    for i, d in enumerate(self.insts):
      if (t := branch_target(d)) is not None: starts.add(t)
      ends = d.inst is not None and (is_branch(d.inst) or d.inst.op.name in BARRIERS or d.inst.op.name.startswith("S_ENDPGM"))
      if ends and i + 1 < len(self.insts): starts.add(self.insts[i + 1].pc)
    return starts

  def block_lengths(self) -> dict[int, int]:
    out, cur = {}, None
    for d in self.insts:
      if d.pc in self.starts: cur = d.pc; out[cur] = 0
      if cur is not None: out[cur] += 1
    return out

  def step(self, d: Decoded) -> Step | None:
    """What one instruction does (None: nothing, a no-op to the emulator)."""
    if d.inst is None:
      self.unsupported[d.pc] = f"cannot decode: {d.error}"
      return Step(d.pc, rc=UNSUPPORTED, stop_pc=d.pc)
    op = d.inst.op
    if op.name.startswith("S_ENDPGM"): return Step(d.pc, rc=ENDPGM, stop_pc=d.pc)
    if op.name in BARRIERS: return Step(d.pc, rc=BARRIER, stop_pc=d.pc + d.size)
    if NOPS.fullmatch(op.name): return None
    kinds = shape_kinds(d.inst)
    sc = shape_code(d.inst, self.mode, kinds)
    if sc.error is not None:
      self.unsupported[d.pc] = f"{op.mnemonic} is not supported by the emulator ({sc.error})"
      return Step(d.pc, rc=UNSUPPORTED, stop_pc=d.pc)
    vals = shape_args(d.inst, kinds)
    branch, uses_pc = op_flow(op)
    flags = (SET_PC if branch or uses_pc else 0) | (CHECK_FAULT if 1 in sc.params else 0) | (BRANCH if branch else 0)
    return Step(d.pc, sc, tuple(vals[v[2:]] for v in sc.variables), flags)

  # ***** tier 1 *****

  def start_tier1(self) -> None:
    """The step table over the shared shape entries: BLOCK at each block start, then the steps; a STOP past the end."""
    addr = shapelib.entries([s.sc for s in self.steps.values() if s.sc is not None])
    rows: list[tuple[int, int, int, int]] = []
    args: list[int] = []
    blocks = np.full(max((self.end - self.base + 3) // 4, 1), -1, np.int64)
    for d in self.insts:
      if d.pc in self.starts:
        if (d.pc - self.base) % 4 == 0: blocks[(d.pc - self.base) // 4] = len(rows)
        rows.append((BLOCK, d.pc, self.lens[d.pc], 0))
      if (s := self.steps.get(d.pc)) is None: continue
      if s.sc is None: rows.append((STOP, s.rc, s.stop_pc, 0))
      else:
        rows.append((CALL | s.flags, addr[s.sc.name], len(args), s.pc))
        args.extend(s.args)
    rows.append((STOP, BADPC, self.end, 0))
    steps, argv = np.array(rows, np.int64), np.array(args or [0], np.int64)
    ctx = np.array([steps.ctypes.data, argv.ctypes.data, blocks.ctypes.data, len(blocks), self.base, ctypes.addressof(self.ctl)], np.int64)
    self.table = (steps, argv, blocks, ctx)  # kept alive: the C reads them
    self.tier_fn = (interpreter(), ctx.ctypes.data)  # one attribute: a tier swap is one store

  # ***** tier 2 *****

  def render(self) -> str:
    shapes: dict[str, ShapeCode] = {}
    prelude: dict[str, None] = {}
    body: list[str] = []
    for d in self.insts:
      if d.pc in self.starts:
        body.append(f"    case {d.pc - self.base}: if ((*budget -= {self.lens[d.pc]}) < 0) {{ {set_pc(d.pc)} return {BUDGET}; }}")
      if (s := self.steps.get(d.pc)) is None: continue
      if s.sc is None:
        body.append(f"      {set_pc(s.stop_pc)} return {s.rc};")
        continue
      shapes.setdefault(s.sc.name, s.sc)
      prelude.update(dict.fromkeys(s.sc.prelude))
      if s.flags & SET_PC: body.append(f"      {set_pc(s.pc)}")
      body.append(f"      {s.sc.call([f'{a}ll' for a in s.args])};")
      if s.flags & CHECK_FAULT: body.append(f"      if (st[{FAULT_FLAG}]) {{ {set_pc(s.pc)} return {FAULT}; }}")
      if s.flags & BRANCH: body.append("      continue;")
    return "\n".join([*prelude, *(s.src for s in shapes.values()),
                      "int run(unsigned int* st, unsigned char* mem, unsigned long long* tab, long long* budget, const long long* ctx) {",
                      "  for (;;) {",
                      f"    unsigned long long pc = (unsigned long long)st[{PC}] | ((unsigned long long)st[{PC + 1}] << 32);",
                      f"    switch (pc - {self.base}ull) {{", *body, f"      {set_pc(self.end)} return {BADPC};",
                      f"    default: return {BADPC};", "    }", "  }", "}"])

  def build(self) -> bytes:
    save_shapes()
    return compile_c(self.render(), 2)

  def load(self, lib: bytes) -> None:
    prg = CLibrary(lib)
    self.libs.append(prg)  # the old tier stays loaded: a call may still be running in it
    self.tier_fn = (prg.address("run"), 0)
    self.ctl.value = -1  # waves in tier 1 stop at their next block start and go on here

  def optimize(self) -> None:
    """The background tier-2 build; its failure is kept for check() to raise, never left as a silent slow tier."""
    try: self.load(self.build())
    except Exception as e:  # any failure of the build thread must reach the caller
      self.build_error = e

  def tier_up(self) -> None:
    """Start the tier-2 build (once)."""
    with self.lock:
      if self.optimized is None and self.tier is None:
        self.optimized = threading.Thread(target=self.optimize, daemon=True)
        self.optimized.start()

  def run_group(self, sts: ctypes.Array, budgets: ctypes.Array, state: ctypes.Array, tab: int) -> tuple[int, int]:
    """Run a workgroup's waves (arrays of their states' and budgets' addresses, and RUNNING/DONE/WAITING) in the current
    tier until all end (ENDPGM) or one stops otherwise: (the code, that wave)."""
    pos, run = ctypes.c_int(-1), group_runner()
    while (rc := run(*self.tier_fn, sts, budgets, state, len(state), tab, ctypes.byref(pos))) == YIELD:
      if self.optimized is None:
        self.ctl.value = NEVER  # until the build is loaded
        self.tier_up()
    return rc, pos.value

  def run_wave(self, st: int, budget: int, tab: int) -> int:
    """Run one wave (the addresses of its state and budget) in the current tier until it stops, for callers that step waves
    themselves (sqtt.record); a tier swap on the way (YIELD) goes on in the new tier."""
    while (rc := TG_RUN(self.tier_fn[0])(st, None, tab, budget, self.tier_fn[1])) == YIELD:
      if self.optimized is None:
        self.ctl.value = NEVER
        self.tier_up()
    return rc

  def check(self) -> None:
    """Raise the background build's error, if it failed (and forget this program, so the next use builds it again)."""
    if self.build_error is not None:
      _wave_program.cache_clear()
      raise ProgramBuildError(f"the optimized (-O2) build of the emulated kernel failed: {type(self.build_error).__name__}: "
                              f"{self.build_error}") from self.build_error

  def wait_optimized(self) -> None:
    """Move to tier 2 now (a benchmark's steady state) and wait for it."""
    self.tier_up()
    if self.optimized is not None: self.optimized.join()
    self.check()

def set_pc(pc: int) -> str: return f"st[{PC}] = {pc & 0xFFFFFFFF}u; st[{PC + 1}] = {pc >> 32}u;"

def wave_program(code: bytes, arch: str, base: int, entry: int, mode: FloatMode = DEFAULT_MODE, tier: int | None = None) -> WaveProgram:
  """The wave program of some code at a base address entered at `entry` (cached per code, arch, addresses, mode and tier)."""
  return _wave_program(code, arch, base, entry, mode, tier)

_wave_program = functools.lru_cache(maxsize=64)(WaveProgram)
