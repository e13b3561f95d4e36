"""Tier 1: a fixed C loop that runs a program's table of steps, each a call of a shared compiled shape (tg.amd_emu.shapelib).

A new program needs no compiler: its table is built in Python from shapes compiled before (the disk cache keeps them).
The loop keeps every rule of the whole-program C of tier 2 (waveprog.render): the same block starts and budget charges,
the same PC writes and fault checks, so both leave the same state. At each block start it also counts down `ctl`; once
that is negative it stops with YIELD at the block start (nothing charged), which is how a hot program moves up a tier.

`tg_emu_group` runs the waves of a workgroup round-robin in either tier (each tier is a `tg_run`: the state, memory, range
table, budget and a context, which tier 1 reads its table from), each until it ends or waits at a barrier, which releases
when every live wave has reached it: one call per workgroup instead of one per wave and barrier. It returns ENDPGM when all
have ended, or another code with `pos` the wave that stopped; called again with that `pos`, it goes on where it was.
Both are compiled once (the disk cache keeps them) and loaded once per process."""
from __future__ import annotations
import ctypes
import functools
from typing import Any
from tg.codegen import CLibrary, compile_c
from .shape_c import ENTRY_ARGS
from .shapes import PC, FAULT as FAULT_FLAG

ENDPGM, BARRIER, FAULT, BUDGET, BADPC, UNSUPPORTED, YIELD = range(7)
# a step is 4 int64: BLOCK (pc, length), STOP (code, pc to set) or a CALL with flags (entry address, args offset, pc)
BLOCK, STOP, CALL = 0, 1, 2
SET_PC, CHECK_FAULT, BRANCH = 4, 8, 16
RUNNING, DONE, WAITING = 0, 1, 2  # a wave's state in tg_emu_group

SRC = f"""
typedef void (*tg_entry)({ENTRY_ARGS});
#define SETPC(x) {{ st[{PC}] = (unsigned int)(x); st[{PC + 1}] = (unsigned int)((unsigned long long)(x) >> 32); }}
typedef int (*tg_run)(unsigned int* st, unsigned char* mem, unsigned long long* tab, long long* budget, const long long* ctx);
/* ctx: the step table, the args, the block index by (pc - base) / 4, its length, base, the tier-up counter */
int tg_emu_interp(unsigned int* st, unsigned char* mem, unsigned long long* tab, long long* budget, const long long* ctx) {{
  const long long *steps = (const long long*)ctx[0], *args = (const long long*)ctx[1], *blocks = (const long long*)ctx[2];
  long long nblocks = ctx[3];
  unsigned long long base = (unsigned long long)ctx[4];
  volatile long long* ctl = (volatile long long*)ctx[5];
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

int tg_emu_group(tg_run run, const long long* ctx, unsigned int** sts, long long** budgets, unsigned char* state, int n,
                 unsigned long long* tab, int* pos) {{
  for (;;) {{
    int i = *pos;
    if (i < 0) {{  /* a new round: release the barrier when every live wave waits at it */
      int live = 0, waiting = 0;
      for (int j = 0; j < n; j++) if (state[j] != {DONE}) {{ live++; waiting += state[j] == {WAITING}; }}
      if (!live) return {ENDPGM};
      if (live == waiting) for (int j = 0; j < n; j++) if (state[j] == {WAITING}) state[j] = {RUNNING};
      i = 0;
    }}
    for (; i < n; i++) {{
      if (state[i] != {RUNNING}) continue;
      int rc = run(sts[i], 0, tab, budgets[i], ctx);
      if (rc == {ENDPGM}) state[i] = {DONE};
      else if (rc == {BARRIER}) state[i] = {WAITING};
      else {{ *pos = i; return rc; }}
    }}
    *pos = -1;
  }}
}}
"""

@functools.cache
def library() -> CLibrary:
  """The loop and the workgroup runner, compiled (or taken from the disk cache) and loaded once per process."""
  return CLibrary(compile_c(SRC, 2))

def interpreter() -> int:
  """The address of tier 1's tg_run."""
  return library().address("tg_emu_interp")

@functools.cache
def group_runner() -> Any:
  p = ctypes.c_void_p
  return library().function("tg_emu_group", [p, p, p, p, p, ctypes.c_int, p, p], ctypes.c_int)
