"""Argument forms and checks tinygrad programs use: index tuples, zero-size any/all, nearest-exact, einsum with '...' and
repeated letters, padding with negative sides in every mode, sum/prod dtype, and the errors for bad arguments."""
import numpy as np
import pytest
from tg.tensor import Tensor, dtypes, TensorShapeError
from tensor_helpers import check, rand
from test_autograd import check_grad

def test_index_tuples_in_the_index():
  a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  for idx in (((0, 1),), ([0, 1], (1, 2)), ((0, 1), (1, 2)), ([1, 0], slice(None), (3, 2)), ([(0, 1)],), ((1,), 2, slice(1, 3))):
    check(lambda t, idx=idx: t[idx], lambda x, idx=idx: x[idx], a)
  check(lambda t: t[(Tensor([1, 0]), slice(None), 2)], lambda x: x[(np.array([1, 0]), slice(None), 2)], a)

def test_a_list_key_with_more_than_ints_is_a_tuple_of_indices():
  """As PyTorch and tinygrad (numpy reads such a list as one array index): t[[[0, 2], [1, 3]]] is t[[0, 2], [1, 3]], two
  elements, where tg selected four rows, and its setitem zeroed all of t."""
  a = np.arange(20, dtype=np.float32).reshape(4, 5)
  for key, np_key in (([[0, 2], [1, 3]], ([0, 2], [1, 3])), ([[1]], ([1],)), ([slice(None), [1, 3]], (slice(None), [1, 3])),
                      ([0, 2], [0, 2]), ([Tensor([0, 3]), [0, 1]], (np.array([0, 3]), [0, 1]))):
    check(lambda t, key=key: t[key], lambda x, np_key=np_key: x[np_key], a)
  t, want = Tensor(a).contiguous(), a.copy()
  t[[[0, 2], [1, 3]]] = 0
  want[[0, 2], [1, 3]] = 0
  np.testing.assert_array_equal(t.numpy(), want)

def test_a_bound_variable_indexes_one_element_and_del_raises():
  """tinygrad's t[v] (v a bound Variable): one element, the same kernels for every value (it raised 'unsupported index');
  del t[0] is a TypeError, as tinygrad's."""
  from tg.tensor import Variable
  a = np.arange(12, dtype=np.float32).reshape(3, 4)
  for k in (0, 2):
    v = Variable("v", 0, 2).bind(k)
    np.testing.assert_array_equal(Tensor(a)[v].numpy(), a[k])
    np.testing.assert_array_equal(Tensor(a)[v, Tensor([0, 1, 3])].numpy(), a[k, [0, 1, 3]])
    np.testing.assert_array_equal(Tensor(a)[:, v].numpy(), a[:, k])
  with pytest.raises(IndexError, match="may be out of bounds"): Tensor(a)[Variable("w", 0, 5).bind(1)]
  with pytest.raises(TypeError, match="can't be deleted"): del Tensor(a)[0]

def test_any_all_over_zero_size_axes():
  z = np.zeros((0, 3), np.float32)
  for axis in (0, None, (0, 1)):
    check(lambda t, axis=axis: t.any(axis), lambda x, axis=axis: np.any(x, axis), z)
    check(lambda t, axis=axis: t.all(axis), lambda x, axis=axis: np.all(x, axis), z)
  check(lambda t: t.any(1), lambda x: np.any(x, 1), z)

