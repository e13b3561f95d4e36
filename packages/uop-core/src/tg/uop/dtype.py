"""Data types: scalars, vectors and pointers, promotion by a lattice, and exact conversions to narrow floats."""
from __future__ import annotations
import functools, math, struct
from dataclasses import dataclass
from enum import Enum, auto
from typing import Callable, Final

class AddrSpace(Enum):
  GLOBAL = auto(); LOCAL = auto(); REG = auto()  # noqa: E702
  def __repr__(self) -> str: return f"AddrSpace.{self.name}"

class InvalidType:
  """The value of a masked-off index: `idx.valid(gate)` is `gate.where(idx, Invalid)`."""
  _inst: InvalidType | None = None
  def __new__(cls) -> InvalidType:
    if cls._inst is None: cls._inst = super().__new__(cls)
    return cls._inst
  def __repr__(self) -> str: return "Invalid"
  def __reduce__(self) -> tuple: return (InvalidType, ())
Invalid = InvalidType()

class _Interned(type):
  """DTypes are interned: building an equal one returns the same object, so == and hash are identity (fast)."""
  cache: dict[tuple, DType] = {}
  def __call__(cls, *args: object) -> DType:
    if len(args) < len(fields := cls.__dataclass_fields__):  # type: ignore[attr-defined]
      args += tuple(f.default for f in list(fields.values())[len(args):])
    key = (cls, *args)
    if (d := _Interned.cache.get(key)) is None: d = _Interned.cache[key] = super().__call__(*args)
    return d

@dataclass(frozen=True, eq=False)
class DType(metaclass=_Interned):
  priority: int        # promotion order, lowest first
  itemsize: int        # bytes of the whole (vector) value
  name: str
  fmt: str | None      # struct/numpy format character of the scalar, if it has one
  count: int = 1       # vector lanes
  _scalar: DType | None = None
  def __repr__(self) -> str: return f"dtypes.{self.name}" if self.count == 1 else f"dtypes.{self._scalar.name}.vec({self.count})"  # type: ignore
  def __reduce__(self) -> tuple: return (type(self), tuple(getattr(self, f) for f in self.__dataclass_fields__))
  def __lt__(self, other: DType) -> bool:
    return (self.priority, self.itemsize, self.name, self.count) < (other.priority, other.itemsize, other.name, other.count)
  @property
  def bitsize(self) -> int: return 8 * self.itemsize
  @property
  def base(self) -> DType: return self
  @property
  def vcount(self) -> int: return self.count
  def scalar(self) -> DType: return self._scalar if self._scalar is not None else self
  def vec(self, n: int) -> DType:
    if n == 1: return self
    if self.count != 1: raise TypeError(f"can't make a vector of the vector type {self}")
    if self == dtypes.void: raise TypeError("can't make a vector of void")
    return DType(self.priority, self.itemsize * n, f"{self.name}x{n}", None, n, self)
  def ptr(self, size: int = -1, addrspace: AddrSpace = AddrSpace.GLOBAL) -> PtrDType:
    return PtrDType(self.priority, self.itemsize, self.name, self.fmt, self.count, None, self, addrspace, 1, size)
  @property
  def min(self) -> int | float | bool: return dtypes.min(self)
  @property
  def max(self) -> int | float | bool: return dtypes.max(self)

@dataclass(frozen=True, eq=False)
class PtrDType(DType):
  _base: DType = None  # type: ignore[assignment]
  addrspace: AddrSpace = AddrSpace.GLOBAL
  v: int = 1           # a vector of pointers (after devectorizing loads)
  size: int = -1       # elements the buffer holds, -1 unknown
  def __repr__(self) -> str:
    return f"{self._base!r}.ptr({self.size}{', ' + repr(self.addrspace) if self.addrspace != AddrSpace.GLOBAL else ''})" + \
      (f".vec({self.v})" if self.v != 1 else "")
  @property
  def base(self) -> DType: return self._base
  @property
  def vcount(self) -> int: return self.v
  def scalar(self) -> PtrDType: return PtrDType(*[getattr(self, f) for f in ("priority", "itemsize", "name", "fmt", "count", "_scalar", "_base",
                                                                              "addrspace")], 1, self.size)  # type: ignore
  def vec(self, n: int) -> PtrDType:
    if self.v != 1 and n != 1: raise TypeError(f"can't vectorize the pointer vector {self}")
    return PtrDType(self.priority, self.itemsize, self.name, self.fmt, self.count, None, self._base, self.addrspace, n, self.size)
  def ptr(self, size: int = -1, addrspace: AddrSpace = AddrSpace.GLOBAL) -> PtrDType: raise TypeError("can't make a pointer to a pointer")
  @property
  def nbytes(self) -> int:
    if self.size < 0: raise ValueError(f"{self} has no known size")
    return self.size * self._base.itemsize

