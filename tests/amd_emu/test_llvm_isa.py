"""Every opcode of both archs against LLVM 19: our bytes = llvm-mc's encoding of our text, and LLVM's
disassembly of our bytes = our text. Needs llvm-mc-19 (fails, not skips, without it)."""
from __future__ import annotations
import collections
import pytest
from hypothesis import given, settings, strategies as st
from llvm import assemble, disassemble
from tg.amd_emu import rdna3 as r3
from tg.amd_emu.rdna3 import s, v
from tg.amd_emu.samples import all_canonical

# Opcodes in AMD's data that LLVM 19 does not accept for gfx1100/gfx1200, with the reason.
LLVM_REJECTS = {
  "rdna3": {
    "flat_atomic_csub_u32": "gfx11 LLVM only has the global_ form", "s_endpgm_ordered_ps_done": "graphics-only, not in LLVM's gfx11",
    "v_mov_b16_e32": "true16 register syntax only (v0.l), not gfx1100's default mode", "v_mov_b16_e64": "same",
    "v_swap_b16_e32": "true16 only", "v_readfirstlane_b32_e64": "LLVM has no VOP3 form", "v_dual_dot2acc_f32_bf16": "not in LLVM's VOPD table",
    "v_nop_e64": "LLVM prints it as `v_nop`, which assembles to the e32 form", "v_pipeflush_e64": "same as v_nop_e64",
    "s_version": "LLVM prints the version symbolically (UC_VERSION_*)",
    **{f"global_load_lds_{t}": "LDS DMA loads are not in LLVM 19's gfx11" for t in ("b32", "i16", "i8", "u16", "u8", "addtid_b32")},
    **{f"scratch_load_lds_{t}": "LDS DMA loads are not in LLVM 19's gfx11" for t in ("b32", "i16", "i8", "u16", "u8")},
  },
  "rdna4": {
    "v_mov_b16_e32": "true16 only", "v_mov_b16_e64": "true16 only", "v_swap_b16_e32": "true16 only", "v_readfirstlane_b32_e64": "no VOP3 form",
    "v_dual_dot2acc_f32_f16": "not in LLVM's gfx12 VOPD table", "v_dual_dot2acc_f32_bf16": "not in LLVM's VOPD table",
    "v_nop_e64": "prints as `v_nop` (e32)", "v_pipeflush_e64": "prints as `v_pipeflush` (e32)", "s_version": "printed symbolically",
    "s_alloc_vgpr": "newer than LLVM 19", "ds_bpermute_fi_b32": "newer than LLVM 19",
    **{f"ds_bvh_stack_{t}": "newer than LLVM 19" for t in ("push4_pop1_rtn_b32", "push8_pop1_rtn_b32", "push8_pop2_rtn_b64")},
    "image_bvh8_intersect_ray": "newer than LLVM 19", "image_bvh_dual_intersect_ray": "newer than LLVM 19",
  },
}
# RDNA3.5 (gfx1150) added SALU float opcodes: the rdna3 data has them, gfx1100 does not, so they are checked on gfx1150.
def mcpu_for(arch: str, name: str, fmt: str) -> str | None:
  if arch == "rdna3" and fmt in ("SOP1", "SOP2", "SOP2_LIT", "SOPC") and ("_f16" in name or "_f32" in name): return "gfx1150"
  return None

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_llvm_every_opcode(arch: str, capsys) -> None:
  insts = all_canonical(arch)
  groups: dict[str | None, list] = collections.defaultdict(list)
  for inst in insts: groups[mcpu_for(arch, inst.op.mnemonic, inst.fmt.name)].append(inst)
  total, ok, rejected, bad = collections.Counter(), collections.Counter(), [], []
  for mcpu, group in groups.items():
    texts = [i.disasm() for i in group]
    encs = assemble(texts, arch, mcpu)
    dis = disassemble([i.to_bytes() for i in group], arch, mcpu)
    for inst, text, enc, back in zip(group, texts, encs, dis):
      fam = inst.fmt.base
      total[fam] += 1
      if inst.op.mnemonic in LLVM_REJECTS[arch]: rejected.append(inst.op.mnemonic); continue
      if enc == inst.to_bytes() and back == text: ok[fam] += 1
      else: bad.append(f"{text!r}: ours {inst.to_bytes().hex()}, llvm-mc {enc.hex() if isinstance(enc, bytes) else enc}, llvm disasm {back!r}")
  with capsys.disabled():
    print(f"\n{arch} coverage (checked against LLVM / opcodes): " + ", ".join(f"{k} {ok[k]}/{total[k]}" for k in sorted(total)))
    print(f"{arch}: {sum(ok.values())}/{sum(total.values())} opcodes agree with LLVM 19; {len(rejected)} in LLVM_REJECTS;"
          f" {len(groups.get('gfx1150', []))} RDNA3.5 SALU float ops checked on gfx1150")
  assert not bad, "\n".join(bad[:40])
  assert sorted(rejected) == sorted(LLVM_REJECTS[arch]), "LLVM_REJECTS lists opcodes the data does not have"

