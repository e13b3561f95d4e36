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

def f32b(x: float) -> int: return int(np.float32(x).view(np.uint32))
def f16b(x: float) -> int: return int(np.float16(x).view(np.uint16))

def test_vopc_in_vop3_abs_neg_and_op_sel() -> None:
  from tg.amd_emu import rdna3 as r3  # LLVM 19 does not assemble v_cmp_eq_u16_e64 with .h operands: the DSL builds it
  w = run("v_cmp_ge_f32_e64 vcc_lo, |v0|, |v1|\nv_cmp_lt_f32_e64 s4, -v0, v1", vgprs={0: full(f32b(0.0)), 1: full(f32b(-1.0))})
  assert w.vcc == 0 and w.s[4] == 0  # |0| >= |-1| is false; -0 < -1 is false
  w = run_wave([r3.v_cmp_eq_u16_e64(r3.s[0], r3.v[0].h, r3.v[1].h), r3.v_cmp_eq_u16_e64(r3.s[1], r3.v[0], r3.v[1])],
               vgprs={0: full(0x00051234), 1: full(0x0005ABCD)})
  assert (w.s[0], w.s[1]) == (0xFFFFFFFF, 0)

@pytest.mark.parametrize("text,srcs,want", [
  ("v_med3_f32 v2, v0, v1, v3", (f32b(1), f32b(2), f32b(3)), 0x40000000), ("v_max3_f16 v2, v0, v1, v3", (f16b(1), f16b(3), f16b(2)), 0x4200),
  ("v_min3_f32 v2, v0, v1, v3", (f32b(5), f32b(-2), f32b(3)), f32b(-2)), ("v_med3_f16 v2, v0, v1, v3", (f16b(7), f16b(-1), f16b(3)), f16b(3)),
  ("v_maxmin_f32 v2, v0, v1, v3", (f32b(1), f32b(5), f32b(3)), f32b(3)), ("v_minmax_f16 v2, v0, v1, v3", (f16b(4), f16b(5), f16b(1)), f16b(4)),
  ("v_pk_max_f16 v2, v0, v1", (f16b(1) | f16b(5) << 16, f16b(3) | f16b(2) << 16, 0), f16b(3) | f16b(5) << 16),
  ("v_pk_min_f16 v2, v0, v1", (f16b(1) | f16b(5) << 16, f16b(3) | f16b(2) << 16, 0), f16b(1) | f16b(2) << 16),
  ("v_fma_mix_f32 v2, v0, v1, v3", (f32b(2), f32b(3), f32b(1)), f32b(7.0)),
  ("v_fma_mix_f32 v2, v0, v1, v3 op_sel:[0,1,0] op_sel_hi:[0,1,1]", (f32b(2), f16b(3) << 16, f16b(1)), f32b(7.0)),
  ("v_fma_mixlo_f16 v2, v0, v1, v3", (f32b(2), f32b(3), f32b(1)), f16b(7.0)),
  ("v_pk_add_f16 v2, v0, 1.0", (0x3C003C00, 0, 0), 0x3C004000), ("v_pk_mul_f16 v2, v0, 2.0", (0x3C003C00, 0, 0), 0x00004000),
  ("v_cmp_class_f32_e64 s2, v0, 1", (0x7F800001, 0, 0), None), ("v_div_fixup_f32 v2, v0, v1, v3", (0x7FC00000, f32b(-2), f32b(1)), 0xFF800000),
])
def test_nested_calls_mix_inline_constants_class_fixup(text: str, srcs, want) -> None:
  w = run(text, vgprs={0: full(srcs[0]), 1: full(srcs[1]), 3: full(srcs[2]), 2: full(0)})
  if want is None: assert w.s[2] == 0xFFFFFFFF  # a signalling NaN is class bit 0
  else: assert w.v[2][0] == want, hex(int(w.v[2][0]))

def test_64bit_inline_float_constant_is_widened() -> None:
  w = run("s_mov_b64 s[0:1], 1.0\ns_mov_b64 s[2:3], -0.5")
  assert list(w.s[:4]) == [0, 0x3FF00000, 0, 0xBFE00000]

def test_division_steps() -> None:
  w = run("v_div_scale_f32 v2, vcc_lo, v0, v1, v0\nv_mov_b32_e32 v10, vcc_lo\nv_div_scale_f32 v3, vcc_lo, v0, v4, v0",
          vgprs={0: full(f32b(1.0)), 1: full(f32b(0.0)), 4: full(f32b(2.0 ** 127))})
  assert np.isnan(w.v[2].view(np.float32)[0]) and w.v[10][0] == 0xFFFFFFFF  # 1/0: NaN, VCC set
  assert w.v[3][0] == f32b(1.0)  # 1 over 2**127 leaves 1.0
  one, two = (full(0), full(0x3FF00000)), (full(0), full(0x40000000))  # f64 1.0 and 2.0 as (lo, hi) words
  w = run("v_div_fmas_f32 v2, v0, v1, v3\nv_div_fmas_f32 v4, v0, v1, v5\nv_div_fmas_f64 v[6:7], v[8:9], v[8:9], v[10:11]", sgprs={106: 0xFFFFFFFF},
          vgprs={0: full(f32b(1.0)), 1: full(f32b(1.0)), 3: full(f32b(2.0)), 5: full(f32b(0.5)), 8: one[0], 9: one[1], 10: two[0], 11: two[1]})
  assert w.v[2][0] == f32b(3.0 * 2.0 ** 64) and w.v[4][0] == f32b(1.5 * 2.0 ** -64)  # the scale's sign follows S2's exponent
  assert (int(w.v[7][0]) << 32 | int(w.v[6][0])) == int(np.float64(3.0 * 2.0 ** 128).view(np.uint64))  # 2**128 in f64, not inf
  w = run("v_sin_f32_e32 v1, v0\nv_cos_f32_e32 v2, v0", vgprs={0: np.array([132000.0, 0.25, -0.25, 1e9] * 8, np.float32)})
  np.testing.assert_allclose(w.v[1].view(np.float32)[:4], [0, 1, -1, 0], atol=1e-6)  # range-reduced in turns
  np.testing.assert_allclose(w.v[2].view(np.float32)[:4], [1, 0, 0, 1], atol=1e-6)

