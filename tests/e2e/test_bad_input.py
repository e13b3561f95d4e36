"""Bad input from a user gets a typed error (a ValueError/RuntimeError subclass) whose message names what is wrong:
environment switches, the C compiler, cache files, safetensors files, code objects and the tg-amd-emu command line.
Each case states the exception type and the words the message must hold; no internal exception (KeyError, struct.error,
sqlite3.Error, UnpicklingError ...) may reach the user."""
import os, pathlib, subprocess, sys
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIG_KERNEL = "import numpy as np; from tg.tensor import Tensor; print((Tensor(np.ones((512, 1024), np.float32)) + 1).numpy().sum())"

def run_py(code: str, **env: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, **env})

# ***** environment switches: read at import or at the first kernel, each checked by name *****

@pytest.mark.parametrize("var, raw, accepted", [
  ("CPU_THREADS", "0", "an integer >= 1 <= 256"),   # used to divide by zero in the kernel (SIGFPE)
  ("CPU_THREADS", "-1", "an integer >= 1 <= 256"),  # used to make every threaded kernel a no-op (all zeros)
  ("CPU_THREADS", "abc", "an integer >= 1 <= 256"), ("BEAM", "abc", "an integer >= 0"), ("DEBUG", "1.5", "an integer >= 0"),
  ("SPEC", "x", "an integer >= 0"), ("DISABLE_COMPILER_CACHE", "yes", "0 or 1"), ("DEFAULT_FLOAT", "int", "a float dtype's name")])
def test_bad_environment_switch(var: str, raw: str, accepted: str, tmp_path):
  code = BIG_KERNEL if var != "BEAM" else "import tg.codegen.opt.search"
  r = run_py(code, **{var: raw, "CACHEDB": str(tmp_path / "c.db")})
  assert r.returncode == 1, (r.returncode, r.stdout, r.stderr[-2000:])
  assert f"tg.uop.helpers.EnvError: {var}={raw!r} is " in r.stderr and accepted in r.stderr.splitlines()[-1], r.stderr[-2000:]

def test_good_cpu_threads_still_computes(tmp_path):
  r = run_py(BIG_KERNEL, CPU_THREADS="3", CACHEDB=str(tmp_path / "c.db"))
  assert r.returncode == 0 and float(r.stdout) == 2 * 512 * 1024, r.stderr[-2000:]

# ***** safetensors files: SafetensorsError (a ValueError) naming the file and the tensor *****

def _st_file(path: pathlib.Path, header: object, data: bytes = bytes(24), raw_header: bytes | None = None) -> pathlib.Path:
  import json, struct
  js = raw_header if raw_header is not None else json.dumps(header).encode()
  return _raw(path, struct.pack("<Q", len(js)) + js + data)

def _raw(path: pathlib.Path, data: bytes) -> pathlib.Path:
  path.write_bytes(data)
  return path

GOOD = {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}
SAFETENSORS_CASES = {
  "3-byte file": (lambda p: _raw(p, b"abc"), r"3 bytes is too short for safetensors"),
  "header length past the end": (lambda p: _raw(p, b"\xff" * 8 + b"{}"),
                                 r"the header length 18446744073709551615 runs past the end of the file \(10 bytes\)"),
  "header not JSON": (lambda p: _st_file(p, None, raw_header=b"{nope"), r"the header isn't UTF-8 JSON"),
  "header not UTF-8": (lambda p: _st_file(p, None, raw_header=b'{"\xff": 1}'), r"the header isn't UTF-8 JSON"),
  "header a list": (lambda p: _st_file(p, [1, 2]), r"the header is a JSON list, not an object"),
  "entry not an object": (lambda p: _st_file(p, {"w": [0, 24]}), r"tensor 'w': the entry is a JSON list, not an object"),
  "unknown dtype": (lambda p: _st_file(p, {"w": {**GOOD["w"], "dtype": "F33"}}), r"tensor 'w': dtype 'F33' isn't one of F64, F32"),
  "negative shape": (lambda p: _st_file(p, {"w": {**GOOD["w"], "shape": [-2, -3]}}), r"tensor 'w': shape \[-2, -3\] isn't a list of integers >= 0"),
  "offsets out of range": (lambda p: _st_file(p, {"w": {**GOOD["w"], "data_offsets": [8, 32]}}),
                           r"tensor 'w': data_offsets \[8, 32\] run past the end of the data \(24 bytes\)"),
  "offsets reversed": (lambda p: _st_file(p, {"w": {**GOOD["w"], "data_offsets": [24, 0]}}),
                       r"tensor 'w': data_offsets \[24, 0\] isn't \[begin, end\]"),
  "dtype vs byte length": (lambda p: _st_file(p, {"w": {**GOOD["w"], "dtype": "F64"}}),
                           r"tensor 'w': F64 of shape \[2, 3\] is 48 bytes, but data_offsets \[0, 24\] hold 24"),
  "overlapping": (lambda p: _st_file(p, {**GOOD, "v": {"dtype": "I32", "shape": [2], "data_offsets": [20, 28]}}, bytes(28)),
                  r"tensors 'w' \(bytes 0..24\) and 'v' \(bytes 20..28\) overlap"),
  "bad metadata": (lambda p: _st_file(p, {**GOOD, "__metadata__": {"a": 1}}), r"__metadata__ must be an object of strings"),
}

@pytest.mark.parametrize("case", SAFETENSORS_CASES)
def test_bad_safetensors_file(tmp_path, case: str):
  from tg.tensor.nn.state import SafetensorsError, safe_load
  make, message = SAFETENSORS_CASES[case]
  path = make(tmp_path / "m.safetensors")
  with pytest.raises(SafetensorsError, match=f"^{path}: .*{message}") as e: safe_load(path)
  assert isinstance(e.value, ValueError)
