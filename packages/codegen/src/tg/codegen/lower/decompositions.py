"""Decompositions: ops a device lacks, rewritten into ops it has.

- MULACC -> a*b+c; THREEFRY -> 32-bit adds, rotates and xors.
- float -> 8/16-bit or unsigned integer casts by way of int32/int64, so they wrap as on the PYTHON device.
- x // c and x % c for a constant c and x >= 0: shifts and masks for powers of two, otherwise a multiply and shift
  with a magic number chosen so that the result is exact for every x in [0, vmax].
- bfloat16 and fp8 arithmetic in float32 (renderers that only store them); fp8 <-> float32 casts as tg.uop.floatconv's
  graphs where the renderer has no conversion for them (LLVM IR).
- EXP2, LOG2, SIN by polynomials (tg.codegen.lower.transcendental) for renderers without them."""
from __future__ import annotations
from tg.uop import DType, PtrDType, UOp, Ops, UPat, PatternMatcher, GroupOp, dtypes, graph_rewrite, threefry2x32_words
from tg.uop import f32_to_fp8_bits, fp8_bits_to_f32, cdiv
from tg.codegen.renderer import Renderer

def threefry2x32(x: UOp, key: UOp) -> UOp:
  """Threefry-2x32 (tg.uop's threefry2x32_words) on uint64 words packed hi:lo, in uint32 UOps."""
  def lo(v: UOp) -> UOp: return (v & 0xFFFFFFFF).cast(dtypes.uint32)
  def hi(v: UOp) -> UOp: return (v >> 32).cast(dtypes.uint32)
  x0, x1 = threefry2x32_words(lo(x), hi(x), lo(key), hi(key))
  return (x1.cast(dtypes.uint64) << 32) | x0.cast(dtypes.uint64)

def magic_divide(x: UOp, c: int) -> UOp | None:
  """x // c as (x * m) >> s, exact for every x in [0, x.vmax]; None when no such m fits in the dtype."""
  if not dtypes.is_int(x.dtype) or x.vmin < 0 or c <= 1: return None
  if c & (c - 1) == 0: return x >> (c.bit_length() - 1)
  bits = 8 * x.dtype.itemsize - (0 if dtypes.is_unsigned(x.dtype) else 1)
  for s in range(bits):
    m = cdiv(1 << s, c)
    # floor(x*m / 2**s) == floor(x / c) for 0 <= x <= vmax when vmax * (m*c - 2**s) < 2**s
    if x.vmax * (m * c - (1 << s)) < (1 << s):
      if x.vmax * m >= 1 << bits: return None
      return (x * m) >> s
  return None

def fast_mod(x: UOp, c: int) -> UOp | None:
  if not dtypes.is_int(x.dtype) or x.vmin < 0 or c <= 1: return None
  if c & (c - 1) == 0: return x & (c - 1)
  return None if (q := magic_divide(x, c)) is None else x - q * c

NARROW_FLOATS = (dtypes.bfloat16, *dtypes.fp8s)

def _in_float32(u: UOp) -> UOp | None:
  """An ALU op on bfloat16/fp8 values computed in float32 and rounded back."""
  if u.src[-1].dtype.scalar() not in NARROW_FLOATS and u.dtype.scalar() not in NARROW_FLOATS: return None
  def up(s: UOp) -> UOp: return s.cast(dtypes.float32.vec(s.dtype.count)) if s.dtype.scalar() in NARROW_FLOATS else s
  out = UOp(u.op, u.dtype if u.dtype.scalar() not in NARROW_FLOATS else dtypes.float32.vec(u.dtype.count), tuple(up(s) for s in u.src), u.arg)
  return out.cast(u.dtype) if u.dtype.scalar() in NARROW_FLOATS else out

def _f32_round_to_odd(x: UOp) -> UOp:
  """float64 or a 32/64-bit int as float32 rounded to odd (truncated toward zero, the last bit set if inexact): rounding
  that to a narrow float rounds x itself correctly, where rounding to nearest twice would not (1 + 2**-8 + 2**-40 would
  become the bfloat16 tie 1 + 2**-8, then 1.0)."""
  n = x.dtype.count
  f64, f32, u32, u64 = dtypes.float64.vec(n), dtypes.float32.vec(n), dtypes.uint32.vec(n), dtypes.uint64.vec(n)
  if dtypes.is_int(x.dtype) and x.dtype.itemsize // n == 8:
    # |x| >= 2**53: the low 11 bits, below float32's last bit, fold into one sticky bit, so the magnitude fits float64 exactly
    neg = (x < 0) if not dtypes.is_unsigned(x.dtype) else None
    mag = (neg.where(x * -1, x) if neg is not None else x).cast(u64)  # -INT64_MIN wraps to 2**63: right as uint64
    mag = (mag < 2**53).where(mag, (mag & 0xFFFFFFFFFFFFF800) | (((mag & 0x7FF) + 0x7FF) & 0x800))
    d = mag.cast(f64) if neg is None else neg.where(mag.cast(f64) * -1.0, mag.cast(f64))
  else: d = x.cast(f64)  # exact for 32-bit ints
  f = d.cast(f32)
  back, bits = f.cast(f64), f.bitcast(u32)
  away = (back > d).ne(d < 0.0)  # f was rounded away from zero (when inexact)
  return back.ne(d).where((bits - away.cast(u32)) | 1, bits).bitcast(f32)

