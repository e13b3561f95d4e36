"""Structured immediates: hwreg(...), sendmsg(...), s_waitcnt counters, s_delay_alu, cache policies.

`text` prints them the way LLVM does; `parse` reads LLVM's spelling back into the raw field value.
"""
from __future__ import annotations
import re
from .isa import get_arch

SCOPES = ("SCOPE_CU", "SCOPE_SE", "SCOPE_DEV", "SCOPE_SYS")
# s_sendmsg ids LLVM knows by name on gfx11/gfx12 (the ISA data lists only the MSG_RTN_* ones)
SENDMSG = {"MSG_INTERRUPT": 1, "MSG_HS_TESSFACTOR": 2, "MSG_DEALLOC_VGPRS": 3, "MSG_GS_ALLOC_REQ": 9}
DELAY_ID = ["NO_DEP", "VALU_DEP_1", "VALU_DEP_2", "VALU_DEP_3", "VALU_DEP_4", "TRANS32_DEP_1", "TRANS32_DEP_2", "TRANS32_DEP_3",
            "FMA_ACCUM_CYCLE_1", "SALU_CYCLE_1", "SALU_CYCLE_2", "SALU_CYCLE_3"]
DELAY_SKIP = ["SAME", "NEXT", "SKIP_1", "SKIP_2", "SKIP_3", "SKIP_4"]
# (name, lo bit, width) of s_waitcnt's counters on gfx11
WAITCNT = (("vmcnt", 10, 6), ("expcnt", 0, 3), ("lgkmcnt", 4, 6))

def _names(arch: str, otype: str) -> dict[str, int]:
  a = get_arch(arch)
  if otype == "OPR_HWREG": return a.hwreg
  return SENDMSG | a.msg if otype == "OPR_SENDMSG_RTN" else SENDMSG

def hwreg_text(arch: str, v: int) -> str:
  rid, off, size = v & 0x3F, v >> 6 & 0x1F, (v >> 11 & 0x1F) + 1
  name = next((k for k, n in get_arch(arch).hwreg.items() if n == rid), str(rid))
  return f"hwreg({name})" if off == 0 and size == 32 else f"hwreg({name}, {off}, {size})"

def waitcnt_text(v: int) -> str:
  parts = [f"{n}({v >> lo & ((1 << w) - 1)})" for n, lo, w in WAITCNT if v >> lo & ((1 << w) - 1) != (1 << w) - 1]
  return " ".join(parts) or "vmcnt(63) expcnt(7) lgkmcnt(63)"

def delay_text(v: int) -> str:
  id0, skip, id1 = v & 0xF, v >> 4 & 7, v >> 7 & 0xF
  if id0 >= len(DELAY_ID) or id1 >= len(DELAY_ID) or skip >= len(DELAY_SKIP) or v >> 11: return f"0x{v:x}"
  parts = [f"instid0({DELAY_ID[id0]})"] * bool(id0) + [f"instskip({DELAY_SKIP[skip]})"] * bool(skip) + [f"instid1({DELAY_ID[id1]})"] * bool(id1)
  return " | ".join(parts) or "0"

def sendmsg_text(arch: str, otype: str, v: int) -> str:
  name = next((k for k, n in _names(arch, otype).items() if n == v), None)
  return f"sendmsg({name})" if name else f"sendmsg({v}, 0, 0)" if otype == "OPR_SENDMSG" and v < 256 else str(v)

def text(inst, name: str, v: int) -> str:
  """An immediate operand as LLVM prints it for this opcode."""
  otype = inst.operand(name).otype
  arch = inst.op.arch
  if otype == "OPR_HWREG": return hwreg_text(arch, v)
  if otype == "OPR_WAITCNT": return waitcnt_text(v)
  if otype == "OPR_DELAY": return delay_text(v)
  if otype in ("OPR_SENDMSG", "OPR_SENDMSG_RTN"): return sendmsg_text(arch, otype, v)
  if otype == "OPR_LABEL": return str(v & 0xFFFF)  # LLVM prints branch offsets as unsigned 16-bit
  if otype in ("OPR_SIMM8", "OPR_SIMM5") or inst.op.name in DECIMAL: return str(v)
  return f"0x{v & 0xFFFF:x}" if v < 0 else f"0x{v:x}"

