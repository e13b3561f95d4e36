"""C renderer for the CPU device: the linear program as one C function (ABI in tg.codegen.devices.cpu).

Values are named C locals; integer math relies on -fwrapv; float constants are exact hex literals; bfloat16 and
fp8 live in memory as their bits and are computed in float (see tg.codegen.lower.decompositions.pm_narrow_floats)."""
from __future__ import annotations
import functools
import math
from typing import Callable, Iterable, Sequence
from tg.uop import UOp, Ops, NONTEMPORAL, AxisType, DType, PtrDType, dtypes, GroupOp
from tg.uop import f32_to_bf16_bits, bf16_bits_to_f32, fp8_bits_to_f32, f32_to_fp8_bits
from tg.uop.dtype import float_to_bits
from tg.codegen.renderer import Renderer, VectorISA
from tg.codegen.program import estimate, kernel_args
from tg.codegen.device import CHECK_OOB
from tg.codegen.devices.clang import has_vector_math, vector_math_call, vector_math_lanes
from tg.codegen.lower.transcendental import TRANSCENDENTAL

C_TYPES = {dtypes.bool: "_Bool", dtypes.int8: "signed char", dtypes.uint8: "unsigned char", dtypes.int16: "short",
           dtypes.uint16: "unsigned short", dtypes.int32: "int", dtypes.uint32: "unsigned int", dtypes.int64: "long long",
           dtypes.uint64: "unsigned long long", dtypes.index: "long long", dtypes.float16: "_Float16", dtypes.bfloat16: "unsigned short",
           **{d: "unsigned char" for d in dtypes.fp8s}, dtypes.float32: "float", dtypes.float64: "double", dtypes.void: "void"}
# the formats stored as their bits, by the name of their conversion helpers (tg_f32_to_e4m3, tg_e4m3_to_f32, ...)
NARROW = {dtypes.bfloat16: "bf16", **{d: d.name.removeprefix("fp8") for d in dtypes.fp8s}}
FLOAT_FN = {Ops.SQRT: "sqrt", Ops.EXP2: "exp2", Ops.LOG2: "log2", Ops.SIN: "sin", Ops.TRUNC: "trunc", Ops.POW: "pow"}
INFIX = {Ops.ADD: "+", Ops.SUB: "-", Ops.MUL: "*", Ops.FDIV: "/", Ops.CMPLT: "<", Ops.CMPNE: "!=", Ops.CMPEQ: "==", Ops.AND: "&",
         Ops.OR: "|", Ops.XOR: "^", Ops.SHL: "<<", Ops.SHR: ">>"}

def c_const(x: object, dt: DType) -> str:
  if dt == dtypes.bool: return "1" if x else "0"
  if dtypes.is_int(dt):
    v = int(x)  # type: ignore[call-overload]
    if dt == dtypes.int64 and v == dtypes.min(dt): return "(-9223372036854775807ll-1)"
    return f"{v}{'ull' if dt == dtypes.uint64 else 'll' if dt.itemsize == 8 else 'u' if dt == dtypes.uint32 else ''}"
  f = float(x)  # type: ignore[arg-type]
  if dt in NARROW: return f"(({C_TYPES[dt]}){float_to_bits(f, dt):#x})"  # stored as bits
  suffix = "f" if dt != dtypes.float64 else ""
  if math.isnan(f): s = f"__builtin_nan{suffix}(\"\")"
  elif math.isinf(f): s = f"{'-' if f < 0 else ''}__builtin_inf{suffix}()"
  else: s = f.hex() + suffix
  return s if dt in (dtypes.float32, dtypes.float64) else f"(({C_TYPES[dt]}){s})"

# lanes __builtin_convertvector converts as C's cast
VEC_CAST = frozenset({dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.uint32, dtypes.uint64})
VEC_HALF_CAST = frozenset({(dtypes.float16, dtypes.float32), (dtypes.float32, dtypes.float16)})  # one F16C instruction (a rounding) each
VEC_FLOAT = frozenset({dtypes.float32, dtypes.float64})  # lanes compares, max and selects run on as vectors
VEC_MATH = {Ops.EXP2: "exp2f", Ops.LOG2: "log2f", Ops.SIN: "sinf"}  # glibc's libmvec on 8 or 16 float32 lanes (within 2.1 ulp, measured)
VEC_INT = frozenset({dtypes.int32, dtypes.int64, dtypes.uint32, dtypes.uint64})  # lanes integer + - *, max, selects, compares run on
VEC_INT_ALU = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.MULACC, Ops.MAX, Ops.WHERE, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL,
                         Ops.SHR})  # (wrapping, -fwrapv)

