"""State dicts (names, strict loading with shape and dtype checks) and safetensors files, both ways with the reference package."""
import io, json, struct
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as hst
from tg.tensor import Tensor, GlobalCounters, dtypes
from tg.tensor import nn
from tg.tensor.nn.state import get_state_dict, get_parameters, load_state_dict, safe_save, safe_load

class Net:
  def __init__(self):
    self.c = nn.Conv2d(1, 2, 3)
    self.layers = [nn.Linear(4, 3), nn.BatchNorm(3)]

def test_state_dict_names_and_parameters():
  net = Net()
  sd = get_state_dict(net)
  assert sorted(sd) == ["c.bias", "c.weight", "layers.0.bias", "layers.0.weight", "layers.1.bias", "layers.1.num_batches_tracked",
                        "layers.1.running_mean", "layers.1.running_var", "layers.1.weight"]
  net.shared = net.c.weight
  assert len(get_parameters(net)) == 9
  arrays = type("Arrays", (), {})()  # tensor_type: another library's tensors, walked the same way (tinygrad's keyword)
  arrays.w, arrays.parts = np.zeros(2), [np.ones(3), {"b": np.zeros(1)}]
  assert sorted(get_state_dict(arrays, tensor_type=np.ndarray)) == ["parts.0", "parts.1.b", "w"] and get_state_dict(arrays) == {}

def test_load_state_dict_copies_in_place_and_checks():
  a, b = Net(), Net()
  w_before = b.c.weight
  load_state_dict(b, get_state_dict(a))
  assert b.c.weight is w_before
  for k, v in get_state_dict(a).items(): np.testing.assert_array_equal(get_state_dict(b)[k].numpy(), v.numpy(), err_msg=k)
  sd = get_state_dict(a)
  with pytest.raises(KeyError, match=r"missing \['c.bias'\], unexpected \['extra'\]"):
    load_state_dict(b, {**{k: v for k, v in sd.items() if k != "c.bias"}, "extra": Tensor([1.0])})
  load_state_dict(b, {"c.bias": Tensor([5.0, 6.0])}, strict=False)
  assert b.c.bias.tolist() == [5.0, 6.0]
  with pytest.raises(ValueError, match=r"Shape mismatch in layer `c.weight`: Expected shape \(2, 1, 3, 3\), but found \(2, 1, 3\) in state dict"):
    load_state_dict(b, {"c.weight": Tensor.zeros(2, 1, 3)}, strict=False)
  load_state_dict(b, {"c.bias": Tensor([1, 2], dtype=dtypes.half)}, strict=False)  # tinygrad's: it takes the dtype
  assert b.c.bias.dtype == dtypes.half and b.c.bias.tolist() == [1.0, 2.0]

def test_load_state_dict_as_tinygrad():
  """realize=False allocates nothing for an unrealized model (it realized the random init to assign into it); the loaded
  tensors are returned; () and (1,) are one shape; the model gets a copy, not the state dict's buffers (training it must
  not change the checkpoint it loaded)."""
  layer = nn.Linear(256, 256, bias=False)
  before = GlobalCounters.mem_used
  loaded = load_state_dict(layer, {"weight": Tensor.ones(256, 256) * 0.5}, realize=False)
  assert GlobalCounters.mem_used <= before and loaded == [layer.weight]
  assert not layer.weight.uop.is_realized  # (tinygrad's name: nothing left to compute)
  assert (layer.weight.numpy() == 0.5).all() and layer.weight.uop.is_realized and layer.weight.T.uop.is_realized
  scale = type("Scale", (), {})()
  scale.s = Tensor([2.0])
  load_state_dict(scale, {"s": Tensor(3.0)})
  assert scale.s.shape == (1,) and scale.s.tolist() == [3.0]
  src, dst = nn.Linear(2, 2), nn.Linear(2, 2)
  want = src.weight.numpy()
  load_state_dict(dst, get_state_dict(src))
  dst.weight.assign(dst.weight + 1).realize()
  np.testing.assert_array_equal(src.weight.numpy(), want)
  np.testing.assert_array_equal(dst.weight.numpy(), want + 1)

ARRAYS = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 7, "f16": np.array([1.5, -2.25], np.float16), "i64": np.array([-(2 ** 40), 3]),
          "u8": np.arange(5, dtype=np.uint8), "b": np.array([True, False]), "i32_0d": np.array(7, np.int32)}

