"""Float -> narrow or unsigned integer casts on both virtual GPUs wrap as on CPU and PYTHON (tests/codegen/test_intcast.py).
LLVM leaves them undefined and the hardware clamps: before the kernels converted through int32/int64, -1.3 as uint32 was 0
and -2.7 as uint8 was 255 here."""
import numpy as np
import pytest
from intcast_ref import TARGETS, expected, inputs
from tg.tensor import Tensor
from tg.uop import dtypes

@pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])
@pytest.mark.parametrize("src", [dtypes.float32, dtypes.float16], ids=lambda d: d.name)
@pytest.mark.parametrize("target", list(TARGETS), ids=lambda d: d.name)
def test_float_to_int_wraps(dev, src, target):
  with np.errstate(over="ignore"): x = inputs(target).astype(np.float16 if src == dtypes.float16 else np.float32)
  x = x[np.isfinite(x)]
  got = Tensor(x, device=dev).cast(target).numpy()
  np.testing.assert_array_equal(got, expected(x, target))
