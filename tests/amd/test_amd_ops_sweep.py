"""The edge-value sweep (tests/ops_cases.py: inf, NaN, -0.0, integer limits, negative division, ties) on the virtual
GPUs, against numpy: the LLVM AMDGPU renderer and the emulator must give what the CPU gives."""
import pytest
from ops_cases import ELEMENTWISE, REDUCE, run_case

@pytest.mark.parametrize("dev", ["AMD", "AMD:1"], ids=["rdna3", "rdna4"])
@pytest.mark.parametrize("case", ELEMENTWISE + REDUCE, ids=lambda c: c[0])
def test_edge_values_match_numpy(case, dev):
  run_case(case, dev)
