"""The linearizer's contract, checked on the kernels real tensor programs lower to: every UOp comes after its sources,
inside every loop it depends on, and each END closes the innermost open loop."""
import pytest
import tg.codegen.pipeline as pipeline
from tg.uop import Ops, UOp
from tg.tensor import Tensor

def loops_needed(uops: list[UOp]) -> dict[UOp, set[UOp]]:
  """The RANGEs each UOp depends on, less those an END on the way closed (computed here, not by the linearizer)."""
  need: dict[UOp, set[UOp]] = {}
  for u in uops:
    s = set().union(*(need.get(x, set()) for x in u.src))
    if u.op is Ops.RANGE: s.add(u)
    if u.op is Ops.END: s.discard(u.src[1])
    need[u] = s
  return need

def check_order(uops: list[UOp]) -> None:
  assert len(set(uops)) == len(uops), "a UOp emitted twice"
  seen: set[UOp] = set()
  need = loops_needed(uops)
  stack: list[UOp] = []
  for u in uops:
    assert all(x in seen or x.op is Ops.SINK for x in u.src), f"{u.op} before its sources"
    assert need[u] - {u} <= set(stack), f"{u.op} outside a loop it depends on"
    if u.op is Ops.RANGE: stack.append(u)
    if u.op is Ops.END:
      assert stack and stack[-1] is u.src[1], "END of a loop that is not the innermost"
      stack.pop()
    seen.add(u)
  assert not stack, "a loop never closed"

def conv_backward() -> Tensor:
  w = Tensor.randn(8, 3, 3, 3, requires_grad=True)
  Tensor.randn(2, 3, 12, 12).conv2d(w, padding=1).relu().max_pool2d().sum().backward()
  return w.grad

PROGRAMS = {
  "conv backward": conv_backward,
  "softmax cumsum": lambda: (Tensor.randn(9, 17) @ Tensor.randn(17, 9)).softmax(-1).cumsum(1),
  "argmax": lambda: Tensor.randn(5, 7).argmax(1),
  "var": lambda: Tensor.randn(16, 33).var(0),
  "topk": lambda: Tensor.randn(6, 9).topk(3)[0],
  "attention": lambda: Tensor.randn(1, 2, 16, 8).scaled_dot_product_attention(Tensor.randn(1, 2, 16, 8), Tensor.randn(1, 2, 16, 8), is_causal=True),
}

@pytest.mark.parametrize("name", PROGRAMS)
def test_linear_order(name, monkeypatch):
  programs: list[list[UOp]] = []
  real = pipeline.linearize
  monkeypatch.setattr(pipeline, "linearize", lambda sink: programs.append(real(sink)) or programs[-1])
  monkeypatch.setenv("CACHEDB", "")  # no compile cache: every kernel goes through the pipeline
  PROGRAMS[name]().realize()
  assert programs
  for uops in programs: check_order(uops)

def test_a_matmuls_epilogue_comes_after_its_reduce_loop(monkeypatch):
  """(a @ b) * f(c), f's work independent of the sum: emitted after the reduce loop ends, where its only use is, so it
  isn't live through the loop (a GELU gradient's 16 vectors there spilled the tile's accumulators every step). The
  value is numpy's."""
  import numpy as np
  programs: list[list[UOp]] = []
  real = pipeline.linearize
  monkeypatch.setattr(pipeline, "linearize", lambda sink: programs.append(real(sink)) or programs[-1])
  monkeypatch.setenv("CACHEDB", "")
  rng = np.random.default_rng(0)
  a, b, c = (rng.standard_normal(s, dtype=np.float32) for s in ((64, 32), (32, 64), (64, 64)))
  out = ((Tensor(a) @ Tensor(b)) * Tensor(c).exp().sigmoid()).numpy()
  np.testing.assert_allclose(out, (a.astype(np.float64) @ b) / (1 + np.exp(-np.exp(c))), rtol=1e-4, atol=1e-5)
  uops = next(p for p in programs if any(u.op is Ops.RANGE and u.arg[1].name == "REDUCE" for u in p))
  check_order(uops)
  reduce_end = max(i for i, u in enumerate(uops) if u.op is Ops.END and u.src[1].arg[1].name == "REDUCE")
  assert all(i > reduce_end for i, u in enumerate(uops) if u.op is Ops.EXP2), "the epilogue's exp2 runs before the reduce ends"
