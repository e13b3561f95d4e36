"""Running a schedule: kernels compiled once per (AST, device, opt switches) and reused, copies by Buffer.copy_from. Every
launch counts in GlobalCounters; with DEBUG >= 2 each is timed and printed as tinygrad does."""
from __future__ import annotations
import time, weakref
from typing import Any
from tg.uop import UOp, Ops, DEBUG
from tg.codegen import Buffer, Device, GlobalCounters, BEAM, NOOPT, USE_TC, CHECK_OOB, TRANSCENDENTAL, profile
from tg.codegen.pipeline import get_program, CompiledRunner
from tg.codegen.program import ProgramSpec
from tg.tensor.schedule import ExecItem

class Counters:
  """What ran: kernels launched, kernels compiled (lowered + compiled), copies, and ExecItems the scheduler made."""
  kernels = 0
  compiled = 0
  copies = 0
  scheduled = 0
  @classmethod
  def reset(cls) -> None: cls.kernels = cls.compiled = cls.copies = cls.scheduled = 0

_runners: dict[tuple[UOp, str, int, int, int, int, int], CompiledRunner] = {}

def _key(ast: UOp, device: str) -> tuple[UOp, str, int, int, int, int, int]:
  return (ast, device, BEAM.value, NOOPT.value, USE_TC.value, int(CHECK_OOB), TRANSCENDENTAL.value)

def get_runner(ast: UOp, device: str) -> CompiledRunner:
  """The compiled kernel for an AST on a device; an identical AST (on any buffers) is lowered and compiled once for each
  setting of the switches that change its code (BEAM, NOOPT, USE_TC, CHECK_OOB, TRANSCENDENTAL: Context can change them
  between calls)."""
  if (r := _runners.get(key := _key(ast, device))) is None: _compile([key]); r = _runners[key]
  return r

def compile_ahead(items: list[ExecItem]) -> None:
  """Lower the kernels of items that aren't compiled yet, then compile them together: a C compiler per core at once."""
  keys = {key: None for ei in items if ei.ast.op is not _COPY and (key := _key(ei.ast, ei.bufs[0].device)) not in _runners}
  if len(keys) > 1: _compile(list(keys))

def _compile(keys: list[tuple[UOp, str, int, int, int, int, int]]) -> None:
  specs = [get_program(key[0], Device[key[1]].renderer) for key in keys]
  for device in {key[1] for key in keys}:
    mine = [(key, p) for key, p in zip(keys, specs) if key[1] == device]
    for (key, p), lib in zip(mine, Device[device].compiler.compile_cached_many([p.src for _, p in mine])):
      Counters.compiled += 1
      _runners[key] = CompiledRunner(p, lib)
      if DEBUG >= 2: print(f"compiled {p.name} for {device}")

def launch(runner: CompiledRunner, bufs: list[Any], var_vals: dict[str, int]) -> None:
  """Run a kernel and count it; with DEBUG >= 2 wait for it and print its name, launch size, time and rates; with VIZ on
  wait for it and record a profile event."""
  prof = profile.profiling()
  start = time.perf_counter_ns() if prof else 0
  t = runner(bufs, var_vals, wait=prof or DEBUG.value >= 2)
  count_launch(runner.p)
  if prof: profile.add("kernel", runner.p.name, runner.p.device, start, t)
  if DEBUG.value >= 2 and t is not None: _report(runner.p, t)

def count_launch(p: ProgramSpec) -> None:
  """One launch of p in Counters and GlobalCounters (also for the kernels of a batch, launched in one call)."""
  g = GlobalCounters
  Counters.kernels += 1
  g.kernel_count += 1
  g.global_ops += p.estimates_flops
  g.global_mem += p.estimates_bytes

def _report(p: ProgramSpec, t: float) -> None:
  _print_line(p.device, p.name, f"global {str(tuple(p.global_size)):15s} local {str(tuple(p.local_size or ())):12s}", p.estimates_flops,
              p.estimates_bytes, t)

def report_batch(ps: list[ProgramSpec], t: float) -> None:
  """DEBUG >= 2's line for kernels launched by one call (a TinyJit replay's batch): one time for all of them; JIT_BATCH=0
  times each."""
  _print_line(ps[0].device, f"batch of {len(ps)} kernels", f"{', '.join(p.name for p in ps)[:41]:41s}", sum(p.estimates_flops for p in ps),
              sum(p.estimates_bytes for p in ps), t)

def _print_line(device: str, name: str, launch: str, flops: int, mem: int, t: float) -> None:
  GlobalCounters.time_sum_s += t
  print(f"*** {device:7s} {GlobalCounters.kernel_count:5d} {name:36s} {launch} {t * 1e6:9.2f} us {flops / max(t, 1e-9) / 1e9:9.2f} GFLOP/s "
        f"{mem / max(t, 1e-9) / 1e9:8.2f} GB/s")

_COPY = Ops.COPY  # (Ops.X is a slow lookup on Python 3.11: once per launch)

unrun: weakref.WeakSet[Buffer] = weakref.WeakSet()  # new buffers of tensors Tensor.schedule() scheduled, until an item writing them runs

def _check_written(ei: ExecItem) -> None:
  """An item reading a buffer in `unrun` would read unwritten memory: it raises; the buffers it writes leave `unrun`."""
  outs = [0] if ei.ast.op is _COPY else get_runner(ei.ast, ei.bufs[0].device).p.outs
  if any(b in unrun and i not in outs for i, b in enumerate(ei.bufs)):
    raise RuntimeError("a kernel reads a tensor whose kernels were scheduled (Tensor.schedule) and have not run: run_schedule(items) first")
  unrun.difference_update(ei.bufs[i] for i in outs)

def run_item(ei: ExecItem) -> None:
  if unrun: _check_written(ei)
  if ei.ast.op is _COPY:
    dst, src = ei.bufs
    start = time.perf_counter_ns()
    dst.copy_from(src)
    Counters.copies += 1
    if profile.profiling(): profile.add("copy", f"copy {src.nbytes} bytes {src.device} -> {dst.device}", dst.device, start, None)
    return
  launch(get_runner(ei.ast, ei.bufs[0].device), ei.bufs, ei.var_vals)

capturing: list[list[ExecItem]] = []  # TinyJit records what runs while it captures (innermost last)
view_needs: list[list[UOp]] = []  # and the sizes (each >= 0) its views need of the variables' values (movement._fits)

def run_schedule(items: list[ExecItem], consume: bool = False) -> None:
  """Run the items in order. consume=True (a list only the caller holds, as realize's): each item is taken out of the list
  as it runs, so a buffer only the schedule holds (an intermediate no tensor reads) is freed, back to its allocator for
  the next kernels to reuse, once its last reader has run: a chain of kernels needs two such buffers at a time, not one
  each. TinyJit keeps every buffer of what it captures (its replays run on them)."""
  if len(items) > 1: compile_ahead(items)
  if consume and not capturing:
    items.reverse()
    while items: run_item(items.pop())
    return
  for ei in items: run_item(ei)
  if capturing: capturing[-1].extend(items)
