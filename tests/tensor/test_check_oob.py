"""CHECK_OOB=1: CPU kernels check every buffer access and raise the error the PYTHON interpreter raises (kernel, buffer,
index, size); index tensors out of range raise too. Off by default: the CPU code then has no checks at all."""
import numpy as np
import pytest
from tg.uop import UOp, KernelInfo, Context, dtypes
from tg.codegen import OutOfBoundsError, Device, get_program
from tg.tensor import Tensor

def sink(x: UOp, name: str) -> UOp: return x.sink(arg=KernelInfo(name=name, opts_to_apply=()))  # scalar accesses: a known message
def strided_read_k(O: UOp, A: UOp) -> UOp:
  i = UOp.range(O.shape[0], 0)
  return sink(O[i].store(A[i * 2]).end(i), "strided_read")
def shifted_write_k(O: UOp, A: UOp) -> UOp:
  i = UOp.range(A.shape[0], 0)
  return sink(O[i + 3].store(A[i]).end(i), "shifted_write")
def backwards_read_k(O: UOp, A: UOp) -> UOp:
  i = UOp.range(O.shape[0], 0)
  return sink(O[i].store(A[i - 1]).end(i), "backwards_read")
def gated_read_k(O: UOp, A: UOp) -> UOp:
  i = UOp.range(O.shape[0], 0)
  return sink(O[i].store(A[(i - 1).valid(i >= 1)]).end(i), "gated_read")

def run(k, dev: str, n_out: int = 8, n_in: int = 8) -> np.ndarray:
  a = np.arange(n_in, dtype=np.float32) + 1
  return Tensor.custom_kernel(Tensor.zeros(n_out, device=dev).contiguous(), Tensor(a, device=dev), fxn=k)[0].numpy()

@pytest.mark.parametrize("k,msg", [
  (strided_read_k, r"kernel 'strided_read': out of bounds: dtypes.float32 at element 8 of buffer 1 \(8 elements\)"),
  (shifted_write_k, r"kernel 'shifted_write': out of bounds: dtypes.float32 at element 8 of buffer 0 \(8 elements\)"),
  (backwards_read_k, r"kernel 'backwards_read': out of bounds: dtypes.float32 at element -1 of buffer 1 \(8 elements\)")])
def test_cpu_raises_what_python_raises(k, msg):
  with Context(CHECK_OOB=1):
    for dev in ("PYTHON", "CPU"):
      with pytest.raises(OutOfBoundsError, match=msg): run(k, dev)

def test_vector_accesses_name_their_vector_dtype_on_both_devices():
  def k(O: UOp, A: UOp) -> UOp:  # the optimizer makes this a vector store, which runs past the end
    i = UOp.range(A.shape[0], 0)
    return O[i + 3].store(A[i]).end(i).sink(arg=KernelInfo(name="vec_write"))
  with Context(CHECK_OOB=1):
    errs = []
    for dev in ("PYTHON", "CPU"):
      with pytest.raises(OutOfBoundsError) as e: run(k, dev, 10, 8)
      errs.append(str(e.value))
  assert errs[0] == errs[1] and errs[0].startswith("kernel 'vec_write': out of bounds: dtypes.float32") and "buffer 0 (10 elements)" in errs[0]

def test_gated_accesses_and_real_kernels_pass_the_checks():
  with Context(CHECK_OOB=1):
    np.testing.assert_array_equal(run(gated_read_k, "CPU"), [0, 1, 2, 3, 4, 5, 6, 7])
    rng = np.random.default_rng(0)
    a, b, x = rng.standard_normal((17, 9)).astype(np.float32), rng.standard_normal((9, 13)).astype(np.float32), rng.standard_normal(37)
    np.testing.assert_allclose((Tensor(a) @ Tensor(b)).numpy(), a @ b, rtol=1e-5, atol=1e-5)  # upcast (vector) loads and stores
    np.testing.assert_allclose(Tensor(x.astype(np.float32)).pad((3, 2)).cumsum(0).numpy(), np.cumsum(np.pad(x, (3, 2))), rtol=1e-5, atol=1e-5)

def test_off_by_default_with_no_checks_in_the_code():
  ast = strided_read_k(UOp.param(0, dtypes.float32, 8), UOp.param(1, dtypes.float32, 8))
  assert "tg_oob" not in get_program(ast, Device["CPU"].renderer).src
  with Context(CHECK_OOB=1): assert "tg_oob_hit" in get_program(ast, Device["CPU"].renderer).src

def test_index_tensors_out_of_range():
  t = Tensor([10.0, 20.0, 30.0])
  with Context(CHECK_OOB=1):
    with pytest.raises(IndexError, match=r"tensor index on axis 0: index 5 is out of bounds for an axis of size 3"): t[Tensor([0, 5])].numpy()
    with pytest.raises(IndexError, match=r"index -4 is out of bounds"): t[Tensor([-4])].numpy()
    with pytest.raises(IndexError, match=r"gather along dim 0: index 3 is out of bounds"): t.gather(0, Tensor([3])).numpy()
    with pytest.raises(IndexError, match=r"scatter along dim 0: index -1"): t.scatter(0, Tensor([-1]), 1.0).numpy()
    np.testing.assert_array_equal(t[Tensor([-1, 0])].numpy(), [30, 10])  # negative indices count from the end, as in numpy
  np.testing.assert_array_equal(t[Tensor([0, 5])].numpy(), [10, 0])  # unchecked: the one-hot selects nothing

def test_out_of_range_labels_read_nothing_by_default_and_raise_when_checked():
  logits, y = Tensor(np.zeros((3, 4), np.float32)), Tensor(np.array([1, 4, -1], np.int32))  # 4 is past the classes, -1 ignored
  np.testing.assert_allclose(logits.sparse_categorical_crossentropy(y, reduction="none").numpy(), [np.log(4), 0, 0], rtol=1e-6)
  with Context(CHECK_OOB=1), pytest.raises(IndexError, match="labels: index 4 is out of bounds for an axis of size 4"):
    logits.sparse_categorical_crossentropy(y)
