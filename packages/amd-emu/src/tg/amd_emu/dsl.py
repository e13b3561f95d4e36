"""The per-arch DSL: one callable per opcode, made from the tables when an arch module is imported."""
from __future__ import annotations
from typing import Any, Callable
from .build import build
from .inst import Inst
from .isa import Op, get_arch
from .syntax import dsl_slots
from .vopd import DualHalf
from . import operands

def make_callable(op: Op) -> Callable[..., Any]:
  if op.enum == "VOPDOp":
    def half(*args: Any, **kwargs: Any) -> DualHalf: return DualHalf(op, args, kwargs)
    fn: Callable[..., Any] = half
  else:
    def inst(*args: Any, **kwargs: Any) -> Inst: return build(op, args, kwargs)
    fn = inst
  fn.__name__ = fn.__qualname__ = op.mnemonic
  fn.__doc__ = f"{op.arch} {op.name} ({op.fmt}): operands {', '.join(dsl_slots(op)) or '(none)'}."
  return fn

def namespace(arch: str) -> dict[str, Any]:
  """Everything `from tg.amd_emu.<arch> import *` gives: registers, one callable per opcode, vopd."""
  from .vopd import vopd
  regs = ("s", "v", "ttmp", "VCC_LO", "VCC_HI", "VCC", "EXEC_LO", "EXEC_HI", "EXEC", "M0", "NULL", "SCC", "VCCZ", "EXECZ")
  names = {k: getattr(operands, k) for k in regs}
  return names | {"vopd": vopd} | {op.mnemonic: make_callable(op) for op in get_arch(arch).ops.values()}
