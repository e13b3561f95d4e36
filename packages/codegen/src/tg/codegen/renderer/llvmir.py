"""LLVM IR renderer: the linear program as one LLVM function, SSA values and basic blocks, each kind of UOp through its rule
(RULES) into a Function being built.

`LLVMRenderer` targets the host (a plain function taking buffer pointers); `AMDGPURenderer` targets
`amdgcn-amd-amdhsa`: an `amdgpu_kernel` whose buffers live in the global address space (1), workgroup-shared memory
in LDS (3) and accumulators in private memory (5); SPECIAL ids are workgroup/workitem ids. Loops are a header block
with a phi, a body and a latch; gated loads and stores branch around the access so a masked-off address is never
touched. Arithmetic is IEEE exact (no fast-math flags) except where the result is the same: MULACC is llvm.fma (the
CPU device fuses it too). On AMD, float32/float16 exp2, log2, sqrt and reciprocal are the hardware's instructions
(v_exp_f32, v_log_f32, v_sqrt_f32, v_rcp_f32 and their f16 forms, through LLVM's `afn`), with their documented accuracy
of 1 ulp (LLVM still scales float32 denormals around v_exp/v_log, so those are right too); float64 stays exact (sqrt,
division) or polynomial (exp2, log2), as no instruction exists for it. bfloat16 literals round as tg.uop.floatconv does; fp8 is
held as its bits (i8) and converted by floatconv's graphs (tg.codegen.lower.decompositions' uop_conversions); on
gfx11/gfx12 a tensor-core tile (Ops.WMMA) is llvm.amdgcn.wmma."""
from __future__ import annotations
import itertools, math, struct
from typing import Callable
from tg.uop import UOp, Ops, DType, PtrDType, AddrSpace, dtypes, GroupOp, f32_to_bf16_bits, f32_to_fp8_bits
from tg.codegen.renderer import Renderer, TensorCore
from tg.codegen.program import kernel_args

LL_TYPES = {dtypes.bool: "i1", dtypes.int8: "i8", dtypes.uint8: "i8", dtypes.int16: "i16", dtypes.uint16: "i16", dtypes.int32: "i32",
            dtypes.uint32: "i32", dtypes.int64: "i64", dtypes.uint64: "i64", dtypes.index: "i64", dtypes.float16: "half",
            dtypes.bfloat16: "bfloat", dtypes.float32: "float", dtypes.float64: "double", dtypes.void: "void",
            **{d: "i8" for d in dtypes.fp8s}}  # fp8: no LLVM type, its bits (see uop_conversions)
INT_OPS = {Ops.ADD: "add", Ops.SUB: "sub", Ops.MUL: "mul", Ops.AND: "and", Ops.OR: "or", Ops.XOR: "xor", Ops.SHL: "shl"}
FLOAT_OPS = {Ops.ADD: "fadd", Ops.SUB: "fsub", Ops.MUL: "fmul", Ops.FDIV: "fdiv"}
INTRINSICS = {Ops.SQRT: "sqrt", Ops.TRUNC: "trunc", Ops.EXP2: "exp2", Ops.LOG2: "log2", Ops.MULACC: "fma"}

def ltype(dt: DType) -> str: return LL_TYPES[dt] if dt.count == 1 else f"<{dt.count} x {LL_TYPES[dt.scalar()]}>"

def lconst(x: object, dt: DType) -> str:
  """An LLVM literal: integers in decimal, floats as exact hex (double bits for float/double, 0xH/0xR bits for half/bfloat)."""
  if dt == dtypes.bool: return "true" if x else "false"
  if dtypes.is_int(dt): return str(int(x))  # type: ignore[call-overload]
  f = float(x)  # type: ignore[arg-type]
  if dt == dtypes.float16: return f"0xH{struct.unpack('<H', struct.pack('<e', f))[0]:04X}"
  if dt == dtypes.bfloat16: return f"0xR{bf16_bits(f):04X}"
  if dt in dtypes.fp8s: return str(f32_to_fp8_bits(UOp.const(dtypes.float32, f), dt).simplify().arg)  # its bits
  if dt == dtypes.float32 and not math.isnan(f): f = struct.unpack("<f", struct.pack("<f", f))[0]  # exactly representable
  return f"0x{struct.unpack('<Q', struct.pack('<d', f))[0]:016X}"

