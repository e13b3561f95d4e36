"""HCQ graph: a TinyJit step of several kernels on AMD replays as one command stream (an indirect buffer whose kernel
arguments are patched per replay), on both virtual GPUs, with right answers (numpy) for new inputs every replay."""
import numpy as np
import pytest
from tg.codegen.device import Device, GlobalCounters
from tg.tensor import Tensor, TinyJit

ARCHS = pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])

@ARCHS
@pytest.mark.parametrize("batch", [True, False], ids=["graph", "unbatched"])
def test_jitted_step_is_one_submission(dev, batch):
  wn = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5) / 10
  w = Tensor(wn, device=dev).realize()
  def f(x: Tensor) -> Tensor:
    h = (x @ w).relu().realize()
    return (h - h.max()).exp().sum(axis=1).realize()
  step, d = TinyJit(f, batch=batch), Device[dev]
  for i in range(4):
    x = np.random.default_rng(i).standard_normal((2, 3)).astype(np.float32)
    xt = Tensor(x, device=dev).realize()
    d.synchronize()
    subs, kernels = d.submissions, GlobalCounters.kernel_count
    out = step(xt)
    subs, kernels = d.submissions - subs, GlobalCounters.kernel_count - kernels
    h = np.maximum(x @ wn, 0)
    np.testing.assert_allclose(out.numpy(), np.exp(h - h.max()).sum(1), rtol=1e-5)
    assert kernels == 3
    if i >= 2: assert subs == (1 if batch else kernels)  # replays (the first two calls run eagerly and capture)
