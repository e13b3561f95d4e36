"""The text summary of SQTT streams that `tg-amd-emu sqtt` prints: per stream its packets and waves; per traced wave
its lifetime, instruction count and stalls (`verbose`: every instruction with its issue time and stall)."""
from __future__ import annotations
import collections
from .decode import Packet
from .timeline import WaveTrace

def summary(label: str, packets: list[Packet], waves: list[WaveTrace], verbose: bool = False) -> list[str]:
  counts = collections.Counter(p.name for p in packets)
  insts = sum(counts[k] for k in ("INST", "VALUINST", "IMMEDIATE", "IMMEDIATE_MASK"))
  out = [f"{label}: layout {packets[0].layout}, {len(packets)} packets, {len(waves)} waves, {insts} instruction packets, "
         f"time 0..{packets[-1].time}"]
  for w in waves:
    if not w.issues and not verbose: continue
    life = f"{w.start}..{w.end} ({w.end - w.start} cycles)" if w.end is not None else f"{w.start}.. (no WAVEEND)"
    line = f"  wave CU {w.cu} SIMD {w.simd} slot {w.slot}: {life}, {len(w.issues)} instructions"
    if w.issues:
      worst = max(w.issues, key=lambda i: i.stall)
      line += f", {sum(i.stall for i in w.issues)} cycles waiting, longest {worst.stall} before {worst.text.split(' ')[0]} at {worst.pc:#x}"
    out.append(line)
    if verbose: out += [f"    {i.time:>10} {'+' + str(i.stall):>7}  {i.pc:#08x}  {i.text}" for i in w.issues]
  return out
