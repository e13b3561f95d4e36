"""Text assembler for LLVM-syntax AMDGPU assembly: comments, labels (branch offsets resolved), one
instruction per line, `::`-joined VOPD pairs. `assemble(text, arch) -> bytes`."""
from __future__ import annotations
import functools
import re
from typing import Any
from .build import build
from .inst import Inst
from .isa import Op, get_arch
from .operands import NAMED, NULL, TTMP, VGPR, Reg
from .syntax import BUFFERS, family, has_return, mnemonic, slots
from .vopd import DualHalf, vopd
from . import dpptext, simm16

REG_RE = re.compile(r"(v|s|ttmp)(?:(\d+)|\[(\d+):(\d+)\])$")
FLAGS = {f: f for f in ("glc", "slc", "dlc", "gds", "nv", "idxen", "offen", "tfe", "lwe", "r128", "a16", "d16")} | {"clamp": "clmp", "unorm": "unrm"}
OMOD = {"mul:2": 1, "mul:4": 2, "div:2": 3}

# RDNA3 names llvm-mc-19 still accepts for gfx1200 (the opcodes RDNA4 renamed); each is checked against llvm-mc in the tests
RDNA4_ALIASES = {
  "ds_max_f32": "ds_max_num_f32", "ds_max_f64": "ds_max_num_f64", "ds_max_rtn_f32": "ds_max_num_rtn_f32", "ds_max_rtn_f64": "ds_max_num_rtn_f64",
  "ds_min_f32": "ds_min_num_f32", "ds_min_f64": "ds_min_num_f64", "ds_min_rtn_f32": "ds_min_num_rtn_f32", "ds_min_rtn_f64": "ds_min_num_rtn_f64",
  "s_add_i32": "s_add_co_i32", "s_add_u32": "s_add_co_u32", "s_addc_u32": "s_add_co_ci_u32", "s_addk_i32": "s_addk_co_i32",
  "s_sub_i32": "s_sub_co_i32", "s_sub_u32": "s_sub_co_u32", "s_subb_u32": "s_sub_co_ci_u32",
  "s_max_f16": "s_max_num_f16", "s_max_f32": "s_max_num_f32", "s_min_f16": "s_min_num_f16", "s_min_f32": "s_min_num_f32",
  "v_mad_i64_i32": "v_mad_co_i64_i32", "v_mad_u64_u32": "v_mad_co_u64_u32",
  "v_max3_f16": "v_max3_num_f16", "v_max3_f32": "v_max3_num_f32", "v_min3_f16": "v_min3_num_f16", "v_min3_f32": "v_min3_num_f32",
  "v_med3_f16": "v_med3_num_f16", "v_med3_f32": "v_med3_num_f32", "v_maxmin_f16": "v_maxmin_num_f16", "v_maxmin_f32": "v_maxmin_num_f32",
  "v_minmax_f16": "v_minmax_num_f16", "v_minmax_f32": "v_minmax_num_f32", "v_pk_max_f16": "v_pk_max_num_f16", "v_pk_min_f16": "v_pk_min_num_f16",
  "v_max_f16": "v_max_num_f16", "v_max_f32": "v_max_num_f32", "v_max_f64": "v_max_num_f64", "v_min_f16": "v_min_num_f16",
  "v_min_f32": "v_min_num_f32", "v_min_f64": "v_min_num_f64",
}
ARCH_ALIASES = {"rdna4": RDNA4_ALIASES}

@functools.cache
def mnemonics(arch: str) -> dict[str, list[Op]]:
  """Opcodes by LLVM's mnemonic and by DSL name; a suffix-less VALU name tries _e32 first, then _e64, like LLVM; old names
  LLVM keeps as aliases (RDNA4's s_add_u32 for s_add_co_u32) name the same opcodes, with their _e32/_e64 forms."""
  out: dict[str, list[Op]] = {}
  for op in sorted(get_arch(arch).ops.values(), key=lambda o: o.name.endswith("_E64")):
    for name in dict.fromkeys((op.mnemonic, mnemonic(op), re.sub(r"_e(32|64)$", "", op.mnemonic))):
      out.setdefault(name, []).append(op)
  for old, new in ARCH_ALIASES.get(arch, {}).items():
    for suffix in ("", "_e32", "_e64"):
      if new + suffix in out: out.setdefault(old + suffix, out[new + suffix])
  return out

