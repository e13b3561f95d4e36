"""Creation and random numbers: threefry on a counter gives the same bits on every device."""
import numpy as np
import pytest
from tg.tensor import Tensor, dtypes

@pytest.mark.parametrize("make", [lambda d: Tensor.rand(3, 5, device=d), lambda d: Tensor.randint(6, low=-3, high=9, device=d)])
def test_rng_bit_exact_across_devices(make):
  Tensor.manual_seed(42)
  cpu = make("CPU").numpy()
  Tensor.manual_seed(42)
  py = make("PYTHON").numpy()
  assert cpu.tobytes() == py.tobytes()
  assert make("PYTHON").numpy().tobytes() != py.tobytes()  # the (per-device) counter moves on

def test_randn_equal_across_devices_to_rounding():
  """The same uniform bits, through log and cos: the CPU's libmvec (where it has it) and PYTHON's libm round their last
  bit apart, so equal to float32 rounding, not bit-exact."""
  Tensor.manual_seed(42)
  cpu = Tensor.randn(37, device="CPU").numpy()
  Tensor.manual_seed(42)
  np.testing.assert_allclose(cpu, Tensor.randn(37, device="PYTHON").numpy(), rtol=2e-6, atol=1e-7)

def test_scaled_rng_equal_across_devices_to_rounding():
  """x * scale + low may become one fused multiply-add in C and two roundings in PYTHON: equal to rounding, not bit-exact."""
  Tensor.manual_seed(3)
  cpu = Tensor.kaiming_uniform(4, 3, device="CPU").numpy()
  Tensor.manual_seed(3)
  np.testing.assert_allclose(cpu, Tensor.kaiming_uniform(4, 3, device="PYTHON").numpy(), rtol=2e-7, atol=1e-7)

def test_creation_matches_numpy():
  np.testing.assert_array_equal(Tensor.arange(2, 11, 3).numpy(), np.arange(2, 11, 3))
  np.testing.assert_allclose(Tensor.linspace(-1, 1, 5).numpy(), np.linspace(-1, 1, 5), atol=1e-7)
  np.testing.assert_array_equal(Tensor.eye(3, 4).numpy(), np.eye(3, 4, dtype=np.float32))
  np.testing.assert_array_equal(Tensor.full((2, 2), 7).numpy(), np.full((2, 2), 7, np.int32))
  # fill_value by keyword, as tinygrad and PyTorch name it
  np.testing.assert_array_equal(Tensor.full((2,), fill_value=1.5).numpy(), np.full((2,), 1.5, np.float32))
  np.testing.assert_array_equal(Tensor.zeros(3).full_like(fill_value=4).numpy(), np.full(3, 4, np.float32))
  assert Tensor(np.arange(3)).dtype == dtypes.int64 and Tensor(b"\x01\x02").tolist() == [1, 2] and Tensor(2.5).item() == 2.5
  u = Tensor.uniform(1000, low=2, high=3).numpy()
  assert 2 <= u.min() and u.max() < 3 and abs(u.mean() - 2.5) < 0.05

def test_rand_compiles_once():
  # the counter offset is data, not a constant in the kernel: later calls reuse the compiled kernel
  from tg.tensor import Counters
  Tensor.rand(7).realize()
  Counters.reset()
  draws = [Tensor.rand(7).numpy() for _ in range(3)]
  assert Counters.compiled == 0 and len({d.tobytes() for d in draws}) == 3

@pytest.mark.parametrize("make", [Tensor.rand, Tensor.randn])
def test_rng_is_one_flat_kernel_whatever_the_shape(make):
  """A draw is computed flat and reshaped: the same numbers as a flat draw from the same seed, and one kernel beside the
  counter's three: its snapshot, the draw's key hashed from it, and its advance (the reshape of the numbers' buffer is a
  view of it, not a second kernel's copy)."""
  from tg.tensor import Counters
  Tensor.manual_seed(5)
  flat = make(1000).numpy()
  Tensor.manual_seed(5)
  make(20, 5, 10).realize()
  Tensor.manual_seed(5)
  Counters.reset()
  shaped = make(20, 5, 10).realize()
  assert Counters.kernels == 4 and shaped.shape == (20, 5, 10)
  np.testing.assert_array_equal(shaped.numpy(), flat.reshape(20, 5, 10))

