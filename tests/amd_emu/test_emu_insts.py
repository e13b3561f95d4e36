"""Single instructions on one wave (tg.amd_emu.emu.run_wave) against numpy / IEEE references and hand-computed values."""
from __future__ import annotations
import decimal
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.uop import Ops
from tg.amd_emu import rdna3 as r3, rdna4 as r4
from tg.amd_emu.asm import assemble
from tg.amd_emu.emu import run_wave, AddressSpace, MemoryFault
from tg.amd_emu.rdna3 import v, s, VCC_LO

LANE = np.arange(32)
SPECIAL = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e-45, -1e-40, 3.4e38, 1e-38, 0.1, 2.5, -3.5, 65504.0, 1e10] * 2, np.float32)

def f32(w, r: int) -> np.ndarray: return w.v[r].view(np.float32)

def same_f32(a: np.ndarray, b: np.ndarray) -> None:
  """Bit-exact, except that any NaN matches any NaN."""
  a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
  both_nan = np.isnan(a) & np.isnan(b)
  np.testing.assert_array_equal(np.where(both_nan, 0, a.view(np.uint32)), np.where(both_nan, 0, b.view(np.uint32)))

@pytest.mark.parametrize("name,fn", [("v_add_f32_e32", np.add), ("v_mul_f32_e32", np.multiply), ("v_sub_f32_e32", np.subtract)])
def test_f32_arith_ieee(name: str, fn) -> None:
  b = np.roll(SPECIAL, 3)
  w = run_wave([getattr(r3, name)(v[0], v[1], v[2])], vgprs={1: SPECIAL, 2: b})
  with np.errstate(all="ignore"): same_f32(f32(w, 0), fn(SPECIAL, b))

def test_fma_single_rounding_and_neg_abs_modifiers() -> None:
  a, b, c = np.full(32, 1 + 2**-23, np.float32), np.full(32, 1 - 2**-23, np.float32), np.full(32, -1.0, np.float32)
  w = run_wave([r3.v_fma_f32(v[0], v[1], v[2], v[3]), r3.v_fma_f32(v[4], -v[1], abs(v[5]), v[3])], vgprs={1: a, 2: b, 3: c, 5: -b})
  exact = (np.float64(a[0]) * np.float64(b[0]) + np.float64(c[0]))  # fused: -2**-46, not the 0 of two roundings
  assert f32(w, 0)[0] == np.float32(exact) and exact != 0
  same_f32(f32(w, 4), np.float32(-(np.float64(a) * np.float64(b)) - 1))

def test_div_sqrt_and_conversions() -> None:
  x = np.array([2.0, -7.9, 1e10, -1e10, np.nan, np.inf, -0.5, 0.5] * 4, np.float32)
  w = run_wave([r3.v_sqrt_f32_e32(v[1], v[0]), r3.v_cvt_i32_f32_e32(v[2], v[0]), r3.v_cvt_u32_f32_e32(v[3], v[0]), r3.v_rcp_f32_e32(v[4], v[0]),
                r3.v_cvt_f16_f32_e32(v[5], v[0]), r3.v_trunc_f32_e32(v[6], v[0]), r3.v_floor_f32_e32(v[7], v[0])], vgprs={0: x})
  with np.errstate(all="ignore"):
    same_f32(f32(w, 1), np.sqrt(x))
    same_f32(f32(w, 4), np.float32(1) / x)
    np.testing.assert_array_equal(w.v[2].view(np.int32), [2, -7, 2**31 - 1, -2**31, 0, 2**31 - 1, 0, 0] * 4)  # saturating, NaN -> 0
    np.testing.assert_array_equal(w.v[3], [2, 0, 0xFFFFFFFF, 0, 0, 0xFFFFFFFF, 0, 0] * 4)
    h = (w.v[5] & 0xFFFF).astype(np.uint16).view(np.float16)
    np.testing.assert_array_equal(np.isnan(h), np.isnan(x.astype(np.float16)))
    np.testing.assert_array_equal(h[~np.isnan(h)], x.astype(np.float16)[~np.isnan(h)])
    same_f32(f32(w, 6), np.trunc(x))
    same_f32(f32(w, 7), np.floor(x))

def test_f16_halves_opsel_and_true16_high_half() -> None:
  a, b = np.float16(1.5), np.float16(-2.25)
  lo_hi = (np.uint32(a.view(np.uint16)) | (np.uint32(b.view(np.uint16)) << 16))
  w = run_wave([r3.v_add_f16_e64(v[1], v[0].h, v[0]), r3.v_mul_f16_e32(v[2].h, v[0].h, v[0].h)],
               vgprs={0: np.full(32, lo_hi), 1: np.full(32, 0xAAAA0000), 2: np.full(32, 0x1234)})
  assert (w.v[1][0] & 0xFFFF) == np.float16(a + b).view(np.uint16) and w.v[1][0] >> 16 == 0xAAAA  # the other half is kept
  assert (w.v[2][0] >> 16) == np.float16(b * b).view(np.uint16) and (w.v[2][0] & 0xFFFF) == 0x1234

