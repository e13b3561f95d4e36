"""The LLVM IR renderer: bfloat16 literals are tg.uop.floatconv's round-to-nearest-even (checked against tg.uop.dtype's
Python reference, a separate algorithm, over all float32 values hypothesis finds, and against hand-computed bits), and a UOp
it has no rule for is a NotImplementedError that names it."""
import math
import struct
import pytest
from hypothesis import given, strategies as st
from tg.codegen.renderer.llvmir import LLVMRenderer, lconst
from tg.uop import Ops, UOp, dtypes
from tg.uop.dtype import float_to_bits

@given(st.floats(width=32, allow_nan=False))
def test_bf16_literal_rounds_like_the_python_reference(x):
  assert lconst(x, dtypes.bfloat16) == f"0xR{float_to_bits(x, dtypes.bfloat16):04X}"

@pytest.mark.parametrize("x, bits", [(1.0, 0x3F80), (1 + 2**-8, 0x3F80), (1 + 3 * 2**-8, 0x3F82), (-2.5, 0xC020), (math.inf, 0x7F80),
                                     (3.4e38, 0x7F80), (1e-40, 0x0001), (-0.0, 0x8000), (float("nan"), 0x7FC0),
                                     (struct.unpack("<f", struct.pack("<I", 0xFF800001))[0], 0xFFC0)],  # a negative signalling NaN: quiet, sign kept
                         ids=["one", "tie-even", "tie-up", "neg", "inf", "overflow", "denormal", "neg-zero", "nan", "neg-snan"])
def test_bf16_literal_hand_computed(x, bits):
  assert lconst(x, dtypes.bfloat16) == f"0xR{bits:04X}"

def test_unknown_uop_names_it():
  with pytest.raises(NotImplementedError, match="can't render Ops.CONTRACT"):
    LLVMRenderer().render([UOp(Ops.CONTRACT, dtypes.float32.vec(2), (UOp.const(dtypes.float32, 1.0),), ((0, 2),))])
