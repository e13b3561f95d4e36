"""tests/amd run on the virtual GPU: two of them, AMD (RDNA3, gfx1100) and AMD:1 (RDNA4, gfx1200), in this process."""
import os
os.environ["MOCKGPU"] = "1"
os.environ["MOCKGPU_ARCH"] = "rdna3,rdna4"
