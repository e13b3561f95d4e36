"""The layering rule: a package may import only the packages below it (ARCHITECTURE.md)."""
import ast, pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
# import name -> the tg packages it may import (itself included)
ALLOWED = {
  "uop": {"uop"},
  "codegen": {"uop", "codegen"},
  "amd_emu": {"uop", "codegen", "amd_emu"},
  "amd": {"uop", "codegen", "amd_emu", "amd"},
  "tensor": {"uop", "codegen", "tensor", "amd"},
}
FOLDERS = {"uop": "uop-core", "codegen": "codegen", "amd_emu": "amd-emu", "amd": "runtime-amd", "tensor": "tensor"}

def tg_imports(path: pathlib.Path) -> set[str]:
  names = set()
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, ast.Import): mods = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module: mods = [node.module]
    else: continue
    names |= {m.split(".")[1] for m in mods if m.startswith("tg.") and m.count(".") >= 1}
  return names

def test_no_upward_imports():
  bad = []
  for pkg, folder in FOLDERS.items():
    files = list((ROOT / "packages" / folder / "src" / "tg" / pkg).rglob("*.py"))
    assert files, f"package {pkg} has no modules"
    for f in files:
      if up := tg_imports(f) - ALLOWED[pkg]: bad.append(f"{f.relative_to(ROOT)} imports {sorted(up)}")
  assert not bad, "upward imports:\n" + "\n".join(bad)

def test_checker_sees_imports(tmp_path):
  f = tmp_path / "m.py"
  f.write_text("import tg.tensor\nfrom tg.amd.driver import x\nfrom . import y\nimport os\n")
  assert tg_imports(f) == {"tensor", "amd"}

def test_no_tg_init():
  assert not list((ROOT / "packages").glob("*/src/tg/__init__.py")), "tg is a namespace package: no tg/__init__.py"