def test_interpolate_nearest_exact():
  x = np.array([[10.0, 20.0, 30.0]], np.float32)
  # source index floor((i + 0.5) * 3 / 5) for nearest-exact, floor(i * 3 / 5) for nearest (PyTorch's definitions)
  assert Tensor(x).interpolate((5,), mode="nearest-exact").tolist() == [[10, 10, 20, 30, 30]]
  assert Tensor(x).interpolate((5,), mode="nearest").tolist() == [[10, 10, 20, 20, 30]]
  img = rand(1, 1, 4, 6)
  rows, cols = [int((i + 0.5) * 4 / 3) for i in range(3)], [int((j + 0.5) * 6 / 4) for j in range(4)]
  check(lambda t: t.interpolate((3, 4), mode="nearest-exact"), lambda a: a[:, :, rows][:, :, :, cols], img)
  with pytest.raises(ValueError, match="interpolate mode is 'nearest', 'nearest-exact' or 'linear'.*not 'cubic'"):
    Tensor(x).interpolate((5,), mode="cubic")
  lin = Tensor(img).interpolate((7, 9), mode="linear", align_corners=True).numpy()  # PyTorch's names for linear in 2 and 3 axes
  np.testing.assert_array_equal(Tensor(img).interpolate((7, 9), mode="bilinear", align_corners=True).numpy(), lin)
  assert Tensor(img).interpolate((2, 7, 9), mode="trilinear").shape == (1, 2, 7, 9)
  with pytest.raises(ValueError, match="not 'bilinear' for 1 axes"): Tensor(x).interpolate((5,), mode="bilinear")

@pytest.mark.parametrize("formula,shapes", [("ii", [(3, 3)]), ("ii->i", [(3, 3)]), ("...ij,jk->...ik", [(2, 3, 4), (4, 5)]),
                                            ("...j,jk", [(2, 3, 4), (4, 5)]), ("i...->...", [(2, 3, 4)]), ("bii->bi", [(2, 3, 3)]),
                                            ("...ii->...i", [(5, 2, 3, 3)]), ("ij...,jk...->ik...", [(2, 3, 5), (3, 4, 1)]),
                                            ("iij,jk->ik", [(3, 3, 2), (2, 4)]), ("...,...", [(2, 3), (3,)])], ids=str)
def test_einsum_ellipsis_and_diagonals(formula, shapes):
  ops = [rand(*s, seed=i) for i, s in enumerate(shapes)]
  check(lambda *ts: Tensor.einsum(formula, *ts), lambda *xs: np.einsum(formula, *xs), *ops, atol=1e-5)

def test_einsum_grads_and_errors():
  check_grad(lambda t: Tensor.einsum("ii->i", t) * 1.0, [rand(3, 3, dtype=np.float64)])
  check_grad(lambda a, b: Tensor.einsum("...ij,jk->...ik", a, b), [rand(2, 2, 3, dtype=np.float64), rand(3, 2, dtype=np.float64, seed=1)])
  with pytest.raises(TensorShapeError, match="repeated letter 'i' has sizes 2 and 3"): Tensor.einsum("ii", Tensor.ones(2, 3))

@pytest.mark.parametrize("mode", ["reflect", "replicate", "constant"])
def test_pad_negative_sides(mode):
  x = rand(3, 5)
  def ref(a, pads):  # out[j] = in[f(j - before)] along each axis, as PyTorch defines the modes
    for ax, (b, e) in enumerate(pads):
      n = a.shape[ax]
      f = {"reflect": lambda i, n=n: -i if i < 0 else 2 * (n - 1) - i if i >= n else i, "circular": lambda i, n=n: i % n,
           "replicate": lambda i, n=n: min(max(i, 0), n - 1), "constant": lambda i, n=n: i if 0 <= i < n else -1}[mode]
      idx = [f(j - b) for j in range(n + b + e)]
      a = np.where(np.array(idx).reshape([-1 if i == ax else 1 for i in range(a.ndim)]) >= 0, np.take(a, idx, axis=ax), 0)
    return a
  for pads in (((-1, 2), (2, -1)), ((0, 0), (-2, -1)), ((1, -1), (-3, 3))):
    flat = [p for b, e in reversed(pads) for p in (b, e)]  # PyTorch's flat order: last axis first
    check(lambda t, pads=pads: t.pad(pads, mode=mode), lambda a, pads=pads: ref(a, pads), x)
    check(lambda t, flat=flat: t.pad(flat, mode=mode), lambda a, pads=pads: ref(a, pads), x)

