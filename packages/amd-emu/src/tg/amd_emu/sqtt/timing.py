"""The virtual GPU's timing model: when each recorded instruction issues, as SQTT packets of one shader engine.

A deliberately simple model, so that traces are plausible and deterministic, not a prediction of real hardware:
- One CU with 4 SIMDs of 16 wave slots. Workgroups launch in dispatch order, each when its waves fit (wave i of a
  workgroup goes to SIMD i % 4), one wave every LAUNCH_GAP cycles. SIMD 0 is the traced one: its waves' instructions
  get packets, the others' waves only WAVESTART/WAVEEND, as on the hardware.
- Each SIMD issues at most one instruction per cycle, to the ready wave that has waited longest. After issuing, a wave
  may issue again ISSUE[class] cycles later (a taken branch costs TAKEN, s_nop N costs N + 1).
- Memory instructions complete LATENCY[counter] cycles after issue; s_waitcnt / s_wait_*cnt issues (and so shows in
  the trace, as on the hardware) once at most its count of the named counters' operations are outstanding (RDNA3 lgkmcnt counts SMEM and LDS together;
  forms with two counters, and s_wait_idle, wait for everything).
- s_barrier (RDNA4: s_barrier_wait) holds each wave until every live wave of its workgroup has reached it.
"""
from __future__ import annotations
import heapq
from collections import deque
from dataclasses import dataclass, field
from ..inst import Inst
from ..waveprog import BARRIERS
from ..simm16 import WAITCNT
from .classify import branch_op, memory_counter, ops, report
from .record import WaveRun

SIMDS, SLOTS, TRACED_SIMD, LAUNCH_GAP, TAKEN = 4, 16, 0, 4, 4
ISSUE = {"VALUINST": 1, "IMMEDIATE": 1, "SALU": 1, "SMEM": 1, "JUMP": 1, "JUMP_NO": 1, "MESSAGE": 1, "BARRIER": 1, "SALU_SAVEEXEC": 1,
         "VALU_TRANS": 4, "VALU_64": 16, "VALU_MAD64": 4, "VALU_64_SHIFT": 2, "VALU_CMPX": 2, "VINTERP": 1, "load": 4, "store": 4, "lds": 2}
LATENCY = {"smem": 200, "load": 500, "store": 300, "lds": 40}
OP_NAMES = {v: k for k, v in ops().items()}
WAIT_ONE = {"S_WAITCNT_VSCNT": ("store",), "S_WAITCNT_VMCNT": ("load",), "S_WAITCNT_LGKMCNT": ("smem", "lds"), "S_WAIT_LOADCNT": ("load",),
            "S_WAIT_STORECNT": ("store",), "S_WAIT_KMCNT": ("smem",), "S_WAIT_DSCNT": ("lds",)}
RDNA3_WAITCNT = {"vmcnt": ("load",), "lgkmcnt": ("smem", "lds")}

def waits(inst: Inst) -> list[tuple[tuple[str, ...], int]]:
  """(counters, count) pairs a wait instruction waits for: at most `count` of those counters' operations outstanding."""
  name = inst.op.name
  simm = inst.vals.get("simm16", 0)
  if name in WAIT_ONE: return [(WAIT_ONE[name], simm & 0xffff)]
  if name == "S_WAITCNT":
    return [(RDNA3_WAITCNT[n], simm >> lo & ((1 << w) - 1)) for n, lo, w in WAITCNT if n in RDNA3_WAITCNT]
  if name.startswith(("S_WAIT_LOADCNT_", "S_WAIT_STORECNT_", "S_WAIT_IDLE")): return [(tuple(LATENCY), 0)]
  return []

@dataclass
class WaveState:
  run: WaveRun
  simd: int
  slot: int
  group: "Group"
  pos: int = 0
  pending: list[tuple[str, int]] = field(default_factory=list)  # (counter, completion time)
  at_barrier: int | None = None

@dataclass
class Group:
  waves: list[WaveState] = field(default_factory=list)

