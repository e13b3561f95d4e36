"""Per-wave timelines from decoded packets: each wave's start and end, and on the traced SIMD each instruction's issue.

Waves live from their WAVESTART to the next WAVEEND of the same (cu, simd, wave slot). Instruction packets carry only
the wave slot and come from one traced SIMD per SE (cu 0, simd 0 in the captures), so the walk keeps a PC per slot:
a wave starts at its kernel's entry; each VALUINST, IMMEDIATE, non-other-SIMD INST (and each set bit of an
IMMEDIATE_MASK) reports the instruction at the PC after stepping over those that send no packet; the PC then moves
past it, or to the branch target for an INST with op JUMP (branch taken).
"""
from __future__ import annotations
from dataclasses import dataclass, field
from ..codeobj import CodeObject
from ..decode import decode as decode_inst
from ..inst import Inst
from .classify import Report, report, ops
from .decode import Packet
from .format import INSTRUCTION_PACKETS, SQTTError, layout

@dataclass
class Issue:
  """One instruction issued by a traced wave: its ELF address, the packet's time, the cycles since the wave's previous
  issue (or its start) as `stall`, its text, and whether the packet is of the class the instruction should report."""
  pc: int
  time: int
  stall: int
  text: str
  packet: str
  op: int | None
  matches: bool

@dataclass
class WaveTrace:
  """One wave of one SE's stream. `end` is None if the stream ends first; `issues` is empty for untraced SIMDs."""
  cu: int
  simd: int
  slot: int
  start: int
  end: int | None = None
  issues: list[Issue] = field(default_factory=list)
  ended_on_endpgm: bool | None = None  # traced waves: whether the walk's PC was at s_endpgm at WAVEEND

class Code:
  """A kernel's instructions by ELF address, decoded on demand."""
  def __init__(self, co: CodeObject, kernel: str | None = None):
    names = sorted(co.kernels)
    k = co.kernels[kernel if kernel is not None else names[0]]
    self.co, self.entry = co, co.text_addr + k.code_offset
    self.insts: dict[int, Inst] = {}
    self.texts: dict[int, str] = {}
    self.reports: dict[int, Report] = {}

  def at(self, pc: int) -> Inst:
    if pc not in self.insts:
      off = pc - self.co.text_addr
      if not 0 <= off < len(self.co.text): raise SQTTError(f"the walk left the code: pc {pc:#x} is outside .text")
      self.insts[pc] = decode_inst(self.co.text, self.co.arch, off)
    return self.insts[pc]

  def report(self, pc: int) -> Report:
    if pc not in self.reports: self.reports[pc] = report(self.at(pc))
    return self.reports[pc]

  def text(self, pc: int) -> str:
    if pc not in self.texts:
      try: self.texts[pc] = self.at(pc).disasm()
      except ValueError: self.texts[pc] = self.at(pc).op.mnemonic
    return self.texts[pc]

def branch_target(pc: int, inst: Inst) -> int:
  simm = inst.vals["simm16"]
  return pc + inst.size + 4 * (simm - ((simm >> 15) << 16))

def issued(packet: Packet) -> list[int]:
  """The wave slots an instruction packet reports (empty for another SIMD's INST)."""
  if packet.name == "IMMEDIATE_MASK": return [i for i in range(16) if packet.mask >> i & 1]
  if packet.name == "INST" and packet.op in layout(packet.layout).other_simd_ops: return []
  return [packet.wave]

def matches(want: Report, packet: Packet) -> bool:
  got = "IMMEDIATE" if packet.name == "IMMEDIATE_MASK" else packet.name
  if want.packet != got: return False
  return got != "INST" or packet.op == want.op or (want.op == ops()["JUMP"] and packet.op == ops()["JUMP_NO"])

def timeline(packets: list[Packet], code: Code | None = None, traced: tuple[int, int] = (0, 0)) -> list[WaveTrace]:
  """Every wave of one stream in start order; with the kernel's code, the traced SIMD's waves get their issues."""
  waves: list[WaveTrace] = []
  live: dict[tuple[int, int, int], WaveTrace] = {}
  pcs: dict[int, int] = {}  # slot -> next pc, for waves on the traced (cu, simd)
  for p in packets:
    if p.name == "WAVESTART":
      w = WaveTrace(p.cu, p.simd, p.wave, p.time)
      waves.append(w)
      live[(p.cu, p.simd, p.wave)] = w
      if code is not None and (p.cu, p.simd) == traced: pcs[p.wave] = code.entry
    elif p.name == "WAVEEND":
      w = live.pop((p.cu, p.simd, p.wave), None)
      if w is None: continue  # the wave started before the trace did
      w.end = p.time
      if code is not None and (p.cu, p.simd) == traced and p.wave in pcs:
        w.ended_on_endpgm = code.at(skip(code, pcs.pop(p.wave))).op.name.startswith("S_ENDPGM")
    elif code is not None and p.name in INSTRUCTION_PACKETS:
      for slot in issued(p):
        w = live.get((*traced, slot))
        if w is None or slot not in pcs:
          raise SQTTError(f"{p.name} at byte offset {p.offset // 2} reports wave slot {slot}, but no wave runs there on the traced SIMD")
        pc = skip(code, pcs[slot])
        inst = code.at(pc)
        prev = w.issues[-1].time if w.issues else w.start
        op = p.op if p.name == "INST" else None
        w.issues.append(Issue(pc, p.time, p.time - prev, code.text(pc), p.name, op, matches(code.report(pc), p)))
        pcs[slot] = branch_target(pc, inst) if op == ops()["JUMP"] else pc + inst.size
  return waves

def skip(code: Code, pc: int) -> int:
  """The first instruction at or after pc that sends a packet (s_delay_alu and s_wait_alu send none)."""
  while code.report(pc).packet is None: pc += code.at(pc).size
  return pc
