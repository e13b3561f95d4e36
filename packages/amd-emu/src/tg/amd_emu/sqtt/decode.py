"""Decode an RDNA3/RDNA4 SQTT stream into packets with absolute times.

The stream is 4-bit nibbles (low nibble of each byte first); a packet at nibble q is seen through the 64-bit window of
the 16 nibbles from q and is decoded only if that window lies inside the blob. Speed: the windows of every nibble
position are built at once with numpy, the walk from packet to packet is one tight loop over a list of ints, and the
time rules run vectorized per packet type; fields are read from a packet's window when asked for.
"""
from __future__ import annotations
import functools
from itertools import repeat
from typing import Any, NamedTuple
import numpy as np
from .format import HEADER, PacketType, SQTTError, arch_layout, layout

class Packet(NamedTuple):
  """One packet: `.name`, `.time` (absolute, in the stream's clock), `.offset` (in nibbles), `.layout` (the table it was
  read with: for a LAYOUT_HEADER that is its own `layout` field), and each field of its type as an attribute (`p.wave`,
  `p.op`, `p.delta`, ...; `p.cu` on WAVESTART/WAVEEND); `fields()` gives them all."""
  type: PacketType
  time: int
  offset: int
  raw: int
  layout: int

  @property
  def name(self) -> str: return self.type.name

  def __getattr__(self, name: str) -> Any:
    for n, lo, width in self.type.fields:
      if n == name: return self.raw >> lo & ((1 << width) - 1)
    if name == "cu" and self.type.name in ("WAVESTART", "WAVEEND"): return self.cu_lo | self.flag7 << 3
    raise AttributeError(f"{self.type.name} packet has no field {name!r} (fields: {', '.join(self.fields())})")

  def fields(self) -> dict[str, int]:
    return {n: self.raw >> lo & ((1 << w) - 1) for n, lo, w in self.type.fields}

  def __repr__(self) -> str:
    return f"{self.name}(time={self.time}, " + ", ".join(f"{k}={v}" for k, v in self.fields().items() if k != "delta") + ")"

def windows(blob: bytes) -> np.ndarray:
  """The 64-bit window at every nibble position q with q + 16 <= 2 * len(blob)."""
  b = np.frombuffer(bytes(blob) + bytes(8), np.uint8).astype(np.uint64)
  nb = len(blob) - 7  # byte positions whose 8 bytes are all inside the blob
  even = np.zeros(nb, np.uint64)
  for i in range(8): even |= b[i:i + nb] << np.uint64(8 * i)
  odd = (even >> np.uint64(4)) | (b[8:8 + nb] << np.uint64(60))
  out = np.empty(2 * nb, np.uint64)
  out[0::2], out[1::2] = even, odd
  return out[:2 * len(blob) - 15]  # the last odd position's window runs one nibble past the end

@functools.cache
def tables(lv: int) -> tuple[np.ndarray, np.ndarray]:
  """A layout's dispatch table (low byte -> type index) and type sizes in nibbles, as arrays."""
  return np.array(layout(lv).dispatch, np.int64), np.array([t.size for t in layout(lv).types], np.int64)

def walk(nxt: list[int], q: int, end: int) -> list[int]:
  """The packet positions from q on, each packet's size given by nxt (position -> next position)."""
  pos = []
  append = pos.append
  while q < end:
    append(q)
    q = nxt[q]
  return pos

def decode(blob: bytes, arch: str) -> list[Packet]:
  """Every packet of one SE's stream, in order. The first must be a LAYOUT_HEADER naming arch's layout (3 for rdna3,
  4 for rdna4); a blob too short to hold it, one that starts with anything else, or a header naming an unknown layout
  raises SQTTError with the byte offset."""
  want = arch_layout(arch)
  if len(blob) < 8: raise SQTTError(f"truncated SQTT stream: {len(blob)} bytes, a packet window needs 8 (at byte offset 0)")
  win = windows(blob)
  hdr = layout(3).by_name[HEADER]
  hdr_index = layout(3).types.index(hdr)
  if int(win[0]) & hdr.mask != hdr.value: raise SQTTError(f"not an SQTT stream: byte offset 0 holds {blob[0]:#04x}, not a LAYOUT_HEADER")
  lo, width = hdr.field("layout")
  low = (win & np.uint64(0xff)).astype(np.int64)
  kinds_at = {lv: tables(lv)[0][low] for lv in (3, 4)}
  where = np.arange(len(win))
  nxt = {lv: (where + tables(lv)[1][kinds_at[lv]]).tolist() for lv in (3, 4)}
  pos: list[int] = []
  lays: list[int] = []
  q = 0
  while q < len(win):  # one walk per run of packets under one layout; a LAYOUT_HEADER may switch it
    cur = int(win[q]) >> lo & ((1 << width) - 1)
    if cur not in (3, 4): raise SQTTError(f"LAYOUT_HEADER at byte offset {q // 2} names layout {cur}: only 3 (RDNA3) and 4 (RDNA4) are known")
    run = walk(nxt[cur], q, len(win))
    ks = kinds_at[cur][run]
    hdrs = np.nonzero(ks[1:] == hdr_index)[0]
    switch = next((int(i) + 1 for i in hdrs if int(win[run[i + 1]]) >> lo & ((1 << width) - 1) != cur), len(run))
    pos += run[:switch]
    lays += [cur] * switch
    q = run[switch] if switch < len(run) else len(win)
  if lays[0] != want: raise SQTTError(f"the stream's LAYOUT_HEADER (byte offset 0) says layout {lays[0]}, but {arch} writes layout {want}")
  at, lv = np.array(pos), np.array(lays)
  kinds = np.where(lv == 3, kinds_at[3][at], kinds_at[4][at])
  raw = win[at]
  times = accumulate(raw, kinds, lv)
  types = np.array([*layout(3).types, *layout(4).types, None], object)[kinds + len(layout(3).types) * (lv - 3)].tolist()
  return list(map(tuple.__new__, repeat(Packet), zip(types, times.tolist(), pos, raw.tolist(), lays)))

def accumulate(raw: np.ndarray, kinds: np.ndarray, lays: np.ndarray) -> np.ndarray:
  """Each packet's absolute time: the running sum of the deltas, a packet's own delta included."""
  delta = np.zeros(len(raw), np.uint64)
  for lv, k in set(zip(lays.tolist(), kinds.tolist())):  # the packet types present
    t = layout(lv).types[k]
    if t.rule == "none": continue
    sel = (kinds == k) & (lays == lv)
    lo, width = t.field("delta")
    d = (raw[sel] >> np.uint64(lo)) & np.uint64((1 << width) - 1)
    if t.rule == "add_plus_8": d = d + np.uint64(8)
    if t.rule == "add_unless_marker":
      is_marker = np.zeros(len(d), bool)
      for alt in t.marker:
        m = np.ones(len(d), bool)
        for bit, val in alt: m &= ((raw[sel] >> np.uint64(bit)) & np.uint64(1)) == np.uint64(val)
        is_marker |= m
      d[is_marker] = 0
    delta[sel] = d
  return np.cumsum(delta, dtype=np.uint64)
