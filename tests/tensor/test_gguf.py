"""nn.state.gguf_load and ggml_data_to_tensor against gguf/sample.gguf, written by llama.cpp's gguf-py 0.18 (GGUFWriter).
It holds key-values of every scalar type and arrays, and plain tensors. For each quantized type it holds q.<TYPE> (2 rows,
from gguf-py's quantize, or random blocks with finite scales where gguf-py has no quantizer) and ref.<TYPE>: the float32
values gguf-py's dequantize gives for those blocks. The decode must match ref bit for bit."""
from __future__ import annotations
import hashlib, pathlib
import numpy as np
import pytest
from tg.tensor import Tensor, dtypes
from tg.tensor.nn.state import gguf_load, ggml_data_to_tensor, GGUFError

SAMPLE = pathlib.Path(__file__).parent / "gguf" / "sample.gguf"
QUANTIZED = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K", "MXFP4"]

def test_key_values_of_every_type():
  kv, _ = gguf_load(SAMPLE)
  assert kv == {"general.architecture": "tg-test", "u8": 200, "i8": -3, "u16": 60000, "i16": -300, "u32": 7, "i32": -70000, "f32": 0.5,
                "flag": True, "s": "héllo", "u64": 2**40, "i64": -2**40, "f64": 0.25, "ints": [1, 2, 3], "strs": ["a", "bc"]}

@pytest.mark.parametrize("qtype", QUANTIZED)
def test_quantized_tensors_decode_as_the_reference(qtype):
  _, ts = gguf_load(SAMPLE)
  got, ref = ts[f"q.{qtype}"], ts[f"ref.{qtype}"].numpy()
  assert got.dtype == dtypes.float32 and got.shape == ref.shape
  np.testing.assert_array_equal(got.numpy(), ref)

def test_plain_tensors_keep_their_dtype_and_shape():
  """Shapes in numpy's order (the file lists sizes innermost first)."""
  _, ts = gguf_load(SAMPLE)
  assert ts["plain.f16"].dtype == dtypes.float16 and ts["plain.f16"].shape == (1, 3)
  np.testing.assert_array_equal(ts["plain.f16"].numpy(), [[1.5, -2.0, 65504.0]])
  assert ts["plain.i32"].dtype == dtypes.int32 and ts["plain.i32"].tolist() == [-5, 2**31 - 1]
  assert ts["plain.f64"].dtype == dtypes.float64 and ts["plain.f64"].tolist() == [1 / 3]

def test_from_a_disk_tensor_leaves_the_file_as_it_was():
  """tinygrad's form, a tensor of the file: the decoded tensors go to the default device. Made on the DISK tensor's device,
  they were written into the file it reads, over its header."""
  before = hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
  _, ts = gguf_load(Tensor(SAMPLE))
  np.testing.assert_array_equal(ts["q.Q6_K"].numpy(), ts["ref.Q6_K"].numpy())
  assert not ts["q.Q6_K"].device.upper().startswith("DISK")
  assert hashlib.sha256(SAMPLE.read_bytes()).hexdigest() == before

def test_blocks_by_hand():
  """Q8_0: an f16 scale and 32 int8s, d * q; MXFP4: an E8M0 exponent (128: a scale of 1) and 32 E2M1 nibbles, the low
  ones first, doubled: 0, 1, 2, 3, 4, 6, 8, 12 and their negatives."""
  q8 = np.frombuffer(np.float16(2.0).tobytes() + np.arange(1, 33, dtype=np.int8).tobytes(), np.uint8)
  np.testing.assert_array_equal(ggml_data_to_tensor(Tensor(q8), 32, 8).numpy(), np.arange(1, 33) * 2.0)
  mx = np.array([128] + list(range(16)), np.uint8)
  want = [0, 1, 2, 3, 4, 6, 8, 12, -0.0, -1, -2, -3, -4, -6, -8, -12] + [0] * 16
  got = ggml_data_to_tensor(Tensor(mx), 32, 39).numpy()
  np.testing.assert_array_equal(got, want)
  assert np.signbit(got[8])

def test_bad_input_names_the_problem(tmp_path):
  with pytest.raises(GGUFError, match="ggml type 1337 isn't one tg reads"): ggml_data_to_tensor(Tensor.empty(512, dtype=dtypes.uint8), 256, 1337)
  with pytest.raises(GGUFError, match="aren't whole blocks of 32"): ggml_data_to_tensor(Tensor.empty(34, dtype=dtypes.uint8), 16, 8)
  (notes := tmp_path / "notes.gguf").write_bytes(b"hello, world")
  with pytest.raises(GGUFError, match="not a GGUF file"): gguf_load(notes)
  (cut := tmp_path / "cut.gguf").write_bytes(SAMPLE.read_bytes()[:200])
  with pytest.raises(GGUFError, match="past the end"): gguf_load(cut)