def test_pad_negative_circular_crops_then_wraps():
  """As PyTorch and tinygrad 0.14 (tg raised): a negative side crops first, and the wrap is of what is left (numpy's
  "wrap" pad of the cropped array)."""
  x = np.arange(15, dtype=np.float32).reshape(3, 5)
  for pads in (((1, -1), (1, -1)), ((-1, 2), (0, -2)), ((0, 0), (-2, 3))):
    crop = x[max(0, -pads[0][0]):3 + min(0, pads[0][1]), max(0, -pads[1][0]):5 + min(0, pads[1][1])]
    want = np.pad(crop, [(max(0, b), max(0, a)) for b, a in pads], mode="wrap")
    np.testing.assert_array_equal(Tensor(x).pad(pads, mode="circular").numpy(), want)
  # wrapping more than once (crops leave 0 of the axis, then 3 to wrap): tinygrad's NotImplementedError, PyTorch's error
  for cls in (NotImplementedError, ValueError):
    with pytest.raises(cls, match="can't exceed the axis"): Tensor(x).pad(((0, 0), (3, -5)), mode="circular")

def test_sum_prod_dtype():
  h = np.full(3000, 0.5, np.float16)
  s = Tensor(h).sum(dtype=dtypes.float32)
  assert s.dtype == dtypes.float32 and s.item() == 1500.0
  assert Tensor([100, 100, 100], dtype=dtypes.int8).sum(dtype="int8").item() == np.int8(300 - 256)  # wraps in int8, as numpy
  p = Tensor([1000, 1000, 1000]).prod(dtype=dtypes.int64)
  assert p.dtype == dtypes.int64 and p.item() == 10**9
  assert Tensor([1.5, 2.0]).prod(dtype="float64").dtype == dtypes.float64
  assert Tensor([3, 4], dtype=dtypes.int32).prod(dtype=dtypes.float32).item() == 12.0
  for cls in (TypeError, AttributeError):  # PyTorch's and tinygrad's classes
    with pytest.raises(cls, match="unknown dtype ''"): Tensor([1.0]).sum(dtype="")
    with pytest.raises(cls, match="unknown dtype 'floaty'"): Tensor([1.0]).prod(dtype="floaty")

def test_argument_errors_are_value_and_runtime_errors():
  cases = [(lambda: Tensor.eye(-3), "eye needs non-negative sizes"), (lambda: Tensor.ones(2, 2).flip((0, 0)), "name an axis twice"),
           (lambda: Tensor([1, 2]).div(2, rounding_mode="round"), "rounding_mode is None, 'trunc' or 'floor'"),
           (lambda: Tensor.ones(2, 3) @ Tensor.ones(2, 3), "matmul shapes"), (lambda: Tensor.ones(2, 3) + Tensor.ones(3, 2), "can't broadcast"),
           (lambda: Tensor.ones(2, 3).permute(0, 0), "not a permutation"), (lambda: Tensor.ones(2, 3).reshape(4), "can't reshape"),
           (lambda: Tensor.ones(2, 3).gather(0, Tensor.zeros(2, 4, dtype=dtypes.int32)), "gather index"),
           (lambda: Tensor.ones(1, 2, 5, 5).conv2d(Tensor.ones(4, 3, 3, 3)), "channels"),
           (lambda: Tensor.ones(2, 3).item(), "one element"), (lambda: Tensor.ones(3).split([1, 1]), "don't add up to 3"),
           (lambda: Tensor.ones(2, 4).topk(5), "out of range"), (lambda: Tensor.ones(2, -3), "non-negative"),
           (lambda: Tensor.ones(3, 4).pad((-5, 0)), "out of bounds"), (lambda: Tensor.linspace(5, 10, 3, dtype="bool"), "linspace of bools"),
           (lambda: Tensor.linspace(1, 2, -1), "non-negative number of steps"),
           (lambda: Tensor.stack((Tensor([1, 2]), Tensor([3, 4])), Tensor([5, 6])), "one sequence of them, not both"),
           (lambda: Tensor.ones(10, 3, 10).scatter(1, Tensor.zeros(3, 4, 5, dtype=dtypes.int32), Tensor.ones(10, 3, 10)), "larger than src"),
           (lambda: Tensor([0.1, 0.9]).multinomial(3, replacement=False), "without replacement"),
           (lambda: Tensor([1.0, 2.0], requires_grad=True).gradient(Tensor([1.0])), "not a scalar"),
           (lambda: Tensor.ones(1, 1, 4, 4).interpolate((2, 2), mode="nearest", align_corners=True), "align_corners"),
           (lambda: Tensor.ones(2, 3).sparse_categorical_crossentropy(Tensor([0, 1]), label_smoothing=1.5), "label_smoothing"),
           (lambda: Tensor.ones(2, 3).cross_entropy(Tensor.ones(2, 3), label_smoothing=-0.1), "label_smoothing")]
  for fn, msg in cases:
    for cls in (ValueError, RuntimeError, AssertionError):  # numpy's, PyTorch's, tinygrad's (it asserts)
      with pytest.raises(cls, match=msg): fn()
  with pytest.raises(IndexError, match="axis 2 is out of range"): Tensor.ones(2, 2).cumsum(2)
  for fn in (lambda: Tensor.zeros(0).argmax(), lambda: Tensor.zeros(3, 0).argmin(1)):  # no index to give, as PyTorch
    with pytest.raises(IndexError, match="size 0"): fn()
  assert Tensor.zeros(0, 3).argmax(1).shape == (0,)
  for fn in (lambda: Tensor.ones(2, 2).pad((1, 1), mode="wrap"), lambda: Tensor.ones(1, 4).interpolate((3,), mode="area")):
    for cls in (ValueError, NotImplementedError, AssertionError):  # PyTorch raises NotImplementedError, tinygrad asserts
      with pytest.raises(cls, match="mode"): fn()
  assert Tensor.eye(0).shape == (0, 0)

