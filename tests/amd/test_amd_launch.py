"""Launch dimensions respect the device's limits (global_max, local_max): axes that would overflow a dimension are
regrouped over the dimensions, and the regrouped kernel is right on both virtual GPUs (numpy)."""
import numpy as np
import pytest
from tg.codegen.device import Buffer, Device
from tg.codegen.pipeline import CompiledRunner, get_program
from tg.codegen.renderer.llvmir import AMDGPURenderer
from tg.tensor import Tensor
from tg.uop import Context, Ops, dtypes

ARCHS = pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])

def kernel(t: Tensor):
  (k,) = [ei for ei in t.schedule() if ei.ast.op is Ops.SINK]
  return k.ast

def test_axis_past_a_dimension_limit_is_regrouped():
  """(70000, 3, 5): one axis each would put 70000 workgroups in dimension 2, whose limit is 65535."""
  ren = AMDGPURenderer("gfx1100", "NULL")
  with Context(NOOPT=1): p = get_program(kernel(Tensor.empty(70000, 3, 5, device="NULL") * 2), ren)
  assert all(g <= m for g, m in zip(p.global_size, ren.global_max)) and np.prod(p.global_size) == 70000 * 15

def test_no_grouping_fits():
  ren = AMDGPURenderer("gfx1100", "NULL")
  ren.global_max = (4, 4, 4)
  with Context(NOOPT=1), pytest.raises(ValueError, match=r"sizes \[5, 3, 7\] don't fit the device's launch limits \(4, 4, 4\)"):
    get_program(kernel(Tensor.empty(7, 3, 5, device="NULL") * 2), ren)

@ARCHS
def test_regrouped_kernel_runs_right(dev):
  ren = AMDGPURenderer(Device[dev].target, dev)
  ren.global_max = (16, 8, 16)  # (12, 10, 6) one axis each breaks dimension 1: 12 | 6 | 10 fits
  a = np.random.default_rng(3).standard_normal((6, 10, 12)).astype(np.float32)
  with Context(NOOPT=1): p = get_program(kernel(Tensor.empty(6, 10, 12, device=dev) * 2 + 1), ren)
  assert all(g <= m for g, m in zip(p.global_size, ren.global_max)) and sorted(p.global_size) == [6, 10, 12]
  out, inp = Buffer(dev, a.size, dtypes.float32).allocate(), Buffer(dev, a.size, dtypes.float32).allocate()
  inp.copyin(memoryview(a).cast("B"))
  CompiledRunner(p)([out, inp], {}, wait=True)
  np.testing.assert_array_equal(out.numpy().reshape(a.shape), a * 2 + 1)
