"""The hidden kernel arguments come from one definition (tg.amd_emu.codeobj.hidden_args) for the emulator's launch and the
AMD runtime's kernel arguments: the runtime used to leave hidden_grid_dims zero."""
from tg.amd.device import AMDProgram
from tg.amd_emu.codeobj import hidden_args

def test_hidden_args_hand_values():
  h = hidden_args((4, 2, 1), (64, 1, 1))
  assert [h[f"hidden_block_count_{a}"] for a in "xyz"] == [4, 2, 1] and [h[f"hidden_group_size_{a}"] for a in "xyz"] == [64, 1, 1]
  assert [h[f"hidden_remainder_{a}"] for a in "xyz"] == [0, 0, 0]
  assert h["hidden_grid_dims"] == 2  # x (4*64) and y (2*1) span more than one work-item, z doesn't
  assert hidden_args((1, 1, 1), (1, 1, 1))["hidden_grid_dims"] == 1 and hidden_args((1, 1, 3), (1, 2, 1))["hidden_grid_dims"] == 2

def test_runtime_fills_every_hidden_argument():
  class Mem:
    va = 0x1122334455
  prog = AMDProgram.__new__(AMDProgram)  # only its argument list matters here: no device
  prog.args = [{".offset": 0, ".size": 8, ".value_kind": "global_buffer"}, {".offset": 8, ".size": 4, ".value_kind": "by_value"},
               {".offset": 12, ".size": 4, ".value_kind": "hidden_block_count_x"}, {".offset": 16, ".size": 2, ".value_kind": "hidden_group_size_y"},
               {".offset": 18, ".size": 2, ".value_kind": "hidden_grid_dims"},
               {".offset": 24, ".size": 8, ".value_kind": "hidden_multigrid_sync_arg"}]
  kernarg = memoryview(bytearray(b"\xff" * 32))
  prog.fill_args(kernarg, [Mem()], (5, 3, 1), (32, 2, 1), [-7])
  b = bytes(kernarg)
  assert int.from_bytes(b[0:8], "little") == Mem.va and int.from_bytes(b[8:12], "little") == (-7) % 2**32
  assert int.from_bytes(b[12:16], "little") == 5 and int.from_bytes(b[16:18], "little") == 2 and int.from_bytes(b[18:20], "little") == 2
  assert b[20:32] == bytes(12)  # padding and hidden arguments tg doesn't fill stay zero
