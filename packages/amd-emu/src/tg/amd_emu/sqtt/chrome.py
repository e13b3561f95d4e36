"""Chrome/Perfetto trace-event JSON from wave timelines: one process per stream (a kernel launch's SE), one track
per (CU, SIMD, wave slot), each wave a slice with its instructions as slices inside it (each lasting until the wave's
next issue).

Times are the stream's clock (shader cycles), written as nanoseconds (1 cycle = 1 ns) so the viewers' rulers count
cycles. ui.perfetto.dev and chrome://tracing open the file.
"""
from __future__ import annotations
import json
from typing import Any, Iterable
from .timeline import WaveTrace

def events(streams: Iterable[tuple[str, list[WaveTrace]]]) -> list[dict[str, Any]]:
  """The trace events of (label, waves) streams."""
  out: list[dict[str, Any]] = []
  for pid, (label, waves) in enumerate(streams):
    out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}})
    tracks: dict[tuple[int, int, int], int] = {}
    for w in waves:
      key = (w.cu, w.simd, w.slot)
      if key not in tracks:
        tracks[key] = len(tracks)
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tracks[key], "args": {"name": f"CU {w.cu} SIMD {w.simd} wave {w.slot}"}})
      tid = tracks[key]
      end = w.end if w.end is not None else max([w.start, *(i.time for i in w.issues)]) + 1
      out.append(slice_event("wave", pid, tid, w.start, end, {"instructions": len(w.issues), "complete": w.end is not None}))
      for k, i in enumerate(w.issues):
        nxt = w.issues[k + 1].time if k + 1 < len(w.issues) else end
        out.append(slice_event(i.text.split(" ")[0], pid, tid, i.time, max(nxt, i.time), {"pc": f"{i.pc:#x}", "stall": i.stall, "inst": i.text}))
  return out

def slice_event(name: str, pid: int, tid: int, start: int, end: int, args: dict[str, Any]) -> dict[str, Any]:
  return {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": start / 1000, "dur": (end - start) / 1000, "args": args}

def write(path: str, streams: Iterable[tuple[str, list[WaveTrace]]]) -> None:
  with open(path, "w") as f: json.dump({"traceEvents": events(streams), "displayTimeUnit": "ns"}, f)
