"""An independent evaluator of integer/bool UOp expressions with C semantics, the oracle of the symbolic tests."""
from __future__ import annotations
from typing import Any
from tg.uop import Invalid, Ops, UOp, dtypes

def c_div(a: int, b: int) -> int:
  q = abs(a) // abs(b)
  return q if (a >= 0) == (b >= 0) else -q

def c_mod(a: int, b: int) -> int: return a - c_div(a, b) * b

def wrap(v: Any, dtype: Any) -> Any:
  """A value of `dtype`: bools stay bools, fixed-width ints wrap (index is 64-bit)."""
  if dtype == dtypes.bool: return bool(v)
  bits = 8 * dtype.itemsize
  v = int(v) & ((1 << bits) - 1)
  return v - (1 << bits) if not dtypes.is_unsigned(dtype) and v >= 1 << (bits - 1) else v

BINARY = {Ops.ADD: lambda a, b: a + b, Ops.MUL: lambda a, b: a * b, Ops.IDIV: c_div, Ops.MOD: c_mod, Ops.MAX: max,
          Ops.CMPLT: lambda a, b: a < b, Ops.CMPNE: lambda a, b: a != b, Ops.CMPEQ: lambda a, b: a == b,
          Ops.AND: lambda a, b: a & b, Ops.OR: lambda a, b: a | b, Ops.XOR: lambda a, b: a ^ b, Ops.SUB: lambda a, b: a - b,
          Ops.SHL: lambda a, b: a << b, Ops.SHR: lambda a, b: a >> b}

def evaluate(root: UOp, env: dict[str, int]) -> Any:
  """The value of `root` (Invalid where a gated index is masked), with each DEFINE_VAR, RANGE ('r<axis>') and SPECIAL
  taken by name from env."""
  vals: dict[UOp, Any] = {}
  for u in root.toposort():
    s = [vals[x] for x in u.src]
    if u.op is Ops.CONST: v = u.arg
    elif u.op is Ops.DEFINE_VAR: v = env[u.arg[0]]
    elif u.op is Ops.RANGE: v = env[f"r{u.arg[0]}"]
    elif u.op is Ops.SPECIAL: v = env[u.arg]
    elif u.op is Ops.NEG: v = -s[0] if u.dtype != dtypes.bool else not s[0]
    elif u.op is Ops.WHERE: v = s[1] if s[0] else s[2]
    elif u.op is Ops.CAST: v = s[0]
    elif u.op in BINARY: v = BINARY[u.op](*s)
    else: raise NotImplementedError(f"the test interpreter has no rule for {u.op}")
    vals[u] = v if v is Invalid else wrap(v, u.dtype)
  return vals[root]

def tree_size(root: UOp) -> int:
  """Nodes of the expression written out as a tree (a shared subexpression counts each time it is used)."""
  sizes: dict[UOp, int] = {}
  for u in root.toposort(): sizes[u] = 1 + sum(sizes[s] for s in u.src)
  return sizes[root]