class _Kernel:
  """What rendering one kernel accumulates: a C name per value, the body's lines at their depth, the vector types used,
  CHECK_OOB's list of checked accesses."""
  def __init__(self, ren: CRenderer, cpu_abi: bool, uops: Sequence[UOp] = ()):
    self.ren, self.cpu_abi = ren, cpu_abi
    self.r: dict[UOp, str] = {}
    self.transposes = _transposes(uops)
    self.unread = _lanes_only_transposed(uops, self.transposes)  # (the shuffles read their vectors whole)
    self.lines: list[str] = []
    self.vec_types: set[DType] = set()
    self.depth, self.threaded, self.nontemporal = 1, False, False
    self.checks: list[str] | None = [] if CHECK_OOB else None  # CHECK_OOB: one "dtype|slot|size" per checked access
  def emit(self, s: str) -> None: self.lines.append("  " * self.depth + s)
  def val(self, u: UOp, expr: str) -> None:
    self.r[u] = f"v{len(self.r)}"
    self.emit(f"{self.ren.ctype(u.dtype)} {self.r[u]} = {expr};")
  def vtype(self, dt: DType) -> str:
    """The C name of a vector type, declared in the typedefs."""
    self.vec_types.add(dt)
    return self.ren.ctype(dt)
  def note_types(self, u: UOp) -> None:
    if u.dtype.count > 1 and not isinstance(u.dtype, PtrDType): self.vec_types.add(u.dtype)
    if isinstance(u.dtype, PtrDType) and u.dtype.base.count > 1: self.vec_types.add(u.dtype.base)

# ***** one small function per op: the statements a UOp becomes (s: its sources' C names) *****
def _name(k: _Kernel, u: UOp, name: str) -> None: k.r[u] = name

def _define_reg(k: _Kernel, u: UOp, s: list[str]) -> None:
  k.r[u] = f"acc{u.arg}"
  k.emit(f"{k.ren.ctype(u.dtype.base)} {k.r[u]}[{u.dtype.size}];")  # type: ignore[union-attr]

def _range(k: _Kernel, u: UOp, s: list[str]) -> None:
  """A loop; with the CPU ABI the first GLOBAL one is split over the threads (core_id of n_cores)."""
  k.r[u] = r = f"ridx{u.arg[0]}" if u.arg[0] >= 0 else f"ridxm{-u.arg[0]}"
  if k.cpu_abi and k.ren.has_threads and u.arg[1] is AxisType.GLOBAL and not k.threaded:
    k.threaded = True
    k.emit(f"for (long long {r} = ({s[0]}*(long long)core_id)/n_cores; {r} < ({s[0]}*(long long)(core_id+1))/n_cores; {r}++) {{")
  else: k.emit(f"for (long long {r} = 0; {r} < {s[0]}; {r}++) {{")
  k.depth += 1

def _close(k: _Kernel, u: UOp, s: list[str]) -> None:
  k.depth -= 1
  k.emit("}")

def _if(k: _Kernel, u: UOp, s: list[str]) -> None:
  k.emit(f"if ({s[0]}) {{")
  k.depth += 1

def _load(k: _Kernel, u: UOp, s: list[str]) -> None:
  gate = _gate(u.src[0], k.r)
  if k.checks is not None and (chk := _bounds(u, u.dtype, k.r, k.checks)) is not None:
    ok, hit = chk
    k.emit(f"if ({gate + '&&' if gate else ''}!{ok}) {hit}")
    k.val(u, f"(({gate + '&&' if gate else ''}{ok})?*{s[0]}:{s[1] if gate else f'(({k.ren.ctype(u.dtype)}){{0}})'})")
  else: k.val(u, f"({gate}?*{s[0]}:{s[1]})" if gate else f"*{s[0]}")