class dtypes:
  """The scalar types, with aliases and type queries (tinygrad's names)."""
  void: Final = DType(-1, 0, "void", None)
  bool: Final = DType(0, 1, "bool", "?")
  int8: Final = DType(1, 1, "int8", "b")
  uint8: Final = DType(2, 1, "uint8", "B")
  int16: Final = DType(3, 2, "int16", "h")
  uint16: Final = DType(4, 2, "uint16", "H")
  int32: Final = DType(5, 4, "int32", "i")
  uint32: Final = DType(6, 4, "uint32", "I")
  int64: Final = DType(7, 8, "int64", "q")
  uint64: Final = DType(8, 8, "uint64", "Q")
  fp8e4m3: Final = DType(9, 1, "fp8e4m3", None)
  fp8e5m2: Final = DType(10, 1, "fp8e5m2", None)
  fp8e4m3fnuz: Final = DType(9, 1, "fp8e4m3fnuz", None)   # (tinygrad's priorities: each fnuz format beside its OCP one)
  fp8e5m2fnuz: Final = DType(10, 1, "fp8e5m2fnuz", None)
  float16: Final = DType(11, 2, "float16", "e")
  bfloat16: Final = DType(12, 2, "bfloat16", None)
  float32: Final = DType(13, 4, "float32", "f")
  float64: Final = DType(14, 8, "float64", "d")
  index: Final = DType(15, 8, "index", None)  # symbolic index math; rendered as a 64-bit integer
  half, float, double = float16, float32, float64
  char, uchar, short, ushort, int, uint, long, ulong = int8, uint8, int16, uint16, int32, uint32, int64, uint64
  default_float: DType = float32
  default_int: DType = int32

  fp8_ocp: Final = (fp8e4m3, fp8e5m2)
  fp8_fnuz: Final = (fp8e4m3fnuz, fp8e5m2fnuz)
  fp8s: Final = (*fp8_ocp, *fp8_fnuz)  # every list of the fp8 formats is this one
  floats: Final = (*fp8s, float16, bfloat16, float32, float64)
  uints: Final = (uint8, uint16, uint32, uint64)
  sints: Final = (int8, int16, int32, int64)
  ints: Final = (int8, uint8, int16, uint16, int32, uint32, int64, uint64)
  all: Final = (*floats, *ints, bool, index)  # noqa: A003  (tinygrad's name: every scalar dtype)
  _floats, _ints, _uints = frozenset(floats), frozenset(ints + (index,)), frozenset(uints)

  @staticmethod
  def is_float(x: DType) -> bool: return x.scalar() in dtypes._floats
  @staticmethod
  def is_int(x: DType) -> bool: return x.scalar() in dtypes._ints
  @staticmethod
  def is_unsigned(x: DType) -> bool: return x.scalar() in dtypes._uints
  @staticmethod
  def is_bool(x: DType) -> bool: return x.scalar() == dtypes.bool
  @staticmethod
  def fields() -> dict[str, DType]:
    """The value dtypes by every name (float32, float, ...), as tinygrad's: not void and index, which hold no data."""
    return {k: v for k, v in vars(dtypes).items() if isinstance(v, DType) and not k.startswith(("default", "_")) and v.itemsize
            and v is not dtypes.index}
  @staticmethod
  def from_py(x: object) -> DType:
    """The dtype a Python value takes: bool, default_int, default_float, or the promotion over a sequence."""
    if isinstance(x, bool): return dtypes.bool
    if isinstance(x, int): return dtypes.default_int
    if isinstance(x, float): return dtypes.default_float
    if isinstance(x, (list, tuple)): return max((dtypes.from_py(y) for y in x), default=dtypes.default_float)
    raise TypeError(f"no dtype for Python value of type {type(x).__name__}")
  @staticmethod
  def finfo(x: DType) -> tuple[int, int]:
    """(exponent bits, mantissa bits) of a float type."""
    if not dtypes.is_float(x): raise TypeError(f"finfo needs a float dtype, got {x}")
    return FLOAT_FORMATS[x.scalar()][:2]
  @staticmethod
  def bias(x: DType) -> int:
    """The exponent bias of a float type: 2^(exponent bits - 1) - 1 (IEEE's, which the OCP fp8 formats keep); one more in the
    fnuz formats, whose top exponent holds finite values (their one NaN is 0x80, the code of -0.0 elsewhere)."""
    return 2 ** (dtypes.finfo(x)[0] - 1) - (0 if x.scalar() in dtypes.fp8_fnuz else 1)
  @staticmethod
  def min(x: DType) -> int | float | bool:
    x = x.scalar()
    if x == dtypes.bool: return False
    if dtypes.is_unsigned(x): return 0
    if x == dtypes.index: return -2**63
    if dtypes.is_int(x): return -2**(8 * x.itemsize - 1)
    return -math.inf if FLOAT_FORMATS[x][3] else -FLOAT_FORMATS[x][2]
  @staticmethod
  def max(x: DType) -> int | float | bool:
    x = x.scalar()
    if x == dtypes.bool: return True
    if dtypes.is_unsigned(x): return 2**(8 * x.itemsize) - 1
    if x == dtypes.index: return 2**63 - 1
    if dtypes.is_int(x): return 2**(8 * x.itemsize - 1) - 1
    return math.inf if FLOAT_FORMATS[x][3] else FLOAT_FORMATS[x][2]
  @staticmethod
  def as_const(val: object, dtype: DType) -> object:
    """A Python value converted to what `dtype` holds (wraparound for ints, rounding for floats); tuples per lane."""
    if isinstance(val, tuple): return tuple(dtypes.as_const(v, dtype) for v in val)
    return truncate[dtype.scalar()](val)

