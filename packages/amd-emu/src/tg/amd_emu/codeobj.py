"""AMDGPU code objects (.hsaco ELF): read kernels (descriptor + code + argument list) and write loadable ones."""
from __future__ import annotations
import struct
from dataclasses import dataclass, field
from typing import Any
from . import msgpack

EM_AMDGPU, ELFOSABI_AMDGPU_HSA, NT_AMDGPU_METADATA = 224, 64, 32
MACH = {"rdna3": 0x41, "rdna4": 0x48}  # EF_AMDGPU_MACH_AMDGCN_GFX1100 / GFX1200
ARCH_OF_MACH = {v: k for k, v in MACH.items()} | {0x42: "rdna3", 0x43: "rdna3", 0x44: "rdna3", 0x49: "rdna4"}
USER_SGPRS = ("private_segment_buffer", "dispatch_ptr", "queue_ptr", "kernarg_segment_ptr", "dispatch_id", "flat_scratch_init",
              "private_segment_size")
KD = struct.Struct("<IIIIq20sIIIHH4s")
KERNARG_MIN = 256  # launch always provides this many bytes of kernel arguments, however short the segment

@dataclass
class KernelDescriptor:
  """The 64-byte AMDHSA kernel descriptor."""
  group_segment_size: int = 0
  private_segment_size: int = 0
  kernarg_size: int = 0
  entry_offset: int = 0
  rsrc3: int = 0
  rsrc1: int = 0
  rsrc2: int = 0
  properties: int = 0x408  # kernarg_segment_ptr + wavefront_size32
  kernarg_preload: int = 0

  @classmethod
  def unpack(cls, b: bytes) -> KernelDescriptor:
    g, p, k, _, entry, _, r3, r1, r2, props, pre, _ = KD.unpack(b[:64])
    return cls(g, p, k, entry, r3, r1, r2, props, pre)

  def pack(self) -> bytes:
    return KD.pack(self.group_segment_size, self.private_segment_size, self.kernarg_size, 0, self.entry_offset, b"", self.rsrc3,
                   self.rsrc1, self.rsrc2, self.properties, self.kernarg_preload, b"")

  @property
  def vgprs(self) -> int: return ((self.rsrc1 & 0x3F) + 1) * 8  # wave32 granule: 8 VGPRs

  @property
  def sgprs(self) -> int: return ((self.rsrc1 >> 6 & 0xF) + 1) * 8

  @property
  def user_sgpr_count(self) -> int: return self.rsrc2 >> 1 & 0x1F

  @property
  def user_sgprs(self) -> list[str]:
    """The enabled user SGPRs, in the order they are loaded (s0 up)."""
    return [n for i, n in enumerate(USER_SGPRS) if self.properties >> i & 1]

  @property
  def workgroup_ids(self) -> tuple[bool, bool, bool]: return tuple(bool(self.rsrc2 >> b & 1) for b in (7, 8, 9))  # type: ignore[return-value]

  @property
  def workitem_id_dims(self) -> int: return (self.rsrc2 >> 11 & 3) + 1

@dataclass
class Kernel:
  name: str
  descriptor: KernelDescriptor
  code: bytes
  code_offset: int
  args: list[dict] = field(default_factory=list)

@dataclass
class CodeObject:
  arch: str
  kernels: dict[str, Kernel]
  text: bytes
  text_addr: int
  metadata: dict

class CodeObjectError(ValueError):
  """Bytes that aren't a code object tg can read; the message names the part that is wrong."""

def _unpack(fmt: str, data: bytes, off: int, what: str) -> tuple:
  if not 0 <= off <= len(data) - struct.calcsize(fmt):
    raise CodeObjectError(f"truncated ELF: the {what} at offset {off:#x} runs past the end of the file ({len(data)} bytes)")
  return struct.unpack_from(fmt, data, off)

