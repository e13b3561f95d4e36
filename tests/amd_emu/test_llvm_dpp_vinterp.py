"""DPP16/DPP8 and VINTERP syntax against LLVM 19: our assembler gives llvm-mc's bytes, our disassembler llvm-objdump's text."""
from __future__ import annotations
import pytest
from tg.amd_emu.asm import assemble
from tg.amd_emu.decode import decode
from llvm import assemble as llvm_assemble, disassemble as llvm_disassemble

DPP = ["v_or_b32_dpp v1, v0, v2 row_shl:1 row_mask:0xf bank_mask:0xf bound_ctrl:1", "v_mov_b32_dpp v1, v0 dpp8:[7,6,5,4,3,2,1,0]",
       "v_mov_b32_dpp v1, v0 dpp8:[1,0,2,3,4,5,6,7] fi:1", "v_add_f32_dpp v1, -v0, |v2| row_shr:2 row_mask:0x3 bank_mask:0x5",
       "v_cmp_gt_u32_dpp vcc_lo, v0, v2 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf fi:1", "v_cmpx_gt_u32_dpp v0, v2 quad_perm:[1,0,3,2]",
       "v_mov_b32_dpp v1, v0 row_mirror", "v_mov_b32_dpp v1, v0 row_half_mirror row_mask:0x2", "v_mov_b32_dpp v1, v0 row_share:3",
       "v_mov_b32_dpp v1, v0 row_xmask:15 bank_mask:0x1", "v_mov_b32_dpp v1, v0 row_ror:7", "v_mov_b32_dpp v1, v0 row_shl:1 bound_ctrl:0",
       "v_add_f32_e64_dpp v1, -v0, |v2| row_shr:2 row_mask:0x3 bank_mask:0x5", "v_add_f32_e64_dpp v1, v0, v2 clamp mul:2 row_shr:2",
       "v_add_f32_e64_dpp v1, v0, v2 dpp8:[1,0,3,2,4,5,6,7] fi:1", "v_cmp_gt_u32_e64_dpp s4, v0, v2 quad_perm:[1,0,3,2]",
       "v_add_co_ci_u32_dpp v1, vcc_lo, v0, v2, vcc_lo row_shr:2", "v_fma_f32_e64_dpp v1, v0, v2, v3 row_xmask:1",
       "v_dot2_f32_f16_e64_dpp v1, v0, v2, v3 row_shr:2"]
VINTERP = ["v_interp_p10_f32 v4, v1, v2, v3", "v_interp_p10_f16_f32 v4, -v1, v2, v3 wait_exp:3", "v_interp_p2_f32 v4, v1, v2, v3 clamp",
           "v_interp_p10_f16_f32 v4, v1, v2, v3 op_sel:[1,0,1,0]", "v_interp_p2_f16_f32 v4, v1, -v2, v3 op_sel:[1,0,0,1] clamp wait_exp:7",
           "v_interp_p10_rtz_f16_f32 v4, v1, v2, v3", "v_interp_p2_rtz_f16_f32 v4, v1, v2, v3 wait_exp:1"]

@pytest.mark.parametrize("arch", ["rdna3", "rdna4"])
def test_dpp_and_vinterp_assemble_and_print_as_llvm(arch: str) -> None:
  lines = DPP + VINTERP
  want = llvm_assemble(lines, arch)
  ok = [(line, enc) for line, enc in zip(lines, want) if isinstance(enc, bytes)]
  assert len(ok) >= len(lines) - 2, [(line, e) for line, e in zip(lines, want) if isinstance(e, str)]  # every line but an arch's missing opcode
  texts = llvm_disassemble([enc for _, enc in ok], arch)
  for (line, enc), text in zip(ok, texts):
    assert assemble(line, arch) == enc, line
    assert decode(enc, arch).disasm() == text, line
    assert assemble(text, arch) == enc, text  # LLVM's own printing (VOPC DPP without _dpp) parses back

def test_dpp_errors_name_the_problem() -> None:
  for line, msg in [("v_mov_b32_dpp v1, s0 row_shl:1", "VGPR"), ("v_mov_b32_dpp v1, v0", "DPP control"),
                    ("v_mov_b32_dpp v1, v0 quad_perm:[4,0,0,0]", "quad_perm"), ("v_mov_b32_dpp v1, v0 row_shl:0", "row_shl"),
                    ("v_mov_b32_dpp v1, v0 dpp8:[1,2]", "dpp8")]:
    with pytest.raises(ValueError, match=msg): assemble(line, "rdna3")