def test_dtype_errors_are_type_and_runtime_errors():
  idx = Tensor.zeros(3, 4, 5, dtype=dtypes.int32)
  cases = [(lambda: Tensor([1.0]) & Tensor([1.0]), "bitwise and"), (lambda: Tensor([1.0]).bitwise_not(), "bitwise not"),
           (lambda: Tensor([1.0]) << 1, "shift"), (lambda: Tensor([1.0]).idiv(2), "idiv"),
           (lambda: Tensor([1.0]).masked_select(Tensor([1])), "bool mask"), (lambda: Tensor([2, 3]) ** -1, "negative power"),
           (lambda: Tensor.ones(3, 4, 5).half().scatter(1, idx, Tensor.ones(3, 4, 5)), "float32 src into a dtypes.float16"),
           (lambda: Tensor.ones(3, 4, 5).half().scatter_reduce(0, idx, Tensor.ones(3, 4, 5), "sum"), "float32 src")]
  for fn, msg in cases:
    for cls in (TypeError, RuntimeError, AssertionError):  # numpy's, PyTorch's, tinygrad's (it asserts)
      with pytest.raises(cls, match=msg): fn()

def test_bool_mask_of_another_shape_is_an_index_error():
  a = Tensor.ones(10, 11, 12)
  for mask in (Tensor([True, False]), [True, False]):
    with pytest.raises(IndexError, match=r"bool mask of shape \(2,\) at dim 0"): a[mask]
  np.testing.assert_array_equal(Tensor.arange(4)[Tensor([True, False, True, False])].numpy(), [0, 2])
  np.testing.assert_array_equal(Tensor.arange(6).reshape(2, 3)[:, Tensor([False, True, True])].numpy(), [[1, 2], [4, 5]])

def test_uint8_bilinear_rounds_as_pytorch():
  """uint8 linear interpolation in PyTorch's fixed point (tinygrad's too), one axis at a time, the last first. By hand: 64
  -> 10 samples position 2.7 first, weight 0.7 on x[3] = 5: 3.5, which fixed point (22938 / 2^15) rounds up to 4. The
  4x5 -> 3x7 outputs are PyTorch 2.13's (rounding once from exact weights gave 89, 160, 102, 163, 174 and 120 in places)."""
  x = np.zeros((1, 1, 1, 64), np.uint8)
  x[..., 3] = 5
  assert Tensor(x).interpolate((1, 10), mode="bilinear").numpy()[0, 0, 0].tolist() == [4] + [0] * 9
  img = (np.arange(20).reshape(1, 1, 4, 5) * 37 % 256).astype(np.uint8)
  assert Tensor(img).interpolate((3, 7), mode="bilinear").numpy()[0, 0].tolist() == \
    [[31, 52, 66, 62, 88, 115, 136], [150, 171, 161, 96, 122, 94, 42], [55, 76, 103, 129, 155, 164, 160]]
  assert Tensor(img).interpolate((3, 7), mode="bilinear", align_corners=True).numpy()[0, 0].tolist() == \
    [[0, 25, 49, 74, 99, 123, 148], [150, 175, 156, 96, 121, 102, 42], [43, 68, 92, 117, 142, 166, 191]]

