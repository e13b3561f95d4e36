"""Hand-written kernels inside tensor programs (Tensor.custom_kernel) and UOp expressions as tensor ops (Tensor.call),
checked against numpy; gradients against the plain Tensor expressions."""
import numpy as np
import pytest
from tg.uop import UOp, Ops, AxisType, KernelInfo, AddrSpace, dtypes, Context
from tg.tensor import Tensor, Counters
from custom_gemm import gemm_k, check_gemm_custom_backward

rng = np.random.default_rng(2)
def rand(*shape): return rng.standard_normal(shape).astype(np.float32)
def sink(x: UOp, name: str, opts=None) -> UOp: return x.sink(arg=KernelInfo(name=name, opts_to_apply=opts))

def arange_k(A: UOp) -> UOp:
  i = UOp.range(A.shape[0], 0)
  return sink(A[i].store(i.cast(A.dtype.base)).end(i), "arange")
def eye_k(A: UOp) -> UOp:
  r, c = UOp.range(A.shape[0], 0), UOp.range(A.shape[1], 1)
  return sink(A[r, c].store(r.eq(c).where(1.0, 0.0)).end(r, c), "eye")
def add_one_k(A: UOp) -> UOp:
  i = UOp.range(A.shape[0], 0)
  return sink(A[i].store(A[i] + 1.0).end(i), "add_one")
def add_k(C: UOp, A: UOp, B: UOp) -> UOp:
  i = UOp.range(C.shape[0], 0)
  return sink(C[i].store(A[i] + B[i]).end(i), "add")
def add_mul_k(C: UOp, D: UOp, A: UOp, B: UOp) -> UOp:
  i = UOp.range(C.shape[0], 0)
  return sink(UOp.group(C[i].store(A[i] + B[i]), D[i].store(A[i] * B[i])).end(i), "add_mul")
def sum_k(O: UOp, A: UOp) -> UOp:
  k = UOp.range(A.shape[0], 0, AxisType.REDUCE)
  return sink(O[0].store(A[k].reduce(k, arg=Ops.ADD)), "sum")
def row_sum_k(O: UOp, A: UOp) -> UOp:
  acc = UOp.placeholder((1,), dtypes.float, 0, AddrSpace.REG)
  i, k = UOp.range(A.shape[0], 0), UOp.range(A.shape[1], 1, AxisType.REDUCE)
  acc = acc.after(i)[0].set(0.0)
  acc = acc[0].set(acc.after(k)[0] + A[i, k], end=k)
  return sink(O[i].store(acc[0]).end(i), "row_sum")
def flip_k(B: UOp, A: UOp) -> UOp:
  """Reverse 4 elements at a time: a chunk is loaded as one vector (CONTRACT of an UPCAST range), its lanes stored reversed."""
  n = A.shape[0] // 4
  i, u = UOp.range(n, 0), UOp.range(4, 1, AxisType.UPCAST)
  vec = A[i * 4 + u].contract(u)
  return sink(UOp.group(*[B[(n - 1 - i) * 4 + k].store(vec.gep(3 - k)) for k in range(4)]).end(i), "flip", opts=())
def scores_k(S: UOp, Q: UOp, K: UOp) -> UOp:
  i, j, e = UOp.range(S.shape[0], 0), UOp.range(S.shape[1], 1), UOp.range(Q.shape[1], 2, AxisType.REDUCE)
  return sink(S[i, j].store((Q[i, e] * K[j, e]).reduce(e, arg=Ops.ADD)).end(i, j), "scores")

def test_arange_eye_and_add_one():
  (a,) = Tensor.empty(10).custom_kernel(fxn=arange_k)
  np.testing.assert_array_equal(a.numpy(), np.arange(10))
  (e,) = Tensor.custom_kernel(Tensor.empty(3, 4), fxn=eye_k)
  np.testing.assert_array_equal(e.numpy(), np.eye(3, 4))
  x = rand(7)
  (y,) = Tensor(x).custom_kernel(fxn=add_one_k)
  np.testing.assert_array_equal(y.numpy(), x + 1)

