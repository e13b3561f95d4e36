"""SQTT from the emulator: streams written by the virtual GPU's timing model decode to the instructions it executed."""
import pathlib
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.amd_emu.asm import assemble
from tg.amd_emu.codeobj import KernelDescriptor, read, write
from tg.amd_emu.emu import launch
from tg.amd_emu.sqtt import Code, decode, timeline
from tg.amd_emu.sqtt.capture import load
from tg.amd_emu.sqtt.classify import report
from tg.amd_emu.sqtt.record import Recorder
from tg.amd_emu.sqtt.timing import ISSUE, LATENCY, SIMDS, TAKEN, TRACED_SIMD

CAPTURES = pathlib.Path(__file__).parent / "sqtt_captures"

# buf[tid] += 1.0, `trips` times (trips from the kernel arguments), then a barrier; the waits are each arch's own
LOOP = """
  s_load_b64 s[2:3], s[0:1], 0x0
  s_load_b32 s4, s[0:1], 0x8
  {wait_smem}
  v_lshlrev_b32 v1, 2, v0
loop:
  global_load_b32 v2, v1, s[2:3]
  {wait_load}
  v_add_f32 v2, 1.0, v2
  s_delay_alu instid0(VALU_DEP_1)
  v_exp_f32 v3, v2
  global_store_b32 v1, v2, s[2:3]
  s_sub_u32 s4, s4, 1
  s_cmp_eq_u32 s4, 0
  s_cbranch_scc0 loop
  {barrier}
  s_nop 3
  s_endpgm
"""
WAITS = {"rdna3": dict(wait_smem="s_waitcnt lgkmcnt(0)", wait_load="s_waitcnt vmcnt(0)", barrier="s_barrier"),
         "rdna4": dict(wait_smem="s_wait_kmcnt 0", wait_load="s_wait_loadcnt 0", barrier="s_barrier_signal -1\n  s_barrier_wait -1")}
ARGS = [{".name": "buf", ".offset": 0, ".size": 8, ".value_kind": "global_buffer"},
        {".name": "n", ".offset": 8, ".size": 4, ".value_kind": "by_value"}]

def kernel(arch: str) -> bytes:
  return write("k", assemble(LOOP.format(**WAITS[arch]), arch), arch, KernelDescriptor(kernarg_size=12, rsrc2=2 << 1), ARGS)

def run(arch: str, trips: int, grid: int, block: int):
  hsaco, rec = kernel(arch), Recorder()
  buf = np.zeros(block, np.float32)
  launch(hsaco, "k", (grid, 1, 1), (block, 1, 1), [buf, trips], trace=rec)
  assert (buf == grid * trips).all()  # recording changed nothing: every workgroup added `trips` to every element
  code = Code(read(hsaco))
  return rec, timeline(decode(rec.stream(arch), arch), code), rec.runs[0].executed[0][0] - code.entry

def check_round_trip(rec, waves, base):
  """Every wave starts and ends; the traced SIMD's waves decode to exactly the instructions they executed, in order."""
  assert len(waves) == len(rec.runs) and all(w.end is not None for w in waves)
  traced = [w for w in waves if w.simd == TRACED_SIMD]
  runs = [r for r in rec.runs if r.index % SIMDS == TRACED_SIMD]
  assert len(traced) == len(runs)
  for r, w in zip(runs, traced):
    assert [i.pc + base for i in w.issues] == [pc for pc, inst in r.executed if report(inst).packet not in (None, "WAVEEND")]
    assert w.ended_on_endpgm and all(i.matches for i in w.issues)

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_round_trip(arch):
  check_round_trip(*run(arch, trips=3, grid=3, block=160))

@settings(max_examples=12, deadline=None)
@given(trips=st.integers(1, 5), grid=st.integers(1, 3), block=st.sampled_from([1, 32, 33, 96, 256]))
def test_round_trip_property(trips, grid, block):
  check_round_trip(*run("rdna3", trips, grid, block))

def test_timing_model():
  """One wave, times worked out by hand from the model's constants: the s_waitcnt after the scalar loads issues when the
  second load is back, the one after the global load when it is back; v_exp (transcendental) holds the wave 4 cycles
  and the taken branch TAKEN cycles."""
  _, waves, _ = run("rdna3", trips=2, grid=1, block=32)
  t = {}
  for i in waves[0].issues: t.setdefault(i.text.split(" ")[0], []).append(i.time)
  load2 = t["s_load_b32"][0]
  assert t["s_waitcnt"][0] == load2 + LATENCY["smem"]
  assert t["s_waitcnt"][1] == t["global_load_b32"][0] + LATENCY["load"]
  assert t["global_store_b32"][0] == t["v_exp_f32_e32"][0] + ISSUE["VALU_TRANS"]
  assert t["global_load_b32"][1] == t["s_cbranch_scc0"][0] + TAKEN
  assert waves[0].start < t["s_load_b64"][0] < load2 == t["s_load_b64"][0] + 1

def test_barrier_holds_the_workgroup():
  """4 waves of one workgroup on 4 SIMDs run the same code, each started LAUNCH_GAP after the previous: the last reaches
  the barrier (and is ready one cycle later) that much after the traced first one, which resumes one cycle after that."""
  _, waves, _ = run("rdna3", trips=1, grid=1, block=128)
  w = next(w for w in waves if w.simd == TRACED_SIMD)
  bar = next(k for k, i in enumerate(w.issues) if i.text.startswith("s_barrier"))
  assert w.issues[bar + 1].time == w.issues[bar].time + (max(x.start for x in waves) - w.start) + 2

@pytest.mark.parametrize("target, run_name, arch", [("gfx1100", "plus_run_0", "rdna3"), ("gfx1200", "plus_run_1", "rdna4")])
def test_emulated_trace_matches_hardware(target, run_name, arch):
  """The captured plus kernel ([1,2,3] + [4,5,6], one wave of 3 lanes) run on the emulator: its trace reports the same
  instructions with the same packet kinds and ops, in the same order, as the hardware's capture of that kernel."""
  path = CAPTURES / target / run_name
  blobs = load(path)
  hw = [w for b in blobs if b.itrace for w in timeline(decode(b.data, arch), Code(b.code)) if w.issues]
  hsaco, rec = (path / "kernel.hsaco").read_bytes(), Recorder()
  out = np.zeros(3, np.float32)
  launch(hsaco, None, (1, 1, 1), (3, 1, 1), [out, np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32)], trace=rec)
  assert out.tolist() == [5, 7, 9]
  [emulated] = timeline(decode(rec.stream(arch), arch), Code(read(hsaco)))
  assert len(hw) == 1 and [(i.pc, i.packet, i.op) for i in emulated.issues] == [(i.pc, i.packet, i.op) for i in hw[0].issues]
