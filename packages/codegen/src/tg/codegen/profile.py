"""Profile events: one record per kernel launch, copy or batch of kernels, with its start on the host clock and its
duration as the device measured it. Recorded while VIZ is on (launches then wait for their kernel, to be timed); VIZ's
timeline reads them from the saved trace (its "timeline" section)."""
from __future__ import annotations
import time
from dataclasses import asdict, dataclass
from typing import Any
from tg.uop import VIZ, track

@dataclass(frozen=True)
class ProfileEvent:
  kind: str       # "kernel", "copy" or "batch"
  name: str       # the kernel's name (a batch: its kernels' names joined)
  device: str
  start_ns: int   # time.perf_counter_ns() at the launch
  dur_ns: int     # the device's time for it

events: list[ProfileEvent] = []

def profiling() -> bool:
  """Whether launches are recorded (VIZ on): callers then launch with wait=True and call `add`."""
  return bool(VIZ.value)

def add(kind: str, name: str, device: str, start_ns: int, dur_s: float | None) -> None:
  """Record a launch that started at start_ns (perf_counter_ns) and took dur_s seconds (the wall time since start when
  the device gave none)."""
  dur_ns = int(dur_s * 1e9) if dur_s is not None else time.perf_counter_ns() - start_ns
  events.append(ProfileEvent(kind, name, device, start_ns, dur_ns))

def _timeline() -> list[dict[str, Any]]: return [asdict(e) for e in events]
track.sections["timeline"] = _timeline