def bf16_bits(f: float) -> int:
  """f (rounded to float32, as a cast does) as bfloat16 bits: tg.uop.floatconv's conversion, folded to a constant."""
  return f32_to_bf16_bits(UOp.const(dtypes.float32, f)).simplify().arg

class Function:
  """The LLVM function being rendered: each UOp's SSA name (or literal), the entry block's allocas, the body's lines, the
  current basic block, the open loops and ifs (by UOp: their label number), and the LDS globals and declarations it needs."""
  def __init__(self) -> None:
    self.r: dict[UOp, str] = {}
    self.entry: list[str] = []
    self.body: list[str] = []
    self.globals: list[str] = []
    self.decls: set[str] = set()
    self.block = "entry"
    self.loops: dict[UOp, str] = {}
    self.ifs: dict[UOp, str] = {}
    self.names = itertools.count()
  def emit(self, line: str) -> None: self.body.append("  " + line)
  def label(self, lbl: str) -> None:
    self.body.append(f"{lbl}:")
    self.block = lbl
  def val(self, u: UOp, expr: str) -> str:
    """A new SSA value computed by `expr`, from now on u's name."""
    self.r[u] = name = f"%v{next(self.names)}"
    self.emit(f"{name} = {expr}")
    return name
  def guarded(self, gate: str, then: str, after: str, line: str) -> None:
    """`line` in a block of its own (`then`) that runs only where `gate` is true; the code goes on in block `after`."""
    self.emit(f"br i1 {gate}, label %{then}, label %{after}")
    self.label(then)
    self.emit(line)
    self.emit(f"br label %{after}")
    self.label(after)

