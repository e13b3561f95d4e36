"""tg.amd: a user-space AMD GPU driver (KFD + HCQ queues) and the AMD device.

Still to come: the narrow KFD interface, memory manager, signals, PM4 compute and SDMA copy queues,
code-object loading, the LLVM-based AMD compiler, and MOCKGPU, a virtual KFD device backed by tg.amd_emu.
"""
