"""Decode / encode / disassemble / assemble throughput of tg.amd_emu over every opcode's canonical instance,
against LLVM's own assembler and disassembler (llvm-mc-19) on the same instructions when it is installed."""
from __future__ import annotations
import argparse
import json
import shutil
import subprocess
import time
from typing import Callable
from tg.amd_emu.asm import parse_line
from tg.amd_emu.decode import decode_all
from tg.amd_emu.samples import all_canonical

def rate(fn: Callable[[], object], n: int, min_time: float = 0.3) -> float:
  """Instructions per second, best of repeated runs lasting at least min_time in total."""
  best, spent = float("inf"), 0.0
  while spent < min_time:
    t = time.perf_counter(); fn(); dt = time.perf_counter() - t
    best, spent = min(best, dt), spent + dt
  return n / best

def llvm_rate(args: list[str], text: str, n: int) -> float | None:
  exe = shutil.which("llvm-mc-19")
  if exe is None: return None
  return rate(lambda: subprocess.run([exe, "-triple=amdgcn", *args], input=text, capture_output=True, text=True), n, 0.5)

def measure(arch: str) -> dict[str, float | None]:
  insts = all_canonical(arch)
  code = b"".join(i.to_bytes() for i in insts)
  texts = [i.disasm() for i in insts]
  mcpu = {"rdna3": "gfx1100", "rdna4": "gfx1200"}[arch]
  blob = "\n".join(" ".join(f"0x{b:02x}" for b in i.to_bytes()) for i in insts)
  n = len(insts)
  return {"decode": rate(lambda: decode_all(code, arch), n), "encode": rate(lambda: [i.to_bytes() for i in insts], n),
          "disasm": rate(lambda: [i.disasm() for i in insts], n), "assemble": rate(lambda: [parse_line(t, arch) for t in texts], n),
          "llvm-mc disassemble": llvm_rate([f"-mcpu={mcpu}", "--disassemble"], blob, n),
          "llvm-mc assemble": llvm_rate([f"-mcpu={mcpu}", "-show-encoding"], "\n".join(texts), n), "instructions": n}

def main() -> None:
  p = argparse.ArgumentParser(description=__doc__)
  p.add_argument("--json", action="store_true")
  ns = p.parse_args()
  results = {arch: measure(arch) for arch in ("rdna3", "rdna4")}
  if ns.json: print(json.dumps(results, indent=2)); return
  print(f"{'arch':6} {'operation':22} {'instructions/s':>15}")
  for arch, r in results.items():
    for k, v in r.items():
      if k != "instructions": print(f"{arch:6} {k:22} {'n/a' if v is None else f'{v:,.0f}':>15}")
  print(f"(over {results['rdna3']['instructions']} / {results['rdna4']['instructions']} canonical instructions; llvm-mc includes process start)")

if __name__ == "__main__":
  main()
