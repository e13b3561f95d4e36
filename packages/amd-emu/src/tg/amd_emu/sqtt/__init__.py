"""SQTT (SQ thread trace): decode AMD RDNA3/RDNA4 thread-trace streams, map them to the kernel's instructions, write
them from the emulator, and export them as Chrome/Perfetto trace events.

`decode(blob, arch)` gives the packets of one SE's stream (`format`: the packet tables, generated from
shared/amd/sqtt/format.json); `timeline(packets, Code(code_object))` gives each wave's start, end and, on the traced
SIMD, each instruction's issue (`classify` says which packet reports which instruction); `capture.load` reads a
capture folder or a blob.
"""
from .format import SQTTError
from .decode import Packet, decode
from .timeline import Code, Issue, WaveTrace, timeline

__all__ = ["SQTTError", "Packet", "decode", "Code", "Issue", "WaveTrace", "timeline"]