def split_top(s: str, sep: str = ",") -> list[str]:
  """Split at `sep` outside brackets and parentheses."""
  parts, depth, cur = [], 0, ""
  for ch in s:
    depth += ch in "[(" and 1 or 0
    depth -= ch in "])" and 1 or 0
    if ch == sep and depth == 0: parts.append(cur.strip()); cur = ""
    else: cur += ch
  return parts + [cur.strip()] if cur.strip() else parts

REG_COUNT = {"v": 256, "s": 106, "ttmp": 16}

def parse_reg(tok: str) -> Reg | None:
  if m := REG_RE.match(tok):
    lo = int(m[2] if m[2] is not None else m[3])
    hi = lo if m[2] is not None else int(m[4])
    if not lo <= hi < REG_COUNT[m[1]]: raise ValueError(f"register {tok} is out of range ({m[1]}0..{m[1]}{REG_COUNT[m[1]] - 1}, low first)")
    base = {"v": VGPR, "s": 0, "ttmp": TTMP}[m[1]]
    return Reg(base + lo, hi - lo + 1)
  if tok in NAMED: return Reg(*NAMED[tok])
  return None

def parse_number(tok: str) -> int | float:
  try: return int(tok, 0)
  except ValueError: return float(tok)

def parse_operand(tok: str, labels: dict[str, int] | None = None) -> Any:
  """A register (with -x / |x| / abs(x) / neg(x) / .h / .l), `off`, a number, or a label's address."""
  tok = tok.strip()
  neg = tok.startswith("-") and not re.match(r"-\d", tok)
  if neg or tok.startswith("neg("): tok = tok[1:] if neg else tok[4:-1]
  ab = tok.startswith("|") or tok.startswith("abs(")
  if ab: tok = tok[1:-1] if tok.startswith("|") else tok[4:-1]
  hi = tok.endswith(".h")
  if tok.endswith((".h", ".l")): tok = tok[:-2]
  if tok == "off": return NULL
  r = parse_reg(tok.lower())
  if r is None:
    if labels is not None and tok in labels: return labels[tok]
    try: return parse_number(tok)
    except ValueError: raise ValueError(f"cannot parse operand {tok!r}") from None
  r = -r if neg else r
  r = abs(r) if ab else r
  return r.h if hi else r

def _bitlist(s: str) -> int:
  return sum(int(b) << i for i, b in enumerate(s.strip("[]").split(",")))

def parse_modifiers(op: Op, toks: list[str], kwargs: dict[str, Any]) -> None:
  fam = family(op.fmt)
  nsrc = sum(s in op.operands for s in ("src0", "src1", "src2"))
  for tok in toks:
    key, _, val = tok.partition(":")
    if tok in FLAGS: kwargs[FLAGS[tok]] = 1
    elif tok in OMOD: kwargs["omod"] = OMOD[tok]
    elif key == "offset" and val.startswith("swizzle("): kwargs[key] = simm16.swizzle_parse(val)
    elif key in ("offset", "offset0", "offset1"): kwargs[key] = int(val, 0)
    elif key == "th": kwargs["th"] = simm16.th_value(op, val)
    elif key == "format": kwargs["format"] = simm16.buf_format_value(val)
    elif key == "dmask": kwargs["dmask"] = int(val, 0)
    elif key == "dim": kwargs["dim"] = simm16.dim_value(val)
    elif key == "scope": kwargs["scope"] = simm16.SCOPES.index(val)
    elif key == "byte_sel" and op.name in simm16.BYTE_SEL_READ + simm16.BYTE_SEL_WRITE:
      kwargs["opsel"] = simm16.byte_sel_opsel(op.name, int(val, 0))
    elif key == "op_sel" and fam in ("VOP3", "VINTERP"):
      bits = _bitlist(val)
      kwargs["opsel"] = bits & ((1 << nsrc) - 1) | (bits >> nsrc & 1) << 3
    elif key == "op_sel": kwargs["opsel"] = _bitlist(val)
    elif key == "index_key" and op.name.startswith("V_SWMMAC"):
      if val not in ("0", "1") or (val == "1" and op.name.endswith("X64_IU4")): raise ValueError(f"out of range index_key {val!r} for {mnemonic(op)}")
      kwargs["opsel"] = int(val)
    elif key == "op_sel_hi": bits = _bitlist(val); kwargs["opsel_hi"], kwargs["opsel_hi2"] = bits & 3, bits >> 2 & 1
    elif key in ("neg_lo", "neg_hi"): kwargs["neg" if key == "neg_lo" else "neg_hi"] = _bitlist(val)
    elif key == "wait_exp" and fam == "VINTERP": kwargs["waitexp"] = int(val, 0)
    elif not dpptext.parse(key, val, kwargs): raise ValueError(f"unknown modifier {tok!r} for {mnemonic(op)}")