def _store(k: _Kernel, u: UOp, s: list[str]) -> None:
  gate = _gate(u.src[0], k.r)
  if k.checks is not None and (chk := _bounds(u, u.src[1].dtype, k.r, k.checks)) is not None:
    ok, hit = chk
    k.emit(f"if ({gate + '&&' if gate else ''}{ok}) *{s[0]} = {s[1]}; else if ({gate or 1}) {hit}")
  elif u.arg == NONTEMPORAL:
    k.nontemporal = True
    k.emit(f"{'if (' + gate + ') ' if gate else ''}tg_nt_store({s[1]}, {s[0]});")
  else: k.emit(f"{'if (' + gate + ') ' if gate else ''}*{s[0]} = {s[1]};")

def _transposes(uops: Iterable[UOp]) -> dict[UOp, tuple[UOp, ...]]:
  """The VECTORIZEs that together transpose n vectors of n lanes (n a power of two): column c gathers lane c of each
  vector, for every c. Each maps to its group's vectors. A tile of a transpose (x.T.contiguous()) comes out as these."""
  columns: dict[tuple[UOp, ...], dict[int, UOp]] = {}
  for u in uops:
    if u.op is not Ops.VECTORIZE or (n := len(u.src)) < 4 or n & (n - 1) or \
       not all(g.op is Ops.GEP and len(g.arg) == 1 and g.arg[0] == u.src[0].arg[0] and g.src[0].dtype == u.dtype for g in u.src): continue
    if len(rows := tuple(g.src[0] for g in u.src)) == len(set(rows)): columns.setdefault(rows, {})[u.src[0].arg[0]] = u
  return {u: rows for rows, cols in columns.items() if len(cols) == len(rows) for u in cols.values()}

def _lanes_only_transposed(uops: Iterable[UOp], transposes: dict[UOp, tuple[UOp, ...]]) -> set[UOp]:
  """The lanes (GEPs) the transposes' columns read that nothing else reads: they aren't rendered."""
  if not transposes: return set()
  other = {x for u in uops if u not in transposes for x in u.src}
  return {x for u in transposes for x in u.src if x not in other}

def _vectorize(k: _Kernel, u: UOp, s: list[str]) -> None:
  """A vector of the given values; a column of a transpose (_transposes) as a network of shuffles, made at the group's
  first column: in log2(n) steps, each swaps the off-diagonal blocks of size b between vector pairs r and r + b (n log n
  two-vector shuffles, where lane by lane is n^2 extracts and inserts: a 16 x 16 float tile 2.2x faster)."""
  if (rows := k.transposes.get(u)) is None: return k.val(u, f"(({k.ren.ctype(u.dtype)}){{{', '.join(s)}}})")
  if u in k.r: return
  n, cur, b = len(rows), [k.r[x] for x in rows], 1
  while b < n:
    nxt = list(cur)
    for r in (r for r in range(n) if not r & b):
      for i, lanes in ((r, [x if not x & b else n + x - b for x in range(n)]), (r + b, [x + b if not x & b else n + x for x in range(n)])):
        nxt[i] = f"t{len(k.lines)}"
        k.emit(f"{k.ren.ctype(u.dtype)} {nxt[i]} = __builtin_shufflevector({cur[r]}, {cur[r + b]}, {', '.join(map(str, lanes))});")
    cur, b = nxt, b * 2
  for col in (x for x, group in k.transposes.items() if group is rows): k.r[col] = cur[col.src[0].arg[0]]

def _gep(k: _Kernel, u: UOp, s: list[str]) -> None:
  if u in k.unread: return
  k.val(u, f"{s[0]}[{u.arg[0]}]" if len(u.arg) == 1 else f"(({k.ren.ctype(u.dtype)}){{{', '.join(f'{s[0]}[{i}]' for i in u.arg)}}})")

def _cast(k: _Kernel, u: UOp, s: list[str]) -> None:
  if isinstance(u.dtype, PtrDType): k.r[u] = f"(({k.ren.ctype(u.dtype)}){s[0]})"
  elif u.dtype.count > 1 and u.src[0].dtype.scalar() == dtypes.bool:  # int lanes: a compare's -1 or a built vector's 1 is true
    k.val(u, f"__builtin_convertvector((({s[0]})!=0)&1, {k.vtype(u.dtype)})")
  elif u.dtype.count > 1: k.val(u, f"__builtin_convertvector({s[0]}, {k.vtype(u.dtype)})")
  else: k.val(u, k.ren.render_cast(u.dtype, u.src[0].dtype, s[0]))