# float formats: (exponent bits, mantissa bits, largest finite value, has infinities)
FLOAT_FORMATS: dict[DType, tuple[int, int, float, bool]] = {
  dtypes.fp8e4m3: (4, 3, 448.0, False), dtypes.fp8e5m2: (5, 2, 57344.0, True), dtypes.fp8e4m3fnuz: (4, 3, 240.0, False),
  dtypes.fp8e5m2fnuz: (5, 2, 57344.0, False), dtypes.float16: (5, 10, 65504.0, True),
  dtypes.bfloat16: (8, 7, 3.3895313892515355e38, True), dtypes.float32: (8, 23, 3.4028234663852886e38, True),
  dtypes.float64: (11, 52, 1.7976931348623157e308, True)}

# ***** promotion: the least upper bound in tinygrad's lattice *****
PROMO_LATTICE: dict[DType, list[DType]] = {
  dtypes.bool: [dtypes.int8, dtypes.uint8], dtypes.int8: [dtypes.int16], dtypes.int16: [dtypes.int32], dtypes.int32: [dtypes.int64],
  dtypes.int64: [*dtypes.fp8s], dtypes.uint8: [dtypes.int16, dtypes.uint16], dtypes.uint16: [dtypes.int32, dtypes.uint32],
  dtypes.uint32: [dtypes.int64, dtypes.uint64], dtypes.uint64: [*dtypes.fp8s], **{d: [dtypes.float16, dtypes.bfloat16] for d in dtypes.fp8s},
  dtypes.float16: [dtypes.float32], dtypes.bfloat16: [dtypes.float32], dtypes.float32: [dtypes.float64]}

def _ancestors(d: DType) -> set[DType]:
  out, todo = {d}, [d]
  while todo:
    for p in PROMO_LATTICE.get(todo.pop(), []):
      if p not in out: out.add(p); todo.append(p)
  return out

def least_upper_dtype(*ds: DType) -> DType:
  """The smallest dtype every argument promotes to (index wins over everything: it is index math)."""
  if not ds: raise ValueError("least_upper_dtype needs at least one dtype")
  return dtypes.default_float if (up := _least_upper(tuple(d.scalar() for d in ds))) is None else up

@functools.cache
def _least_upper(ds: tuple[DType, ...]) -> DType | None:
  """(cached: every binary op of a tensor asks, mostly for two equal dtypes) None: integers whose only common upper bound is
  a float (a signed int and uint64) meet in the default float, as in tinygrad (its weakfloat); the lattice's smallest
  float was an fp8, and int64 1000 + uint64 3 was fp8e4m3 448."""
  if dtypes.index in ds: return dtypes.index
  up = min(set.intersection(*[_ancestors(d) for d in ds]))
  return None if dtypes.is_float(up) and not any(dtypes.is_float(d) for d in ds) else up

def least_upper_float(d: DType) -> DType: return d if dtypes.is_float(d) else least_upper_dtype(d, dtypes.default_float)

def sum_acc_dtype(d: DType) -> DType:
  """The accumulator of a sum: unsigned at least uint32, signed and bool at least int32, floats at least float32."""
  if dtypes.is_unsigned(d): return least_upper_dtype(d, dtypes.uint32)
  if dtypes.is_int(d) or d == dtypes.bool: return least_upper_dtype(d, dtypes.int32)
  return least_upper_dtype(d, dtypes.float32)