def test_a_kernel_on_an_expression_writes_a_copy_of_its_own():
  """A custom kernel on an unrealized expression writes a private copy: x.contiguous() built by the user is the same UOp
  as the copy contiguous() would make, and must keep x's values (it read the kernel's output before the fix)."""
  x = Tensor.arange(4).float()
  kept, (bumped,) = x.contiguous(), x.custom_kernel(fxn=add_one_k)
  Tensor.realize(kept, bumped)
  np.testing.assert_array_equal(kept.numpy(), np.arange(4))
  np.testing.assert_array_equal(bumped.numpy(), np.arange(4) + 1)

def test_a_kernel_on_a_pending_contiguous_leaves_it_as_it_was():
  """x.contiguous() not realized yet names no buffer: the kernel writes a copy, and the tensor, built before the kernel,
  reads x (as the docstring says of tensors built before a kernel), as does an equal contiguous() built apart."""
  x = Tensor.arange(4).float()
  y, other = x.contiguous(), x.contiguous()
  (bumped,) = y.custom_kernel(fxn=add_one_k)
  Tensor.realize(bumped, y, other)
  np.testing.assert_array_equal(bumped.numpy(), np.arange(4) + 1)
  np.testing.assert_array_equal(y.numpy(), np.arange(4))
  np.testing.assert_array_equal(other.numpy(), np.arange(4))

def test_elementwise_add_and_two_outputs():
  a, b = rand(9), rand(9)
  c = Tensor.custom_kernel(Tensor.empty(9), Tensor(a), Tensor(b), fxn=add_k)[0]
  np.testing.assert_array_equal(c.numpy(), a + b)
  s, p, _, _ = Tensor.custom_kernel(Tensor.empty(9), Tensor.empty(9), Tensor(a), Tensor(b), fxn=add_mul_k)
  np.testing.assert_array_equal(s.numpy(), a + b)
  np.testing.assert_array_equal(p.numpy(), a * b)