DECIMAL = {"S_NOP", "S_SLEEP", "S_SETPRIO", "S_TRAP", "S_SETHALT", "S_SETKILL", "S_DECPERFLEVEL", "S_INCPERFLEVEL", "S_DENORM_MODE",
           "S_BARRIER_WAIT"}

def _th_names(op) -> tuple[str, tuple[str, ...]]:
  kind = "ATOMIC" if "ATOMIC" in op.name else "STORE" if "STORE" in op.name else "LOAD"
  return kind, TH_NAMES[kind]

def th_text(inst) -> str:
  kind, names = _th_names(inst.op)
  return f"th:TH_{kind}_{names[inst.vals['th']]}"

def th_value(op, text: str) -> int:
  kind, names = _th_names(op)
  return names.index(text.removeprefix(f"TH_{kind}_"))

TH_NAMES = {"LOAD": ("RT", "NT", "HT", "LU", "RT_NT", "NT_HT", "RT_WB", "NT_RT"),
            "STORE": ("RT", "NT", "HT", "WB", "RT_NT", "NT_HT", "RT_WB", "NT_WB"),
           "ATOMIC": ("RT", "RETURN", "NT", "NT_RETURN", "CASCADE_RT", "CASCADE_RETURN", "CASCADE_NT", "CASCADE_NT_RETURN")}

def parse(arch: str, otype: str, s: str) -> int:
  """The raw value of LLVM's spelling of a structured immediate (or a plain number)."""
  s = s.strip()
  if m := re.fullmatch(r"hwreg\(\s*(\w+)\s*(?:,\s*(\d+)\s*,\s*(\d+)\s*)?\)", s):
    names = get_arch(arch).hwreg
    rid = names[m[1]] if m[1] in names else int(m[1], 0)
    off, size = (int(m[2]), int(m[3])) if m[2] else (0, 32)
    return rid | off << 6 | (size - 1) << 11
  if m := re.fullmatch(r"sendmsg\(\s*(\w+)\s*(?:,\s*(\d+)\s*,\s*(\d+)\s*)?\)", s):
    names = _names(arch, otype)
    return names[m[1]] if m[1] in names else int(m[1], 0)
  if re.match(r"(vmcnt|expcnt|lgkmcnt)\(", s):
    v = sum(((1 << w) - 1) << lo for _, lo, w in WAITCNT)
    parts = [p for p in re.split(r"[\s,&]+", s) if p]
    for part in parts:
      m = re.fullmatch(r"(\w+)\((\d+)\)", part)
      field = next(((lo, w) for n, lo, w in WAITCNT if m is not None and n == m[1]), None)
      if m is None or field is None: raise ValueError(f"malformed s_waitcnt counter {part!r}: expected vmcnt(N), expcnt(N) or lgkmcnt(N)")
      (lo, w), cnt = field, int(m[2])
      if cnt >= 1 << w: raise ValueError(f"{m[1]}({cnt}) is too large: at most {(1 << w) - 1}")
      v = v & ~(((1 << w) - 1) << lo) | cnt << lo
    return v
  if re.match(r"(instid0|instskip|instid1)\(", s):
    v = 0
    for key, val in re.findall(r"(\w+)\((\w+)\)", s):
      v |= DELAY_SKIP.index(val) << 4 if key == "instskip" else DELAY_ID.index(val) << (7 if key == "instid1" else 0)
    return v
  return int(s, 0)

