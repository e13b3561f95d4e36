"""Bad input from a user gets a typed error (a ValueError/RuntimeError subclass) whose message names what is wrong:
environment switches, the C compiler, cache files, safetensors files, code objects and the tg-amd-emu command line.
Each case states the exception type and the words the message must hold; no internal exception (KeyError, struct.error,
sqlite3.Error, UnpicklingError ...) may reach the user."""
import os, pathlib, re, subprocess, sys
import pytest

BIG_KERNEL = "import numpy as np; from tg.tensor import Tensor; print((Tensor(np.ones((512, 1024), np.float32)) + 1).numpy().sum())"

def run_py(code: str, **env: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, **env})

# ***** environment switches, each checked by name *****

@pytest.mark.parametrize("var, raw, module, accepted", [
  ("BEAM", "abc", "tg.codegen.opt.search", "an integer >= 0"), ("DEBUG", "1.5", "tg.uop", "an integer >= 0"),
  ("SPEC", "x", "tg.uop", "an integer >= 0"), ("DEFAULT_FLOAT", "int", "tg.tensor", "a float dtype's name")])
def test_bad_switch_read_at_import(var: str, raw: str, module: str, accepted: str):
  r = run_py(f"import {module}", **{var: raw})
  last = r.stderr.strip().splitlines()[-1]
  assert r.returncode == 1 and last.startswith(f"tg.uop.helpers.EnvError: {var}={raw!r} is ") and accepted in last, r.stderr[-2000:]

_rows = iter(range(600, 10**6))  # a shape no other test compiled: the kernel is rendered and compiled here, reading the switches

def big_kernel_sum(rows: int) -> float:
  import numpy as np
  from tg.tensor import Tensor
  return float((Tensor(np.ones((rows, 1024), np.float32)) + 1).numpy().sum())

@pytest.mark.parametrize("var, raw, accepted", [
  ("CPU_THREADS", "0", "an integer >= 1 <= 256"),   # used to divide by zero in the kernel (SIGFPE)
  ("CPU_THREADS", "-1", "an integer >= 1 <= 256"),  # used to make every threaded kernel a no-op (all zeros)
  ("CPU_THREADS", "abc", "an integer >= 1 <= 256"), ("DISABLE_COMPILER_CACHE", "yes", "0 or 1")])
def test_bad_switch_read_at_use(monkeypatch, var: str, raw: str, accepted: str):
  from tg.uop import EnvError
  monkeypatch.setenv(var, raw)
  with pytest.raises(EnvError, match=f"^{var}={raw!r} is .*: {var} takes {accepted}$"): big_kernel_sum(next(_rows))

def test_good_cpu_threads_still_computes(monkeypatch):
  monkeypatch.setenv("CPU_THREADS", "3")
  assert big_kernel_sum(rows := next(_rows)) == 2.0 * rows * 1024

# ***** the C compiler and the disk cache *****

def test_missing_c_compiler_points_to_the_python_device(monkeypatch, tmp_path):
  from tg.codegen.devices.clang import ClangCompiler, CompilerError
  monkeypatch.setenv("CC", "/nonexistent/cc")
  with pytest.raises(CompilerError, match=r"^no C compiler found \(looked for /nonexistent/cc\): .* DEV=PYTHON"): ClangCompiler().compile("int x;")
  small = "from tg.tensor import Tensor; print((Tensor([1.0, 2.0]) + 1).tolist())"
  r = run_py(small, CC="/nonexistent/cc", DEV="PYTHON", CACHEDB=str(tmp_path / "c.db"))
  assert r.returncode == 0 and r.stdout.strip() == "[2.0, 3.0]", r.stderr[-2000:]

def test_corrupt_cache_warns_and_the_program_goes_on(tmp_path):
  (db := tmp_path / "c.db").write_bytes(b"this is not a database" * 50)
  r = run_py(BIG_KERNEL, CACHEDB=str(db))
  assert r.returncode == 0 and float(r.stdout) == 2 * 512 * 1024, r.stderr[-2000:]
  assert f"CacheWarning: disk cache {db}: file is not a database: moved to c.db.corrupt, starting a fresh cache" in r.stderr, r.stderr[-2000:]

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

# ***** code objects and the tg-amd-emu command line: CodeObjectError / ValueError, and `tg-amd-emu: error: ...` with exit code 1 *****

OUT_ARG = {".name": "out", ".offset": 0, ".size": 8, ".value_kind": "global_buffer"}

