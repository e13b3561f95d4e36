"""Ordering work between a device's queues with timeline signals, so copies overlap compute.

Each queue (PM4 compute, SDMA copies) runs its submissions in order and counts them on a signal of its own. A submission
says which buffers it touches; it waits on the other queue only up to that queue's last pending submission touching an
overlapping byte range (a copy waits for the kernel that writes its source, a kernel for the copy that fills its input), so a
copy queued behind no kernel runs while kernels are still busy."""
from __future__ import annotations
from dataclasses import dataclass, field
from typing import Sequence
from tg.amd.driver import KFDAlloc, PM4Queue, SDMAQueue, Signal

def spans(bufs: Sequence[KFDAlloc]) -> list[tuple[int, int]]: return [(b.va, b.va + b.size) for b in bufs]

@dataclass(frozen=True)
class Fence:
  """The point on one queue's timeline at which a submission is done."""
  signal: Signal
  value: int
  def done(self) -> bool: return self.signal.value & 0xFFFFFFFF >= self.value

@dataclass(eq=False)
class Timeline:
  """A queue, its signal, the last value queued on it, and the byte ranges its unfinished submissions touch."""
  queue: PM4Queue | SDMAQueue
  signal: Signal
  value: int = 0
  pending: list[tuple[int, int, int]] = field(default_factory=list)  # (lo, hi, value)

  def touching(self, bufs: Sequence[KFDAlloc]) -> Fence | None:
    """The fence of this queue's last unfinished submission that touches one of `bufs` (None: none)."""
    return Fence(self.signal, v) if (v := self.last_touching(spans(bufs))) else None

  def last_touching(self, spans: Sequence[tuple[int, int]]) -> int:
    """The last value of an unfinished submission that touches one of `spans` (0: none)."""
    done = self.signal.value & 0xFFFFFFFF
    self.pending = [p for p in self.pending if p[2] > done]
    return max((v for lo, hi, v in self.pending if any(lo < e and s < hi for s, e in spans)), default=0)

  def fence(self) -> Fence: return Fence(self.signal, self.value)

  def submit(self, cmds: list[int], bufs: Sequence[KFDAlloc], after: Timeline) -> Fence:
    """Queue cmds after this queue's earlier work and after `after`'s unfinished work on the same buffers."""
    q, need = self.queue, after.last_touching(spans(bufs))
    waits = q.wait_mem(self.signal.va, self.value) + (q.wait_mem(after.signal.va, need) if need else [])
    self.value += 1
    done = q.release_mem(self.signal.va, self.value) if isinstance(q, PM4Queue) else q.fence(self.signal.va, self.value)
    q.submit(waits + cmds + done)
    self.pending += [(lo, hi, self.value) for lo, hi in spans(bufs)]
    return self.fence()

  def reset(self) -> None:
    """After a fault reset the queue: what was queued is lost, so count it done."""
    self.queue.reset()
    self.signal.value, self.pending = self.value, []
