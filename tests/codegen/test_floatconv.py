"""One float-conversion semantics (issue #22): float32 <-> bfloat16/fp8 casts give the same bits on CPU (the C helpers are
tg.uop.floatconv's graphs rendered), PYTHON (tg.uop.dtype's Python functions) and in those Python functions themselves, all
checked bit for bit (NaN bits too) against floatconv_ref's hand computation from the IEEE bit layout, on every fp8 code and
a dense sample of float32 inputs. tests/amd/test_amd_floatconv.py checks the virtual GPUs the same way."""
import struct
import numpy as np
import pytest
from floatconv_ref import FORMATS, codes, decode, encode, f32_inputs
from tg.uop import AxisType, DType, KernelInfo, UOp, dtypes
from tg.uop.dtype import float_to_bits, bits_to_float, truncate
from tg.codegen.device import Buffer, Device
from tg.codegen.pipeline import CompiledRunner, get_program

DT = {"bf16": dtypes.bfloat16, **{f: getattr(dtypes, "fp8" + f) for f in FORMATS if f != "bf16"}}  # e4m3 is dtypes.fp8e4m3, ...
STORE = {dtypes.float32: np.uint32, dtypes.bfloat16: np.uint16, **{DT[f]: np.uint8 for f in FORMATS if f != "bf16"}}

def cast_kernel(dev: str, x: np.ndarray, frm: DType, to: DType) -> np.ndarray:
  """out[i] = in[i].cast(to), the buffers as raw bits."""
  n = len(x)
  out, inp, i = UOp.param(0, to, (n,)), UOp.param(1, frm, (n,)), UOp.range(n, 0, AxisType.LOOP)
  ast = out[i].store(inp[i].cast(to)).end(i).sink(arg=KernelInfo(name="conv", opts_to_apply=()))
  bufs = [Buffer(dev, n, to).allocate(), Buffer(dev, n, frm).allocate()]
  bufs[1].copyin(memoryview(np.ascontiguousarray(x)).cast("B"))
  CompiledRunner(get_program(ast, Device[dev].renderer))(bufs, {}, wait=True)
  got = np.empty(n, STORE[to])
  bufs[0].copyout(memoryview(got).cast("B"))
  return got

def assert_bits(got: np.ndarray, x: np.ndarray, want: list[int], what: str) -> None:
  bad = np.flatnonzero(got.astype(np.int64) != np.array(want, np.int64))
  assert not len(bad), f"{what}: {len(bad)} wrong, e.g. " + ", ".join(f"{x[j]:#x} -> {got[j]:#x} (want {want[j]:#x})" for j in bad[:5])

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_cast_from_float32(fmt: str, dev: str):
  x = f32_inputs(fmt)
  assert_bits(cast_kernel(dev, x, dtypes.float32, DT[fmt]), x, [encode(int(b), fmt) for b in x], f"{dev} float32 -> {fmt}")

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_cast_to_float32(fmt: str, dev: str):
  c = codes(fmt) if dev == "CPU" else python_codes(fmt)
  assert_bits(cast_kernel(dev, c, DT[fmt], dtypes.float32), c, [decode(int(b), fmt) for b in c], f"{dev} {fmt} -> float32")

def python_codes(fmt: str) -> np.ndarray:
  """The codes, but for bfloat16's signalling NaNs: PYTHON's documented limit (tests/codegen/test_alu.py's bitcast test) is
  that a float32 is written by CPython's struct, which quiets a signalling NaN; widening one from bfloat16 keeps it as it is."""
  c = codes(fmt)
  return c[~(((c & 0x7FC0) == 0x7F80) & ((c & 0x3F) != 0))] if fmt == "bf16" else c

@pytest.mark.parametrize("fmt", list(FORMATS))
def test_python_functions(fmt: str):
  """Constant folding's conversions, as the PYTHON device runs them on Python floats (a float32 read and written by struct): a
  cast (truncate) then the stored bits (float_to_bits), and bits_to_float cast to float32."""
  dt = DT[fmt]
  x = f32_inputs(fmt)
  vals = [struct.unpack("<f", struct.pack("<I", int(b)))[0] for b in x]
  assert_bits(np.array([float_to_bits(truncate[dt](v), dt) for v in vals]), x, [encode(int(b), fmt) for b in x], f"{fmt} cast")
  c = python_codes(fmt)
  f32 = [float_to_bits(truncate[dtypes.float32](bits_to_float(int(b), dt)), dtypes.float32) for b in c]
  assert_bits(np.array(f32), c, [decode(int(b), fmt) for b in c], f"{fmt} -> float32")

@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "bf16"])
def test_non_saturating_builder(fmt: str):
  """saturate=False (the emulator's v_cvt_pk_fp8/bf8_f32, OCP's non-saturating mode; PyTorch's fnuz casts) differs only past
  the largest value."""
  from tg.uop import f32_to_fp8_bits
  x = f32_inputs(fmt)
  n = len(x)
  out, inp, i = UOp.param(0, dtypes.uint32, (n,)), UOp.param(1, dtypes.float32, (n,)), UOp.range(n, 0, AxisType.LOOP)
  ast = out[i].store(f32_to_fp8_bits(inp[i], DT[fmt], saturate=False)).end(i).sink(arg=KernelInfo(name="conv", opts_to_apply=()))
  bufs = [Buffer("CPU", n, dtypes.uint32).allocate(), Buffer("CPU", n, dtypes.float32).allocate()]
  bufs[1].copyin(memoryview(x).cast("B"))
  CompiledRunner(get_program(ast, Device["CPU"].renderer))(bufs, {}, wait=True)
  got = np.empty(n, np.uint32)
  bufs[0].copyout(memoryview(got).cast("B"))
  assert_bits(got, x, [encode(int(b), fmt, saturate=False) for b in x], f"non-saturating float32 -> {fmt}")
