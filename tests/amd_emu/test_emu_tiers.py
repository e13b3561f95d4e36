"""The emulator's two tiers (tg.amd_emu.waveprog): the same program leaves the same state in tier 1 (the shape table the
interpreter loop runs) and tier 2 (whole-program C), bit for bit: every register, the budget left, memory, LDS and the
error it stops with (a fault, the budget, a bad jump). Random programs with branches, loops and memory accesses."""
from __future__ import annotations
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from tg.amd_emu.asm import assemble
from tg.amd_emu.emu import LDS_BYTES, AddressSpace, new_wave, run_waves
from tg.amd_emu.waveprog import WaveProgram, TIERUP
from tg.amd_emu.shapes import BARRIER_TABLE, FloatMode, LDS_BASE, LDS_SIZE, VGPR, WAVE

MODE = FloatMode(ieee=True)
BUF = 0x7_0000_0000  # the mapped buffer global accesses go to (s[0:1] holds its address); 1 KiB
ALU = ["v_add_f32_e32 v{d}, v{a}, v{b}", "v_mul_f32_e32 v{d}, v{a}, v{b}", "v_fma_f32 v{d}, v{a}, v{b}, v{c}", "v_max_f32_e32 v{d}, v{a}, v{b}",
       "v_add_nc_u32_e32 v{d}, v{a}, v{b}", "v_xor_b32_e32 v{d}, v{a}, v{b}", "v_lshlrev_b32_e32 v{d}, {k}, v{a}", "v_mov_b32_e32 v{d}, 0.5",
       "v_cvt_i32_f32_e32 v{d}, v{a}", "v_cmp_gt_u32_e32 vcc_lo, v{a}, v{b}", "v_cndmask_b32_e32 v{d}, v{a}, v{b}, vcc_lo",
       "v_add_co_u32 v{d}, vcc_lo, v{a}, v{b}", "v_sqrt_f32_e32 v{d}, v{a}", "s_add_u32 s{sd}, s{sa}, s{sb}", "s_mul_i32 s{sd}, s{sa}, {k}",
       "s_cmp_lt_u32 s{sa}, s{sb}", "s_cselect_b32 s{sd}, s{sa}, s{sb}", "s_and_saveexec_b32 s{sd}, vcc_lo", "s_mov_b32 exec_lo, -1",
       "v_readfirstlane_b32 s{sd}, v{a}", "v_and_b32_e32 v{d}, 0x3fc, v{a}"]
MEM = ["global_load_b32 v{d}, v{a}, s[0:1] offset:{o}", "global_store_b32 v{a}, v{b}, s[0:1]", "ds_store_b32 v{a}, v{b} offset:{o}",
       "ds_load_b32 v{d}, v{a}", "global_atomic_add_u32 v{a}, v{b}, s[0:1]"]

@st.composite
def programs(draw) -> str:
  """A program of labelled lines: ALU and memory instructions, and branches (forward or back) that may loop for ever."""
  n = draw(st.integers(4, 24))
  lines = []
  for i in range(n):
    r = {k: draw(st.integers(1, 15)) for k in ("d", "a", "b", "c")} | {k: draw(st.integers(4, 15)) for k in ("sd", "sa", "sb")}
    r |= {"k": draw(st.integers(0, 31)), "o": draw(st.sampled_from([0, 4, 64, 1020]))}
    kind = draw(st.sampled_from(["alu"] * 6 + ["mem"] * 2 + ["branch"]))
    if kind == "branch":
      br = draw(st.sampled_from(["s_branch", "s_cbranch_scc0", "s_cbranch_scc1", "s_cbranch_vccz", "s_cbranch_execz"]))
      text = f"{br} L{draw(st.integers(0, n))}"
    else: text = draw(st.sampled_from(ALU if kind == "alu" else MEM)).format(**r)
    lines.append(f"L{i}: {text}")
  return "\n".join(lines + [f"L{n}: s_endpgm"])

def run_in(prog: WaveProgram, sgprs: np.ndarray, vgprs: np.ndarray, budget: int) -> tuple:
  """Everything one wave leaves: the error text (or None), its whole state, the budget left, the buffer and the LDS."""
  mem, buf, lds = AddressSpace(), np.zeros(1024, np.uint8), np.zeros(LDS_BYTES, np.uint8)
  mem.map(BUF, 1024, buf)
  w = new_wave(0, budget, MODE)
  w.st[:16] = sgprs
  w.st[0], w.st[1] = BUF & 0xFFFFFFFF, BUF >> 32
  w.st[VGPR:VGPR + 16 * WAVE] = vgprs.reshape(-1)
  w.st[LDS_BASE], w.st[LDS_BASE + 1], w.st[LDS_SIZE] = lds.ctypes.data & 0xFFFFFFFF, lds.ctypes.data >> 32, 1024
  try:
    run_waves(prog, [w], mem)
    err = None
  except RuntimeError as e: err = str(e)
  w.st[LDS_BASE:LDS_BASE + 2] = w.st[BARRIER_TABLE:BARRIER_TABLE + 2] = 0  # host addresses of this run's LDS and barrier table
  return err, w.st.tobytes(), w.budget.value, buf.tobytes(), lds[:1024].tobytes()