def test_llvm_rejects_are_rejected() -> None:
  """Keep the table honest: LLVM really refuses the text of each listed opcode (or prints it differently)."""
  for arch, table in LLVM_REJECTS.items():
    insts = [i for i in all_canonical(arch) if i.op.mnemonic in table]
    encs = assemble([i.disasm() for i in insts], arch)
    dis = disassemble([i.to_bytes() for i in insts], arch)
    for inst, enc, back in zip(insts, encs, dis):
      assert enc != inst.to_bytes() or back != inst.disasm(), f"{arch} {inst.op.mnemonic} now agrees with LLVM: remove it from LLVM_REJECTS"


RANDOM_OPS = [("v_add_f32_e64", 2), ("v_fma_f32", 3), ("v_max_i32_e64", 2), ("v_and_b32_e64", 2), ("v_mul_f32_e32", 2), ("s_add_u32", 2)]
def operand(scalar_only: bool):
  regs = st.integers(0, 104).map(lambda i: s[i]) if scalar_only else st.integers(0, 255).map(lambda i: v[i])
  return st.one_of(regs, st.integers(-16, 64), st.sampled_from([0.5, -1.0, 2.0, -4.0]), st.integers(65, 2**31 - 1))

@st.composite
def random_inst(draw):
  name, nsrc = draw(st.sampled_from(RANDOM_OPS))
  scalar = name.startswith("s_")
  srcs = [draw(operand(scalar)) for _ in range(nsrc)]
  if name.endswith("_e32"): srcs[1] = v[draw(st.integers(0, 255))]
  if len({x for x in srcs if isinstance(x, int) and x > 64}) > 1: srcs = [x if not (isinstance(x, int) and x > 64) else 1 for x in srcs]
  return getattr(r3, name)(s[draw(st.integers(0, 100))] if scalar else v[draw(st.integers(0, 255))], *srcs)

@settings(max_examples=5, deadline=None)
@given(st.lists(random_inst(), min_size=40, max_size=40))
def test_llvm_random_operands_agree(insts) -> None:
  """Random registers and constants: llvm-mc encodes our text to our bytes and prints our bytes as our text."""
  texts = [i.disasm() for i in insts]
  assert assemble(texts, "rdna3") == [i.to_bytes() for i in insts]
  assert disassemble([i.to_bytes() for i in insts], "rdna3") == texts

def test_llvm_integer_bits_of_an_inline_float_are_inline() -> None:
  """0x40000000 given to a float operand is 2.0: inline, as llvm-mc encodes it (found by the random test above)."""
  insts = [r3.v_add_f32_e64(v[0], v[0], 0x40000000), r3.v_mul_f32_e64(v[1], 0x3E22F983, v[2]), r3.v_add_f32_e64(v[3], v[4], 0x12345678)]
  assert [i.to_bytes() for i in insts] == assemble([i.disasm() for i in insts], "rdna3")
  assert len(insts[0].to_bytes()) == 8 and len(insts[2].to_bytes()) == 12  # inline 2.0; a real literal stays one

