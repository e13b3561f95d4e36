"""tg.codegen: turns kernel ASTs (UOp graphs) into running programs.

Still to come (see the tg.codegen issue): kernel optimization, the lowering passes, the linearizer,
renderers (C, LLVM IR, Python), compilers with an on-disk cache, the device interface and the host
devices CPU, PYTHON and NULL.
"""
