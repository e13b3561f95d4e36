"""The operation set of the UOp IR, its groups, axis types, kernel metadata, and the Python meaning of each ALU op."""
from __future__ import annotations
import math, operator
from dataclasses import dataclass
from enum import Enum, auto
from typing import Any, Callable
from tg.uop.dtype import DType, dtypes, truncate

class Ops(Enum):
  """Every op. The order matters only as a tie-break when linearizing: definitions come first."""
  # definitions and kernel parameters
  PARAM = auto(); DEFINE_VAR = auto(); DEFINE_LOCAL = auto(); DEFINE_REG = auto(); SPECIAL = auto()  # noqa: E702
  CONST = auto(); VCONST = auto()  # noqa: E702
  # tensor-level graph
  BUFFER = auto(); BUFFER_VIEW = auto(); UNIQUE = auto(); DEVICE = auto(); COPY = auto(); CONTIGUOUS = auto()  # noqa: E702
  DETACH = auto(); ASSIGN = auto(); REDUCE_AXIS = auto(); KERNEL = auto(); CALL = auto(); CUSTOM_KERNEL = auto(); IOTA = auto()  # noqa: E702
  MULTI = auto()  # a tensor in pieces on several devices: src one UOp per device, arg the axis split (None: each a full copy)
  RESHAPE = auto(); EXPAND = auto(); PERMUTE = auto(); PAD = auto(); SHRINK = auto(); FLIP = auto()  # noqa: E702
  # kernel structure
  RANGE = auto(); END = auto(); REDUCE = auto(); AFTER = auto(); SINK = auto(); GROUP = auto(); BARRIER = auto()  # noqa: E702
  IF = auto(); ENDIF = auto(); NOOP = auto(); CUSTOM = auto(); BIND = auto()  # noqa: E702
  # memory
  INDEX = auto(); LOAD = auto(); STORE = auto()  # noqa: E702
  # vectors
  VECTORIZE = auto(); GEP = auto(); CONTRACT = auto(); UNROLL = auto(); WMMA = auto()  # noqa: E702
  # conversions
  CAST = auto(); BITCAST = auto()  # noqa: E702
  # unary ALU
  NEG = auto(); RECIPROCAL = auto(); SQRT = auto(); EXP2 = auto(); LOG2 = auto(); SIN = auto(); TRUNC = auto()  # noqa: E702
  # binary ALU
  ADD = auto(); MUL = auto(); SUB = auto(); IDIV = auto(); MOD = auto(); FDIV = auto(); MAX = auto(); POW = auto()  # noqa: E702
  CMPLT = auto(); CMPNE = auto(); CMPEQ = auto(); AND = auto(); OR = auto(); XOR = auto(); SHL = auto(); SHR = auto()  # noqa: E702
  THREEFRY = auto()
  # ternary ALU
  WHERE = auto(); MULACC = auto()  # noqa: E702
  __hash__ = object.__hash__  # members are singletons: identity hashing is exact and much faster than Enum's
  def __repr__(self) -> str: return f"Ops.{self.name}"

class GroupOp:
  Unary = frozenset({Ops.NEG, Ops.RECIPROCAL, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.TRUNC})
  Binary = frozenset({Ops.ADD, Ops.MUL, Ops.SUB, Ops.IDIV, Ops.MOD, Ops.FDIV, Ops.MAX, Ops.POW, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ,
                      Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.THREEFRY})
  Ternary = frozenset({Ops.WHERE, Ops.MULACC})
  ALU = Unary | Binary | Ternary
  Commutative = frozenset({Ops.ADD, Ops.MUL, Ops.MAX, Ops.CMPNE, Ops.CMPEQ, Ops.AND, Ops.OR, Ops.XOR})
  Associative = frozenset({Ops.ADD, Ops.MUL, Ops.AND, Ops.OR, Ops.MAX, Ops.XOR})
  Idempotent = frozenset({Ops.AND, Ops.OR, Ops.MAX})
  Comparison = frozenset({Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ})
  Movement = frozenset({Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.PAD, Ops.SHRINK, Ops.FLIP})
  Buffer = frozenset({Ops.LOAD, Ops.STORE, Ops.BUFFER, Ops.PARAM, Ops.DEFINE_LOCAL, Ops.DEFINE_REG, Ops.INDEX})
  Defines = frozenset({Ops.PARAM, Ops.DEFINE_LOCAL, Ops.DEFINE_REG})
  Irreducible = frozenset({Ops.CONST, Ops.DEFINE_VAR, Ops.SPECIAL, Ops.RANGE})
  UnsafePad = frozenset({Ops.RECIPROCAL, Ops.LOG2, Ops.EXP2, Ops.IDIV, Ops.POW})  # f(0) != 0: padding can't pass through

class AxisType(Enum):
  """What a RANGE is for; the letter and color show in kernel names and debug output."""
  GLOBAL = auto(); LOCAL = auto(); LOOP = auto(); GROUP_REDUCE = auto(); REDUCE = auto(); UPCAST = auto(); UNROLL = auto()  # noqa: E702
  THREAD = auto()
  def __repr__(self) -> str: return f"AxisType.{self.name}"
  @property
  def letter(self) -> str: return AXIS_LETTERS[self]

AXIS_LETTERS = {AxisType.GLOBAL: "g", AxisType.THREAD: "t", AxisType.LOCAL: "l", AxisType.LOOP: "L", AxisType.UPCAST: "u",
                AxisType.GROUP_REDUCE: "G", AxisType.REDUCE: "R", AxisType.UNROLL: "r"}

