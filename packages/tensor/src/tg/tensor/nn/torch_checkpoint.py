"""PyTorch checkpoints (the files torch.save writes) read without PyTorch: torch_load.

What the format is:
- zip (torch >= 1.6): `<root>/data.pkl` is a pickle of the saved object. Each tensor in it is a call of
  torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...), in elements. Each storage is a persistent id
  ("storage", torch.<Kind>Storage, key, location, numel) whose bytes are the entry `<root>/data/<key>`. `<root>/byteorder`
  says "little" or "big"; little when it is absent. The entries are stored, not compressed.
- legacy (torch < 1.6, or `_use_new_zipfile_serialization=False`): five pickles back to back. They are a magic number,
  the protocol version 1001, system info (the byte order among it), the object (persistent ids with a sixth field, a view
  of another storage or None) and the list of storage keys. Then each storage follows, in that order: its element count
  (8 bytes, little-endian) and its bytes.

Only tensors, containers and plain values are rebuilt: the pickle may name no other class. A whole nn.Module is refused
with a message that says to save its state_dict(). This also keeps a checkpoint from running code of its choosing when
unpickled."""
from __future__ import annotations
import collections, io, os, pathlib, pickle, struct, zipfile
from typing import Any, BinaryIO
import numpy as np
from tg.uop import DType, dtypes
from tg.tensor.tensor import Tensor

class TorchCheckpointError(ValueError):
  """A file torch_load can't read: not a PyTorch checkpoint, a class it doesn't rebuild, or storage bytes that don't fit."""

LEGACY_MAGIC, LEGACY_PROTOCOL = 0x1950a86a20f9469cfc6c, 1001

STORAGES: dict[str, DType] = {"FloatStorage": dtypes.float32, "DoubleStorage": dtypes.float64, "HalfStorage": dtypes.float16,
                              "BFloat16Storage": dtypes.bfloat16, "LongStorage": dtypes.int64, "IntStorage": dtypes.int32,
                              "ShortStorage": dtypes.int16, "CharStorage": dtypes.int8, "ByteStorage": dtypes.uint8,
                              "BoolStorage": dtypes.bool}

def torch_load(src: Tensor | str | os.PathLike, device: str | None = None) -> Any:
  """The object torch.save wrote (usually a state dict: names to tensors), its tensors as tg Tensors on `device`. src is
  a path, or a 1-d uint8 tensor of the file's bytes (tinygrad's form). Tensors that shared a storage in PyTorch are
  copies here."""
  if isinstance(src, Tensor):
    if src.ndim != 1 or src.dtype != dtypes.uint8:
      raise TorchCheckpointError(f"torch_load takes a 1-d uint8 tensor of the file, not {src.dtype} {src.shape}")
    raw, name = np.frombuffer(bytes(src.data()), np.uint8), "the tensor's bytes"
  else: raw, name = np.memmap(src, dtype=np.uint8, mode="r"), str(src)
  fobj = io.BytesIO(raw.tobytes()) if isinstance(src, Tensor) else open(pathlib.Path(src), "rb")
  with fobj:
    if zipfile.is_zipfile(fobj): return _load_zip(zipfile.ZipFile(fobj), raw, name, device)
    fobj.seek(0)
    return _load_legacy(fobj, raw, name, device)

def _load_zip(zf: zipfile.ZipFile, raw: np.ndarray, name: str, device: str | None) -> Any:
  pkl = next((n for n in zf.namelist() if n.endswith("/data.pkl") or n == "data.pkl"), None)
  if pkl is None: raise TorchCheckpointError(f"{name}: a zip file without data.pkl, not a PyTorch checkpoint")
  root = pkl[:-len("data.pkl")]
  order = zf.read(root + "byteorder").decode().strip() if root + "byteorder" in zf.namelist() else "little"
  def storage(key: str, dt: DType) -> np.ndarray:
    try: info = zf.getinfo(f"{root}data/{key}")
    except KeyError: raise TorchCheckpointError(f"{name}: storage {key} has no entry {root}data/{key}") from None
    return _as_dtype(_entry_bytes(zf, info, raw), dt, order)
  return _Unpickler(io.BytesIO(zf.read(pkl)), name, device, storage).load()

def _entry_bytes(zf: zipfile.ZipFile, info: zipfile.ZipInfo, raw: np.ndarray) -> np.ndarray:
  """The bytes of a zip entry: a slice of the file when stored uncompressed (torch.save's entries), else decompressed."""
  if info.compress_type != zipfile.ZIP_STORED: return np.frombuffer(zf.read(info), np.uint8)
  name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30].tobytes())  # the local header's
  start = info.header_offset + 30 + name_len + extra_len
  return raw[start:start + info.file_size]

def _load_legacy(f: BinaryIO, raw: np.ndarray, name: str, device: str | None) -> Any:
  try:
    magic, protocol, info = (pickle.load(f) for _ in range(3))
  except Exception:
    raise TorchCheckpointError(f"{name}: neither a zip nor a legacy PyTorch checkpoint (torch.save's formats)") from None
  if magic != LEGACY_MAGIC or protocol != LEGACY_PROTOCOL:
    raise TorchCheckpointError(f"{name}: not a PyTorch checkpoint (magic {magic!r:.40}, protocol {protocol!r:.40})")
  order = "little" if not isinstance(info, dict) or info.get("little_endian", True) else "big"
  wanted: dict[str, DType] = {}
  def storage(key: str, dt: DType) -> _Pending:
    wanted[key] = dt
    return _Pending(key)
  obj = _Unpickler(f, name, device, storage).load()
  keys = pickle.load(f)
  pos, found = f.tell(), {}
  for key in keys:
    numel = int(raw[pos:pos + 8].view("<i8")[0])
    dt = wanted.get(key, dtypes.uint8)
    found[key] = _as_dtype(raw[pos + 8:pos + 8 + numel * dt.itemsize], dt, order)
    pos += 8 + numel * dt.itemsize
  return _resolve(obj, found, name)