def test_pk_f16_and_opsel_hi() -> None:
  x = np.array([1.0, 2.0], np.float16).view(np.uint32)[0]
  y = np.array([10.0, 0.5], np.float16).view(np.uint32)[0]
  w = run_wave([r3.v_pk_add_f16(v[2], v[0], v[1]), r3.v_pk_mul_f16(v[3], v[0], v[1])], vgprs={0: np.full(32, x), 1: np.full(32, y)})
  np.testing.assert_array_equal(np.array([w.v[2][0]], np.uint32).view(np.float16), [11.0, 2.5])
  np.testing.assert_array_equal(np.array([w.v[3][0]], np.uint32).view(np.float16), [10.0, 1.0])

def test_integer_carries_and_vcc() -> None:
  a = (LANE * 0x10000000) & 0xFFFFFFFF
  w = run_wave([r3.v_add_co_u32(v[2], VCC_LO, v[0], v[1]), r3.v_add_co_ci_u32_e32(v[3], v[0], v[0]), r3.v_sub_co_u32(v[4], s[10], v[0], v[1]),
                r3.v_mul_hi_u32(v[5], v[0], v[1]), r3.v_mad_u64_u32(v[6:7], s[12], v[0], v[1], v[0:1])],
               vgprs={0: a, 1: np.full(32, 0x80000000)})
  s64 = a.astype(np.uint64) + 0x80000000
  np.testing.assert_array_equal(w.v[2], s64 & 0xFFFFFFFF)
  carry = s64 >> np.uint64(32)
  np.testing.assert_array_equal(w.v[3], (a.astype(np.uint64) * 2 + carry) & 0xFFFFFFFF)  # carry in from the first add's VCC
  assert w.vcc == sum(1 << i for i in range(32) if (int(a[i]) * 2 + int(carry[i])) >> 32)
  assert w.s[10] == sum(1 << i for i in range(32) if a[i] < 0x80000000)  # borrow
  np.testing.assert_array_equal(w.v[5], (a.astype(np.uint64) * np.uint64(0x80000000)) >> np.uint64(32))
  full = a.astype(np.uint64) * np.uint64(0x80000000) + (a.astype(np.uint64) | (np.uint64(0x80000000) << np.uint64(32)))
  np.testing.assert_array_equal(w.v[6], full & np.uint64(0xFFFFFFFF))

def test_scalar_ops_scc() -> None:
  w = run_wave([r3.s_add_u32(s[0], s[1], s[2]), r3.s_addc_u32(s[3], s[4], 0), r3.s_bfe_u32(s[5], s[6], 0x40004), r3.s_ctz_i32_b32(s[7], s[8]),
                r3.s_bcnt1_i32_b32(s[9], s[6]), r3.s_lshl_b64(s[10:11], s[12:13], 36), r3.s_cmp_lt_i32(s[1], 0)],
               sgprs={1: 0xFFFFFFF0, 2: 0x20, 4: 7, 6: 0xABCD1234, 8: 0x100, 12: 3, 13: 0})
  assert (w.s[0], w.s[3]) == (0x10, 8)
  assert w.s[5] == (0xABCD1234 >> 4) & 0xF and w.s[7] == 8 and w.s[9] == bin(0xABCD1234).count("1")
  assert (w.s[10], w.s[11]) == (0, 3 << 4)
  assert w.scc == 1  # 0xFFFFFFF0 is -16 < 0

def test_vopc_vcc_sgpr_and_exec_destinations() -> None:
  x = np.where(LANE % 3 == 0, np.nan, LANE).astype(np.float32)
  w = run_wave([r3.v_cmp_lt_f32_e32(v[0], v[1]), r3.v_cmp_neq_f32_e64(s[4], v[0], v[1]), r3.v_cmpx_gt_u32_e32(10, v[2]),
                r3.v_mov_b32_e32(v[3], 7)], vgprs={0: x, 1: np.full(32, 5.0, np.float32), 2: LANE})
  assert w.vcc == sum(1 << i for i in range(32) if x[i] < 5)
  assert w.s[4] == sum(1 << i for i in range(32) if not x[i] == 5)  # NEQ is true for NaN
  assert w.exec == (1 << 10) - 1
  np.testing.assert_array_equal(w.v[3], np.where(LANE < 10, 7, 0))  # lanes EXEC turned off keep their value

def test_vopd_reads_both_halves_before_writing() -> None:
  inst = r3.vopd(r3.v_dual_mov_b32(v[0], v[1]), r3.v_dual_add_f32(v[1], v[0], v[0]))
  w = run_wave([inst], vgprs={0: np.full(32, 1.0, np.float32), 1: np.full(32, 5.0, np.float32)})
  assert f32(w, 0)[0] == 5.0 and f32(w, 1)[0] == 2.0

def test_readlane_permute_and_mbcnt() -> None:
  w = run_wave([r3.v_readlane_b32(s[0], v[0], 5), r3.v_readfirstlane_b32_e32(s[1], v[0]), r3.v_mbcnt_lo_u32_b32(v[1], -1, 0),
                r3.ds_bpermute_b32(v[2], v[3], v[0])], vgprs={0: LANE * 10, 3: ((LANE + 1) % 32) * 4}, exec_mask=0xFFFFFFF0)
  assert w.s[0] == 50 and w.s[1] == 40
  np.testing.assert_array_equal(w.v[1][4:], LANE[4:])
  np.testing.assert_array_equal(w.v[2][4:31], (LANE[4:31] + 1) * 10)

