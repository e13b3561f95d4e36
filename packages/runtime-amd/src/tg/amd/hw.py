"""Hardware facts the driver and the virtual GPU share: PM4 and SDMA packet opcodes and fields, compute register
offsets per GC version, IP discovery ids. Values from the Linux amdgpu headers (see ../shared/amd/hw.json)."""
from __future__ import annotations

# PM4 type-3 packets: header = 3 << 30 | (count - 1) << 16 | opcode << 8, count = dwords after the header
PACKET3_NOP, PACKET3_SET_SH_REG, PACKET3_DISPATCH_DIRECT = 0x10, 0x76, 0x15
PACKET3_RELEASE_MEM, PACKET3_ACQUIRE_MEM, PACKET3_WAIT_REG_MEM = 0x49, 0x58, 0x3C
PACKET3_INDIRECT_BUFFER, PACKET3_EVENT_WRITE = 0x3F, 0x46
PACKET3_SET_SH_REG_START, PACKET3_SET_SH_REG_END = 0x2C00, 0x3000
INDIRECT_BUFFER_VALID, INDIRECT_BUFFER_SIZE_MASK = 1 << 23, 0xFFFFF  # INDIRECT_BUFFER dword 3: IB_SIZE (dwords) bits 0..19
CS_PARTIAL_FLUSH, EVENT_INDEX_CS_PARTIAL_FLUSH = 7, 4  # EVENT_WRITE: wait until earlier dispatches finished
CACHE_FLUSH_AND_INV_TS_EVENT, EVENT_INDEX_EOP = 20, 5
RELEASE_MEM_GCR = {"GLM_WB": 1 << 12, "GLM_INV": 1 << 13, "GLV_INV": 1 << 14, "GL1_INV": 1 << 15, "GL2_INV": 1 << 20, "GL2_WB": 1 << 21,
                   "SEQ": 1 << 22}
GCR_CNTL = {"GLI_INV": 1 << 0, "GLM_WB": 1 << 4, "GLM_INV": 1 << 5, "GLK_WB": 1 << 6, "GLK_INV": 1 << 7, "GLV_INV": 1 << 8, "GL1_INV": 1 << 9,
            "GL2_INV": 1 << 14, "GL2_WB": 1 << 15}  # GCR_GENERAL_CNTL, dword 7 of ACQUIRE_MEM
DATA_SEL_NONE, DATA_SEL_32, DATA_SEL_64 = 0, 1, 2      # RELEASE_MEM dword 2 bits 29..31
INT_SEL_NONE, INT_SEL_AFTER_WRITE = 0, 2               # bits 24..26
WAIT_FUNC_GEQ, WAIT_MEM_SPACE_MEMORY = 5, 1            # WAIT_REG_MEM dword 1: function bits 0..2, mem_space bits 4..5

def pm4_header(opcode: int, count: int) -> int: return 3 << 30 | (count - 1) << 16 | opcode << 8

# compute registers: (offset, base_index) for the GC versions we know; absolute dword = ip base_addr[base_index] + offset
COMPUTE_REGS = {gc: {"COMPUTE_DISPATCH_INITIATOR": (7072, 0), "COMPUTE_START_X": (7076, 0), "COMPUTE_NUM_THREAD_X": (7079, 0),
                     "COMPUTE_NUM_THREAD_Y": (7080, 0), "COMPUTE_NUM_THREAD_Z": (7081, 0), "COMPUTE_PGM_LO": (7084, 0),
                     "COMPUTE_PGM_HI": (7085, 0), "COMPUTE_PGM_RSRC1": (7090, 0), "COMPUTE_PGM_RSRC2": (7091, 0),
                     "COMPUTE_RESOURCE_LIMITS": (7093, 0), "COMPUTE_DISPATCH_SCRATCH_BASE_LO": (7088, 0),
                     "COMPUTE_DISPATCH_SCRATCH_BASE_HI": (7089, 0), "COMPUTE_TMPRING_SIZE": (7096, 0), "COMPUTE_PGM_RSRC3": (7112, 0),
                     "COMPUTE_USER_DATA_0": (7136, 0)} for gc in ((11, 0, 0), (12, 0, 0))}
USER_DATA_REGS = 16
# COMPUTE_TMPRING_SIZE: WAVES (bits 0..11, wave slots per shader engine on gfx11+), WAVESIZE (bits 12.., per-wave scratch in
# 256-byte units on gfx11+: 15 bits wide on gc 11, 18 on gc 12). COMPUTE_DISPATCH_SCRATCH_BASE_LO/HI hold the base >> 8.
TMPRING_WAVES_BITS, TMPRING_WAVESIZE_SHIFT, SCRATCH_UNIT, SCRATCH_BASE_SHIFT = 12, 12, 256, 8
TMPRING_WAVESIZE_BITS = {(11, 0, 0): 15, (12, 0, 0): 18}
RSRC2_SCRATCH_EN = 1 << 0

def shader_engines(props: dict[str, int]) -> int:
  """Shader engines of a GPU from its KFD topology properties (COMPUTE_TMPRING_SIZE.WAVES counts wave slots per engine)."""
  return max(props.get("array_count", 1) // max(props.get("simd_arrays_per_engine", 1), 1), 1)
DISPATCH_INITIATOR = {"compute_shader_en": 1 << 0, "force_start_at_000": 1 << 2, "cs_w32_en": 1 << 15}

# SDMA (6.0): op in bits 0..7, sub_op in bits 8..15 of dword 0
SDMA_OP_COPY, SDMA_OP_FENCE, SDMA_OP_TRAP, SDMA_OP_POLL_REGMEM, SDMA_OP_NOP = 1, 5, 6, 8, 0
SDMA_SUBOP_COPY_LINEAR = 0
SDMA_PKT_DWORDS = {SDMA_OP_COPY: 7, SDMA_OP_FENCE: 4, SDMA_OP_TRAP: 2, SDMA_OP_POLL_REGMEM: 6, SDMA_OP_NOP: 1}
SDMA_COPY_MAX = 1 << 22                               # COPY_LINEAR count is 22 bits of (bytes - 1)
POLL_FUNC_GEQ = 5                                      # POLL_REGMEM dword 0: func bits 28..30, mem_poll bit 31

# IP discovery hardware ids (sysfs ip_discovery/die/0/<hwid>)
GC_HWID, SDMA0_HWID, NBIF_HWID = 11, 42, 108
