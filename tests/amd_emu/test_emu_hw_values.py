"""Single instructions against values measured on RDNA3/RDNA4 hardware (issues #14 and #25); encodings come from llvm-mc-19."""
from __future__ import annotations
import numpy as np
import pytest
from tg.amd_emu.emu import run_wave
from llvm import assemble as llvm_assemble

LANE = np.arange(32)

def run(text: str, arch: str = "rdna3", **kw):
  encs = llvm_assemble(text.split("\n"), arch)
  bad = [e for e in encs if isinstance(e, str)]
  assert not bad, bad
  return run_wave(b"".join(encs), arch, **kw)  # type: ignore[arg-type]

def full(x: int) -> np.ndarray: return np.full(32, x, np.uint32)

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_swap_writes_its_source(arch: str) -> None:
  w = run("v_swap_b32 v0, v1", arch, vgprs={0: full(42), 1: LANE}, exec_mask=0xFFFFFFFE)
  np.testing.assert_array_equal(w.v[0], np.where(LANE == 0, 42, LANE))
  np.testing.assert_array_equal(w.v[1], np.where(LANE == 0, 0, 42))  # lanes EXEC turns off keep both

@pytest.mark.parametrize("text,a,b,want", [
  ("v_add_co_u32 v2, vcc_lo, v0, v1 clamp", 0xFFFFFFFF, 1, 0xFFFFFFFF), ("v_sub_co_u32 v2, vcc_lo, v0, v1 clamp", 0, 1, 0),
  ("v_subrev_co_u32 v2, vcc_lo, v0, v1 clamp", 1, 0, 0), ("v_add_nc_i32 v2, v0, v1 clamp", 0x7FFFFFFF, 1, 0x7FFFFFFF),
  ("v_sub_nc_i32 v2, v0, v1 clamp", 0x80000000, 1, 0x80000000), ("v_add_nc_u32_e64 v2, v0, v1 clamp", 0xFFFFFFF0, 0x20, 0xFFFFFFFF),
  ("v_sub_nc_u32_e64 v2, v0, v1 clamp", 5, 6, 0), ("v_mad_u16 v2, v0, v1, 0 clamp", 0xFFFF, 2, 0xFFFF),
  ("v_add_nc_u16 v2, v0, v1 clamp", 0xFFFF, 2, 0xFFFF), ("v_sub_nc_i16 v2, v0, v1 clamp", 0x8000, 1, 0x8000),
  ("v_mad_u32_u16 v2, v0, v1, -1 clamp", 0xFFFF, 0xFFFF, 0xFFFFFFFF), ("v_mad_i32_i16 v2, v0, v1, 0 clamp", 0x8000, 0x8000, 0x40000000),
  ("v_add_co_ci_u32_e64 v2, s0, v0, v1, s1 clamp", 0xFFFFFFFF, 0, 0xFFFFFFFF), ("v_sub_co_ci_u32_e64 v2, s0, v0, v1, s1 clamp", 0, 0, 0),
  ("v_pk_add_u16 v2, v0, v1 clamp", 0xFFF00010, 0x00200010, 0xFFFF0020), ("v_pk_sub_i16 v2, v0, v1 clamp", 0x80007FFF, 0x0001FFFF, 0x80007FFF),
  ("v_add_co_u32 v2, vcc_lo, v0, v1", 0xFFFFFFFF, 1, 0),  # without clamp it wraps
])
def test_integer_clamp_saturates(text: str, a: int, b: int, want: int) -> None:
  w = run(text, sgprs={1: 0xFFFFFFFF}, vgprs={0: full(a), 1: full(b), 2: full(0)})
  assert w.v[2][0] == want, hex(int(w.v[2][0]))  # 16-bit results leave the high half 0

def test_rdna4_permlane16_var() -> None:
  w = run("v_permlane16_var_b32 v2, v0, v1\nv_permlanex16_var_b32 v3, v0, v1", "rdna4", vgprs={0: LANE, 1: LANE ^ 15})
  assert (w.v[2][0], w.v[2][16]) == (15, 31)
  np.testing.assert_array_equal(w.v[2], (LANE & 16) | (LANE & 15 ^ 15))
  np.testing.assert_array_equal(w.v[3], (LANE & 16 ^ 16) | (LANE & 15 ^ 15))  # the other row's lanes

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_vinterp(arch: str) -> None:
  f = np.float32
  def h(x: np.ndarray) -> np.ndarray: return x.astype(np.float16).view(np.uint16).astype(np.uint32)
  w = run("v_interp_p10_f32 v4, v1, v2, v3\nv_interp_p2_f32 v5, v1, v2, v3\nv_interp_p10_f16_f32 v6, v7, v2, v8", arch,
          vgprs={1: (100 + LANE).astype(f), 2: np.full(32, 2.0, f), 3: (10 + LANE).astype(f), 7: h(100 + LANE), 8: h(10 + LANE)})
  np.testing.assert_array_equal(w.v[4].view(f)[:8], [212.0] * 4 + [224.0] * 4)
  quad = LANE & ~3
  np.testing.assert_array_equal(w.v[4].view(f), (100 + quad + 1) * 2 + 10 + quad)  # P10 from lane 1 of the quad, P0 from lane 0
  np.testing.assert_array_equal(w.v[5].view(f), (100 + quad + 2) * 2 + 10 + LANE)  # p2: P20 from lane 2, plus S2 of this lane
  np.testing.assert_array_equal(w.v[6].view(f), (100 + quad + 1) * 2 + 10 + quad)

