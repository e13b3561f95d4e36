"""`tg-amd-emu`: assemble LLVM-syntax text, disassemble code objects or raw code, run a kernel of a code object.
asm and disasm need only the ISA tables; numpy and the emulator (which compiles through tg.codegen) load for `run` alone."""
from __future__ import annotations
import argparse
import importlib.metadata
import pathlib
import sys
from typing import Any
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

BUFFER_FORMS = "f32:N (zeroed), f32:file.npy, f32:@file.bin or f32=1,2,3"

def parse_arg(text: str, meta: dict) -> Any:
  """A kernel argument from the command line: `f32:1024` (zeroed buffer), `f32:file.npy`/`f32:@file.bin` (contents), `f32=0,1,2`
  (values), or a number for a by-value argument. A malformed one raises ValueError naming it and the forms it can take."""
  try: return _parse_arg(text, meta)
  except ValueError as e: raise ValueError(f"--arg {text!r} for {meta.get('.name', 'argument')}: {e}") from None

def _parse_arg(text: str, meta: dict) -> Any:
  import numpy as np
  if meta.get(".value_kind") != "global_buffer":
    try: return float(text) if "." in text or "e" in text.lower() else int(text, 0)
    except ValueError: raise ValueError("a by-value argument takes a number") from None
  dt, sep, what = text.partition("=") if "=" in text else text.partition(":")
  if not sep: raise ValueError(f"a buffer argument takes {BUFFER_FORMS}")
  if dt not in DTYPES: raise ValueError(f"unknown dtype {dt!r}: one of {', '.join(DTYPES)}")
  dtype = np.dtype(DTYPES[dt])
  if sep == "=": return np.array([float(x) for x in what.split(",")], dtype)
  if what.endswith(".npy"): return np.ascontiguousarray(np.load(what).astype(dtype))
  if what.startswith("@"): return np.fromfile(what[1:], dtype)
  if (n := int(what, 0)) < 0: raise ValueError(f"a buffer of {n} elements")
  return np.zeros(n, dtype)

DTYPES = {"f32": "float32", "f16": "float16", "f64": "float64", "i32": "int32", "u32": "uint32", "i64": "int64", "u64": "uint64",
          "i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16"}

def dims(flag: str, text: str) -> tuple[int, ...]:
  try: return tuple(int(x) for x in text.split(","))
  except ValueError: raise ValueError(f"{flag} {text!r}: expected X,Y,Z integers") from None

def cmd_run(ns: argparse.Namespace) -> None:
  import numpy as np
  from .emu import launch
  data = pathlib.Path(ns.file).read_bytes()
  co = read(data)
  names = sorted(co.kernels)
  kname = ns.kernel or (names[0] if len(names) == 1 else None)
  if kname is None or kname not in co.kernels: raise ValueError(f"pick a kernel with --kernel: {', '.join(names)}")
  metas = [a for a in co.kernels[kname].args if not a.get(".value_kind", "").startswith("hidden_")]
  if len(ns.arg) != len(metas):
    raise ValueError(f"{kname} takes {len(metas)} arguments ({', '.join(a.get('.name', '?') for a in metas)}), got {len(ns.arg)}")
  args = [parse_arg(t, m) for t, m in zip(ns.arg, metas)]
  n = launch(data, kname, dims("--grid", ns.grid), dims("--block", ns.block), args, arch=ns.arch, budget=ns.budget)
  print(f"{kname}: {n} wave-instructions")
  for i, (a, m) in enumerate(zip(args, metas)):
    if not isinstance(a, np.ndarray): continue
    if ns.out: np.save(f"{ns.out}/arg{i}.npy", a); print(f"  arg {i} ({m.get('.name', '?')}): {ns.out}/arg{i}.npy")
    else: print(f"  arg {i} ({m.get('.name', '?')}): {np.array2string(a, threshold=64)}")

def main(argv: list[str] | None = None) -> int:
  p = argparse.ArgumentParser(prog="tg-amd-emu", description="RDNA3/RDNA4 assembler, disassembler and emulator")
  p.add_argument("--version", action="version", version=f"%(prog)s {importlib.metadata.version('tg-amd-emu')}")
  sub = p.add_subparsers(dest="cmd", required=True)
  a = sub.add_parser("asm", help="assemble LLVM-syntax text to raw code (or a .hsaco code object)")
  a.add_argument("file"); a.add_argument("-o", "--out", required=True); a.add_argument("--arch", choices=("rdna3", "rdna4"), default="rdna3")
  a.add_argument("--kernel", default="kernel", help="kernel name when writing a .hsaco")
  a.set_defaults(fn=cmd_asm)
  d = sub.add_parser("disasm", help="disassemble a .hsaco code object or raw code bytes")
  d.add_argument("file"); d.add_argument("--arch", choices=("rdna3", "rdna4"), default="rdna3", help="for raw code (ELF files say it themselves)")
  d.set_defaults(fn=cmd_disasm)
  r = sub.add_parser("run", help="run a kernel of a .hsaco on the emulator and print (or save) its buffer arguments")
  r.add_argument("file"); r.add_argument("--kernel"); r.add_argument("--grid", default="1,1,1", help="workgroups per dimension: X,Y,Z")
  r.add_argument("--block", default="32,1,1", help="work-items per workgroup: X,Y,Z")
  r.add_argument("--arg", action="append", default=[], help=f"{BUFFER_FORMS} for buffers, a number for values")
  r.add_argument("--arch", choices=("rdna3", "rdna4")); r.add_argument("--budget", type=int, default=10_000_000)
  r.add_argument("--out", help="directory to save buffer arguments to as argN.npy")
  r.set_defaults(fn=cmd_run)
  ns = p.parse_args(argv)
  try: ns.fn(ns)
  except (ValueError, TypeError, OSError, RuntimeError) as e:
    print(f"tg-amd-emu: error: {e}", file=sys.stderr)
    return 1
  return 0
