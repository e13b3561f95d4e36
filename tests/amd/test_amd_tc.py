"""Tensor cores: half and bfloat16 matmuls (and convs) run on WMMA (v_wmma_f32_16x16x16_f16/bf16, wave32) on both virtual
GPUs (gfx1100's and gfx1200's register layouts differ), chosen by the heuristics as the TC opt, products summed in float32.
Each result is checked against numpy's float64 matmul of the same (rounded) inputs, within one unit in the last place of
the output dtype; LLVM's disassembler confirms the instruction. As in tinygrad, WMMA's products are exact where the plain
kernel rounds each product to half first (x * y in half, summed in float32). Axes that aren't whole tiles are padded (m, n) or the opt
is not applied (k)."""
import numpy as np
import pytest
from amd_code import disassemble
from tg.codegen.device import Device
from tg.codegen.opt.kernel import KernelOptError, Opt, OptOps, apply_opt
from tg.codegen.opt.search import actions
from tg.codegen.pipeline import get_program
from tg.tensor import Tensor
from tg.codegen.lower.flatten import pm_flatten
from tg.uop import Context, Ops, dtypes, graph_rewrite, symbolic

ARCHS = pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])
DTYPES = pytest.mark.parametrize("dt", [dtypes.float16, dtypes.bfloat16], ids=["f16", "bf16"])
MANTISSA = {dtypes.float16: 10, dtypes.bfloat16: 7}

def kernel(t: Tensor):
  return [ei.ast for ei in t.schedule() if ei.ast.op is Ops.SINK][-1]

def flat(ast):
  """The kernel as the optimizer sees it (flattened, simplified)."""
  return graph_rewrite(graph_rewrite(ast, pm_flatten), symbolic)

def check(got: np.ndarray, want: np.ndarray, dt) -> None:
  """Within one ulp of the output dtype (half an ulp of rounding plus float32 sums in another order), 1e-3 near zero."""
  ulp = np.exp2(np.floor(np.log2(np.maximum(np.abs(want), 1e-30))) - MANTISSA[dt])
  assert (np.abs(got - want) <= ulp + 1e-3).all(), np.abs(got - want).max()

def operands(dev: str, dt, *shapes: tuple[int, ...]) -> list[tuple[Tensor, np.ndarray]]:
  """Random tensors of dtype dt and their float64 values, rounded in numpy (to half, or to bfloat16 by its bits: RNE), so the
  reference doesn't go through the GPU's own conversions."""
  rng = np.random.default_rng(sum(map(sum, shapes)))
  out = []
  for s in shapes:
    x = rng.standard_normal(s).astype(np.float32)
    if dt == dtypes.float16: x = x.astype(np.float16)
    else: x = ((x.view(np.uint32) + 0x7FFF + (x.view(np.uint32) >> 16 & 1)) & 0xFFFF0000).view(np.float32)
    out.append((Tensor(x, device=dev).cast(dt).realize(), x.astype(np.float64)))
  return out

def result(t: Tensor) -> np.ndarray: return (t.numpy() if t.dtype == dtypes.float16 else t.float().numpy()).astype(np.float64)

@ARCHS
@DTYPES
@pytest.mark.parametrize("mkn", [(32, 48, 64), (20, 32, 24), (24, 32, 48)], ids=["tiles", "padded", "padded-half-tile"])
def test_matmul_on_wmma(dev, dt, mkn):
  """padded-half-tile: the last row tile's upper half-wave stores nothing; LLVM 19 sank the WMMA into the stores' branch there."""
  m, k, n = mkn
  (a, an), (b, bn) = operands(dev, dt, (m, k), (k, n))
  assert get_program(kernel(a @ b), Device[dev].renderer).applied_opts == (Opt(OptOps.TC, 0),)
  check(result(a @ b), an @ bn, dt)

@ARCHS
def test_wmma_instruction_in_code_object(dev):
  for dt, name in ((dtypes.float16, "f16"), (dtypes.bfloat16, "bf16")):
    (a, _), (b, _) = operands(dev, dt, (16, 16), (16, 32))
    assert f"v_wmma_f32_16x16x16_{name} " in disassemble(dev, kernel(a @ b))