def test_grad_fxn_takes_a_gradient_per_output_the_loss_reads():
  """s = a + b and p = a * b from one kernel: grad_fxn(grad_s, grad_p, call), tinygrad's form, where tg summed the outputs'
  gradients into one (so (s * p).sum() got grad_s + grad_p in both places, a wrong gradient). An output the loss doesn't
  read gets no argument; the reference is the product rule in numpy."""
  def both(grad_s: UOp, grad_p: UOp, call: UOp) -> tuple:
    a, b = (Tensor(u) for u in call.src[3:])
    gs, gp = Tensor(grad_s), Tensor(grad_p)
    return None, None, (gs + gp * b).uop, (gs + gp * a).uop
  def first(grad_s: UOp, call: UOp) -> tuple: return None, None, grad_s, grad_s
  a, b = rand(9), rand(9)
  ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  s, p, _, _ = Tensor.custom_kernel(Tensor.empty(9), Tensor.empty(9), ta, tb, fxn=add_mul_k, grad_fxn=both)
  (s * p).sum().backward()
  np.testing.assert_allclose(ta.grad.numpy(), a * b + (a + b) * b, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(tb.grad.numpy(), a * b + (a + b) * a, rtol=1e-5, atol=1e-6)
  ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  (Tensor.custom_kernel(Tensor.empty(9), Tensor.empty(9), ta, tb, fxn=add_mul_k, grad_fxn=first)[0] * 3).sum().backward()
  assert ta.grad.tolist() == [3.0] * 9 and tb.grad.tolist() == [3.0] * 9

def test_chained_kernels_and_tensor_ops_around_them():
  x = rand(8)
  t = Tensor(x) * 2  # lazy input: realized into a buffer for the kernel
  (y,) = t.custom_kernel(fxn=add_one_k)
  (y,) = y.custom_kernel(fxn=add_one_k)
  np.testing.assert_allclose((y * 3).numpy(), (x * 2 + 2) * 3, rtol=1e-6)

def test_sum_row_sum_flip_attention():
  a = rand(64)
  np.testing.assert_allclose(Tensor.custom_kernel(Tensor.empty(1), Tensor(a), fxn=sum_k)[0].numpy(), [a.sum()], rtol=1e-5)
  m = rand(6, 9)
  np.testing.assert_allclose(Tensor.custom_kernel(Tensor.empty(6), Tensor(m), fxn=row_sum_k)[0].numpy(), m.sum(1), rtol=1e-5, atol=1e-6)
  f = rand(16)
  np.testing.assert_array_equal(Tensor.custom_kernel(Tensor.empty(16), Tensor(f), fxn=flip_k)[0].numpy(), f[::-1])
  q, k, v = rand(5, 4), rand(7, 4), rand(7, 3)
  # attention without softmax, (Q K^T) V, as two chained kernels (tg.tensor.flash_attention nests the score REDUCE inside the
  # loop over keys of one kernel)
  s = Tensor.custom_kernel(Tensor.empty(5, 7), Tensor(q), Tensor(k), fxn=scores_k)[0]
  o = Tensor.custom_kernel(Tensor.empty(5, 3), s, Tensor(v), fxn=gemm_k)[0]
  np.testing.assert_allclose(o.numpy(), (q @ k.T) @ v, rtol=1e-4, atol=1e-5)

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_gemm_with_custom_backward(device):
  a, b = check_gemm_custom_backward(device, 4, 5, 3, rng)
  with pytest.raises(RuntimeError, match="without grad_fxn"):
    Tensor.custom_kernel(Tensor.empty(4, 3), a, b, fxn=gemm_k)[0].sum().backward()

def test_spec_verifies_custom_kernels():
  with Context(SPEC=1):
    (y,) = Tensor(rand(4)).custom_kernel(fxn=add_one_k)
    y.realize()
    bad = lambda A: sink(A[0].store(UOp(Ops.ADD, dtypes.float, (A[0], UOp.const(dtypes.int32, 1)))), "bad")  # noqa: E731
    with pytest.raises(Exception, match="spec"): Tensor(rand(4)).custom_kernel(fxn=bad)[0].realize()

def test_a_custom_kernel_is_one_exec_item():
  Counters.reset()
  Tensor.custom_kernel(Tensor.empty(9), Tensor(rand(9)), Tensor(rand(9)), fxn=add_k)[0].realize()
  assert Counters.scheduled == 1 and Counters.kernels == 1

def test_call_forward_and_automatic_backward():
  a_np, b_np = rng.uniform(0.5, 1.5, (3, 4)).astype(np.float32), rng.uniform(0.5, 1.5, (3, 4)).astype(np.float32)
  p0, p1 = UOp.param(0, dtypes.float, (3, 4)), UOp.param(1, dtypes.float, (3, 4))
  a, b = Tensor(a_np, requires_grad=True), Tensor(b_np, requires_grad=True)
  out = Tensor.call(a, b, fxn=(p0 * p1 + p0).exp2() * p1.reciprocal())
  ref_a, ref_b = Tensor(a_np, requires_grad=True), Tensor(b_np, requires_grad=True)
  ref = (ref_a * ref_b + ref_a).exp2() * ref_b.reciprocal()
  out.sum().backward()
  ref.sum().backward()
  np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
  np.testing.assert_allclose(out.numpy(), np.exp2(a_np * b_np + a_np) / b_np, rtol=1e-5)
  np.testing.assert_allclose(a.grad.numpy(), ref_a.grad.numpy(), rtol=1e-6)
  np.testing.assert_allclose(b.grad.numpy(), ref_b.grad.numpy(), rtol=1e-6)

def test_call_with_grad_fxn_and_errors():
  p0 = UOp.param(0, dtypes.float, (4,))
  x = Tensor(rand(4), requires_grad=True)
  y = Tensor.call(x, fxn=p0 * p0, grad_fxn=lambda g, call: ((Tensor(g) * 3).uop,))  # a deliberately wrong backward: it is used
  y.sum().backward()
  np.testing.assert_allclose(y.numpy(), x.numpy() ** 2, rtol=1e-6)
  np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 3, np.float32))
  with pytest.raises(ValueError, match=r"PARAM 0 has shape \(4,\), the tensor \(5,\)"): Tensor.call(Tensor(rand(5)), fxn=p0 * p0)
  with pytest.raises(IndexError, match="PARAM 1"): Tensor.call(x, fxn=p0 * UOp.param(1, dtypes.float, (4,)))

def fill2_k(A: UOp, B: UOp) -> UOp:
  i = UOp.range(A.shape[0], 0)
  return sink(UOp.group(A[i].store(i.cast(dtypes.float)), B[i].store((i * 2).cast(dtypes.float))).end(i), "fill2")