def schedule(runs: list[WaveRun]) -> list[tuple[int, str, dict[str, int]]]:
  """(time, packet name, fields) of every packet, in time order."""
  events: list[tuple[int, int, str, dict[str, int]]] = []
  emit = lambda t, name, fields: events.append((t, len(events), name, fields))  # noqa: E731
  groups: deque[list[WaveRun]] = deque()
  for r in runs:
    if not groups or r.index == 0: groups.append([])  # a workgroup's waves are recorded together, index 0 first
    groups[-1].append(r)
  free = [list(range(SLOTS)) for _ in range(SIMDS)]
  port = [0] * SIMDS
  heap: list[tuple[int, int, WaveState]] = []
  seq, launch = 0, 0

  def ready(t: int, ws: WaveState) -> None:
    nonlocal seq
    heapq.heappush(heap, (t, seq, ws))
    seq += 1

  def admit(now: int) -> None:
    nonlocal launch
    while groups:
      need = [sum(1 for r in groups[0] if r.index % SIMDS == s) for s in range(SIMDS)]
      if any(n > len(f) for n, f in zip(need, free)): return
      g = Group()
      for r in groups.popleft():
        simd = r.index % SIMDS
        ws = WaveState(r, simd, free[simd].pop(0), g)
        g.waves.append(ws)
        launch = max(now, launch) + LAUNCH_GAP
        emit(launch, "WAVESTART", {"wave": ws.slot, "simd": simd, "cu_lo": 0})
        ready(launch + 1, ws)

  def release(g: Group) -> None:
    live = [w for w in g.waves if w.pos < len(w.run.executed)]
    if live and all(w.at_barrier is not None for w in live):
      t = max(w.at_barrier for w in live if w.at_barrier is not None) + 1
      for w in live: w.at_barrier = None; ready(t, w)

  admit(0)
  while heap:
    t, _, ws = heapq.heappop(heap)
    pc, inst = ws.run.executed[ws.pos]
    later = max(port[ws.simd], wait_until(ws, inst))
    if later > t:  # the SIMD issued another wave's instruction this cycle, or a wait is not satisfied yet
      ready(later, ws)
      continue
    port[ws.simd] = t + 1
    ws.pos += 1
    ws.pending = [(k, c) for k, c in ws.pending if c > t]
    rep = report(inst)
    traced = ws.simd == TRACED_SIMD
    if rep.packet == "WAVEEND" or ws.pos == len(ws.run.executed):
      emit(t, "WAVEEND", {"wave": ws.slot, "simd": ws.simd, "cu_lo": 0})
      ws.pos = len(ws.run.executed)
      free[ws.simd].append(ws.slot); free[ws.simd].sort()
      release(ws.group)
      admit(t)
      continue
    cost = 1
    if rep.packet == "INST":
      assert rep.op is not None
      taken = ws.pos < len(ws.run.executed) and ws.run.executed[ws.pos][0] != pc + inst.size
      op = branch_op(taken) if rep.op == branch_op(True) else rep.op
      cost = TAKEN if op == branch_op(True) else ISSUE.get(memory_counter(inst) or OP_NAMES[op], 1)
      if traced: emit(t, "INST", {"wave": ws.slot, "op": op})
    elif rep.packet is not None:
      if traced: emit(t, rep.packet, {"wave": ws.slot})
      if inst.op.name == "S_NOP": cost = (inst.vals.get("simm16", 0) & 0xf) + 1
    counter = memory_counter(inst)
    if counter is not None: ws.pending.append((counter, t + LATENCY[counter]))
    if inst.op.name in BARRIERS:
      ws.at_barrier = t + cost
      release(ws.group)
    else: ready(t + cost, ws)
  events.sort(key=lambda e: (e[0], e[1]))
  return [(t, name, fields) for t, _, name, fields in events]

def wait_until(ws: WaveState, inst: Inst) -> int:
  """The time a wait instruction can issue: when at most its count of its counters' operations are outstanding."""
  t = 0
  for names, count in waits(inst):
    done = sorted((c for k, c in ws.pending if k in names), reverse=True)
    if len(done) > count: t = max(t, done[count])
  return t