def _narrow_cast(c: UOp) -> UOp | None:
  """Casts between a narrow float and anything but float32 go through float32: exactly from narrow floats and types of at most
  24 bits, from wider types rounded to odd first (see _f32_round_to_odd)."""
  x, frm, to = c.src[0], c.src[0].dtype.scalar(), c.dtype.scalar()
  if frm == to or (frm not in NARROW_FLOATS and to not in NARROW_FLOATS) or dtypes.float32 in (frm, to): return None
  if frm in NARROW_FLOATS or frm.itemsize <= 2: return x.cast(dtypes.float32.vec(c.dtype.count)).cast(c.dtype)
  return _f32_round_to_odd(x).cast(c.dtype)

def _cast_as_uops(ctx: Renderer, c: UOp) -> UOp | None:
  """A scalar cast between float32 and a format the renderer has no conversion for: tg.uop.floatconv's graph, on the bits."""
  frm, to = c.src[0].dtype, c.dtype
  if to in ctx.uop_conversions and frm == dtypes.float32: return f32_to_fp8_bits(c.src[0], to).cast(dtypes.uint8).bitcast(to)
  if frm in ctx.uop_conversions and to == dtypes.float32: return fp8_bits_to_f32(c.src[0].bitcast(dtypes.uint8).cast(dtypes.uint32), frm)
  return None

_WIDER = {**{d: dtypes.int32 for d in (dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16)}, dtypes.uint32: dtypes.int64}

def _float_to_int(c: UOp) -> UOp | None:
  """A float cast to a narrow or unsigned integer: truncated toward zero, then wrapped modulo 2^bits (-1.5 -> uint8 is
  255), as numpy and the PYTHON device do and tinygrad's and PyTorch's CPU backends happen to (both leave it undefined).
  C and LLVM leave such conversions undefined past the target's range, and hardware differs (x86 converts through a
  wider integer, AMD clamps), so they go through int32/int64, whose in-range conversions are exact everywhere. Values
  outside int32 (int64 for the 32- and 64-bit targets) stay undefined."""
  x, to = c.src[0], c.dtype.scalar()
  if not dtypes.is_float(x.dtype) or isinstance(c.dtype, PtrDType): return None
  def via(v: UOp, d: DType) -> UOp: return v.cast(d.vec(c.dtype.count))
  if (wide := _WIDER.get(to)) is not None: return via(via(x, wide), to)
  if to != dtypes.uint64: return None
  if x.dtype.itemsize < 4: x = via(x, dtypes.float32)  # exact; 2^63 is past the narrow formats' range
  top = UOp.const(x.dtype, 2.0 ** 63)  # at and past 2^63 int64 can't hold the value: take 2^63 off first (exact in float)
  return (x < top).where(via(via(x, dtypes.int64), to), via(via(x - top, dtypes.int64), to) + UOp.const(c.dtype, 2 ** 63))

def _native(ren: Renderer, op: Ops) -> bool: return op in ren.native_ops

pm_decompose = PatternMatcher([
  (UPat(Ops.CAST, name="c"), lambda ctx, c: _float_to_int(c)),
  (UPat(Ops.MULACC, src=(UPat.var("a"), UPat.var("b"), UPat.var("c"))), lambda ctx, a, b, c: None if _native(ctx, Ops.MULACC) else a * b + c),
  (UPat(Ops.THREEFRY, src=(UPat.var("x"), UPat.var("k"))), lambda ctx, x, k: None if _native(ctx, Ops.THREEFRY) else threefry2x32(x, k)),
  (UPat(Ops.POW, src=(UPat.var("a"), UPat.var("b"))), lambda ctx, a, b: None if _native(ctx, Ops.POW) else (b * a.log2()).exp2()),
])

def _accumulator(u: UOp) -> bool:
  """Is u a load of a reduce's accumulator (a register buffer)?"""
  if u.op is not Ops.LOAD: return False
  while u.op in (Ops.LOAD, Ops.CAST, Ops.INDEX, Ops.AFTER): u = u.src[0]
  return u.op is Ops.DEFINE_REG

def fuse_mulaccs(sink: UOp, ren: Renderer) -> UOp:
  """acc + a*b, a reduce accumulating products (a matmul, a conv), becomes one fused multiply-add where the device has
  one (one rounding: closer, and faster), when a*b has no other use (exact-sum code relies on a product used alone
  staying rounded). Only there: a fused a*b+c elsewhere would round differently in kernels that vectorize it differently,
  and a value recomputed in another kernel must be the same bits (the gradient of a max finds the maximum by comparing:
  x*x+1 fused in the backward's kernel but not in the forward's lost the gradient of the maximum)."""
  if not _native(ren, Ops.MULACC): return sink
  uses: dict[UOp, int] = {}
  for u in sink.toposort():
    for s in u.src: uses[s] = uses.get(s, 0) + 1
  def fuse(m: UOp, c: UOp) -> UOp | None:
    return m.src[0].alu(Ops.MULACC, m.src[1], c) if dtypes.is_float(c.dtype) and uses.get(m, 0) == 1 and _accumulator(c) else None
  return graph_rewrite(sink, PatternMatcher([(UPat(Ops.ADD, src=[UPat(Ops.MUL, name="m"), UPat.var("c")]), fuse)]), name="fuse mulacc")

pm_fast_idiv = PatternMatcher([
  (UPat.var("x") // UPat.cvar("c", vec=False), lambda x, c: magic_divide(x, c.arg)),
  (UPat.var("x") % UPat.cvar("c", vec=False), lambda x, c: fast_mod(x, c.arg)),
])

pm_narrow_floats = PatternMatcher([
  (UPat(GroupOp.ALU, name="u"), _in_float32),
  (UPat(Ops.CAST, name="c"), _narrow_cast),
  (UPat(Ops.CAST, name="c"), _cast_as_uops),
])
