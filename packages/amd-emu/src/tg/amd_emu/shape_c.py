"""One instruction shape -> a UOp kernel -> a C function (cached in memory and in tg's disk cache).

The kernel loops over the 32 lanes for per-lane instructions (one RANGE), evaluates the pseudocode, and stores the
results gated by EXEC; every store is ordered after every load (AFTER), so an instruction (and both halves of a
VOPD) reads all its sources before it writes. Lane-mask results (VOPC, carries) go through a per-lane scratch area
and are packed after the loop.
"""
from __future__ import annotations
import functools
import hashlib
import inspect
import pathlib
from dataclasses import dataclass
from tg.uop import UOp, Ops, dtypes, AxisType, round_half_even, f32_to_bf16_bits, fp8_bits_to_f32, f32_to_fp8_bits
from tg.codegen import render_c_function, diskcache_get, diskcache_put
from .inst import Inst
from .pcode import PcodeError
from .isa import get_arch
from .pcode_uops import V, Wide, Unsupported, bits, resize, alu, const, from_bits, conv, truth
from .shapes import Builder, InstCtx, MemInterp, TMPBITS, SCC, PC, WAVE, lane_loop, pcode_of, swizzle_pcode, vinterp_pcode, shape_key, \
  int_clamp_pcode, FloatMode, DEFAULT_MODE, flush_denorm
from .wmma import build_wmma
from . import barrier

@dataclass(frozen=True)
class ShapeCode:
  """A rendered shape: the C function, its name, the buffers (0 state, 1 memory, 2 range table) and variables it takes."""
  name: str
  src: str
  prelude: tuple[str, ...]
  params: tuple[int, ...]
  variables: tuple[str, ...]
  error: str | None = None

  def call(self, args: list[str]) -> str:
    """The C call of this shape with its variables' values (C expressions, in `variables` order)."""
    return f"{self.name}({', '.join([BUFFERS[p] for p in self.params] + args)})"

  def entry(self) -> str:
    """`NAME_i(st, mem, tab, a)`: the shape behind one signature for every shape, its variables from the array a (tier 1)."""
    return f"void {self.name}_i({ENTRY_ARGS}) {{ {self.call([f'a[{i}]' for i in range(len(self.variables))])}; }}"

BUFFERS = ("st", "mem", "tab")
ENTRY_ARGS = "unsigned int* st, unsigned char* mem, unsigned long long* tab, const long long* a"

@functools.cache
def _version() -> str:
  here = pathlib.Path(__file__).parent
  files = ("pcode.py", "pcode_uops.py", "shapes.py", "shape_c.py", "wmma.py", "barrier.py", "buffer.py", "numfmt.py", "dpp.py")
  builders = (round_half_even, f32_to_bf16_bits, fp8_bits_to_f32, f32_to_fp8_bits)  # tg.uop's conversions the shapes build
  src = b"".join((here / f).read_bytes() for f in files) + "".join(inspect.getsource(b) for b in builders).encode()
  return hashlib.sha256(src).hexdigest()[:16]

_mem_cache: dict[tuple, ShapeCode] = {}
_unsaved: list[tuple[str, ShapeCode]] = []

def shape_code(inst: Inst, mode: FloatMode = DEFAULT_MODE, kinds: tuple | None = None) -> ShapeCode:
  """The C function of an instruction's shape, from memory, the disk cache, or compiled now (saved later by save_shapes).
  `kinds` is shapes.shape_kinds(inst), when the caller has it."""
  key = shape_key(inst, mode, kinds)
  if (sc := _mem_cache.get(key)) is not None: return sc
  dkey = f"{_version()}:{key!r}"
  if (sc := diskcache_get("amd_emu_shapes_v1", dkey)) is None:
    sc = render_shape(inst, key, mode)
    _unsaved.append((dkey, sc))
  _mem_cache[key] = sc
  return sc

def save_shapes() -> None:
  """Write newly rendered shapes to the disk cache (each write is a transaction). Tier 1 and tier-2 builds call it from
  several threads: each pop is atomic, so each shape is written once."""
  while True:
    try: item = _unsaved.pop()
    except IndexError: return
    diskcache_put("amd_emu_shapes_v1", *item)

def render_shape(inst: Inst, key: tuple, mode: FloatMode = DEFAULT_MODE) -> ShapeCode:
  name = "sh_" + hashlib.sha256(repr(key).encode()).hexdigest()[:16]
  try:
    sink = build(inst, mode)
  except (Unsupported, PcodeError) as e:  # what the emulator cannot run; any other exception is a bug and propagates
    return ShapeCode(name, "", (), (), (), f"{type(e).__name__}: {e}")
  fn = render_c_function(sink, name)
  return ShapeCode(name, fn.src, fn.prelude, fn.params, fn.variables)

