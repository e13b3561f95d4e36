"""Record what the emulator executes, wave by wave, for an SQTT stream (`SQTT=1` on the virtual GPU).

The recorder runs each wave one basic block at a time: it gives the program (in whichever tier it runs) an instruction budget of exactly
the block's length, so the program stops at the next block's start (or ends, or waits at a barrier) and the block's
instructions are known to have run. Results are the same as an unrecorded run; the wave's own budget is kept.
"""
from __future__ import annotations
import ctypes
from dataclasses import dataclass, field
from typing import Any
from ..inst import Inst
from ..waveprog import BUDGET, ENDPGM, BARRIER

@dataclass
class WaveRun:
  """One wave's executed instructions (absolute pc, instruction) in order; `index` is its place in its workgroup."""
  workgroup: tuple[int, int, int] | None
  index: int
  executed: list[tuple[int, Inst]] = field(default_factory=list)

class Recorder:
  """Pass as `trace=` to emu.dispatch/launch; `runs` then holds every wave in launch order; `stream(arch)` writes them
  as one SE's SQTT blob through the timing model."""
  def __init__(self) -> None:
    self.runs: list[WaveRun] = []
    self.by_wave: dict[tuple[tuple[int, int, int] | None, int], WaveRun] = {}
    self.index: dict[int, tuple[Any, dict[int, int]]] = {}  # id(program) -> (program, pc -> index into its insts)

  def run(self, prog: Any, w: Any, tab: int, workgroup: tuple[int, int, int] | None, i: int) -> int:
    """Run wave w like the program itself would, recording each block it completes."""
    if (workgroup, i) not in self.by_wave:
      self.by_wave[(workgroup, i)] = WaveRun(workgroup, i)
      self.runs.append(self.by_wave[(workgroup, i)])
    run = self.by_wave[(workgroup, i)]
    if id(prog) not in self.index: self.index[id(prog)] = (prog, {d.pc: k for k, d in enumerate(prog.insts)})
    at = self.index[id(prog)][1]
    while True:
      pc, left = w.pc, w.budget.value
      n = prog.lens.get(pc)
      if n is None or n > left: return prog.run_wave(w.st.ctypes.data, ctypes.addressof(w.budget), tab)  # a bad pc or no budget: its error
      w.budget.value = n
      rc = prog.run_wave(w.st.ctypes.data, ctypes.addressof(w.budget), tab)
      w.budget.value = left - n
      if rc not in (BUDGET, ENDPGM, BARRIER): return rc
      block = prog.insts[at[pc]:at[pc] + n]
      run.executed += [(d.pc, d.inst) for d in block if d.inst is not None]
      if rc != BUDGET: return rc

  def stream(self, arch: str) -> bytes:
    from .timing import schedule
    from .encode import Writer
    out = Writer(arch)
    for time, name, fields in schedule(self.runs): out.put(name, fields, time=time)
    return out.bytes()
