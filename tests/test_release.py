"""The release check: every package builds a wheel and an sdist with complete metadata, and each installs from the built
files alone in a fresh venv (with only the tg packages it depends on) and runs the examples of its README."""
from __future__ import annotations
import email, importlib.metadata, pathlib, re, subprocess, sys, tarfile, tomllib, zipfile
from typing import Callable
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = {"tg-uop-core": "uop-core", "tg-codegen": "codegen", "tg-amd-emu": "amd-emu", "tg-runtime-amd": "runtime-amd", "tg-tensor": "tensor"}
MODULES = {"tg.uop": "tg-uop-core", "tg.codegen": "tg-codegen", "tg.amd_emu": "tg-amd-emu", "tg.amd": "tg-runtime-amd", "tg.tensor": "tg-tensor"}
EXTRAS = {"tg-codegen": "[numpy]"}  # its README example prints through numpy

def run(*cmd: str, cwd: pathlib.Path = ROOT, timeout: int = 300) -> str:
  r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
  if r.returncode: raise AssertionError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
  return r.stdout

@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
  out = tmp_path_factory.mktemp("dist")
  run("uv", "build", "--all-packages", "--out-dir", str(out))
  return out

def fresh_venv(path: pathlib.Path, dist: pathlib.Path) -> tuple[str, Callable[[str], str]]:
  """A venv with numpy (this environment's version, from the index or uv's cache) and an installer that takes tg packages
  only from the built files (never from an index, where a package of the same name could shadow ours)."""
  run("uv", "venv", "--python", sys.executable, str(path))
  py = str(path / "bin" / "python")
  run("uv", "pip", "install", "--python", py, f"numpy=={importlib.metadata.version('numpy')}")
  return py, lambda pkg: run("uv", "pip", "install", "--python", py, "--no-index", "--find-links", str(dist), pkg + EXTRAS.get(pkg, ""))

def project(pkg: str) -> dict:
  return tomllib.loads((ROOT / "packages" / PACKAGES[pkg] / "pyproject.toml").read_text())["project"]

def built(dist: pathlib.Path, pkg: str) -> tuple[pathlib.Path, pathlib.Path]:
  stem = f"{pkg.replace('-', '_')}-{project(pkg)['version']}"
  return dist / f"{stem}-py3-none-any.whl", dist / f"{stem}.tar.gz"

@pytest.mark.parametrize("pkg", PACKAGES)
def test_metadata(dist: pathlib.Path, pkg: str) -> None:
  """Wheel and sdist carry the licence file and the metadata an index shows; tg dependencies have compatible-release bounds."""
  whl, sdist = built(dist, pkg)
  stem = whl.name.split("-py3")[0]
  with zipfile.ZipFile(whl) as z:
    meta = email.message_from_bytes(z.read(f"{stem}.dist-info/METADATA"))
    assert "MIT" in z.read(f"{stem}.dist-info/licenses/LICENSE").decode()
  with tarfile.open(sdist) as t:
    names = set(t.getnames())
    sdist_meta = email.message_from_bytes(t.extractfile(f"{stem}/PKG-INFO").read())  # type: ignore[union-attr]
  assert f"{stem}/LICENSE" in names and f"{stem}/README.md" in names
  if pkg == "tg-amd-emu": assert {f"{stem}/scripts/gen_tables.py", f"{stem}/scripts/gen_sqtt_table.py"} <= set(names)
  if pkg == "tg-uop-core":  # VIZ's page and its vendored layout library (with its licence) ship in the wheel
    with zipfile.ZipFile(whl) as z:
      assert {f"tg/uop/viz/static/{f}" for f in ("index.html", "viz.js", "viz.css", "dagre.min.js", "dagre.LICENSE.txt")} <= set(z.namelist())
  for m in (meta, sdist_meta):
    assert m["Name"] == pkg and m["License-Expression"] == "MIT" and m["License-File"] == "LICENSE"
    assert m["Author"] and m["Keywords"] and m["Summary"] and m["Description-Content-Type"] == "text/markdown"
    assert "Development Status :: 3 - Alpha" in m.get_all("Classifier") and "Programming Language :: Python :: 3" in m.get_all("Classifier")
    tg_deps = [d for d in m.get_all("Requires-Dist") or [] if d.startswith("tg-")]
    assert tg_deps and all(re.fullmatch(r"tg-[a-z-]+~=0\.1\.0( ; extra == '\w+')?", d) for d in tg_deps) or pkg == "tg-uop-core", tg_deps

def readme_blocks(pkg: str) -> list[str]:
  return re.findall(r"```python\n(.*?)```", (ROOT / "packages" / PACKAGES[pkg] / "README.md").read_text(), re.S)

def imported_packages(code: str) -> set[str]:
  return {MODULES[m] for m in re.findall(r"(?:from|import) (tg\.\w+)", code) if m in MODULES}

def requires(pkg: str) -> set[str]:
  """pkg and the tg packages it needs, transitively."""
  need, todo = set(), [pkg]
  while todo:
    if (p := todo.pop()) not in need: need.add(p); todo += [d.split("~")[0] for d in project(p)["dependencies"] if d.startswith("tg-")]
  return need

@pytest.mark.parametrize("pkg", PACKAGES)
def test_installs_alone_and_runs_its_readme(dist: pathlib.Path, pkg: str, tmp_path: pathlib.Path) -> None:
  """The first README example runs with only the package and its tg dependencies installed (and nothing else of tg
  importable); a later example that uses a package above it (runtime-amd's tensor example) gets that package installed first."""
  py, install = fresh_venv(tmp_path / "venv", dist)
  install(pkg)
  have = requires(pkg)
  for mod, other in MODULES.items():
    if other not in have: run(py, "-c", f"import importlib.util, sys; sys.exit(importlib.util.find_spec({mod!r}) is not None)")
  blocks = readme_blocks(pkg)
  assert blocks and imported_packages(blocks[0]) <= have, f"{pkg}'s first README example needs {imported_packages(blocks[0]) - have}"
  script = ""
  for block in blocks:
    for extra in imported_packages(block) - have: install(extra); have |= requires(extra)
    script += block  # the blocks continue one another, as a reader runs them
    (tmp_path / "example.py").write_text(script)
    run(py, str(tmp_path / "example.py"), cwd=tmp_path)

def test_amd_emu_cli_alone(dist: pathlib.Path, tmp_path: pathlib.Path) -> None:
  """The installed command prints its version; asm and disasm work without importing tg.codegen or numpy."""
  py, install = fresh_venv(tmp_path / "venv", dist)
  install("tg-amd-emu")
  assert run(str(tmp_path / "venv" / "bin" / "tg-amd-emu"), "--version").split() == ["tg-amd-emu", project("tg-amd-emu")["version"]]
  (tmp_path / "k.s").write_text("v_mov_b32 v1, 2.0\ns_endpgm\n")
  program = ("import sys; from tg.amd_emu.cli import main\n"
             "main(['asm', 'k.s', '-o', 'k.hsaco']); main(['disasm', 'k.hsaco'])\n"
             "assert not {'tg.codegen', 'numpy'} & set(sys.modules), sorted(m for m in sys.modules if m.startswith(('tg.codegen', 'numpy')))")
  assert "v_mov_b32_e32 v1, 2.0" in run(py, "-c", program, cwd=tmp_path)
