"""C renderer for the CPU device: the linear program as one C function (ABI in tg.codegen.devices.cpu).

Values are named C locals; integer math relies on -fwrapv; float constants are exact hex literals; bfloat16 and
fp8 live in memory as their bits and are computed in float (see tg.codegen.lower.decompositions.pm_narrow_floats)."""
from __future__ import annotations
import math
from typing import Callable
from tg.uop import UOp, Ops, AxisType, DType, PtrDType, dtypes, GroupOp
from tg.uop.dtype import float_to_bits
from tg.codegen.renderer import Renderer
from tg.codegen.program import estimate, kernel_args
from tg.codegen.device import CHECK_OOB

C_TYPES = {dtypes.bool: "_Bool", dtypes.int8: "signed char", dtypes.uint8: "unsigned char", dtypes.int16: "short",
           dtypes.uint16: "unsigned short", dtypes.int32: "int", dtypes.uint32: "unsigned int", dtypes.int64: "long long",
           dtypes.uint64: "unsigned long long", dtypes.index: "long long", dtypes.float16: "_Float16", dtypes.bfloat16: "unsigned short",
           dtypes.fp8e4m3: "unsigned char", dtypes.fp8e5m2: "unsigned char", dtypes.float32: "float", dtypes.float64: "double",
           dtypes.void: "void"}
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
  if dt in (dtypes.bfloat16, dtypes.fp8e4m3, dtypes.fp8e5m2): return f"(({C_TYPES[dt]}){float_to_bits(f, dt):#x})"  # stored as bits
  suffix = "f" if dt != dtypes.float64 else ""
  if math.isnan(f): s = f"__builtin_nan{suffix}(\"\")"
  elif math.isinf(f): s = f"{'-' if f < 0 else ''}__builtin_inf{suffix}()"
  else: s = f.hex() + suffix
  return s if dt in (dtypes.float32, dtypes.float64) else f"(({C_TYPES[dt]}){s})"

