"""The host devices tg-codegen ships: CPU (C through the system compiler), PYTHON (the reference interpreter), NULL (runs nothing),
DISK:<path> (a memory-mapped file: holds data, runs no kernels).
They are registered as `tg.devices` entry points; get them with `tg.codegen.device.Device[name]`."""
