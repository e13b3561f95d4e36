"""Emulator throughput: wave-instructions and lane-ops per second on an ALU loop (after tier-up, and pinned to tier 1) and on
a tiled matmul kernel compiled by clang-19, the cold-start cost of a new instruction shape (pseudocode -> UOps -> C, plus
the clang run compiling the shapes), and many small programs each run once (a GPU compiler's test suite on a virtual GPU).

Reference figures: tinygrad's Python emulator runs 0.6-1.2 M wave-instructions/s and ~37 ms per new instruction here;
on 710 small programs it takes 39 s cold and 21 s warm, tg before tiered execution 175 s and 33 s (issue 15)."""
from __future__ import annotations
import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time
import numpy as np

ALU_LOOP = """
  s_mov_b32 s0, {iters}
loop:
  v_fma_f32 v1, v2, v3, v1
  v_add_f32_e32 v4, v4, v2
  v_mul_f32_e32 v5, v5, v3
  v_xor_b32_e32 v6, v6, v0
  v_add_nc_u32_e32 v7, v7, v0
  v_max_f32_e32 v8, v8, v1
  v_fma_f32 v9, v2, v2, v9
  v_sub_f32_e32 v10, v10, v3
  s_sub_u32 s0, s0, 1
  s_cmp_lg_u32 s0, 0
  s_cbranch_scc1 loop
"""

def best_of(fn, min_time: float = 0.5) -> float:
  best, spent = float("inf"), 0.0
  while spent < min_time:
    t = time.perf_counter(); fn(); dt = time.perf_counter() - t
    best, spent = min(best, dt), spent + dt
  return best

def alu_loop(iters: int = 20000) -> dict[str, float]:
  from tg.amd_emu.asm import assemble
  from tg.amd_emu.emu import run_wave
  from tg.amd_emu.waveprog import wave_program
  code = assemble(ALU_LOOP.format(iters=iters), "rdna3")
  run_wave(code)
  wave_program(code + assemble("s_endpgm", "rdna3"), "rdna3", 0, 0).wait_optimized()
  n = 3 + 11 * iters
  t = best_of(lambda: run_wave(code))
  t1 = best_of(lambda: run_wave(code, tier=1))
  return {"alu_wave_inst_per_s": n / t, "alu_lane_ops_per_s": (8 * 32 + 3) * iters / t, "alu_tier1_wave_inst_per_s": n / t1}

