"""A reduce shared by a workgroup (GROUP/GROUPTOP, partial sums in shared memory) on GPU devices: with a LOCAL axis
beside it each output's threads keep their own partials (they shared one set, and two rows came out the same), checked
against numpy on the PYTHON reference device and both virtual GPUs; the heuristics pick GROUPTOP for a long reduce to
few outputs on AMD."""
import numpy as np
import pytest
from tg.codegen.device import Buffer, Device
from tg.codegen.opt.kernel import Opt, OptOps, globalize
from tg.codegen.pipeline import CompiledRunner, get_program
from tg.tensor import Tensor
from tg.uop import Ops, dtypes

a = np.random.default_rng(0).standard_normal((4, 1024)).astype(np.float32)

def row_sums(dev: str, opts) -> tuple[np.ndarray, tuple]:
  (k,) = [ei for ei in Tensor.empty(*a.shape, device=dev).sum(axis=1).schedule() if ei.ast.op is Ops.SINK]
  p = get_program(globalize(k.ast), Device[dev].renderer, opts=opts)
  out, inp = Buffer(dev, a.shape[0], dtypes.float32).allocate(), Buffer(dev, a.size, dtypes.float32).allocate()
  inp.copyin(memoryview(a).cast("B"))
  CompiledRunner(p)([out, inp], {}, wait=True)
  return out.numpy(), p.applied_opts

@pytest.mark.parametrize("dev", ["PYTHON", "AMD", "AMD:1"])
@pytest.mark.parametrize("group", [OptOps.GROUP, OptOps.GROUPTOP])
def test_group_reduce_beside_local_axis(dev, group):
  got, _ = row_sums(dev, [Opt(group, 0, 16), Opt(OptOps.LOCAL, 0, 2)])
  np.testing.assert_allclose(got, a.sum(axis=1), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("dev", ["AMD", "AMD:1"])
def test_heuristics_group_a_long_reduce(dev):
  (k,) = [ei for ei in Tensor(a, device=dev).sum(axis=1).schedule() if ei.ast.op is Ops.SINK]
  assert any(o.op is OptOps.GROUPTOP for o in get_program(k.ast, Device[dev].renderer).applied_opts)
  np.testing.assert_allclose(Tensor(a, device=dev).sum(axis=1).numpy(), a.sum(axis=1), rtol=1e-4, atol=1e-4)