def add_into_k(A: UOp, B: UOp) -> UOp:
  i = UOp.range(A.shape[0], 0)
  return sink(A[i].store(A[i] + B[i]).end(i), "add_into")
def times_ten_k(O: UOp, A: UOp) -> UOp:
  i = UOp.range(A.shape[0], 0)
  return sink(O[i].store(A[i] * 10.0).end(i), "times_ten")

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_two_outputs_and_after_ordering_on_the_same_buffer(device):
  """One kernel fills two Tensor.empty buffers; a second reads A, a third adds B into A in place, a fourth reads the new A.
  Realizing the last reader first must not let the first reader see A after the in-place add."""
  a1, b1 = Tensor.custom_kernel(Tensor.empty(8, device=device), Tensor.empty(8, device=device), fxn=fill2_k)
  before = Tensor.custom_kernel(Tensor.empty(8, device=device), a1, fxn=times_ten_k)[0]
  a2, _ = Tensor.custom_kernel(a1, b1, fxn=add_into_k)
  after = Tensor.custom_kernel(Tensor.empty(8, device=device), a2, fxn=times_ten_k)[0]
  n = np.arange(8, dtype=np.float32)
  np.testing.assert_array_equal(after.numpy(), (n + 2 * n) * 10)
  np.testing.assert_array_equal(before.numpy(), n * 10)
  np.testing.assert_array_equal(a2.numpy(), 3 * n)
  np.testing.assert_array_equal(b1.numpy(), 2 * n)

def test_as_param_builds_call_expressions():
  a_np, b_np = rand(2, 3), rand(2, 3)
  a, b = Tensor(a_np), Tensor(b_np)
  p0 = a.as_param(0)
  assert p0.op is Ops.RESHAPE and p0.src[0].op is Ops.PARAM and p0.src[0].arg == 0 and p0.shape == (2, 3) and p0.dtype.base == dtypes.float
  # (atol: near a*b = -1 the fused a*b+1 differs from numpy's two roundings)
  np.testing.assert_allclose(Tensor.call(a, b, fxn=a.as_param(0) * b.as_param(1) + 1.0).numpy(), a_np * b_np + 1, rtol=1e-6, atol=1e-6)

def test_a_reshaped_buffer_is_read_in_place():
  """A realized tensor viewed in another shape is the kernel's buffer as it is: no copy kernel before the custom one."""
  a = rand(2, 9)
  x = Tensor(a).realize().reshape(3, 6).reshape(18)
  Counters.reset()
  out = Tensor.custom_kernel(Tensor.empty(1), x, fxn=sum_k)[0]
  out.realize()
  assert Counters.scheduled == 1 and Counters.kernels == 1
  np.testing.assert_allclose(out.numpy(), [a.sum()], rtol=1e-5)

@pytest.mark.parametrize("together", [False, True])
def test_a_reader_of_the_old_contents_runs_before_a_kernel_writes_them(together):
  # add_one_k writes x in place; x * 10, built before, read the new contents (no ordering edge, lazy or in one schedule)
  x = rand(6)
  t = Tensor(x).realize()
  old = t * 10
  (y,) = t.custom_kernel(fxn=add_one_k)
  if together: Tensor.realize(y, old)
  else: y.realize()
  np.testing.assert_array_equal(y.numpy(), x + 1)
  np.testing.assert_allclose(old.numpy(), x * 10, rtol=1e-6)
  np.testing.assert_allclose((t * 10).numpy(), (x + 1) * 10, rtol=1e-6)  # built after: the new contents

def row_view_sum_k(O: UOp, A: UOp) -> UOp:
  """Each row summed through a view of it: A[i, :] with i a range (tinygrad's slice_sum)."""
  acc = UOp.placeholder((1,), dtypes.float, 0, AddrSpace.REG)
  i, k = UOp.range(A.shape[0], 0), UOp.range(A.shape[1], 1, AxisType.REDUCE)
  row = A[i, :]
  acc = acc.after(i)[0].set(0.0)
  acc = acc[0].set(acc.after(k)[0] + row[k], end=k)
  return sink(O[i].store(acc[0]).end(i), "row_view_sum", opts=())

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_a_range_and_a_slice_index_a_view(device):
  """A[i, :] with a range i is the row view the kernel indexes further (it raised IndexError: only ints made views)."""
  a = rand(6, 5)
  o = Tensor.custom_kernel(Tensor.empty(6, device=device), Tensor(a, device=device), fxn=row_view_sum_k)[0]
  np.testing.assert_allclose(o.numpy(), a.sum(1), rtol=1e-5, atol=1e-6)
  p = UOp.param(0, dtypes.float, (6, 5))
  with pytest.raises(IndexError, match="in range"): p[UOp.range(7, 0), :]  # a range past the axis