class CRenderer(Renderer):
  device = "CPU"
  has_threads = True
  vector_widths = (1, 2, 4, 8, 16)
  vector_alu = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.MULACC})
  vector_alu_widths = (2, 4, 8, 16)
  native_ops = GroupOp.ALU - {Ops.THREEFRY}
  emulated_dtypes = frozenset({dtypes.bfloat16, dtypes.fp8e4m3, dtypes.fp8e5m2})
  def __init__(self, threads: Callable[[], int] = lambda: 1):
    self.threads = threads  # how many host threads a big kernel may use: the CPU device passes its CPU_THREADS reader
  def threads_for(self, uops: list[UOp]) -> int:
    if not any(u.op is Ops.RANGE and u.arg[1] is AxisType.GLOBAL for u in uops): return 1
    flops, mem = estimate(uops)
    return 1 if flops + mem < 1 << 20 else self.threads()  # small kernels: one core is as fast (bench/train.py)

  def ctype(self, dt: DType) -> str:
    if isinstance(dt, PtrDType): return self.ctype(dt.base) + "*"
    return C_TYPES[dt] if dt.count == 1 else f"tg_{dt.scalar().name}x{dt.count}"

  def render(self, uops: list[UOp], name: str = "kernel") -> str:
    r: dict[UOp, str] = {}
    lines: list[str] = []
    vec_types: set[DType] = set()
    depth, threaded = 1, False
    checks: list[str] | None = [] if CHECK_OOB else None  # CHECK_OOB: one "dtype|slot|size" per checked access
    def emit(s: str) -> None: lines.append("  " * depth + s)
    def val(u: UOp, expr: str) -> None:
      r[u] = f"v{len(r)}"
      emit(f"{self.ctype(u.dtype)} {r[u]} = {expr};")
    for u in uops:
      if u.dtype.count > 1 and not isinstance(u.dtype, PtrDType): vec_types.add(u.dtype)
      if isinstance(u.dtype, PtrDType) and u.dtype.base.count > 1: vec_types.add(u.dtype.base)
      s = [r.get(x, "") for x in u.src]
      if u.op is Ops.PARAM: r[u] = f"data{u.arg}"
      elif u.op is Ops.DEFINE_VAR: r[u] = u.arg[0]
      elif u.op is Ops.DEFINE_REG: r[u] = f"acc{u.arg}"; emit(f"{self.ctype(u.dtype.base)} {r[u]}[{u.dtype.size}];")  # type: ignore[union-attr]
      elif u.op is Ops.CONST: r[u] = c_const(u.arg, u.dtype)
      elif u.op is Ops.VCONST: r[u] = f"(({self.ctype(u.dtype)}){{{', '.join(c_const(x, u.dtype.scalar()) for x in u.arg)}}})"
      elif u.op is Ops.RANGE:
        r[u] = f"ridx{u.arg[0]}" if u.arg[0] >= 0 else f"ridxm{-u.arg[0]}"
        if self.has_threads and u.arg[1] is AxisType.GLOBAL and not threaded:
          threaded = True
          lo, hi = f"({s[0]}*(long long)core_id)/n_cores", f"({s[0]}*(long long)(core_id+1))/n_cores"
          emit(f"for (long long {r[u]} = {lo}; {r[u]} < {hi}; {r[u]}++) {{")
        else: emit(f"for (long long {r[u]} = 0; {r[u]} < {s[0]}; {r[u]}++) {{")
        depth += 1
      elif u.op in (Ops.END, Ops.ENDIF): depth -= 1; emit("}")
      elif u.op is Ops.IF: emit(f"if ({s[0]}) {{"); depth += 1
      elif u.op is Ops.AFTER: r[u] = s[0]
      elif u.op is Ops.INDEX: r[u] = f"({s[0]}+{s[1]})"
      elif u.op is Ops.CAST and isinstance(u.dtype, PtrDType): r[u] = f"(({self.ctype(u.dtype)}){s[0]})"
      elif u.op is Ops.LOAD:
        gate = _gate(u.src[0], r)
        if checks is not None and (chk := _bounds(u, u.dtype, r, checks)) is not None:
          ok, hit = chk
          emit(f"if ({gate + '&&' if gate else ''}!{ok}) {hit}")
          val(u, f"(({gate + '&&' if gate else ''}{ok})?*{s[0]}:{s[1] if gate else f'(({self.ctype(u.dtype)}){{0}})'})")
        else: val(u, f"({gate}?*{s[0]}:{s[1]})" if gate else f"*{s[0]}")
      elif u.op is Ops.STORE:
        gate = _gate(u.src[0], r)
        if checks is not None and (chk := _bounds(u, u.src[1].dtype, r, checks)) is not None:
          ok, hit = chk
          emit(f"if ({gate + '&&' if gate else ''}{ok}) *{s[0]} = {s[1]}; else if ({gate or 1}) {hit}")
        else: emit(f"{'if (' + gate + ') ' if gate else ''}*{s[0]} = {s[1]};")
      elif u.op is Ops.VECTORIZE: val(u, f"(({self.ctype(u.dtype)}){{{', '.join(s)}}})")
      elif u.op is Ops.GEP: val(u, f"{s[0]}[{u.arg[0]}]") if len(u.arg) == 1 else \
        val(u, f"(({self.ctype(u.dtype)}){{{', '.join(f'{s[0]}[{i}]' for i in u.arg)}}})")
      elif u.op is Ops.CAST: val(u, self.render_cast(u.dtype, u.src[0].dtype, s[0]))
      elif u.op is Ops.BITCAST:
        val(u, f"({{{self.ctype(u.src[0].dtype)} s_ = {s[0]}; {self.ctype(u.dtype)} t_; __builtin_memcpy(&t_, &s_, sizeof(t_)); t_;}})")
      elif u.op in GroupOp.ALU: val(u, self.render_alu(u, s))
      elif u.op in (Ops.BARRIER, Ops.NOOP, Ops.SINK, Ops.GROUP): pass
      else: raise NotImplementedError(f"the C renderer can't render {u.op}")
    params, variables = kernel_args(uops)
    args = [f"{self.ctype(p.dtype.base)}* restrict data{p.arg}" for p in params] + [f"long long {v.arg[0]}" for v in variables]  # type: ignore
    typedefs = [f"typedef {C_TYPES[d.scalar()]} tg_{d.scalar().name}x{d.count} __attribute__((vector_size({d.itemsize}),"
                f"aligned({d.scalar().itemsize})));" for d in sorted(vec_types, key=lambda d: (d.scalar().name, d.count))]
    prelude = [f for f in PRELUDE if any(f.split("(")[0].split()[-1] in line for line in lines)]
    words = [f"({self.ctype(p.dtype.base)}*)a[{i}]" for i, p in enumerate(params)] + [f"a[{len(params) + i}]" for i in range(len(variables))]  # type: ignore
    job = [f"void {name}_job(const long long* a, int core_id, int n_cores) {{ {name}({', '.join(words + ['core_id', 'n_cores'])}); }}"]
    kernel = [f"void {name}({', '.join(args + ['int core_id', 'int n_cores'])}) {{"] + lines + ["}"]
    if checks: prelude += OOB_PRELUDE + [f"const char* tg_oob_info[] = {{{', '.join(chr(34) + c + chr(34) for c in checks)}}};"]
    # NAME_job: for the thread pool and for launching a batch of kernels in one call (cpu_pool)
    return "\n".join(typedefs + prelude + kernel + (job if threaded or self.has_threads else []))

  def render_cast(self, to: DType, frm: DType, x: str) -> str:
    if to.scalar() == dtypes.bool: return f"({x}!=0)"
    if to in NARROW: return f"tg_f32_to_{NARROW[to]}({x})"    # from float32 (pm_narrow_floats goes through it)
    if frm in NARROW: return f"(({self.ctype(to)})tg_{NARROW[frm]}_to_f32({x}))"
    return f"(({self.ctype(to)})({x}))"

  def render_alu(self, u: UOp, s: list[str]) -> str:
    dt = u.src[0].dtype if u.op in GroupOp.Comparison else u.dtype
    if u.op in INFIX and not (u.op in (Ops.AND, Ops.OR, Ops.XOR) and dtypes.is_float(dt)): return f"({s[0]}{INFIX[u.op]}{s[1]})"
    if u.op is Ops.WHERE: return f"({s[0]}?{s[1]}:{s[2]})"
    if u.op is Ops.MULACC: return f"({s[0]}*{s[1]}+{s[2]})"  # one expression: the compiler fuses it (-ffp-contract=on)
    if u.op is Ops.NEG: return f"(!{s[0]})" if dt == dtypes.bool else f"(-{s[0]})"
    if u.op is Ops.RECIPROCAL: return f"({c_const(1.0, dt)}/{s[0]})"
    # floats: NaN propagates, and of +0 and -0 the first wins (numpy's maximum, and Python's max in tg.uop.ops)
    if u.op is Ops.MAX: return f"(({s[0]}>={s[1]}){'||' + s[0] + '!=' + s[0] if dtypes.is_float(dt) else ''}?{s[0]}:{s[1]})"
    if u.op in (Ops.IDIV, Ops.MOD):
      c = "/" if u.op is Ops.IDIV else "%"
      if u.src[1].op is Ops.CONST and u.src[1].arg not in (0, -1): return f"({s[0]}{c}{s[1]})"
      minus1 = (f"-{s[0]}" if u.op is Ops.IDIV else "0") if not dtypes.is_unsigned(dt) else f"{s[0]}{c}{s[1]}"
      return f"({s[1]}==0?0:({s[1]}==-1?{minus1}:{s[0]}{c}{s[1]}))" if not dtypes.is_unsigned(dt) else f"({s[1]}==0?0:{s[0]}{c}{s[1]})"
    if u.op in FLOAT_FN:
      fn = FLOAT_FN[u.op]
      if dt == dtypes.float64: return f"__builtin_{fn}({', '.join(s)})"
      if dt == dtypes.float32: return f"__builtin_{fn}f({', '.join(s)})"
      return f"(({self.ctype(dt)})__builtin_{fn}f({', '.join(f'(float){x}' for x in s)}))"
    raise NotImplementedError(f"the C renderer has no rule for {u.op} on {dt}")

