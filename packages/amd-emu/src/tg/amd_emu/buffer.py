"""Untyped buffer loads, stores and atomics (RDNA3's MUBUF, RDNA4's VBUFFER): the address a V# gives, and its range check.

A V# is four SGPRs, in the layout gfx11 and gfx12 share (as Mesa's ac_build_buffer_descriptor builds both): the base address
(bits 0-47), stride (48-61), swizzle_enable (62-63), num_records (64-95), add_tid_enable (119) and oob_select (124-125).
The address is base + soffset + index * stride + offset: index is the index VGPR (idxen), plus the lane with add_tid_enable;
offset is the offset VGPR (offen) plus the instruction's offset. An access of `size` bytes is out of range, by oob_select
(GFX11's rules; soffset is not range-checked): 0: index >= num_records or offset + size > stride; 1: index >= num_records;
2: num_records == 0; 3: as 0 when swizzle_enable and a stride are set, else (the raw buffer's byte offset) index * stride +
offset + size > num_records. Each dword of a
multi-dword load or store is checked on its own. Out of range, a load reads 0 and a store or atomic does nothing (no fault);
in range, the address goes through the memory map like any other. Swizzled addressing itself is not modelled (a swizzled V#
addresses as a linear one), nor tfe's status VGPR.
"""
from __future__ import annotations
from dataclasses import dataclass
from typing import Any
from tg.uop import UOp, dtypes
from .pcode_uops import V, Unsupported

FORMATS = ("MUBUF", "VBUFFER")

def u64(x: int) -> UOp: return UOp.const(dtypes.uint64, x)

@dataclass(frozen=True)
class BufferAccess:
  """One lane's buffer addressing, as uint64 UOps: where the buffer starts for it (base + soffset), the index, the byte offset,
  and the V# fields the range check reads."""
  start: UOp
  index: UOp
  offset: UOp
  stride: UOp
  records: UOp
  oob: UOp
  swizzle: UOp

  @property
  def address(self) -> V: return V(self.start + self.index * self.stride + self.offset, "u", 64)

  def in_range(self, addr: V, nbytes: int) -> V:
    """Whether an access of nbytes at addr (this address, or a later dword of the same access) is in range."""
    off = addr.u - (self.start + self.index * self.stride)  # the offset of this dword
    end = off + u64(nbytes)
    index_out = self.index >= self.records
    structured = index_out | (end > self.stride)
    raw = (self.swizzle.ne(u64(0)) & self.stride.ne(u64(0))).where(structured, self.index * self.stride + end > self.records)
    out = self.oob.eq(u64(0)).where(structured, self.oob.eq(u64(1)).where(index_out, self.oob.eq(u64(2)).where(self.records.eq(u64(0)), raw)))
    return V(out.logical_not(), "u", 1)

def buffer_access(ctx: Any) -> BufferAccess:
  """The addressing of ctx's buffer instruction (an InstCtx) at its lane."""
  if ctx.inst.vals.get("tfe"): raise Unsupported("tfe on a buffer access (its status VGPR)")
  name, scale = ("srsrc", 4) if ctx.fam == "MUBUF" else ("rsrc", 1)
  r = ctx.var(name) * scale if scale != 1 else ctx.var(name)
  w = [ctx.b.ld(r + i).cast(dtypes.uint64) for i in range(4)]
  base = w[0] | ((w[1] & u64(0xFFFF)) << u64(32))
  vgprs = [ctx.b.ld(ctx.vgpr_idx(ctx.var("vaddr"), i)).cast(dtypes.uint64) for i in range(ctx.inst.vals["idxen"] + ctx.inst.vals["offen"])]
  index = vgprs[0] if ctx.inst.vals["idxen"] else u64(0)
  index = index + ((w[3] >> u64(23)) & u64(1)) * ctx.lane_u.cast(dtypes.uint64)  # add_tid_enable
  field = ctx.inst.fmt.by_name["offset" if ctx.fam == "MUBUF" else "ioffset"]  # unsigned (12 bits; RDNA4's 24)
  offset = (vgprs[-1] if ctx.inst.vals["offen"] else u64(0)) + (ctx.var(field.name).cast(dtypes.int64).bitcast(dtypes.uint64) & u64(field.mask))
  kind = ctx.kind("soffset")
  soffset = u64(0) if kind == ("s", True) else ctx.source("soffset").u.cast(dtypes.uint64)
  return BufferAccess(base + soffset, index, offset, (w[1] >> u64(16)) & u64(0x3FFF), w[2], (w[3] >> u64(28)) & u64(3), w[1] >> u64(30))