class LLVMRenderer(Renderer):
  device = "LLVM"
  native_ops = GroupOp.ALU - {Ops.THREEFRY, Ops.POW, Ops.SIN, Ops.EXP2, Ops.LOG2}
  supported_dtypes = frozenset(LL_TYPES) - {dtypes.void}
  emulated_dtypes = frozenset({dtypes.bfloat16, *dtypes.fp8s})
  uop_conversions = frozenset(dtypes.fp8s)
  global_space, private_space = 0, 0  # LLVM address spaces of buffers and of accumulators (LDS is 3)
  kernel_cc = ""
  approx_ops: frozenset[Ops] = frozenset()  # rendered with `afn` (the hardware's approximation) on approx_dtypes
  approx_dtypes: frozenset[DType] = frozenset()
  def flags(self, op: Ops, dt: DType) -> str: return "afn " if op in self.approx_ops and dt in self.approx_dtypes else ""

  def addrspace(self, space: AddrSpace) -> int: return {AddrSpace.GLOBAL: self.global_space, AddrSpace.LOCAL: 3}.get(space, self.private_space)
  def ptype(self, dt: PtrDType) -> str:
    a = self.addrspace(dt.addrspace)
    return f"ptr addrspace({a})" if a else "ptr"

  def special(self, u: UOp) -> str:
    raise NotImplementedError(f"{type(self).__name__} has no GPU ids ({u.arg})")

  def render(self, uops: list[UOp], name: str = "kernel") -> str:
    """Each UOp in order through its rule (RULES: op -> how it becomes LLVM IR), then the function around the body. Subclasses
    change the hooks the rules call (special, barrier, wmma, preamble, attributes), not the rules."""
    f = Function()
    for i, u in enumerate(uops):
      if (rule := RULES.get(u.op)) is None: raise NotImplementedError(f"the LLVM IR renderer can't render {u.op}")
      rule(self, f, i, u, [f.r.get(x, "") for x in u.src])
    return self.function(f, uops, name)

  def function(self, f: Function, uops: list[UOp], name: str) -> str:
    """The module: target preamble, LDS globals, declarations, then the kernel with its buffer and variable arguments."""
    params, variables = kernel_args(uops)
    args = [f"{self.ptype(p.dtype)} noalias align 16 %data{p.arg}" for p in params] + [f"{ltype(v.dtype)} %{v.arg[0]}" for v in variables]  # type: ignore
    head = [*self.preamble(), *f.globals, *sorted(f.decls), ""]
    fn = [f"define {self.kernel_cc}void @{name}({', '.join(args)}) #0 {{", "entry:", *f.entry, *f.body, "  ret void", "}",
          f"attributes #0 = {{ {self.attributes(uops)} }}"]
    return "\n".join(head + fn) + "\n"

  # ***** rules: how each kind of UOp becomes LLVM IR (f: the function so far, i: the UOp's position, s: its sources' names) *****
  def define_reg(self, f: Function, i: int, u: UOp, s: list[str]) -> None:
    f.r[u] = f"%acc{i}"
    f.entry.append(f"  {f.r[u]} = alloca [{u.dtype.size} x {ltype(u.dtype.base)}], align 16{self.alloca_space()}")  # type: ignore

  def define_local(self, f: Function, i: int, u: UOp, s: list[str]) -> None:
    f.r[u] = f"@local{i}"
    f.globals.append(f"{f.r[u]} = internal addrspace(3) global [{u.dtype.size} x {ltype(u.dtype.base)}] undef, align 16")  # type: ignore

  def render_special(self, f: Function, i: int, u: UOp, s: list[str]) -> None:
    f.emit(f"%id{i} = {self.special(u)}")
    if u.dtype.itemsize > 4: f.val(u, f"zext i32 %id{i} to {ltype(u.dtype)}")
    else: f.r[u] = f"%id{i}"

  def render_range(self, f: Function, i: int, u: UOp, s: list[str]) -> None:
    """A loop: the header's phi counts from 0 while below the bound, the body follows; END adds the latch and the exit."""
    pred, f.r[u], f.loops[u] = f.block, f"%ridx{i}", f"{i}"
    f.emit(f"br label %loop{i}")
    f.label(f"loop{i}")
    f.emit(f"{f.r[u]} = phi {ltype(u.dtype)} [0, %{pred}], [%ridx{i}.next, %latch{i}]")
    f.emit(f"%ridx{i}.cond = icmp slt {ltype(u.dtype)} {f.r[u]}, {s[0]}")
    f.emit(f"br i1 %ridx{i}.cond, label %body{i}, label %exit{i}")
    f.label(f"body{i}")

  def render_end(self, f: Function, i: int, u: UOp, s: list[str]) -> None:
    rng = u.src[-1]
    n = f.loops[rng]
    f.emit(f"br label %latch{n}")
    f.label(f"latch{n}")
    f.emit(f"%ridx{n}.next = add {ltype(rng.dtype)} %ridx{n}, 1")
    f.emit(f"br label %loop{n}")
    f.label(f"exit{n}")

  def render_if(self, f: Function, i: int, u: UOp, s: list[str]) -> None:
    f.ifs[u] = f"{i}"
    f.emit(f"br i1 {s[0]}, label %if{i}, label %endif{i}")
    f.label(f"if{i}")

  def render_endif(self, f: Function, i: int, u: UOp, s: list[str]) -> None:
    n = f.ifs[u.src[0]]
    f.emit(f"br label %endif{n}")
    f.label(f"endif{n}")

  def render_index(self, f: Function, i: int, u: UOp, s: list[str]) -> None:
    p = u.src[0].dtype
    assert isinstance(p, PtrDType)
    f.val(u, f"getelementptr inbounds {ltype(p.base)}, {self.ptype(p)} {s[0]}, {ltype(u.src[1].dtype)} {s[1]}")

  def render_load(self, f: Function, i: int, u: UOp, s: list[str]) -> None:
    """A load; a gated one branches around it (a masked-off address is never touched) and is the alternative value there."""
    ptr, gate = self._addr(u.src[0], f.r)
    load = f"load {ltype(u.dtype)}, {ptr}, align {u.dtype.scalar().itemsize}"
    if gate is None:
      f.val(u, load)
      return
    pre = f.block
    f.guarded(gate, f"ld{i}", f"ldx{i}", f"%ldv{i} = {load}")
    f.val(u, f"phi {ltype(u.dtype)} [%ldv{i}, %ld{i}], [{s[1]}, %{pre}]")

  def render_store(self, f: Function, i: int, u: UOp, s: list[str]) -> None:
    ptr, gate = self._addr(u.src[0], f.r)
    store = f"store {ltype(u.src[1].dtype)} {s[1]}, {ptr}, align {u.src[1].dtype.scalar().itemsize}"
    if gate is None: f.emit(store)
    else: f.guarded(gate, f"st{i}", f"stx{i}", store)

  def render_vectorize(self, f: Function, i: int, u: UOp, s: list[str]) -> None:
    cur = "poison"
    for k, (x, sx) in enumerate(zip(u.src, s)): cur = f.val(u, f"insertelement {ltype(u.dtype)} {cur}, {ltype(x.dtype)} {sx}, i32 {k}")

  def render_gep(self, f: Function, i: int, u: UOp, s: list[str]) -> None:
    src_t = ltype(u.src[0].dtype)
    if len(u.arg) == 1: f.val(u, f"extractelement {src_t} {s[0]}, i32 {u.arg[0]}")
    else: f.val(u, f"shufflevector {src_t} {s[0]}, {src_t} poison, <{len(u.arg)} x i32> <{', '.join(f'i32 {k}' for k in u.arg)}>")

  def render_cast_uop(self, f: Function, i: int, u: UOp, s: list[str]) -> None:
    if isinstance(u.dtype, PtrDType): f.r[u] = s[0]  # opaque pointers: the load/store names the type
    else: f.val(u, self.render_cast(u.dtype, u.src[0].dtype, s[0]))

  def render_bitcast(self, f: Function, i: int, u: UOp, s: list[str]) -> None: f.val(u, f"bitcast {ltype(u.src[0].dtype)} {s[0]} to {ltype(u.dtype)}")
  def render_barrier(self, f: Function, i: int, u: UOp, s: list[str]) -> None: f.body.extend(f"  {line}" for line in self.barrier())
  def render_wmma(self, f: Function, i: int, u: UOp, s: list[str]) -> None: self.wmma(f, u, s)

  def _addr(self, addr: UOp, r: dict[UOp, str]) -> tuple[str, str | None]:
    idx = addr.src[0] if addr.op is Ops.CAST else addr
    p = idx.dtype
    assert isinstance(p, PtrDType)
    return f"{self.ptype(p)} {r[addr]}", (None if addr.gate is None else r[addr.gate])

  def alloca_space(self) -> str: return f", addrspace({self.private_space})" if self.private_space else ""
  def preamble(self) -> list[str]: return []
  def barrier(self) -> list[str]: return []
  def attributes(self, uops: list[UOp]) -> str: return "nounwind"
  def wmma(self, f: Function, u: UOp, s: list[str]) -> None: raise NotImplementedError(f"{type(self).__name__} has no tensor cores")

  def render_cast(self, to: DType, frm: DType, x: str) -> str:
    ft, tt = ltype(frm), ltype(to)
    f, t = frm.scalar(), to.scalar()
    if t == dtypes.bool:
      zero = lconst(0, f) if to.count == 1 else "zeroinitializer"
      return f"fcmp une {ft} {x}, {zero}" if dtypes.is_float(f) else f"icmp ne {ft} {x}, {zero}"
    if dtypes.is_float(f) and dtypes.is_float(t):
      if f.itemsize == t.itemsize: raise NotImplementedError(f"cast {f} -> {t}: narrow floats convert through float32")
      return f"{'fpext' if t.itemsize > f.itemsize else 'fptrunc'} {ft} {x} to {tt}"
    if dtypes.is_float(f): return f"{'fptoui' if dtypes.is_unsigned(t) else 'fptosi'} {ft} {x} to {tt}"
    if dtypes.is_float(t): return f"{'uitofp' if dtypes.is_unsigned(f) or f == dtypes.bool else 'sitofp'} {ft} {x} to {tt}"
    if f.itemsize == t.itemsize and f != dtypes.bool: return f"bitcast {ft} {x} to {tt}"
    if t.itemsize < f.itemsize: return f"trunc {ft} {x} to {tt}"
    return f"{'zext' if dtypes.is_unsigned(f) or f == dtypes.bool else 'sext'} {ft} {x} to {tt}"

  def render_alu(self, f: Function, i: int, u: UOp, s: list[str]) -> None:
    val, decls = f.val, f.decls
    dt = u.src[0].dtype if u.op in GroupOp.Comparison else u.dtype
    t, sc = ltype(dt), dt.scalar()
    isf = dtypes.is_float(sc)
    if isf and u.op in FLOAT_OPS: val(u, f"{FLOAT_OPS[u.op]} {t} {s[0]}, {s[1]}")
    elif not isf and u.op in INT_OPS: val(u, f"{INT_OPS[u.op]} {t} {s[0]}, {s[1]}")
    elif u.op is Ops.SHR: val(u, f"{'lshr' if dtypes.is_unsigned(sc) else 'ashr'} {t} {s[0]}, {s[1]}")
    elif u.op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ):
      if isf: val(u, f"fcmp {({Ops.CMPLT: 'olt', Ops.CMPNE: 'une', Ops.CMPEQ: 'oeq'})[u.op]} {t} {s[0]}, {s[1]}")
      else:
        lt = "ult" if dtypes.is_unsigned(sc) or sc == dtypes.bool else "slt"
        val(u, f"icmp {({Ops.CMPLT: lt, Ops.CMPNE: 'ne', Ops.CMPEQ: 'eq'})[u.op]} {t} {s[0]}, {s[1]}")
    elif u.op is Ops.WHERE: val(u, f"select {ltype(u.src[0].dtype)} {s[0]}, {t} {s[1]}, {t} {s[2]}")
    elif u.op is Ops.NEG:
      if sc == dtypes.bool: val(u, f"xor {t} {s[0]}, {self._splat(u.dtype, 'true')}")
      else: val(u, f"fneg {t} {s[0]}" if isf else f"sub {t} {self._splat(u.dtype, '0')}, {s[0]}")
    elif u.op is Ops.RECIPROCAL: val(u, f"fdiv {self.flags(u.op, sc)}{t} {self._splat(u.dtype, lconst(1.0, sc))}, {s[0]}")
    elif u.op is Ops.MAX:
      if isf:
        a = val(u, f"fcmp ogt {t} {s[0]}, {s[1]}")
        b = val(u, f"fcmp uno {t} {s[0]}, {s[0]}")
        c = val(u, f"or {ltype(dtypes.bool.vec(dt.count))} {a}, {b}")
      else: c = val(u, f"icmp {'ugt' if dtypes.is_unsigned(sc) or sc == dtypes.bool else 'sgt'} {t} {s[0]}, {s[1]}")  # (i1 signed: true < false)
      val(u, f"select {ltype(dtypes.bool.vec(dt.count))} {c}, {t} {s[0]}, {t} {s[1]}")
    elif u.op in (Ops.IDIV, Ops.MOD): self._divmod(f, u, s, t)
    elif u.op in INTRINSICS and isf:
      fn, flags = INTRINSICS[u.op], self.flags(u.op, sc)
      suffix = f"v{dt.count}f{sc.itemsize * 8}" if dt.count > 1 else {dtypes.float16: "f16", dtypes.bfloat16: "bf16", dtypes.float32: "f32",
                                                                      dtypes.float64: "f64"}[sc]
      decls.add(f"declare {t} @llvm.{fn}.{suffix}({', '.join([t] * len(s))})")
      val(u, f"call {flags}{t} @llvm.{fn}.{suffix}({', '.join(f'{t} {x}' for x in s)})")
    else: raise NotImplementedError(f"the LLVM IR renderer has no rule for {u.op} on {dt}")

  def _divmod(self, f: Function, u: UOp, s: list[str], t: str) -> None:
    """C division (toward zero) with the C renderer's rules for x/0 (0) and INT_MIN/-1 (wraps), which LLVM leaves undefined."""
    val = f.val
    dt = u.dtype
    uns = dtypes.is_unsigned(dt.scalar())
    op = ("udiv" if uns else "sdiv") if u.op is Ops.IDIV else ("urem" if uns else "srem")
    if u.src[1].op is Ops.CONST and u.src[1].arg not in (0, -1): return val(u, f"{op} {t} {s[0]}, {s[1]}")
    b = ltype(dtypes.bool.vec(dt.count))
    zero, one = self._splat(dt, "0"), self._splat(dt, "1")
    isz = val(u, f"icmp eq {t} {s[1]}, {zero}")
    bad = isz if uns else val(u, f"or {b} {isz}, {val(u, f'icmp eq {t} {s[1]}, {self._splat(dt, str(-1))}')}")
    d = val(u, f"select {b} {bad}, {t} {one}, {t} {s[1]}")
    q = val(u, f"{op} {t} {s[0]}, {d}")  # x/1 = x and x%1 = 0 are the -1 results up to sign
    if not uns and u.op is Ops.IDIV:
      neg = val(u, f"sub {t} {zero}, {q}")
      q = val(u, f"select {b} {bad}, {t} {neg}, {t} {q}")
    val(u, f"select {b} {isz}, {t} {zero}, {t} {q}")

  def _splat(self, dt: DType, x: str) -> str:
    if dt.count == 1: return x
    return f"<{', '.join(f'{ltype(dt.scalar())} {x}' for _ in range(dt.count))}>"