def regs(seed: int) -> tuple[np.ndarray, np.ndarray]:
  """SGPRs and VGPRs: half small word offsets (in-range addresses), half random bits (floats, NaNs, faults)."""
  rng = np.random.default_rng(seed)
  small, wild = rng.integers(0, 256, (16, WAVE), dtype=np.uint32) * 4, rng.integers(0, 2**32, (16, WAVE), dtype=np.uint32)
  return rng.integers(0, 64, 16, dtype=np.uint32), np.where(rng.random((16, 1)) < 0.5, small, wild)

def same_in_both_tiers(code: bytes, seed: int, budget: int) -> tuple:
  sgprs, vgprs = regs(seed)
  runs = [run_in(WaveProgram(code, "rdna3", 0, 0, MODE, tier), sgprs, vgprs, budget) for tier in (1, 2)]
  assert runs[0][0] == runs[1][0], "different stops"
  for what, a, b in zip(("state", "budget", "memory", "LDS"), runs[0][1:], runs[1][1:]):
    assert a == b, f"{what} differs between tier 1 and tier 2"
  return runs[0]

@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**32 - 1), st.sampled_from([40, 1000]))
def test_tiers_leave_identical_state(text: str, seed: int, budget: int) -> None:
  same_in_both_tiers(assemble(text, "rdna3"), seed, budget)

def test_loop_hand_computed_and_out_of_budget() -> None:
  """A counted loop: both tiers sum 1..10 (55, by hand); with too small a budget both stop at the same block, same budget."""
  code = assemble("s_mov_b32 s4, 0\ns_mov_b32 s5, 10\nloop: s_add_u32 s4, s4, s5\ns_sub_u32 s5, s5, 1\ns_cmp_lg_u32 s5, 0\n"
                  "s_cbranch_scc1 loop\ns_endpgm", "rdna3")
  err, state, left, _, _ = same_in_both_tiers(code, 0, 1000)
  assert err is None and np.frombuffer(state, np.uint32)[4] == 55 and left == 1000 - 2 - 4 * 10 - 1
  err, state, left, _, _ = same_in_both_tiers(code, 0, 22)  # 2 + 4 * 5 = 22: five iterations fit exactly, the sixth doesn't
  assert "budget exhausted at pc=0x8" in err and np.frombuffer(state, np.uint32)[4] == 10 + 9 + 8 + 7 + 6 and left == 22 - 2 - 4 * 6

def test_hot_program_moves_up_mid_run() -> None:
  """A wave in tier 1 that turns hot moves to tier 2 at a block start, mid-loop: its result is what tier 1 alone computes.
  (The build is waited for when it starts, so the move happens mid-run, at the first block start after TIERUP.)"""
  iters = TIERUP // 4 + 1000
  code = assemble(f"s_mov_b32 s5, {iters}\nv_mov_b32_e32 v1, 0\nloop: v_add_nc_u32_e32 v1, v1, v0\ns_sub_u32 s5, s5, 1\n"
                  "s_cmp_lg_u32 s5, 0\ns_cbranch_scc1 loop\ns_endpgm", "rdna3")
  auto, pinned = WaveProgram(code, "rdna3", 0, 0, MODE), WaveProgram(code, "rdna3", 0, 0, MODE, 1)
  def tier_up_now() -> None:
    WaveProgram.tier_up(auto)
    assert auto.optimized is not None
    auto.optimized.join()
  auto.tier_up = tier_up_now  # type: ignore[method-assign]
  results = []
  for prog in (auto, pinned):
    w = new_wave(0, 10 * iters, MODE)
    w.st[VGPR:VGPR + WAVE] = np.arange(WAVE)
    assert run_waves(prog, [w], AddressSpace()) == 2 + 4 * iters + 1
    w.st[BARRIER_TABLE:BARRIER_TABLE + 2] = 0  # the host address of each wave's own barrier table
    results.append(w.st.copy())
  assert auto.optimized is not None and pinned.optimized is None  # the automatic one did tier up
  assert auto.tier_fn == (auto.libs[-1].address("run"), 0)  # and now runs the whole-program C
  np.testing.assert_array_equal(results[0], results[1])
  np.testing.assert_array_equal(results[0][VGPR + WAVE:VGPR + 2 * WAVE], (np.arange(WAVE) * iters) % 2**32)