def test_dpp16_row_shl_bound_ctrl() -> None:
  """The issue's bytes: v_or_b32_dpp v1, v0, v2 row_shl:1 row_mask:0xf bank_mask:0xf bound_ctrl:1."""
  code = bytes.fromhex("fa040238000109ff")
  assert llvm_assemble(["v_or_b32_dpp v1, v0, v2 row_shl:1 row_mask:0xf bank_mask:0xf bound_ctrl:1"], "rdna3") == [code]
  for arch in ("rdna3", "rdna4"):
    w = run_wave(code, arch, vgprs={0: 10 * LANE + 3, 2: full(0)})
    assert (w.v[1][0], w.v[1][14], w.v[1][15]) == (13, 153, 0)

def dpp_model(src: np.ndarray, old: np.ndarray, sel, valid, write) -> np.ndarray:
  """The hand-written reference: lane l takes src[sel(l)] where valid, writes where `write`."""
  got = np.where(valid, src[sel % 32], 0)
  return np.where(write, got, old)

ROW, I = LANE & ~15, LANE & 15
@pytest.mark.parametrize("ctrl,sel,inrow", [
  ("quad_perm:[3,2,1,0]", (LANE & ~3) | (3 - (LANE & 3)), True), ("row_shl:3", LANE + 3, I + 3 < 16), ("row_shr:5", LANE - 5, I >= 5),
  ("row_ror:7", ROW | ((I - 7) & 15), True), ("row_mirror", ROW | (15 - I), True), ("row_half_mirror", (LANE & ~7) | (7 - (LANE & 7)), True),
  ("row_share:9", ROW | 9, True), ("row_xmask:6", ROW | (I ^ 6), True)])
@pytest.mark.parametrize("bc", [0, 1])
def test_dpp16_patterns_masks_and_bound_ctrl(ctrl: str, sel, inrow, bc: int) -> None:
  exec_mask = 0xFFFFFF7F  # lane 7 off: a source lane it is invalid, fi=0
  w = run(f"v_mov_b32_dpp v1, v0 {ctrl} row_mask:0xd bank_mask:0xb bound_ctrl:{bc}", vgprs={0: 1000 + LANE, 1: 7 + LANE}, exec_mask=exec_mask)
  active = (exec_mask >> LANE) & 1
  valid = np.broadcast_to(inrow, (32,)) & (active[sel % 32] == 1)
  enabled = ((0xD >> (LANE >> 4)) & 1) & ((0xB >> ((LANE >> 2) & 3)) & 1) & active
  np.testing.assert_array_equal(w.v[1], dpp_model(1000 + LANE, 7 + LANE, sel, valid, enabled.astype(bool) & (valid | bool(bc))))

def test_dpp8_fi_and_modifiers_and_vopc() -> None:
  exec_mask = 0xFFFFFFFE
  sel = (LANE & ~7) | (7 - (LANE & 7))
  x = (LANE - 10).astype(np.float32)
  w = run("v_mov_b32_dpp v1, v0 dpp8:[7,6,5,4,3,2,1,0]\nv_mov_b32_dpp v2, v0 dpp8:[7,6,5,4,3,2,1,0] fi:1\n"
          "v_add_f32_dpp v3, -v4, |v5| row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:1\n"
          "v_cmp_gt_u32_dpp vcc_lo, v0, v6 row_shl:1 row_mask:0xf bank_mask:0xf bound_ctrl:1",
          vgprs={0: 1000 + LANE, 1: full(5), 2: full(5), 4: x, 5: np.full(32, -0.5, np.float32), 6: full(1005)}, exec_mask=exec_mask)
  np.testing.assert_array_equal(w.v[1][1:], np.where(sel == 0, 0, 1000 + sel)[1:])  # lane 0 is inactive: reads 0
  np.testing.assert_array_equal(w.v[2][1:], (1000 + sel)[1:])  # fi: read anyway
  want = np.where(((LANE & 15) >= 1) & (LANE != 1), -x[LANE - 1], np.float32(0)) + np.float32(0.5)  # lane 0 is inactive: reads 0
  np.testing.assert_array_equal(w.v[3].view(np.float32)[1:], want[1:].astype(np.float32))
  cmp = np.where((LANE & 15) + 1 < 16, 1000 + LANE + 1, 0) > 1005
  assert w.vcc == sum(1 << int(i) for i in LANE if cmp[i] and i > 0)