def _operands(op: Op, text: str, labels: dict[str, int] | None, pc: int) -> tuple[list[Any], dict[str, Any]]:
  """Positional operands (matched to slots) and keyword fields of one instruction's operand text."""
  names = [s for s in slots(op) if s != "vcc"]
  otypes = {s: op.operands[s].otype for s in names if s in op.operands}
  if len(names) == 1 and otypes.get(names[0], "").startswith(("OPR_WAITCNT", "OPR_DELAY", "OPR_SENDMSG", "OPR_HWREG")):
    return [simm16.parse(op.arch, otypes[names[0]], text)], {}
  parts = split_top(text) if names else []
  mods: list[str] = [] if names else split_top(text, " ")
  if parts:
    last = split_top(parts[-1], " ")
    parts[-1:], mods = last[:1], last[1:]
  kwargs: dict[str, Any] = {}
  parse_modifiers(op, mods, kwargs)
  keep = [s for s in slots(op) if not (s == "vdst" and has_return(op) and not (kwargs.get("glc") or kwargs.get("th", 0) & 1))]
  if len(parts) != len(keep): raise ValueError(f"{mnemonic(op)} takes {len(keep)} operands ({', '.join(keep)}), got {len(parts)}")
  args = []
  for slot, part in zip(keep, parts):
    if slot == "vcc": continue
    otype = otypes.get(slot, "")
    if otype.startswith(("OPR_HWREG", "OPR_SENDMSG")): args.append(simm16.parse(op.arch, otype, part)); continue
    if slot == "vaddr" and op.fmt in ("VIMAGE", "VSAMPLE", "MIMG") and part.startswith("["):  # an image address list (RDNA3: NSA)
      args.append([parse_operand(p) for p in split_top(part[1:-1])]); continue
    x = parse_operand(part, labels)
    if otype == "OPR_LABEL" and labels is not None and part in labels: x = (labels[part] - pc - 4) // 4
    elif otype == "OPR_LABEL" and not isinstance(x, int): raise ValueError(f"unknown label {part!r}")
    args.append(x)
  if "vdst" in slots(op) and "vdst" not in keep: args.insert(0, None)
  if op.fmt in ("SCRATCH", "VSCRATCH") + BUFFERS:  # `off` as a scratch/buffer address: no VGPR
    at = next((i for i, s in enumerate(slots(op)) if s in ("addr", "vaddr")), None)
    if at is not None and args[at] is NULL: args[at] = None
  return args, kwargs

def parse_line(line: str, arch: str, labels: dict[str, int] | None = None, pc: int = 0) -> Inst:
  """One instruction in LLVM syntax."""
  if "::" in line:
    x, y = (parse_half(h, arch) for h in line.split("::"))
    return vopd(x, y)
  mn, _, rest = line.strip().partition(" ")
  ops = _ops(mn.lower(), arch)
  if not ops: raise ValueError(f"unknown instruction {mn!r} for {arch}")
  errors = []
  for op in ops:
    try:
      args, kwargs = _operands(op, rest.strip(), labels, pc)
      dpp = kwargs.pop("_dpp", None)
      if mn.lower().endswith("_dpp") and dpp is None: raise ValueError(f"{mn} needs a DPP control (row_shl:1, quad_perm:[...], dpp8:[...])")
      return build(op, tuple(args), kwargs, dpp)
    except (TypeError, ValueError) as e: errors.append(e)
  raise errors[0]