def test_lds_load_store_and_atomics() -> None:
  w = run_wave([r3.ds_store_b32(v[0], v[1], offset=16), r3.ds_add_rtn_u32(v[2], v[4], v[5]), r3.ds_load_b32(v[3], v[0], offset=16)],
               vgprs={0: LANE * 4, 1: LANE + 100, 4: np.zeros(32, np.uint32), 5: np.ones(32, np.uint32)})
  np.testing.assert_array_equal(w.v[3], LANE + 100)
  np.testing.assert_array_equal(np.sort(w.v[2]), np.arange(32))  # every lane's atomic saw the counter before it
  assert w.lds.view(np.uint32)[0] == 32

def test_global_saddr_loads_stores_and_64bit() -> None:
  mem = AddressSpace()
  buf = np.arange(128, dtype=np.uint32)
  addr = mem.alloc(buf.nbytes, buf)
  w = run_wave([r3.s_load_b128(s[4:7], s[0:1], 4), r3.global_load_b64(v[2:3], v[0], s[0:1], offset=8),
                r3.global_store_b32(v[4], v[2], s[0:1], offset=-4)],
               sgprs={0: addr & 0xFFFFFFFF, 1: addr >> 32}, vgprs={0: LANE * 8, 4: LANE * 8 + 8}, memory=mem)
  np.testing.assert_array_equal(w.v[2], 2 * LANE + 2)
  np.testing.assert_array_equal(w.v[3], 2 * LANE + 3)
  assert list(w.s[4:8]) == [1, 2, 3, 4]
  np.testing.assert_array_equal(buf[1:64:2], 2 * LANE + 2)

def test_memory_fault_message() -> None:
  with pytest.raises(MemoryFault, match=r"memory fault: global_load_b32 v1, v0, s\[0:1\] at 0xdead00000010, no mapping \(pc=0x0, wave 0"):
    run_wave([r3.global_load_b32(v[1], v[0], s[0:1])], sgprs={0: 0, 1: 0xDEAD}, vgprs={0: np.full(32, 16)})
  with pytest.raises(MemoryFault, match="s_load_b32"):
    run_wave([r3.s_load_b32(s[2], s[0:1], 0)], sgprs={0: 0x1000, 1: 0})

def test_branch_loop_and_budget() -> None:
  code = assemble("s_mov_b32 s0, 10\ns_mov_b32 s1, 0\nloop:\ns_add_u32 s1, s1, s0\ns_sub_u32 s0, s0, 1\n"
                  "s_cmp_lg_u32 s0, 0\ns_cbranch_scc1 loop", "rdna3")
  assert run_wave(code).s[1] == 55
  with pytest.raises(RuntimeError, match="instruction budget exhausted"):
    run_wave(assemble("loop:\ns_branch loop", "rdna3"), budget=1000)

def test_undecodable_code_raises_with_pc_and_bytes() -> None:
  with pytest.raises(RuntimeError, match=r"cannot decode.*pc=0x4"):
    run_wave(assemble("s_nop 0", "rdna3") + bytes.fromhex("ffffffff"))

def test_rdna4_renamed_ops_and_smem_ioffset() -> None:
  mem = AddressSpace()
  buf = np.arange(16, dtype=np.uint32) * 3
  addr = mem.alloc(buf.nbytes, buf)
  w = run_wave([r4.s_load_b32(r4.s[2], r4.s[0:1], 8), r4.v_max_num_f32_e32(r4.v[1], 2.0, r4.v[0]), r4.s_add_co_u32(r4.s[3], r4.s[2], 1)], "rdna4",
               sgprs={0: addr & 0xFFFFFFFF, 1: addr >> 32}, vgprs={0: np.array([np.nan, 1, 3, -1] * 8, np.float32)}, memory=mem)
  assert w.s[2] == 6 and w.s[3] == 7
  np.testing.assert_array_equal(f32(w, 1), [2, 2, 3, 2] * 8)  # max_num: a NaN operand gives the other one

def test_rdna4_scalar_subdword_loads_read_their_own_byte() -> None:
  """s_load_u8/i8 read the byte at their address and s_load_u16/i16 the half at an even one (the emulator aligned every scalar
  load to a dword, so a uniform int8 tensor op on the gfx1200 virtual GPU repeated every fourth element)."""
  mem = AddressSpace()
  buf = np.array([0x11, 0x82, 0x33, 0x44, 0x55, 0xF6, 0x77, 0x88], np.uint8)
  addr = mem.alloc(buf.nbytes, buf)
  w = run_wave([r4.s_load_u8(r4.s[2], r4.s[0:1], 1), r4.s_load_i8(r4.s[3], r4.s[0:1], 1), r4.s_load_u16(r4.s[4], r4.s[0:1], 6),
                r4.s_load_i16(r4.s[5], r4.s[0:1], 4), r4.s_load_b32(r4.s[6], r4.s[0:1], 4)], "rdna4",
               sgprs={0: addr & 0xFFFFFFFF, 1: addr >> 32}, memory=mem)
  assert [int(x) for x in w.s[2:7]] == [0x82, 0xFFFFFF82, 0x8877, 0xFFFFF655, 0x8877F655]

