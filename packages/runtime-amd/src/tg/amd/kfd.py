"""The narrow interface to the kernel driver: KFD ioctl structs and numbers (from linux/kfd_ioctl.h), and `KFD`, the
handful of operations the driver uses (open, ioctl, mmap, munmap, sysfs reads, doorbell writes). `HostKFD` makes the
real syscalls; tg.amd.mockgpu.MockKFD implements the same operations with a virtual GPU."""
from __future__ import annotations
import ctypes, ctypes.util, os
from dataclasses import dataclass
from typing import Protocol

u32, u64 = ctypes.c_uint32, ctypes.c_uint64
def _struct(name: str, fields: list[tuple[str, type]]) -> type[ctypes.Structure]: return type(name, (ctypes.Structure,), {"_fields_": fields})

GetVersion = _struct("kfd_ioctl_get_version_args", [("major_version", u32), ("minor_version", u32)])
CreateQueue = _struct("kfd_ioctl_create_queue_args", [
  ("ring_base_address", u64), ("write_pointer_address", u64), ("read_pointer_address", u64), ("doorbell_offset", u64), ("ring_size", u32),
  ("gpu_id", u32), ("queue_type", u32), ("queue_percentage", u32), ("queue_priority", u32), ("queue_id", u32), ("eop_buffer_address", u64),
  ("eop_buffer_size", u64), ("ctx_save_restore_address", u64), ("ctx_save_restore_size", u32), ("ctl_stack_size", u32)])
DestroyQueue = _struct("kfd_ioctl_destroy_queue_args", [("queue_id", u32), ("pad", u32)])
CreateEvent = _struct("kfd_ioctl_create_event_args", [("event_page_offset", u64), ("event_trigger_data", u32), ("event_type", u32),
                                                      ("auto_reset", u32), ("node_id", u32), ("event_id", u32), ("event_slot_index", u32)])
DestroyEvent = _struct("kfd_ioctl_destroy_event_args", [("event_id", u32), ("pad", u32)])
MemoryExceptionFailure = _struct("kfd_memory_exception_failure", [("NotPresent", u32), ("ReadOnly", u32), ("NoExecute", u32), ("imprecise", u32)])
MemoryExceptionData = _struct("kfd_hsa_memory_exception_data", [("failure", MemoryExceptionFailure), ("va", u64), ("gpu_id", u32),
                                                               ("ErrorType", u32)])
HwExceptionData = _struct("kfd_hsa_hw_exception_data", [("reset_type", u32), ("reset_cause", u32), ("memory_lost", u32), ("gpu_id", u32)])
EventDataUnion = type("kfd_event_data_union", (ctypes.Union,), {"_fields_": [("memory_exception_data", MemoryExceptionData),
                                                                              ("hw_exception_data", HwExceptionData)]})
EventData = type("kfd_event_data", (ctypes.Structure,), {"_anonymous_": ("u",), "_fields_": [
  ("u", EventDataUnion), ("kfd_event_data_ext", u64), ("event_id", u32), ("pad", u32)]})
WaitEvents = _struct("kfd_ioctl_wait_events_args", [("events_ptr", u64), ("num_events", u32), ("wait_for_all", u32), ("timeout", u32),
                                                    ("wait_result", u32)])
AcquireVM = _struct("kfd_ioctl_acquire_vm_args", [("drm_fd", u32), ("gpu_id", u32)])
AllocMemory = _struct("kfd_ioctl_alloc_memory_of_gpu_args", [("va_addr", u64), ("size", u64), ("handle", u64), ("mmap_offset", u64),
                                                             ("gpu_id", u32), ("flags", u32)])
FreeMemory = _struct("kfd_ioctl_free_memory_of_gpu_args", [("handle", u64)])
MapMemory = _struct("kfd_ioctl_map_memory_to_gpu_args", [("handle", u64), ("device_ids_array_ptr", u64), ("n_devices", u32), ("n_success", u32)])

def _iowr(nr: int, st: type, rd: bool = True, wr: bool = True) -> int:
  return ((2 if rd else 0) | (1 if wr else 0)) << 30 | ctypes.sizeof(st) << 16 | ord("K") << 8 | nr

IOCTLS: dict[str, tuple[int, type]] = {name: (_iowr(nr, st, rd, wr), st) for name, nr, st, rd, wr in [
  ("GET_VERSION", 0x01, GetVersion, True, False), ("CREATE_QUEUE", 0x02, CreateQueue, True, True),
  ("DESTROY_QUEUE", 0x03, DestroyQueue, True, True), ("CREATE_EVENT", 0x08, CreateEvent, True, True),
  ("DESTROY_EVENT", 0x09, DestroyEvent, False, True), ("WAIT_EVENTS", 0x0C, WaitEvents, True, True),
  ("ACQUIRE_VM", 0x15, AcquireVM, False, True), ("ALLOC_MEMORY_OF_GPU", 0x16, AllocMemory, True, True),
  ("FREE_MEMORY_OF_GPU", 0x17, FreeMemory, False, True), ("MAP_MEMORY_TO_GPU", 0x18, MapMemory, True, True),
  ("UNMAP_MEMORY_FROM_GPU", 0x19, MapMemory, True, True)]}
