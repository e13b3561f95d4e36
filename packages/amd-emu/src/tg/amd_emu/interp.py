"""Tier 1: a fixed C loop that runs a program's table of steps, each a call of a shared compiled shape (tg.amd_emu.shapelib).

A new program needs no compiler: its table is built in Python from shapes compiled before (the disk cache keeps them).
The loop keeps every rule of the whole-program C of tier 2 (program.render): the same block starts and budget charges,
the same PC writes and fault checks, so both leave the same state. At each block start it also counts down `ctl`; once
that is negative it stops with YIELD at the block start (nothing charged), which is how a hot program moves up a tier.
The loop is compiled once (the disk cache keeps it too) and loaded once per process."""
from __future__ import annotations
import ctypes
import functools
from typing import Any
from tg.codegen import CLibrary, compile_c
from .kernel import ENTRY_ARGS
from .shapes import PC, FAULT as FAULT_FLAG

ENDPGM, BARRIER, FAULT, BUDGET, BADPC, UNSUPPORTED, YIELD = range(7)
# a step is 4 int64: BLOCK (pc, length), STOP (code, pc to set) or a CALL with flags (entry address, args offset, pc)
BLOCK, STOP, CALL = 0, 1, 2
SET_PC, CHECK_FAULT, BRANCH = 4, 8, 16

SRC = f"""
typedef void (*tg_entry)({ENTRY_ARGS});
#define SETPC(x) {{ st[{PC}] = (unsigned int)(x); st[{PC + 1}] = (unsigned int)((unsigned long long)(x) >> 32); }}
int tg_emu_interp(unsigned int* st, unsigned char* mem, unsigned long long* tab, long long* budget, const long long* steps,
                  const long long* args, const long long* blocks, long long nblocks, unsigned long long base, volatile long long* ctl) {{
  for (;;) {{
    unsigned long long off = ((unsigned long long)st[{PC}] | ((unsigned long long)st[{PC + 1}] << 32)) - base;
    if ((off & 3) || (off >> 2) >= (unsigned long long)nblocks || blocks[off >> 2] < 0) return {BADPC};
    for (const long long* o = steps + 4 * blocks[off >> 2];; o += 4) {{
      long long k = o[0];
      if (k == {BLOCK}) {{
        if (*ctl < 0) {{ SETPC(o[1]); return {YIELD}; }}
        *ctl -= o[2];
        if ((*budget -= o[2]) < 0) {{ SETPC(o[1]); return {BUDGET}; }}
      }} else if (k == {STOP}) {{ SETPC(o[2]); return (int)o[1]; }}
      else {{
        if (k & {SET_PC}) SETPC(o[3]);
        ((tg_entry)o[1])(st, mem, tab, args + o[2]);
        if ((k & {CHECK_FAULT}) && st[{FAULT_FLAG}]) {{ SETPC(o[3]); return {FAULT}; }}
        if (k & {BRANCH}) break;
      }}
    }}
  }}
}}
"""

@functools.cache
def interpreter() -> Any:
  """The loop, compiled (or taken from the disk cache) and loaded once per process."""
  p = ctypes.c_void_p
  return CLibrary(compile_c(SRC, 2)).function("tg_emu_interp", [p] * 7 + [ctypes.c_longlong, ctypes.c_ulonglong, p], ctypes.c_int)
