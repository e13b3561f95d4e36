"""tg.amd: tg's AMD GPU device (RDNA3 gfx1100, RDNA4 gfx1200), a user-space driver over the kernel's KFD with hardware
command queues, and MOCKGPU, a virtual GPU behind the same kernel interface that runs kernels on tg.amd_emu.

`kfd` is the narrow interface to the kernel (ioctl structs from linux/kfd_ioctl.h; HostKFD makes the syscalls),
`driver` the layer above it (topology, memory, signals, PM4 compute and SDMA copy queues), `device` the tg device
(allocator, programs from code objects), `timeline` the queues' signals that let copies overlap kernels, `compiler` LLVM 19
for gfx1100/gfx1200, `hw` the packet and register facts, and `mockgpu` the virtual KFD device that MOCKGPU=1 puts under the same driver.

Usage: `Tensor(data, device="AMD")` (the device registers through the `tg.devices` entry point). Without a GPU, set
MOCKGPU=1 and MOCKGPU_ARCH=rdna3, rdna4 or rdna3,rdna4 (AMD and AMD:1) before the first AMD device opens.
"""
