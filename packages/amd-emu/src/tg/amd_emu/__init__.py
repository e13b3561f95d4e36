"""tg.amd_emu: the RDNA3/RDNA4 instruction sets, for an emulator that runs AMD GPU code with no GPU.

What exists: ISA tables generated from the shared ISA data (`isa`), an instruction DSL (`rdna3`, `rdna4`: one
callable per opcode) whose instructions encode (`.to_bytes()`), decode (`decode`), print LLVM syntax
(`.disasm()`) and rebuild from their repr, a text assembler (`asm.assemble`), a code-object reader/writer
(`codeobj`), and the `tg-amd-emu` command. The wave/workgroup emulator comes in a later issue.
"""
