"""The DSL, decoder, printer and assembler against hand-computed encodings and each other."""
from __future__ import annotations
import pytest
from hypothesis import given, settings, strategies as st
from tg.amd_emu.asm import assemble, parse_line
from tg.amd_emu.decode import decode, decode_all
from tg.amd_emu.isa import get_arch
from tg.amd_emu.samples import all_canonical
from tg.amd_emu import rdna3 as r3, rdna4 as r4
from tg.amd_emu.rdna3 import EXEC_LO, M0, NULL, VCC_LO, s, v, ttmp

# (instruction, bytes worked out by hand from the field layouts in the ISA data)
HAND = [
  (r3.v_add_f32_e32(v[0], v[1], v[2]), "01050006"),            # VOP2: op 3 << 25 | vdst 0 << 17 | vsrc1 2 << 9 | src0 257
  (r3.v_add_f32_e32(v[0], 2.0, v[2]), "f4040006"),             # 2.0 is inline constant 244
  (r3.v_add_f32_e32(v[0], 3.0, v[2]), "ff04000600004040"),     # 3.0 is not: literal 0x40400000
  (r3.s_load_b64(s[0:1], s[2:3], 0), "010004f4000000f8"),      # sbase s[2:3] -> 1, soffset NULL (124)
  (r3.global_store_b32(addr=v[0:1], data=v[2], saddr=NULL, offset=0), "00006adc00027c00"),
  (r3.s_mov_b32(EXEC_LO, M0), "7d00febe"), (r3.v_mov_b32_e32(v[0], ttmp[9]), "7502007e"),
  (r3.v_add_f32_e64(v[0], -v[1], abs(v[2])), "000203d501050220"),
  (r3.v_cmp_eq_f32_e32(v[1], v[2]), "0105247c"), (r3.s_endpgm(), "0000b0bf"),
]

@pytest.mark.parametrize("inst,hexbytes", HAND, ids=lambda x: x.disasm() if hasattr(x, "disasm") else x)
def test_hand_encodings(inst, hexbytes: str) -> None:
  assert inst.to_bytes().hex() == hexbytes
  assert decode(bytes.fromhex(hexbytes), "rdna3") == inst

def test_repr_rebuilds() -> None:
  for arch, mod in (("rdna3", r3), ("rdna4", r4)):
    ns = vars(mod)
    for inst in all_canonical(arch):
      assert eval(repr(inst), dict(ns)) == inst, repr(inst)

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_decode_and_assemble_roundtrip(arch: str) -> None:
  insts = all_canonical(arch)
  code = b"".join(i.to_bytes() for i in insts)
  assert [i for _, i in decode_all(code, arch)] == insts
  e64_twins = {"v_nop_e64", "v_pipeflush_e64", "v_readfirstlane_b32_e64"}  # their text names the e32 form, as in LLVM
  for inst in insts:
    if inst.op.mnemonic not in e64_twins: assert parse_line(inst.disasm(), arch) == inst, inst.disasm()

def test_bad_operands_name_field_and_instruction() -> None:
  with pytest.raises(TypeError, match=r"vdst of v_fma_f64 takes 2 register"): r3.v_fma_f64(v[0], v[2:3], v[4:5], v[6:7])
  with pytest.raises(TypeError, match=r"vsrc1 of v_sub_f32_e32 must be a VGPR"): r3.v_sub_f32_e32(v[0], v[1], s[2])
  assert r3.v_add_f32_e32(v[0], v[1], 2.0) == r3.v_add_f32_e32(v[0], 2.0, v[1])  # commutative: the constant moves to src0
  with pytest.raises(TypeError, match=r"sdata of s_load_b64 takes 2"): r3.s_load_b64(s[0], s[2:3], 0)
  with pytest.raises(ValueError, match=r"offset0=300 of ds_store_2addr_b32 is out of range"): r3.ds_store_2addr_b32(v[0], v[1], v[2], offset0=300)
  with pytest.raises(ValueError, match=r"simm16=70000 of s_nop"): r3.s_nop(70000)
  with pytest.raises(ValueError, match=r"even-aligned"): r3.s_load_b64(s[0:1], s[1:2], 0)
  with pytest.raises(ValueError, match=r"two different literals"): r3.v_fma_f32(v[0], 3.0, 5.0, v[1])
  with pytest.raises(ValueError, match=r"bad register range"): v[5:3]