BAD_LINES = ["v_mov_b32 v256, 0", "s_mov_b32 s300, 0", "s_mov_b32 s106, 0", "s_mov_b32 ttmp20, 0", "s_mov_b32 ttmp16, 0",
             "s_waitcnt lgkmcnt(zz)", "s_waitcnt lgkmcnt(64)", "s_waitcnt vmcnt(64)", "s_mov_b64 s[1:2], 0", "s_mov_b64 ttmp[1:2], 0",
             "s_load_b128 s[2:5], s[0:1], 0", "s_load_b64 s[1:2], s[0:1], 0"]

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_assembler_rejects_what_llvm_rejects(arch: str) -> None:
  """Out-of-range registers, malformed or too large counters and misaligned SGPR tuples are errors in llvm-mc and here (a
  ValueError naming the line), not silently mis-encoded; the same lines done right assemble as llvm-mc does."""
  from tg.amd_emu.asm import assemble as tg_assemble
  for line, llvm in zip(BAD_LINES, assemble(BAD_LINES, arch)):
    if arch == "rdna4" and "waitcnt" in line: continue  # RDNA4 has no s_waitcnt
    assert isinstance(llvm, str), f"llvm-mc accepts {line!r}"
    with pytest.raises(ValueError, match=r"line 1: "): tg_assemble(line, arch)
  good = ["v_mov_b32 v255, 0", "s_mov_b32 s105, 0", "s_mov_b32 ttmp15, 0", "s_mov_b64 s[104:105], 0", "s_load_b256 s[4:11], s[0:1], 0"]
  if arch == "rdna3": good.append("s_waitcnt vmcnt(1) & lgkmcnt(2)")
  assert [tg_assemble(line, arch) for line in good] == assemble(good, arch)

def test_assembler_labels_and_line_numbers() -> None:
  from tg.amd_emu.asm import assemble as tg_assemble
  with pytest.raises(ValueError, match=r"line 3: label 'a' is defined twice"): tg_assemble("a:\ns_nop 0\na:\ns_nop 0", "rdna3")
  with pytest.raises(ValueError, match=r"line 2: 'v_mov_b32 v0, v'"):  # a substring of line 1: its own number, not line 1's
    tg_assemble("v_mov_b32 v0, v1\nv_mov_b32 v0, v", "rdna3")

def test_rdna4_accepts_llvms_aliases() -> None:
  """RDNA3 names llvm-mc-19 keeps for gfx1200 (s_add_u32, v_max_f32, v_mad_u64_u32, ...) assemble to LLVM's bytes; the README's
  RDNA4 example too."""
  from tg.amd_emu.asm import assemble as tg_assemble, RDNA4_ALIASES
  from tg.amd_emu.samples import canonical
  from tg.amd_emu.isa import get_arch
  from tg.amd_emu.syntax import mnemonic
  texts = []
  for old in RDNA4_ALIASES:
    names = [n for n in (old, old + "_e32", old + "_e64") if n.upper() in get_arch("rdna3").ops or (n + "_e32").upper() in get_arch("rdna3").ops]
    op = get_arch("rdna3").ops.get(names[0].upper()) or get_arch("rdna3").ops[(names[0] + "_e32").upper()]
    texts.append(canonical(op).disasm().replace(mnemonic(op), old, 1))
  want = assemble(texts, "rdna4")
  assert all(isinstance(b, bytes) for b in want), [(t, b) for t, b in zip(texts, want) if isinstance(b, str)]
  assert [tg_assemble(t, "rdna4") for t in texts] == want
  tg_assemble("loop: s_sub_u32 s0, s0, 1\n s_cbranch_scc1 loop\n s_endpgm", "rdna4")

def agree_with_llvm(texts: list[str], arch: str) -> None:
  """Our bytes for each text are llvm-mc's, and our disassembly of those bytes is llvm-mc's disassembly."""
  from tg.amd_emu.asm import assemble as tg_assemble
  from tg.amd_emu.decode import decode
  want = assemble(texts, arch)
  assert all(isinstance(b, bytes) for b in want), [(t, b) for t, b in zip(texts, want) if isinstance(b, str)]
  assert [tg_assemble(t, arch) for t in texts] == want
  assert [decode(b, arch).disasm() for b in want] == disassemble(want, arch)  # type: ignore[arg-type]

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_smem_offsets_scratch_off_and_fma_mix(arch: str) -> None:
  """SMEM's soffset/offset forms (null, negative, register + offset) print as LLVM prints them; `off` as a scratch address
  parses; v_fma_mix* without op_sel_hi encodes op_sel_hi [0,0,0], as llvm-mc does."""
  agree_with_llvm([f"s_load_b32 s0, s[2:3], {o}" for o in ("null", "0x10", "-0x10", "s4", "s4 offset:0x10", "s4 offset:-0x8", "m0")] +
                  ["s_buffer_load_b64 s[0:1], s[4:7], null", "s_load_b32 s0, s[2:3], null offset:0x20",
                   "scratch_store_b32 off, v1, s0 offset:8", "scratch_load_b32 v1, off, s0 offset:8", "scratch_store_b64 off, v[2:3], off",
                   "v_fma_mix_f32 v0, v1, v2, v3", "v_fma_mixlo_f16 v0, v1, v2, v3", "v_fma_mixhi_f16 v0, v1, v2, v3 op_sel_hi:[1,0,1]"], arch)

