"""Run LLVM 19's assembler/disassembler on many lines at once (the oracle for encodings and syntax)."""
from __future__ import annotations
import re
import shutil
import subprocess

MCPU = {"rdna3": "gfx1100", "rdna4": "gfx1200"}

def tool(name: str) -> str:
  path = shutil.which(name)
  if path is None: raise RuntimeError(f"{name} not found: install LLVM 19 (Debian: apt-get install llvm-19 clang-19 lld-19)")
  return path

def _run(args: list[str], text: str) -> tuple[str, str]:
  p = subprocess.run([tool("llvm-mc-19"), "-triple=amdgcn", *args], input=text, capture_output=True, text=True)
  return p.stdout, p.stderr

def _errors(stderr: str) -> dict[int, str]:
  return {int(m[1]) - 1: m[2] for m in re.finditer(r"<stdin>:(\d+):\d+: (?:error|warning): (.*)", stderr)}

def assemble(lines: list[str], arch: str, mcpu: str | None = None) -> list[bytes | str]:
  """Per line: its encoding, or LLVM's error message."""
  out, err = _run([f"-mcpu={mcpu or MCPU[arch]}", "-show-encoding"], "\n".join(lines) + "\n")
  errors = _errors(err)
  encs = iter(bytes(int(b, 16) for b in m.split(",")) for m in re.findall(r"encoding: \[([^\]]*)\]", out))
  return [errors[i] if i in errors else next(encs) for i in range(len(lines))]

MARKER = bytes([0x0D, 0x00, 0x80, 0xBF])  # s_nop 13 (same on gfx11 and gfx12) separates the instructions

def disassemble(blobs: list[bytes], arch: str, mcpu: str | None = None) -> list[str]:
  """Per blob: LLVM's text (instructions joined by '; '), or 'error: ...'."""
  text = "".join(" ".join(f"0x{b:02x}" for b in blob) + "\n" + " ".join(f"0x{b:02x}" for b in MARKER) + "\n" for blob in blobs)
  out, err = _run([f"-mcpu={mcpu or MCPU[arch]}", "--disassemble"], text)
  errors = _errors(err)
  lines = [line.strip() for line in out.splitlines() if line.strip() and not line.strip().startswith(".")]
  chunks, cur = [], []
  for line in lines:
    if line == "s_nop 13": chunks.append("; ".join(cur)); cur = []
    else: cur.append(line)
  return ["error: " + errors[2 * i] if 2 * i in errors else chunks[i] for i in range(len(blobs))]