def _code_object(args: list[dict] | None = None) -> bytes:
  from tg.amd_emu.asm import assemble
  from tg.amd_emu.codeobj import KernelDescriptor, write
  return write("k", assemble("s_endpgm", "rdna3"), "rdna3", KernelDescriptor(kernarg_size=8), [OUT_ARG] if args is None else args)

CODE_OBJECT_CASES = {
  "truncated ELF header": (lambda: _code_object()[:40], r"truncated ELF: 40 bytes, the ELF header alone is 64"),
  "truncated section table": (lambda: _code_object()[:-10], r"truncated ELF: the section header 6 at offset 0x[0-9a-f]+ runs past the end"),
  "not an ELF": (lambda: b"MZ\x90\x00" * 20, r"not a 64-bit ELF file"),
  "argument without an offset": (lambda: _code_object([{".name": "out", ".size": 8, ".value_kind": "global_buffer"}]),
                                 r"metadata: kernel k argument 0 needs an .offset >= 0"),
  "hidden argument of 3 bytes": (lambda: _code_object([OUT_ARG, {".offset": 8, ".size": 3, ".value_kind": "hidden_block_count_x"}]),
                                 r"metadata: kernel k argument 1 needs .*hidden: 2, 4 or 8"),
  "argument past the kernarg segment": (lambda: _code_object([{**OUT_ARG, ".offset": 300}]),
                                        r"kernel k: argument .* lies outside its 8-byte kernarg"),
}

@pytest.mark.parametrize("case", CODE_OBJECT_CASES)
def test_bad_code_object(case: str):
  from tg.amd_emu.codeobj import CodeObjectError, read
  make, message = CODE_OBJECT_CASES[case]
  with pytest.raises(CodeObjectError, match=message) as e: read(make())
  assert isinstance(e.value, ValueError)

RUN_CASES = {
  "unknown dtype": (["--arg", "f33:10"], r"--arg 'f33:10' for out: unknown dtype 'f33': one of f32, f16"),
  "buffer given a number": (["--arg", "10"], r"--arg '10' for out: a buffer argument takes f32:N"),
  "negative buffer size": (["--arg", "f32:-4"], r"--arg 'f32:-4' for out: a buffer of -4 elements"),
  "empty grid dimension": (["--arg", "f32:4", "--grid", "0,1,1"], r"grid \(0, 1, 1\): 1 to 3 dimensions, each an integer >= 1"),
  "grid not numbers": (["--arg", "f32:4", "--grid", "a,b"], r"--grid 'a,b': expected X,Y,Z integers"),
  "block too large": (["--arg", "f32:4", "--block", "4096"], r"block \(4096,\): 4096 work-items per workgroup, at most 1024"),
  "negative budget": (["--arg", "f32:4", "--budget", "-1"], r"budget -1: the instruction budget per wave must be at least 1"),
  "missing argument": ([], r"k takes 1 arguments \(out\), got 0"),
}

@pytest.mark.parametrize("case", RUN_CASES)
def test_bad_run_command_line(tmp_path, capsys, case: str):
  from tg.amd_emu.cli import main
  (path := tmp_path / "k.hsaco").write_bytes(_code_object())
  flags, message = RUN_CASES[case]
  assert main(["run", str(path), *flags]) == 1
  err = capsys.readouterr().err
  assert err.startswith("tg-amd-emu: error: ") and re.search(message, err), err

def test_good_run_command_line(tmp_path, capsys):
  from tg.amd_emu.cli import main
  (path := tmp_path / "k.hsaco").write_bytes(_code_object())
  assert main(["run", str(path), "--arg", "f32:4", "--grid", "2,1,1", "--block", "64", "--budget", "10"]) == 0, capsys.readouterr().err
  assert "k: 4 wave-instructions" in capsys.readouterr().out  # 2 workgroups x 2 waves x s_endpgm

@pytest.mark.parametrize("grid, block, budget, message", [((0, 1, 1), (32,), 10, r"grid \(0, 1, 1\)"), ((1,), (33, 32), 10, r"1056 work-items"),
                                                          ((1, 1, 1, 1), (32,), 10, r"1 to 3 dimensions"), ((1,), (32,), 0, r"budget 0"),
                                                          ((1 << 27,), (32,), 10, r"2\*\*32 work-items")])
def test_bad_launch_in_the_library(grid, block, budget, message):
  import numpy as np
  from tg.amd_emu.emu import launch
  with pytest.raises(ValueError, match=message): launch(_code_object(), "k", grid, block, [np.zeros(4, np.float32)], budget=budget)