def test_a_reshape_of_a_contiguous_is_a_view_of_its_buffer():
  from tg.tensor import Counters
  a = Tensor(np.arange(12, dtype=np.float32)).realize()
  Counters.reset()
  b = (a * 2).contiguous().reshape(3, 4).realize()
  assert Counters.kernels == 1
  np.testing.assert_array_equal(b.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4) * 2)
  b[1, 2] = 100  # b owns its buffer: a is untouched
  assert b.numpy()[1, 2] == 100 and a.numpy()[6] == 6

@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.int16, dtypes.uint64, dtypes.float16, dtypes.bfloat16, dtypes.uint8])
def test_bytes_are_the_memory_of_the_dtype(dt):
  """Tensor(bytes, dtype=...) reinterprets the bytes as numpy.frombuffer does (it cast each byte: 8 bytes of two float32s
  gave 8 floats, 178.0, 157.0, ...); a length that isn't whole elements is an error that says so."""
  raw = np.random.default_rng(1).integers(0, 256, 48, dtype=np.uint8).tobytes()
  t = Tensor(raw, dtype=dt)
  assert t.dtype == dt and t.shape == (48 // dt.itemsize,)
  got = t.bitcast(dtypes.uint8) if dt.itemsize == 1 else t.bitcast({2: dtypes.uint16, 8: dtypes.uint64}.get(dt.itemsize, dtypes.uint32))
  assert got.numpy().tobytes() == raw
  if dt == dtypes.float32:
    assert Tensor(np.array([0.234, -2.5], np.float32).tobytes(), dtype=dt).tolist() == np.array([0.234, -2.5], np.float32).tolist()
  if dt.itemsize > 1:
    with pytest.raises(ValueError, match="not a whole number"): Tensor(raw[:-1], dtype=dt)

def test_lists_of_numpy_arrays_and_mixed_values():
  """numpy arrays inside a list count as nested lists; mixed Python values take the widest kind (bool < int < float)."""
  for data in ([np.array([1, 2, 3]), np.array([4, 5, 6])], [np.array([1.5, 2.0]), np.array([1, 2])], [np.array(1.0), np.array(2.0)]):
    np.testing.assert_array_equal(Tensor(data).numpy(), np.array(data))
  assert Tensor([np.array([1, 2]), np.array([3, 4])]).dtype == dtypes.int32
  assert Tensor([1, 2.5, True]).dtype == dtypes.float32 and Tensor([1, 2.5, True]).tolist() == [1.0, 2.5, 1.0]
  assert Tensor([True, 2]).dtype == dtypes.int32 and Tensor([True, 2]).tolist() == [1, 2]
  np.testing.assert_array_equal(Tensor([1.0, float("inf"), float("-inf"), float("nan")]).numpy(), [1.0, np.inf, -np.inf, np.nan])
  with pytest.raises(ValueError, match="ragged"): Tensor([np.array([1, 2]), np.array([3])])

def test_from_blob_shares_the_memory():
  """Tensor.from_blob reads (and writes) memory it doesn't own, in place: a change to the memory is seen by the next kernel."""
  arr = np.zeros(4, np.int32)
  t = Tensor.from_blob(arr.ctypes.data, (2, 2), dtype=dtypes.int32)
  assert (t + 1).tolist() == [[1, 1], [1, 1]]
  arr[:] = [0, 1, 2, 3]
  assert (t + 1).tolist() == [[1, 2], [3, 4]]
  t.assign(t * 10).realize()
  assert arr.tolist() == [0, 10, 20, 30]
  with pytest.raises(ValueError, match="memory address"): Tensor.from_blob(0, (2,))

def test_data_is_a_shaped_memoryview():
  d = Tensor(np.arange(6, dtype=np.int32).reshape(2, 3)).data()
  assert d.shape == (2, 3) and d.itemsize == 4 and d.tolist() == [[0, 1, 2], [3, 4, 5]]
  e = Tensor([], dtype=dtypes.int32).reshape(0, 2).data()  # tinygrad's: 1-d when empty (a (0, 2) view can't be iterated)
  assert e.shape == (0,) and e.itemsize == 4 and list(e) == []

def test_element_size_and_distinct_buffers():
  assert Tensor([1.0]).element_size() == 4 and Tensor([1], dtype=dtypes.int16).element_size() == 2
  assert Tensor([1.0], dtype=dtypes.float64).nbytes() == 8
  for make in (lambda: Tensor.empty(3), lambda: Tensor.zeros(3).contiguous(), lambda: Tensor.eye(3).contiguous()):
    a, b = make().realize(), make().realize()
    a.assign(Tensor.full(a.shape, 1.0)).realize()
    b.assign(Tensor.full(b.shape, 2.0)).realize()  # writing one leaves the other as it was
    assert (a.numpy() == 1).all() and (b.numpy() == 2).all()

def test_list_values_out_of_the_dtype_wrap_as_numpy_casts():
  # PyTorch's and C's conversion: uint8 -1 is 255, 2**33 in uint32 is 0; floats to ints truncate (this raised OverflowError)
  data = [-1, 0, 1, 2, 3, 1 << 33, 1 << 31]
  for dt in (dtypes.uint8, dtypes.int32, dtypes.uint32, dtypes.int8):
    np.testing.assert_array_equal(Tensor(data, dtype=dt).numpy(), np.array(data).astype(dt.fmt))
  np.testing.assert_array_equal(Tensor([-3.5, -2.5, 0, 2.5, 3.5], dtype=dtypes.int32).numpy(), [-3, -2, 0, 2, 3])
  np.testing.assert_array_equal(Tensor([True, False], dtype=dtypes.float32).numpy(), [1.0, 0.0])

def test_uint64_lists_past_int64_keep_every_value():
  """numpy made a list of ints past int64 beside small ones float64, so uint64 [2**64 - 2, 5] was [0, 5], silently."""
  for data in ([2**64 - 2, 5], [3, 2**64 - 1, 10562179681356314264]):
    assert Tensor(data, dtype=dtypes.uint64).tolist() == data
  assert Tensor([-1, 2**64 - 1], dtype=dtypes.int64).tolist() == [-1, -1]  # wrapped, as C

def test_ints_past_int32_are_int64():
  """As PyTorch's int64 and tinygrad's widening: Tensor(2**40) was int32 0, arange(2**31, 2**31 + 3) negative."""
  for data in (2**40, [1, -2**35], [[2**31]]):
    t = Tensor(data)
    assert t.dtype == dtypes.int64 and t.tolist() == data
  assert Tensor([1, -2**31]).dtype == dtypes.int32
  t = Tensor.arange(2**31, 2**31 + 3)
  assert t.dtype == dtypes.int64 and t.tolist() == [2**31, 2**31 + 1, 2**31 + 2]
  assert Tensor.arange(-2**31, -2**31 + 2).dtype == dtypes.int32 and Tensor.arange(5).dtype == dtypes.int32

def test_creation_keywords_of_tinygrad():
  """full/ones/zeros(buffer=True) are a buffer of their own at once (tinygrad's); const_like; clone(device=); rand rejects
  an unknown keyword (it took any)."""
  for t in (Tensor.ones(2, 3, dtype=dtypes.int8, buffer=True), Tensor.full((2, 3), 1, dtype=dtypes.int8, buffer=False)):
    np.testing.assert_array_equal(t.numpy(), np.ones((2, 3), np.int8))
  z = Tensor.zeros(3, buffer=True)
  z[1] = 5.0
  assert z.tolist() == [0.0, 5.0, 0.0]
  c = Tensor([1, 2]).const_like(7)
  assert c.dtype == dtypes.int32 and c.tolist() == [7, 7]
  a = Tensor([1.0, 2.0], device="CPU")
  moved = a.clone(device="CPU:1")
  assert moved.device == "CPU:1" and moved.tolist() == [1.0, 2.0]
  with pytest.raises(TypeError, match="generator"): Tensor.rand(5, generator="foo")
  inv = Tensor.invalids(2, 3, dtype=dtypes.int16)  # an anonymous buffer a kernel writes
  inv.assign(Tensor.arange(6, dtype=dtypes.int16).reshape(2, 3))
  assert inv.shape == (2, 3) and inv.dtype == dtypes.int16 and inv.tolist() == [[0, 1, 2], [3, 4, 5]]

def test_none_is_an_empty_tensor_and_a_dtype_must_be_one():
  assert Tensor(None).shape == (0,) and Tensor(None).numpy().size == 0
  for bad in ("typo", (dtypes.int32,)):  # tinygrad raises AttributeError, PyTorch TypeError: both catch it
    for cls in (AttributeError, TypeError):
      with pytest.raises(cls, match="unknown dtype"): Tensor([3], dtype=bad)

def test_clone_copies_the_gradient_as_tinygrad():
  a = Tensor([1.0, 2.0], requires_grad=True)
  (a * 5).sum().backward()
  b = a.clone()
  np.testing.assert_array_equal(b.numpy(), [1.0, 2.0])
  np.testing.assert_array_equal(b.grad.numpy(), [5.0, 5.0])

def test_uniform_of_an_integer_dtype_covers_the_range():
  """uniform(low=-100, high=100, dtype=int32) gave -100 everywhere: the [0, 1) draw was cast to int (0) before scaling."""
  Tensor.manual_seed(3)
  x = Tensor.uniform(20000, low=-100, high=100, dtype=dtypes.int32).numpy()
  assert x.dtype == np.int32 and x.min() == -100 and x.max() == 99
  counts = np.bincount(x + 100, minlength=200)
  assert counts.min() > 50 and counts.max() < 150  # 100 expected each; 0 is not doubled as truncation would make it

def test_randint_takes_only_integers():
  for bad in (dict(low=0.1, high=3), dict(low=0, high=3.5), dict(low=1, high=3, dtype="float"), dict(low=0, high=3, dtype=dtypes.float32)):
    with pytest.raises(TypeError): Tensor.randint(3, 4, **bad)
  assert Tensor.randint(3, 4, low=1, high=3, dtype="int16").dtype == dtypes.int16

def test_a_float64_array_stays_float64():
  """Tensor(np.float64 array) was rounded to float32 (default_float); tinygrad and PyTorch keep float64, bits and all."""
  a = np.array([0.1, 1 + 2 ** -40, -3e300])
  t = Tensor(a)
  assert t.dtype == dtypes.float64 and t.numpy().dtype == np.float64
  np.testing.assert_array_equal(t.numpy(), a)
  assert Tensor(a[:2], dtype=dtypes.float32).dtype == dtypes.float32 and Tensor(np.array(0.5)).dtype == dtypes.float64

def test_a_tensor_of_a_bare_constant_uop():
  """Tensor(UOp.const(dtype, v)) is that value on the default device (tinygrad's deviceless const; it raised 'CONST has no
  device')."""
  from tg.tensor import UOp
  c = Tensor(UOp.const(dtypes.float32, 1.5))
  assert c.dtype == dtypes.float32 and c.shape == () and c.item() == 1.5
  assert (Tensor([1.0, 2.0]) + Tensor(UOp.const(dtypes.float32, 1.0))).tolist() == [2.0, 3.0]

@pytest.mark.parametrize("make", [lambda **k: Tensor.eye(3, **k), lambda **k: Tensor.arange(3.0, **k), lambda **k: Tensor.linspace(0, 1, 3, **k)])
def test_eye_arange_linspace_take_requires_grad_and_refuse_other_keywords(make):
  """requires_grad=True makes a leaf (it was dropped: Tensor.eye(3, requires_grad=True) got no gradient), as ones() and
  PyTorch; a keyword they don't take is a TypeError, as in tinygrad and PyTorch (it was ignored)."""
  t = make(requires_grad=True)
  (t * Tensor([1.0, 2.0, 3.0])).sum().backward()
  np.testing.assert_array_equal(t.grad.numpy(), np.broadcast_to([1.0, 2.0, 3.0], t.shape))
  with pytest.raises(TypeError, match="bogus"): make(bogus=1)

def test_two_eye_leaves_get_a_gradient_each():
  """Equal constants are one UOp: as leaves each gets its own gradient (d sum(a @ b) / da = ones @ b.T), not their sum."""
  a, b = Tensor.eye(3, requires_grad=True), Tensor.eye(3, requires_grad=True)
  (a @ b).sum().backward()
  np.testing.assert_array_equal(a.grad.numpy(), np.ones((3, 3)))
  np.testing.assert_array_equal(b.grad.numpy(), np.ones((3, 3)))

def test_a_list_of_byte_strings_is_rows_of_bytes():
  """tinygrad's Tensor([b"abc", b"def"]): one row of uint8 per string; strings of other lengths don't make a shape."""
  assert Tensor([b"abc", b"dez"]).tolist() == [[97, 98, 99], [100, 101, 122]]
  assert Tensor([b"abc", b"dez"], dtype=dtypes.uint8).shape == (2, 3)
  with pytest.raises(ValueError, match="different lengths"): Tensor([b"ab", b"abc"])

# JAX's threefry_2x32 under the key (0, 1337) of the counter pairs (n, n + 10), n < 10: first words, then second words
# (the published values tinygrad's test_threefry_against_reference checks)
JAX_KEY_0_1337 = [2221762175, 1752107825, 653745012, 1967534793, 1395205442, 3840423848, 2159346757, 603508235, 3319473678, 3363866483,
                  3544324138, 1436466838, 2169858556, 2570072943, 2387150698, 3678370550, 2911697663, 403244401, 2560861638, 1692360114]

def test_threefry_random_bits_are_jaxs():
  counts = Tensor.arange(20, dtype=dtypes.uint32)
  bits = Tensor._threefry_random_bits(Tensor([0, 1337], dtype=dtypes.uint32), counts[:10], counts[10:])
  assert bits.dtype == dtypes.uint32 and bits.tolist() == JAX_KEY_0_1337
  # Tensor.threefry (tinygrad's name): Random123's known answers, counter and key words packed high:low
  pack = lambda lo, hi: (hi << 32) | lo  # noqa: E731
  x = Tensor([pack(0, 0), pack(0xFFFFFFFF, 0xFFFFFFFF)], dtype=dtypes.uint64)
  assert x.threefry(Tensor([pack(0, 0), pack(0xFFFFFFFF, 0xFFFFFFFF)], dtype=dtypes.uint64)).tolist() == \
    [pack(0x6B200159, 0x99BA4EFE), pack(0x1CB996FC, 0xBB002BE7)]

def _stream(seed: int, device_index: int, counter: int, n: int) -> np.ndarray:
  """The words a draw of n takes at `counter`, from tg.uop's threefry (checked against Random123's known answers): the
  device's key is (the low word of sha256 of its index, the seed); the draw's key is the hash of the counter under it;
  the words are the hashes of the pairs (i, i + half) under that, first words then second words."""
  import hashlib
  from tg.uop.ops import _threefry2x32
  pack = lambda lo, hi: (hi << 32) | lo
  dev_key = pack(int.from_bytes(hashlib.sha256(device_index.to_bytes(4, "big")).digest()[-4:], "big"), seed)
  key = _threefry2x32(pack(counter & 0xFFFFFFFF, counter >> 32), dev_key)
  half = (n + 1) // 2
  r = [_threefry2x32(pack(i, i + half), key) for i in range(half)]
  return np.array([w & 0xFFFFFFFF for w in r] + [w >> 32 for w in r], dtype=np.uint32)[:n]

def test_rand_draws_tinygrads_stream():
  """The same numbers as tinygrad (and JAX) for a seed: mantissa bits under 1.0's exponent, minus 1. The first draw
  after manual_seed(1337) begins 0.45735931, 0.63115275, as tinygrad's test_threefry_against_reference_full has it."""
  Tensor.manual_seed(1337)
  first, second, odd = Tensor.rand(20).numpy(), Tensor.rand(4, 5).numpy(), Tensor.rand(7).numpy()
  to_float = lambda w: ((w >> 9) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)
  np.testing.assert_array_equal(first, to_float(_stream(1337, 0, 0, 20)))
  np.testing.assert_allclose(first[:2], [0.45735931396484375, 0.6311527490615845])
  np.testing.assert_array_equal(second, to_float(_stream(1337, 0, 20, 20)).reshape(4, 5))
  np.testing.assert_array_equal(odd, to_float(_stream(1337, 0, 40, 7)))
  Tensor.manual_seed(1337)
  halves = Tensor.rand(5, dtype=dtypes.float16).numpy()  # two per word, low half first
  words = _stream(1337, 0, 0, 3).view(np.uint16)[:5]
  np.testing.assert_array_equal(halves, ((words >> 6) | np.uint16(0x3C00)).view(np.float16) - np.float16(1))
  Tensor.manual_seed(1337)
  u = to_float(_stream(1337, 0, 0, 6)).astype(np.float64).reshape(2, 3)
  np.testing.assert_allclose(Tensor.randn(3).numpy(), np.cos(2 * np.pi * u[0]) * np.sqrt(-2 * np.log(1 - u[1])), rtol=1e-5, atol=1e-6)

def test_rng_counter_is_two_words_that_carry():
  Tensor.manual_seed(1337)
  Tensor.rand(1).realize()
  counter = Tensor._device_rng_counters["CPU"]
  counter.assign(Tensor([2**32 - 6, 0], dtype=dtypes.uint32)).realize()
  Tensor.rand(10).realize()
  assert counter.tolist() == [4, 1]
  assert Tensor.rand(3).numpy().tobytes() == (((_stream(1337, 0, 2**32 + 4, 3) >> 9) | np.uint32(0x3F800000)).view(np.float32) - 1).tobytes()
  assert counter.tolist() == [7, 1] and len(Tensor._device_seeds) == 1
  Tensor.manual_seed(2)
  assert not Tensor._device_rng_counters and not Tensor._device_seeds

def test_bad_random_ranges_raise_value_error():
  with pytest.raises(ValueError, match="std >= 0"): Tensor.normal(3, 4, std=-1)
  with pytest.raises(ValueError, match="low < high"): Tensor.uniform(3, low=5.0, high=3.0)
  with pytest.raises(ValueError, match="low < high"): Tensor.uniform(3, low=1.0, high=1.0)
  with pytest.raises(ValueError, match="randint"): Tensor.rand(3, dtype=dtypes.int32)

def test_randn_draws_its_uniforms_itself(monkeypatch):
  """randn takes its uniform numbers from the stream, not through Tensor.rand (tinygrad's test swaps rand for zeros to
  check randn of u = 0 is finite: that swap must not break randn)."""
  monkeypatch.setattr(Tensor, "rand", Tensor.zeros)
  assert np.isfinite(Tensor.randn(16).numpy()).all()

def test_from_url_downloads_once_and_gunzips(tmp_path, monkeypatch):
  import gzip, http.server, threading, functools
  monkeypatch.setenv("CACHEDB", str(tmp_path / "cache" / "cache.db"))
  site = tmp_path / "site"
  site.mkdir()
  data = np.arange(300, dtype=np.uint8).astype(np.uint8).tobytes()
  (site / "raw.bin").write_bytes(data)
  (site / "packed.gz").write_bytes(gzip.compress(data))
  handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
  handler.log_message = lambda *a: None
  server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
  threading.Thread(target=server.serve_forever, daemon=True).start()
  try:
    base = f"http://127.0.0.1:{server.server_address[1]}"
    t = Tensor.from_url(f"{base}/raw.bin")
    assert t.dtype == dtypes.uint8 and bytes(t.numpy()) == data
    assert bytes(Tensor.from_url(f"{base}/packed.gz", gunzip=True).numpy()) == data
    assert Tensor.from_url(f"{base}/raw.bin", device="CPU").device == "CPU"
    with pytest.raises(ConnectionError, match="404"): Tensor.from_url(f"{base}/missing")
    (site / "raw.bin").unlink()  # cached: read again without the server's file
    assert bytes(Tensor.from_url(f"{base}/raw.bin").numpy()) == data
  finally: server.shutdown()
  assert not [p for p in (tmp_path / "cache" / "downloads").iterdir() if p.name.startswith("tmp")]  # no broken download left

def test_const_of_a_number_a_constant_uop_and_a_bound_variable():
  """tinygrad master's Tensor.const(dtype, value): a 0-d tensor of that dtype, of a number or a UOp's value."""
  from tg.tensor import UOp
  one = Tensor.const(dtypes.int8, UOp.const(dtypes.float32, 1.0))
  assert one.dtype == dtypes.int8 and one.shape == () and one.item() == 1
  assert Tensor.const(dtypes.int32, UOp.variable("x", 1, 10).bind(5)).item() == 5
  half = Tensor.const(dtypes.float16, 2.5)
  assert half.dtype == dtypes.float16 and half.item() == 2.5