# ***** ds_swizzle_b32 offsets *****
# offset[15] clear: lane = ((lane & and) | or) ^ xor with 5-bit masks at bits 4:0, 9:5, 14:10; offset[15:8] = 0x80: QUAD_PERM's
# four 2-bit selectors in bits 7:0. LLVM prints an offset in the friendliest of its macros; anything else as a number.
def swizzle_text(v: int) -> str:
  if v >> 8 == 0x80: return "swizzle(QUAD_PERM," + ",".join(str(v >> 2 * i & 3) for i in range(4)) + ")"
  if v >> 15 or v == 0: return str(v)
  am, om, xm = v & 31, v >> 5 & 31, v >> 10 & 31
  if am == 31 and om == 0 and xm and xm & (xm - 1) == 0: return f"swizzle(SWAP,{xm})"
  if am == 31 and om == 0 and xm and (xm + 1) & xm == 0: return f"swizzle(REVERSE,{xm + 1})"
  group = 32 - am
  if xm == 0 and group > 1 and group & (group - 1) == 0 and om < group: return f"swizzle(BROADCAST,{group},{om})"
  # a lane bit that and/or fix is the constant or ^ xor; a kept one is p (preserved) or i (inverted by xor)
  bits = "".join(("i" if xm >> b & 1 else "p") if am >> b & 1 and not om >> b & 1 else str((om ^ xm) >> b & 1) for b in range(4, -1, -1))
  return f'swizzle(BITMASK_PERM,"{bits}")'

SWIZZLE = re.compile(r'swizzle\((\w+)((?:,\s*(?:\d+|"[01pi]{5}"))*)\)')

def swizzle_parse(text: str) -> int:
  """LLVM's swizzle(...) macros: QUAD_PERM,a,b,c,d / BITMASK_PERM,"01pip" / BROADCAST,size,lane / SWAP,n / REVERSE,n."""
  m = SWIZZLE.fullmatch(text.replace(" ", ""))
  if m is None: raise ValueError(f"cannot parse {text!r}: expected swizzle(QUAD_PERM|BITMASK_PERM|BROADCAST|SWAP|REVERSE, ...)")
  mode, args = m[1], [a for a in m[2].split(",") if a]
  nums = [int(a) for a in args if a.isdigit()]
  def need(n: int, ok: bool) -> None:
    if len(args) != n or not ok: raise ValueError(f"{text!r}: bad arguments for swizzle mode {mode}")
  if mode == "QUAD_PERM":
    need(4, len(nums) == 4 and all(x < 4 for x in nums))
    return 0x8000 | sum(x << 2 * i for i, x in enumerate(nums))
  if mode == "BITMASK_PERM":
    need(1, args[0].startswith('"'))
    am = om = xm = 0
    for b, ch in zip(range(4, -1, -1), args[0].strip('"')):
      am, om, xm = am | (ch in "pi") << b, om | (ch == "1") << b, xm | (ch == "i") << b
    return am | om << 5 | xm << 10
  if mode == "BROADCAST":
    need(2, len(nums) == 2 and nums[0] in (2, 4, 8, 16, 32) and nums[1] < nums[0])
    return (32 - nums[0]) | nums[1] << 5
  if mode in ("SWAP", "REVERSE"):
    need(1, len(nums) == 1 and nums[0] in ((1, 2, 4, 8, 16) if mode == "SWAP" else (2, 4, 8, 16, 32)))
    return 31 | (nums[0] if mode == "SWAP" else nums[0] - 1) << 10
  raise ValueError(f"{text!r}: unknown swizzle mode {mode} (QUAD_PERM, BITMASK_PERM, BROADCAST, SWAP, REVERSE)")

# ***** byte_sel: RDNA4's fp8/bf8 conversions name the byte they read (cvt_f32_*) or write (cvt_sr_*) in op_sel's bits *****
BYTE_SEL_READ = ("V_CVT_F32_FP8_E64", "V_CVT_F32_BF8_E64")
BYTE_SEL_WRITE = ("V_CVT_SR_FP8_F32", "V_CVT_SR_BF8_F32")