def test_rdna4_sopk_immediate_is_s0() -> None:
  """RDNA4's SOPK pseudocode names the 16-bit immediate S0 (RDNA3's says SIMM16): it is sign-extended, not the destination register."""
  w = run_wave([r4.s_cmovk_i32(r4.s[3], 0x7), r4.s_movk_i32(r4.s[0], 0xFFCE), r4.s_addk_co_i32(r4.s[1], 0xFFFE), r4.s_mulk_i32(r4.s[2], 0xFFFD)],
               "rdna4", sgprs={0: 5, 1: 10, 2: 7, 3: 1}, scc=1)
  assert [int(x) for x in w.s[:4]] == [0xFFFFFFCE, 8, (-21) & 0xFFFFFFFF, 7]

def test_rdna4_scalar_transcendentals_write_one_value() -> None:
  """v_s_sqrt_f32 & co. read an SGPR and write the result to an SGPR (not a lane mask), whatever EXEC holds."""
  x = np.float32(6.25)
  w = run_wave([r4.v_s_sqrt_f32(r4.s[1], r4.s[0]), r4.v_s_rcp_f32(r4.s[2], r4.s[0]), r4.v_s_exp_f32(r4.s[3], 2.0)], "rdna4",
               sgprs={0: int(x.view(np.uint32))}, exec_mask=0b1010)
  got = np.array(w.s[1:4], np.uint32).view(np.float32)
  np.testing.assert_allclose(got, [np.sqrt(x), 1 / x, 4.0], rtol=1e-6)

def test_rdna4_scalar_f16_to_f32_reads_the_high_half() -> None:
  """s_cvt_hi_f32_f16 converts bits 31:16 of its SGPR (the ISA data calls the operand 16 bits wide; reading only those gave 0.0,
  so half->float of every odd element was 0 on the gfx1200 virtual GPU)."""
  w = run_wave([r4.s_cvt_hi_f32_f16(r4.s[2], r4.s[1]), r4.s_cvt_f32_f16(r4.s[3], r4.s[1])], "rdna4", sgprs={1: 0x4000_3C00})
  assert np.array(w.s[2:4], np.uint32).view(np.float32).tolist() == [2.0, 1.0]

def rdna3_wmma_ab(m: np.ndarray) -> list[np.ndarray]:
  """An RDNA3 WMMA A operand of a 16x16 16-bit matrix (B: pass its transpose): lane l holds row l % 16, two elements a VGPR."""
  u = m.view(np.uint16).astype(np.uint32)[LANE % 16]
  return [u[:, 2 * j] | u[:, 2 * j + 1] << 16 for j in range(8)]

