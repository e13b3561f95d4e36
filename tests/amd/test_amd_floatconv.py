"""float32 <-> bfloat16/fp8 casts on both virtual GPUs give floatconv_ref's hand-computed bits, NaNs included, as CPU and
PYTHON do (tests/codegen/test_floatconv.py): bfloat16 through LLVM's own fptrunc/fpext (checked equal to tg.uop.floatconv's
definition here), fp8 as floatconv's graphs in the kernel (LLVM has no fp8 type)."""
import numpy as np
import pytest
from floatconv_ref import FORMATS, codes, decode, encode, f32_inputs
from tg.tensor import Tensor
from tg.uop import KernelInfo, UOp, dtypes
from tg.codegen.device import Buffer, Device
from tg.codegen.pipeline import CompiledRunner, get_program

ARCHS = pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])
DT = {"bf16": dtypes.bfloat16, **{f: getattr(dtypes, "fp8" + f) for f in FORMATS if f != "bf16"}}  # e4m3 is dtypes.fp8e4m3, ...
BITS = {f: (dtypes.uint16, np.uint16) if f == "bf16" else (dtypes.uint8, np.uint8) for f in FORMATS}

@ARCHS
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_from_float32(dev, fmt):
  x = f32_inputs(fmt)
  got = Tensor(x, device=dev).bitcast(dtypes.float32).cast(DT[fmt]).bitcast(BITS[fmt][0]).numpy()
  np.testing.assert_array_equal(got, np.array([encode(int(b), fmt) for b in x], BITS[fmt][1]))

@ARCHS
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_to_float32(dev, fmt):
  c = codes(fmt)
  got = Tensor(c, device=dev).bitcast(DT[fmt]).cast(dtypes.float32).bitcast(dtypes.uint32).numpy()
  np.testing.assert_array_equal(got, np.array([decode(int(b), fmt) for b in c], np.uint32))

@ARCHS
@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "bf16"])
def test_fp8_constants(dev, fmt):
  """fp8 constants stored as they are (LLVM literals folded from floatconv; the values rounded by tg.uop.dtype) have the
  cast's bits."""
  vals = np.float32([1.5, -448.0, 500.0, 70000.0, -np.inf, np.nan, 2.0**-9, 3 * 2.0**-11, -0.0])
  out = UOp.param(0, DT[fmt], (len(vals),))
  sink = UOp.group(*[out[UOp.const(dtypes.index, k)].store(UOp.const(DT[fmt], float(v))) for k, v in enumerate(vals)])
  spec = get_program(sink.sink(arg=KernelInfo(name="consts", opts_to_apply=())), Device[dev].renderer)
  buf = Buffer(dev, len(vals), DT[fmt]).allocate()
  CompiledRunner(spec)([buf], {}, wait=True)
  got = np.empty(len(vals), np.uint8)
  buf.copyout(memoryview(got).cast("B"))
  assert got.tolist() == [encode(int(b), fmt) for b in vals.view(np.uint32)]