def _sections(data: bytes) -> list[dict]:
  shoff, = _unpack("<Q", data, 0x28, "ELF header")
  shentsize, shnum, shstrndx = _unpack("<HHH", data, 0x3A, "ELF header")
  if shnum and shentsize < 64: raise CodeObjectError(f"bad ELF: section headers of {shentsize} bytes, 64 expected")
  secs = []
  for i in range(shnum):
    name, typ, _, addr, off, size, link, _, _, entsize = _unpack("<IIQQQQIIQQ", data, shoff + i * shentsize, f"section header {i}")
    if typ != 8 and off + size > len(data):  # SHT_NOBITS (.bss) has no bytes in the file
      raise CodeObjectError(f"truncated ELF: section {i} (bytes {off:#x}..{off + size:#x}) runs past the end of the file ({len(data)} bytes)")
    secs.append({"name_off": name, "type": typ, "addr": addr, "offset": off, "size": size, "link": link, "entsize": entsize})
  if shstrndx >= len(secs): raise CodeObjectError(f"bad ELF: section name table {shstrndx}, but there are {len(secs)} sections")
  for s in secs: s["name"] = _cstr(data, secs[shstrndx], s["name_off"], "section name")
  return secs

def _cstr(data: bytes, table: dict, off: int, what: str) -> str:
  """The NUL-terminated string at `off` in a string table section."""
  start, end = table["offset"] + off, table["offset"] + table["size"]
  if (nul := data.find(b"\0", start, end)) < 0 or off < 0:
    raise CodeObjectError(f"bad ELF: {what} at {off:#x} isn't a NUL-terminated string inside its table ({table['size']} bytes)")
  return data[start:nul].decode(errors="replace")

def _section_of(secs: list[dict], index: int, what: str) -> dict:
  if not 0 <= index < len(secs): raise CodeObjectError(f"bad ELF: {what} names section {index}, but there are {len(secs)}")
  return secs[index]

def _notes(data: bytes, sec: dict) -> list[tuple[str, int, bytes]]:
  out, i, end = [], sec["offset"], sec["offset"] + sec["size"]
  while i < end:
    namesz, descsz, typ = _unpack("<III", data[:end], i, "note header")
    name = data[i + 12:i + 12 + namesz].rstrip(b"\0").decode(errors="replace")
    desc_off = i + 12 + (namesz + 3) // 4 * 4
    if desc_off + descsz > end: raise CodeObjectError(f"bad ELF: note {name!r} at {i:#x} ({descsz} bytes) runs past its section")
    out.append((name, typ, data[desc_off:desc_off + descsz]))
    i = desc_off + (descsz + 3) // 4 * 4
  return out

def _kernel_args(meta: Any) -> dict[str, list[dict]]:
  """Each kernel's argument list from the metadata, checked: what launch and the CLI read of each argument is there."""
  kernels = meta.get("amdhsa.kernels", []) if isinstance(meta, dict) else None
  if not isinstance(kernels, list): raise CodeObjectError(f"metadata: amdhsa.kernels is {kernels!r:.80}, not a list of kernels")
  out = {}
  for i, k in enumerate(kernels):
    if not isinstance(k, dict) or not isinstance(name := k.get(".name"), str) or not isinstance(args := k.get(".args", []), list):
      raise CodeObjectError(f"metadata: kernel {i} isn't a map with a .name string and an .args list: {k!r:.120}")
    for j, a in enumerate(args):
      if not _arg_ok(a): raise CodeObjectError(f"metadata: kernel {name} argument {j} needs an .offset >= 0, a .size (hidden: 2, 4 or 8) "
                                               f"and a .value_kind: {a!r:.120}")
    out[name] = args
  return out

def _arg_ok(a: Any) -> bool:
  if not isinstance(a, dict) or type(off := a.get(".offset")) is not int or type(size := a.get(".size")) is not int: return False
  return isinstance(kind := a.get(".value_kind"), str) and off >= 0 and (size in (2, 4, 8) if kind.startswith("hidden_") else size > 0)