def build(inst: Inst, mode: FloatMode = DEFAULT_MODE) -> UOp:
  """The kernel SINK of one instruction."""
  op = inst.op
  if op.name.startswith(("V_WMMA_", "V_SWMMAC_")): return build_wmma(inst)
  b = Builder()
  if op.name in barrier.OPS:
    barrier.barrier_stores(inst, b)
    return finish(b, list(b.stores), None, [])
  halves = [(op, "")]
  if op.enum == "VOPDOp": halves = [(op, "x"), (get_arch(op.arch).by_code[("VOPDOp", inst.vals["opy"])], "y")]
  lane = UOp.range(WAVE, 0, AxisType.LOOP) if lane_loop(op) else None
  masks: list[tuple[UOp, V]] = []
  results: list[tuple[InstCtx, dict]] = []
  for hop, half in halves:
    text = pcode_of(hop) if hop.name != "DS_SWIZZLE_B32" else swizzle_pcode(inst.vals["offset0"] | inst.vals["offset1"] << 8)
    if text is None: raise Unsupported(f"{hop.name} has no pseudocode")
    if inst.vals.get("clmp") and (sat := int_clamp_pcode(hop)) is not None: text += sat
    if hop.fmt == "VINTERP": text = vinterp_pcode(text, inst.vals)
    ctx = InstCtx(inst, b, lane, half, hop, mode)
    it = MemInterp(ctx)
    env = it.run(text)
    results.append((ctx, env, it.initial))
  pending = list(b.stores)  # faults and memory stores recorded while evaluating
  b.stores.clear()
  for ctx, env, initial in results: commit(ctx, env, initial, masks)
  pending += b.stores
  return finish(b, pending, lane, masks)

def finish(b: Builder, pending: list, lane: UOp | None, masks: list[tuple[UOp, V]]) -> UOp:
  """The SINK: every store ordered after every load, per lane in the lane loop; a lane-mask result packed after it."""
  loads = tuple(b.loads)
  stores = [typed_store(UOp(Ops.INDEX, buf.dtype.base, (buf.after(*loads), idx) + ((gate,) if gate is not None else ())), val)
            for buf, idx, val, gate in pending]
  if lane is None: return UOp.sink(*stores) if stores else UOp.sink(UOp(Ops.NOOP))
  body = [UOp.group(*stores).end(lane)] if stores else []
  post = []
  if masks:
    if len(masks) > 1: raise Unsupported("two lane-mask results")
    (target, bit), = masks
    loop_st = b.st.after(UOp.group(*[UOp(Ops.INDEX, dtypes.uint32, (b.st.after(*loads), UOp.const(dtypes.index, TMPBITS) + lane)).store(bit.u)],
                                   *stores).end(lane))
    word = UOp.const(dtypes.uint32, 0)
    for k in range(WAVE):
      bit = UOp(Ops.LOAD, dtypes.uint32, (UOp(Ops.INDEX, dtypes.uint32, (loop_st, UOp.const(dtypes.index, TMPBITS + k))),))
      word = word | (bit << UOp.const(dtypes.uint32, k))
    post.append(UOp(Ops.INDEX, dtypes.uint32, (loop_st, target)).store(word))
    return UOp.sink(*post)
  return UOp.sink(*body)

def typed_store(idx: UOp, val: UOp) -> UOp:
  """A store of val's type: memory is a byte buffer, so wider values go through a pointer cast."""
  if val.dtype == idx.dtype: return idx.store(val)
  return UOp(Ops.STORE, dtypes.void, (UOp(Ops.CAST, val.dtype.ptr(), (idx,)), val))