def _bitcast(k: _Kernel, u: UOp, s: list[str]) -> None:
  if u.dtype.count > 1: return k.val(u, f"(({k.vtype(u.dtype)})({s[0]}))")  # a vector cast of the same size reinterprets the bits
  k.val(u, f"({{{k.ren.ctype(u.src[0].dtype)} s_ = {s[0]}; {k.ren.ctype(u.dtype)} t_; __builtin_memcpy(&t_, &s_, sizeof(t_)); t_;}})")

def _nothing(k: _Kernel, u: UOp, s: list[str]) -> None: pass

STATEMENTS: dict[Ops, Callable[[_Kernel, UOp, list[str]], None]] = {
  Ops.PARAM: lambda k, u, s: _name(k, u, f"data{u.arg}"), Ops.DEFINE_VAR: lambda k, u, s: _name(k, u, u.arg[0]),
  Ops.DEFINE_REG: _define_reg, Ops.CONST: lambda k, u, s: _name(k, u, c_const(u.arg, u.dtype)),
  Ops.VCONST: lambda k, u, s: _name(k, u, f"(({k.ren.ctype(u.dtype)}){{{', '.join(c_const(x, u.dtype.scalar()) for x in u.arg)}}})"),
  Ops.CUSTOM: lambda k, u, s: k.emit(u.arg.format(*s) + ";"),  # a statement: {0}, {1}... its sources (a prefetch)
  Ops.RANGE: _range, Ops.END: _close, Ops.ENDIF: _close, Ops.IF: _if, Ops.AFTER: lambda k, u, s: _name(k, u, s[0]),
  Ops.INDEX: lambda k, u, s: _name(k, u, f"({s[0]}+{s[1]})"), Ops.LOAD: _load, Ops.STORE: _store,
  Ops.VECTORIZE: _vectorize, Ops.GEP: _gep, Ops.CAST: _cast,
  Ops.BITCAST: _bitcast, Ops.BARRIER: _nothing, Ops.NOOP: _nothing, Ops.SINK: _nothing, Ops.GROUP: _nothing,
  **{op: lambda k, u, s: k.val(u, k.ren.render_alu(u, s, k)) for op in GroupOp.ALU},
}