def _name(text: Callable[[UOp, list[str]], str]) -> Callable:
  """A rule for a UOp that is a name or a literal, not an instruction."""
  def rule(ren: LLVMRenderer, f: Function, i: int, u: UOp, s: list[str]) -> None: f.r[u] = text(u, s)
  return rule

def _nothing(ren: LLVMRenderer, f: Function, i: int, u: UOp, s: list[str]) -> None: pass

RULES: dict[Ops, Callable[[LLVMRenderer, Function, int, UOp, list[str]], None]] = {
  Ops.PARAM: _name(lambda u, s: f"%data{u.arg}"), Ops.DEFINE_VAR: _name(lambda u, s: f"%{u.arg[0]}"),
  Ops.CONST: _name(lambda u, s: lconst(u.arg, u.dtype)), Ops.AFTER: _name(lambda u, s: s[0]),
  Ops.VCONST: _name(lambda u, s: f"<{', '.join(f'{ltype(u.dtype.scalar())} {lconst(x, u.dtype.scalar())}' for x in u.arg)}>"),
  Ops.DEFINE_REG: LLVMRenderer.define_reg, Ops.DEFINE_LOCAL: LLVMRenderer.define_local, Ops.SPECIAL: LLVMRenderer.render_special,
  Ops.RANGE: LLVMRenderer.render_range, Ops.END: LLVMRenderer.render_end, Ops.IF: LLVMRenderer.render_if, Ops.ENDIF: LLVMRenderer.render_endif,
  Ops.INDEX: LLVMRenderer.render_index, Ops.LOAD: LLVMRenderer.render_load, Ops.STORE: LLVMRenderer.render_store,
  Ops.VECTORIZE: LLVMRenderer.render_vectorize, Ops.GEP: LLVMRenderer.render_gep, Ops.CAST: LLVMRenderer.render_cast_uop,
  Ops.BITCAST: LLVMRenderer.render_bitcast,
  Ops.BARRIER: LLVMRenderer.render_barrier, Ops.WMMA: LLVMRenderer.render_wmma, Ops.NOOP: _nothing, Ops.SINK: _nothing, Ops.GROUP: _nothing,
  **{op: LLVMRenderer.render_alu for op in GroupOp.ALU},
}

