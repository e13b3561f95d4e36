"""PROFILE=1 on DEV=AMD: every kernel launch's thread trace as wave timelines, written at exit as Chrome/Perfetto
trace-event JSON (PROFILE_PATH, default tg_profile.json in the temp folder) that ui.perfetto.dev opens.

The traces come from the virtual GPU (MOCKGPU=1), whose dispatches write SQTT streams (tg.amd_emu.sqtt); they are
decoded and mapped to each kernel's code like a hardware capture. Collecting SQTT from a real GPU (programming the
SQ_THREAD_TRACE registers and buffers) is not done yet: there the file lists no launches and a warning says why.
"""
from __future__ import annotations
import atexit
import os
import sys
import tempfile
from typing import Any

class Profiler:
  """The devices and programs of this process; at exit their traces become one file."""
  def __init__(self) -> None:
    self.devices: list[Any] = []
    self.programs: dict[tuple[int, int], Any] = {}  # (id(device), kernel entry address) -> AMDProgram

  def add_device(self, dev: Any) -> None: self.devices.append(dev)
  def add_program(self, prog: Any) -> None: self.programs[(id(prog.dev), prog.pgm)] = prog

  def streams(self) -> list[tuple[str, list]]:
    """(label, waves) per launch, in launch order per device."""
    from tg.amd_emu.sqtt import Code, decode, timeline
    out = []
    for dev in self.devices:
      traces = getattr(dev.kfd.kfd, "thread_traces", None)
      if traces is None:
        print(f"PROFILE=1: {dev.device} is a real GPU; tg collects thread traces only from the virtual one (MOCKGPU=1)", file=sys.stderr)
        continue
      arch = "rdna3" if dev.target.startswith("gfx11") else "rdna4"
      for n, (pgm, blob) in enumerate(traces):
        prog = self.programs.get((id(dev), pgm))
        code = Code(prog.codeobj, prog.name) if prog is not None else None
        out.append((f"{dev.device} #{n} {prog.name if prog is not None else hex(pgm)}", timeline(decode(blob, arch), code)))
    return out

  def write(self) -> None:
    from tg.amd_emu.sqtt import chrome
    path = os.environ.get("PROFILE_PATH") or os.path.join(tempfile.gettempdir(), "tg_profile.json")
    streams = self.streams()
    chrome.write(path, streams)
    print(f"PROFILE=1: {len(streams)} kernel launches traced, written to {path}", file=sys.stderr)

PROFILER: Profiler | None = None

def profiler() -> Profiler:
  """The process's profiler, made on first use (the one piece of global state PROFILE=1 needs: it writes at exit)."""
  global PROFILER
  if PROFILER is None:
    PROFILER = Profiler()
    atexit.register(PROFILER.write)
  return PROFILER