class CRenderer(Renderer):
  device = "CPU"
  has_threads = True
  prefetch = ("__builtin_prefetch({0})", "__builtin_prefetch({0}, 1)")
  vector_widths = (1, 2, 4, 8, 16)
  vector_alu = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.MULACC, Ops.NEG, Ops.MAX, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.WHERE,
                          Ops.CAST, Ops.SQRT, Ops.RECIPROCAL})
  vector_alu_widths = (2, 4, 8, 16)
  native_ops = GroupOp.ALU - {Ops.THREEFRY}
  emulated_dtypes = frozenset(NARROW)
  def __init__(self, threads: Callable[[], int] = lambda: 1, isa: Callable[[], VectorISA | None] = lambda: None):
    self.threads = threads  # how many host threads a big kernel may use: the CPU device passes its CPU_THREADS reader
    self._isa = isa  # the vector registers kernels are sized for: the CPU device passes the host's (devices.host)
  @property
  def isa(self) -> VectorISA | None: return self._isa()
  def threads_for(self, uops: list[UOp]) -> int:
    if not any(u.op is Ops.RANGE and u.arg[1] is AxisType.GLOBAL for u in uops): return 1
    flops, mem = estimate(uops)
    return 1 if flops + mem < 1 << 20 else self.threads()  # small kernels: one core is as fast (bench/train.py)
  def keeps_vector(self, u: UOp) -> bool:
    """GCC/clang vector extensions: arithmetic as before; compares, max, selects, sqrt and reciprocal on float32/float64 lanes (a compare's
    bool vector is an int mask, see ctype); casts between float32/float64/int32/int64, from bool to them, and between float16 and float32
    (__builtin_convertvector), also to and from uint32/uint64, and bitcasts between those (a vector cast); + - * max, selects,
    bitwise ops and shifts on 32/64-bit integer lanes, and their compares, and and/or of bools (an int sum or an argmax ran
    lane by lane: 0.4 of the read limit), and THREEFRY, decomposed into those (a rand ran lane by lane: 6x slower); exp2,
    log2 and sin of 8 lanes or a multiple (a 64-lane tile in 16s) of float32 through glibc's vector math library where
    the host has it (libm one lane at a time: exp 0.47 of numpy)."""
    if u.op is Ops.CAST:
      frm, to = u.src[0].dtype.scalar(), u.dtype.scalar()
      return (to in VEC_CAST and frm in VEC_CAST | {dtypes.bool}) or (frm, to) in VEC_HALF_CAST
    if u.op is Ops.BITCAST: return {u.dtype.scalar(), u.src[0].dtype.scalar()} <= VEC_FLOAT | VEC_INT
    if u.op in VEC_MATH: return u.dtype.scalar() == dtypes.float32 and u.dtype.count % 8 == 0 and has_vector_math() and TRANSCENDENTAL < 2
    if u.op in GroupOp.Comparison: return u.src[0].dtype.scalar() in VEC_FLOAT | VEC_INT
    if u.op in VEC_INT_ALU and u.dtype.scalar() in VEC_INT: return True
    if u.op is Ops.THREEFRY: return True  # decomposed after devectorizing: into the integer ops and casts above, lanes whole
    if u.op in (Ops.AND, Ops.OR) and u.dtype.scalar() == dtypes.bool: return True  # int lanes, nonzero is true: bitwise is logical
    if u.op in (Ops.MAX, Ops.WHERE, Ops.SQRT, Ops.RECIPROCAL): return u.dtype.scalar() in VEC_FLOAT
    return super().keeps_vector(u)

  def ctype(self, dt: DType) -> str:
    if isinstance(dt, PtrDType): return self.ctype(dt.base) + "*"
    return C_TYPES[dt] if dt.count == 1 else f"tg_{dt.scalar().name}x{dt.count}"

  def render(self, uops: list[UOp], name: str = "kernel") -> str:
    prelude, kernel, job = self.render_parts(uops, name, cpu_abi=True)
    return "\n".join(prelude + kernel + job)

  def render_parts(self, uops: list[UOp], name: str, cpu_abi: bool) -> tuple[list[str], list[str], list[str]]:
    """(typedefs and helpers, the function, its NAME_job entry). With cpu_abi the function ends in `int core_id, int n_cores`
    (the outermost GLOBAL loop is split over them) and has a NAME_job; without, its arguments are the buffers and variables alone."""
    k = _Kernel(self, cpu_abi, uops)
    for u in uops:
      k.note_types(u)
      if (fn := STATEMENTS.get(u.op)) is None: raise NotImplementedError(f"the C renderer can't render {u.op}")
      fn(k, u, [k.r.get(x, "") for x in u.src])
    return self._prelude(k), self._function(k, uops, name), self._job(k, uops, name)

  def _prelude(self, k: _Kernel) -> list[str]:
    """Typedefs of the vector types (a bool vector is an int mask per lane: what a compare of float32 lanes gives), the
    conversion helpers the body calls, CHECK_OOB's record."""
    def typedef(d: DType) -> str:
      lane = "int" if d.scalar() == dtypes.bool else C_TYPES[d.scalar()]
      size = 4 if d.scalar() == dtypes.bool else d.scalar().itemsize
      return f"typedef {lane} {self.ctype(d)} __attribute__((vector_size({size * d.count}),aligned({size})));"
    typedefs = [typedef(d) for d in sorted(k.vec_types, key=lambda d: (d.scalar().name, d.count))]
    # (a helper is named with its "(": tg_f32_to_e4m3 is a prefix of tg_f32_to_e4m3fnuz)
    prelude = [f for f in (*conversion_helpers(), VSQRT) if any(f.split("(")[0].split()[-1] + "(" in line for line in k.lines)]
    if k.nontemporal: prelude += NT_PRELUDE
    if called := sorted(vector_math_call(f) for f in VEC_MATH.values() if any(f"{vector_math_call(f)}(" in line for line in k.lines)):
      n = vector_math_lanes()
      prelude = [f"typedef float tg_mvec{n} __attribute__((vector_size({4 * n})));", *(f"tg_mvec{n} {f}(tg_mvec{n});" for f in called)] + prelude
    if k.checks: prelude += OOB_PRELUDE + [f"const char* tg_oob_info[] = {{{', '.join(chr(34) + c + chr(34) for c in k.checks)}}};"]
    return typedefs + prelude

  def _function(self, k: _Kernel, uops: list[UOp], name: str) -> list[str]:
    params, variables = kernel_args(uops)
    args = [f"{self.ctype(p.dtype.base)}* restrict data{p.arg}" for p in params] + [f"long long {v.arg[0]}" for v in variables]  # type: ignore
    return [f"void {name}({', '.join(args + (['int core_id', 'int n_cores'] if k.cpu_abi else []) or ['void'])}) {{"] + k.lines + ["}"]

  def _job(self, k: _Kernel, uops: list[UOp], name: str) -> list[str]:
    """NAME_job: for the thread pool and for launching a batch of kernels in one call (cpu_pool)."""
    if not k.cpu_abi: return []
    params, variables = kernel_args(uops)
    words = [f"({self.ctype(p.dtype.base)}*)a[{i}]" for i, p in enumerate(params)] + [f"a[{len(params) + i}]" for i in range(len(variables))]  # type: ignore
    return [f"void {name}_job(const long long* a, int core_id, int n_cores) {{ {name}({', '.join(words + ['core_id', 'n_cores'])}); }}"]

  def render_cast(self, to: DType, frm: DType, x: str) -> str:
    if to.scalar() == dtypes.bool: return f"({x}!=0)"
    if to in NARROW: return f"tg_f32_to_{NARROW[to]}({x})"    # from float32 (pm_narrow_floats goes through it)
    if frm in NARROW: return f"(({self.ctype(to)})tg_{NARROW[frm]}_to_f32({x}))"
    return f"(({self.ctype(to)})({x}))"

  def render_alu(self, u: UOp, s: list[str], k: _Kernel | None = None) -> str:
    dt = u.src[0].dtype if u.op in GroupOp.Comparison else u.dtype
    if dt.count > 1 and k is not None and (vec := VECTOR_ALU.get(u.op)) is not None: return vec(k, u, s)
    if u.op in INFIX and not (u.op in (Ops.AND, Ops.OR, Ops.XOR) and dtypes.is_float(dt)): return f"({s[0]}{INFIX[u.op]}{s[1]})"
    if (rule := SCALAR_ALU.get(u.op)) is not None: return rule(self, u, dt, s)
    if u.op in VEC_MATH and dt == dtypes.float32 and has_vector_math():  # one lane of the vector call, not libm's: the same
      # value in every kernel, vectorized or not (a max's gradient compares exp(x) recomputed with the max found; libm's
      # and libmvec's exp2f differ in the last bit, and the gradient missed the maximum)
      n = vector_math_lanes()
      return f"{vector_math_call(VEC_MATH[u.op])}((tg_mvec{n}){{{', '.join([s[0]] * n)}}})[0]"
    if u.op in FLOAT_FN:
      fn = FLOAT_FN[u.op]
      if dt == dtypes.float64: return f"__builtin_{fn}({', '.join(s)})"
      if dt == dtypes.float32: return f"__builtin_{fn}f({', '.join(s)})"
      return f"(({self.ctype(dt)})__builtin_{fn}f({', '.join(f'(float){x}' for x in s)}))"
    raise NotImplementedError(f"the C renderer has no rule for {u.op} on {dt}")

