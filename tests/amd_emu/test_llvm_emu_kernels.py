"""End to end: C kernels compiled by clang-19 for gfx1100 and gfx1200, run on the emulator, checked against numpy.

These need LLVM 19 (clang-19, ld.lld-19) and fail when it is missing."""
from __future__ import annotations
import functools
import pathlib
import subprocess
import tempfile
import numpy as np
import pytest
from tg.amd_emu.emu import launch, MemoryFault
from llvm import tool

SRC = pathlib.Path(__file__).with_name("emu_kernels.c")
ARCHS = ["gfx1100", "gfx1200"]

@functools.cache
def code_object(mcpu: str) -> bytes:
  with tempfile.TemporaryDirectory() as d:
    obj, so = f"{d}/k.o", f"{d}/k.hsaco"
    subprocess.run([tool("clang-19"), "-target", "amdgcn-amd-amdhsa", f"-mcpu={mcpu}", "-nogpulib", "-O2", "-x", "c", "-c", str(SRC),
                    "-o", obj], check=True, capture_output=True)
    subprocess.run([tool("ld.lld-19"), "-shared", obj, "-o", so], check=True, capture_output=True)
    return pathlib.Path(so).read_bytes()

@pytest.mark.parametrize("mcpu", ARCHS)
def test_llvm_elementwise(mcpu: str) -> None:
  rng = np.random.default_rng(0)
  n = 1000
  b, c = rng.standard_normal(n).astype(np.float32), rng.random(n).astype(np.float32) + 0.1
  c[:4] = [1e-30, 3.0, 1e30, 0.0]
  a = np.zeros(n, np.float32)
  launch(code_object(mcpu), "elementwise", (4, 1, 1), (256, 1, 1), [a, b, c, n])
  ref = b * np.float32(2) + c / np.float32(3) - np.sqrt(c)
  np.testing.assert_allclose(a, ref, rtol=1e-6, atol=1e-6)

@pytest.mark.parametrize("mcpu", ARCHS)
def test_llvm_lds_reduce_with_barriers(mcpu: str) -> None:
  x = np.random.default_rng(1).random(4 * 256).astype(np.float32)
  out = np.zeros(4, np.float32)
  launch(code_object(mcpu), "reduce", (4, 1, 1), (256, 1, 1), [out, x])
  np.testing.assert_allclose(out, x.reshape(4, 256).sum(1), rtol=1e-5)

@pytest.mark.parametrize("mcpu", ARCHS)
def test_llvm_waves_exchange_through_lds(mcpu: str) -> None:
  out = np.zeros(128, np.int32)
  launch(code_object(mcpu), "exchange", (1, 1, 1), (128, 1, 1), [out])
  np.testing.assert_array_equal(out, ((np.arange(128) + 64) % 128) * 3)