class _Pending:
  """A legacy checkpoint's tensor before its storage is read (the storages come after the pickle)."""
  def __init__(self, key: str, build: Any = None): self.key, self.build = key, build

def _resolve(obj: Any, found: dict[str, np.ndarray], name: str) -> Any:
  """obj with every pending tensor built from the storages read."""
  if isinstance(obj, _Pending):
    if obj.key not in found: raise TorchCheckpointError(f"{name}: storage {obj.key} is used but not stored")
    return obj.build(found[obj.key])
  if isinstance(obj, dict): return type(obj)((k, _resolve(v, found, name)) for k, v in obj.items())
  if isinstance(obj, (list, tuple)): return type(obj)(_resolve(v, found, name) for v in obj)
  return obj

def _as_dtype(b: np.ndarray, dt: DType, order: str) -> np.ndarray:
  """Storage bytes as elements: of dt's numpy type, or its bits (bfloat16), in this machine's byte order."""
  np_dt = np.dtype(dt.fmt if dt.fmt is not None else f"u{dt.itemsize}").newbyteorder("<" if order == "little" else ">")
  return b[:len(b) // dt.itemsize * dt.itemsize].view(np_dt).astype(np_dt.newbyteorder("="), copy=False)

class _Unpickler(pickle.Unpickler):
  """data.pkl's unpickler: the globals a state dict uses, mapped to their rebuilds here; any other is refused."""
  def __init__(self, f: BinaryIO, name: str, device: str | None, storage: Any):
    super().__init__(f, encoding="utf-8")
    self.name, self.device, self.storage, self.cache = name, device, storage, {}
  def persistent_load(self, pid: Any) -> Any:
    if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage" and isinstance(pid[1], _Kind)):
      raise TorchCheckpointError(f"{self.name}: a persistent id {pid!r:.80} that isn't a storage")
    kind, key = pid[1], str(pid[2])
    if (view := pid[5] if len(pid) > 5 else None) is not None:  # (an old legacy storage that is a slice of another)
      raise TorchCheckpointError(f"{self.name}: storage {view[0]} is a view of storage {key}: torch < 0.4's form, not read here")
    if key not in self.cache: self.cache[key] = self.storage(key, kind.dtype)
    return (self.cache[key], kind.dtype)
  def find_class(self, module: str, name: str) -> Any:
    if module == "torch" and name in STORAGES: return _Kind(STORAGES[name])
    if (module, name) in (("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_tensor")): return self._tensor
    if (module, name) in (("torch._utils", "_rebuild_parameter"), ("torch._utils", "_rebuild_parameter_with_state")):
      return lambda data, *_: data  # a Parameter: its tensor (requires_grad isn't kept, as tinygrad's loader)
    if (module, name) == ("torch._tensor", "_rebuild_from_type_v2"): return lambda fn, _type, args, _state: fn(*args)
    if (module, name) == ("collections", "OrderedDict"): return collections.OrderedDict
    if (module, name) == ("torch", "Size"): return tuple
    if (module, name) == ("_codecs", "encode"): return lambda s, enc="utf-8": s.encode(enc)  # (bytes, in protocol 2)
    raise TorchCheckpointError(f"{self.name}: the checkpoint holds a {module}.{name}, which torch_load doesn't rebuild (it reads "
                               "tensors, containers and plain values): save model.state_dict() rather than the model")
  def _tensor(self, storage: tuple[Any, DType], offset: int, size: tuple, stride: tuple, *_: Any) -> Any:
    data, dt = storage
    build = lambda arr: self._view(arr, dt, offset, tuple(size), tuple(stride))  # noqa: E731
    return _Pending(data.key, build) if isinstance(data, _Pending) else build(data)
  def _view(self, arr: np.ndarray, dt: DType, offset: int, size: tuple, stride: tuple) -> Tensor:
    """The elements size/stride/offset select from a storage, as a tensor of their own."""
    if any(s < 0 for s in size) or any(s < 0 for s in stride) or len(size) != len(stride):
      raise TorchCheckpointError(f"{self.name}: a tensor of size {size} and stride {stride}")
    last = offset + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else offset - 1
    if offset < 0 or last >= len(arr):
      raise TorchCheckpointError(f"{self.name}: a tensor of size {size}, stride {stride} at offset {offset} reads past its storage of "
                                 f"{len(arr)} elements")
    view = np.lib.stride_tricks.as_strided(arr[offset:], size, tuple(s * arr.itemsize for s in stride)) if all(size) else arr[:0].reshape(size)
    out = np.array(view, order="C")  # (a copy; np.ascontiguousarray makes a 0-d tensor 1-d)
    return Tensor(out, self.device).bitcast(dt) if dt.fmt is None else Tensor(out, self.device, dt)

class _Kind:
  """A storage class of the pickle (torch.FloatStorage, ...): the dtype of its elements."""
  def __init__(self, dtype: DType): self.dtype = dtype
