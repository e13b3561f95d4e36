"""tg-uop-core builds a wheel that installs and works alone, in a fresh venv with no other tg package."""
from __future__ import annotations
import pathlib, subprocess, sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROGRAM = """
import importlib.util, tg.uop
from tg.uop import UOp
assert importlib.util.find_spec("tg.codegen") is None, "another tg package is installed"
x, y = UOp.variable("x", 0, 100), UOp.variable("y", 0, 3)
print(((x * 4 + y) // 4).simplify().render(), ((x * 4 + y) % 4).simplify().render(), tg.uop.__file__)
from tg.uop.viz import server  # VIZ's page and its vendored layout library ship in the wheel
assert all((server.STATIC / f).is_file() for f in ("index.html", "viz.js", "viz.css", "dagre.min.js", "dagre.LICENSE.txt"))
"""

def test_uop_core_wheel_installs_alone(tmp_path: pathlib.Path) -> None:
  run = lambda *cmd: subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True, timeout=120)
  run("uv", "build", "--package", "tg-uop-core", "--wheel", "--out-dir", str(tmp_path / "dist"))
  wheel = next((tmp_path / "dist").glob("tg_uop_core-*.whl"))
  venv = tmp_path / "venv"
  run("uv", "venv", "--python", sys.executable, str(venv))
  py = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
  run("uv", "pip", "install", "--python", str(py), "--offline", str(wheel))
  out = run(str(py), "-c", PROGRAM).stdout.split()
  assert out[:2] == ["x", "y"] and str(venv) in out[2]
