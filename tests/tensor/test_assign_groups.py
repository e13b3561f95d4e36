"""ASSIGNs of one shape computed by one kernel (schedule._assign_groups): fewer kernels, and every read sees the value the
unfused order gives it (numpy reference)."""
import numpy as np
from tg.tensor import Tensor, Counters, dtypes

def realized(*vals):
  return [Tensor(np.array(v, np.float32)).realize() for v in vals]

def test_independent_assigns_of_one_shape_are_one_kernel():
  a, c = realized([1, 2, 3, 4], [10, 20, 30, 40])
  a.assign(a + 1); c.assign(c * 2)
  Counters.reset()
  Tensor.realize_all(a, c)
  assert Counters.kernels == 1
  np.testing.assert_array_equal(a.numpy(), [2, 3, 4, 5])
  np.testing.assert_array_equal(c.numpy(), [20, 40, 60, 80])

def test_a_later_assign_reads_the_new_value_at_its_element():
  """c's update reads a's new value at the element it writes: computed in the same kernel, never loaded."""
  a, c = realized([1, 2, 3, 4], [10, 20, 30, 40])
  a.assign(a + 1)
  c.assign(c + a * 3)
  Counters.reset()
  Tensor.realize_all(a, c)
  assert Counters.kernels == 1
  np.testing.assert_array_equal(c.numpy(), [16, 29, 42, 55])

def test_a_read_of_other_elements_keeps_the_kernels_apart():
  """c reads a's new value flipped: in one kernel it would read elements of a that the loop overwrote already."""
  an, cn = np.arange(1000, dtype=np.float32), np.arange(1000, dtype=np.float32) * 10
  a, c = realized(an, cn)
  a.assign(a + 1)
  c.assign(c + a.flip(0))
  Tensor.realize_all(a, c)
  np.testing.assert_array_equal(a.numpy(), an + 1)
  np.testing.assert_array_equal(c.numpy(), cn + (an + 1)[::-1])

def test_a_kernel_between_that_reads_a_new_value_closes_the_group():
  """s reads a's new value and runs between a's and c's assigns: a's write can't move past it to join c's kernel."""
  a, c = realized([1, 2, 3, 4], [10, 20, 30, 40])
  a.assign(a + 1)
  s = (a * 3).contiguous()
  c.assign(c + s.flip(0))
  Tensor.realize_all(a, c, s)
  np.testing.assert_array_equal(s.numpy(), [6, 9, 12, 15])
  np.testing.assert_array_equal(c.numpy(), [25, 32, 39, 46])

def test_an_assign_that_reads_the_old_value_of_a_later_target():
  """a's update reads c's old value at other elements; c's update comes later: in one kernel a would read c's new values."""
  an, cn = np.arange(1000, dtype=np.float32), np.arange(1000, dtype=np.float32) * 10
  a, c = realized(an, cn)
  a.assign(a + c.flip(0))
  c.assign(c * 2)
  Tensor.realize_all(a, c)
  np.testing.assert_array_equal(a.numpy(), an + cn[::-1])
  np.testing.assert_array_equal(c.numpy(), cn * 2)

def test_assign_to_a_slice_writes_into_the_tensor():
  # a[:4].assign(b) (tinygrad's assign, PyTorch's copy_) wrote into a copy of the slice and left a as it was
  a = Tensor.full((8,), 1.0, dtype=dtypes.half).contiguous().realize()
  a[:4].assign(Tensor.full((4,), 2.0, dtype=dtypes.half)).realize()
  np.testing.assert_array_equal(a.numpy(), [2, 2, 2, 2, 1, 1, 1, 1])
  b = Tensor.zeros(4, 6).contiguous().realize()
  view = b[1:3, 2:]
  view.assign(Tensor.ones(2, 4) * 7).realize()
  want = np.zeros((4, 6), np.float32)
  want[1:3, 2:] = 7
  np.testing.assert_array_equal(b.numpy(), want)
  np.testing.assert_array_equal(view.numpy(), want[1:3, 2:])

def test_contiguous_of_a_buffer_reads_it_until_assigned_whole():
  """t = b.contiguous() shares b's buffer: a write of some elements lands in b (PyTorch and tinygrad agree), an assign of
  the whole t gives t a buffer of its own (tinygrad's; PyTorch's contiguous() is b itself). A zero pad is a copy in both."""
  b = np.array([1., 2., 3., 4.], np.float32)
  for make in (lambda t: t.contiguous(), lambda t: t.pad(((0, 0),)).contiguous(), lambda t: t.reshape(2, 2).contiguous().reshape(4)):
    src = Tensor(b).realize()
    t = make(src)
    t += 1
    np.testing.assert_equal(src.numpy(), b)
    np.testing.assert_equal(t.numpy(), b + 1)
  src = Tensor(b).realize()
  t = src.contiguous()
  t[0] = 9.0
  t[2:4].assign(Tensor([7., 8.]))
  np.testing.assert_equal(src.numpy(), [9., 2., 7., 8.])
  np.testing.assert_equal(t.numpy(), [9., 2., 7., 8.])
  w = Tensor(b, requires_grad=True)
  (w.contiguous() * 3).sum().backward()
  np.testing.assert_equal(w.grad.numpy(), [3., 3., 3., 3.])
