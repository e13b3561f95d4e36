"""Malformed input never escapes as an internal exception: mutated clang-19 code objects are read, decoded and disassembled,
random instruction words decoded and disassembled; each either works or raises a ValueError (CodeObjectError for the ELF)
with a message. Needs clang-19 and ld.lld-19 (fails, not skips, without them)."""
from __future__ import annotations
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from test_llvm_codeobj import compile_kernels
from tg.amd_emu import msgpack
from tg.amd_emu.codeobj import CodeObjectError, read
from tg.amd_emu.decode import decode, decode_all

@pytest.fixture(scope="module")
def clang_objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
  return {arch: compile_kernels(tmp_path_factory.mktemp(arch), arch).read_bytes() for arch in ("rdna3", "rdna4")}

edits = st.lists(st.tuples(st.sampled_from(["set", "flip", "cut", "insert"]), st.floats(0, 1, exclude_max=True), st.binary(min_size=1, max_size=4)),
                 min_size=1, max_size=4)

def mutate(raw: bytes, todo: list[tuple[str, float, bytes]]) -> bytes:
  for kind, where, blob in todo:
    i = int(where * len(raw))
    if kind == "set": raw = raw[:i] + blob + raw[i + len(blob):]
    elif kind == "flip": raw = raw[:i] + bytes([raw[i] ^ (1 << blob[0] % 8)]) + raw[i + 1:] if i < len(raw) else raw
    elif kind == "cut": raw = raw[:i]
    else: raw = raw[:i] + blob + raw[i:]
  return raw

def read_everything(data: bytes) -> None:
  """read, then decode and disassemble every kernel: the CLI's disasm path."""
  co = read(data)
  for k in co.kernels.values():
    assert all(isinstance(a[".offset"], int) and isinstance(a[".size"], int) for a in k.args)
    for _, inst in decode_all(k.code, co.arch): assert isinstance(inst.disasm(), str)

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["rdna3", "rdna4"]), edits)
def test_fuzz_mutated_code_objects(clang_objects: dict[str, bytes], arch: str, todo: list) -> None:
  data = mutate(clang_objects[arch], todo)
  try: read_everything(data)
  except CodeObjectError as e: assert str(e)
  except ValueError as e: assert any(w in str(e) for w in ("decode", "register", "truncated", "not valid")), e  # the code itself is bad

@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["rdna3", "rdna4"]), st.binary(min_size=4, max_size=16))
def test_fuzz_instruction_words(arch: str, data: bytes) -> None:
  try: inst = decode(data, arch)
  except ValueError as e:
    assert "decode" in str(e) or "truncated" in str(e), e
    return
  try: assert isinstance(inst.disasm(), str)
  except ValueError as e: assert "register" in str(e) or "not valid" in str(e), e  # an operand code with no register of that width, a bad DPP control

@pytest.mark.parametrize("blob, message", [(b"\x82\xa1k", "truncated"), (b"\x81\x81\xa1a\x01\x02", "unhashable"),
                                           (b"\x91" * 5000 + b"\x00", "RecursionError"), (b"\xc1", "unsupported type byte 0xc1")])
def test_malformed_msgpack_is_a_value_error(blob: bytes, message: str) -> None:
  with pytest.raises(ValueError, match=message): msgpack.unpack(blob)

def test_clean_objects_read(clang_objects: dict[str, bytes]) -> None:
  for data in clang_objects.values(): read_everything(data)  # the fuzz starts from files that read

def test_truncated_everywhere(clang_objects: dict[str, bytes]) -> None:
  data = clang_objects["rdna3"]
  for n in range(0, len(data), max(1, len(data) // 97)):
    with pytest.raises(CodeObjectError): read(data[:n])
