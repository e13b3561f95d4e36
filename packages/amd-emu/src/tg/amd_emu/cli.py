"""`tg-amd-emu`: assemble LLVM-syntax text, disassemble code objects or raw code. (`run` comes with the emulator.)"""
from __future__ import annotations
import argparse
import pathlib
import sys
from .asm import assemble
from .codeobj import KernelDescriptor, read, write
from .decode import decode_all

def disasm_text(code: bytes, arch: str, base: int = 0) -> str:
  return "\n".join(f"  {inst.disasm():<60} // {base + off:06x}: {inst.to_bytes().hex()}" for off, inst in decode_all(code, arch))

def cmd_asm(ns: argparse.Namespace) -> None:
  code = assemble(pathlib.Path(ns.file).read_text(), ns.arch)
  out = write(ns.kernel, code, ns.arch, KernelDescriptor()) if ns.out.endswith(".hsaco") else code
  pathlib.Path(ns.out).write_bytes(out)

def cmd_disasm(ns: argparse.Namespace) -> None:
  data = pathlib.Path(ns.file).read_bytes()
  if data[:4] != b"\x7fELF": print(disasm_text(data, ns.arch)); return
  co = read(data)
  for k in co.kernels.values():
    d = k.descriptor
    print(f"{k.name}: ({co.arch}) kernarg {d.kernarg_size} B, lds {d.group_segment_size} B, scratch {d.private_segment_size} B, "
          f"{d.vgprs} VGPRs, {d.sgprs} SGPRs, user SGPRs {', '.join(d.user_sgprs) or '-'}")
    for a in k.args: print(f"  arg {a.get('.name', '?')}: offset {a['.offset']}, size {a['.size']}, {a['.value_kind']}")
    print(disasm_text(k.code, co.arch, co.text_addr + k.code_offset))

def main(argv: list[str] | None = None) -> int:
  p = argparse.ArgumentParser(prog="tg-amd-emu", description="RDNA3/RDNA4 assembler and disassembler")
  sub = p.add_subparsers(dest="cmd", required=True)
  a = sub.add_parser("asm", help="assemble LLVM-syntax text to raw code (or a .hsaco code object)")
  a.add_argument("file"); a.add_argument("-o", "--out", required=True); a.add_argument("--arch", choices=("rdna3", "rdna4"), default="rdna3")
  a.add_argument("--kernel", default="kernel", help="kernel name when writing a .hsaco")
  a.set_defaults(fn=cmd_asm)
  d = sub.add_parser("disasm", help="disassemble a .hsaco code object or raw code bytes")
  d.add_argument("file"); d.add_argument("--arch", choices=("rdna3", "rdna4"), default="rdna3", help="for raw code (ELF files say it themselves)")
  d.set_defaults(fn=cmd_disasm)
  ns = p.parse_args(argv)
  try: ns.fn(ns)
  except (ValueError, TypeError, OSError) as e:
    print(f"tg-amd-emu: error: {e}", file=sys.stderr)
    return 1
  return 0