def test_schedule_with_vars():
  """tinygrad's schedule_with_vars: the items and the values of the bound variables their kernels take."""
  from tg.uop import UOp
  from tg.tensor.realize import run_schedule
  v = UOp.variable("n", 1, 8).bind(3)
  t = (Tensor(np.arange(8, dtype=np.float32))[:v] * 2).sum()
  items, var_vals = t.schedule_with_vars()
  assert var_vals == {"n": 3} and items
  run_schedule(items)
  assert t.item() == 0.0 + 2.0 + 4.0

def test_dtype_of_products_summed():
  """matmul, dot, linear, einsum and conv2d take tinygrad's dtype=: the half products summed in float32, a float32 result
  (numpy's float32 product of the same halves, to half's rounding of each product)."""
  rng = np.random.default_rng(3)
  a, b, bias = (rng.standard_normal(s).astype(np.float16) for s in ((5, 64), (64, 7), (7,)))
  want = a.astype(np.float32) @ b.astype(np.float32)
  for got in (Tensor(a).matmul(Tensor(b), dtype=dtypes.float32), Tensor(a).dot(Tensor(b), dtype="float32"),
              Tensor.einsum("ij,jk->ik", Tensor(a), Tensor(b), dtype=dtypes.float32)):
    assert got.dtype == dtypes.float32
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-2, atol=2e-2)
  lin = Tensor(a).linear(Tensor(b), Tensor(bias), dtype=dtypes.float32)
  assert lin.dtype == dtypes.float32 and Tensor(a).matmul(Tensor(b)).dtype == dtypes.float16
  np.testing.assert_allclose(lin.numpy(), want + bias, rtol=1e-2, atol=2e-2)
  x, w = rng.standard_normal((2, 3, 6, 6)).astype(np.float16), rng.standard_normal((4, 3, 3, 3)).astype(np.float16)
  X, W = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
  out = X.conv2d(W, padding=1, dtype=dtypes.float32)
  out.sum().backward()
  assert out.dtype == dtypes.float32 and X.grad.dtype == W.grad.dtype == dtypes.float16  # gradients of the inputs' dtypes
  xp = np.pad(x.astype(np.float32), ((0, 0), (0, 0), (1, 1), (1, 1)))
  ref = np.zeros((2, 4, 6, 6), np.float32)
  for i in range(3):
    for j in range(3): ref += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 6, j:j + 6], w[:, :, i, j].astype(np.float32))
  np.testing.assert_allclose(out.numpy(), ref, rtol=1e-2, atol=2e-2)

def test_tinygrad_keyword_forms():
  """bitwise ops with reverse= (the other operand on the left: it leads the dtype promotion), gradient's
  materialize_grads (a target no gradient reaches: zeros), realize's do_update_stats (False: GlobalCounters don't count
  the launches)."""
  from tg.codegen import GlobalCounters
  np.testing.assert_array_equal(Tensor([3, 5]).bitwise_and(6, reverse=True).numpy(), [2, 4])
  np.testing.assert_array_equal(Tensor([1, 2], dtype=dtypes.uint8).bitwise_xor(Tensor([3, 3]), reverse=True).numpy(), [2, 1])
  x, y = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0], requires_grad=True)
  gx, gy = (x * 2).sum().gradient(x, y, materialize_grads=True)
  assert gx.tolist() == [2.0, 2.0] and gy.tolist() == [0.0]
  a = Tensor([1.0, 2.0]).realize()
  GlobalCounters.reset()
  (a + 1).realize(do_update_stats=False)
  assert GlobalCounters.kernel_count == 0 and GlobalCounters.global_ops == 0
  (a + 2).realize()
  assert GlobalCounters.kernel_count == 1
