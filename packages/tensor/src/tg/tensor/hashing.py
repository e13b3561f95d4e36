"""Keccak hashes (SHA-3, SHAKE) of the last axis of a uint8 tensor, computed on the device: Tensor.keccak, as tinygrad's.

The facts (FIPS 202):
- The state is 25 little-endian uint64 lanes, lane x + 5y.
- A message is padded to a multiple of the rate: the variant's suffix byte (0x06 for SHA-3, 0x1F for SHAKE), zeros, then
  0x80, OR-ed into the suffix byte when the two fall together.
- Each rate-sized block is XOR-ed into the first lanes. Keccak-f[1600] then runs 24 rounds of theta, rho, pi, chi and
  iota.
- The digest is the first bytes of the state (one squeeze, so at most a rate of them).

The round constants and rotation offsets are computed here by the standard's own recipes (an LFSR, the triangular
numbers), not listed."""
from __future__ import annotations
import functools
from typing import TYPE_CHECKING, Any
import numpy as np
from tg.uop import dtypes
from tg.tensor.errors import TensorDtypeError, TensorValueError
if TYPE_CHECKING: from tg.tensor.tensor import Tensor

PRESETS = {"sha3_224": (0x06, 144), "sha3_256": (0x06, 136), "sha3_384": (0x06, 104), "sha3_512": (0x06, 72),
           "shake_128": (0x1F, 168), "shake_256": (0x1F, 136)}  # (suffix byte, rate in bytes); the digest is (200 - rate) / 2 bytes

def _rc_bit(t: int) -> int:
  """Bit rc(t) of the standard's 8-bit LFSR (x^8 + x^6 + x^5 + x^4 + 1)."""
  r = 1
  for _ in range(t % 255): r = ((r << 1) ^ (0x71 if r & 0x80 else 0)) & 0xFF
  return r & 1

@functools.cache
def round_constants() -> tuple[int, ...]:
  """RC of each of the 24 rounds: bit 2^j - 1 is rc(j + 7 * round)."""
  return tuple(sum(_rc_bit(j + 7 * i) << ((1 << j) - 1) for j in range(7)) for i in range(24))

@functools.cache
def rho_pi() -> tuple[tuple[int, ...], tuple[int, ...]]:
  """For each lane after rho and pi, the lane it comes from and that lane's rotation: lane (x, y) rotates by the
  (t + 1)(t + 2) / 2-th triangular number along the walk (1, 0) -> (y, 2x + 3y), and pi moves (x, y) to (y, 2x + 3y)."""
  rot, (x, y) = [0] * 25, (1, 0)
  for t in range(24):
    rot[x + 5 * y] = (t + 1) * (t + 2) // 2 % 64
    x, y = y, (2 * x + 3 * y) % 5
  src = [0] * 25
  for x in range(5):
    for y in range(5): src[y + 5 * ((2 * x + 3 * y) % 5)] = x + 5 * y
  return tuple(src), tuple(rot[s] for s in src)

def _rotl(a: Tensor, r: Tensor) -> Tensor: return (a << r) | (a >> ((64 - r) & 63))  # (the & 63: r = 0 shifts by 0, not 64)

def _keccak_f(a: Tensor) -> Tensor:
  """The 24 rounds on lanes (..., 25) uint64, each realized on its own (the round's constant a buffer, so every round is
  the same compiled kernels)."""
  from tg.tensor.tensor import Tensor
  src, rot = rho_pi()
  rot_t = Tensor(np.array(rot, np.uint64), a.device)
  one = Tensor(np.ones(5, np.uint64), a.device)
  for rc in round_constants():
    s = a.reshape(*a.shape[:-1], 5, 5)  # (y, x)
    c = s[..., 0, :] ^ s[..., 1, :] ^ s[..., 2, :] ^ s[..., 3, :] ^ s[..., 4, :]
    d = c[..., [4, 0, 1, 2, 3]] ^ _rotl(c[..., [1, 2, 3, 4, 0]], one)
    b = _rotl((s ^ d.unsqueeze(-2)).reshape(a.shape)[..., list(src)], rot_t).reshape(s.shape)
    chi = b ^ ((b[..., [1, 2, 3, 4, 0]] ^ 0xFFFFFFFFFFFFFFFF) & b[..., [2, 3, 4, 0, 1]])
    a = (chi.reshape(a.shape) ^ Tensor(np.array([rc] + [0] * 24, np.uint64), a.device)).realize()
  return a

@functools.lru_cache(maxsize=16)
def _jitted(shape: tuple, device: str) -> Any:
  """Keccak-f for states of one shape, captured once: a block then costs the replay of its kernels, not building 24
  rounds of graph (10 KB hashed in 21 s before)."""
  from tg.tensor.jit import TinyJit
  return TinyJit(_keccak_f)

def _permutation(a: Tensor) -> Tensor:
  """Keccak-f of the state: jitted, except inside a TinyJit's capture (one doesn't nest in another)."""
  from tg.tensor.realize import capturing
  return _keccak_f(a) if capturing else _jitted(a.shape, a.device)(a)

class HashMixin:
  def keccak(self: Tensor, cfg: str | tuple[int, int] = "sha3_256") -> Tensor:  # type: ignore[misc]
    """The Keccak digest of the last axis (bytes, uint8), for every row: cfg a preset name (sha3_224/256/384/512,
    shake_128/256, a SHAKE giving its security's bytes: 16 and 32) or (suffix byte, rate in bytes)."""
    from tg.tensor.tensor import Tensor
    if self.dtype != dtypes.uint8: raise TensorDtypeError(f"keccak hashes bytes (uint8), not {self.dtype}: bitcast the tensor first")
    if isinstance(cfg, str) and cfg not in PRESETS: raise TensorValueError(f"keccak preset {cfg!r} isn't one of {', '.join(PRESETS)}")
    suffix, rate = PRESETS[cfg] if isinstance(cfg, str) else cfg
    if not (0 < rate < 200 and rate % 8 == 0): raise TensorValueError(f"a keccak rate is a multiple of 8 bytes below 200, got {rate}")
    x = self if self.ndim else self.reshape(1)
    n, batch = x.shape[-1], x.shape[:-1]
    pad = np.zeros((n // rate + 1) * rate - n, np.uint8)
    pad[0] = suffix
    pad[-1] |= 0x80  # (the same byte as the suffix when one byte is left)
    msg = x.cat(Tensor(pad, x.device).expand(*batch, len(pad)), dim=-1).cast(dtypes.uint64)
    shifts = Tensor(np.arange(0, 64, 8, dtype=np.uint64), x.device)
    lanes = (msg.reshape(*batch, -1, rate // 8, 8) << shifts).sum(-1, dtype=dtypes.uint64).realize()  # little-endian bytes to lanes
    state = Tensor.zeros(*batch, 25, dtype=dtypes.uint64, device=x.device).contiguous()
    for i in range(lanes.shape[-2]): state = _permutation(state ^ lanes[..., i, :].pad(((0, 0),) * len(batch) + ((0, 25 - rate // 8),)))
    out = (200 - rate) // 2
    digest = (state[..., :-(-out // 8)].unsqueeze(-1) >> shifts) & 0xFF
    # (realized: the state is the jitted permutation's output buffer, which the next hash of this shape overwrites)
    return digest.cast(dtypes.uint8).reshape(*batch, -1)[..., :out].contiguous().realize()