@ARCHS
def test_conv_on_wmma(dev):
  (x, xn), (w, wn) = operands(dev, dtypes.float16, (1, 16, 18, 18), (16, 16, 3, 3))
  assert [o.op for o in get_program(kernel(x.conv2d(w)), Device[dev].renderer).applied_opts] == [OptOps.TC]  # k: the 16 input channels
  win = np.lib.stride_tricks.sliding_window_view(xn, (3, 3), axis=(2, 3))  # (1, 16, 16, 16, 3, 3)
  check(result(x.conv2d(w)), np.einsum("bcyxij,ocij->boyx", win, wn), dtypes.float16)

def test_k_not_whole_tiles_is_not_applied():
  (a, an), (b, bn) = operands("AMD", dtypes.float16, (32, 40), (40, 32))
  ast, ren = kernel(a @ b), Device["AMD"].renderer
  with pytest.raises(KernelOptError, match="ways to use a tensor core"): get_program(ast, ren, opts=(Opt(OptOps.TC, 0),))
  assert all(o.op is not OptOps.TC for o in get_program(ast, ren).applied_opts)
  check(result(a @ b), an @ bn, dtypes.float16)  # products exact in float32, as PyTorch's (they were rounded to half)

def test_tc_is_first_and_alone_and_in_beam():
  (a, _), (b, _) = operands("AMD", dtypes.float16, (32, 32), (32, 32))
  ast, ren = flat(kernel(a @ b)), Device["AMD"].renderer
  assert {Opt(OptOps.TC, 0), Opt(OptOps.TC, 1)} <= set(actions(ast, ren))  # rows from a or from b
  with Context(USE_TC=0):
    assert not any(o.op is OptOps.TC for o in actions(ast, ren)) and OptOps.TC not in [o.op for o in get_program(ast, ren).applied_opts]
  with pytest.raises(KernelOptError, match="before every other opt"): get_program(ast, ren, opts=(Opt(OptOps.UPCAST, 0, 2), Opt(OptOps.TC, 0)))
  with pytest.raises(KernelOptError, match="no opt after TC"): apply_opt(apply_opt(ast, Opt(OptOps.TC, 0), ren), Opt(OptOps.UPCAST, 0, 2), ren)
  with pytest.raises(KernelOptError, match="no tensor cores"): get_program(ast, Device["CPU"].renderer, opts=(Opt(OptOps.TC, 0),))
  f32 = Tensor(np.ones((32, 32), np.float32), device="AMD")
  assert not any(o.op is OptOps.TC for o in actions(flat(kernel(f32 @ f32)), ren))  # float32 has no WMMA here

def test_virtual_gpu_counts_wave_instructions():
  """MockKFD.executed (bench/amd.py's cost figure) counts every wave's instructions: s_endpgm alone, 3 workgroups of 2 waves."""
  from tg.amd.device import AMDProgram
  from tg.amd_emu import rdna3
  from tg.amd_emu.codeobj import KernelDescriptor, write
  dev = Device["AMD"]
  prg = AMDProgram(dev, "empty", write("empty", rdna3.s_endpgm().to_bytes(), "rdna3", KernelDescriptor(rsrc1=0x41, rsrc2=2 << 1)))
  before = dev.kfd.kfd.executed
  prg(global_size=(3, 1, 1), local_size=(64, 1, 1), wait=True)
  assert dev.kfd.kfd.executed - before == 6

def test_beam_keeps_tc_when_it_is_faster():
  """The search (its timer replaced by one that scores WMMA kernels faster) ends on the TC kernel."""
  from tg.codegen.opt.search import beam_search, globalize
  (a, _), (b, _) = operands("AMD:1", dtypes.float16, (32, 32), (32, 32))
  ren = Device["AMD:1"].renderer
  with Context(IGNORE_BEAM_CACHE=1):
    k = beam_search(globalize(flat(kernel(a @ b))), ren, 2, lambda k: 1.0 if any(u.op is Ops.WMMA for u in k.toposort()) else 2.0)
  assert [o.op for o in k.arg.applied_opts] == [OptOps.TC]
