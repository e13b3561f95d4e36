"""From kernel AST to running program: `get_program(ast, renderer)` and `CompiledRunner(spec)(buffers, var_vals)`.

The lowering is a fixed sequence of passes, each one graph_rewrite of a PatternMatcher:
flatten buffers -> simplify -> optimize (opts) -> expand UPCAST/UNROLL -> split shared reduce ranges -> lower REDUCE -> merge ENDs -> GPU dims
-> add loads -> devectorize -> decompose -> linearize -> prefetch (CPU: accesses that stride pages) -> render."""
from __future__ import annotations
import functools, math, re
from typing import Any
from tg.uop import UOp, Ops, KernelInfo, PatternMatcher, graph_rewrite, track, type_verify, kernel_spec, program_spec, SPEC, DEBUG, symbolic, dtypes
from tg.codegen.program import ProgramSpec, estimate
from tg.codegen.renderer import Renderer
from tg.codegen.lower.flatten import pm_flatten
from tg.codegen.lower.expander import pm_expand
from tg.codegen.lower.reduce import pm_reduce, pm_merge_ends, ReduceContext, split_shared_ranges
from tg.codegen.lower.gpudims import add_gpudims, launch_size
from tg.codegen.lower.devectorize import pm_add_loads, pm_devectorize, pm_push_gep
from tg.codegen.lower.decompositions import pm_decompose, pm_narrow_floats, pm_fast_idiv, fuse_mulaccs
from tg.codegen.lower.transcendental import pm_transcendental
from tg.codegen.lower.index32 import pm_index32
from tg.codegen.lower.linearize import linearize
from tg.codegen.lower.prefetch import add_prefetches
from tg.codegen.opt.kernel import Opt, KernelOptError, apply_opts
from tg.codegen.opt.search import choose_opts
from tg.codegen.device import Buffer, Device

def kernel_info(ast: UOp) -> KernelInfo: return ast.arg if isinstance(ast.arg, KernelInfo) else KernelInfo()

def optimize(ast: UOp, renderer: Renderer, opts: tuple[Opt, ...] | list[Opt] | None = None) -> UOp:
  """Apply `opts`, or KernelInfo.opts_to_apply when given (exactly those), or the optimizer's choice (BEAM or heuristics)."""
  if opts is None: opts = kernel_info(ast).opts_to_apply
  if opts is not None: return apply_opts(ast, opts, renderer)
  return choose_opts(ast, renderer, lambda k: time_kernel(k, renderer))

def lower(ast: UOp, renderer: Renderer, opts: tuple[Opt, ...] | list[Opt] | None = None) -> UOp:
  """The kernel AST, optimized and lowered to the graph the linearizer orders."""
  if SPEC: type_verify(ast, kernel_spec)
  ast = graph_rewrite(ast, pm_flatten, name="flatten")
  ast = graph_rewrite(ast, symbolic, name="simplify")
  ast = optimize(ast, renderer, opts)
  return lower_optimized(ast, renderer)

@functools.cache
def _late_rewrites(narrow_floats: bool, native_idiv: bool) -> PatternMatcher:
  """The decompositions, transcendentals and symbolic rules a renderer needs, as one matcher built once: a sum of
  matchers is a new one, and compiling it cost 20 ms a kernel (2.8 s of a GPT's first step)."""
  return pm_decompose + pm_transcendental + symbolic + (pm_narrow_floats if narrow_floats else PatternMatcher([])) + \
    (PatternMatcher([]) if native_idiv else pm_fast_idiv)

def lower_optimized(ast: UOp, renderer: Renderer) -> UOp:
  ast = graph_rewrite(ast, pm_expand, name="expand")
  ast = split_shared_ranges(ast)
  ast = graph_rewrite(ast, pm_reduce, ctx=ReduceContext(ast), name="reduce")
  ast = graph_rewrite(ast, pm_merge_ends, name="merge ends")
  ast = add_gpudims(ast, renderer)
  ast = graph_rewrite(ast, pm_add_loads, name="add loads")
  ast = graph_rewrite(ast, pm_push_gep, name="push geps")
  ast = graph_rewrite(ast, pm_devectorize, ctx=renderer, name="devectorize")
  late = _late_rewrites(bool(renderer.emulated_dtypes), Ops.IDIV in renderer.native_ops)
  ast = fuse_mulaccs(graph_rewrite(ast, late, ctx=renderer, name="decompose"), renderer)
  return graph_rewrite(ast, pm_index32, name="index32") if renderer.index32 else ast

