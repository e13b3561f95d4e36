"""LLVM IR renderer: the linear program as one LLVM function, SSA values and basic blocks.

`LLVMRenderer` targets the host (a plain function taking buffer pointers); `AMDGPURenderer` targets
`amdgcn-amd-amdhsa`: an `amdgpu_kernel` whose buffers live in the global address space (1), workgroup-shared memory
in LDS (3) and accumulators in private memory (5); SPECIAL ids are workgroup/workitem ids. Loops are a header block
with a phi, a body and a latch; gated loads and stores branch around the access so a masked-off address is never
touched. Arithmetic is IEEE exact (no fast-math flags) except where the result is the same: MULACC is llvm.fma (the
CPU device fuses it too). On AMD, float32/float16 exp2, log2, sqrt and reciprocal are the hardware's instructions
(v_exp_f32, v_log_f32, v_sqrt_f32, v_rcp_f32 and their f16 forms, through LLVM's `afn`), with their documented accuracy
of 1 ulp (LLVM still scales float32 denormals around v_exp/v_log, so those are right too); float64 stays exact (sqrt,
division) or polynomial (exp2, log2), as no instruction exists for it."""
from __future__ import annotations
import itertools, math, struct
from tg.uop import UOp, Ops, DType, PtrDType, AddrSpace, dtypes, GroupOp
from tg.codegen.renderer import Renderer, TensorCore
from tg.codegen.program import kernel_args

LL_TYPES = {dtypes.bool: "i1", dtypes.int8: "i8", dtypes.uint8: "i8", dtypes.int16: "i16", dtypes.uint16: "i16", dtypes.int32: "i32",
            dtypes.uint32: "i32", dtypes.int64: "i64", dtypes.uint64: "i64", dtypes.index: "i64", dtypes.float16: "half",
            dtypes.bfloat16: "bfloat", dtypes.float32: "float", dtypes.float64: "double", dtypes.void: "void"}
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
  if dt == dtypes.bfloat16:
    bits = struct.unpack("<I", struct.pack("<f", f))[0]
    return f"0xR{0x7FC0 if math.isnan(f) else (bits + 0x7FFF + (bits >> 16 & 1)) >> 16:04X}"
  if dt == dtypes.float32 and not math.isnan(f): f = struct.unpack("<f", struct.pack("<f", f))[0]  # exactly representable
  return f"0x{struct.unpack('<Q', struct.pack('<d', f))[0]:016X}"

