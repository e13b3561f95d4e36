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

def codegen_imports(path: pathlib.Path) -> list[str]:
  """What a module takes from tg.codegen: 'tg.codegen:NAME' for `from tg.codegen import NAME`, the module path for any deeper import."""
  out = []
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (node.module + ".").startswith("tg.codegen."):
      out += [f"tg.codegen:{a.name}" for a in node.names] if node.module == "tg.codegen" else [node.module]
    elif isinstance(node, ast.Import): out += [a.name for a in node.names if (a.name + ".").startswith("tg.codegen.")]
  return out

def codegen_all() -> set[str]:
  """tg.codegen's __all__, read from its source (a list of string literals)."""
  tree = ast.parse((ROOT / "packages" / "codegen" / "src" / "tg" / "codegen" / "__init__.py").read_text())
  node = next(n for n in tree.body if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in n.targets))
  return set(ast.literal_eval(node.value))

def test_amd_emu_uses_only_codegen_public_api():
  """tg.amd_emu reaches tg.codegen only through names in tg.codegen.__all__ (issue 15): no internals, no submodules."""
  public, bad = codegen_all(), []
  for f in (ROOT / "packages" / "amd-emu" / "src" / "tg" / "amd_emu").rglob("*.py"):
    for imp in codegen_imports(f):
      if not imp.startswith("tg.codegen:") or imp.partition(":")[2] not in public: bad.append(f"{f.relative_to(ROOT)}: {imp}")
  assert not bad, "tg.amd_emu uses tg.codegen internals:\n" + "\n".join(bad)

def test_public_api_checker_sees_internals(tmp_path):
  f = tmp_path / "m.py"
  f.write_text("from tg.codegen import Device, compile_c\nfrom tg.codegen.device import Device\nimport tg.codegen.lower.linearize\n"
               "from tg.codegenx import y\nimport tg.uop\n")
  assert codegen_imports(f) == ["tg.codegen:Device", "tg.codegen:compile_c", "tg.codegen.device", "tg.codegen.lower.linearize"]
  assert {"compile_c", "render_c_function", "CLibrary"} <= codegen_all() and "linearize" not in codegen_all()

def module_imports(path: pathlib.Path, package: str) -> set[str]:
  """The modules of `package` a file imports, at any depth of the file (a function-level import counts too), by dotted name;
  `from package.sub import name` counts as package.sub.name when that is a module."""
  pkg_dir = ROOT / "packages" / FOLDERS[package.split(".")[1]] / "src"
  here = ".".join(path.relative_to(pkg_dir).with_suffix("").parts).removesuffix(".__init__")
  base = here if path.name == "__init__.py" else here.rpartition(".")[0]
  out = set()
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, ast.ImportFrom):
      mod = ".".join(base.split(".")[:len(base.split(".")) - node.level + 1] + [node.module or ""]).strip(".") if node.level else node.module or ""
      names = [f"{mod}.{a.name}" for a in node.names]
    elif isinstance(node, ast.Import): mod, names = "", [a.name for a in node.names]
    else: continue
    for n in names or [mod]:
      target = n if (pkg_dir / (n.replace(".", "/") + ".py")).exists() or (pkg_dir / n.replace(".", "/")).is_dir() else mod
      if target.startswith(package + ".") or target == package: out.add(target)
  return out - {here}

def import_cycles(package: str) -> list[list[str]]:
  """Cycles among the modules of a package (its __init__, which only re-exports, left out)."""
  src = ROOT / "packages" / FOLDERS[package.split(".")[1]] / "src"
  graph = {".".join(f.relative_to(src).with_suffix("").parts).removesuffix(".__init__"): module_imports(f, package)
           for f in (src / package.replace(".", "/")).rglob("*.py")}
  graph.pop(package)
  cycles = []
  for start in sorted(graph):
    stack = [(start, [start])]
    while stack:
      node, path = stack.pop()
      for nxt in sorted(graph.get(node, ()) - {package}):
        if nxt == start: cycles.append(path)
        elif nxt not in path and nxt > start: stack.append((nxt, path + [nxt]))
  return cycles

def test_codegen_imports_one_way():
  """Inside tg.codegen dependencies point one way (ranges <- opt/lower <- pipeline; renderers don't import devices; the beam
  search gets its timer from the pipeline; the thread pool and the CPU device share devices.clang): no import cycles."""
  assert not (cycles := import_cycles("tg.codegen")), "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)

def test_cycle_checker_sees_a_cycle(tmp_path, monkeypatch):
  pkg = tmp_path / "packages" / "codegen" / "src" / "tg" / "codegen"
  (pkg / "sub").mkdir(parents=True)
  (pkg / "__init__.py").write_text("from tg.codegen.a import x\n")
  (pkg / "a.py").write_text("def f():\n  from tg.codegen.sub.b import y\n")
  (pkg / "sub" / "__init__.py").write_text("")
  (pkg / "sub" / "b.py").write_text("from ..a import f\n")
  monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
  assert import_cycles("tg.codegen") == [["tg.codegen.a", "tg.codegen.sub.b"]]