def test_new_program_needs_no_compiler(monkeypatch) -> None:
  """Once its shapes are compiled, a new program (other registers, another order) runs in tier 1 without the C compiler."""
  WaveProgram(assemble("v_add_f32_e32 v1, v2, v3\ns_add_u32 s1, s2, s3\ns_endpgm", "rdna3"), "rdna3", 0, 0, MODE, 1)
  from tg.amd_emu import shapelib, tier1
  tier1.interpreter()
  def no_compiler(*a, **k): raise AssertionError("the compiler ran")
  monkeypatch.setattr(shapelib, "compile_c", no_compiler)
  prog = WaveProgram(assemble("s_add_u32 s7, s8, s9\nv_add_f32_e32 v5, v6, v7\ns_endpgm", "rdna3"), "rdna3", 0, 0, MODE, 1)
  w = new_wave(0, 100, MODE)
  w.st[8], w.st[9] = 40, 2
  w.st[VGPR + 6 * WAVE:VGPR + 8 * WAVE] = np.float32(1.25).view(np.uint32)
  run_waves(prog, [w], AddressSpace())
  assert w.st[7] == 42 and np.all(w.st[VGPR + 5 * WAVE:VGPR + 6 * WAVE].view(np.float32) == 2.5)

def test_tier_must_be_1_2_or_none() -> None:
  with pytest.raises(ValueError, match="tier 3"): WaveProgram(b"", "rdna3", 0, 0, MODE, 3)

@pytest.mark.parametrize("tier", [1, 2])
def test_workgroup_barrier_and_lds(tier: int) -> None:
  """Four waves store their thread ids to LDS, meet at a barrier, then each lane reads the id 32 threads on: (tid + 32) % 128."""
  code = assemble("v_lshlrev_b32_e32 v1, 2, v0\nds_store_b32 v1, v0\ns_barrier\nv_add_nc_u32_e32 v3, 32, v0\n"
                  "v_and_b32_e32 v3, 0x7f, v3\nv_lshlrev_b32_e32 v3, 2, v3\nds_load_b32 v2, v3\ns_endpgm", "rdna3")
  lds, waves = np.zeros(LDS_BYTES, np.uint8), [new_wave(0, 100, MODE) for _ in range(4)]
  for k, w in enumerate(waves):
    w.st[VGPR:VGPR + WAVE] = np.arange(k * WAVE, (k + 1) * WAVE)
    w.st[LDS_BASE], w.st[LDS_BASE + 1], w.st[LDS_SIZE] = lds.ctypes.data & 0xFFFFFFFF, lds.ctypes.data >> 32, LDS_BYTES
  assert run_waves(WaveProgram(code, "rdna3", 0, 0, MODE, tier), waves, AddressSpace()) == 4 * 8
  got = np.concatenate([w.st[VGPR + 2 * WAVE:VGPR + 3 * WAVE] for w in waves])
  np.testing.assert_array_equal(got, (np.arange(128) + 32) % 128)
  assert all(w.done and w.budget.value == 100 - 8 for w in waves)

def test_inline_integers_share_one_shape() -> None:
  """Every inline integer (0..64, -1..-16) is a value of one shape, not a shape each (so a new program rarely needs the
  compiler), and reads as that integer at 16, 32 and 64 bits (hand-computed: lane + k, (-1 << 7) over 64 bits)."""
  from tg.amd_emu.shape_c import shape_code
  from tg.amd_emu.decode import decode_all
  ks = list(range(65)) + list(range(-16, 0))
  code = assemble("\n".join(f"v_add_nc_u32_e32 v{10 + i}, {k}, v0" for i, k in enumerate(ks)), "rdna3")
  assert len({shape_code(i, MODE).name for _, i in decode_all(code, "rdna3")}) == 1
  code += assemble("s_lshl_b64 s[4:5], -1, 7\nv_add_nc_u16 v1, -2, v0\ns_endpgm", "rdna3")
  w = new_wave(0, 1000, MODE)
  w.st[VGPR:VGPR + WAVE] = np.arange(WAVE)
  run_waves(WaveProgram(code, "rdna3", 0, 0, MODE, 1), [w], AddressSpace())
  vg = w.st[VGPR:].reshape(-1, WAVE)
  for i, k in enumerate(ks): np.testing.assert_array_equal(vg[10 + i], (np.arange(WAVE) + k) % 2**32)
  assert int(w.st[4]) | int(w.st[5]) << 32 == (-1 << 7) % 2**64
  np.testing.assert_array_equal(vg[1] & 0xFFFF, (np.arange(WAVE) - 2) % 2**16)
