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
