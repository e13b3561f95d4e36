"""A model's state: its tensors by dotted name, loading with checks, and the safetensors file format.

safetensors (https://github.com/huggingface/safetensors): 8 bytes little-endian header length N, N bytes of JSON
{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}, then the raw little-endian data."""
from __future__ import annotations
import io, json, os, pathlib, struct, tarfile
from typing import Any
import numpy as np
from tg.uop import DType, dtypes, prod
from tg.tensor.tensor import Tensor
from tg.tensor.schedule import is_buffer_view
from tg.tensor.multi import realized_multi
from tg.tensor.nn.torch_checkpoint import torch_load, TorchCheckpointError  # noqa: F401  (nn.state.torch_load, as tinygrad's)
from tg.tensor.nn.gguf import gguf_load, ggml_data_to_tensor, GGUFError  # noqa: F401  (and gguf_load)

def get_state_dict(obj: Any, prefix: str = "", tensor_type: type = Tensor) -> dict[str, Any]:
  """Every Tensor (or object of tensor_type, tinygrad's keyword: another library's tensors) reachable through
  attributes, lists, tuples and dicts, named by its path ("layers.0.weight"); a namedtuple's by field name. A list or
  dict subclass's attributes count too, after its items: an attribute wins over an item of its name (tinygrad's)."""
  if isinstance(obj, tensor_type): return {prefix.rstrip("."): obj}
  if hasattr(obj, "_asdict") and isinstance(obj, tuple): items = list(obj._asdict().items())
  elif isinstance(obj, (list, tuple)): items = [(str(i), v) for i, v in enumerate(obj)]
  elif isinstance(obj, dict): items = [(str(k), v) for k, v in obj.items()]
  else: items = []
  if hasattr(obj, "__dict__"): items += list(vars(obj).items())
  out: dict[str, Any] = {}
  for k, v in items: out.update(get_state_dict(v, f"{prefix}{k}.", tensor_type))
  return out

def get_parameters(obj: Any) -> list[Tensor]:
  """The distinct tensors of get_state_dict (a tensor shared by two layers once)."""
  return list({id(t): t for t in get_state_dict(obj).values()}.values())

def tar_extract(t: Tensor | str | os.PathLike) -> dict[str, Tensor]:
  """The regular files of a tar archive (a path, or a 1-d uint8 tensor of its bytes), by name: each a slice of the archive's
  tensor, read when used (a path is a DISK tensor of the file; tinygrad's)."""
  path = None if isinstance(t, Tensor) else pathlib.Path(t)
  if path is not None: t = Tensor(path)
  if t.ndim != 1 or t.dtype != dtypes.uint8: raise ValueError(f"tar_extract takes a 1-d uint8 tensor of the archive, not {t.dtype} {t.shape}")
  with tarfile.open(path, mode="r") if path is not None else tarfile.open(fileobj=io.BytesIO(bytes(t.data())), mode="r") as tar:
    return {m.name: t[m.offset_data:m.offset_data + m.size] for m in tar if m.isreg()}

class TensorIO(io.RawIOBase):
  """A read-only file over a 1-d uint8 tensor, as tinygrad's: read reads only the bytes it returns. The position stays
  within [0, len]: a seek past either end stops there (tinygrad's; a disk file's would go past the end)."""
  def __init__(self, t: Tensor):
    if t.ndim != 1 or t.dtype != dtypes.uint8: raise ValueError(f"TensorIO reads a 1-d uint8 tensor, not {t.dtype} of shape {t.shape}")
    super().__init__()
    self.t, self.pos = t, 0
  def readable(self) -> bool: return True
  def seekable(self) -> bool: return True
  def tell(self) -> int: return self.pos
  def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
    self.pos = min(max({io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.t.shape[0]}[whence] + offset, 0), self.t.shape[0])
    return self.pos
  def read(self, size: int | None = -1) -> bytes:
    end = self.t.shape[0] if size is None or size < 0 else min(self.pos + size, self.t.shape[0])
    out = bytes(self.t[self.pos:end].data()) if end > self.pos else b""
    self.pos = max(end, self.pos)
    return out
  def readinto(self, buffer: Any) -> int:
    data = self.read(len(view := memoryview(buffer).cast("B")))
    view[:len(data)] = data
    return len(data)

def _is_counter(name: str) -> bool: return name.rsplit(".", 1)[-1] == "num_batches_tracked"