def test_ds_swizzle_offsets_print_and_parse_as_llvm() -> None:
  """Every ds_swizzle_b32 offset prints as llvm-mc prints it (QUAD_PERM, BITMASK_PERM, BROADCAST, SWAP, REVERSE macros, else a
  number), and LLVM's text assembles back to llvm-mc's bytes."""
  from tg.amd_emu.decode import decode
  from tg.amd_emu.asm import assemble as tg_assemble
  blobs = [bytes([o & 255, o >> 8, 0xD4, 0xD8, 1, 0, 0, 0]) for o in range(65536)]
  want = disassemble(blobs, "rdna3")
  assert [decode(b, "rdna3").disasm() for b in blobs] == want
  texts = sorted(set(want[::97]) | {t for t in want if "(B" in t or "(S" in t or "(R" in t})
  assert [tg_assemble(t, "rdna3") for t in texts] == assemble(texts, "rdna3")
  with pytest.raises(ValueError, match="unknown swizzle mode"): tg_assemble("ds_swizzle_b32 v0, v1 offset:swizzle(FOO,1)", "rdna3")

def test_unknown_directives_are_errors() -> None:
  """Directives that change no bytes are taken (llvm-mc gives the same code); any other is an error naming its line, as
  llvm-mc's `unknown directive` (the assembler writes no data, alignment or descriptors, so it cannot ignore them)."""
  from tg.amd_emu.asm import assemble as tg_assemble
  body = ["s_mov_b32 s0, 1", "s_endpgm"]
  assert tg_assemble("\n".join([".text", ".globl k", ".type k,@function", "k:"] + body + [".size k, 8"]), "rdna3") == b"".join(
    assemble(body, "rdna3"))  # type: ignore[arg-type]
  assert assemble([".bogus 1"], "rdna3") == ["unknown directive"]
  for bad in (".bogus 1", ".p2align 8", ".byte 1", ".amdhsa_kernel k"):
    with pytest.raises(ValueError, match=rf"line 2: unsupported directive '{bad.split()[0]}'"): tg_assemble(f"s_nop 0\n{bad}\ns_endpgm", "rdna3")

