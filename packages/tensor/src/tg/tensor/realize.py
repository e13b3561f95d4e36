"""Running a schedule: kernels compiled once per (AST, device) and reused, copies through the host."""
from __future__ import annotations
from tg.uop import UOp, Ops, DEBUG
from tg.codegen.device import Device, CHECK_OOB
from tg.codegen.pipeline import get_program, CompiledRunner
from tg.tensor.schedule import ExecItem

class Counters:
  """What ran: kernels launched, kernels compiled (lowered + compiled), copies, and ExecItems the scheduler made."""
  kernels = 0
  compiled = 0
  copies = 0
  scheduled = 0
  @classmethod
  def reset(cls) -> None: cls.kernels = cls.compiled = cls.copies = cls.scheduled = 0

_runners: dict[tuple[UOp, str, int], CompiledRunner] = {}

def get_runner(ast: UOp, device: str) -> CompiledRunner:
  """The compiled kernel for an AST on a device; an identical AST (on any buffers) is lowered and compiled once."""
  if (r := _runners.get(key := (ast, device, int(CHECK_OOB)))) is None:  # CHECK_OOB=1 builds other code
    Counters.compiled += 1
    r = _runners[key] = CompiledRunner(get_program(ast, Device[device].renderer))
    if DEBUG >= 2: print(f"compiled {r.p.name} for {device}")
  return r

def run_item(ei: ExecItem) -> None:
  if ei.ast.op is Ops.COPY:
    dst, src = ei.bufs
    mv = memoryview(bytearray(src.nbytes))
    src.copyout(mv)
    dst.copyin(mv)
    Counters.copies += 1
    return
  get_runner(ei.ast, ei.bufs[0].device)(ei.bufs, ei.var_vals)
  Counters.kernels += 1

capturing: list[list[ExecItem]] = []  # TinyJit records what runs while it captures (innermost last)

def run_schedule(items: list[ExecItem]) -> None:
  for ei in items: run_item(ei)
  if capturing: capturing[-1].extend(items)