RDNA3_CD_ROWS = [2 * i + LANE // 16 for i in range(8)]  # C/D slot i of lane l: row 2i + l/16, column l % 16

def test_wmma_f16_op_sel_high_halves_and_inline_c() -> None:
  """RDNA3 v_wmma_f16 with op_sel[2] reads C from and writes D to the high halves, leaving the low halves of D as they were;
  an inline constant C is added to every element."""
  rng = np.random.default_rng(6)
  a, b, c = (rng.standard_normal((16, 16)).astype(np.float16) for _ in range(3))
  vg = dict(enumerate(rdna3_wmma_ab(a), 8)) | dict(enumerate(rdna3_wmma_ab(b.T.copy()), 16))
  for i, rows in enumerate(RDNA3_CD_ROWS): vg[40 + i] = c[rows, LANE % 16].view(np.uint16).astype(np.uint32) << 16 | 0x1234
  w = run_wave(assemble("v_wmma_f16_16x16x16_f16 v[40:47], v[8:15], v[16:23], v[40:47] op_sel:[0,0,1]\n"
                        "v_wmma_f32_16x16x16_f16 v[48:55], v[8:15], v[16:23], 1.0", "rdna3"), vgprs=vg)
  ab = a.astype(np.float64) @ b.astype(np.float64)
  for i, rows in enumerate(RDNA3_CD_ROWS):
    np.testing.assert_array_equal(w.v[40 + i] & 0xFFFF, 0x1234)
    got = (w.v[40 + i] >> 16).astype(np.uint16).view(np.float16).astype(np.float32)
    np.testing.assert_allclose(got, ab[rows, LANE % 16] + c[rows, LANE % 16], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(f32(w, 48 + i), ab[rows, LANE % 16] + 1, rtol=1e-5, atol=1e-5)

@pytest.mark.parametrize("clamp", [False, True])
def test_wmma_iu8_signedness_and_clamp(clamp: bool) -> None:
  """neg_lo[0] makes A signed (B stays unsigned); clamp saturates the i32 sum instead of wrapping it."""
  a, b = np.full((16, 16), -128, np.int8), np.full((16, 16), 255, np.uint8)
  c = np.int32(-(1 << 31) + 1000)
  vg = {8 + j: np.full(32, 0x80808080, np.uint32) for j in range(4)} | {12 + j: np.full(32, 0xFFFFFFFF, np.uint32) for j in range(4)}
  vg |= {i: np.full(32, c) for i in range(8)}
  w = run_wave(assemble(f"v_wmma_i32_16x16x16_iu8 v[0:7], v[8:11], v[12:15], v[0:7] neg_lo:[1,0,0]{' clamp' if clamp else ''}", "rdna3"), vgprs=vg)
  exact = int(a[0].astype(np.int64) @ b[:, 0].astype(np.int64)) + int(c)
  want = max(exact, -(1 << 31)) if clamp else (exact + (1 << 31)) % (1 << 32) - (1 << 31)
  np.testing.assert_array_equal(w.v[:8].view(np.int32), want)

def test_wmma_unemulated_modifiers_raise() -> None:
  with pytest.raises(RuntimeError, match="v_wmma_f32_16x16x16_f16 is not supported by the emulator .*neg/abs"):
    run_wave(assemble("v_wmma_f32_16x16x16_f16 v[0:7], v[8:11], v[12:15], v[0:7] neg_lo:[1,0,0]", "rdna4"), "rdna4")

def test_failed_background_build_surfaces(monkeypatch) -> None:
  """The tier-2 (-O2) build runs in a thread; when the compiler fails (one run saw clang raise OSError starting), the next use
  of the program raises that error instead of running on silently in tier 1 — and the use after that builds it again."""
  from tg.amd_emu import waveprog
  from tg.amd_emu.waveprog import wave_program, ProgramBuildError
  def broken(src: str, opt_level: int = 2) -> bytes: raise OSError("clang could not start")
  monkeypatch.setattr(waveprog, "compile_c", broken)
  code = assemble("s_mov_b32 s0, 0x5eed1\ns_endpgm", "rdna3")
  prog = wave_program(code, "rdna3", 0, 0)
  prog.tier_up()
  assert prog.optimized is not None
  prog.optimized.join()
  with pytest.raises(ProgramBuildError, match="OSError: clang could not start"): run_wave(code[:-4])
  monkeypatch.undo()
  assert run_wave(code[:-4]).s[0] == 0x5eed1

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_movrel_indexes_sgprs_by_m0(arch: str) -> None:
  """s_movrels/s_movreld (LLVM's dynamically indexed SGPR arrays) read/write SGPR[n + M0]; s_movrelsd_2 takes M0's two halves."""
  from llvm import assemble as llvm_assemble
  lines = ["s_movrels_b32 s1, s10", "s_movrels_b64 s[2:3], s[10:11]", "s_movreld_b32 s20, s5", "s_movreld_b64 s[22:23], s[6:7]",
           "s_mov_b32 m0, 0x20003", "s_movrelsd_2_b32 s30, s10"]
  w = run_wave(b"".join(llvm_assemble(lines, arch)), arch, sgprs={125: 3, 5: 0xAA, 6: 0xBB, 7: 0xCC} | {10 + i: 100 + i for i in range(10)})
  assert list(w.s[1:4]) == [103, 103, 104] and w.s[23] == 0xAA and list(w.s[25:27]) == [0xBB, 0xCC]
  assert w.s[32] == 103 and w.s[30] == 0  # s[30 + 2] = s[10 + 3]

@pytest.mark.parametrize("pattern,src", [
  ("swizzle(QUAD_PERM,3,2,1,0)", (LANE & ~3) | (3 - (LANE & 3))), ('swizzle(BITMASK_PERM,"01pip")', 8 | (LANE & 5) | (~LANE & 2)),
  ("swizzle(BROADCAST,8,5)", (LANE & ~7) | 5), ("swizzle(SWAP,4)", LANE ^ 4), ("swizzle(REVERSE,8)", LANE ^ 7)])
def test_ds_swizzle(pattern: str, src: np.ndarray) -> None:
  """ds_swizzle_b32's modes as LLVM spells them; a lane reading an inactive lane gets 0, an inactive lane keeps its value."""
  from llvm import assemble as llvm_assemble
  for arch in ("rdna3", "rdna4"):
    w = run_wave(llvm_assemble([f"ds_swizzle_b32 v1, v0 offset:{pattern}"], arch)[0], arch, vgprs={0: 100 + LANE, 1: np.full(32, 7)},
                 exec_mask=0xFFFFFFFE)  # type: ignore[arg-type]
    want = np.where(src % 32 == 0, 0, 100 + src % 32)
    np.testing.assert_array_equal(w.v[1], np.where(LANE == 0, 7, want))

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_getreg_setreg_mode(arch: str) -> None:
  """s_getreg reads the MODE the dispatch set (f32/f64 denormals kept, DX10 clamp, IEEE on RDNA3); s_setreg writes a field at its
  offset; registers a shader may not write (STATUS) keep their value."""
  from llvm import assemble as llvm_assemble
  from tg.amd_emu.shapes import FloatMode
  lines = ["s_getreg_b32 s0, hwreg(HW_REG_MODE)", "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 4), 0xff", "s_getreg_b32 s1, hwreg(HW_REG_MODE)",
           "s_mov_b32 s5, 0x2", "s_setreg_b32 hwreg(HW_REG_MODE, 2, 2), s5", "s_getreg_b32 s2, hwreg(HW_REG_MODE, 0, 4)",
           "s_setreg_b32 hwreg(HW_REG_STATUS), s5", "s_getreg_b32 s3, hwreg(HW_REG_STATUS)"]
  w = run_wave(b"".join(llvm_assemble(lines, arch)), arch)  # type: ignore[arg-type]
  mode = 0xF0 | 1 << 8 | (1 << 9 if arch == "rdna3" else 0)
  assert [int(x) for x in w.s[:4]] == [mode, mode | 0xF, 0xB, 0]
  w = run_wave(llvm_assemble(lines[:1], arch)[0], arch, mode=FloatMode(denorm32=0, ieee=False, round=3))  # type: ignore[arg-type]
  assert w.s[0] == 3 | 3 << 6 | 1 << 8

def test_memory_fault_in_a_later_wave_names_it() -> None:
  """A fault in wave 1 of workgroup (0, 0, 0) raises MemoryFault (not numpy's ambiguous-truth ValueError) carrying its address,
  instruction, pc, wave and workgroup."""
  from tg.amd_emu.emu import dispatch
  from tg.amd_emu.codeobj import KernelDescriptor
  mem = AddressSpace()
  buf = mem.alloc(128)  # 32 dwords: wave 0's lanes fit, wave 1's do not
  code = assemble("v_lshlrev_b32 v0, 2, v0\nglobal_load_b32 v1, v0, s[0:1]\ns_endpgm", "rdna3")
  at = mem.alloc(len(code))
  mem.write(at, code)
  kd = KernelDescriptor(rsrc2=2 << 1, properties=0x408)
  with pytest.raises(MemoryFault, match=r"wave 1, workgroup \(0, 0, 0\)") as e:
    dispatch(mem, code, at, kd, buf, (2, 1, 1), (64, 1, 1), "rdna3", code_addr=at)
  f = e.value
  assert buf + 128 <= f.address < buf + 256 and (f.pc, f.wave, f.workgroup) == (at + 4, 1, (0, 0, 0))  # one of wave 1's lanes
  assert f.inst == "global_load_b32 v1, v0, s[0:1]"

@pytest.mark.parametrize("op,a,b,c,want", [
  ("v_mad_u64_u32", 0xFFFFFFFF, 0xFFFFFFFF, 0, 0xFFFFFFFE00000001),  # the largest product fits: no saturation
  ("v_mad_u64_u32", 0xFFFFFFFF, 0xFFFFFFFF, 0x1FFFFFFFF, 2**64 - 1),  # past 2**64: saturates
  ("v_mad_i64_i32", 0x7FFFFFFF, 0x7FFFFFFF, 2**63 - 1, 2**63 - 1), ("v_mad_i64_i32", 0x80000000, 0x7FFFFFFF, 2**63, 2**63),
  ("v_mad_i64_i32", 0x80000000, 0x7FFFFFFF, 5, (-(2**31) * (2**31 - 1) + 5) % 2**64),  # negative, in range
])
@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_mad64_clamp_saturates(arch: str, op: str, a: int, b: int, c: int, want: int) -> None:
  """VOP3 clamp on the 64-bit multiply-adds (llvm-mc accepts it; the 32-bit VOP3 adds/mads saturate on hardware, see
  test_emu_hw_values): the result saturates to the u64 / i64 range instead of wrapping (hand-computed values)."""
  regs = {0: a, 1: b, 2: c & 0xFFFFFFFF, 3: c >> 32}
  w = run_wave(assemble(f"{op} v[4:5], s0, v0, v1, v[2:3] clamp", arch), arch, vgprs={k: np.full(32, x, np.uint32) for k, x in regs.items()})
  assert int(w.v[4][0]) | int(w.v[5][0]) << 32 == want

F64_IN = 0x0020000000000000  # 2**-1023 (an f64 denormal) * 4.0 = 2**-1021

@pytest.mark.parametrize("denorm16_64,want", [(3, (0x0800, 0x0200, F64_IN)), (2, (0, 0x0200, 0)), (1, (0x0800, 0, F64_IN)), (0, (0, 0, 0))])
def test_f16_f64_denormal_mode(denorm16_64: int, want: tuple[int, int, int]) -> None:
  """FLOAT_DENORM_MODE_16_64 (bit 0 keeps input denormals, bit 1 output ones) flushes f16 and f64 operands to a zero of their
  sign, and leaves f32 to its own mode (hand-computed): f16 0x0200 (2**-15) * 4.0 = 0x0800 reads a denormal, f16 0x0400 (the
  smallest normal) * 0.5 = 0x0200 writes one, f64 2**-1023 * 4.0 reads one."""
  from tg.amd_emu.shapes import FloatMode
  code = assemble("v_mul_f16_e64 v1, v0, 4.0\nv_mul_f16_e64 v2, v3, 0.5\nv_mul_f64 v[4:5], v[6:7], 4.0\nv_mul_f32_e64 v8, v9, 1.0\n"
                  "v_mul_f16_e64 v10, -v0, 4.0", "rdna3")
  regs = {0: 0x0200, 3: 0x0400, 6: 0, 7: 0x00080000, 9: 1}
  w = run_wave(code, "rdna3", mode=FloatMode(denorm16_64=denorm16_64), vgprs={k: np.full(32, x, np.uint32) for k, x in regs.items()})
  assert (int(w.v[1][0]), int(w.v[2][0]), int(w.v[4][0]) | int(w.v[5][0]) << 32) == want
  assert int(w.v[8][0]) == 1  # f32 keeps its denormal (its own mode bits are 3)
  assert int(w.v[10][0]) == 0x8000 | want[0]  # a flushed negative denormal is -0

I64 = st.integers(-(1 << 63), (1 << 63) - 1)

@settings(max_examples=300, deadline=None)
@given(I64, I64.filter(bool) | st.sampled_from([3, -3, 7]), st.sampled_from([Ops.IDIV, Ops.MOD]))
def test_pcode_int_division_folds_exactly_past_2_53(a: int, b: int, op: Ops) -> None:
  """The pseudocode's constant fold divides as C does (toward zero), exactly for 64-bit values: no float on the way."""
  from tg.amd_emu.pcode_uops import alu, const
  with decimal.localcontext() as ctx:
    ctx.prec = 60
    q = int(decimal.Decimal(a) / decimal.Decimal(b))  # int() of a Decimal truncates toward zero
  want = q if op is Ops.IDIV else a - q * b
  if -(1 << 63) <= want < (1 << 63):  # INT64_MIN / -1 overflows in C
    assert alu(op, const("i", 64, a), const("i", 64, b), "i", 64).const == want
  assert alu(op, const("i", 64, a), const("i", 64, 0), "i", 64).const == 0  # x / 0 and x % 0 fold to 0, as tg.uop defines them

BARRIER_KERNEL = """
  s_get_barrier_state s6, -1
  s_barrier_signal_isfirst -1
  s_cselect_b32 s7, 1, 0
  s_get_barrier_state s8, -1
  s_barrier_wait -1
  s_get_barrier_state s9, 5
  s_mov_b32 m0, -1
  s_get_barrier_state s10, m0
  s_barrier_signal 0
  s_get_barrier_state s11, 0
  s_barrier_signal_isfirst -1
  s_cselect_b32 s12, 1, 0
  s_barrier_wait -1
  v_lshrrev_b32 v0, 5, v0
  v_lshlrev_b32 v0, 5, v0
""" + "".join(f"  v_mov_b32 v1, s{r}\n  global_store_b32 v0, v1, s[0:1] offset:{4 * i}\n" for i, r in enumerate(range(6, 13))) + "  s_endpgm"

def test_rdna4_barrier_state_of_a_two_wave_workgroup() -> None:
  """s_get_barrier_state's word (valid bit 0, memberCnt bits 4-10, signalCnt bits 16-22, the ISA's layout) as two waves signal
  the workgroup barrier (-1) in the emulator's order (wave 0 runs to its wait first): hand-computed per wave. The second signal
  completes it (signalCnt back to 0, so isfirst holds again in the next round); named barrier 5 was never initialised (0);
  M0 names barrier M0[4:0] (31, not the workgroup's -1); barrier 0 is a NOP."""
  from tg.amd_emu.emu import dispatch
  from tg.amd_emu.codeobj import KernelDescriptor
  mem = AddressSpace()
  out = mem.alloc(64)
  code = assemble(BARRIER_KERNEL, "rdna4")
  at = mem.alloc(len(code))
  mem.write(at, code)
  dispatch(mem, code, at, KernelDescriptor(rsrc2=2 << 1, properties=0x408), out, (1, 1, 1), (64, 1, 1), "rdna4", code_addr=at)
  got = np.frombuffer(mem.read(out, 64), np.uint32).reshape(2, 8)[:, :7]  # 32 bytes a wave
  two = 2 << 4 | 1  # valid, two members, no signals
  assert got[0].tolist() == [two, 1, two | 1 << 16, 0, 0, 0, 1]
  assert got[1].tolist() == [two | 1 << 16, 0, two, 0, 0, 0, 0]

@pytest.mark.parametrize("tier", [1, 2])
def test_rdna4_barrier_state_of_a_lone_wave(tier: int) -> None:
  """run_wave's wave is its workgroup: its signal completes the barrier at once (isfirst sets SCC; the state reads 1 member),
  in either tier."""
  w = run_wave(assemble("s_barrier_signal_isfirst -1\ns_cselect_b32 s0, 1, 0\ns_get_barrier_state s1, -1", "rdna4"), "rdna4", tier=tier)
  assert (w.s[0], w.s[1]) == (1, 1 << 4 | 1)

# ***** untyped buffer loads and stores *****
BUF = 0x7000_0000  # 64 bytes mapped here, nothing around them
def vsharp(base: int, stride: int, records: int, oob: int, add_tid: int = 0) -> dict[int, int]:
  """The four SGPRs s4-s7 of a V#: base (bits 0-47), stride (48-61), num_records (64-95), add_tid_enable (119), oob_select (124-125)."""
  return {4: base & 0xFFFFFFFF, 5: base >> 32 | stride << 16, 6: records, 7: add_tid << 23 | oob << 28}

def buffer_run(arch: str, text: str, rsrc: dict[int, int], vgprs: dict[int, np.ndarray], sgprs: dict[int, int] | None = None):
  mem, data = AddressSpace(), np.arange(1000, 1016, dtype=np.uint32)
  mem.map(BUF, 64, data)
  return run_wave(assemble(text, arch), arch, sgprs=rsrc | (sgprs or {}), vgprs=vgprs, memory=mem), data

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_raw_buffer_loads_and_stores(arch: str) -> None:
  """A raw V# (stride 0, oob_select 3) of 40 bytes over 64 mapped ones: each dword whose offset (VGPR + instruction offset, not
  soffset) + 4 exceeds 40 reads 0 or is not stored, per dword of a b64, with no fault for the lanes past the mapping either."""
  w, data = buffer_run(arch, "buffer_load_b32 v1, v0, s[4:7], 0 offen\nbuffer_load_b32 v2, v0, s[4:7], s8 offen\n"
                             "buffer_load_b32 v3, v0, s[4:7], 0 offen offset:4\nbuffer_load_b64 v[4:5], v0, s[4:7], 0 offen\n"
                             "buffer_store_b32 v6, v0, s[4:7], 0 offen".replace(", 0 ", ", null " if arch == "rdna4" else ", 0 "),
                       vsharp(BUF, 0, 40, 3), {0: LANE * 4, 6: 2000 + LANE}, {8: 8})
  vals = np.arange(1000, 1016)
  def at(i: np.ndarray, ok: np.ndarray) -> np.ndarray: return np.where(ok, vals[np.minimum(i, 15)], 0)
  np.testing.assert_array_equal(w.v[1], at(LANE, LANE * 4 + 4 <= 40))
  np.testing.assert_array_equal(w.v[2], at(LANE + 2, LANE * 4 + 4 <= 40))  # soffset moves the address, not the range
  np.testing.assert_array_equal(w.v[3], at(LANE + 1, LANE * 4 + 8 <= 40))
  np.testing.assert_array_equal(w.v[4], at(LANE, LANE * 4 + 4 <= 40))
  np.testing.assert_array_equal(w.v[5], at(LANE + 1, LANE * 4 + 8 <= 40))  # lane 9: its low dword in range, its high one not
  np.testing.assert_array_equal(data, np.where(np.arange(16) < 10, 2000 + np.arange(16), 1000 + np.arange(16)))

@pytest.mark.parametrize("oob,records,want_ok", [
  (1, 3, lambda i, o: i < 3),                       # index < num_records
  (0, 3, lambda i, o: (i < 3) & (o + 4 <= 8)),      # and offset + 4 <= stride
  (2, 0, lambda i, o: i < 0),                       # num_records 0: nothing
  (2, 1, lambda i, o: i >= 0),                      # else no check
  (3, 20, lambda i, o: i * 8 + o + 4 <= 20),        # raw: the whole byte offset
])
def test_structured_buffer_range_checks(oob: int, records: int, want_ok) -> None:
  """idxen + offen with stride 8: the address is base + index * 8 + offset, in range as oob_select says (hand-computed)."""
  index, offset = LANE % 4, np.where(LANE < 16, 0, 4 + 4 * (LANE % 2))  # offsets 0, 4 and 8 (past the 8-byte stride)
  w, _ = buffer_run("rdna3", "buffer_load_b32 v2, v[0:1], s[4:7], 0 idxen offen", vsharp(BUF, 8, records, oob), {0: index, 1: offset})
  want = np.where(want_ok(index, offset), np.arange(1000, 1016)[np.minimum((index * 8 + offset) // 4, 15)], 0)
  np.testing.assert_array_equal(w.v[2], want)

def test_buffer_add_tid_indexes_by_lane() -> None:
  """add_tid_enable adds the lane to the index: with stride 4 and no index VGPR, lane l reads record l (16 records)."""
  w, _ = buffer_run("rdna3", "buffer_load_b32 v2, off, s[4:7], 0", vsharp(BUF, 4, 16, 1, add_tid=1), {})
  np.testing.assert_array_equal(w.v[2], np.where(LANE < 16, 1000 + LANE, 0))

def test_buffer_atomic_adds_in_range_only() -> None:
  """buffer_atomic_add_u32 (glc) over a 16-byte raw V#: the 4 lanes on each of dwords 0-3 add 1 each and get the old values
  1000+k .. 1003+k between them; the lanes on dwords 4-7 (mapped, but out of range) change nothing."""
  w, data = buffer_run("rdna3", "buffer_atomic_add_u32 v1, v0, s[4:7], 0 offen glc", vsharp(BUF, 0, 16, 3),
                       {0: (LANE % 8) * 4, 1: np.ones(32, np.uint32)})
  np.testing.assert_array_equal(data[:8], [1004, 1005, 1006, 1007, 1004, 1005, 1006, 1007])
  for k in range(4): assert sorted(w.v[1][LANE % 8 == k]) == [1000 + k + j for j in range(4)]

def test_buffer_instruction_offset_is_unsigned() -> None:
  """MUBUF's 12-bit offset is unsigned: offset:0x800 adds 2048 (as llvm-mc encodes 0-4095), so a V# based 2048 bytes below the
  buffer reaches it."""
  w, _ = buffer_run("rdna3", "buffer_load_b32 v1, v0, s[4:7], 0 offen offset:0x800", vsharp(BUF - 0x800, 0, 0x800 + 40, 3), {0: LANE * 4})
  np.testing.assert_array_equal(w.v[1], np.where(LANE < 10, 1000 + LANE, 0))

def test_a_thousand_mappings_and_the_last_one_loads() -> None:
  """The range table held 128 mappings: a GPU program with more buffers (or loaded kernels) than that could not run."""
  mem = AddressSpace()
  addrs = [mem.alloc(8, np.array([k, k + 1], np.uint32)) for k in range(1000)]
  w = run_wave([r3.s_load_b64(s[2:3], s[0:1], 0)], sgprs={0: addrs[-1] & 0xFFFFFFFF, 1: addrs[-1] >> 32}, memory=mem)
  assert [int(x) for x in w.s[2:4]] == [999, 1000]
