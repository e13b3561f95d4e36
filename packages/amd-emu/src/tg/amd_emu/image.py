"""Image instructions' register counts, which the encoding leaves implicit: how many address VGPRs the opcode, dim and a16
imply, and how many data VGPRs dmask, d16 and tfe imply (LLVM checks both and prints the tuples at these sizes).

An address is: one dword each for offset (_O), bias (_B) and the depth compare value (_C); then the gradients (_D: dx and dy
per gradient axis, packed two 16-bit values a dword for _G16); then the coordinates with the lod (_L), clamp (_CL) or mip
level (_MIP), packed two a dword with a16.
"""
from __future__ import annotations
from .isa import Op

DIMS = ("1D", "2D", "3D", "CUBE", "1D_ARRAY", "2D_ARRAY", "2D_MSAA", "2D_MSAA_ARRAY")
COORDS = (1, 2, 3, 3, 2, 3, 3, 4)
GRAD_AXES = (1, 2, 3, 2, 1, 2, 2, 2)  # a cube's gradients are 2D, an array's those of one layer
BVH_WORDS = {"IMAGE_BVH_INTERSECT_RAY": (11, 8), "IMAGE_BVH64_INTERSECT_RAY": (12, 9)}  # (32-bit, a16) ray data

def tokens(op: Op) -> set[str]: return set(op.name.split("_")[1:])

def addr_words(op: Op, dim: int, a16: int) -> int:
  if op.name in BVH_WORDS: return BVH_WORDS[op.name][a16]
  t = tokens(op)
  if "RESINFO" in t: return 1
  extra = sum(x in t for x in ("O", "B", "C"))
  comps = COORDS[dim] + sum(x in t for x in ("L", "CL", "MIP"))
  axes = GRAD_AXES[dim]
  grads = 0 if "D" not in t else 2 * ((axes + 1) // 2) if "G16" in t else 2 * axes
  return extra + grads + ((comps + 1) // 2 if a16 else comps)

def data_regs(op: Op, dmask: int, d16: int, tfe: int) -> int:
  """VGPRs of vdata: one per dmask channel (a gather or msaa_load returns four texels/samples of one channel; a ray query four
  dwords), halved (rounding up) for d16, plus tfe's status VGPR (llvm-mc counts no VGPR for lwe)."""
  n = 4 if "BVH" in op.name or "GATHER4" in op.name or "MSAA" in op.name else bin(dmask).count("1")
  return max(1, (n + 1) // 2 if d16 else n) + (1 if tfe else 0)

# RDNA4 (VIMAGE/VSAMPLE) names each address VGPR in its own field: up to 5 (VIMAGE) or 4 (VSAMPLE), the last holding the rest
GFX12 = ("VIMAGE", "VSAMPLE")
# a ray query's groups: node pointer, extent, origin, direction, inverse direction (checked against llvm-mc); the BVH8 and dual
# queries are newer than LLVM 19 and take BVH64's groups here, unchecked
BVH12_GROUPS = {"IMAGE_BVH_INTERSECT_RAY": (1, 1, 3, 3, 3), "IMAGE_BVH64_INTERSECT_RAY": (2, 1, 3, 3, 3),
                "IMAGE_BVH8_INTERSECT_RAY": (2, 1, 3, 3, 3), "IMAGE_BVH_DUAL_INTERSECT_RAY": (2, 1, 3, 3, 3)}

def addr_groups(op: Op, dim: int, a16: int) -> tuple[int, ...]:
  """The VGPR count of each address field in use, RDNA4's or RDNA3's NSA form (a ray query's groups are fixed: its 32-bit form)."""
  if op.name in BVH12_GROUPS: return BVH12_GROUPS[op.name]
  n, fields = addr_words(op, dim, a16), 4 if op.fmt == "VSAMPLE" else 5  # VIMAGE and RDNA3's NSA MIMG: 5
  return (1,) * n if n <= fields else (1,) * (fields - 1) + (n - fields + 1,)