@pytest.mark.parametrize("mcpu", ARCHS)
def test_llvm_tiled_matmul(mcpu: str) -> None:
  n = 32
  rng = np.random.default_rng(2)
  a, b = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
  c = np.zeros((n, n), np.float32)
  launch(code_object(mcpu), "matmul", (n // 16, n // 16, 1), (16, 16, 1), [c, a, b, n])
  np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("mcpu", ARCHS)
def test_llvm_2d_grid_workgroup_ids(mcpu: str) -> None:
  w, h = 32, 12
  out = np.zeros((h, w), np.int32)
  launch(code_object(mcpu), "grid2d", (w // 8, h // 4, 1), (8, 4, 1), [out, w])
  ys, xs = np.mgrid[:h, :w]
  np.testing.assert_array_equal(out, ys * 1000 + xs)

@pytest.mark.parametrize("mcpu", ARCHS)
def test_llvm_atomics(mcpu: str) -> None:
  x = np.random.default_rng(3).random(512).astype(np.float32)
  cnt, fsum, imax = np.zeros(1, np.uint32), np.zeros(1, np.float32), np.full(1, -5, np.int32)
  launch(code_object(mcpu), "atomics", (2, 1, 1), (256, 1, 1), [cnt, fsum, imax, x])
  assert cnt[0] == 512
  np.testing.assert_allclose(fsum[0], x.sum(), rtol=1e-4)
  assert imax[0] == int((x * np.float32(100)).astype(np.int32).max())

@pytest.mark.parametrize("mcpu", ARCHS)
def test_llvm_scratch_and_call(mcpu: str) -> None:
  idx = np.random.default_rng(4).integers(0, 1000, 64).astype(np.int32)
  out = np.zeros(64, np.float32)
  launch(code_object(mcpu), "scratch", (1, 1, 1), (64, 1, 1), [out, idx])
  t = np.arange(64)
  k = idx & 63
  np.testing.assert_array_equal(out, (t * 64 + k) + 2 * (t * 64 + (k * 5) % 48) + (t * 64 + ((idx * 7) & 63)))

def to_bf16(x: np.ndarray) -> np.ndarray:
  """bfloat16 bits of float32 values, truncated (exact for values that are bfloat16 already)."""
  return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)

def from_bf16(bits: np.ndarray) -> np.ndarray: return (bits.astype(np.uint32) << 16).view(np.float32)

@pytest.mark.parametrize("mcpu", ARCHS)
@pytest.mark.parametrize("kernel", ["wmma_f32_f16", "wmma_f32_bf16", "wmma_f16_f16", "wmma_bf16_bf16", "wmma_i32_iu8"])
def test_llvm_wmma(mcpu: str, kernel: str) -> None:
  """One wave's D = A*B + C through __builtin_amdgcn_wmma_*, fragments loaded per the ISA's VGPR layouts, against numpy."""
  rng = np.random.default_rng(5)
  dfmt, abfmt = kernel.split("_")[1:]
  if abfmt == "iu8":
    a, b = rng.integers(-128, 128, (16, 16)).astype(np.int8), rng.integers(0, 256, (16, 16)).astype(np.uint8)
    c, d = rng.integers(-1 << 20, 1 << 20, (16, 16)).astype(np.int32), np.zeros((16, 16), np.int32)
    launch(code_object(mcpu), kernel, (1, 1, 1), (32, 1, 1), [d, a, b, c])
    np.testing.assert_array_equal(d, a.astype(np.int64) @ b.astype(np.int64) + c)
    return
  x = rng.standard_normal((3, 16, 16)).astype(np.float32)
  a, b = (x[:2].astype(np.float16), x[:2].astype(np.float16)) if abfmt == "f16" else (to_bf16(x[:2]), to_bf16(x[:2]))
  a, b = a[0], b[1]
  c = {"f32": x[2], "f16": x[2].astype(np.float16), "bf16": to_bf16(x[2])}[dfmt]
  d = np.zeros_like(c)
  launch(code_object(mcpu), kernel, (1, 1, 1), (32, 1, 1), [d, a, b, c])
  val = (lambda m: from_bf16(m).astype(np.float64)) if abfmt == "bf16" else (lambda m: m.astype(np.float64))
  ref = val(a) @ val(b) + (from_bf16(c) if dfmt == "bf16" else c).astype(np.float64)
  got = from_bf16(d) if dfmt == "bf16" else d.astype(np.float32)
  tol = {"f32": 1e-5, "f16": 1e-3, "bf16": 8e-3}[dfmt]
  np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)

def test_llvm_fault_names_instruction_and_address() -> None:
  out = np.zeros(4, np.int32)
  with pytest.raises(MemoryFault, match=r"memory fault: global_store_b32 .* at 0x[0-9a-f]+, no mapping \(pc=0x[0-9a-f]+, wave 0"):
    launch(code_object("gfx1100"), "grid2d", (1, 1, 1), (8, 4, 1), [out, 1 << 20])

def test_llvm_cli_run(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
  from tg.amd_emu.cli import main
  co = tmp_path / "k.hsaco"
  co.write_bytes(code_object("gfx1100"))
  assert main(["run", str(co), "--kernel", "elementwise", "--block", "4,1,1", "--arg", "f32:4", "--arg", "f32=1,2,3,4", "--arg", "f32=4,4,4,4",
               "--arg", "4", "--out", str(tmp_path)]) == 0
  b, c = np.array([1, 2, 3, 4], np.float32), np.full(4, 4, np.float32)
  np.testing.assert_allclose(np.load(tmp_path / "arg0.npy"), b * 2 + c / np.float32(3) - 2, rtol=1e-6)
  assert main(["run", str(co), "--kernel", "grid2d", "--block", "8,4,1", "--arg", "i32:4", "--arg", "1"]) == 1
  assert "memory fault: global_store_b32" in capsys.readouterr().err