def load_state_dict(model: Any, state_dict: dict[str, Tensor], strict: bool = True, verbose: bool = False, consume: bool = False,
                    realize: bool = True) -> list[Tensor]:
  """Give each of the model's tensors the state dict's tensor of that name, and return them (tinygrad's signature; verbose
  prints a line of what loaded, consume takes the loaded entries out of state_dict). A realized tensor of the same dtype
  and placement is written in place (its buffer: an optimizer or a TinyJit holding it sees the values); any other takes
  a copy of the value, as tinygrad's replace: an unrealized one allocates nothing until realized (realize=False), and it
  gets the state dict's dtype (half weights make a half model; PyTorch would cast into the model's). Placement: a model
  on one device gathers a sharded value there; a sharded model takes a sharded value's devices and axis, and shards an
  unsharded one as it is sharded itself. strict: the names must match exactly. Shapes must match, but () and (1,) are
  one shape, and BatchNorm's num_batches_tracked counter (PyTorch saves it 0-d int64, here (1,) int32) is cast; a
  checkpoint without it (as PyTorch's own older ones) leaves it as it is, and one with it loads into a model without it
  (a BatchNorm that tracks no running stats)."""
  own = get_state_dict(model)
  missing = sorted(k for k in set(own) - set(state_dict) if not _is_counter(k))
  unexpected = sorted(k for k in set(state_dict) - set(own) if not _is_counter(k))
  if strict and (missing or unexpected): raise KeyError(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
  loaded = []
  for name in [k for k in own if k in state_dict]:
    t, v = own[name], state_dict[name]
    if _is_counter(name) and v.numel() == t.numel() == 1: v = v.reshape(t.shape).cast(t.dtype)
    if t.shape != v.shape:
      if {t.shape, v.shape} != {(), (1,)}:
        raise ValueError(f"Shape mismatch in layer `{name}`: Expected shape {t.shape}, but found {v.shape} in state dict.")
      v = v.reshape(t.shape)
    if not t.is_sharded: v = v.to(t.device)  # (gathered: a model on one device stays there)
    elif not v.is_sharded: v = v.shard_like(t)
    if v.dtype == t.dtype and v.device == t.device and _realized(t): t.assign(v)
    else: t.replace(v.clone())  # (a copy: the model must not share the state dict's buffers, which it would train)
    if consume: del state_dict[name]
    loaded.append(t)
  if realize: Tensor.realize_all(*loaded)
  if verbose: print(f"loaded {len(loaded)} tensors, {sum(t.nbytes() for t in loaded) / 1e6:.2f} MB")
  return loaded

def _realized(t: Tensor) -> bool: return is_buffer_view(t.uop) or realized_multi(t.uop)

_ST_DTYPES: dict[str, DType] = {"F64": dtypes.float64, "F32": dtypes.float32, "F16": dtypes.float16, "BF16": dtypes.bfloat16,
                                "I64": dtypes.int64, "I32": dtypes.int32, "I16": dtypes.int16, "I8": dtypes.int8, "U64": dtypes.uint64,
                                "U32": dtypes.uint32, "U16": dtypes.uint16, "U8": dtypes.uint8, "BOOL": dtypes.bool,
                                "F8_E4M3": dtypes.fp8e4m3, "F8_E5M2": dtypes.fp8e5m2}
_ST_NAMES = {v: k for k, v in _ST_DTYPES.items()}

def _bits(dt: DType) -> DType:
  """The unsigned int dtype a float numpy has no type for (bfloat16, the fp8s) is stored and read as: its bits."""
  return {1: dtypes.uint8, 2: dtypes.uint16}[dt.itemsize]

def _to_bytes(t: Tensor) -> bytes:
  if t.dtype.fmt is None: return t.detach().bitcast(bits := _bits(t.dtype)).numpy().astype(f"<u{bits.itemsize}").tobytes()
  return np.ascontiguousarray(t.numpy()).astype(np.dtype(t.dtype.fmt).newbyteorder("<")).tobytes()

def safe_save(tensors: dict[str, Tensor], path: str | os.PathLike, metadata: dict[str, str] | None = None) -> None:
  header: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
  blobs, offset = [], 0
  for name, t in tensors.items():
    if t.dtype not in _ST_NAMES: raise TypeError(f"{name}: safetensors has no {t.dtype}")
    b = _to_bytes(t)
    header[name] = {"dtype": _ST_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
    blobs.append(b)
    offset += len(b)
  js = json.dumps(header, separators=(",", ":")).encode()
  js += b" " * (-len(js) % 8)  # the data starts 8-byte aligned, as the reference writer does
  with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(js)) + js)
    for b in blobs: f.write(b)

class SafetensorsError(ValueError):
  """A file that isn't valid safetensors; the message names the file and, when one entry is at fault, the tensor."""

