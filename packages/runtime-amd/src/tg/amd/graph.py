"""TinyJit's batches on AMD (HCQ graph): the kernels of a jitted step recorded once into an indirect buffer (IB), so a replay
is one command stream on the compute queue instead of one submission per kernel.

The IB holds each kernel's dispatch with a barrier (CS_PARTIAL_FLUSH) between them; the kernel arguments live in memory of
the graph's own that the dispatches point at. A replay patches what changes (the arguments of kernels whose buffers were
swapped, variable values) once the previous replay has finished with them, then submits: wait for the copies its buffers
need, the queue's scratch setup, the IB, signal the compute queue's timeline."""
from __future__ import annotations
import sys
from typing import TYPE_CHECKING, Any
from tg.uop import round_up
if TYPE_CHECKING:
  from tg.amd.device import AMDDevice
  from tg.amd.timeline import Fence

class AMDGraph:
  """Kernels (CompiledRunner, buffers in slot order) launched in order by one submission per call."""
  def __init__(self, dev: AMDDevice, runs: list[tuple[Any, list[Any]]]):
    self.dev, self.runs = dev, [(r, list(bufs)) for r, bufs in runs]
    sizes = [round_up(r._prg.kernarg_size, 64) for r, _ in runs]
    self.offsets = [sum(sizes[:k]) for k in range(len(sizes))]
    self.kernargs = dev.kfd.alloc(sum(sizes), vram=False)
    q, cmds = dev.compute, []
    for k, (r, _) in enumerate(runs):
      va = self.kernargs.va + self.offsets[k]
      if k: cmds += q.barrier()
      cmds += q.dispatch(r._prg.pgm, r._prg.rsrc, [va & 0xFFFFFFFF, va >> 32], r.p.global_size, r.p.local_size)
    self.ib = dev.kfd.alloc(len(cmds) * 4, vram=False)
    self.ib.write_dwords(cmds)
    self.ndwords = len(cmds)
    self.stale = set(range(len(runs)))  # kernels whose arguments must be (re)written
    self.vals: list[tuple[int, ...] | None] = [None] * len(runs)
    self.done: Fence | None = None  # the last replay's

  def update(self, k: int, slot: int, buf: Any) -> None:
    self.runs[k][1][slot] = buf
    self.stale.add(k)

  def __call__(self, var_vals: dict[str, int]) -> None:
    changed = [k for k, (r, _) in enumerate(self.runs) if k in self.stale or self.vals[k] != self.values(r, var_vals)]
    if changed and self.done is not None: self.dev.wait(self.done)  # the last replay may still read them
    for k in changed:
      r, bufs = self.runs[k]
      self.vals[k] = self.values(r, var_vals)
      view = self.kernargs.view(self.offsets[k], round_up(r._prg.kernarg_size, 64))
      r._prg.fill_args(view, [b.ensure_allocated()._buf for b in bufs], r.p.global_size, r.p.local_size, self.vals[k])
    self.stale.clear()
    q = self.dev.compute
    self.done = self.dev.submit(q, q.scratch_regs() + q.indirect(self.ib.va, self.ndwords), [b._buf for _, bufs in self.runs for b in bufs])

  @staticmethod
  def values(r: Any, var_vals: dict[str, int]) -> tuple[int, ...]: return tuple(var_vals[v.arg[0]] for v in r.p.vars)

  def __del__(self, finalizing=sys.is_finalizing) -> None:  # bound now: at exit the module's globals are gone
    if finalizing(): return  # as AMDProgram's: nothing to give back at exit
    if hasattr(self, "ib"):
      if self.done is not None: self.dev.wait(self.done)  # the GPU may still read them
      self.dev.kfd.free(self.ib)
      self.dev.kfd.free(self.kernargs)