# ***** exact conversions *****
def round_to_float_format(x: float, dtype: DType, saturate: bool = False) -> float:
  """x rounded to the nearest value of `dtype` (ties to even), overflowing to inf, or to the largest finite
  value when the format has no infinities or `saturate` is set (the fp8 formats' saturating mode). The fnuz formats have
  no -0.0 (a zero is +0.0) and no infinity (one is NaN, as PyTorch's and tinygrad's Python conversion)."""
  ebits, mbits, fmax, has_inf = FLOAT_FORMATS[dtype]
  fnuz = dtype in dtypes.fp8_fnuz
  if math.isnan(x): return x
  if x == 0: return 0.0 if fnuz else x
  if math.isinf(x): return math.nan if fnuz else x if has_inf and not saturate else math.copysign(fmax, x)
  emin = 1 - dtypes.bias(dtype)                # exponent of the smallest normal
  e = max(math.frexp(abs(x))[1] - 1, emin)     # 2**e <= |x| < 2**(e+1), or the subnormal range
  q = math.ldexp(1.0, e - mbits)               # spacing of representable values around x
  r = round(x / q) * q
  if abs(r) > fmax: return math.copysign(fmax, x) if saturate or not has_inf else math.copysign(math.inf, x)
  return 0.0 if fnuz and r == 0 else math.copysign(float(r), x)  # an underflow to zero keeps the sign where -0.0 exists

def float_to_fp8(x: float, dtype: DType) -> int:
  """The 8 bits of x cast to an fp8 format (fp8e4m3 is OCP E4M3FN: no inf, NaN is S.1111.111; the fnuz formats' one NaN is
  0x80): tg.uop.floatconv's f32_to_fp8_bits (its semantics are documented there) on a Python float: nearest even, finite
  overflow and an E4M3 infinity saturate, an fnuz infinity is NaN, NaN keeps its sign (and in E5M2 its payload's top bit,
  made quiet)."""
  ebits, mbits, _, _ = FLOAT_FORMATS[dtype]
  r = round_to_float_format(x, dtype, saturate=not math.isinf(x))
  sign = 0x80 if math.copysign(1.0, r) < 0 else 0
  if math.isnan(r):
    if dtype in dtypes.fp8_fnuz: return 0x80
    return (sign | 0x7F) if dtype == dtypes.fp8e4m3 else _nan_to_bits(r, dtype) | 0x02  # E5M2's made quiet
  if math.isinf(r): return sign | 0x7C
  if (r := abs(r)) == 0: return sign
  bias, (m, e) = dtypes.bias(dtype), math.frexp(r)  # r = m * 2**e, 0.5 <= m < 1
  if e - 1 + bias <= 0: return sign | int(r / math.ldexp(1.0, 1 - bias - mbits))  # subnormal
  return sign | ((e - 1 + bias) << mbits) | (int(m * 2**(mbits + 1)) & ((1 << mbits) - 1))

def fp8_to_float(bits: int, dtype: DType) -> float:
  """An fp8 code's value; a NaN keeps its sign and (E5M2) payload, as float16's do (see _nan_from_bits); the fnuz NaN 0x80
  is a positive NaN (as tinygrad's and PyTorch's: it carries no sign)."""
  ebits, mbits, _, has_inf = FLOAT_FORMATS[dtype]
  sign, e, m = -1.0 if bits & 0x80 else 1.0, (bits >> mbits) & ((1 << ebits) - 1), bits & ((1 << mbits) - 1)
  bias = dtypes.bias(dtype)
  if dtype in dtypes.fp8_fnuz and bits == 0x80: return math.nan
  if dtype == dtypes.fp8e4m3 and e == 15 and m == 7: return math.copysign(math.nan, sign)
  if has_inf and e == (1 << ebits) - 1: return sign * math.inf if m == 0 else _nan_from_bits(bits, dtype)
  if e == 0: return sign * math.ldexp(m, 1 - bias - mbits)
  return sign * math.ldexp((1 << mbits) | m, e - bias - mbits)

# a narrow float's NaN sign and payload ride in a float64 NaN's top mantissa bits (as hardware widening does), so that
# bits -> float -> bits gives back every NaN pattern, signalling ones too (struct's "e" format keeps no payload)
def _nan_from_bits(bits: int, dtype: DType) -> float:
  mbits, top = FLOAT_FORMATS[dtype][1], 8 * dtype.itemsize - 1
  return struct.unpack("<d", struct.pack("<Q", (bits >> top & 1) << 63 | 0x7FF << 52 | (bits & ((1 << mbits) - 1)) << (52 - mbits)))[0]