def _safetensors_bytes(src: str | os.PathLike | Tensor) -> np.ndarray:
  """A file's bytes, mapped; a tensor's (tinygrad's safe_load takes one: a file read into memory, a DISK tensor), read."""
  if not isinstance(src, Tensor): return np.memmap(src, dtype=np.uint8, mode="r") if os.path.getsize(src) else np.zeros(0, np.uint8)
  flat = src.to("CPU").flatten()
  return (flat if flat.dtype == dtypes.uint8 else flat.bitcast(dtypes.uint8)).numpy()

def safe_load_metadata(path: str | os.PathLike | Tensor) -> tuple[dict[str, Any], int]:
  """The JSON header and the offset where the data starts, checked: a header inside the file, a JSON object, every tensor's
  dtype, shape and byte range (inside the data, matching dtype and shape, overlapping no other)."""
  return _metadata(_safetensors_bytes(path), path)

def _metadata(raw: np.ndarray, path: Any) -> tuple[dict[str, Any], int]:
  if (size := len(raw)) < 8: raise SafetensorsError(f"{path}: {size} bytes is too short for safetensors (8-byte header length)")
  if (n := struct.unpack("<Q", raw[:8].tobytes())[0]) > size - 8:
    raise SafetensorsError(f"{path}: the header length {n} runs past the end of the file ({size} bytes)")
  try: header = json.loads(raw[8:8 + n].tobytes().decode("utf-8"))
  except (ValueError, RecursionError) as e: raise SafetensorsError(f"{path}: the header isn't UTF-8 JSON ({e})") from None
  if not isinstance(header, dict): raise SafetensorsError(f"{path}: the header is a JSON {type(header).__name__}, not an object")
  if (meta := header.get("__metadata__")) is None: meta = {}  # null is no metadata, as the reference reads it
  if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
    raise SafetensorsError(f"{path}: __metadata__ must be an object of strings, not {meta!r:.100}")
  _check_tensors(path, {k: v for k, v in header.items() if k != "__metadata__"}, size - 8 - n)
  return header, 8 + n

def _check_tensors(path: str | os.PathLike, entries: dict[str, Any], data_len: int) -> None:
  spans = []
  for name, info in entries.items():
    if (why := _entry_problem(info, data_len)) is not None: raise SafetensorsError(f"{path}: tensor {name!r}: {why}")
    spans.append((*info["data_offsets"], name))
  for (b0, e0, n0), (b1, e1, n1) in zip(sorted(spans), sorted(spans)[1:]):
    if b1 < e0: raise SafetensorsError(f"{path}: tensors {n0!r} (bytes {b0}..{e0}) and {n1!r} (bytes {b1}..{e1}) overlap")

def _entry_problem(info: Any, data_len: int) -> str | None:
  """What is wrong with one tensor's header entry, None if nothing."""
  if not isinstance(info, dict): return f"the entry is a JSON {type(info).__name__}, not an object with dtype, shape and data_offsets"
  dtype, shape, offs = info.get("dtype"), info.get("shape"), info.get("data_offsets")
  if not isinstance(dtype, str) or dtype not in _ST_DTYPES: return f"dtype {dtype!r:.100} isn't one of {', '.join(_ST_DTYPES)}"
  if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape): return f"shape {shape!r:.100} isn't a list of integers >= 0"
  if not isinstance(offs, list) or len(offs) != 2 or not all(type(o) is int for o in offs) or not 0 <= offs[0] <= offs[1]:
    return f"data_offsets {offs!r:.100} isn't [begin, end] with 0 <= begin <= end"
  if offs[1] > data_len: return f"data_offsets {offs} run past the end of the data ({data_len} bytes)"
  if (want := prod(shape) * _ST_DTYPES[dtype].itemsize) != offs[1] - offs[0]:
    return f"{dtype} of shape {shape} is {want} bytes, but data_offsets {offs} hold {offs[1] - offs[0]}"
  return None

def safe_load(path: str | os.PathLike | Tensor, device: str | None = None) -> dict[str, Tensor]:
  """The tensors of a safetensors file (or of a tensor of its bytes, as tinygrad's); a malformed one raises
  SafetensorsError naming the file and the tensor."""
  header, start = _metadata(raw := _safetensors_bytes(path), path)
  out: dict[str, Tensor] = {}
  for name, info in header.items():
    if name == "__metadata__": continue
    dt, (b, e) = _ST_DTYPES[info["dtype"]], info["data_offsets"]
    data = raw[start + b:start + e]
    if dt.fmt is None: out[name] = Tensor(data.view(f"<u{dt.itemsize}").reshape(info["shape"]), device).bitcast(dt)
    else: out[name] = Tensor(data.view(np.dtype(dt.fmt).newbyteorder("<")).astype(dt.fmt).reshape(info["shape"]), device, dt)
  return out