def read(data: bytes) -> CodeObject:
  """Parse an amdgcn ELF: kernels by their `.kd` symbols, code from .text, arguments from the metadata note.
  Anything malformed raises CodeObjectError naming the part."""
  if data[:4] != b"\x7fELF" or data[4:5] != b"\x02": raise CodeObjectError("not a 64-bit ELF file")
  if len(data) < 64: raise CodeObjectError(f"truncated ELF: {len(data)} bytes, the ELF header alone is 64")
  machine, = _unpack("<H", data, 0x12, "ELF header")
  if machine != EM_AMDGPU: raise CodeObjectError(f"not an AMDGPU code object (e_machine {machine})")
  flags, = _unpack("<I", data, 0x30, "ELF header")
  arch = ARCH_OF_MACH.get(flags & 0xFF)
  if arch is None: raise CodeObjectError(f"unsupported GPU (EF_AMDGPU_MACH 0x{flags & 0xFF:x}): expected gfx11 (rdna3) or gfx12 (rdna4)")
  secs = _sections(data)
  text = next((s for s in secs if s["name"] == ".text"), None)
  if text is None: raise CodeObjectError("code object has no .text section")
  meta: dict = {}
  for s in secs:
    if s["type"] == 7:
      for name, typ, desc in _notes(data, s):
        if name != "AMDGPU" or typ != NT_AMDGPU_METADATA: continue
        try: meta = msgpack.unpack(desc)
        except ValueError as e: raise CodeObjectError(f"metadata note: {e}") from None
  if (symtab := next((s for s in secs if s["type"] == 2), None)) is None: raise CodeObjectError("code object has no symbol table")
  strtab, syms = _section_of(secs, symtab["link"], "the symbol table's link"), {}
  for i in range(symtab["size"] // 24):
    nm, info, _, shndx, value, size = _unpack("<IBBHQQ", data, symtab["offset"] + i * 24, f"symbol {i}")
    syms[_cstr(data, strtab, nm, f"symbol {i}'s name")] = (value, size, shndx)
  args = _kernel_args(meta)
  kernels, text_end = {}, text["addr"] + text["size"]
  for sym, (value, _, shndx) in syms.items():
    if not sym.endswith(".kd"): continue
    name, sec = sym[:-3], _section_of(secs, shndx, f"kernel descriptor {sym}")
    if not sec["addr"] <= value <= sec["addr"] + sec["size"] - 64 or sec["type"] == 8:
      raise CodeObjectError(f"kernel {name}: its descriptor at {value:#x} isn't inside its section {sec['name']!r}")
    kd = KernelDescriptor.unpack(data[sec["offset"] + value - sec["addr"]:][:64])
    if not text["addr"] <= (entry := value + kd.entry_offset) < text_end:
      raise CodeObjectError(f"kernel {name}: its entry {entry:#x} isn't inside .text ({text['addr']:#x}..{text_end:#x})")
    if bad := [a for a in args.get(name, []) if a[".offset"] + a[".size"] > max(kd.kernarg_size, KERNARG_MIN)]:
      raise CodeObjectError(f"kernel {name}: argument {bad[0]!r:.120} lies outside its {kd.kernarg_size}-byte kernarg segment")
    end = min([v for v, _, n in syms.values() if n == secs.index(text) and v > entry] + [text_end])
    code = data[text["offset"] + entry - text["addr"]:text["offset"] + end - text["addr"]]
    kernels[name] = Kernel(name, kd, code, entry - text["addr"], args.get(name, []))
  return CodeObject(arch, kernels, data[text["offset"]:text["offset"] + text["size"]], text["addr"], meta)

def write(name: str, code: bytes, arch: str, kd: KernelDescriptor, args: list[dict] | None = None) -> bytes:
  """A loadable ET_DYN code object with one kernel: .rodata holds the descriptor, .text the code (256-aligned)."""
  kd_addr, text_addr = 0x1000 - 64, 0x1000
  kd = KernelDescriptor(**{**kd.__dict__, "entry_offset": text_addr - kd_addr})
  meta = {"amdhsa.version": [1, 2], "amdhsa.target": f"amdgcn-amd-amdhsa--{'gfx1100' if arch == 'rdna3' else 'gfx1200'}",
          "amdhsa.kernels": [{".name": name, ".symbol": f"{name}.kd", ".args": args or [], ".kernarg_segment_size": kd.kernarg_size,
                              ".group_segment_fixed_size": kd.group_segment_size, ".private_segment_fixed_size": kd.private_segment_size,
                              ".kernarg_segment_align": 8, ".wavefront_size": 32, ".sgpr_count": kd.sgprs, ".vgpr_count": kd.vgprs,
                              ".max_flat_workgroup_size": 1024}]}
  desc = msgpack.pack(meta)
  note = struct.pack("<III", 7, len(desc), NT_AMDGPU_METADATA) + b"AMDGPU\0\0" + desc + b"\0" * (-len(desc) % 4)
  shstr = b"\0.note\0.rodata\0.text\0.symtab\0.strtab\0.shstrtab\0"
  strtab = b"\0" + name.encode() + b"\0" + name.encode() + b".kd\0"
  sym = struct.Struct("<IBBHQQ")
  symtab = sym.pack(0, 0, 0, 0, 0, 0) + sym.pack(1, 0x12, 0, 3, text_addr, len(code)) + sym.pack(len(name) + 2, 0x11, 0, 2, kd_addr, 64)
  note_off = 0x40 + 56 * 2
  body = bytearray(0x2000)
  body[note_off:note_off + len(note)] = note
  if note_off + len(note) > kd_addr: raise ValueError("kernel metadata too large for the fixed layout")
  body[kd_addr:kd_addr + 64] = kd.pack()
  body = body[:text_addr] + code
  tail = {}
  for key, blob in (("symtab", symtab), ("strtab", strtab), ("shstrtab", shstr)):
    body += b"\0" * (-len(body) % 8); tail[key] = len(body); body += blob
  body += b"\0" * (-len(body) % 8)
  shoff = len(body)
  sh = struct.Struct("<IIQQQQIIQQ")
  shdrs = [sh.pack(*([0] * 10)), sh.pack(1, 7, 2, note_off, note_off, len(note), 0, 0, 4, 0), sh.pack(7, 1, 2, kd_addr, kd_addr, 64, 0, 0, 64, 0),
           sh.pack(15, 1, 6, text_addr, text_addr, len(code), 0, 0, 256, 0), sh.pack(21, 2, 0, 0, tail["symtab"], len(symtab), 5, 1, 8, 24),
           sh.pack(29, 3, 0, 0, tail["strtab"], len(strtab), 0, 0, 1, 0), sh.pack(37, 3, 0, 0, tail["shstrtab"], len(shstr), 0, 0, 1, 0)]
  body += b"".join(shdrs)
  ident = b"\x7fELF" + bytes([2, 1, 1, ELFOSABI_AMDGPU_HSA, 3]) + b"\0" * 7
  flags = MACH[arch]  # as clang-19 writes it for gfx1100/gfx1200: no xnack/sramecc feature bits
  hdr = ident + struct.pack("<HHIQQQIHHHHHH", 3, EM_AMDGPU, 1, text_addr, 0x40, shoff, flags, 64, 56, 2, 64, len(shdrs), 6)
  end = text_addr + len(code)
  ph = struct.Struct("<IIQQQQQQ")
  phdrs = ph.pack(1, 5, 0, 0, 0, end, end, 0x1000) + ph.pack(4, 4, note_off, note_off, note_off, len(note), len(note), 4)
  body[:len(hdr) + len(phdrs)] = hdr + phdrs
  return bytes(body)

def load_image(data: bytes) -> bytes:
  """The loaded image of an ELF code object: its PT_LOAD segments at their virtual addresses (what the emulator and the AMD
  runtime both map)."""
  phoff, = struct.unpack_from("<Q", data, 0x20)
  phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
  segs = [struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize) for i in range(phnum)]
  loads = [(vaddr, off, filesz, memsz) for typ, _, off, vaddr, _, filesz, memsz, _ in segs if typ == 1]
  img = bytearray(max((v + m for v, _, _, m in loads), default=0))
  for v, off, fs, _ in loads: img[v:v + fs] = data[off:off + fs]
  return bytes(img)

def hidden_args(grid: tuple[int, int, int], block: tuple[int, int, int]) -> dict[str, int]:
  """The hidden kernel arguments of a launch of `grid` workgroups of `block` work-items, by .value_kind: block counts, group
  sizes, remainders (0: every workgroup is whole) and the grid's dimension count. Others a kernel may list stay zero."""
  return ({f"hidden_block_count_{a}": n for a, n in zip("xyz", grid)} | {f"hidden_group_size_{a}": n for a, n in zip("xyz", block)}
          | {f"hidden_remainder_{a}": 0 for a in "xyz"} | {"hidden_grid_dims": sum(1 for g, b in zip(grid, block) if g * b > 1) or 1})