def _ops(mn: str, arch: str) -> list[Op]:
  """Opcodes a mnemonic may name; `x_dpp` names x's VOP1/VOP2 form, `x_e64_dpp` its VOP3 form (written `_e64` or not)."""
  table = mnemonics(arch)
  if not mn.endswith("_dpp"): return table.get(mn, [])
  base = mn[:-4]
  if base.endswith("_e64"): return table.get(base) or [op for op in table.get(base[:-4], []) if family(op.fmt).startswith("VOP3")]
  return [op for op in table.get(base, []) if family(op.fmt) in ("VOP1", "VOP2", "VOPC")]

def parse_half(text: str, arch: str) -> DualHalf:
  mn, _, rest = text.strip().partition(" ")
  op = mnemonics(arch).get(mn.lower(), [None])[0]
  if op is None or op.enum != "VOPDOp": raise ValueError(f"{mn!r} is not a VOPD half on {arch}")
  return DualHalf(op, tuple(parse_operand(p) for p in split_top(rest)), {})

# directives that put no bytes in the code nor move it: the assembler takes these and ignores them; any other is an error (it
# would need data, alignment or a kernel descriptor the assembler does not write)
NO_CODE_DIRECTIVES = frozenset({".text", ".globl", ".global", ".type", ".size", ".hidden", ".amdgcn_target", ".file", ".ident"})

def directive(n: int, body: str) -> None:
  name = body.split()[0]
  if name not in NO_CODE_DIRECTIVES:
    raise ValueError(f"line {n}: unsupported directive {name!r}: the assembler writes instructions only and takes "
                     f"{', '.join(sorted(NO_CODE_DIRECTIVES))} (which change no bytes)")

def clean(line: str) -> str:
  return re.split(r";|//", line, maxsplit=1)[0].strip()

def assemble_insts(text: str, arch: str) -> list[Inst]:
  """Two passes: sizes first (labels as 0), then the same lines with every label's offset known."""
  lines = [(n, clean(raw)) for n, raw in enumerate(text.splitlines(), 1)]
  labels: dict[str, int] = {}
  placeholder = AnyLabel()
  pc = 0
  for n, line in lines:
    for label in re.findall(r"^([A-Za-z_.$][\w.$]*):", line):
      if label in labels: raise ValueError(f"line {n}: label {label!r} is defined twice")
      labels[label] = pc
    body = re.sub(r"^[A-Za-z_.$][\w.$]*:\s*", "", line)
    if body.startswith("."): directive(n, body)
    elif body: pc += _parse(body, arch, placeholder, pc, [(n, line)]).size
  out, pc = [], 0
  for n, line in lines:
    body = re.sub(r"^[A-Za-z_.$][\w.$]*:\s*", "", line)
    if not body or body.startswith("."): continue
    inst = _parse(body, arch, labels, pc, [(n, line)])
    out.append(inst); pc += inst.size
  return out

class AnyLabel(dict):
  """Label table for the sizing pass: every label is at 0 (branch sizes do not depend on the target)."""
  def __contains__(self, key: object) -> bool: return isinstance(key, str) and re.match(r"[A-Za-z_.$]", key) is not None
  def __getitem__(self, key: str) -> int: return 0

def _parse(body: str, arch: str, labels: dict[str, int], pc: int, where: list[tuple[int, str]]) -> Inst:
  try: return parse_line(body, arch, labels, pc)
  except (TypeError, ValueError) as e:
    n = next((n for n, line in where if body in line), 0)
    raise ValueError(f"line {n}: {body!r}: {e}") from None

def assemble(text: str, arch: str) -> bytes:
  return b"".join(i.to_bytes() for i in assemble_insts(text, arch))
