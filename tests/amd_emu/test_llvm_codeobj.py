"""Code objects: kernels compiled by clang-19 decode to llvm-objdump-19's text; ours are read by LLVM's tools.
Needs clang-19, ld.lld-19, llvm-objdump-19, llvm-readelf-19 (fails, not skips, without them)."""
from __future__ import annotations
import pathlib
import re
import subprocess
import pytest
from llvm import MCPU, tool
from tg.amd_emu import msgpack
from tg.amd_emu.asm import assemble
from tg.amd_emu.cli import main
from tg.amd_emu.codeobj import KernelDescriptor, read, write
from tg.amd_emu.decode import decode_all

KERNELS = r"""
typedef unsigned int u32;
__attribute__((amdgpu_kernel)) void saxpy(float *y, const float *x, float a, int n) {
  int i = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 256;
  if (i < n) y[i] = a * x[i] + y[i];
}
__attribute__((amdgpu_kernel)) void reduce(u32 *out, const u32 *in, int n) {
  u32 acc = 0;
  for (int i = __builtin_amdgcn_workitem_id_x(); i < n; i += 64) acc += in[i] * in[i] ^ (acc >> 3);
  out[__builtin_amdgcn_workitem_id_x()] = acc;
}
__attribute__((amdgpu_kernel)) void mixed(double *d, _Float16 *h, long *l, int k) {
  int i = __builtin_amdgcn_workitem_id_x();
  d[i] = d[i] * 1.5 + (double)k; h[i] = h[i] * (_Float16)2.0 + h[i + 1]; l[i] = l[i] / (k | 1);
}
"""

def compile_kernels(tmp: pathlib.Path, arch: str) -> pathlib.Path:
  src, obj, out = tmp / "k.c", tmp / f"k_{arch}.o", tmp / f"k_{arch}.hsaco"
  src.write_text(KERNELS)
  cc = [tool("clang-19"), "-x", "c", "-target", "amdgcn-amd-amdhsa", f"-mcpu={MCPU[arch]}", "-nogpulib", "-O2"]
  subprocess.run([*cc, "-c", str(src), "-o", str(obj)], check=True)
  subprocess.run([tool("ld.lld-19"), "-shared", str(obj), "-o", str(out)], check=True)
  return out

def objdump(path: pathlib.Path) -> list[tuple[int, str]]:
  out = subprocess.run([tool("llvm-objdump-19"), "-d", "--no-leading-addr", str(path)], capture_output=True, text=True, check=True).stdout
  rows = []
  for line in out.splitlines():
    if m := re.match(r"\s+(\S.*?)\s*// ([0-9A-F]{12}):", line): rows.append((int(m[2], 16), re.sub(r"\s+", " ", m[1]).strip()))
  return rows

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_llvm_clang_kernels_decode_like_objdump(tmp_path: pathlib.Path, arch: str) -> None:
  path = compile_kernels(tmp_path, arch)
  co = read(path.read_bytes())
  assert co.arch == arch and set(co.kernels) == {"saxpy", "reduce", "mixed"}
  saxpy = co.kernels["saxpy"]
  assert [(a[".offset"], a[".size"]) for a in saxpy.args] == [(0, 8), (8, 8), (16, 4), (20, 4)]
  assert saxpy.descriptor.kernarg_size == 24 and "kernarg_segment_ptr" in saxpy.descriptor.user_sgprs
  ours = [(co.text_addr + off, inst.disasm()) for off, inst in decode_all(co.text, arch)]
  assert [(a, t) for a, t in ours if not t.startswith("s_code_end")] == [(a, t) for a, t in objdump(path) if not t.startswith("s_code_end")]

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_llvm_written_code_object(tmp_path: pathlib.Path, arch: str) -> None:
  code = assemble("s_load_b64 s[0:1], s[0:1], 0x0\nv_mov_b32 v1, 1.0\ns_waitcnt lgkmcnt(0)\nglobal_store_b32 v0, v1, s[0:1]\ns_endpgm", arch)
  kd = KernelDescriptor(kernarg_size=8, rsrc1=0x60AF0000, rsrc2=0x90)
  path = tmp_path / "ours.hsaco"
  path.write_bytes(write("store_one", code, arch, kd, [{".offset": 0, ".size": 8, ".value_kind": "global_buffer"}]))
  readelf = subprocess.run([tool("llvm-readelf-19"), "-h", "-s", "--notes", str(path)], capture_output=True, text=True, check=True).stdout
  assert "EM_AMDGPU" in readelf and MCPU[arch] in readelf and "store_one.kd" in readelf and "amdhsa.kernels" in readelf
  theirs = [t for _, t in objdump(path)]
  assert theirs == [i.disasm() for _, i in decode_all(code, arch)]
  co = read(path.read_bytes())
  k = co.kernels["store_one"]
  assert k.code == code and k.descriptor.kernarg_size == 8 and k.args[0][".size"] == 8 and k.descriptor.rsrc1 == 0x60AF0000

def test_llvm_cli(tmp_path: pathlib.Path, capsys) -> None:
  src = tmp_path / "a.s"
  src.write_text("v_add_f32 v0, v1, v2\ns_endpgm\n")
  assert main(["asm", str(src), "-o", str(tmp_path / "a.bin"), "--arch", "rdna4"]) == 0
  assert main(["disasm", str(tmp_path / "a.bin"), "--arch", "rdna4"]) == 0
  assert "v_add_f32_e32 v0, v1, v2" in capsys.readouterr().out
  assert main(["asm", str(src), "-o", str(tmp_path / "a.hsaco")]) == 0
  assert main(["disasm", str(tmp_path / "a.hsaco")]) == 0 and "s_endpgm" in capsys.readouterr().out

def test_msgpack_roundtrip() -> None:
  value = {"a": [1, -3, 300, -70000, 2**40, True, None, "x" * 40], "b": {"c": ""}}
  assert msgpack.unpack(msgpack.pack(value)) == value
  assert msgpack.unpack(bytes([0x82, 0xA1, 0x6B, 0xCD, 0x01, 0x00, 0xA1, 0x66, 0xCB]) + bytes.fromhex("3ff8000000000000")) == {"k": 256, "f": 1.5}
