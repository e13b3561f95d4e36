"""nn.state.torch_load against checkpoints PyTorch 2.13 wrote (torch_checkpoints/): zip.pt by torch.save(sd), legacy.pt by
torch.save(sd, _use_new_zipfile_serialization=False), big.pt the zip one as a big-endian host writes it (byteorder "big",
each storage's elements byte-swapped). sd is EXPECTED below, its tensors made as written in the comments."""
from __future__ import annotations
import io, pathlib, pickle, struct, zipfile
import numpy as np
import pytest
from tg.tensor import Tensor, dtypes
from tg.tensor.nn.state import torch_load, TorchCheckpointError

HERE = pathlib.Path(__file__).parent / "torch_checkpoints"

EXPECTED = {  # name: (values, dtype); "wt" is w.T (a view of w's storage), "sl" torch.arange(10)[2:5] (offset 2),
  # "ex" torch.tensor([[1.], [2.], [3.]]).expand(3, 4) (stride 0), "p" a Parameter
  "w": (np.arange(6, dtype=np.float32).reshape(2, 3), dtypes.float32), "wt": (np.arange(6, dtype=np.float32).reshape(2, 3).T, dtypes.float32),
  "p": (np.array([0.5, -1.5], np.float16), dtypes.float16), "i": (np.array([-3, 2**40]), dtypes.int64),
  "b": (np.array([True, False, True]), dtypes.bool), "bf": (np.array([1.5, -2.25], np.float32), dtypes.bfloat16),
  "sl": (np.array([2, 3, 4]), dtypes.int64), "ex": (np.repeat(np.array([[1.0], [2.0], [3.0]], np.float32), 4, 1), dtypes.float32),
  "u8": (np.array([0, 255], np.uint8), dtypes.uint8), "i8": (np.array([-128, 127], np.int8), dtypes.int8),
  "i16": (np.array([-32768, 1234], np.int16), dtypes.int16), "i32": (np.array([-2**31, 7], np.int32), dtypes.int32),
  "f64": (np.array([1 / 3]), dtypes.float64)}

def check(d: dict) -> None:
  for name, (want, dt) in EXPECTED.items():
    got = d[name]
    assert got.dtype == dt and got.shape == want.shape, (name, got.dtype, got.shape)
    np.testing.assert_array_equal(got.float().numpy() if dt == dtypes.bfloat16 else got.numpy(), want)
  assert (d["n"], d["s"], d["by"]) == (3, "x", b"abc")
  (empty, (seven,)) = d["nest"]["a"]
  assert empty.shape == (0, 3) and seven.shape == () and seven.item() == 7.0

@pytest.mark.parametrize("name", ["zip.pt", "legacy.pt", "big.pt"])
def test_checkpoints_torch_wrote(name):
  check(torch_load(HERE / name))

@pytest.mark.parametrize("name", ["zip.pt", "legacy.pt"])
def test_from_a_tensor_of_the_bytes_and_onto_a_device(name):
  """tinygrad's form: a uint8 tensor of the file (here a DISK tensor of it); device= places every tensor."""
  check(torch_load(Tensor(HERE / name)))
  assert {t.device for t in (torch_load(HERE / name, device="CPU:1")["w"],)} == {"CPU:1"}

def _zip(pkl: bytes, storages: dict[str, bytes]) -> bytes:
  out = io.BytesIO()
  with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
    z.writestr("ck/data.pkl", pkl)
    for key, data in storages.items(): z.writestr(f"ck/data/{key}", data)
  return out.getvalue()

def _tensor_pickle(offset: int, size: tuple[int, ...], stride: tuple[int, ...], numel: int) -> bytes:
  """Protocol 2 opcodes of {"t": a float32 tensor of storage "0"}, as torch.save spells one (see the module docstring of
  tg.tensor.nn.torch_checkpoint)."""
  def text(s: str) -> bytes: return b"X" + struct.pack("<I", len(s)) + s.encode()
  def ints(xs: tuple[int, ...]) -> bytes: return b"(" + b"".join(b"J" + struct.pack("<i", x) for x in xs) + b"t"
  pid = b"(" + text("storage") + b"ctorch\nFloatStorage\n" + text("0") + text("cpu") + b"J" + struct.pack("<i", numel) + b"tQ"
  call = b"ctorch._utils\n_rebuild_tensor_v2\n(" + pid + b"J" + struct.pack("<i", offset) + ints(size) + ints(stride) + b"\x89tR"
  return b"\x80\x02}(" + text("t") + call + b"u."

def test_hand_spelled_checkpoint():
  """The opcodes as the format describes them, read: the reference for what the reader assumes of the format."""
  d = torch_load(Tensor(np.frombuffer(_zip(_tensor_pickle(1, (2, 2), (1, 2), 5), {"0": np.arange(5, dtype="<f4").tobytes()}), np.uint8)))
  np.testing.assert_array_equal(d["t"].numpy(), [[1, 3], [2, 4]])

def test_a_view_past_its_storage_names_it():
  with pytest.raises(TorchCheckpointError, match=r"size \(2, 2\), stride \(1, 2\) at offset 2 reads past its storage of 5"):
    torch_load(Tensor(np.frombuffer(_zip(_tensor_pickle(2, (2, 2), (1, 2), 5), {"0": np.arange(5, dtype="<f4").tobytes()}), np.uint8)))

class Model:  # a class of this test module: what a whole pickled nn.Module looks like to the reader
  pass

def test_other_classes_are_refused_with_the_fix(tmp_path):
  (path := tmp_path / "model.pt").write_bytes(_zip(pickle.dumps(Model(), protocol=2), {}))
  with pytest.raises(TorchCheckpointError, match=r"holds a test_torch_load\.Model.*save model\.state_dict\(\)"):
    torch_load(path)

def test_not_a_checkpoint(tmp_path):
  (path := tmp_path / "notes.txt").write_bytes(b"hello, world")
  with pytest.raises(TorchCheckpointError, match="neither a zip nor a legacy PyTorch checkpoint"): torch_load(path)
  with pytest.raises(TorchCheckpointError, match="a zip file without data.pkl"):
    torch_load(Tensor(np.frombuffer(_zip(b"", {}).replace(b"ck/data.pkl", b"ck/other.pk"), np.uint8)))
