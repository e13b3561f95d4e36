"""Float -> narrow or unsigned integer casts wrap the same way on CPU and PYTHON (C leaves them undefined: -2.7 as
uint8 is 254 here only because the kernel converts through int32)."""
import numpy as np
import pytest
from intcast_ref import TARGETS, expected, inputs
from tg.tensor import Tensor
from tg.uop import dtypes

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
@pytest.mark.parametrize("src", [dtypes.float32, dtypes.float16, dtypes.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("target", list(TARGETS), ids=lambda d: d.name)
def test_float_to_int_wraps(dev, src, target):
  with np.errstate(over="ignore"): x = inputs(target).astype(np.dtype(src.name if src != dtypes.float16 else "float16"))
  x = x[np.isfinite(x)]
  got = Tensor(x, device=dev).cast(target).numpy()
  np.testing.assert_array_equal(got, expected(x, target))