def test_kernels_that_leave_a_buffer_unused():
  """A kernel takes the buffers of the PARAMs it uses: one using none runs nothing (tinygrad's test_empty), one using
  only the second of two tensors gets that one (both raised 'takes n buffers, got m')."""
  Tensor.custom_kernel(Tensor.empty(1), fxn=lambda _: UOp.sink())[0].realize()
  x, y = Tensor(rand(4)).realize(), rand(4)
  second_only = lambda A, B: sink(B[(i := UOp.range(4, 0))].store(B[i] + 1.0).end(i), "second_only")  # noqa: E731
  out = Tensor.custom_kernel(x, Tensor(y), fxn=second_only)
  np.testing.assert_allclose(out[1].numpy(), y + 1, rtol=1e-6)
  np.testing.assert_array_equal(out[0].numpy(), x.numpy())

def test_a_jit_replays_a_kernel_that_skips_a_middle_input():
  """A kernel using PARAMs 0 and 2 of three takes two buffers; what it reads and writes is by position among them, as a
  TinyJit's batching and the unwritten-read check index them (slot 2 was taken as position 2: IndexError on replay)."""
  from tg.tensor.jit import TinyJit
  def skip_middle(O, _, B):
    i = UOp.range(4, 0)
    return sink(O[i].store(B[i] * 2.0).end(i), "skip_middle")
  step = TinyJit(lambda b: Tensor.custom_kernel(Tensor.empty(4), Tensor.empty(4), b, fxn=skip_middle)[0].realize())
  for _ in range(3):
    y = rand(4)
    np.testing.assert_allclose(step(Tensor(y).realize()).numpy(), y * 2, rtol=1e-6)

def test_a_kernel_on_sharded_tensors_runs_on_each_piece():
  """Tensor.empty on a tuple of devices (a buffer on each), read as split along axis 0 by UOp.multi: the kernel runs on
  each device's piece (tinygrad's test_simple_sharded and test_gemm_multi; Tensor.empty raised on a tuple)."""
  devs = ("CPU", "CPU:1")
  a, b = rand(8, 6), rand(6, 4)
  c = Tensor(Tensor.empty(4, 4, device=devs).uop.multi(0), device=devs)
  assert c.shape == (8, 4) and c.device == devs
  out = Tensor.custom_kernel(c, Tensor(a).shard(devs, axis=0), Tensor(b).to(devs), fxn=gemm_k)[0]
  np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-5, atol=1e-5)

def test_an_input_only_read_is_realized_once_for_every_kernel_that_reads_it():
  """A lazy input a custom kernel only reads is computed into one buffer that every reader shares (flash attention's
  backward read the forward's head-split Q, K and V: each was copied again for each kernel); one it writes is a copy."""
  x, y = rand(8, 4), rand(32)
  a, b = Tensor(x), Tensor(y)
  Tensor.realize_all(a, b)
  t = a.T.reshape(32)  # a lazy input: its copy is a kernel
  s1 = Tensor.custom_kernel(Tensor.empty(32), t, b, fxn=add_k)[0]
  s2 = Tensor.custom_kernel(Tensor.empty(32), b, t, fxn=add_k)[0]
  Counters.reset()
  Tensor.realize_all(s1, s2)
  assert Counters.kernels == 3  # the copy of t, once, and the two kernels
  np.testing.assert_allclose(s1.numpy(), x.T.reshape(32) + y)
  np.testing.assert_allclose(s2.numpy(), x.T.reshape(32) + y)
  w = a.T.reshape(32)
  out = Tensor.custom_kernel(w, fxn=add_one_k)[0]  # written: a copy of its own, t and a keep their values
  np.testing.assert_allclose(out.numpy(), x.T.reshape(32) + 1)
  np.testing.assert_allclose(t.numpy(), x.T.reshape(32))
  np.testing.assert_allclose(a.numpy(), x)