def _nan_to_bits(x: float, dtype: DType) -> int:
  (ebits, mbits, _, _), top = FLOAT_FORMATS[dtype], 8 * dtype.itemsize - 1
  d = struct.unpack("<Q", struct.pack("<d", x))[0]
  return (d >> 63) << top | ((1 << ebits) - 1) << mbits | ((d >> (52 - mbits)) & ((1 << mbits) - 1) or 1 << (mbits - 1))

def float_to_bits(x: float, dtype: DType) -> int:
  """The bit pattern of x (already representable, or rounded here) in a float dtype."""
  if dtype in (dtypes.fp8e5m2, dtypes.bfloat16, dtypes.float16) and math.isnan(x): return _nan_to_bits(x, dtype)  # as it is
  if dtype in dtypes.fp8s: return float_to_fp8(x, dtype)
  r = round_to_float_format(x, dtype)
  if dtype == dtypes.bfloat16: return struct.unpack("<I", struct.pack("<f", r))[0] >> 16
  return struct.unpack({2: "<H", 4: "<I", 8: "<Q"}[dtype.itemsize], struct.pack("<" + dtype.fmt, r))[0]  # type: ignore[operator]

def bits_to_float(bits: int, dtype: DType) -> float:
  if dtype in dtypes.fp8s: return fp8_to_float(bits, dtype)
  if dtype in (dtypes.bfloat16, dtypes.float16):
    ebits, mbits = FLOAT_FORMATS[dtype][:2]
    if (bits >> mbits) & ((1 << ebits) - 1) == (1 << ebits) - 1 and bits & ((1 << mbits) - 1): return _nan_from_bits(bits, dtype)
  if dtype == dtypes.bfloat16: return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]
  return struct.unpack("<" + dtype.fmt, struct.pack({2: "<H", 4: "<I", 8: "<Q"}[dtype.itemsize], bits))[0]  # type: ignore[operator]

def _wrap_int(bits: int, signed: bool) -> Callable[[object], int]:
  mask, half = (1 << bits) - 1, 1 << (bits - 1)
  def wrap(x: object) -> int:
    v = _to_int(x) & mask
    return v - (1 << bits) if signed and v >= half else v
  return wrap

def _to_int(x: object) -> int:
  if isinstance(x, float):
    if math.isnan(x) or math.isinf(x): return 0  # undefined in C; pick 0 rather than crash
    return math.trunc(x)
  return int(x)  # type: ignore[call-overload]

def _int_to_float_odd(x: int) -> float:
  """An int as a float64 rounded to odd (truncated, last bit set if inexact): rounding that to a format of at most 51 bits
  rounds x itself correctly (float(x) would round twice: 2**60 + 2**36 + 1 -> 2**60 + 2**36 -> a tie in float32)."""
  if -2**53 <= x <= 2**53: return float(x)
  n = abs(x)
  s = n.bit_length() - 53
  return math.copysign(math.ldexp((n >> s) | (n & ((1 << s) - 1) != 0), s), x)

def _to_float(dtype: DType) -> Callable[[object], float]:
  if dtype == dtypes.float64: return lambda x: float(x)  # type: ignore[arg-type]
  fp8 = dtype in dtypes.fp8s
  def conv(x: object) -> float:
    v = _int_to_float_odd(x) if isinstance(x, int) else float(x)  # type: ignore[arg-type]
    return fp8_to_float(float_to_fp8(v, dtype), dtype) if fp8 else round_to_float_format(v, dtype)
  return conv

truncate: dict[DType, Callable[[object], object]] = {
  dtypes.bool: bool, dtypes.index: _to_int, dtypes.void: lambda x: x,
  **{d: _wrap_int(8 * d.itemsize, d in dtypes.sints) for d in dtypes.ints},
  **{d: _to_float(d) for d in dtypes.floats}}

class DTypeNameError(TypeError, AttributeError):
  """A name that is no dtype: tinygrad's lookup raises AttributeError, PyTorch's TypeError."""

def to_dtype(x: DType | str) -> DType:
  """A dtype from a dtype or its name ('float32', 'half', ...)."""
  if isinstance(x, DType): return x
  if isinstance(x, str) and (d := getattr(dtypes, x, None)) is not None and isinstance(d, DType): return d
  raise DTypeNameError(f"unknown dtype {x!r}; known: {sorted(dtypes.fields())}")