def _idiv_mod(ren: CRenderer, u: UOp, dt: DType, s: list[str]) -> str:
  """C's truncating / and %, defined for a zero divisor (0) and for INT_MIN / -1 (wraps, as -fwrapv's negation)."""
  c = "/" if u.op is Ops.IDIV else "%"
  if u.src[1].op is Ops.CONST and u.src[1].arg not in (0, -1): return f"({s[0]}{c}{s[1]})"
  if dtypes.is_unsigned(dt): return f"({s[1]}==0?0:{s[0]}{c}{s[1]})"
  minus1 = f"-{s[0]}" if u.op is Ops.IDIV else "0"
  return f"({s[1]}==0?0:({s[1]}==-1?{minus1}:{s[0]}{c}{s[1]}))"

def _max(dt: DType, s: list[str]) -> str:
  """floats: NaN propagates, and of +0 and -0 the first wins (numpy's maximum, and Python's max in tg.uop.ops)."""
  return f"(({s[0]}>={s[1]}){'||' + s[0] + '!=' + s[0] if dtypes.is_float(dt) else ''}?{s[0]}:{s[1]})"

SCALAR_ALU: dict[Ops, Callable[[CRenderer, UOp, DType, list[str]], str]] = {
  Ops.WHERE: lambda ren, u, dt, s: f"({s[0]}?{s[1]}:{s[2]})",
  Ops.MULACC: lambda ren, u, dt, s: f"({s[0]}*{s[1]}+{s[2]})",  # one expression: the compiler fuses it (-ffp-contract=on)
  Ops.NEG: lambda ren, u, dt, s: f"(!{s[0]})" if dt == dtypes.bool else f"(-{s[0]})",
  Ops.RECIPROCAL: lambda ren, u, dt, s: f"({c_const(1.0, dt)}/{s[0]})",
  Ops.MAX: lambda ren, u, dt, s: _max(dt, s), Ops.IDIV: _idiv_mod, Ops.MOD: _idiv_mod,
}

