"""A minimal MessagePack reader/writer: enough for the AMDHSA metadata note (NT_AMDGPU_METADATA)."""
from __future__ import annotations
import struct
from typing import Any

def unpack(data: bytes) -> Any:
  """The value encoded in `data`; malformed data (truncated, a map key that is a map, nested past Python's stack) raises ValueError."""
  try: value, end = _read(data, 0)
  except IndexError: end = len(data) + 1  # a read past the end
  except (struct.error, TypeError, RecursionError) as e: raise ValueError(f"msgpack: malformed ({type(e).__name__}: {e})") from None
  if end > len(data): raise ValueError(f"msgpack: truncated ({len(data)} bytes)")
  if end != len(data): raise ValueError(f"msgpack: {len(data) - end} trailing bytes after the value")
  return value

def _read(d: bytes, i: int) -> tuple[Any, int]:
  b = d[i]
  i += 1
  if b <= 0x7F: return b, i
  if b >= 0xE0: return b - 0x100, i
  if 0x80 <= b <= 0x8F: return _map(d, i, b & 0x0F)
  if 0x90 <= b <= 0x9F: return _array(d, i, b & 0x0F)
  if 0xA0 <= b <= 0xBF: return d[i:i + (b & 0x1F)].decode(), i + (b & 0x1F)
  if b in SIMPLE: return SIMPLE[b], i
  if b in FIXED:
    fmt = FIXED[b]
    return struct.unpack_from(fmt, d, i)[0], i + struct.calcsize(fmt)
  if b in SIZED:
    kind, fmt = SIZED[b]
    n = struct.unpack_from(fmt, d, i)[0]
    i += struct.calcsize(fmt)
    if kind == "str": return d[i:i + n].decode(), i + n
    if kind == "bin": return bytes(d[i:i + n]), i + n
    return (_map if kind == "map" else _array)(d, i, n)
  raise ValueError(f"msgpack: unsupported type byte 0x{b:02x} at offset {i - 1}")

def _map(d: bytes, i: int, n: int) -> tuple[dict, int]:
  out = {}
  for _ in range(n):
    k, i = _read(d, i)
    out[k], i = _read(d, i)
  return out, i

def _array(d: bytes, i: int, n: int) -> tuple[list, int]:
  out = []
  for _ in range(n):
    v, i = _read(d, i)
    out.append(v)
  return out, i

SIMPLE = {0xC0: None, 0xC2: False, 0xC3: True}
FIXED = {0xCA: ">f", 0xCB: ">d", 0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q"}
SIZED = {0xC4: ("bin", ">B"), 0xC5: ("bin", ">H"), 0xC6: ("bin", ">I"), 0xD9: ("str", ">B"), 0xDA: ("str", ">H"), 0xDB: ("str", ">I"),
         0xDC: ("array", ">H"), 0xDD: ("array", ">I"), 0xDE: ("map", ">H"), 0xDF: ("map", ">I")}

def pack(v: Any) -> bytes:
  """Encode None/bool/int/str/list/dict (what the metadata uses)."""
  if v is None or isinstance(v, bool): return bytes([{None: 0xC0, False: 0xC2, True: 0xC3}[v]])
  if isinstance(v, int):
    if 0 <= v <= 0x7F or -32 <= v < 0: return struct.pack(">b" if v < 0 else ">B", v)
    return b"\xcf" + struct.pack(">Q", v) if v >= 0 else b"\xd3" + struct.pack(">q", v)
  if isinstance(v, str):
    raw = v.encode()
    return (bytes([0xA0 | len(raw)]) if len(raw) < 32 else b"\xdb" + struct.pack(">I", len(raw))) + raw
  if isinstance(v, list): return b"\xdd" + struct.pack(">I", len(v)) + b"".join(pack(x) for x in v)
  if isinstance(v, dict): return b"\xdf" + struct.pack(">I", len(v)) + b"".join(pack(k) + pack(x) for k, x in v.items())
  raise TypeError(f"msgpack: cannot pack {type(v).__name__}")
