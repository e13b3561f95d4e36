"""AMDGPU code objects (.hsaco ELF): read kernels (descriptor + code + argument list) and write loadable ones."""
from __future__ import annotations
import struct
from dataclasses import dataclass, field
from . import msgpack

EM_AMDGPU, ELFOSABI_AMDGPU_HSA, NT_AMDGPU_METADATA = 224, 64, 32
MACH = {"rdna3": 0x41, "rdna4": 0x48}  # EF_AMDGPU_MACH_AMDGCN_GFX1100 / GFX1200
ARCH_OF_MACH = {v: k for k, v in MACH.items()} | {0x42: "rdna3", 0x43: "rdna3", 0x44: "rdna3", 0x49: "rdna4"}
USER_SGPRS = ("private_segment_buffer", "dispatch_ptr", "queue_ptr", "kernarg_segment_ptr", "dispatch_id", "flat_scratch_init",
              "private_segment_size")
KD = struct.Struct("<IIIIq20sIIIHH4s")

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

def _sections(data: bytes) -> list[dict]:
  shoff, = struct.unpack_from("<Q", data, 0x28)
  shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
  secs = []
  for i in range(shnum):
    name, typ, _, addr, off, size, link, _, _, entsize = struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
    secs.append({"name_off": name, "type": typ, "addr": addr, "offset": off, "size": size, "link": link, "entsize": entsize})
  strtab = secs[shstrndx]
  for s in secs: s["name"] = _cstr(data, strtab["offset"] + s["name_off"])
  return secs

def _cstr(data: bytes, off: int) -> str: return data[off:data.index(b"\0", off)].decode()

def _notes(data: bytes, sec: dict) -> list[tuple[str, int, bytes]]:
  out, i, end = [], sec["offset"], sec["offset"] + sec["size"]
  while i < end:
    namesz, descsz, typ = struct.unpack_from("<III", data, i)
    name = data[i + 12:i + 12 + namesz].rstrip(b"\0").decode()
    desc_off = i + 12 + (namesz + 3) // 4 * 4
    out.append((name, typ, data[desc_off:desc_off + descsz]))
    i = desc_off + (descsz + 3) // 4 * 4
  return out

def read(data: bytes) -> CodeObject:
  """Parse an amdgcn ELF: kernels by their `.kd` symbols, code from .text, arguments from the metadata note."""
  if data[:4] != b"\x7fELF" or data[4] != 2: raise ValueError("not a 64-bit ELF file")
  machine, = struct.unpack_from("<H", data, 0x12)
  if machine != EM_AMDGPU: raise ValueError(f"not an AMDGPU code object (e_machine {machine})")
  flags, = struct.unpack_from("<I", data, 0x30)
  arch = ARCH_OF_MACH.get(flags & 0xFF)
  if arch is None: raise ValueError(f"unsupported GPU (EF_AMDGPU_MACH 0x{flags & 0xFF:x}): expected gfx11 (rdna3) or gfx12 (rdna4)")
  secs = _sections(data)
  text = next((s for s in secs if s["name"] == ".text"), None)
  if text is None: raise ValueError("code object has no .text section")
  meta: dict = {}
  for s in secs:
    if s["type"] == 7:
      for name, typ, desc in _notes(data, s):
        if name == "AMDGPU" and typ == NT_AMDGPU_METADATA: meta = msgpack.unpack(desc)
  symtab = next(s for s in secs if s["type"] == 2)
  syms = {}
  for i in range(symtab["size"] // 24):
    nm, info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", data, symtab["offset"] + i * 24)
    syms[_cstr(data, secs[symtab["link"]]["offset"] + nm)] = (value, size, shndx)
  args = {k[".name"]: k.get(".args", []) for k in meta.get("amdhsa.kernels", [])}
  kernels = {}
  for sym, (value, _, shndx) in syms.items():
    if not sym.endswith(".kd"): continue
    sec = secs[shndx]
    kd = KernelDescriptor.unpack(data[sec["offset"] + value - sec["addr"]:][:64])
    entry = value + kd.entry_offset
    name = sym[:-3]
    end = min([v for v, _, n in syms.values() if n == secs.index(text) and v > entry] + [text["addr"] + text["size"]])
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
