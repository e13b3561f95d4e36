"""float32 <-> bfloat16 casts on both virtual GPUs give floatconv_ref's hand-computed bits, NaNs included, as CPU and PYTHON
do (tests/codegen/test_floatconv.py): LLVM's own fptrunc/fpext to bfloat, checked equal to tg.uop.floatconv's definition. The
GPU renderer has no fp8 type: a cast to one is a TypeError naming it."""
import numpy as np
import pytest
from floatconv_ref import codes, decode, encode, f32_inputs
from tg.tensor import Tensor
from tg.uop import dtypes

ARCHS = pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])

@ARCHS
def test_bf16_from_float32(dev):
  x = f32_inputs("bf16")
  got = Tensor(x, device=dev).bitcast(dtypes.float32).cast(dtypes.bfloat16).bitcast(dtypes.uint16).numpy()
  np.testing.assert_array_equal(got, np.array([encode(int(b), "bf16") for b in x], np.uint16))

@ARCHS
def test_bf16_to_float32(dev):
  c = codes("bf16")
  got = Tensor(c, device=dev).bitcast(dtypes.bfloat16).cast(dtypes.float32).bitcast(dtypes.uint32).numpy()
  np.testing.assert_array_equal(got, np.array([decode(int(b), "bf16") for b in c], np.uint32))

@ARCHS
@pytest.mark.parametrize("dt", [dtypes.fp8e4m3, dtypes.fp8e5m2], ids=["e4m3", "e5m2"])
def test_fp8_is_a_typed_error(dev, dt):
  with pytest.raises(TypeError, match=dt.name):
    Tensor(np.ones(4, np.float32), device=dev).cast(dt).realize()
