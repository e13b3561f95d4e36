"""tg.amd_emu: the RDNA3/RDNA4 instruction set and an emulator that runs AMD GPU code with no GPU.

Still to come: ISA tables generated from the shared ISA data, an instruction DSL that encodes, decodes and
prints LLVM syntax, a text assembler, a code-object reader and writer, and the wave/workgroup emulator.
"""
