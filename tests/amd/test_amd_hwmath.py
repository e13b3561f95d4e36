"""exp2, log2, sqrt and reciprocal on AMD are the hardware instructions for float32 and float16 (llvm-objdump-19 finds
v_exp_f32, v_log_f32, v_sqrt_f32, v_rcp_f32 and the f16 forms, or gfx12's scalar v_s_ forms, in the code object, and no
software polynomial), within their documented 1 ulp of the float64 numpy value on both virtual GPUs, denormal float32
results and inputs included (LLVM scales them around the instruction); float64 stays software (no such instructions)."""
import re
import numpy as np
import pytest
from amd_code import disassemble
from tg.tensor import Tensor
from tg.uop import Ops, dtypes

ARCHS = pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])
OPS = {"exp2": (lambda t: t.exp2(), np.exp2, "v_exp"), "log2": (lambda t: t.log2(), np.log2, "v_log"),
       "sqrt": (lambda t: t.sqrt(), np.sqrt, "v_sqrt"), "reciprocal": (lambda t: t.reciprocal(), np.reciprocal, "v_rcp")}

def inputs(name: str, dt) -> np.ndarray:
  lo, hi = (-14, 15) if dt == np.float16 else (-120 if name == "reciprocal" else -140, 120)  # float32: 2**-140 is a denormal
  x = np.linspace(lo, hi, 61) if name == "exp2" else np.exp2(np.linspace(lo, hi, 61))
  return np.concatenate([x, [1.0, 2.0, 0.75, 3.0]]).astype(dt)

def disassembly(dev: str, fn, x: np.ndarray) -> str:
  (k,) = [ei for ei in fn(Tensor(x, device=dev, dtype=dtypes.float64 if x.dtype == np.float64 else None)).schedule() if ei.ast.op is Ops.SINK]
  return disassemble(dev, k.ast)

@ARCHS
@pytest.mark.parametrize("dt", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("name", list(OPS))
def test_hardware_instruction_within_one_ulp(dev, dt, name):
  fn, ref, mnemonic = OPS[name]
  x = inputs(name, dt)
  want = ref(x.astype(np.float64))
  got = fn(Tensor(x, device=dev)).numpy()
  assert got.dtype == dt
  assert (np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want).astype(dt)).astype(np.float64)).max() <= 1.0
  asm = disassembly(dev, fn, x)
  assert re.search(rf"\b{mnemonic[:2]}(s_)?{mnemonic[2:]}_{'f32' if dt == np.float32 else 'f16'}", asm)
  if name in ("exp2", "log2"): assert "v_fma" not in asm and "v_fmac" not in asm  # no polynomial

@ARCHS
def test_float64_exp2_stays_software(dev):
  x = np.linspace(-30.3, 30.1, 13)
  got = Tensor(x, device=dev, dtype=dtypes.float64).exp2().numpy()
  assert got.dtype == np.float64
  np.testing.assert_allclose(got, np.exp2(x), rtol=1e-15)
  assert "v_exp" not in disassembly(dev, lambda t: t.exp2(), x)