@dataclass(frozen=True)
class KernelInfo:
  """Metadata in a kernel SINK's arg: its name, and the optimizations to apply (None: let the optimizer choose)."""
  name: str = "test"
  opts_to_apply: tuple | None = None
  applied_opts: tuple = ()
  dont_use_locals: bool = False

# ***** what each ALU op means on Python values *****
def _idiv(x: int, y: int) -> int: return abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1) if y != 0 else 0  # C: truncate toward 0
def _mod(x: int, y: int) -> int: return x - _idiv(x, y) * y if y != 0 else 0
def _fdiv(x: float, y: float) -> float:
  if y == 0: return math.nan if x == 0 or math.isnan(x) else math.copysign(math.inf, x) * math.copysign(1.0, y)
  return x / y
def _safe(f: Callable[[float], float], at_inf: Callable[[float], float]) -> Callable[[float], float]:
  def g(x: float) -> float:
    if math.isnan(x): return x
    try: return f(x)
    except (ValueError, OverflowError): return at_inf(x)
  return g
def _sqrt(x: float) -> float: return math.sqrt(x) if x >= 0 else math.nan
def _log2(x: float) -> float: return math.log2(x) if x > 0 else (-math.inf if x == 0 else math.nan)
def _exp2(x: float) -> float:
  try: return 2.0 ** x
  except OverflowError: return math.inf
def _sin(x: float) -> float: return math.sin(x) if not math.isinf(x) else math.nan
def _recip(x: float) -> float: return _fdiv(1.0, x)
def _trunc(x: float) -> float: return math.copysign(float(math.trunc(x)), x) if math.isfinite(x) else x  # trunc(-0.5) is -0.0
def _max(x: Any, y: Any) -> Any: return x if isinstance(x, float) and math.isnan(x) else (y if isinstance(y, float) and math.isnan(y) else max(x, y))
def _pow(x: float, y: float) -> float:
  try: return math.pow(x, y)
  except (ValueError, OverflowError): return math.nan if x < 0 else math.inf
def _shr(x: int, y: int) -> int: return x >> y
def _shl(x: int, y: int) -> int: return x << y

def threefry2x32_words(x0: Any, x1: Any, k0: Any, k1: Any, wrap: Callable[[Any], Any] = lambda v: v) -> tuple[Any, Any]:
  """Threefry-2x32 with 20 rounds on 32-bit words: Python ints (wrap reduces mod 2^32) or uint32 UOps (they wrap by
  themselves), so the constant folder and the codegen decomposition are one function. Returns (x0, x1)."""
  ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
  x0, x1 = wrap(x0 + ks[0]), wrap(x1 + ks[1])
  for i in range(5):
    for r in ((13, 15, 26, 6), (17, 29, 16, 24))[i % 2]:
      x0 = wrap(x0 + x1)
      x1 = wrap((x1 << r) | (x1 >> (32 - r))) ^ x0
    x0, x1 = wrap(x0 + ks[(i + 1) % 3]), wrap(x1 + ks[(i + 2) % 3] + (i + 1))
  return x0, x1

def _threefry2x32(x: int, key: int) -> int:
  """Threefry-2x32 of 64-bit words packed hi:lo; returns the packed result."""
  m = 0xFFFFFFFF
  x0, x1 = threefry2x32_words(x & m, (x >> 32) & m, key & m, (key >> 32) & m, lambda v: v & m)
  return (x1 << 32) | x0

python_alu: dict[Ops, Callable[..., Any]] = {
  Ops.NEG: lambda x: (not x) if isinstance(x, bool) else -x, Ops.RECIPROCAL: _recip, Ops.SQRT: _sqrt, Ops.EXP2: _exp2, Ops.LOG2: _log2,
  Ops.SIN: _sin, Ops.TRUNC: _trunc,
  Ops.ADD: operator.add, Ops.SUB: operator.sub, Ops.MUL: operator.mul, Ops.IDIV: _idiv, Ops.MOD: _mod, Ops.FDIV: _fdiv,
  Ops.MAX: _max, Ops.POW: _pow, Ops.CMPLT: operator.lt, Ops.CMPNE: operator.ne, Ops.CMPEQ: operator.eq,
  Ops.AND: operator.and_, Ops.OR: operator.or_, Ops.XOR: operator.xor, Ops.SHL: _shl, Ops.SHR: _shr, Ops.THREEFRY: _threefry2x32,
  Ops.WHERE: lambda c, t, f: t if c else f, Ops.MULACC: lambda a, b, c: a * b + c}

def exec_alu(op: Ops, dtype: DType, operands: tuple | list) -> Any:
  """Run one ALU op on Python values and round/wrap the result to `dtype` (lanes of vectors one by one)."""
  if dtype.count > 1: return tuple(exec_alu(op, dtype.scalar(), [x[i] if isinstance(x, tuple) else x for x in operands]) for i in range(dtype.count))
  if dtypes.is_int(dtype) and op is Ops.FDIV: raise TypeError("FDIV on an integer dtype: use IDIV")
  if dtypes.is_float(dtype) and op in (Ops.IDIV, Ops.MOD) and any(isinstance(x, float) for x in operands):
    ret = python_alu[op](*[int(x) for x in operands])
  else: ret = python_alu[op](*operands)
  return truncate[dtype.scalar()](ret)