def matmul(n: int = 128) -> dict[str, float]:
  from tg.amd_emu.emu import launch
  src = pathlib.Path(__file__).parents[2] / "tests" / "amd_emu" / "emu_kernels.c"
  with tempfile.TemporaryDirectory() as d:
    subprocess.run(["clang-19", "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx1100", "-nogpulib", "-O2", "-x", "c", "-c", str(src), "-o", f"{d}/k.o"],
                   check=True)
    subprocess.run(["ld.lld-19", "-shared", f"{d}/k.o", "-o", f"{d}/k.hsaco"], check=True)
    co = pathlib.Path(f"{d}/k.hsaco").read_bytes()
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
  c = np.zeros((n, n), np.float32)
  def run() -> int: return launch(co, "matmul", (n // 16, n // 16, 1), (16, 16, 1), [c, a, b, n])
  executed = run()
  from tg.amd_emu.waveprog import wave_program
  from tg.amd_emu.codeobj import read
  k = read(co).kernels["matmul"]
  from tg.amd_emu.shapes import FloatMode
  base = 0x100000000 + read(co).text_addr  # the program launch() ran: same code, addresses and float mode (from the descriptor)
  wave_program(read(co).text, "rdna3", base, base + k.code_offset, FloatMode.of(k.descriptor.rsrc1, "rdna3")).wait_optimized()
  assert np.allclose(c, a @ b, atol=1e-3), "matmul result differs from numpy"
  t = best_of(run, 1.0)
  return {"matmul_wave_inst_per_s": executed / t, "matmul_lane_ops_per_s": executed * 32 / t, "matmul_seconds": t,
          "matmul_wave_instructions": executed}

def cold_start(arch: str = "rdna3", limit: int = 300) -> dict[str, float]:
  """Per new shape: pseudocode -> UOps -> C with empty caches, then the tier-1 program: one clang run compiling all the shapes.
  (The first run of a brand-new program, end to end in a fresh process, is many_cold_first_program_s.)"""
  from tg.amd_emu import shape_c, shapelib
  from tg.amd_emu.waveprog import WaveProgram, NOPS
  from tg.amd_emu.samples import all_canonical
  insts = [i for i in all_canonical(arch, ("VOP1", "VOP2", "VOP3", "SOP1", "SOP2", "SOPC", "VOPC")) if not NOPS.fullmatch(i.op.name)][:limit]
  shape_c._mem_cache.clear()
  shapelib._entries.clear()
  t = time.perf_counter()
  codes = [shape_c.shape_code(i) for i in insts]
  render = (time.perf_counter() - t) / len(insts)
  code = b"".join(i.to_bytes() for i, sc in zip(insts, codes) if sc.error is None and "PC" not in (i.op.pcode or ""))
  nshapes = len(code and [1 for sc in codes if sc.error is None])
  t = time.perf_counter()
  WaveProgram(code + bytes.fromhex("0000b0bf"), arch, 0, 0)  # runnable in tier 1 once its shapes are compiled
  clang = time.perf_counter() - t
  return {"shape_render_ms": render * 1e3, "program_clang_s": clang, "cold_ms_per_shape": render * 1e3 + clang * 1e3 / max(nshapes, 1),
          "shapes": nshapes}

# "many small programs": the workload of a GPU compiler's test suite on a virtual GPU (every kernel new, each run once)
SMALL_TEMPLATES = [
 "v_add_f32_e32 v{d}, v{a}, v{b}", "v_mul_f32_e32 v{d}, v{a}, v{b}", "v_sub_f32_e32 v{d}, v{a}, v{b}", "v_fma_f32 v{d}, v{a}, v{b}, v{c}",
 "v_max_f32_e32 v{d}, v{a}, v{b}", "v_min_f32_e32 v{d}, v{a}, v{b}", "v_add_nc_u32_e32 v{d}, v{a}, v{b}", "v_sub_nc_u32_e32 v{d}, v{a}, v{b}",
 "v_and_b32_e32 v{d}, v{a}, v{b}", "v_or_b32_e32 v{d}, v{a}, v{b}", "v_xor_b32_e32 v{d}, v{a}, v{b}", "v_lshlrev_b32_e32 v{d}, {k}, v{a}",
 "v_lshrrev_b32_e32 v{d}, {k}, v{a}", "v_mov_b32_e32 v{d}, v{a}", "v_mov_b32_e32 v{d}, {f}", "v_cvt_f32_i32_e32 v{d}, v{a}",
 "v_cvt_i32_f32_e32 v{d}, v{a}", "v_mul_lo_u32 v{d}, v{a}, v{b}", "v_cmp_gt_f32_e32 vcc_lo, v{a}, v{b}", "v_cndmask_b32_e32 v{d}, v{a}, v{b}, vcc_lo",
 "v_add_f32_e32 v{d}, s{sa}, v{b}", "v_mul_f32_e32 v{d}, {f}, v{b}", "v_rcp_f32_e32 v{d}, v{a}", "v_sqrt_f32_e32 v{d}, v{a}",
 "v_exp_f32_e32 v{d}, v{a}", "v_bfe_u32 v{d}, v{a}, {k}, 8", "v_add_co_u32 v{d}, vcc_lo, v{a}, v{b}", "v_mad_u32_u24 v{d}, v{a}, v{b}, v{c}",
 "v_cmp_lt_u32_e32 vcc_lo, v{a}, v{b}", "v_fmac_f32_e32 v{d}, v{a}, v{b}", "v_max_i32_e32 v{d}, v{a}, v{b}", "v_floor_f32_e32 v{d}, v{a}",
 "s_add_u32 s{sd}, s{sa}, s{sb}", "s_mul_i32 s{sd}, s{sa}, s{sb}", "s_and_b32 s{sd}, s{sa}, s{sb}", "s_lshl_b32 s{sd}, s{sa}, {k}",
 "s_mov_b32 s{sd}, {i}", "s_cmp_lt_u32 s{sa}, s{sb}", "s_cselect_b32 s{sd}, s{sa}, s{sb}", "s_xor_b32 s{sd}, s{sa}, s{sb}",
]

def small_program(rng: random.Random, n: int = 150) -> str:
  """n instructions drawn from SMALL_TEMPLATES with random registers and constants: distinct code, recurring shapes."""
  regs = {"d": 32, "a": 32, "b": 32, "c": 32, "sd": 32, "sa": 32, "sb": 32}
  lines = []
  for _ in range(n):
    vals = {k: rng.randrange(m) for k, m in regs.items()} | {"k": rng.randrange(1, 31), "i": rng.randrange(1 << 20),
                                                             "f": rng.choice(["1.0", "0.5", "-2.0", "0x40490fdb", "3.5"])}
    lines.append(rng.choice(SMALL_TEMPLATES).format(**vals))
  return "\n".join(lines)

def many_small_worker(count: int, seed: int, new_seed: int) -> dict[str, float]:
  """In this (fresh) process: run `count` programs once each; then a brand-new one (seed new_seed: in no cache), end to end.
  cpu_s_per_program is this process's CPU time (not the compiler's): what a loaded machine's wall clock can't show."""
  t0 = time.perf_counter()
  from tg.amd_emu.asm import assemble
  from tg.amd_emu.emu import run_wave
  import_s = time.perf_counter() - t0
  rng = random.Random(seed)
  codes = [assemble(small_program(rng), "rdna3") for _ in range(count)] + [assemble(small_program(random.Random(new_seed)), "rdna3")]
  t, cpu = time.perf_counter(), time.process_time()
  run_wave(codes[0])
  first = time.perf_counter() - t
  for code in codes[1:count]: run_wave(code)
  total, cpu = time.perf_counter() - t, time.process_time() - cpu
  t = time.perf_counter()
  run_wave(codes[count])
  return {"s_per_program": total / count, "cpu_s_per_program": cpu / count, "first_program_s": first,
          "new_program_after_s": time.perf_counter() - t, "import_s": import_s}

def many_small(count: int = 200) -> dict[str, float]:
  """Cold (empty disk cache) then warm (the same cache, a new process): seconds per program, each in a fresh process."""
  out: dict[str, float] = {}
  with tempfile.TemporaryDirectory() as d:
    env = os.environ | {"CACHEDB": f"{d}/cache.db"}
    for phase, new_seed in (("cold", 2), ("warm", 3)):
      cmd = [sys.executable, __file__, "--many-worker", str(count), "1", str(new_seed)]
      r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
      out |= {f"many_{phase}_{k}": v for k, v in json.loads(r.stdout).items()}
  return out

def main() -> None:
  p = argparse.ArgumentParser(description=__doc__)
  p.add_argument("--json", action="store_true")
  p.add_argument("--programs", type=int, default=200, help="programs in the many-small-programs case")
  p.add_argument("--only-many", action="store_true", help="run only the many-small-programs case")
  p.add_argument("--many-worker", nargs=3, type=int, help=argparse.SUPPRESS)
  ns = p.parse_args()
  if ns.many_worker:
    print(json.dumps(many_small_worker(*ns.many_worker)))
    return
  if ns.only_many:
    res = many_small(ns.programs)
  else:
    with tempfile.TemporaryDirectory() as d:
      os.environ["CACHEDB"] = f"{d}/cache.db"  # cold caches: nothing from earlier runs
      res = alu_loop() | matmul() | cold_start() | many_small(ns.programs)
  if ns.json: print(json.dumps(res, indent=2)); return
  print(f"{'metric':<32}{'value':>16}   reference")
  ref = {"alu_wave_inst_per_s": "tinygrad 0.6-1.2 M/s, goal >= 100 M/s after tier-up", "matmul_wave_inst_per_s": "goal >= 20 M/s",
         "cold_ms_per_shape": "tinygrad ~37 ms, goal <= 5 ms",
         "many_cold_s_per_program": "tinygrad 0.055, tg before tiers 0.246 (issue 15), goal <= 0.049",
         "many_warm_s_per_program": "tinygrad 0.030, tg before tiers 0.046 (issue 15), goal <= 0.010"}
  for k, val in res.items(): print(f"{k:<32}{val:>16,.4f}   {ref.get(k, '')}")

if __name__ == "__main__":
  main()
