"""The NULL device: compiles and "runs" without doing anything, and has no data to give back."""
import numpy as np
import pytest
from tg.uop import dtypes
from tg.codegen.device import Buffer, Device
from tg.codegen.renderer.cstyle import CRenderer

def test_null_buffers_accept_data_but_have_none(monkeypatch):
  monkeypatch.delenv("NULL_ALLOW_COPYOUT", raising=False)
  b = Buffer("null", 4, dtypes.float32).copyin(memoryview(np.ones(4, np.float32)))
  assert b.device == "NULL" and b.is_allocated
  with pytest.raises(RuntimeError, match="NULL device has no data.*NULL_ALLOW_COPYOUT=1"): b.numpy()
  with pytest.raises(RuntimeError, match="NULL device has no data"): b.view(2, dtypes.float32, 8).copyout(memoryview(bytearray(8)))

def test_null_copyout_allowed_gives_zeros(monkeypatch):
  monkeypatch.setenv("NULL_ALLOW_COPYOUT", "1")
  b = Buffer("NULL", 3, dtypes.int32).copyin(memoryview(np.array([1, 2, 3], np.int32)))
  np.testing.assert_array_equal(b.numpy(), [0, 0, 0])

def test_null_compiles_to_nothing_and_runs_nothing():
  dev = Device["NULL"]
  assert isinstance(dev.renderer, CRenderer) and dev.renderer.device == "NULL"  # code is still generated, as C, for NULL
  lib = dev.compiler.compile_cached("void k(float* data0, int core_id, int n_cores) { this would not even compile }")
  assert lib == b""
  prg = dev.runtime("k", lib)
  b = Buffer("NULL", 1 << 40, dtypes.uint8).allocate()  # no memory behind it: a terabyte is fine
  assert prg(b._buf, global_size=(4, 1, 1), vals=(3,), wait=True) == 0.0
  dev.synchronize()
