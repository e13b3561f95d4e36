"""GGUF files (llama.cpp's models) read without llama.cpp: gguf_load, and ggml_data_to_tensor for one tensor's blocks.

The file (little-endian): b"GGUF", version (u32, 2 or 3), tensor count and key-value count (u64 each); the key-values
(a string key: u64 length and UTF-8 bytes; a u32 value type; the value); each tensor's info (name, u32 dims, u64 sizes
innermost first, u32 ggml type, u64 offset into the data); then the data, starting at a multiple of general.alignment
(32 when the file doesn't say).

Quantized types store blocks of elements, each with its own scale. The layouts follow ggml's block structs, and the
element order within a block follows ggml's dequantize_row functions. Decoding runs in numpy on the host in float32,
in the order ggml writes it (d * sc * q - dmin * m), so the values are the reference's to the bit."""
from __future__ import annotations
import os
from typing import Any, Callable
import numpy as np
from tg.uop import DType, dtypes
from tg.tensor.tensor import Tensor

class GGUFError(ValueError):
  """A file gguf_load can't read: not GGUF, a version or a tensor type it doesn't know, or data past the end."""

_VALUES = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?", 10: "<u8", 11: "<i8", 12: "<f8"}  # 8 string, 9 array
_PLAIN: dict[int, DType] = {0: dtypes.float32, 1: dtypes.float16, 24: dtypes.int8, 25: dtypes.int16, 26: dtypes.int32, 27: dtypes.int64,
                            28: dtypes.float64, 30: dtypes.bfloat16}
MXFP4_VALUES = np.array([0, 1, 2, 3, 4, 6, 8, 12, -0.0, -1, -2, -3, -4, -6, -8, -12], np.float32)  # E2M1, doubled (the scale halves)

def _f16(b: np.ndarray) -> np.ndarray: return b.copy().view("<f2").astype(np.float32)
def _nibbles(qs: np.ndarray) -> np.ndarray:
  """A block's 16 bytes as 32 values: the low nibbles (elements 0-15), then the high ones (16-31)."""
  return np.concatenate([qs & 0xF, qs >> 4], axis=1)
def _high_bits(qh: np.ndarray, n: int) -> np.ndarray:
  """Bit j of each block's little-endian qh, for j < n, as 0 or 1 (one column per j)."""
  return np.unpackbits(qh, axis=1, bitorder="little")[:, :n]

