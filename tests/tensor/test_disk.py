"""The DISK device: a file, memory-mapped, as a tensor's memory; read back and copied to the CPU byte for byte."""
import numpy as np
import pytest
from tg.tensor import Tensor, dtypes, Device

def test_disk_tensor_reads_the_file_and_copies_to_cpu(tmp_path):
  path = tmp_path / "data.bin"
  a = np.arange(12, dtype=np.float32) * 1.5
  a.tofile(path)
  t = Tensor.empty(3, 4, dtype=dtypes.float32, device=f"disk:{path}")
  assert t.device == f"DISK:{path}"
  np.testing.assert_array_equal(t.numpy(), a.reshape(3, 4))
  c = t.to("CPU")
  assert c.device == "CPU"
  np.testing.assert_array_equal((c * 2).numpy(), a.reshape(3, 4) * 2)
  assert path.stat().st_size == 48  # mapped, not grown nor rewritten

def test_disk_tensor_written_from_cpu(tmp_path):
  path = tmp_path / "out.bin"
  Tensor(np.array([1, -2, 3], np.int32)).to(f"disk:{path}").realize()
  np.testing.assert_array_equal(np.fromfile(path, np.int32), [1, -2, 3])

def test_disk_runs_no_kernels(tmp_path):
  t = Tensor.empty(4, device=f"disk:{tmp_path / 'x.bin'}")
  with pytest.raises(RuntimeError, match="runs no kernels: copy the tensor to a compute device"): (t + 1).numpy()
  with pytest.raises(RuntimeError, match="names its file"): Device["disk"]

def test_a_view_of_a_disk_tensor_reads_through_the_cpu(tmp_path):
  # a slice of a file (tinygrad's test_copy_from_disk; a safetensors blob's tensor is one) made DISK run the shrink
  x = np.arange(24, dtype=np.float32).reshape(4, 6)
  t = Tensor(x).to(f"disk:{tmp_path / 'v.bin'}")
  np.testing.assert_array_equal(t[1:3].to(Device.DEFAULT).numpy(), x[1:3])
  np.testing.assert_array_equal(t[1:3, ::2].T.numpy(), x[1:3, ::2].T)
