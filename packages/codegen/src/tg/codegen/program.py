"""ProgramSpec: a kernel ready to run, and the contract of the linear UOp list every renderer and the PYTHON
interpreter consume.

The linear program (ProgramSpec.uops) is a list of UOps in execution order; every source of a UOp comes before
it. Only these ops appear:
- PARAM (dtype T.ptr(size), arg=slot): buffer argument `slot`. DEFINE_VAR (arg=(name, min, max)): an integer
  kernel argument. DEFINE_LOCAL (T.ptr(n, LOCAL)): workgroup-shared memory. DEFINE_REG (T.ptr(n, REG)): a small
  per-thread array (accumulators).
- SPECIAL (index, src=(CONST end,), arg='gidx0'|'lidx0'|...): GPU thread ids (never on CPU/PYTHON).
- CONST (scalar arg), VCONST (tuple arg) of any dtype.
- RANGE (index, src=(end,), arg=(axis_id, AxisType)): opens `for (r = 0; r < end; r++)`. END (void,
  src=(..., RANGE)): closes the loop of its last source. On CPU the outermost GLOBAL RANGE is split over
  threads: thread `core_id` of `n_cores` runs the part [end*core_id//n_cores, end*(core_id+1)//n_cores).
- INDEX (dtype T.ptr(...), src=(buffer, index[, gate])): the address buffer+index (in elements); with a gate,
  loads through it read `alt` and stores through it do nothing when the gate is false.
- CAST of an INDEX to a vector pointer (T.vec(n).ptr(...)): the address of n consecutive elements.
- LOAD (value dtype, src=(INDEX or CAST-of-INDEX[, alt])): `alt` is present exactly when the INDEX is gated.
- STORE (void, src=(INDEX or CAST-of-INDEX, value)).
- ALU ops of GroupOp.ALU (C semantics: IDIV/MOD truncate toward zero, shifts on ints, CMP* give bool, WHERE
  selects), CAST (value conversion, C rules; float->int truncates), BITCAST (same bits), VECTORIZE (lanes
  from scalars), GEP (arg=tuple of lanes).
- AFTER (src=(x, *deps)): the value x, at a point after deps; a renderer treats it as x (it only orders things).
- GROUP (void): several effects as one source (of an END); nothing to run.
- BARRIER (workgroup barrier), IF (src=(cond,)) ... ENDIF (src=(IF,)).
Vector dtypes apply lane by lane to ALU ops.
"""
from __future__ import annotations
import functools
from typing import Iterable
from dataclasses import dataclass, field
from tg.uop import UOp, Ops

@dataclass
class ProgramSpec:
  name: str
  src: str                       # source text the device compiles (C, LLVM IR, or serialized uops)
  device: str
  uops: list[UOp]                # the linear program
  global_size: tuple[int, int, int] = (1, 1, 1)
  local_size: tuple[int, int, int] | None = (1, 1, 1)
  estimates_flops: int = 0
  estimates_bytes: int = 0
  applied_opts: tuple = ()
  ast: UOp | None = field(default=None, repr=False)
  @functools.cached_property
  def buffers(self) -> list[UOp]:
    """The PARAMs in slot order."""
    return kernel_args(self.uops)[0]
  @functools.cached_property
  def vars(self) -> list[UOp]:
    """The DEFINE_VARs in the order the kernel takes them (by name)."""
    return kernel_args(self.uops)[1]
  @functools.cached_property
  def outs(self) -> list[int]:
    """Positions in `buffers` (the launch's arguments) of the buffers the kernel writes."""
    return self._positions(Ops.STORE)
  @functools.cached_property
  def ins(self) -> list[int]:
    """Positions in `buffers` of the buffers the kernel reads."""
    return self._positions(Ops.LOAD)
  def _positions(self, op: Ops) -> list[int]:
    # not the slots themselves: a custom kernel that uses no PARAM of an input takes only the PARAMs it uses (slots 0, 1, 3)
    pos = {u.arg: i for i, u in enumerate(self.buffers)}
    return sorted({pos[s] for u in self.uops if u.op is op and (s := _slot(u.src[0])) is not None})

def kernel_args(uops: Iterable[UOp]) -> tuple[list[UOp], list[UOp]]:
  """Every kernel's calling convention: its buffers (PARAMs) by slot, then its integer variables (DEFINE_VARs) by name.
  Renderers write signatures in this order and runtimes pass arguments in it."""
  uops = list(uops)
  return (sorted((u for u in uops if u.op is Ops.PARAM), key=lambda u: u.arg),
          sorted((u for u in uops if u.op is Ops.DEFINE_VAR), key=lambda u: u.arg[0]))

def _slot(addr: UOp) -> int | None:
  """The PARAM slot an address (INDEX, or CAST of an INDEX) points into, None for local/register memory."""
  idx = addr.src[0] if addr.op is Ops.CAST else addr
  buf = idx.src[0].buffer_base
  return buf.arg if buf.op is Ops.PARAM else None

def estimate(uops: list[UOp]) -> tuple[int, int]:
  """(ALU ops, bytes loaded and stored) of one run, counting each loop's trip count (symbolic sizes at their max)."""
  mult, stack, flops, mem = 1, [], 0, 0
  for u in uops:
    if u.op is Ops.RANGE:
      stack.append(n := u.src[0].vmax); mult *= max(n, 1)
    elif u.op is Ops.END: mult //= max(stack.pop(), 1)
    elif u.op in (Ops.LOAD, Ops.STORE):
      dt = u.dtype if u.op is Ops.LOAD else u.src[1].dtype
      if u.src[0].dtype.addrspace.name == "GLOBAL": mem += mult * dt.itemsize  # type: ignore[union-attr]  # a vector's itemsize is all its lanes
    elif u.op in (Ops.ADD, Ops.MUL, Ops.SUB, Ops.FDIV, Ops.MAX, Ops.MULACC, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.WHERE, Ops.CMPLT,
                  Ops.RECIPROCAL) and u.dtype.scalar().name != "index": flops += mult * u.dtype.count * (2 if u.op is Ops.MULACC else 1)
  specials = 1
  for u in uops:
    if u.op is Ops.SPECIAL: specials *= u.src[0].arg
  return flops * specials, mem * specials
