"""`tg-amd-emu sqtt`: the timeline it prints against LLVM's disassembly, and the trace-event JSON it writes."""
import json
import pathlib
import re
import subprocess
import pytest
from tg.amd_emu.cli import main
from llvm import tool

CAPTURES = pathlib.Path(__file__).parent / "sqtt_captures"

def objdump(hsaco: pathlib.Path) -> list[tuple[int, str]]:
  out = subprocess.run([tool("llvm-objdump-19"), "-d", str(hsaco)], capture_output=True, text=True, check=True).stdout
  return [(int(m[2], 16), m[1].strip()) for m in re.finditer(r"^\t(.*?)\s*// ([0-9A-F]+):", out, re.M)]

def test_verbose_lists_the_instructions_llvm_disassembles(capsys):
  """The plus kernel's traced wave: every instruction up to s_endpgm, at its address, with LLVM's text."""
  path = CAPTURES / "gfx1100" / "plus_run_0"
  assert main(["sqtt", str(path), "-v"]) == 0
  listed = [(int(m[2], 16), m[3]) for m in re.finditer(r"^ +(\d+) +\+\d+ +0x([0-9a-f]+)  (.*)$", capsys.readouterr().out, re.M)]
  want = objdump(path / "kernel.hsaco")
  want = want[:[t for _, t in want].index("s_endpgm")]
  assert listed == want

def test_trace_json(tmp_path, capsys):
  """One process per blob, one track per wave slot, 72 waves for gemm, instructions nested in their wave's slice."""
  out = tmp_path / "t.json"
  assert main(["sqtt", str(CAPTURES / "gfx1200" / "gemm_run_0"), "--trace", str(out)]) == 0
  text = capsys.readouterr().out
  ev = json.loads(out.read_text())["traceEvents"]
  assert sum(e["name"] == "process_name" for e in ev) == 6 == text.count("blob_")
  waves = [e for e in ev if e["ph"] == "X" and e["name"] == "wave"]
  insts = [e for e in ev if e["ph"] == "X" and e["name"] != "wave"]
  assert len(waves) == 72 and len(insts) == sum(int(m) for m in re.findall(r"(\d+) instructions\b", text))
  tracks: dict[tuple, list] = {}
  for w in waves: tracks.setdefault((w["pid"], w["tid"]), []).append(span(w))
  for i in insts:
    assert sum(lo <= span(i)[0] and span(i)[1] <= hi for lo, hi in tracks[(i["pid"], i["tid"])]) == 1, i
  for key in {(e["pid"], e["tid"]) for e in insts}:  # slices of one track never partly overlap
    spans = sorted(span(e) for e in insts if (e["pid"], e["tid"]) == key)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))

def span(e: dict) -> tuple[int, int]:
  """A slice's cycles (written as nanoseconds, i.e. microseconds / 1000)."""
  return round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)

@pytest.mark.parametrize("args, msg", [
  (["/nonexistent/blob.bin", "--arch", "rdna3"], "No such file"),
  ([str(CAPTURES / "gfx1100" / "plus_run_0" / "blob_0.bin")], "a single blob needs --code-object"),
  ([str(CAPTURES / "gfx1100" / "plus_run_0" / "kernel.hsaco"), "--arch", "rdna3"], "not a LAYOUT_HEADER"),
])
def test_bad_input(args, msg, capsys):
  assert main(["sqtt", *args]) == 1
  assert msg in capsys.readouterr().err

def test_run_writes_sqtt_that_sqtt_reads(tmp_path, capsys):
  """`run --sqtt` on the captured plus kernel, then `sqtt` on that blob: one wave, the kernel's instructions up to
  s_endpgm as LLVM prints them, like the hardware capture's listing."""
  hsaco, blob = CAPTURES / "gfx1100" / "plus_run_0" / "kernel.hsaco", tmp_path / "t.bin"
  assert main(["run", str(hsaco), "--block", "3,1,1", "--arg", "f32:3", "--arg", "f32=1,2,3", "--arg", "f32=4,5,6", "--sqtt", str(blob)]) == 0
  assert "[5. 7. 9.]" in capsys.readouterr().out
  assert main(["sqtt", str(blob), "--code-object", str(hsaco), "-v"]) == 0
  out = capsys.readouterr().out
  assert "1 waves" in out
  listed = [(int(m[1], 16), m[2]) for m in re.finditer(r"^ +\d+ +\+\d+ +0x([0-9a-f]+)  (.*)$", out, re.M)]
  want = objdump(hsaco)
  assert listed == want[:[t for _, t in want].index("s_endpgm")]
