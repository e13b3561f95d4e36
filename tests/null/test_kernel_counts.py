"""How many kernels tg.tensor's scheduler makes (on NULL: scheduled and compiled, nothing runs): fusion is tested here."""
import pytest
from tg.tensor import Tensor, Counters

def n_kernels(*ts: Tensor) -> int:
  return sum(1 for ei in ts[0].schedule(*ts[1:]) if ei.ast.op.name == "SINK")

def t(*shape): return Tensor.empty(*shape, device="NULL")

@pytest.mark.parametrize("build,want", [
  (lambda: t(16, 16) + t(16, 16), 1),
  (lambda: ((t(16) * 2 + t(16)).exp() * t(16)).sqrt(), 1),  # an elementwise chain is one kernel
  (lambda: (t(8, 8) + t(8, 8)).sum(), 1),  # elementwise fuses into the reduce's input
  (lambda: (t(8, 8).sum(1) * 2).exp(), 1),  # ... and its output
  (lambda: t(4, 8).permute(1, 0).reshape(32)[::-2].pad(((1, 1),)).flip(0) + 1, 1),  # views are index math
  (lambda: t(4, 8).softmax(-1), 3),
  (lambda: t(4, 8) @ t(8, 3), 1),
  (lambda: t(4, 8) - t(4, 8).mean(1, keepdim=True), 2),  # a reduce broadcast again is realized
  (lambda: t(2, 3, 8, 8).conv2d(t(4, 3, 3, 3), padding=1).relu(), 2),  # the weights' copy (out channels innermost), the conv
  (lambda: t(2, 4, 8, 8).conv2d(t(4, 4, 3, 3)).relu().conv2d(t(4, 4, 3, 3)), 4),  # 2 weight copies, 2 convs: relu is in the first
  (lambda: t(1, 1, 8, 8).max_pool2d(2), 1),
  (lambda: t(3, 4)[:, Tensor([0, 2], device="NULL")], 1),  # a one-hot gather
  (lambda: t(6).cat(t(4)), 1),
  (lambda: (t(5) * 2).contiguous() + 1, 2),
])
def test_kernel_count(build, want):
  assert n_kernels(build()) == want

def test_multiple_outputs_share_one_schedule():
  a = t(8) + 1
  assert n_kernels(a * 2, a * 3) == 2

def test_backward_kernels():
  w = Tensor.empty(8, 4, device="NULL", requires_grad=True)
  (t(2, 8) @ w).relu().sum().backward()
  assert n_kernels(w.grad) <= 3

def test_repeat_reuses_compiled_kernels():
  def step(): return ((t(32, 32) * 3 + t(32, 32)).sum(1).exp()).realize()
  step()
  before = Counters.compiled
  for _ in range(3): step()
  assert Counters.compiled == before

def test_work_after_a_reduce_is_done_before_its_broadcast():
  """relu(conv + bias) feeding a second conv is computed once per element, in the first conv's kernel: the second conv
  reads only it and its weights, not the first conv's sums and the bias."""
  from tg.uop import Ops
  x = t(2, 4, 8, 8).conv2d(t(4, 4, 3, 3), t(4)).relu().conv2d(t(4, 4, 3, 3))
  kernels = [ei for ei in x.schedule() if ei.ast.op.name == "SINK"]
  convs = [ei for ei in kernels if any(u.op is Ops.REDUCE_AXIS or u.op is Ops.REDUCE for u in ei.ast.toposort())]
  assert [len(ei.bufs) for ei in convs] == [4, 3]  # (out, x, weights, bias), (out, relu(...), weights)