def _k_scales(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """The 8 six-bit scales and mins of a Q4_K/Q5_K block's 12 scale bytes."""
  sc = np.concatenate([s[:, 0:4] & 63, (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)], axis=1)
  m = np.concatenate([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], axis=1)
  return sc.astype(np.float32), m.astype(np.float32)

def _q4_0(b: np.ndarray) -> np.ndarray: return _f16(b[:, :2]) * (_nibbles(b[:, 2:18]).astype(np.float32) - 8)
def _q4_1(b: np.ndarray) -> np.ndarray: return _f16(b[:, :2]) * _nibbles(b[:, 4:20]).astype(np.float32) + _f16(b[:, 2:4])
def _q5(b: np.ndarray, qh: int) -> np.ndarray: return (_nibbles(b[:, qh + 4:qh + 20]) | (_high_bits(b[:, qh:qh + 4], 32) << 4)).astype(np.float32)
def _q5_0(b: np.ndarray) -> np.ndarray: return _f16(b[:, :2]) * (_q5(b, 2) - 16)
def _q5_1(b: np.ndarray) -> np.ndarray: return _f16(b[:, :2]) * _q5(b, 4) + _f16(b[:, 2:4])
def _q8_0(b: np.ndarray) -> np.ndarray: return _f16(b[:, :2]) * b[:, 2:34].view(np.int8).astype(np.float32)

def _q45_k(b: np.ndarray, high: bool) -> np.ndarray:
  """Q4_K (high=False) and Q5_K: 8 sub-blocks of 32, each d * scale * q - dmin * min; 32-byte chunks of qs hold two
  sub-blocks, the low nibbles first; Q5_K's fifth bit of sub-block k is bit k of each of its 32 qh bytes."""
  d, dmin = _f16(b[:, 0:2]), _f16(b[:, 2:4])
  sc, m = _k_scales(b[:, 4:16])
  qs = b[:, 48:176] if high else b[:, 16:144]
  chunks = qs.reshape(-1, 4, 1, 32)
  q = np.concatenate([chunks & 0xF, chunks >> 4], axis=2).reshape(-1, 8, 32)
  if high: q = q | (((b[:, 16:48, None] >> np.arange(8, dtype=np.uint8)) & 1).transpose(0, 2, 1) << 4)
  return ((d * sc)[:, :, None] * q.astype(np.float32) - (dmin * m)[:, :, None]).reshape(-1, 256)

def _q6_k(b: np.ndarray) -> np.ndarray:
  """Q6_K: two halves of 128, each from 64 bytes of ql (low 4 bits) and 32 of qh (2 bits each); element 32k + l of a half
  is nibble k // 2 of ql[l + 32 (k % 2)] and bits 2k of qh[l]; 16 int8 scales, one per 16 elements; d * scale * (q - 32)."""
  ql, qh = b[:, 0:128].reshape(-1, 2, 2, 1, 32), b[:, 128:192].reshape(-1, 2, 1, 32)
  low = np.concatenate([ql & 0xF, ql >> 4], axis=3).transpose(0, 1, 3, 2, 4).reshape(-1, 2, 4, 32)  # k = 2 * nibble + byte half
  high = (qh >> (2 * np.arange(4, dtype=np.uint8))[None, None, :, None]) & 3
  q = (low | (high << 4)).astype(np.float32).reshape(-1, 256) - 32
  sc = b[:, 192:208].view(np.int8).astype(np.float32)
  return (_f16(b[:, 208:210]) * sc).repeat(16, axis=1) * q

def _mxfp4(b: np.ndarray) -> np.ndarray:
  scale = np.ldexp(np.float32(1), b[:, :1].astype(np.int32) - 128).astype(np.float32)  # E8M0, halved
  return MXFP4_VALUES[_nibbles(b[:, 1:17])] * scale

# ggml type: (elements per block, bytes per block, decoder of rows of blocks to rows of float32)
QUANTIZED: dict[int, tuple[int, int, Callable[[np.ndarray], np.ndarray]]] = {
  2: (32, 18, _q4_0), 3: (32, 20, _q4_1), 6: (32, 22, _q5_0), 7: (32, 24, _q5_1), 8: (32, 34, _q8_0),
  12: (256, 144, lambda b: _q45_k(b, False)), 13: (256, 176, lambda b: _q45_k(b, True)), 14: (256, 210, _q6_k), 39: (32, 17, _mxfp4)}

def _nbytes(n: int, ggml_type: int) -> int:
  if ggml_type in _PLAIN: return n * _PLAIN[ggml_type].itemsize
  if ggml_type not in QUANTIZED:
    raise GGUFError(f"ggml type {ggml_type} isn't one tg reads (F32, F16, BF16, F64, I8-I64, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, "
                    "Q6_K, MXFP4)")
  block, size, _ = QUANTIZED[ggml_type]
  if n % block: raise GGUFError(f"{n} elements of ggml type {ggml_type} aren't whole blocks of {block}")
  return n // block * size

def _decode(raw: np.ndarray, n: int, ggml_type: int) -> np.ndarray:
  """n elements of ggml_type from raw bytes: plain types as they are stored, quantized ones as float32."""
  nbytes = _nbytes(n, ggml_type)
  if len(raw) < nbytes: raise GGUFError(f"{n} elements of ggml type {ggml_type} are {nbytes} bytes, got {len(raw)}")
  if (dt := _PLAIN.get(ggml_type)) is not None:
    return raw[:nbytes].copy().view("<u2" if dt == dtypes.bfloat16 else np.dtype(dt.fmt).newbyteorder("<"))
  block, size, decode = QUANTIZED[ggml_type]
  return decode(raw[:nbytes].reshape(-1, size)).reshape(n)

def _tensor(arr: np.ndarray, ggml_type: int, device: str | None) -> Tensor:
  arr = arr.astype(arr.dtype.newbyteorder("="))
  return Tensor(arr, device).bitcast(dtypes.bfloat16) if _PLAIN.get(ggml_type) == dtypes.bfloat16 else Tensor(arr, device)

def _compute_device(t: Tensor) -> str | None:
  """Where tensors decoded from t go: t's device, the default one for a DISK tensor (made there, they'd be written into
  its file)."""
  return None if isinstance(t.device, str) and t.device.upper().startswith("DISK") else t.device

def ggml_data_to_tensor(t: Tensor, n: int, ggml_type: int) -> Tensor:
  """The first n elements of a uint8 tensor of ggml_type's blocks, decoded (quantized types to float32), on t's device
  (tinygrad's function)."""
  if t.dtype != dtypes.uint8: raise GGUFError(f"ggml_data_to_tensor reads a uint8 tensor of blocks, not {t.dtype}")
  _nbytes(n, ggml_type)  # (an unknown type is an error before the bytes are read)
  return _tensor(_decode(t.flatten().numpy(), n, ggml_type), ggml_type, _compute_device(t))

class _Reader:
  """Little-endian reads from the start of a file's bytes."""
  def __init__(self, raw: np.ndarray, name: str): self.raw, self.name, self.pos = raw, name, 0
  def take(self, n: int) -> bytes:
    if self.pos + n > len(self.raw): raise GGUFError(f"{self.name}: the header runs past the end of the file ({len(self.raw)} bytes)")
    out = self.raw[self.pos:self.pos + n].tobytes()
    self.pos += n
    return out
  def scalar(self, fmt: str) -> Any: return np.frombuffer(self.take(np.dtype(fmt).itemsize), fmt)[0].item()
  def string(self) -> str: return self.take(self.scalar("<u8")).decode("utf-8")
  def value(self, kind: int) -> Any:
    if kind == 8: return self.string()
    if kind == 9:
      item, count = self.scalar("<u4"), self.scalar("<u8")
      if item in _VALUES: return np.frombuffer(self.take(count * np.dtype(_VALUES[item]).itemsize), _VALUES[item]).tolist()
      return [self.value(item) for _ in range(count)]
    if kind not in _VALUES: raise GGUFError(f"{self.name}: unknown value type {kind} at byte {self.pos - 4}")
    return self.scalar(_VALUES[kind])

def gguf_load(src: Tensor | str | os.PathLike, device: str | None = None) -> tuple[dict[str, Any], dict[str, Tensor]]:
  """(key-values, tensors by name) of a GGUF file: a path, or a 1-d uint8 tensor of its bytes (tinygrad's form; the
  tensors are then on its device, the default one for a DISK tensor, unless `device` is given). Shapes are numpy's order
  (ggml lists sizes innermost first); quantized tensors are decoded to float32, the others keep their dtype."""
  if isinstance(src, Tensor):
    if src.dtype != dtypes.uint8: raise GGUFError(f"gguf_load takes a uint8 tensor of the file, not {src.dtype}")
    raw, name, device = src.flatten().numpy(), "the tensor's bytes", device or _compute_device(src)
  else: raw, name = np.memmap(src, dtype=np.uint8, mode="r"), str(src)
  r = _Reader(raw, name)
  if (magic := r.take(4)) != b"GGUF": raise GGUFError(f"{name}: not a GGUF file (it starts {magic!r}, not b'GGUF')")
  if (version := r.scalar("<u4")) not in (2, 3): raise GGUFError(f"{name}: GGUF version {version}; tg reads versions 2 and 3")
  n_tensors, n_kv = r.scalar("<u8"), r.scalar("<u8")
  kv = {}
  for _ in range(n_kv):
    key = r.string()
    kv[key] = r.value(r.scalar("<u4"))
  infos = []
  for _ in range(n_tensors):
    tname, ndim = r.string(), r.scalar("<u4")
    dims = [r.scalar("<u8") for _ in range(ndim)]
    infos.append((tname, tuple(reversed(dims)), r.scalar("<u4"), r.scalar("<u8")))
  align = kv.get("general.alignment", 32)
  start = -(-r.pos // align) * align
  tensors = {}
  for tname, shape, kind, offset in infos:
    n = int(np.prod(shape, dtype=np.int64))
    at = start + offset
    if at + _nbytes(n, kind) > len(raw): raise GGUFError(f"{name}: tensor {tname!r} ({n} elements of ggml type {kind}) runs past the end")
    tensors[tname] = _tensor(_decode(raw[at:at + _nbytes(n, kind)], n, kind).reshape(shape), kind, device)
  return kv, tensors
