"""VIZ on a tensor program: the schedule and each kernel's lowering are groups of the trace, a kernel's group holds the
source that runs (the same as with VIZ off), every recorded rewrite replays to its output, and each launch is a profile
event of the timeline."""
from __future__ import annotations
import pathlib
from typing import Iterator
import numpy as np
import pytest
from tg.uop import Context, track
from tg.uop.viz import Trace, load
from tg.codegen import profile, Device, get_program
from tg.tensor import Tensor, Counters
from tg.tensor.jit import TinyJit

@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
  track.reset(); profile.events.clear()
  yield
  track.reset(); profile.events.clear()

def test_schedule_kernels_and_timeline(tmp_path: pathlib.Path) -> None:
  a, b = np.arange(7 * 13, dtype=np.float32).reshape(7, 13), np.full((7, 13), 0.5, np.float32)
  with Context(VIZ=-1):
    Counters.reset()
    out = ((Tensor(a) + Tensor(b)).exp2().sum(1) * 3).numpy()
    launched = Counters.kernels
  np.testing.assert_allclose(out, (np.exp2(a + b).sum(1) * 3), rtol=1e-5)
  kinds = [g.kind for g in track.groups]
  assert "schedule" in kinds and "kernel" in kinds
  sched = next(g for g in track.groups if g.kind == "schedule" and any(r.name.startswith("kernel ") for r in g.rewrites))
  assert sched.rewrites[0].name == "schedule"
  kernel_asts = [r.output for r in sched.rewrites[1:]]
  assert list(sched.rewrites[0].output.src) == kernel_asts  # the schedule step ends at the SINK of the kernels it built
  # each lowered kernel: its name and source are the program's, the same program as lowering it with VIZ off
  kernels = [g for g in track.groups if g.kind == "kernel"]
  assert len(kernels) >= len(kernel_asts)
  renderer = Device["CPU"].renderer
  for ast, g in zip(kernel_asts, kernels):
    p = get_program(ast, renderer)
    assert (g.name, g.info["source"], g.info["device"]) == (p.name, p.src, "CPU")
    assert [r.name for r in g.rewrites][:2] == ["flatten", "simplify"] and sum(len(r.matches) for r in g.rewrites) > 0
  # the timeline: one event per launch, with the launched kernels' names, in order, each timed
  events = [e for e in profile.events if e.kind == "kernel"]
  assert len(events) == launched and {e.name for e in events} <= {g.name for g in kernels}
  assert all(e.dur_ns > 0 and e.device == "CPU" for e in events) and [e.start_ns for e in events] == sorted(e.start_ns for e in events)
  # saved and read back: the timeline section and every rewrite replaying to its output
  data = load(track.save(tmp_path / "viz.pkl"))
  assert [(e["name"], e["dur_ns"]) for e in data["timeline"]] == [(e.name, e.dur_ns) for e in profile.events]
  trace = Trace(data)
  for gi, grp in enumerate(data["groups"]):
    for ri, rw in enumerate(grp["rewrites"]):
      assert trace.root_at(gi, ri, len(rw["matches"])) == rw["output"], f"{grp['name']}/{rw['name']} doesn't replay to its output"

def test_off_records_no_events() -> None:
  (Tensor(np.ones((3, 5), np.float32)) * 2).numpy()
  assert profile.events == [] and track.groups == []

def test_jit_batches_are_events() -> None:
  @TinyJit
  def f(x: Tensor) -> Tensor: return (x.exp2().sum(0).contiguous() * 2 + 1).contiguous().exp2().sum()
  with Context(VIZ=-1):
    for _ in range(4): f(Tensor(np.ones((5, 11), np.float32))).numpy()
  # calls 3 and 4 replay the three kernels as one batch: one event each, named after its kernels
  batch = [e for e in profile.events if e.kind == "batch"]
  names = ", ".join(st.runner.p.name for st in f.steps)
  assert len(f.steps) == 3 and [e.name for e in batch] == [names, names] and all(e.dur_ns > 0 for e in batch)