BUFFER_LINES = {
  "rdna3": ["buffer_load_b32 v0, v1, s[4:7], s8 offen offset:16 glc slc dlc", "buffer_load_b32 v0, off, s[4:7], 0",
            "buffer_load_b64 v[0:1], v[1:2], s[4:7], s8 idxen offen", "buffer_store_b32 v0, v1, s[4:7], m0 idxen offset:4095",
            "buffer_atomic_add_u32 v0, v1, s[4:7], s8 offen glc", "buffer_atomic_cmpswap_b32 v[0:1], v2, s[4:7], -1 offen glc",
            "buffer_load_b32 v[0:1], v1, s[4:7], s8 offen tfe", "buffer_load_lds_b32 off, s[4:7], 0", "buffer_gl0_inv",
            "tbuffer_load_format_x v0, v1, s[0:3], s8 format:[BUF_FMT_32_FLOAT] idxen offset:16 glc slc dlc",
            "tbuffer_store_format_xyzw v[0:3], off, s[0:3], 0 format:100", "tbuffer_load_format_x v0, off, s[0:3], 0 format:[BUF_FMT_8_UNORM]"],
  "rdna4": ["buffer_load_b32 v0, v1, s[4:7], s8 offen offset:16 th:TH_LOAD_NT scope:SCOPE_SYS", "buffer_load_b32 v0, off, s[4:7], null",
            "buffer_load_b64 v[0:1], v[1:2], s[4:7], s8 idxen offen", "buffer_store_b32 v0, v1, s[4:7], m0 idxen offset:4095",
            "buffer_atomic_add_u32 v0, v1, s[4:7], s8 offen th:TH_ATOMIC_RETURN", "buffer_load_b32 v0, off, s[4:7], s8 offset:-8",
            "buffer_load_b32 v[0:1], v1, s[4:7], s8 offen th:TH_LOAD_NT tfe", "buffer_load_b32 v0, off, ttmp[4:7], null",
            "tbuffer_load_format_x v0, v1, s[0:3], s8 format:[BUF_FMT_32_FLOAT] idxen offset:16 th:TH_LOAD_NT scope:SCOPE_SYS",
            "tbuffer_store_format_xyzw v[0:3], off, s[0:3], null format:[BUF_FMT_16_16_16_16_FLOAT] offset:8388607"],
}

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_buffer_instructions_agree_with_llvm(arch: str) -> None:
  """MUBUF/MTBUF (RDNA3) and VBUFFER (RDNA4) beyond the canonical instances: no address (off), index + offset pairs, tfe's status
  VGPR, inline-constant/M0/null soffsets, named and numbered formats, signed RDNA4 offsets, cache policies."""
  from tg.amd_emu.asm import assemble as tg_assemble
  agree_with_llvm(BUFFER_LINES[arch], arch)
  for bad in ("buffer_load_b32 v0, v[1:2], s[4:7], 0 offen", "tbuffer_load_format_x v0, off, s[0:3], 0 format:[BUF_FMT_NOPE]"):
    assert isinstance(assemble([bad], "rdna3")[0], str)
    with pytest.raises(ValueError, match="line 1"): tg_assemble(bad, "rdna3")

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_images_every_dim_a16_and_modifiers(arch: str) -> None:
  """Image instructions (RDNA3 MIMG, RDNA4 VIMAGE/VSAMPLE) across every dim llvm-mc takes for them, with and without a16, and
  with tfe/d16/lwe/unorm/cache bits: the address and data tuples take the sizes llvm-mc derives (image.py), and the text and
  bytes agree with LLVM both ways. RDNA3 takes its address as one VGPR tuple or, NSA, as a list of groups (an extra dword
  naming groups 1-4), RDNA4 always as the list."""
  from tg.amd_emu.asm import assemble as tg_assemble
  from tg.amd_emu.build import build
  from tg.amd_emu.image import BVH_WORDS, BVH12_GROUPS, addr_groups, addr_words, data_regs
  from tg.amd_emu.isa import get_arch
  from tg.amd_emu.operands import Reg, VGPR
  rdna3, cache = arch == "rdna3", ({"glc": 1}, {"slc": 1, "dlc": 1}) if arch == "rdna3" else ({"th": 1}, {"th": 1, "scope": 2})
  insts = []
  for op in (o for o in get_arch(arch).ops.values() if o.fmt in ("MIMG", "VIMAGE", "VSAMPLE") and o.mnemonic not in LLVM_REJECTS[arch]):
    bvh, one = op.name in BVH_WORDS or op.name in BVH12_GROUPS, any(k in op.name for k in ("ATOMIC", "GATHER4", "MSAA"))
    msaa_ok = not any(k in op.name for k in ("SAMPLE", "GATHER", "GET_LOD", "MIP"))  # llvm-mc refuses MSAA dims for these
    dims = [None] if bvh else [6, 7] if "MSAA" in op.name else range(8 if msaa_ok else 6)
    for dim in dims:
      for a16, mods in ((0, {}), (1, {})) + (((0, {"tfe": 1, **cache[0]}), (1, {"d16": 1, **cache[1]}), (0, {"lwe": 1, "unrm": 1}))
                                             if dim in (None, 1, 6) else ()):  # the modifiers on one dim
        no_d16 = any(k in op.name for k in ("ATOMIC", "GET_", "PCK")) and ("d16" in mods or "unrm" in mods)
        if (bvh and (mods or a16)) or no_d16 or ("ATOMIC" in op.name and "tfe" in mods) or ("unrm" in mods and op.fmt == "VIMAGE"):
          continue  # what llvm-mc refuses; and LLVM's disassembler counts an atomic's tfe VGPR unlike its assembler
        dmask = 0x3 if "CMPSWAP" in op.name else 1 if one else 0xB
        kw: dict = {"a16": a16, **mods} if dim is None else {"dim": dim, "a16": a16, "dmask": dmask, **mods}
        nd = data_regs(op, kw.get("dmask", 0xF), kw.get("d16", 0), kw.get("tfe", 0))
        groups = addr_groups(op, dim or 0, a16)
        spread = [Reg(VGPR + 20 + 3 * k, n) for k, n in enumerate(groups)]
        addrs: list = ([Reg(VGPR + 20, addr_words(op, dim or 0, a16))] + ([spread] if len(groups) > 1 else [])) if rdna3 else [spread]
        rsrc = "srsrc" if rdna3 else "rsrc"
        for addr in addrs:
          regs = {"vdata": Reg(VGPR, nd), "vaddr": addr, rsrc: Reg(8, op.operands[rsrc].nregs)}
          if "ssamp" in op.operands or "samp" in op.operands: regs["ssamp" if rdna3 else "samp"] = Reg(16, 4)
          insts.append(build(op, (), regs | kw))
  texts, blobs = [i.disasm() for i in insts], [i.to_bytes() for i in insts]
  want = assemble(texts, arch)
  assert want == blobs, [(t, b) for t, b, i in zip(texts, want, blobs) if b != i][:6]
  got = disassemble(blobs, arch)
  assert got == texts, [(t, g) for t, g in zip(texts, got) if t != g][:6]
  assert [tg_assemble(t, arch) for t in texts[::23]] == blobs[::23]
  if rdna3: assert sum(len(b) == 12 for b in blobs) > 100  # the NSA forms were among them