class LLVMRenderer(Renderer):
  device = "LLVM"
  native_ops = GroupOp.ALU - {Ops.THREEFRY, Ops.POW, Ops.SIN, Ops.EXP2, Ops.LOG2}
  supported_dtypes = frozenset(LL_TYPES) - {dtypes.void}
  emulated_dtypes = frozenset({dtypes.bfloat16})
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
    r: dict[UOp, str] = {}
    body: list[str] = []
    entry: list[str] = []
    globals_: list[str] = []
    decls: set[str] = set()
    block = ["entry"]  # the current basic block's label
    loops: dict[UOp, str] = {}
    ifs: dict[UOp, str] = {}
    names = itertools.count()
    def new() -> str: return f"%v{next(names)}"
    def emit(s: str) -> None: body.append("  " + s)
    def label(lbl: str) -> None: body.append(f"{lbl}:"); block[0] = lbl
    def val(u: UOp, expr: str) -> str:
      r[u] = new()
      emit(f"{r[u]} = {expr}")
      return r[u]
    for i, u in enumerate(uops):
      s = [r.get(x, "") for x in u.src]
      if u.op is Ops.PARAM: r[u] = f"%data{u.arg}"
      elif u.op is Ops.DEFINE_VAR: r[u] = f"%{u.arg[0]}"
      elif u.op is Ops.CONST: r[u] = lconst(u.arg, u.dtype)
      elif u.op is Ops.VCONST:
        r[u] = f"<{', '.join(f'{ltype(u.dtype.scalar())} {lconst(x, u.dtype.scalar())}' for x in u.arg)}>"
      elif u.op is Ops.DEFINE_REG:
        r[u] = f"%acc{i}"
        entry.append(f"  {r[u]} = alloca [{u.dtype.size} x {ltype(u.dtype.base)}], align 16{self.alloca_space()}")  # type: ignore
      elif u.op is Ops.DEFINE_LOCAL:
        r[u] = f"@local{i}"
        globals_.append(f"{r[u]} = internal addrspace(3) global [{u.dtype.size} x {ltype(u.dtype.base)}] undef, align 16")  # type: ignore
      elif u.op is Ops.SPECIAL:
        emit(f"%id{i} = {self.special(u)}")
        if u.dtype.itemsize > 4: val(u, f"zext i32 %id{i} to {ltype(u.dtype)}")
        else: r[u] = f"%id{i}"
      elif u.op is Ops.RANGE:
        n = f"{i}"
        pred, r[u] = block[0], f"%ridx{n}"
        emit(f"br label %loop{n}")
        label(f"loop{n}")
        emit(f"{r[u]} = phi {ltype(u.dtype)} [0, %{pred}], [%ridx{n}.next, %latch{n}]")
        emit(f"%ridx{n}.cond = icmp slt {ltype(u.dtype)} {r[u]}, {s[0]}")
        emit(f"br i1 %ridx{n}.cond, label %body{n}, label %exit{n}")
        label(f"body{n}")
        loops[u] = n
      elif u.op is Ops.END:
        rng = u.src[-1]
        n = loops[rng]
        emit(f"br label %latch{n}")
        label(f"latch{n}")
        emit(f"%ridx{n}.next = add {ltype(rng.dtype)} %ridx{n}, 1")
        emit(f"br label %loop{n}")
        label(f"exit{n}")
      elif u.op is Ops.IF:
        ifs[u] = f"{i}"
        emit(f"br i1 {s[0]}, label %if{i}, label %endif{i}")
        label(f"if{i}")
      elif u.op is Ops.ENDIF:
        n = ifs[u.src[0]]
        emit(f"br label %endif{n}")
        label(f"endif{n}")
      elif u.op is Ops.AFTER: r[u] = s[0]
      elif u.op is Ops.INDEX:
        p = u.src[0].dtype
        assert isinstance(p, PtrDType)
        val(u, f"getelementptr inbounds {ltype(p.base)}, {self.ptype(p)} {s[0]}, {ltype(u.src[1].dtype)} {s[1]}")
      elif u.op is Ops.CAST and isinstance(u.dtype, PtrDType): r[u] = s[0]  # opaque pointers: the load/store names the type
      elif u.op is Ops.LOAD:
        ptr, gate = self._addr(u.src[0], r)
        load = f"load {ltype(u.dtype)}, {ptr}, align {u.dtype.scalar().itemsize}"
        if gate is None: val(u, load)
        else:
          pre = block[0]
          emit(f"br i1 {gate}, label %ld{i}, label %ldx{i}")
          label(f"ld{i}")
          emit(f"%ldv{i} = {load}")
          emit(f"br label %ldx{i}")
          label(f"ldx{i}")
          val(u, f"phi {ltype(u.dtype)} [%ldv{i}, %ld{i}], [{s[1]}, %{pre}]")
      elif u.op is Ops.STORE:
        ptr, gate = self._addr(u.src[0], r)
        store = f"store {ltype(u.src[1].dtype)} {s[1]}, {ptr}, align {u.src[1].dtype.scalar().itemsize}"
        if gate is None: emit(store)
        else:
          emit(f"br i1 {gate}, label %st{i}, label %stx{i}")
          label(f"st{i}")
          emit(store)
          emit(f"br label %stx{i}")
          label(f"stx{i}")
      elif u.op is Ops.VECTORIZE:
        cur = "poison"
        for k, (x, sx) in enumerate(zip(u.src, s)):
          r[u] = new()
          emit(f"{r[u]} = insertelement {ltype(u.dtype)} {cur}, {ltype(x.dtype)} {sx}, i32 {k}")
          cur = r[u]
      elif u.op is Ops.GEP:
        src_t = ltype(u.src[0].dtype)
        if len(u.arg) == 1: val(u, f"extractelement {src_t} {s[0]}, i32 {u.arg[0]}")
        else: val(u, f"shufflevector {src_t} {s[0]}, {src_t} poison, <{len(u.arg)} x i32> <{', '.join(f'i32 {k}' for k in u.arg)}>")
      elif u.op is Ops.CAST: val(u, self.render_cast(u.dtype, u.src[0].dtype, s[0]))
      elif u.op is Ops.BITCAST: val(u, f"bitcast {ltype(u.src[0].dtype)} {s[0]} to {ltype(u.dtype)}")
      elif u.op in GroupOp.ALU: self.render_alu(u, s, val, decls)
      elif u.op is Ops.WMMA: val(u, self.wmma(u, s, val, decls))
      elif u.op is Ops.BARRIER: body.extend(f"  {line}" for line in self.barrier())
      elif u.op in (Ops.NOOP, Ops.SINK, Ops.GROUP): pass
      else: raise NotImplementedError(f"the LLVM IR renderer can't render {u.op}")
    params, variables = kernel_args(uops)
    args = [f"{self.ptype(p.dtype)} noalias align 16 %data{p.arg}" for p in params] + [f"{ltype(v.dtype)} %{v.arg[0]}" for v in variables]  # type: ignore
    head = [*self.preamble(), *globals_, *sorted(decls), ""]
    fn = [f"define {self.kernel_cc}void @{name}({', '.join(args)}) #0 {{", "entry:", *entry, *body, "  ret void", "}",
          f"attributes #0 = {{ {self.attributes(uops)} }}"]
    return "\n".join(head + fn) + "\n"

  def _addr(self, addr: UOp, r: dict[UOp, str]) -> tuple[str, str | None]:
    idx = addr.src[0] if addr.op is Ops.CAST else addr
    p = idx.dtype
    assert isinstance(p, PtrDType)
    return f"{self.ptype(p)} {r[addr]}", (None if addr.gate is None else r[addr.gate])

  def alloca_space(self) -> str: return f", addrspace({self.private_space})" if self.private_space else ""
  def preamble(self) -> list[str]: return []
  def barrier(self) -> list[str]: return []
  def attributes(self, uops: list[UOp]) -> str: return "nounwind"
  def wmma(self, u: UOp, s: list[str], val, decls: set[str]) -> str: raise NotImplementedError(f"{type(self).__name__} has no tensor cores")

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

  def render_alu(self, u: UOp, s: list[str], val, decls: set[str]) -> None:
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
      else: c = val(u, f"icmp {'ugt' if dtypes.is_unsigned(sc) else 'sgt'} {t} {s[0]}, {s[1]}")
      val(u, f"select {ltype(dtypes.bool.vec(dt.count))} {c}, {t} {s[0]}, {t} {s[1]}")
    elif u.op in (Ops.IDIV, Ops.MOD): self._divmod(u, s, t, val)
    elif u.op in INTRINSICS and isf:
      fn, flags = INTRINSICS[u.op], self.flags(u.op, sc)
      suffix = f"v{dt.count}f{sc.itemsize * 8}" if dt.count > 1 else {dtypes.float16: "f16", dtypes.bfloat16: "bf16", dtypes.float32: "f32",
                                                                      dtypes.float64: "f64"}[sc]
      decls.add(f"declare {t} @llvm.{fn}.{suffix}({', '.join([t] * len(s))})")
      val(u, f"call {flags}{t} @llvm.{fn}.{suffix}({', '.join(f'{t} {x}' for x in s)})")
    else: raise NotImplementedError(f"the LLVM IR renderer has no rule for {u.op} on {dt}")

  def _divmod(self, u: UOp, s: list[str], t: str, val) -> None:
    """C division (toward zero) with the C renderer's rules for x/0 (0) and INT_MIN/-1 (wraps), which LLVM leaves undefined."""
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
  def wmma(self, u: UOp, s: list[str], val, decls: set[str]) -> str:
    """llvm.amdgcn.wmma.f32.16x16x16.{f16,bf16} (wave32); bfloat16 operands go as i16 vectors."""
    tc: TensorCore = u.arg
    fmt, e = ("f16", "half") if tc.dtype_in == dtypes.float16 else ("bf16", "i16"), tc.elements
    ab, cd = f"<{e} x {fmt[1]}>", ltype(u.dtype)
    a, b = (x if fmt[0] == "f16" else val(u, f"bitcast {ltype(src.dtype)} {x} to {ab}") for x, src in zip(s[:2], u.src))
    fn = f"@llvm.amdgcn.wmma.f32.16x16x16.{fmt[0]}.v{tc.slots}f32.v{e}{'f16' if fmt[0] == 'f16' else 'i16'}"
    decls.add(f"declare {cd} {fn}({ab}, {ab}, {cd})")
    return f"call {cd} {fn}({ab} {a}, {ab} {b}, {cd} {s[2]})"
  def barrier(self) -> list[str]:
    return ['fence syncscope("workgroup") release', "call void @llvm.amdgcn.s.barrier()", 'fence syncscope("workgroup") acquire']
  def attributes(self, uops: list[UOp]) -> str:
    threads = 1
    for u in uops:
      if u.op is Ops.SPECIAL and u.arg.startswith("lidx"): threads *= u.src[0].arg
    return f'nounwind "amdgpu-flat-work-group-size"="1,{max(threads, 1)}" "target-cpu"="{self.arch}"'
