"""The host CPU's vector register file, as the C compiler sees it with -march=native (the flags kernels are built with, so
the figures match the code it emits): what the CPU heuristics size the matmul tile by (tg.codegen.opt.heuristic)."""
from __future__ import annotations
import functools, os, subprocess
from tg.codegen.renderer import VectorISA
from tg.codegen.devices.clang import CompilerError, find_cc

# the widest instruction set a predefined macro names, first match wins (register width and count are the architecture's)
ISAS: tuple[tuple[str, VectorISA], ...] = (
  ("__AVX512F__", VectorISA("avx512", 64, 32)),
  ("__AVX2__", VectorISA("avx2", 32, 16)),
  ("__AVX__", VectorISA("avx", 32, 16)),
  ("__ARM_NEON", VectorISA("neon", 16, 32)),
  ("__SSE2__", VectorISA("sse2", 16, 16)),
)
BASELINE = VectorISA("scalar", 16, 16)  # nothing known (another architecture, or no compiler): a 16-byte SIMD guess

def isa_from_macros(macros: str) -> VectorISA:
  """The ISA that `cc -dM -E` output `macros` defines (#define NAME VALUE lines)."""
  defined = {line.split()[1] for line in macros.splitlines() if line.startswith("#define ") and len(line.split()) >= 2}
  return next((isa for macro, isa in ISAS if macro in defined), BASELINE)

@functools.cache
def _isa_of(cc: str) -> VectorISA:
  try:
    r = subprocess.run([cc, "-march=native", "-dM", "-E", "-x", "c", os.devnull], capture_output=True, text=True, timeout=60)
  except OSError: return BASELINE
  return isa_from_macros(r.stdout) if r.returncode == 0 else BASELINE

def host_isa() -> VectorISA:
  """The host's ISA, asked of the C compiler once per process (BASELINE when there is none: NULL renders without one)."""
  try: cc = find_cc(os.environ.get("CC", ""))
  except CompilerError: return BASELINE
  return _isa_of(cc)
