"""Downloads, kept in a cache beside the compile cache so a second run reads the file (tinygrad's helpers.fetch):
Tensor.from_url is a tensor of one."""
from __future__ import annotations
import gzip, hashlib, os, pathlib, shutil, tempfile, urllib.request
from tg.uop.helpers import cache_db_path

def fetch(url: str, name: str | os.PathLike | None = None, subdir: str | None = None, gunzip: bool = False,
          allow_caching: bool = True, timeout: float = 60) -> pathlib.Path:
  """The path of url's bytes (gunzipped with gunzip=True), downloaded once into <cache>/downloads (or to `name`, a path).
  A local path is itself. A download is written to a temporary file and renamed, so a broken one leaves no file."""
  if url.startswith(("/", ".")): return pathlib.Path(url)
  if name is not None and (isinstance(name, os.PathLike) or "/" in name): path = pathlib.Path(name)
  else:
    folder = cache_db_path().parent / "downloads" / (subdir or "")
    path = folder / (name or hashlib.md5(f"{url}{gunzip}".encode()).hexdigest())
  if path.is_file() and allow_caching: return path
  path.parent.mkdir(parents=True, exist_ok=True)
  try: response = urllib.request.urlopen(url, timeout=timeout)  # (an HTTP error status raises here too)
  except OSError as e: raise ConnectionError(f"fetch {url}: {e}") from e
  tmp = tempfile.NamedTemporaryFile(dir=path.parent, delete=False)
  try:
    with response, tmp: shutil.copyfileobj(gzip.GzipFile(fileobj=response) if gunzip else response, tmp)
    pathlib.Path(tmp.name).replace(path)
  except BaseException:
    pathlib.Path(tmp.name).unlink(missing_ok=True)
    raise
  return path
