"""tg.amd: a user-space AMD GPU driver (KFD + HCQ queues) and the AMD device.

`kfd` is the narrow interface to the kernel (ioctl structs from linux/kfd_ioctl.h; HostKFD makes the syscalls),
`driver` the layer above it (topology, memory, signals, PM4 compute and SDMA copy queues), `device` the tg device
(allocator, programs from code objects, the timeline), `compiler` LLVM 19 for gfx1100/gfx1200, `hw` the packet and
register facts, and `mockgpu` the virtual KFD device that MOCKGPU=1 puts under the same driver (tg.amd_emu runs it).
"""