def test_safe_save_load_round_trip(tmp_path):
  ts = {k: Tensor(v) for k, v in ARRAYS.items()}
  ts["bf16"] = Tensor([1.0, -3.5, 0.15625]).cast(dtypes.bfloat16)
  ts["e4m3"], ts["e5m2"] = Tensor([0.5, -448.0]).cast(dtypes.fp8e4m3), Tensor([0.5, 57344.0]).cast(dtypes.fp8e5m2)  # (it refused fp8)
  safe_save(ts, tmp_path / "m.safetensors", metadata={"who": "tg"})
  raw = (tmp_path / "m.safetensors").read_bytes()
  n = struct.unpack("<Q", raw[:8])[0]
  header = json.loads(raw[8:8 + n])
  assert (8 + n) % 8 == 0 and header["__metadata__"] == {"who": "tg"} and header["f32"] == {"dtype": "F32", "shape": [2, 3],
                                                                                         "data_offsets": [0, 24]}
  back = safe_load(tmp_path / "m.safetensors")
  for k, v in ARRAYS.items():
    assert back[k].dtype == ts[k].dtype and back[k].shape == v.shape
    np.testing.assert_array_equal(back[k].numpy(), v)
  assert back["bf16"].dtype == dtypes.bfloat16 and back["bf16"].float().tolist() == [1.0, -3.5, 0.15625]
  assert header["e4m3"]["dtype"] == "F8_E4M3" and header["e5m2"]["dtype"] == "F8_E5M2"  # the format's names
  # the OCP codes by hand: 0.5 is 0.0110.000 in E4M3, -448 1.1111.110; 0.5 is 0.01110.00 in E5M2, 57344 0.11110.11
  assert back["e4m3"].bitcast(dtypes.uint8).tolist() == [0x30, 0xFE] and back["e5m2"].bitcast(dtypes.uint8).tolist() == [0x38, 0x7B]
  for src in (Tensor(tmp_path / "m.safetensors"), Tensor(raw)):  # a tensor of the bytes (a DISK one, one in memory), as tinygrad's
    again = safe_load(src)
    assert again.keys() == back.keys() and all(again[k].numpy().tobytes() == back[k].numpy().tobytes() for k in back)

def test_model_round_trip_through_a_file(tmp_path):
  a, b = Net(), Net()
  safe_save(get_state_dict(a), tmp_path / "net.safetensors")
  load_state_dict(b, safe_load(tmp_path / "net.safetensors"))
  np.testing.assert_array_equal(b.layers[0].weight.numpy(), a.layers[0].weight.numpy())

def test_interop_with_the_safetensors_package(tmp_path):
  st = pytest.importorskip("safetensors.numpy")
  safe_save({k: Tensor(v) for k, v in ARRAYS.items()}, tmp_path / "ours.safetensors")
  theirs = st.load_file(str(tmp_path / "ours.safetensors"))
  for k, v in ARRAYS.items(): np.testing.assert_array_equal(theirs[k], v)
  st.save_file({k: np.ascontiguousarray(v) for k, v in ARRAYS.items()}, str(tmp_path / "theirs.safetensors"), metadata={"a": "b"})
  ours = safe_load(tmp_path / "theirs.safetensors")
  for k, v in ARRAYS.items(): np.testing.assert_array_equal(ours[k].numpy(), v)

# ***** malformed files: SafetensorsError naming the file, never an internal exception; whatever the reference loads, we load alike *****

def _reference_file() -> bytes:
  st = pytest.importorskip("safetensors.numpy")
  return st.save({k: np.ascontiguousarray(v) for k, v in ARRAYS.items()}, metadata={"a": "b"})

json_value = hst.recursive(hst.none() | hst.booleans() | hst.integers(-2**70, 2**70) | hst.floats(allow_nan=False) | hst.text(max_size=4),
                           lambda inner: hst.lists(inner, max_size=3) | hst.dictionaries(hst.text(max_size=4), inner, max_size=3), max_leaves=6)

def _with_header(raw: bytes, edit) -> bytes:
  n = struct.unpack("<Q", raw[:8])[0]
  header = json.loads(raw[8:8 + n])
  edit(header)
  js = json.dumps(header).encode()
  return struct.pack("<Q", len(js)) + js + raw[8 + n:]

byte_edits = hst.lists(hst.tuples(hst.sampled_from(["set", "cut", "insert"]), hst.floats(0, 1), hst.binary(min_size=1, max_size=3)),
                       min_size=1, max_size=3)