def test_fp8_byte_sel_agrees_with_llvm() -> None:
  """RDNA4's fp8/bf8 conversions spell the byte they read or write as byte_sel:N (op_sel bits underneath, swapped for the reads);
  the packed ones keep op_sel."""
  agree_with_llvm([f"v_cvt_{k} byte_sel:{i}" for i in (1, 2, 3) for k in ("f32_fp8_e64 v1, v3", "f32_bf8_e64 v1, v3", "sr_fp8_f32 v1, v2, v3",
                                                                          "sr_bf8_f32 v1, v2, v3")] +
                  ["v_cvt_pk_fp8_f32 v1, v2, v3 op_sel:[0,0,1]", "v_cvt_pk_f32_bf8_e64 v[0:1], v1 op_sel:[1,0]"], "rdna4")

def test_swmmac_index_key_agrees_with_llvm() -> None:
  """RDNA4's sparse WMMA names the 16-bit half of its index VGPR index_key:N (op_sel[0] underneath); the K=64 iu4 form, whose
  index fills the VGPR, has none. Operand register counts are LLVM's (A half of B's, D 8 VGPRs or 4 of packed 16-bit)."""
  agree_with_llvm([t.format(key=" index_key:1" if k else "") for k in (0, 1) for t in (
    "v_swmmac_f32_16x16x32_f16 v[10:17], v[0:3], v[4:11], v18{key}", "v_swmmac_bf16_16x16x32_bf16 v[10:13], v[0:3], v[4:11], v18{key}",
    "v_swmmac_f32_16x16x32_bf8_fp8 v[10:17], v[0:1], v[2:5], v18{key}", "v_swmmac_i32_16x16x32_iu4 v[10:17], v0, v[2:3], v18{key}",
    "v_swmmac_i32_16x16x32_iu8 v[10:17], v[0:1], v[2:5], v18{key} neg_lo:[1,1,0] clamp")] +
    ["v_swmmac_i32_16x16x64_iu4 v[10:17], v[0:1], v[2:5], v18", "v_wmma_i32_16x16x32_iu4 v[10:17], v[0:1], v[2:3], v[10:17]"], "rdna4")
  from tg.amd_emu.asm import assemble as tg_assemble
  for bad in ("v_swmmac_i32_16x16x64_iu4 v[10:17], v[0:1], v[2:5], v18 index_key:1",
              "v_swmmac_f32_16x16x32_f16 v[10:17], v[0:3], v[4:11], v18 index_key:2"):
    assert isinstance(assemble([bad], "rdna4")[0], str)
    with pytest.raises(ValueError, match="index_key"): tg_assemble(bad, "rdna4")
