"""Tier 1's compiled shapes: every shape's C function behind one entry signature (`ShapeCode.entry`), compiled once and
shared by every program in the process and, through the disk cache, by every later process.

The shapes a new program brings that no library holds yet are compiled together, one compiler run for all of them; the
library goes to the disk cache with the names it holds, and each shape notes which library has it, so a later process
loads the libraries its programs need and runs no compiler at all."""
from __future__ import annotations
import hashlib
import pickle
import threading
from tg.codegen import CLibrary, compile_c, c_compiler_id, diskcache_get, diskcache_put
from .shape_c import ShapeCode, _version

OPT_LEVEL = 2  # shapes are small and shared by every program: worth the optimizer
_entries: dict[str, int] = {}  # shape name -> address of its NAME_i entry in a loaded library
_libs: dict[str, CLibrary] = {}  # library key -> the loaded library (kept alive: the addresses point into it)
_lock = threading.Lock()

def _shape_key(name: str) -> str: return f"{_version()}:{hashlib.sha256(c_compiler_id(OPT_LEVEL).encode()).hexdigest()[:16]}:{name}"

def entries(shapes: list[ShapeCode]) -> dict[str, int]:
  """The entry address of each shape: from this process, a library in the disk cache, or one compiler run now."""
  with _lock:
    missing = {sc.name: sc for sc in shapes if sc.name not in _entries}
    for name in list(missing):
      if name in _entries: continue  # a library loaded for an earlier name held this one too
      if (libkey := diskcache_get("amd_emu_shape_in_lib_v1", _shape_key(name))) is not None: _load(libkey)
    if todo := [sc for name, sc in missing.items() if name not in _entries]: _build(todo)
    return {sc.name: _entries[sc.name] for sc in shapes}

def _load(libkey: str) -> None:
  """Load a library from the disk cache (a row that is gone or damaged is simply not there: the shapes are built again)."""
  if libkey in _libs or (row := diskcache_get("amd_emu_shape_libs_v1", libkey)) is None: return
  names, lib = row
  _register(libkey, names, CLibrary(lib))

def _register(libkey: str, names: tuple[str, ...], lib: CLibrary) -> None:
  _libs[libkey] = lib
  for n in names: _entries[n] = lib.address(f"{n}_i")

def _build(shapes: list[ShapeCode]) -> None:
  prelude = dict.fromkeys(p for sc in shapes for p in sc.prelude)
  src = "\n".join([*prelude, *(sc.src for sc in shapes), *(sc.entry() for sc in shapes)])
  lib = compile_c(src, OPT_LEVEL, cache=False)  # kept below, with the names it holds
  names = tuple(sc.name for sc in shapes)
  libkey = hashlib.sha256(pickle.dumps((_version(), c_compiler_id(OPT_LEVEL), src))).hexdigest()
  _register(libkey, names, CLibrary(lib))
  diskcache_put("amd_emu_shape_libs_v1", libkey, (names, lib))
  for n in names: diskcache_put("amd_emu_shape_in_lib_v1", _shape_key(n), libkey)