IOCTL_NAMES = {nr: name for name, (nr, _) in IOCTLS.items()}

QUEUE_TYPE_COMPUTE, QUEUE_TYPE_SDMA = 0, 1
EVENT_SIGNAL, EVENT_HW_EXCEPTION, EVENT_MEMORY = 0, 3, 8
HW_EXCEPTION_WHOLE_GPU_RESET, HW_EXCEPTION_PER_ENGINE_RESET = 0, 1  # hw_exception_data.reset_type
HW_EXCEPTION_GPU_HANG, HW_EXCEPTION_ECC = 0, 1                       # hw_exception_data.reset_cause
WAIT_COMPLETE, WAIT_TIMEOUT = 0, 1
MEM_VRAM, MEM_GTT, MEM_USERPTR, MEM_DOORBELL = 1 << 0, 1 << 1, 1 << 2, 1 << 3
MEM_WRITABLE, MEM_EXECUTABLE, MEM_PUBLIC, MEM_COHERENT, MEM_UNCACHED = 1 << 31, 1 << 30, 1 << 29, 1 << 26, 1 << 25
KFD_MMAP_TYPE_DOORBELL = 0x3 << 62
PROT_NONE, PROT_READ, PROT_WRITE = 0, 1, 2
MAP_SHARED, MAP_PRIVATE, MAP_FIXED, MAP_ANONYMOUS, MAP_NORESERVE = 0x01, 0x02, 0x10, 0x20, 0x4000
TOPOLOGY = "/sys/devices/virtual/kfd/kfd/topology/nodes"

@dataclass(frozen=True)
class FaultingWave:
  """Where a fault stopped a wave: its pc, its index in the workgroup, the workgroup, and why (memory, hang, illegal)."""
  pc: int
  wave: int
  workgroup: tuple[int, int, int] | None
  kind: str

class KFD(Protocol):
  """Everything the driver asks of the operating system about the GPU."""
  def open(self, path: str) -> int: ...
  def close(self, fd: int) -> None: ...
  def ioctl(self, fd: int, name: str, args: ctypes.Structure) -> ctypes.Structure: ...
  def mmap(self, addr: int, size: int, prot: int, flags: int, fd: int, offset: int) -> int: ...
  def munmap(self, addr: int, size: int) -> None: ...
  def read(self, path: str) -> str: ...
  def listdir(self, path: str) -> list[str]: ...
  def ring(self, doorbell: int, value: int) -> None:
    """Write a queue's new write pointer to its doorbell (a 64-bit MMIO write)."""
  def faulting_wave(self) -> FaultingWave | None:
    """The wave the last reported fault stopped, when the interface knows it: the virtual GPU does; KFD's events carry only the
    address (the pc needs a trap handler, which tg doesn't install)."""

class HostKFD:
  """The real kernel interface through libc."""
  def __init__(self) -> None:
    self.libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    self.libc.mmap.restype, self.libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                                                         ctypes.c_int, ctypes.c_long]
    self.libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    self.libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]
  def open(self, path: str) -> int: return os.open(path, os.O_RDWR | os.O_CLOEXEC)
  def close(self, fd: int) -> None: os.close(fd)
  def ioctl(self, fd: int, name: str, args: ctypes.Structure) -> ctypes.Structure:
    if self.libc.ioctl(fd, IOCTLS[name][0], ctypes.byref(args)) < 0:
      err = ctypes.get_errno()
      raise RuntimeError(f"KFD ioctl {name} failed: {os.strerror(err)} (errno {err})")
    return args
  def mmap(self, addr: int, size: int, prot: int, flags: int, fd: int, offset: int) -> int:
    ret = self.libc.mmap(addr or None, size, prot, flags, fd, offset)
    if ret is None or ret == ctypes.c_void_p(-1).value: raise RuntimeError(f"mmap of {size:#x} bytes failed: {os.strerror(ctypes.get_errno())}")
    return ret
  def munmap(self, addr: int, size: int) -> None: self.libc.munmap(addr, size)
  def read(self, path: str) -> str:
    with open(path) as f: return f.read()
  def listdir(self, path: str) -> list[str]: return os.listdir(path)
  def ring(self, doorbell: int, value: int) -> None: ctypes.c_uint64.from_address(doorbell).value = value
  def faulting_wave(self) -> FaultingWave | None: return None
