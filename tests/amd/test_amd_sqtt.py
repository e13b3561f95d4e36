"""SQTT=1 and PROFILE=1 on the virtual GPUs: each dispatch writes a thread trace; PROFILE=1 writes them at exit as
Chrome/Perfetto trace JSON with every wave's instructions."""
import json
import os
import subprocess
import sys
import numpy as np
from tg.codegen.device import Device
from tg.tensor import Tensor
from tg.amd_emu.sqtt import decode, timeline

def test_sqtt_traces_each_dispatch(monkeypatch):
  """SQTT=1: results unchanged; the new streams decode, start with the RDNA3 header, and every wave in them ends."""
  monkeypatch.setenv("SQTT", "1")
  traces = Device["AMD"].kfd.kfd.thread_traces
  before = len(traces)
  x = np.arange(301, dtype=np.float32)
  np.testing.assert_allclose((Tensor(x, device="AMD") * 3.5 + 1.25).numpy(), x * 3.5 + 1.25)
  assert len(traces) > before
  for _, blob in traces[before:]:
    packets = decode(blob, "rdna3")
    waves = timeline(packets)
    assert packets[0].fields()["layout"] == 3 and waves and all(w.end is not None for w in waves)

CHILD = """
import numpy as np
from tg.tensor import Tensor
x = np.arange(70, dtype=np.float32)
for dev in ("AMD", "AMD:1"): assert np.allclose((Tensor(x, device=dev) * 3.5 - 5).numpy(), x * 3.5 - 5)
"""

def test_profile_writes_the_trace_at_exit(tmp_path):
  """PROFILE=1 in a fresh process on both virtual GPUs: one process track per launch, each naming its device and kernel;
  the traced waves' instructions are the kernel's (loads, a multiply, which tg may do on the scalar unit, a store)."""
  path = tmp_path / "profile.json"
  env = {**os.environ, "MOCKGPU": "1", "MOCKGPU_ARCH": "rdna3,rdna4", "PROFILE": "1", "PROFILE_PATH": str(path)}
  env.pop("SQTT", None)
  p = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
  assert p.returncode == 0, p.stderr
  assert f"written to {path}" in p.stderr
  ev = json.loads(path.read_text())["traceEvents"]
  labels = [e["args"]["name"] for e in ev if e["name"] == "process_name"]
  assert any(lb.startswith("AMD #") for lb in labels) and any(lb.startswith("AMD:1 #") for lb in labels)
  for pid in range(len(labels)):
    waves = [e for e in ev if e["pid"] == pid and e["ph"] == "X" and e["name"] == "wave"]
    insts = [e for e in ev if e["pid"] == pid and e["ph"] == "X" and e["name"] != "wave"]
    assert waves and all(w["args"]["complete"] for w in waves)
    names = {e["name"] for e in insts}
    assert any(n.startswith("global_store") for n in names) and any(n.startswith(("global_load", "s_load")) for n in names)
    assert any("fma" in n or "mul" in n for n in names)