def test_undecodable_bytes_name_offset_and_dword() -> None:
  with pytest.raises(ValueError, match=r"offset 0x4: dword 0xffffffff"): decode_all(bytes.fromhex("0000b0bf") + b"\xff" * 4, "rdna3")
  with pytest.raises(ValueError, match=r"truncated"): decode(bytes.fromhex("000003d5"), "rdna3")

def test_assembler_program() -> None:
  code = assemble("""
    ; comment
    start: s_mov_b32 s0, 5   // trailing comment
    loop:
      s_sub_u32 s0, s0, 1
      s_cmp_lg_u32 s0, 0
      s_cbranch_scc1 loop
      s_waitcnt vmcnt(0) lgkmcnt(0)
      s_branch end
      s_nop 0
    end: s_endpgm
  """, "rdna3")
  insts = [i.disasm() for _, i in decode_all(code, "rdna3")]
  assert insts == ["s_mov_b32 s0, 5", "s_sub_u32 s0, s0, 1", "s_cmp_lg_u32 s0, 0", f"s_cbranch_scc1 {-3 & 0xFFFF}",
                   "s_waitcnt vmcnt(0) lgkmcnt(0)", "s_branch 1", "s_nop 0", "s_endpgm"]

def test_vcc_and_vopd() -> None:
  assert r3.v_cndmask_b32_e32(v[0], v[1], v[2]).disasm() == "v_cndmask_b32_e32 v0, v1, v2, vcc_lo"
  assert r3.v_add_co_u32(v[0], VCC_LO, v[1], v[2]).disasm() == "v_add_co_u32 v0, vcc_lo, v1, v2"
  pair = r3.vopd(r3.v_dual_mul_f32(v[0], v[1], v[2]), r3.v_dual_add_f32(v[3], v[4], v[5]))
  assert pair.to_bytes().hex() == "0105c8c8040b0200" and decode(pair.to_bytes(), "rdna3") == pair

SRC_OPS = ["v_add_f32_e64", "v_mul_f32_e64", "v_fma_f32", "v_max_f32_e64", "v_add_nc_u32_e64", "v_and_b32_e64"]
def operand():
  return st.one_of(st.integers(0, 255).map(lambda i: v[i]), st.integers(0, 104).map(lambda i: s[i]),
                   st.integers(-16, 64), st.sampled_from([0.5, -1.0, 2.0, 4.0]), st.integers(65, 2**31 - 1))

@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SRC_OPS), st.integers(0, 255), operand(), operand(), operand(), st.booleans())
def test_random_operands_roundtrip(name: str, dst: int, a, b, c, clamp: bool) -> None:
  op = get_arch("rdna3").op(name)
  srcs = [a, b, c][:sum(k in op.operands for k in ("src0", "src1", "src2"))]
  lits = {x for x in srcs if isinstance(x, int) and x > 64}
  if len(lits) > 1: return
  inst = getattr(r3, name)(v[dst], *srcs, clmp=int(clamp))
  assert decode(inst.to_bytes(), "rdna3") == inst
  assert parse_line(inst.disasm(), "rdna3") == inst

# the inline float constants as the RDNA3 ISA manual's operand table lists them (source codes 240..248)
MANUAL_INLINE_FLOATS = [(240, 0.5), (241, -0.5), (242, 1.0), (243, -1.0), (244, 2.0), (245, -2.0), (246, 4.0), (247, -4.0)]

@pytest.mark.parametrize("code,val", MANUAL_INLINE_FLOATS)
def test_inline_float_table_both_directions(code: int, val: float) -> None:
  from tg.amd_emu.operands import decode_const, encode_const
  for ftype in ("f16", "f32", "f64"):
    assert encode_const(val, ftype, 64 if ftype == "f64" else 32) == (code, None)
    assert decode_const(code, ftype) == val
  assert decode_const(249, "f32") is None and decode_const(239, "f32") is None
