"""tg.amd.kfd's ctypes structs and ioctl numbers are the kernel's: a C program built with LLVM 19's clang against
/usr/include/linux/kfd_ioctl.h prints every struct's size and field offsets, every AMDKFD_IOC_* number and the flag values,
and they must equal ours. It needs clang-19 (and linux-libc-dev): without them it fails."""
import ctypes, os, subprocess
import pytest
from tg.amd import kfd
from tg.amd.compiler import find_tool

HEADER = "/usr/include/linux/kfd_ioctl.h"
CONSTANTS = {"KFD_IOC_QUEUE_TYPE_COMPUTE": kfd.QUEUE_TYPE_COMPUTE, "KFD_IOC_QUEUE_TYPE_SDMA": kfd.QUEUE_TYPE_SDMA,
             "KFD_IOC_EVENT_SIGNAL": kfd.EVENT_SIGNAL, "KFD_IOC_EVENT_HW_EXCEPTION": kfd.EVENT_HW_EXCEPTION,
             "KFD_IOC_EVENT_MEMORY": kfd.EVENT_MEMORY, "KFD_IOC_WAIT_RESULT_COMPLETE": kfd.WAIT_COMPLETE,
             "KFD_IOC_WAIT_RESULT_TIMEOUT": kfd.WAIT_TIMEOUT, "KFD_IOC_ALLOC_MEM_FLAGS_VRAM": kfd.MEM_VRAM,
             "KFD_IOC_ALLOC_MEM_FLAGS_GTT": kfd.MEM_GTT, "KFD_IOC_ALLOC_MEM_FLAGS_USERPTR": kfd.MEM_USERPTR,
             "KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL": kfd.MEM_DOORBELL, "KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE": kfd.MEM_WRITABLE,
             "KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE": kfd.MEM_EXECUTABLE, "KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC": kfd.MEM_PUBLIC,
             "KFD_IOC_ALLOC_MEM_FLAGS_COHERENT": kfd.MEM_COHERENT, "KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED": kfd.MEM_UNCACHED}

def structs() -> list[type]:
  """Our ctypes structs (with the structs nested in them), each named after its C struct."""
  out: list[type] = []
  def add(t: type) -> None:
    if t in out or not issubclass(t, ctypes.Structure): return
    out.append(t)
    for _, ft in t._fields_:
      if issubclass(ft, (ctypes.Structure, ctypes.Union)): add(ft) if issubclass(ft, ctypes.Structure) else [add(u) for _, u in ft._fields_]
  for _, st in kfd.IOCTLS.values(): add(st)
  add(kfd.EventData)
  return out

def fields(st: type) -> list[str]:
  """Field names as C sees them: an anonymous union's members belong to the struct."""
  anon = getattr(st, "_anonymous_", ())
  return [m for name, t in st._fields_ for m in ([u for u, _ in t._fields_] if name in anon else [name])]

def ours() -> dict[str, int]:
  out = {f"IOC {name}": nr for name, (nr, _) in kfd.IOCTLS.items()} | {f"CONST {k}": v for k, v in CONSTANTS.items()}
  for st in structs():
    out[f"sizeof {st.__name__}"] = ctypes.sizeof(st)
    out |= {f"offsetof {st.__name__}.{f}": getattr(st, f).offset for f in fields(st)}
  return out

def program() -> str:
  lines = [f'  printf("IOC {name} %lu\\n", (unsigned long)AMDKFD_IOC_{name});' for name in kfd.IOCTLS]
  lines += [f'  printf("CONST {k} %lu\\n", (unsigned long)(unsigned int)({k}));' for k in CONSTANTS]
  for st in structs():
    lines.append(f'  printf("sizeof {st.__name__} %zu\\n", sizeof(struct {st.__name__}));')
    lines += [f'  printf("offsetof {st.__name__}.{f} %zu\\n", offsetof(struct {st.__name__}, {f}));' for f in fields(st)]
  return "#include <stdio.h>\n#include <stddef.h>\n#include <linux/kfd_ioctl.h>\nint main(void) {\n" + "\n".join(lines) + "\n  return 0;\n}\n"

def test_llvm_kfd_structs_and_ioctls_match_kernel_header(tmp_path):
  assert os.path.exists(HEADER), f"{HEADER} is missing: apt-get install linux-libc-dev"
  (tmp_path / "abi.c").write_text(program())
  (tmp_path / "drm").mkdir()  # kfd_ioctl.h includes drm/drm.h (libdrm-dev) only for the __u32/__u64 types: stand in for it
  (tmp_path / "drm" / "drm.h").write_text("#include <linux/types.h>\n")
  r = subprocess.run([find_tool("clang"), f"-I{tmp_path}", str(tmp_path / "abi.c"), "-o", str(tmp_path / "abi")], capture_output=True, text=True)
  assert r.returncode == 0, f"clang failed on kfd_ioctl.h:\n{r.stderr}"
  out = subprocess.run([str(tmp_path / "abi")], check=True, capture_output=True, text=True).stdout
  theirs = {k: int(v) for k, _, v in (line.rpartition(" ") for line in out.splitlines())}
  assert len(theirs) > 60
  assert ours() == theirs

def test_missing_llvm_is_an_error_naming_the_packages(monkeypatch):
  monkeypatch.setenv("TG_CLANG", "/nonexistent/clang-19")
  with pytest.raises(RuntimeError, match=r"needs LLVM 19.*/nonexistent/clang-19.*set TG_CLANG.*apt-get install clang-19 lld-19 llvm-19"):
    find_tool("clang")
