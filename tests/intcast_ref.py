"""Float -> integer casts as tg defines them (tg.codegen.lower.decompositions._float_to_int), computed here by hand:
truncate toward zero, then wrap modulo 2^bits into the target's range."""
import math
import numpy as np
from tg.uop import dtypes

TARGETS = {dtypes.int8: np.int8, dtypes.uint8: np.uint8, dtypes.int16: np.int16, dtypes.uint16: np.uint16,
           dtypes.uint32: np.uint32, dtypes.uint64: np.uint64}
# in range of every conversion's intermediate (int32 for 8/16-bit targets, int64 beyond); halves, negatives, wraps
F32 = np.array([0.0, -0.0, 0.4, -0.6, 1.5, -1.5, -2.7, 127.9, 128.5, -129.2, 255.9, 256.0, 300.5, -300.5, 65535.5, 65536.0,
                -40000.25, 1e9, -1e9, 2.0**31 - 128], np.float32)
BIG = np.array([2.0**32, -2.0**40, 2.0**63, 1.5 * 2.0**63, 2.0**64 - 2.0**40, -1.0], np.float32)  # for the 32/64-bit targets

def inputs(target) -> np.ndarray: return F32 if target.itemsize < 4 else np.concatenate([F32, BIG[:2] if target == dtypes.uint32 else BIG])

def expected(x: np.ndarray, target) -> np.ndarray:
  bits, npt = 8 * target.itemsize, TARGETS[target]
  def one(v: float) -> int:
    w = math.trunc(v) % 2**bits
    return w - 2**bits if np.issubdtype(npt, np.signedinteger) and w >= 2**(bits - 1) else w
  return np.array([one(float(v)) for v in x], npt)