field_edits = hst.tuples(hst.sampled_from(sorted(ARRAYS) + ["__metadata__", "new"]), hst.sampled_from(["dtype", "shape", "data_offsets", None]),
                         json_value)

def _mutate_bytes(raw: bytes, edits) -> bytes:
  for kind, where, blob in edits:
    i = int(where * len(raw))
    raw = raw[:i] + blob + raw[i + len(blob):] if kind == "set" else raw[:i] if kind == "cut" else raw[:i] + blob + raw[i:]
  return raw

def _mutate_field(raw: bytes, edit) -> bytes:
  name, field, value = edit
  def apply(h: dict) -> None:
    if field is None or not isinstance(h.get(name), dict): h[name] = value
    else: h[name][field] = value
  return _with_header(raw, apply)

def test_null_metadata_is_no_metadata(tmp_path):
  """The reference reads "__metadata__": null as none (hypothesis found the difference)."""
  from safetensors.numpy import load as reference_load
  raw = _mutate_field(_reference_file(), ("__metadata__", None, None))
  (path := tmp_path / "m.safetensors").write_bytes(raw)
  theirs = reference_load(raw)
  ours = {k: v.numpy() for k, v in safe_load(path).items()}
  assert sorted(ours) == sorted(theirs) and all(ours[k].tobytes() == v.tobytes() for k, v in theirs.items())

@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hst.one_of(byte_edits.map(lambda e: ("bytes", e)), field_edits.map(lambda e: ("field", e))))
def test_fuzz_mutated_files_against_the_reference(tmp_path, mutation):
  from safetensors.numpy import load as reference_load
  from tg.tensor.nn.state import SafetensorsError
  raw = _reference_file()
  raw = _mutate_bytes(raw, mutation[1]) if mutation[0] == "bytes" else _mutate_field(raw, mutation[1])
  (path := tmp_path / "m.safetensors").write_bytes(raw)
  try: ours = {k: v.numpy() for k, v in safe_load(path).items()}
  except SafetensorsError as e:
    assert str(e).startswith(f"{path}: "), e
    ours = None
  try: theirs = reference_load(raw)
  except Exception: theirs = None  # noqa: BLE001 -- the reference raises its own error types
  if theirs is not None:
    assert ours is not None and sorted(ours) == sorted(theirs)
    for k, v in theirs.items(): assert ours[k].dtype == v.dtype and ours[k].shape == v.shape and ours[k].tobytes() == v.tobytes(), k

def test_load_state_dict_num_batches_tracked():
  """PyTorch saves BatchNorm's counter 0-d int64; a checkpoint without it (PyTorch's older ones) loads too."""
  bn = nn.BatchNorm(3)
  sd = {"weight": Tensor([1.0, 2.0, 3.0]), "bias": Tensor.zeros(3), "running_mean": Tensor.zeros(3), "running_var": Tensor.ones(3),
        "num_batches_tracked": Tensor(np.array(7, np.int64))}
  load_state_dict(bn, sd)
  assert bn.num_batches_tracked.shape == () and bn.num_batches_tracked.dtype == dtypes.int64 and bn.num_batches_tracked.item() == 7
  del sd["num_batches_tracked"]
  load_state_dict(bn, sd)
  assert bn.num_batches_tracked.item() == 7 and bn.weight.tolist() == [1.0, 2.0, 3.0]
  plain = nn.BatchNorm(1, track_running_stats=False)  # no counter of its own: a saved one is not "unexpected"
  load_state_dict(plain, {"weight": Tensor([2.0]), "bias": Tensor([1.0]), "num_batches_tracked": Tensor.ones(1)})
  assert plain.weight.tolist() == [2.0] and not hasattr(plain, "num_batches_tracked")
  plain.num_batches_tracked = Tensor.ones(1)  # a float counter takes a 0-d value
  load_state_dict(plain, {"weight": Tensor([2.0]), "bias": Tensor([1.0]), "num_batches_tracked": Tensor(5.0)})
  assert plain.num_batches_tracked.tolist() == [5.0]
  with pytest.raises(ValueError, match=r"Shape mismatch in layer `weight`: Expected shape \(2, 2\), but found \(4, 4\) in state dict."):
    load_state_dict(nn.Linear(2, 2, bias=False), {"weight": Tensor.zeros(4, 4)})

