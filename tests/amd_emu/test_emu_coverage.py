"""Every opcode of both archs either builds into an emulator shape or is listed, with its reason, in the package README."""
from __future__ import annotations
import pathlib
import re
import pytest
from tg.amd_emu.isa import get_arch
from tg.amd_emu.shape_c import shape_code, save_shapes
from tg.amd_emu.waveprog import NOPS, BARRIERS
from tg.amd_emu.samples import canonical, FORMATS

README = pathlib.Path(__file__).parents[2] / "packages" / "amd-emu" / "README.md"

def readme_rows() -> list[tuple[str, str]]:
  """(regex, reason) rows of the README's table of instructions the emulator does not run."""
  rows = re.findall(r"^\| `(.+?)` \| (.+?) \|$", README.read_text(), re.M)
  return [(pat.replace("\\|", "|"), why) for pat, why in rows]

def unimplemented(arch: str) -> dict[str, str]:
  """Opcodes the emulator cannot run, with its reason; an internal error while building one fails the test (it is a bug)."""
  out = {}
  for op in get_arch(arch).ops.values():
    if NOPS.fullmatch(op.name) or op.name in BARRIERS or op.name.startswith("S_ENDPGM"): continue  # the program runs these itself
    if op.fmt.split("_LIT")[0].replace("_SDST", "") not in FORMATS + ("VINTERP",): out[op.name] = f"format {op.fmt}"; continue
    sc = shape_code(canonical(op))
    if sc.error is not None: out[op.name] = sc.error
  save_shapes()
  return out

def test_unimplemented_opcodes_are_the_readme_list() -> None:
  """Per arch, the opcodes left unimplemented are exactly those the README's patterns name (`arch:` limits a pattern to one
  arch), and every pattern is needed by some arch."""
  rows = readme_rows()
  assert len(rows) > 10
  used: set[str] = set()
  for arch in ("rdna3", "rdna4"):
    left = unimplemented(arch)
    listed = {}
    for pat, _ in rows:
      for n in get_arch(arch).ops:
        if re.fullmatch(pat, n) or re.fullmatch(pat, f"{arch}:{n}"): listed[n] = pat
    missing = {n: left[n] for n in set(left) - set(listed)}
    assert not missing, f"{arch}: not run and not in the README's list: {missing}"
    assert sorted(set(listed) - set(left)) == [], f"{arch}: the README lists opcodes the emulator runs"
    used |= {listed[n] for n in left}
  assert [pat for pat, _ in rows if pat not in used] == [], "README rows that match nothing left"

def test_internal_error_while_building_fails_loudly(monkeypatch) -> None:
  """A KeyError (or any exception but Unsupported/PcodeError) while building a shape is a bug: it propagates, and nothing is
  cached as "not supported"."""
  from tg.amd_emu import shape_c
  from tg.amd_emu.rdna3 import v_add_f32_e32, v
  def broken(*a, **k): raise KeyError("src9")
  monkeypatch.setattr(shape_c, "build", broken)
  inst = v_add_f32_e32(v[0], v[1], 3.25)  # a literal: a shape no other test makes
  with pytest.raises(KeyError, match="src9"): shape_c.render_shape(inst, shape_c.shape_key(inst))
