"""Write SQTT streams: packets from their fields, times turned back into deltas.

`pack` builds one packet's bits from its fields; `Writer` lays packets into the nibble stream of a layout, starting
with its LAYOUT_HEADER, and when a packet's own delta field cannot hold the time since the previous packet it puts a
TS_DELTA_SHORT (8 to 23 cycles) or a TS_DELTA_OR_MARK (any longer gap) before it. `bytes()` pads the end so that
the last packet's window lies inside the blob, as the decoder requires.
"""
from __future__ import annotations
import numpy as np
from .format import HEADER, PacketType, SQTTError, arch_layout, layout

def pack(t: PacketType, fields: dict[str, int]) -> int:
  """The packet's bits: its type pattern plus each field; a value that does not fit its field is an SQTTError."""
  word = t.value
  for name, val in fields.items():
    lo, width = t.field(name)
    if not 0 <= val < 1 << width: raise SQTTError(f"{t.name}.{name} = {val} does not fit its {width} bits")
    word |= val << lo
  return word

class Writer:
  """An SQTT stream being written for one arch (one SE's blob)."""
  def __init__(self, arch: str):
    self.layout = layout(arch_layout(arch))
    self.packets: list[tuple[int, int]] = []  # (packet bits, size in nibbles)
    self.time = 0
    self.last_size = 16
    self.put(HEADER, {"layout": self.layout.number})

  def put(self, name: str, fields: dict[str, int], time: int | None = None) -> None:
    """Append a packet; with `time` (absolute, never earlier than the last one) its delta is filled in."""
    t = self.layout.by_name[name]
    if time is not None:
      gap = time - self.time
      if gap < 0: raise SQTTError(f"{name} at time {time}: times must not decrease (the stream is at {self.time})")
      fields = dict(fields, delta=self.fit(t, gap))
    word = pack(t, fields)
    self.packets.append((word, t.size))
    self.last_size = t.size
    self.time += delta_of(t, fields)

  def fit(self, t: PacketType, gap: int) -> int:
    """The delta to give a packet of type t after `gap` cycles, writing time packets first for what it can't hold."""
    if t.rule != "add": raise SQTTError(f"{t.name} carries no time: it cannot be placed at a time of its own")
    room = (1 << t.field("delta")[1]) - 1
    if gap <= room: return gap
    short = self.layout.by_name["TS_DELTA_SHORT"]
    if 8 <= gap - room <= 8 + 15: self.put(short.name, {"delta": gap - room - 8})
    else: self.put("TS_DELTA_OR_MARK", {"delta": gap - room})
    return room

  def bytes(self) -> bytes:
    """The blob: packets laid nibble after nibble (vectorized: packet k's nibble j goes to offset_k + j)."""
    words = np.array([w for w, _ in self.packets], np.uint64)
    sizes = np.array([n for _, n in self.packets], np.int64)
    starts = np.cumsum(sizes) - sizes
    total = int(sizes.sum()) + 16 - self.last_size  # the last packet's 16-nibble window must lie inside
    nib = np.zeros(total + total % 2, np.uint8)
    for j in range(16):  # nibbles past 16 (a 72-bit packet's top) are padding, zero
      sel = sizes > j
      nib[starts[sel] + j] = (words[sel] >> np.uint64(4 * j)) & np.uint64(0xf)
    return (nib[0::2] | nib[1::2] << 4).tobytes()

def delta_of(t: PacketType, fields: dict[str, int]) -> int:
  """The time a packet adds (the decoder's rule, for one packet)."""
  if t.rule == "none": return 0
  d = fields.get("delta", 0)
  if t.rule == "add_plus_8": return d + 8
  if t.rule == "add_unless_marker" and any(all(fields_bit(t, fields, b) == v for b, v in alt) for alt in t.marker): return 0
  return d

def fields_bit(t: PacketType, fields: dict[str, int], bit: int) -> int: return pack(t, fields) >> bit & 1