# ***** vectors (GCC/clang vector extensions): C has no vector ?: outside C++, so a select is bitwise on an int mask *****
def _lanes_int(k: _Kernel, dt: DType) -> str:
  """The int vector type with dt's lane count and lane width (a float's bits, a compare's mask)."""
  return k.vtype({4: dtypes.int32, 8: dtypes.int64}[dt.scalar().itemsize].vec(dt.count))

def _select(k: _Kernel, dt: DType, mask: str, a: str, b: str) -> str:
  """mask ? a : b per lane, mask an int vector of dt's lane width whose lanes are all ones or zero."""
  it = _lanes_int(k, dt)
  return f"(({k.vtype(dt)})((({it})({mask})&({it})({a}))|(~({it})({mask})&({it})({b}))))"

def _vec_compare(k: _Kernel, u: UOp, s: list[str]) -> str:
  """A compare of float lanes gives an int mask of the lanes' width: a bool vector is int32 lanes (see _prelude)."""
  m = f"({s[0]}{INFIX[u.op]}{s[1]})"
  return m if u.src[0].dtype.scalar().itemsize == 4 else f"__builtin_convertvector({m}, {k.vtype(u.dtype)})"

def _vec_where(k: _Kernel, u: UOp, s: list[str]) -> str:
  """A bool vector may hold 1 for true (built from scalar bools): != 0 makes it a mask, widened to the value lanes."""
  it = _lanes_int(k, u.dtype)
  mask = f"({s[0]}!=0)" if u.dtype.scalar().itemsize == 4 else f"(__builtin_convertvector({s[0]}, {it})!=0)"
  return _select(k, u.dtype, mask, s[1], s[2])

def _vec_math(k: _Kernel, u: UOp, s: list[str]) -> str:
  """A libmvec call per n lanes, the host's width (its own vector type: the kernel's are only 4-byte aligned): 16 lanes
  as two halves of 8; 8 lanes repeated to 16, the first half of the result kept."""
  fn, n, c = vector_math_call(VEC_MATH[u.op]), vector_math_lanes(), u.dtype.count
  def lanes(x: str, idx: Iterable[int]) -> str: return f"__builtin_shufflevector({x}, {x}, {', '.join(map(str, idx))})"
  if c == n: return f"(({k.vtype(u.dtype)}){fn}((tg_mvec{n}){s[0]}))"
  if c < n: return f"(({k.vtype(u.dtype)}){lanes(f'{fn}((tg_mvec{n}){lanes(s[0], [i % c for i in range(n)])})', range(c))})"
  t = k.vtype(dtypes.float32.vec(n))
  half = [f"(({t}){fn}((tg_mvec{n}){lanes(s[0], range(o, o + n))}))" for o in (0, n)]
  return f"__builtin_shufflevector({half[0]}, {half[1]}, {', '.join(str(i) for i in range(2 * n))})"

VECTOR_ALU: dict[Ops, Callable[[_Kernel, UOp, list[str]], str]] = {
  **{op: _vec_math for op in VEC_MATH},
  **{op: _vec_compare for op in GroupOp.Comparison},
  Ops.WHERE: _vec_where,
  Ops.SQRT: lambda k, u, s: f"tg_vsqrt({s[0]})",  # (an optimizer's update: lane by lane it cost 40% of AdamW's kernel)
  # a vector divide, correctly rounded per lane as the scalar one (a GELU's tanh: 16 scalar divides per vector)
  Ops.RECIPROCAL: lambda k, u, s: f"({c_const(1.0, u.dtype.scalar())}/{s[0]})",
  Ops.MAX: lambda k, u, s: _select(k, u.dtype, f"(({s[0]}>={s[1]})|({s[0]}!={s[0]}))", s[0], s[1]),  # NaN and zeros as _max
}

