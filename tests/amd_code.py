"""The AMD code a kernel becomes, as LLVM's disassembler (llvm-objdump-19) reads the compiled code object: tests check which
instructions the hardware would run (v_exp_f32, v_wmma_...) without trusting tg's own disassembler."""
import subprocess, tempfile
from tg.amd.compiler import find_tool
from tg.codegen.device import Device
from tg.codegen.pipeline import get_program
from tg.uop import UOp

def disassemble(dev: str, ast: UOp) -> str:
  """llvm-objdump's listing of the code object the device compiles for kernel `ast` (opts as the optimizer picks them)."""
  d = Device[dev]
  lib = d.compiler.compile(get_program(ast, d.renderer).src)
  with tempfile.NamedTemporaryFile(suffix=".hsaco") as f:
    f.write(lib)
    f.flush()
    objdump = find_tool("clang").replace("clang", "llvm-objdump")
    return subprocess.run([objdump, "-d", f"--mcpu={d.target}", f.name], capture_output=True, text=True, check=True).stdout
