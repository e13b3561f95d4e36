"""DISK:<path>: a file as device memory, memory-mapped, for reading tensors off disk without reading the whole file
(what safetensors loading stands on) and for writing them. It holds data and copies it in and out; it runs no kernels:
copy a tensor to a compute device (.to("CPU")) to compute on it. Every buffer starts at the file's first byte (a view
of a buffer is a part of it); the file is created, or grown with zeros, to fit the buffer."""
from __future__ import annotations
import mmap, os
from typing import Any
from tg.codegen.device import Allocator, Compiled, Compiler

class DiskError(NotImplementedError):
  """Something the DISK device can't do: run a kernel, or map its file (a NotImplementedError, tinygrad's class, and so a
  RuntimeError)."""

class DiskAllocator(Allocator):
  def __init__(self, path: str):
    super().__init__()
    self.path = path
  def alloc(self, nbytes: int) -> memoryview:  # no reuse cache: a buffer is the file, not a block of interchangeable memory
    if nbytes == 0: return memoryview(bytearray(0))
    try:
      fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
      try:
        if os.fstat(fd).st_size < nbytes: os.ftruncate(fd, nbytes)
        return memoryview(mmap.mmap(fd, nbytes))
      finally: os.close(fd)
    except OSError as e: raise DiskError(f"DISK:{self.path}: can't map {nbytes} bytes of the file ({e})") from None
  def free(self, opaque: Any, nbytes: int) -> None: pass  # the mapping closes when its last view goes
  def copyin(self, dest: memoryview, src: memoryview) -> None: dest[:] = src.cast("B")
  def copyout(self, dest: memoryview, src: memoryview) -> None: dest.cast("B")[:] = src
  def offset(self, opaque: memoryview, nbytes: int, offset: int) -> memoryview: return opaque[offset:offset + nbytes]

class DiskCompiler(Compiler):
  def compile(self, src: str) -> bytes: raise DiskError("the DISK device runs no kernels: copy the tensor to a compute device first (.to('CPU'))")

def _no_programs(name: str, lib: bytes) -> Any: raise DiskError(f"the DISK device runs no kernels (asked for {name})")

def _no_renderer() -> Any: raise DiskError("the DISK device runs no kernels: copy the tensor to a compute device first (.to('CPU'))")

class DiskDevice(Compiled):
  def __init__(self, device: str):
    path = device.partition(":")[2]
    if not path: raise DiskError("a DISK device names its file: 'disk:/path/to/file'")
    super().__init__(device, DiskAllocator(path), DiskCompiler(), _no_programs, _no_renderer)