def test_pickle_protocol_5_hands_the_bytes_out_of_band():
  """As numpy's arrays (tinygrad's test_pickle_oob_ram): with protocol 5 and a buffer_callback the tensors' bytes are the
  buffers' own memory, not copies (8 tensors of 4 MB peaked at 78 MB to pickle, 64 MB to load); in band, as before."""
  import pickle, tracemalloc
  vals = [np.random.default_rng(i).standard_normal(250_000).astype(np.float32) for i in range(4)]
  ts = [Tensor(v).realize() for v in vals]
  oob: list = []
  tracemalloc.start()
  try:
    s = pickle.dumps(ts, protocol=5, buffer_callback=oob.append)
    dumped = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    back = pickle.loads(s, buffers=oob)
    loaded = tracemalloc.get_traced_memory()[1]
  finally: tracemalloc.stop()
  assert len(oob) == 4 and len(s) < 10_000 and dumped < 1_000_000 and loaded < 1_000_000, (len(s), dumped, loaded)
  for got, v in zip(back, vals): np.testing.assert_array_equal(got.numpy(), v)
  for got, v in zip(pickle.loads(pickle.dumps(ts, protocol=5)), vals): np.testing.assert_array_equal(got.numpy(), v)

def test_a_pickled_tensor_holds_its_data():
  """A tensor pickles with its buffers' bytes and unpickles onto buffers of its own, realized or lazy, after the original
  is gone or written (unpickled after `del t`, it raised KeyError: only the graph was pickled)."""
  import pickle
  from tg.tensor import Counters
  vals = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
  t = Tensor(vals).realize()
  s = pickle.dumps(t)
  del t
  Counters.reset()
  t2 = pickle.loads(s)
  np.testing.assert_array_equal(t2.numpy(), vals)
  assert Counters.kernels == 0, "a realized tensor unpickles realized"
  a = Tensor([1.0, 2.0, 3.0]).realize()
  s = pickle.dumps(a * 2 + 1)
  a.assign(Tensor([0.0, 0.0, 0.0])).realize()  # the unpickled graph keeps the values it was pickled with
  np.testing.assert_array_equal(pickle.loads(s).numpy(), [3.0, 5.0, 7.0])
  w = pickle.loads(pickle.dumps(Tensor([1.0, 2.0], requires_grad=True)))
  assert w.requires_grad
  sharded = pickle.loads(pickle.dumps(Tensor(vals).shard(("CPU", "CPU:1"), 0).realize()))
  assert sharded.device == ("CPU", "CPU:1")
  np.testing.assert_array_equal(sharded.numpy(), vals)

def test_tensor_io_reads_and_seeks_like_a_file_clamped_at_its_ends():
  """tinygrad's TensorIO over the bytes of Tensor(b"Hello World!"): reads as io.BytesIO of the same bytes would; a seek
  past an end stops at it (BytesIO's would go past the end)."""
  from tg.tensor.nn.state import TensorIO
  data = b"Hello World!"
  f, ref = TensorIO(Tensor(data)), io.BytesIO(data)
  for size in (1, 5, 100, 100):
    assert f.read(size) == ref.read(size)
  assert (f.seek(2), f.read()) == (2, data[2:])
  assert [f.seek(1), f.seek(-2, 2), f.seek(1, 1), f.seek(10, 1), f.seek(10, 2), f.seek(-10, 0), f.tell()] == [1, 10, 11, 12, 12, 0, 0]
  buf = bytearray(4)
  assert (f.readinto(buf), bytes(buf), f.tell()) == (4, b"Hell", 4)
  for bad in (Tensor(data).reshape(1, -1), Tensor([1, 2])):
    with pytest.raises(ValueError, match="1-d uint8"): TensorIO(bad)

def test_state_dict_names_a_namedtuple_by_field_and_sees_a_containers_attributes():
  """tinygrad's naming: a namedtuple's tensors by field name; a list or dict subclass's attributes after its items, an
  attribute winning over an item of the same name."""
  from collections import OrderedDict, namedtuple
  Pair = namedtuple("Pair", ["first", "second"])
  assert list(get_state_dict(OrderedDict(pair=Pair(Tensor([1.0]), Tensor([2.0]))))) == ["pair.first", "pair.second"]
  class Layers(list): pass
  class Table(dict): pass
  layers = Layers([Tensor([3.0])])
  layers.weight = Tensor([1.0, 2.0])
  assert list(get_state_dict({"model": layers})) == ["model.0", "model.weight"] and len(get_parameters(layers)) == 2
  a, b = Tensor([1.0]), Tensor([2.0])
  table = Table(weight=a)
  table.weight = b
  assert get_state_dict(table)["weight"] is b
