"""NULL: generates and "compiles" code like a real device but runs nothing and holds no data, for testing what is
scheduled and generated without paying for execution."""
from __future__ import annotations
from typing import Any
from tg.uop import getenv
from tg.codegen.renderer import Renderer
from tg.codegen.device import Allocator, Compiled, Compiler

class NullAllocator(Allocator):
  """Buffers are just their size: copyin is dropped, copyout is an error (there is no data) unless NULL_ALLOW_COPYOUT=1 (zeros)."""
  def _alloc(self, nbytes: int) -> int: return nbytes
  def copyin(self, dest: Any, src: memoryview) -> None: pass
  def copyout(self, dest: memoryview, src: Any) -> None:
    if not getenv("NULL_ALLOW_COPYOUT", False):
      raise RuntimeError("the NULL device has no data to copy out: run on a real device, or set NULL_ALLOW_COPYOUT=1 to read zeros")
    dest.cast("B")[:] = bytes(dest.nbytes)
  def offset(self, opaque: Any, nbytes: int, offset: int) -> int: return nbytes
  def transfer(self, dest: Any, src: Any) -> bool: return isinstance(src.allocator, NullAllocator)  # no data on either side

class NullCompiler(Compiler):
  def compile(self, src: str) -> bytes: return b""

class NullProgram:
  def __init__(self, name: str, lib: bytes): self.name = name
  def __call__(self, *bufs: Any, global_size: tuple[int, int, int] = (1, 1, 1), local_size: tuple[int, int, int] = (1, 1, 1),
               vals: tuple[int, ...] = (), wait: bool = False) -> float | None:
    return 0.0 if wait else None

def null_renderer() -> Renderer:
  """The C renderer (so there is code to inspect), for programs that belong to NULL."""
  from tg.codegen.renderer.cstyle import CRenderer
  from tg.codegen.devices.cpu import cpu_threads
  class NullRenderer(CRenderer): device = "NULL"
  from tg.codegen.devices.host import host_isa
  return NullRenderer(threads=cpu_threads, isa=host_isa)

class NullDevice(Compiled):
  def __init__(self, device: str = "NULL"): super().__init__(device, NullAllocator(), NullCompiler(), NullProgram, null_renderer)
