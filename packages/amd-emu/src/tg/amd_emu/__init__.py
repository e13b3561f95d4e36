"""tg.amd_emu: the RDNA3/RDNA4 instruction sets and an emulator that runs AMD GPU code with no GPU.

ISA tables generated from the shared ISA data (`isa`), an instruction DSL (`rdna3`, `rdna4`: one callable per opcode)
whose instructions encode, decode (`decode`), print LLVM syntax and rebuild from their repr, a text assembler
(`asm.assemble`), a code-object reader/writer (`codeobj`), and the emulator (`emu`): `launch` runs a kernel of a code
object on numpy arrays, `dispatch` runs a grid against an `AddressSpace` (a GPU address-space map), `run_wave` runs DSL instructions on one wave.
Instruction semantics come from AMD's pseudocode, compiled per instruction shape to UOps and C (`pcode`, `pcode_uops`,
`shapes`, `shape_c`), run in two tiers (`shapelib` + `tier1`, then `waveprog`'s whole-program C for hot code).
`sqtt` decodes AMD thread traces and writes them from the emulator. The `tg-amd-emu` command assembles, disassembles,
runs and decodes thread traces.
"""
from typing import Any

_EMU = ("launch", "dispatch", "run_wave", "AddressSpace", "MemoryFault", "WaveStop", "Wave")

def __getattr__(name: str) -> Any:
  """The emulator's entry points, imported on first use (they pull in tg.codegen)."""
  if name in _EMU:
    from . import emu
    return getattr(emu, name)
  raise AttributeError(f"module 'tg.amd_emu' has no attribute {name!r}")
