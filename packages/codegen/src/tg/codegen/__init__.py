"""tg.codegen: kernel ASTs (UOp graphs) to running programs.

`get_program(ast, Device["CPU"].renderer)` optimizes (opts by heuristics or BEAM), lowers (a fixed sequence of
rewrite passes in tg.codegen.lower), linearizes and renders a kernel; `CompiledRunner(spec)(buffers, var_vals)`
compiles it (with an on-disk cache) and runs it. Other packages build C through `render_c_function` (a final-form UOp graph
as one named C function), `compile_c` (C source to a shared object at a chosen -O level) and `CLibrary` (loaded, its
functions and their addresses), and cache through `diskcache_get`/`diskcache_put`; `matmul_panel` gives the B panel width a
CPU matmul reads (tg.tensor packs B to it), `vecmat_block` the rows of B a CPU x @ B sums at a time. Devices: CPU (C
through clang/gcc, threads), PYTHON (an interpreter of the linear program: the reference semantics) and NULL (compiles nothing, runs nothing)."""
from tg.codegen.device import Buffer, Device, Allocator, Compiler, Compiled, GlobalCounters, CHECK_OOB, OutOfBoundsError
from tg.codegen.program import ProgramSpec
from tg.codegen.renderer import Renderer
from tg.codegen.pipeline import get_program, CompiledRunner
from tg.codegen.opt.kernel import Opt, OptOps, KernelOptError
from tg.codegen.diskcache import diskcache_get, diskcache_put
from tg.codegen.clib import CFunction, CFunctionError, render_c_function, compile_c, c_compiler_id, CLibrary
from tg.codegen.devices.clang import CompilerError
from tg.codegen import profile
from tg.codegen.opt.search import BEAM, NOOPT  # registered, so Context(BEAM=..., NOOPT=...) works before any kernel is built
from tg.codegen.lower.transcendental import TRANSCENDENTAL
from tg.codegen.opt.tc import USE_TC
from tg.codegen.opt.heuristic import matmul_panel, vecmat_block

__all__ = ["Buffer", "Device", "Allocator", "Compiler", "Compiled", "GlobalCounters", "ProgramSpec", "Renderer", "get_program", "CompiledRunner",
           "Opt", "OptOps", "KernelOptError", "BEAM", "NOOPT", "USE_TC", "CHECK_OOB", "TRANSCENDENTAL", "OutOfBoundsError",
           "matmul_panel", "vecmat_block",  # for tg.tensor's matmul: the B panel width to pack to, the x @ B row blocks
           # for other packages' C (the AMD emulator): see tg.codegen.clib
           "CFunction", "CFunctionError", "render_c_function", "compile_c", "c_compiler_id", "CLibrary", "CompilerError",
           "diskcache_get", "diskcache_put", "profile"]