def test_float_mode_from_the_descriptor() -> None:
  from tg.amd_emu.emu import dispatch, AddressSpace
  from tg.amd_emu.codeobj import KernelDescriptor
  code = b"".join(llvm_assemble(["v_mov_b32_e32 v0, 0x40400000", "v_mov_b32_e32 v3, 0x800000", "v_add_f32_e64 v1, v0, 1.0 mul:2",
                                 "v_mul_f32_e32 v2, 0.5, v3", "v_mov_b32_e32 v4, 0", "global_store_b64 v4, v[1:2], s[0:1]", "s_endpgm"],
                                "rdna3"))  # type: ignore[arg-type]
  def go(rsrc1: int) -> tuple[float, int]:
    mem = AddressSpace()
    out = np.zeros(2, np.uint32)
    addr = mem.alloc(8, out)
    mem_code = mem.alloc(len(code))
    mem.write(mem_code, code)
    kd = KernelDescriptor(rsrc1=rsrc1, rsrc2=2 << 1, properties=0x408)
    dispatch(mem, code, mem_code, kd, addr, (1, 1, 1), (1, 1, 1), "rdna3", code_addr=mem_code)  # s[0:1]: the "kernarg" pointer
    return float(out[:1].view(np.float32)[0]), int(out[1])
  assert go(1 << 23 | 3 << 16) == (4.0, 0x00400000)  # IEEE mode: omod ignored; denormals kept
  assert go(3 << 16) == (8.0, 0x00400000)
  assert go(1 << 23 | 1 << 16) == (4.0, 0)  # FLOAT_DENORM_MODE_32 = 1: output denormals flushed
  w = run("v_add_f32_e64 v1, v0, 1.0 mul:2", vgprs={0: full(f32b(3.0))})
  assert w.v[1].view(np.float32)[0] == 4.0  # run_wave: LLVM's default descriptor (IEEE mode)

def test_mad_i64_signed_overflow_and_exact_folding() -> None:
  w = run("v_mad_i64_i32 v[2:3], s0, v0, v1, v[4:5]\nv_mad_i64_i32 v[6:7], s1, v0, v8, v[4:5]",
          vgprs={0: full(0x7FFFFFFF), 1: full(0x7FFFFFFF), 4: full(0xFFFFFFFF), 5: full(0x7FFFFFFF), 8: full(0xFFFFFFFF)})
  assert w.s[0] == 0xFFFFFFFF and w.s[1] == 0  # (2**31-1)**2 + INT64_MAX overflows; -(2**31-1) + INT64_MAX does not
  from tg.uop import Ops
  from tg.amd_emu.pcode_uops import alu, const
  a = 2 ** 62 + 1
  assert alu(Ops.IDIV, const("i", 64, a), const("i", 64, 3), "i", 64).const == a // 3
  assert alu(Ops.MOD, const("i", 64, -a), const("i", 64, 7), "i", 64).const == -(a % 7)

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_vinterp_op_sel_and_neg(arch: str) -> None:
  """op_sel picks the f16 high halves of the neighbours' src0/src2 (and writes an f16 result's high half), neg negates them:
  the ISA text's cross-lane reads leave both out; hand-computed from the P10/P2 formulas."""
  def h(x: np.ndarray) -> np.ndarray: return x.astype(np.float16).view(np.uint16).astype(np.uint32)
  quad = LANE & ~3
  w = run("v_interp_p10_f16_f32 v4, -v1, v2, v3 op_sel:[1,0,1,0]\nv_interp_p2_f16_f32 v5, v1, v2, -v6 op_sel:[0,0,0,1]", arch,
          vgprs={1: h(100 + LANE) << 16 | h(1 + LANE), 2: np.full(32, 2.0, np.float32), 3: h(10 + LANE) << 16, 5: full(0x1234),
                 6: np.full(32, 3.0, np.float32)})
  np.testing.assert_array_equal(w.v[4].view(np.float32), -(100.0 + quad + 1) * 2 + 10 + quad)
  np.testing.assert_array_equal(w.v[5] & 0xFFFF, 0x1234)  # op_sel[3]: the result goes to the high half
  np.testing.assert_array_equal((w.v[5] >> 16).astype(np.uint16).view(np.float16), ((1.0 + quad + 2) * 2 - 3).astype(np.float16))
