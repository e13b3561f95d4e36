"""The RDNA4 instruction DSL: `from tg.amd_emu.rdna4 import *` gives registers and one callable per opcode."""
from .dsl import namespace

globals().update(namespace("rdna4"))
__all__ = sorted(k for k in globals() if not k.startswith("_") and k != "namespace")