def commit(ctx: InstCtx, env: dict, it_initial: dict, masks: list) -> None:
  """Store the outputs the pseudocode assigned: destinations, SCC, VCC/EXEC (lane bits or whole), M0, PC, memory data."""
  b = ctx.b
  def assigned(name: str) -> bool: return name in env and (name not in it_initial or env[name] is not it_initial[name])
  lane = ctx.lane
  exec_gate = ctx.write_gate()
  for name in ("D0", "RETURN_DATA", "VDATA", "SDATA", "VGPR_RTN"):
    if not assigned(name): continue
    if name == "VDATA" and ctx.stores_vdata: continue
    val = env[name]
    if name == "D0" and ctx.d0_mask:
      masks.append((ctx.mask_dest(), lane_bit(val, lane, exec_gate)))
      continue
    if name == "D0": words, is_v = ctx.dest_words()
    else:
      regs = ctx.data_regs(name)
      if regs is None: continue
      fld, n = regs
      if fld == "vdst" and not ctx.returns(): continue
      words = [ctx.var("sdata") + i for i in range(n)] if fld == "sdata" else [ctx.vgpr_idx(ctx.var(fld), i) for i in range(n)]
      is_v = fld != "sdata"
    if name == "D0": val = output_mods(ctx, val)
    store_words(b, words, val, name == "D0" and ctx.d16_hi(), exec_gate if is_v else None)
  for i, src in enumerate(ctx.sources()):  # pseudocode that writes a source (v_swap_b32: S0 = tmp)
    if assigned(f"S{i}") and ctx.has(src) and ctx.kind(src)[0] in ("v", "s"):
      val, k = env[f"S{i}"], ctx.kind(src)
      store_words(b, ctx.reg_words(src, max(1, val.width // 32)), val, k[1] or ctx.opsel_bit(src), exec_gate if k[0] == "v" else None)
  if assigned("SCC"): b.store(SCC, conv(env["SCC"], "u", 1).u.cast(dtypes.uint32))
  for name, reg in (("VCC", 106), ("EXEC", 126), ("EXEC_LO", 126), ("M0", 125)):
    if not assigned(name): continue
    if lane is not None and name != "M0":
      target = ctx.var("sdst") if name == "VCC" and ctx.has("sdst") else UOp.const(dtypes.index, reg)
      masks.append((target, lane_bit(env[name], lane, exec_gate)))
    else: b.store(reg, resize(bits(env[name]), 32).u)
  if assigned("D1") and ctx.has("sdst"): masks.append((ctx.var("sdst"), lane_bit(truth(env["D1"]), lane, exec_gate)))  # this lane's carry
  if assigned("PC"):
    pc = bits(env["PC"])
    b.store(PC, resize(pc, 32).u)
    b.store(PC + 1, resize(V(pc.u >> UOp.const(pc.u.dtype, 32), "u", 64), 32).u)

def store_words(b: Builder, words: list[UOp], val: V | Wide, hi: bool, gate: UOp | None) -> None:
  """Store a value into register words: a 16-bit value into the low or (hi) high half of the first word, keeping the other."""
  if isinstance(val, Wide): ws = [resize(bits(w), 32).u for w in val.words]
  else:
    raw = bits(val) if not val.weak else const("u", 32 * len(words), val.const)
    if raw.width == 16:
      r16, keep = raw.u.cast(dtypes.uint32), b.ld(words[0]) & UOp.const(dtypes.uint32, 0xFFFF if hi else 0xFFFF0000)
      ws = [keep | (r16 << UOp.const(dtypes.uint32, 16)) if hi else keep | r16]
    else:
      r = resize(raw, 32 * len(words))
      ws = [resize(V(r.u >> UOp.const(r.u.dtype, 32 * i) if i else r.u, "u", r.width), 32).u for i in range(len(words))]
  for w, v in zip(words, ws): b.store(w, v, gate)

def lane_bit(val: V, lane: V | None, gate: UOp | None) -> V:
  """This lane's bit of a lane mask (0 for a lane EXEC disables)."""
  if lane is None: raise Unsupported("a lane mask written outside a lane loop")
  raw = resize(bits(val) if not val.weak else const("u", 32, val.const), 32)
  bit = alu(Ops.AND, alu(Ops.SHR, raw, lane, "u", 32), const("u", 32, 1), "u", 32) if val.width > 1 else resize(raw, 32)
  return V(gate.where(bit.u, UOp.const(dtypes.uint32, 0)), "u", 32) if gate is not None else bit

def output_mods(ctx: InstCtx, val: V | Wide) -> V | Wide:
  """VOP3's output modifiers on float results: omod scales by 2, 4 or 0.5 (not in IEEE mode), clamp saturates to [0, 1];
  then a denormal result is flushed to zero when the float mode says so."""
  vals = ctx.inst.vals
  omod, clamp = 0 if ctx.mode.ieee else vals.get("omod", 0), vals.get("clmp", 0)
  opnd = ctx.op.operands.get("vdst")
  flush = opnd is not None and ctx.mode.flushes(opnd.dfmt, 2)
  if isinstance(val, Wide) or opnd is None or "F" not in opnd.dfmt.replace("FMT_", "") or not (omod or clamp or flush): return val
  x = from_bits(bits(val), "f", val.width)
  if omod: x = V(x.u * UOp.const(x.u.dtype, {1: 2.0, 2: 4.0, 3: 0.5}[omod]), "f", x.width)
  if clamp:
    zero, one = UOp.const(x.u.dtype, 0.0), UOp.const(x.u.dtype, 1.0)
    x = V((x.u < zero).where(zero, (x.u > one).where(one, x.u)), "f", x.width)
    x = V(x.u.ne(x.u).where(zero, x.u), "f", x.width)
  return from_bits(flush_denorm(bits(x)), "f", x.width) if flush and x.width in (16, 32, 64) else x
