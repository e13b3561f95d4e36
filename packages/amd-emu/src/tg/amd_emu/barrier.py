"""RDNA4's barrier state: s_barrier_signal, s_barrier_signal_isfirst and s_get_barrier_state as shapes.

Each workgroup has a table of 64 barrier words in host memory (its address in the wave state at BARRIER_TABLE), indexed by
the barrier number & 63 as the ISA's BARRIER_STATE is, each word in s_get_barrier_state's layout: valid (bit 0), memberCnt
(bits 4-10), signalCnt (bits 16-22). A dispatch makes the workgroup barrier (-1) valid with the workgroup's waves as its
members. Named barriers (1-16) are not modelled (s_barrier_init/join/leave do not run), so they stay invalid with no members.
A signal counts (barrier 0 is a NOP, -2 is the trap handler's); the signal that brings signalCnt to memberCnt completes the
barrier, signalCnt back to 0, as the ISA's CheckBarrierComplete does. The waiting stays the program's: s_barrier_wait stops a
wave until every live wave of the workgroup reaches it. A barrier number in M0 is M0[4:0] (M0 cannot name the negative ones).
A wave that ends stays a member (the hardware drops it; an emulated kernel that ends waves early and then signals the workgroup
barrier reads a signalCnt that did not reset).
"""
from __future__ import annotations
from tg.uop import UOp, Ops, dtypes
from .inst import Inst
from .shapes import Builder, InstCtx, BARRIER_TABLE, SCC, pair64

OPS = ("S_BARRIER_SIGNAL", "S_BARRIER_SIGNAL_ISFIRST", "S_GET_BARRIER_STATE")
WORKGROUP, TRAP = -1, -2
M0 = 125

def workgroup_word(waves: int) -> int:
  """The workgroup barrier's word at a dispatch: valid, the workgroup's waves as members, no signals."""
  return waves << 4 | 1

def u32(x: int) -> UOp: return UOp.const(dtypes.uint32, x)

def barrier_number(ctx: InstCtx) -> UOp:
  """The instruction's barrier number (int32): ssrc0's value, or M0[4:0] when ssrc0 is M0."""
  value = ctx.source("ssrc0").u.bitcast(dtypes.int32)
  if ctx.kind("ssrc0")[0] != "s": return value
  return ctx.var("ssrc0").eq(UOp.const(ctx.var("ssrc0").dtype, M0)).where((ctx.b.ld(M0) & u32(31)).bitcast(dtypes.int32), value)

def barrier_stores(inst: Inst, b: Builder) -> None:
  """The instruction's effects as stores into b: the barrier's word, SCC (isfirst) or the destination (get_barrier_state)."""
  ctx = InstCtx(inst, b, None)
  n = barrier_number(ctx)
  addr = pair64(b.ld(BARRIER_TABLE), b.ld(BARRIER_TABLE + 1)) + (n & UOp.const(dtypes.int32, 63)).cast(dtypes.uint64) * UOp.const(dtypes.uint64, 4)
  at = UOp(Ops.INDEX, dtypes.uint8, (b.mem, addr, UOp.const(dtypes.bool, True)))
  word = UOp(Ops.LOAD, dtypes.uint32, (UOp(Ops.CAST, dtypes.uint32.ptr(), (at,)), u32(0)))
  b.loads.append(word)
  if inst.op.name == "S_GET_BARRIER_STATE":
    b.store(ctx.dest_words("sdst")[0][0], word)
    return
  counts = n.ne(UOp.const(dtypes.int32, 0)) & n.ne(UOp.const(dtypes.int32, TRAP))
  signals = (word >> u32(16)) & u32(127)
  complete = (signals + u32(1)).eq((word >> u32(4)) & u32(127))
  new = (word & u32(0xFFFF)) | complete.where(u32(0), (signals + u32(1)) << u32(16))
  b.stores.append((b.mem, addr, new, counts))
  if inst.op.name == "S_BARRIER_SIGNAL_ISFIRST": b.store(SCC, (counts & signals.eq(u32(0))).cast(dtypes.uint32))