NARROW = {dtypes.bfloat16: "bf16", dtypes.fp8e4m3: "e4m3", dtypes.fp8e5m2: "e5m2"}

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

def _fp8_functions(name: str, ebits: int, mbits: int, fmax: float, has_inf: bool) -> list[str]:
  """C conversions between float32 and an fp8 format: round to nearest even, finite overflow saturates (e4m3 also
  saturates infinities: it has none), NaN maps to the format's NaN (the same rules as tg.uop.dtype.float_to_fp8)."""
  bias, emask = 2**(ebits - 1) - 1, (1 << ebits) - 1
  nan_bits, inf_bits = (0x7F, 0) if not has_inf else (0x7E, emask << mbits)
  special = f"if (e == {emask} && m == {(1 << mbits) - 1}) return s * __builtin_nanf(\"\");" if not has_inf else \
            f"if (e == {emask}) return m ? __builtin_nanf(\"\") : s * __builtin_inff();"
  inf_case = f"if (a == __builtin_inff()) return sign | {inf_bits:#x};" if has_inf else ""
  return [
    f"static inline float tg_{name}_to_f32(unsigned char x) {{ float s = (x & 0x80) ? -1.0f : 1.0f; int e = (x >> {mbits}) & {emask},"
    f" m = x & {(1 << mbits) - 1}; {special} if (e == 0) return s * __builtin_ldexpf((float)m, {1 - bias - mbits});"
    f" return s * __builtin_ldexpf((float)({1 << mbits} | m), e - {bias + mbits}); }}",
    f"static inline unsigned char tg_f32_to_{name}(float f) {{ unsigned char sign = __builtin_signbit(f) ? 0x80 : 0;"
    f" if (f != f) return {nan_bits:#x}; float a = __builtin_fabsf(f); {inf_case} if (a == 0.0f) return sign; int e;"
    f" __builtin_frexpf(a, &e); if (e - 1 < {1 - bias}) e = {2 - bias}; float q = __builtin_ldexpf(1.0f, e - 1 - {mbits});"
    f" float r = __builtin_rintf(a / q) * q; if (r == 0.0f) return sign; if (r > {fmax!r}f) r = {fmax!r}f; float mant = __builtin_frexpf(r, &e);"
    f" if (e - 1 + {bias} <= 0) return sign | (unsigned char)(r / {2.0 ** (1 - bias - mbits)!r}f);"
    f" return sign | ((e - 1 + {bias}) << {mbits}) | ((int)(mant * {2 ** (mbits + 1)}) & {(1 << mbits) - 1}); }}"]

PRELUDE = [
  "static inline float tg_bf16_to_f32(unsigned short x) { unsigned int u = (unsigned int)x << 16; float f; __builtin_memcpy(&f, &u, 4); return f; }",
  "static inline unsigned short tg_f32_to_bf16(float f) { unsigned int u; __builtin_memcpy(&u, &f, 4);"
  " if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0; return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); }",
  *_fp8_functions("e4m3", 4, 3, 448.0, False), *_fp8_functions("e5m2", 5, 2, 57344.0, True),
]
