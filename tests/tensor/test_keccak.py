"""Tensor.keccak against Python's hashlib (SHA-3 and SHAKE, FIPS 202)."""
from __future__ import annotations
import hashlib
import numpy as np
import pytest
from hypothesis import given, settings, strategies as hst
from tg.tensor import Tensor
from tg.tensor.jit import TinyJit
from tg.tensor.errors import TensorDtypeError, TensorValueError

DIGESTS = {"sha3_224": lambda d: hashlib.sha3_224(d).digest(), "sha3_256": lambda d: hashlib.sha3_256(d).digest(),
           "sha3_384": lambda d: hashlib.sha3_384(d).digest(), "sha3_512": lambda d: hashlib.sha3_512(d).digest(),
           "shake_128": lambda d: hashlib.shake_128(d).digest(16), "shake_256": lambda d: hashlib.shake_256(d).digest(32)}
RATES = {"sha3_224": 144, "sha3_256": 136, "sha3_384": 104, "sha3_512": 72, "shake_128": 168, "shake_256": 136}

def test_abc():
  """The standard's example: SHA3-256("abc")."""
  assert bytes(Tensor(b"abc").keccak().tolist()).hex() == "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532"

@pytest.mark.parametrize("name", list(DIGESTS))
def test_lengths_around_the_rate(name):
  """Empty, one byte short of the rate (the suffix and the final bit share a byte), the rate, two blocks; rows of a batch."""
  rng = np.random.default_rng(len(name))
  for n in (0, RATES[name] - 1, RATES[name], 2 * RATES[name] + 5):
    rows = rng.integers(0, 256, (2, n), dtype=np.uint8)
    got = Tensor(rows).keccak(name).numpy()
    assert got.shape == (2, len(DIGESTS[name](b""))) and got.dtype == np.uint8
    for row, digest in zip(rows, got): assert bytes(digest) == DIGESTS[name](row.tobytes())

@settings(max_examples=20, deadline=None)
@given(hst.binary(max_size=400), hst.sampled_from(list(DIGESTS)))
def test_any_message(data, name):
  assert bytes(Tensor(data).keccak(name).tolist()) == DIGESTS[name](data)

def test_batch_shapes_are_kept_and_a_rate_may_be_given():
  x = Tensor(np.arange(2 * 3 * 5, dtype=np.uint8).reshape(2, 3, 5))
  assert x.keccak().shape == (2, 3, 32)
  assert bytes(x.keccak((0x06, 136))[1, 2].tolist()) == hashlib.sha3_256(bytes(range(25, 30))).digest()

def test_inside_a_jitted_function():
  """Captured with the function (the permutation isn't jitted on its own there), replayed on new bytes."""
  f = TinyJit(lambda t: t.keccak())
  for word in (b"one", b"two", b"six", b"ten"):
    assert bytes(f(Tensor(word)).tolist()) == hashlib.sha3_256(word).digest()

def test_bad_input():
  with pytest.raises(TensorDtypeError, match="uint8"): Tensor([1, 2]).keccak()
  with pytest.raises(TensorValueError, match="preset 'sha3_999'"): Tensor(b"a").keccak("sha3_999")
  with pytest.raises(TensorValueError, match="multiple of 8"): Tensor(b"a").keccak((6, 100))