# WMMA's register layouts (tg.amd_emu.wmma says the same for the emulator): RDNA3 (gfx11) repeats A and B in both half-waves
# and interleaves D's rows between them, RDNA4 (gfx12) splits K and D's rows between the half-waves
WMMA = {"gfx11": dict(elements=16, k_half=0, row_stride=2, half_row=1), "gfx12": dict(elements=8, k_half=8, row_stride=1, half_row=8)}

class AMDGPURenderer(LLVMRenderer):
  """amdgcn-amd-amdhsa for a gfx target: SPECIAL gidx/lidx are llvm.amdgcn.workgroup.id/workitem.id; on gfx11 and gfx12
  half and bfloat16 matmuls can run on WMMA (the TC opt), accumulating in float32."""
  has_local, has_shared = True, True
  global_max, local_max, shared_max = (2**31 - 1, 65535, 65535), (1024, 1024, 1024), 65536
  global_space, private_space = 1, 5
  kernel_cc = "amdgpu_kernel "
  index32 = True
  native_ops = LLVMRenderer.native_ops | {Ops.EXP2, Ops.LOG2}
  approx_ops, approx_dtypes = frozenset({Ops.EXP2, Ops.LOG2, Ops.SQRT, Ops.RECIPROCAL}), frozenset({dtypes.float32, dtypes.float16})
  def native_for(self, op: Ops, dtype: DType) -> bool:
    return op in self.native_ops and (op not in (Ops.EXP2, Ops.LOG2) or dtype in self.approx_dtypes)
  def __init__(self, arch: str = "gfx1100", device: str = "AMD"):
    self.arch, self.device = arch, device
    self.tensor_cores = tuple(TensorCore(d, dtypes.float32, **WMMA[arch[:5]]) for d in (dtypes.float16, dtypes.bfloat16)) if arch[:5] in WMMA else ()
  def __reduce__(self) -> tuple: return (type(self), (self.arch, self.device))
  def preamble(self) -> list[str]:
    return ['target triple = "amdgcn-amd-amdhsa"',
            'target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128-p9:192:256:256:32'
            '-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"',
            *(f"declare i32 @llvm.amdgcn.{k}.id.{d}()" for k in ("workgroup", "workitem") for d in "xyz"),
            "declare void @llvm.amdgcn.s.barrier()"]
  def special(self, u: UOp) -> str:
    kind = "workgroup" if u.arg.startswith("gidx") else "workitem"
    return f"call i32 @llvm.amdgcn.{kind}.id.{'xyz'[int(u.arg[-1])]}()"
  def wmma(self, f: Function, u: UOp, s: list[str]) -> None:
    """llvm.amdgcn.wmma.f32.16x16x16.{f16,bf16} (wave32); bfloat16 operands go as i16 vectors. An empty asm statement that uses
    the result pins the instruction where it is: LLVM 19 doesn't mark WMMA convergent, so its machine sinking moves one whose
    result only gated stores read into their branch, where some lanes are off (WMMA needs all 32; fixed in later LLVM:
    llvm-project#165602)."""
    tc: TensorCore = u.arg
    fmt, e = ("f16", "half") if tc.dtype_in == dtypes.float16 else ("bf16", "i16"), tc.elements
    ab, cd = f"<{e} x {fmt[1]}>", ltype(u.dtype)
    a, b = (x if fmt[0] == "f16" else f.val(u, f"bitcast {ltype(src.dtype)} {x} to {ab}") for x, src in zip(s[:2], u.src))
    fn = f"@llvm.amdgcn.wmma.f32.16x16x16.{fmt[0]}.v{tc.slots}f32.v{e}{'f16' if fmt[0] == 'f16' else 'i16'}"
    f.decls.add(f"declare {cd} {fn}({ab}, {ab}, {cd})")
    d = f.val(u, f"call {cd} {fn}({ab} {a}, {ab} {b}, {cd} {s[2]})")
    f.emit(f'call void asm sideeffect "", "v"({cd} {d})')
  def barrier(self) -> list[str]:
    return ['fence syncscope("workgroup") release', "call void @llvm.amdgcn.s.barrier()", 'fence syncscope("workgroup") acquire']
  def attributes(self, uops: list[UOp]) -> str:
    threads = 1
    for u in uops:
      if u.op is Ops.SPECIAL and u.arg.startswith("lidx"): threads *= u.src[0].arg
    return f'nounwind "amdgpu-flat-work-group-size"="1,{max(threads, 1)}" "target-cpu"="{self.arch}"'