# CHECK_OOB: the first access out of bounds is recorded (access number, index) for tg.codegen.devices.cpu to raise
OOB_PRELUDE = ["long long tg_oob[3];",
               "static void tg_oob_hit(long long a, long long i) { if (!tg_oob[0]) { tg_oob[1] = a; tg_oob[2] = i; tg_oob[0] = 1; } }"]

def _bounds(u: UOp, dt: DType, r: dict[UOp, str], checks: list[str]) -> tuple[str, str] | None:
  """For a load/store of a kernel buffer: the C condition that it is inside, and the statement recording that it isn't."""
  idx = u.src[0].src[0] if u.src[0].op is Ops.CAST else u.src[0]
  buf = idx.src[0].buffer_base
  if buf.op is not Ops.PARAM or (size := buf.dtype.size) < 0: return None  # type: ignore[attr-defined]
  checks.append(f"{dt}|{buf.arg}|{size}")
  ix = r[idx.src[1]]
  return f"({ix}>=0&&{ix}+{dt.count}<={size})", f"tg_oob_hit({len(checks) - 1},{ix});"

def _gate(addr: UOp, r: dict[UOp, str]) -> str | None: return None if addr.gate is None else r[addr.gate]

def _c_helper(name: str, ret: DType, arg: DType, build: Callable[[UOp], UOp]) -> str:
  """`static inline RET name(ARG x)`: the graph build(x) rendered statement by statement, so the C conversions are
  tg.uop.floatconv's definitions, not a second copy of them."""
  x = UOp.variable("x", *((-math.inf, math.inf) if dtypes.is_float(arg) else (0, dtypes.max(arg))), dtype=arg)
  out, k = build(x), _Kernel(CRenderer(), cpu_abi=False)
  for u in out.toposort(): STATEMENTS[u.op](k, u, [k.r[s] for s in u.src])
  return "\n".join([f"static inline {C_TYPES[ret]} {name}({C_TYPES[arg]} x) {{", *k.lines, f"  return ({C_TYPES[ret]}){k.r[out]};", "}"])

@functools.cache
def conversion_helpers() -> tuple[str, ...]:
  """The C functions between float32 and the formats stored as bits (bfloat16, fp8), from tg.uop.floatconv; a tensor cast to
  fp8 saturates (see there)."""
  u32 = dtypes.uint32
  helpers = [_c_helper("tg_bf16_to_f32", dtypes.float32, dtypes.uint16, lambda x: bf16_bits_to_f32(x.cast(u32))),
             _c_helper("tg_f32_to_bf16", dtypes.uint16, dtypes.float32, f32_to_bf16_bits)]
  for dt in dtypes.fp8s:
    helpers += [_c_helper(f"tg_{NARROW[dt]}_to_f32", dtypes.float32, dtypes.uint8, lambda x, dt=dt: fp8_bits_to_f32(x.cast(u32), dt)),
                _c_helper(f"tg_f32_to_{NARROW[dt]}", dtypes.uint8, dtypes.float32, lambda x, dt=dt: f32_to_fp8_bits(x, dt))]
  return tuple(helpers)

# a nontemporal STORE (UOp.store): clang's streaming store, a plain one where the compiler has none (gcc)
NT_PRELUDE = ["#if __has_builtin(__builtin_nontemporal_store)",
              "#define tg_nt_store(v, p) __builtin_nontemporal_store(v, p)", "#else", "#define tg_nt_store(v, p) (*(p) = (v))", "#endif"]

# sqrt of every lane, correctly rounded as the scalar one: clang's vector builtin (one instruction), else lane by lane
# (gcc; a float lane's sqrt in double rounds to the float sqrt: 53 >= 2*24+2 bits)
VSQRT = ("#define tg_vsqrt(x) __builtin_elementwise_sqrt(x)\n#if defined(__has_builtin)\n#if !__has_builtin(__builtin_elementwise_sqrt)\n"
         "#undef tg_vsqrt\n#endif\n#endif\n#ifndef tg_vsqrt\n#define tg_vsqrt(x) ({ __typeof__(x) tg_v_ = (x); for (int tg_i_ = 0; "
         "tg_i_ < (int)(sizeof(tg_v_) / sizeof(tg_v_[0])); tg_i_++) tg_v_[tg_i_] = __builtin_sqrt(tg_v_[tg_i_]); tg_v_; })\n#endif")
