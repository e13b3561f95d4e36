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

def test_assign_writes_the_file(tmp_path):
  """tinygrad's test_disk_assignment: DISK runs no kernels, so an assign (the ASSIGN kernel) raised; the bytes are
  computed on the CPU and written into the file, into the part a view of it views too."""
  path = tmp_path / "a.bin"
  np.testing.assert_array_equal(Tensor.empty(5, device=f"disk:{path}").assign(Tensor.ones(5)).numpy(), np.ones(5))
  t = Tensor.empty(2, 3, device=f"disk:{path}")
  t.assign(Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)))
  t[1].assign(Tensor([7.0, 8.0, 9.0]))
  t.T[0].assign(Tensor([-1.0, -2.0]))
  np.testing.assert_array_equal(np.fromfile(path, np.float32)[:6], [-1, 1, 2, -2, 8, 9])
  b = Tensor.empty(3, dtype=dtypes.bfloat16, device=f"disk:{tmp_path / 'b.bin'}")
  b.assign(Tensor([1.5, 2.0, -3.0], dtype=dtypes.bfloat16))  # (reading a bfloat16 file ran a cast on DISK)
  np.testing.assert_array_equal(b.numpy(), [1.5, 2.0, -3.0])
  np.testing.assert_array_equal(np.fromfile(tmp_path / "b.bin", np.uint16), [0x3FC0, 0x4000, 0xC040])

def test_setitem_and_a_slice_assign_write_a_file_not_yet_written(tmp_path):
  """tinygrad's test_assign_slice: t = x.to("disk:...") is lazy, and an assign into a slice of it wrote a copy of the file
  that t then overwrote (the write was lost, silently); setitem raised that DISK runs no kernels, and a list value was
  made on the DISK device, written over the file's first bytes."""
  path = tmp_path / "s.bin"
  t = Tensor([0, 1, 2, 3]).to(f"disk:{path}")
  t[0:2].assign(Tensor([13, 12]))
  t[2:4] = [9, 8]
  np.testing.assert_array_equal(np.fromfile(path, np.int32), [13, 12, 9, 8])
  t[1:3] = Tensor([5, 6])
  np.testing.assert_array_equal(t.numpy(), [13, 5, 6, 8])

def test_tar_extract_and_a_tensor_of_a_path(tmp_path):
  """tinygrad's Tensor(pathlib.Path) (a DISK tensor of the file's bytes) and nn.state.tar_extract (a slice of the archive
  per regular file), against Python's tarfile: both were missing."""
  import io, pathlib, tarfile
  from tg.tensor.nn.state import tar_extract
  files = {"a.txt": b"abc", "dir/b.bin": np.random.default_rng(0).integers(0, 256, 1000, dtype=np.uint8).tobytes(), "empty": b""}
  with tarfile.open(tmp_path / "ar.tar", "w") as tar:
    for name, data in files.items():
      info = tarfile.TarInfo(name)
      info.size = len(data)
      tar.addfile(info, io.BytesIO(data))
  raw = Tensor(pathlib.Path(tmp_path / "ar.tar"))
  assert raw.dtype == dtypes.uint8 and raw.shape == ((tmp_path / "ar.tar").stat().st_size,) and raw.device.startswith("DISK")
  for src in (tmp_path / "ar.tar", str(tmp_path / "ar.tar"), raw, Tensor((tmp_path / "ar.tar").read_bytes())):
    got = tar_extract(src)
    assert sorted(got) == sorted(files) and all(bytes(got[k].data()) == v for k, v in files.items())

def test_bitcast_and_contiguous_of_a_run_of_the_file_read_it_in_place(tmp_path):
  """DISK runs no kernels: a bitcast (to any item size) or a contiguous() of a run of the file is a tensor of those bytes
  (tinygrad's), where tg computed them and raised "runs no kernels"; an assign through a bitcast writes the file. Other
  views' contiguous() is a copy on the default device; the reference is numpy's view of the same bytes."""
  path = tmp_path / "b.bin"
  raw = np.arange(32, dtype=np.uint8)
  raw.tofile(path)
  t = Tensor.empty(32, dtype=dtypes.uint8, device=f"disk:{path}")
  assert t.bitcast(dtypes.uint16).tolist() == raw.view(np.uint16).tolist()
  assert t[4:12].bitcast(dtypes.int32).tolist() == raw[4:12].view(np.int32).tolist()
  assert t.bitcast(dtypes.float16)[3:5].numpy().tobytes() == raw.view(np.float16)[3:5].tobytes()
  assert t.reshape(4, 8)[1:3].bitcast(dtypes.uint32).tolist() == raw.reshape(4, 8)[1:3].view(np.uint32).tolist()
  assert t.reshape(4, 8)[1:3].contiguous().device == t.device and t[5:9].contiguous().tolist() == [5, 6, 7, 8]
  assert t.reshape(4, 8).T.contiguous().tolist() == raw.reshape(4, 8).T.tolist()
  t[8:16].bitcast(dtypes.int64).assign([-12345]).realize()
  assert np.fromfile(path, np.uint8)[8:16].view(np.int64).tolist() == [-12345] and np.fromfile(path, np.uint8)[:8].tolist() == list(range(8))
  t[28:32].assign([9, 9, 9, 9]).realize()  # a Python value was made into a buffer on DISK: the file's, written at byte 0 too
  assert np.fromfile(path, np.uint8)[:8].tolist() == list(range(8)) and np.fromfile(path, np.uint8)[28:].tolist() == [9] * 4
  with pytest.raises(NotImplementedError, match="runs no kernels"): t.cast(dtypes.float16).realize()  # (tinygrad's class)
  cpu = Tensor(path, device="CPU")  # a path's tensor on the device asked for (it stayed on DISK)
  assert cpu.device == "CPU" and cpu.tolist()[:8] == list(range(8))
