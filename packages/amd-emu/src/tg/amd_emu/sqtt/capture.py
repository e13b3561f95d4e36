"""SQTT captures on disk: a folder with meta.json, blob_<i>.bin and the code objects (the layout of
shared/amd/sqtt/captures), or one raw blob with its code object."""
from __future__ import annotations
import json
import pathlib
from dataclasses import dataclass
from ..codeobj import CodeObject, read as read_codeobj

GFX_ARCH = {"gfx11": "rdna3", "gfx12": "rdna4"}

@dataclass
class Blob:
  """One SE's stream of one kernel launch, with the code object that ran and where it was loaded."""
  name: str
  data: bytes
  arch: str
  se: int
  code: CodeObject | None
  base: int = 0
  itrace: bool = True

def arch_of(target: str) -> str:
  for prefix, arch in GFX_ARCH.items():
    if target.startswith(prefix): return arch
  raise ValueError(f"target {target!r}: SQTT decoding knows gfx11 (rdna3) and gfx12 (rdna4) streams")

def load(path: str | pathlib.Path, code_object: str | pathlib.Path | None = None, arch: str | None = None) -> list[Blob]:
  """The blobs of a capture folder, or a single blob file (its code object from `code_object`, the arch from that
  code object unless given)."""
  path = pathlib.Path(path)
  if path.is_dir():
    meta = json.loads((path / "meta.json").read_text())
    cos: dict[str, CodeObject] = {}
    out = []
    for b in meta["blobs"]:
      name = b["code_object"]
      if name not in cos: cos[name] = read_codeobj((path / name).read_bytes())
      out.append(Blob(b["file"], (path / b["file"]).read_bytes(), arch or arch_of(meta["target"]), b["se"], cos[name], b["load_base"], b["itrace"]))
    return out
  co = read_codeobj(pathlib.Path(code_object).read_bytes()) if code_object else None
  if arch is None and co is None: raise ValueError(f"{path}: a single blob needs --code-object (or --arch) to say its arch")
  return [Blob(path.name, path.read_bytes(), arch or (co.arch if co else "rdna3"), 0, co)]