def get_program(ast: UOp, renderer: Renderer, opts: tuple[Opt, ...] | list[Opt] | None = None) -> ProgramSpec:
  """Optimize, lower, linearize and render a kernel AST (a SINK) for a device's renderer."""
  if ast.op is not Ops.SINK: raise TypeError(f"get_program takes a kernel SINK, got {ast.op}")
  with track.group("kernel", kernel_info(ast).name or "kernel") as g:
    p = _get_program(ast, renderer, opts)
    if g is not None: g.name, g.info = p.name, {"device": p.device, "source": p.src, "opts": [str(o) for o in p.applied_opts]}
  return p

def _get_program(ast: UOp, renderer: Renderer, opts: tuple[Opt, ...] | list[Opt] | None) -> ProgramSpec:
  lowered = lower(ast, renderer, opts)
  uops = linearize(lowered)
  if renderer.prefetch is not None: uops = add_prefetches(uops, *renderer.prefetch)
  # a buffer whose every read folded away (a fully masked pad, tril(-n)) stays a parameter: the caller passes them all
  present = {u.arg for u in uops if u.op is Ops.PARAM}
  uops = sorted((u for u in ast.toposort() if u.op is Ops.PARAM and u.arg not in present), key=lambda u: u.arg) + uops
  if SPEC: type_verify(uops, program_spec)
  if renderer.supported_dtypes is not None:
    for u in uops:
      if (dt := u.dtype.base.scalar()) != dtypes.void and dt not in renderer.supported_dtypes:
        raise TypeError(f"{type(renderer).__name__} ({renderer.device}) doesn't support {dt} (in {u.op}); supported: "
                        f"{sorted(d.name for d in renderer.supported_dtypes)}")
  name = re.sub(r"\W", "_", kernel_info(lowered).name) or "kernel"
  src = renderer.render(uops, name)
  if DEBUG >= 4: print(src)
  if renderer.global_max is not None: gsz, lsz = launch_size(uops, "gidx"), launch_size(uops, "lidx")
  else: gsz, lsz = ((renderer.threads_for(uops),) if renderer.has_threads else (1,)) + (1, 1), (1, 1, 1)
  flops, mem = estimate(uops)
  return ProgramSpec(name, src, renderer.device, uops, gsz, lsz, flops, mem, kernel_info(lowered).applied_opts, ast)  # type: ignore[arg-type]

class CompiledRunner:
  """A ProgramSpec compiled for its device; call it with the buffers in slot order and the variables' values."""
  def __init__(self, p: ProgramSpec, lib: bytes | None = None):
    self.p, self.dev = p, Device[p.device]
    self.lib = lib if lib is not None else self.dev.compiler.compile_cached(p.src)
    self._prg = self.dev.runtime(p.name, self.lib)
  def __reduce__(self) -> tuple: return (CompiledRunner, (self.p, self.lib))  # the binary, loaded again (a TinyJit pickles them)
  def __call__(self, bufs: list[Any], var_vals: dict[str, int] | None = None, wait: bool = False) -> float | None:
    if len(bufs) != len(self.p.buffers): raise ValueError(f"{self.p.name} takes {len(self.p.buffers)} buffers, got {len(bufs)}")
    vals: tuple[int, ...] = ()
    if self.p.vars:
      var_vals = var_vals or {}
      missing = [v.arg[0] for v in self.p.vars if v.arg[0] not in var_vals]
      if missing: raise RuntimeError(f"unbound variable(s) {missing} used by {self.p.name}: give values (v.bind(value))")
      vals = tuple(var_vals[v.arg[0]] for v in self.p.vars)
    return self._prg(*[b.ensure_allocated()._buf for b in bufs], global_size=self.p.global_size, local_size=self.p.local_size, vals=vals,
                     wait=wait)

def time_kernel(k: UOp, ren: Renderer, runs: int = 3) -> float:
  """Best wall time of a few runs of the lowered kernel on random-free scratch buffers. A candidate that fails to lower,
  compile or run scores inf, and DEBUG>=2 says which and why (a failing opt is a bug to see, not a slow kernel)."""
  try:
    p = get_program(k, ren, opts=())
    bufs = [Buffer(ren.device, max(b.dtype.size, 1), b.dtype.base).allocate() for b in p.buffers]  # type: ignore[union-attr]
    var_vals = {v.arg[0]: v.arg[2] for v in p.vars}
    runner = CompiledRunner(p)
    return min(runner(bufs, var_vals, wait=True) or math.inf for _ in range(runs))
  except (KernelOptError, NotImplementedError, RuntimeError, ValueError, TypeError) as e:
    if DEBUG >= 2: print(f"BEAM candidate {getattr(k.arg, 'applied_opts', ())} failed: {type(e).__name__}: {(str(e) or '-').splitlines()[0]}")
    return math.inf
