"""The SQTT packet tables of RDNA3 (layout 3) and RDNA4 (layout 4), loaded from the generated tables/sqtt.json.

A stream is read through a 64-bit window at a nibble cursor; the window's low byte picks the packet type
(`Layout.dispatch`), the type gives the size in nibbles, the delta field and its time rule, and the named fields.
"""
from __future__ import annotations
import functools
import json
from dataclasses import dataclass
from importlib import resources

ARCH_LAYOUT = {"rdna3": 3, "rdna4": 4}
HEADER = "LAYOUT_HEADER"
INSTRUCTION_PACKETS = ("INST", "VALUINST", "IMMEDIATE", "IMMEDIATE_MASK")

class SQTTError(ValueError):
  """A blob that is not an SQTT stream the decoder can read (the message names the byte offset)."""

@dataclass(frozen=True)
class PacketType:
  name: str
  type_id: int
  mask: int
  value: int
  size: int  # nibbles
  rule: str  # how the delta field moves time: add, add_plus_8, add_unless_marker, none
  marker: tuple[tuple[tuple[int, int], ...], ...]  # alternatives of (bit, value) that make a TS_DELTA_OR_MARK a marker
  fields: tuple[tuple[str, int, int], ...]  # (name, lo, width)

  @functools.cached_property
  def by_field(self) -> dict[str, tuple[int, int]]: return {n: (lo, width) for n, lo, width in self.fields}

  def field(self, name: str) -> tuple[int, int]:
    if name not in self.by_field: raise SQTTError(f"{self.name} packets have no field {name!r} (fields: {', '.join(self.by_field)})")
    return self.by_field[name]

@dataclass(frozen=True)
class Layout:
  number: int
  types: tuple[PacketType, ...]
  dispatch: tuple[int, ...]  # low byte of the window -> index into types
  other_simd_ops: frozenset[int]  # INST ops that report another SIMD's instruction

  @functools.cached_property
  def by_name(self) -> dict[str, PacketType]: return {t.name: t for t in self.types}

@functools.cache
def _table() -> dict:
  return json.loads(resources.files("tg.amd_emu").joinpath("tables/sqtt.json").read_text())

@functools.cache
def layout(number: int) -> Layout:
  """The packet table of a layout (3 = RDNA3, 4 = RDNA4); the types are in the same order in both."""
  lay = _table()["layouts"][str(number)]
  types = tuple(PacketType(p["name"], p["type_id"], p["mask"], p["value"], p["size"], p["rule"],
                           tuple(tuple((int(b), v) for b, v in alt.items()) for alt in p["marker"]),
                           tuple((n, lo, w) for n, lo, w in p["fields"])) for p in sorted(lay["packets"], key=lambda p: p["type_id"]))
  index = {t.name: i for i, t in enumerate(types)}
  dispatch = tuple(next((index[n] for n in lay["priority"] if b & types[index[n]].mask == types[index[n]].value), index["NOP"])
                   for b in range(256))
  return Layout(number, types, dispatch, frozenset(lay["other_simd_ops"]))

def enum(name: str) -> dict[str, int]:
  """An enum of the format (InstOp, MemSrc, AluSrc): member name -> value."""
  return dict(_table()["enums"][name])

def arch_layout(arch: str) -> int:
  if arch not in ARCH_LAYOUT: raise SQTTError(f"unknown arch {arch!r}: SQTT streams are decoded for {', '.join(ARCH_LAYOUT)}")
  return ARCH_LAYOUT[arch]