def byte_sel_opsel(op_name: str, b: int) -> int:
  """The op_sel field of byte_sel:b: reads keep its bits swapped in op_sel[1:0], writes in op_sel[3:2]."""
  if not 0 <= b <= 3: raise ValueError(f"byte_sel:{b}: a byte is 0..3")
  return (b >> 1 | (b & 1) << 1) if op_name in BYTE_SEL_READ else (b & 1) << 2 | (b >> 1) << 3

def byte_sel_of(op_name: str, opsel: int) -> int:
  return (opsel >> 1 & 1 | (opsel & 1) << 1) if op_name in BYTE_SEL_READ else (opsel >> 2 & 1 | (opsel >> 3 & 1) << 1)

# ***** buffer formats (tbuffer_*, and RDNA4's format field of every buffer op): gfx11's and gfx12's unified formats *****
BUF_FORMATS = ("INVALID 8_UNORM 8_SNORM 8_USCALED 8_SSCALED 8_UINT 8_SINT 16_UNORM 16_SNORM 16_USCALED 16_SSCALED 16_UINT 16_SINT 16_FLOAT "
               "8_8_UNORM 8_8_SNORM 8_8_USCALED 8_8_SSCALED 8_8_UINT 8_8_SINT 32_UINT 32_SINT 32_FLOAT 16_16_UNORM 16_16_SNORM 16_16_USCALED "
               "16_16_SSCALED 16_16_UINT 16_16_SINT 16_16_FLOAT 10_11_11_FLOAT 11_11_10_FLOAT 10_10_10_2_UNORM 10_10_10_2_SNORM "
               "10_10_10_2_UINT 10_10_10_2_SINT 2_10_10_10_UNORM 2_10_10_10_SNORM 2_10_10_10_USCALED 2_10_10_10_SSCALED 2_10_10_10_UINT "
               "2_10_10_10_SINT 8_8_8_8_UNORM 8_8_8_8_SNORM 8_8_8_8_USCALED 8_8_8_8_SSCALED 8_8_8_8_UINT 8_8_8_8_SINT 32_32_UINT "
               "32_32_SINT 32_32_FLOAT 16_16_16_16_UNORM 16_16_16_16_SNORM 16_16_16_16_USCALED 16_16_16_16_SSCALED 16_16_16_16_UINT "
               "16_16_16_16_SINT 16_16_16_16_FLOAT 32_32_32_UINT 32_32_32_SINT 32_32_32_FLOAT 32_32_32_32_UINT 32_32_32_32_SINT "
               "32_32_32_32_FLOAT").split()

def buf_format_text(v: int) -> str: return f"[BUF_FMT_{BUF_FORMATS[v]}]" if v < len(BUF_FORMATS) else str(v)

def buf_format_value(text: str) -> int:
  """`[BUF_FMT_32_FLOAT]` or a number (0-127)."""
  m = re.fullmatch(r"\[BUF_FMT_(\w+)\]", text.strip())
  if m is None:
    try: v = int(text, 0)
    except ValueError: raise ValueError(f"format:{text}: expected [BUF_FMT_...] or a number") from None
    if not 0 <= v < 128: raise ValueError(f"format:{text}: a buffer format is 0..127")
    return v
  if m[1] not in BUF_FORMATS: raise ValueError(f"format:{text}: unknown buffer format (BUF_FMT_{BUF_FORMATS[22]}, ...)")
  return BUF_FORMATS.index(m[1])

def dim_value(text: str) -> int:
  """An image dim: `SQ_RSRC_IMG_2D` or LLVM's short `2D`."""
  from .image import DIMS
  name = text.removeprefix("SQ_RSRC_IMG_")
  if name not in DIMS: raise ValueError(f"dim:{text}: expected one of {', '.join('SQ_RSRC_IMG_' + d for d in DIMS)}")
  return DIMS.index(name)
