"""The disk cache never stops a program: corrupt, truncated, locked or unwritable files, a home that can't be written and
rows that don't load each warn (naming the path) and run uncached or recompute; its size stays under CACHEDB_MAX_MB by
dropping the least recently used rows; processes share one file."""
import os, pathlib, sqlite3, subprocess, sys, time
import pytest
from tg.codegen.device import Compiler
from tg.codegen.diskcache import CacheWarning, diskcache_get, diskcache_put

class CountingCompiler(Compiler):
  def __init__(self) -> None: self.calls = 0
  @property
  def cachekey(self) -> str: return "counting"
  def compile(self, src: str) -> bytes:
    self.calls += 1
    return src.encode()[::-1]

@pytest.fixture
def cachedb(tmp_path, monkeypatch) -> pathlib.Path:
  path = tmp_path / "cache.db"
  monkeypatch.setenv("CACHEDB", str(path))
  monkeypatch.delenv("DISABLE_COMPILER_CACHE", raising=False)
  return path

def compiles_twice_uncached() -> None:
  comp = CountingCompiler()
  assert comp.compile_cached("int x;") == comp.compile_cached("int x;") == b";x tni" and comp.calls == 2

def a_real_db(path: pathlib.Path) -> bytes:
  conn = sqlite3.connect(path)
  conn.execute("CREATE TABLE t (key TEXT, val BLOB)")
  conn.executemany("INSERT INTO t VALUES (?, ?)", [(str(i), os.urandom(300)) for i in range(400)])
  conn.commit()
  conn.close()
  return path.read_bytes()

@pytest.mark.parametrize("damage", ["3 bytes", "garbage", "truncated header", "truncated half"])
def test_corrupt_file_is_moved_aside_and_a_fresh_one_started(cachedb, damage: str):
  data = a_real_db(cachedb.with_name("real.db"))
  bad = {"3 bytes": b"SQL", "garbage": b"not a database " * 100, "truncated header": data[:100], "truncated half": data[:len(data) // 2]}[damage]
  cachedb.write_bytes(bad)
  comp = CountingCompiler()
  with pytest.warns(CacheWarning, match=rf"disk cache {cachedb}: .*(not a database|malformed).*moved to cache.db.corrupt, starting a fresh cache"):
    assert comp.compile_cached("int x;") == b";x tni"
  assert cachedb.with_name("cache.db.corrupt").read_bytes() == bad
  assert comp.compile_cached("int x;") == b";x tni" and comp.calls == 1, "the fresh file caches"

def test_locked_database_waits_a_bounded_time_then_runs_uncached(cachedb, monkeypatch):
  monkeypatch.setenv("CACHEDB_LOCK_MS", "300")
  diskcache_put("t", "k", 1)
  holder = sqlite3.connect(cachedb, isolation_level=None)
  holder.execute("BEGIN EXCLUSIVE")  # another process in the middle of a long write
  try:
    st = time.perf_counter()
    with pytest.warns(CacheWarning, match=rf"disk cache {cachedb}: database is locked: running uncached"):
      assert diskcache_get("t", "k") is None
    assert 0.25 < time.perf_counter() - st < 5
    st = time.perf_counter()
    compiles_twice_uncached()
    assert time.perf_counter() - st < 0.25, "once locked out, the process doesn't wait again"
  finally: holder.close()

@pytest.mark.parametrize("where", ["CACHEDB in /proc", "HOME in /proc", "HOME is a file"])
def test_unwritable_place_runs_uncached(tmp_path, monkeypatch, where: str):
  monkeypatch.delenv("DISABLE_COMPILER_CACHE", raising=False)
  monkeypatch.delenv("CACHEDB", raising=False)
  monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
  if where == "CACHEDB in /proc": monkeypatch.setenv("CACHEDB", path := "/proc/tg-cache.db")
  else:
    home = "/proc/tg-home" if where == "HOME in /proc" else str(tmp_path / "home-file")
    if where == "HOME is a file": pathlib.Path(home).write_text("")
    monkeypatch.setenv("HOME", home)
    path = f"{home}/.cache/tg/cache.db"
  with pytest.warns(CacheWarning, match=rf"disk cache {path}: .*running uncached"): compiles_twice_uncached()

def test_row_that_fails_to_load_is_recompiled(cachedb):
  comp = CountingCompiler()
  comp.compile_cached("int x;")
  conn = sqlite3.connect(cachedb)
  conn.execute("UPDATE compile_v1 SET val = ?", (b"\x80\x05garbage",))  # a damaged pickle
  conn.commit()
  assert comp.compile_cached("int x;") == b";x tni" and comp.calls == 2
  assert comp.compile_cached("int x;") == b";x tni" and comp.calls == 2, "the recompiled row replaced the damaged one"
  conn.close()

def test_many_sources_compile_at_once_each_to_its_own_binary(cachedb):
  """compile_cached_many: the cached ones come from the cache, the rest compile on threads at once (two or more at a
  time where there are two cores), each binary in its source's place."""
  import threading
  class Overlapping(CountingCompiler):
    active = most = 0
    lock = threading.Lock()
    def compile(self, src: str) -> bytes:
      with self.lock: self.active += 1; self.most = max(self.most, self.active)
      time.sleep(0.05)  # (long enough for the other threads to start theirs)
      with self.lock: self.active -= 1
      return super().compile(src)
  comp = Overlapping()
  comp.compile_cached("int a;")
  srcs = ["int a;", "int b;", "int c;", "int d;", "int e;"]
  assert comp.compile_cached_many(srcs) == [s.encode()[::-1] for s in srcs]
  assert comp.calls == 5, "int a; came from the cache"
  assert comp.most == min(4, os.cpu_count() or 1), "compiles at once: one per core"
  assert comp.compile_cached_many(srcs) == [s.encode()[::-1] for s in srcs] and comp.calls == 5  # all cached now

def test_table_from_before_last_use_times_is_replaced(cachedb):
  conn = sqlite3.connect(cachedb)
  conn.execute("CREATE TABLE beam (key TEXT PRIMARY KEY, val BLOB)")
  conn.execute("INSERT INTO beam VALUES ('k', x'8004')")
  conn.commit()
  conn.close()
  assert diskcache_get("beam", "k") is None
  assert diskcache_put("beam", "k", (1, 2)) == (1, 2) and diskcache_get("beam", "k") == (1, 2)

def test_size_bound_drops_least_recently_used(cachedb, monkeypatch):
  monkeypatch.setenv("CACHEDB_MAX_MB", "1")
  blob = bytes(300_000)
  for k in ("k0", "k1", "k2"): diskcache_put("t", k, blob)   # ~0.9 MB
  assert diskcache_get("t", "k0") == blob                      # k0 used again: k1 is now the least recently used
  diskcache_put("t", "k3", blob)                                # ~1.2 MB > 1 MB: drop until under 0.9 MB, i.e. k1 alone
  assert [k for k in ("k0", "k1", "k2", "k3") if diskcache_get("t", k) is not None] == ["k0", "k2", "k3"]
  conn = sqlite3.connect(cachedb)
  (pages,), (free,), (size,) = (conn.execute(f"PRAGMA {p}").fetchone() for p in ("page_count", "freelist_count", "page_size"))
  assert (pages - free) * size <= 1 << 20
  conn.close()
  diskcache_put("t", "huge", bytes(600_000))  # more than half the bound: not stored, nothing else pushed out
  assert diskcache_get("t", "huge") is None and diskcache_get("t", "k3") == blob

SHARER = """import sys, warnings
from tg.codegen.diskcache import CacheWarning, diskcache_get, diskcache_put
warnings.simplefilter("error", CacheWarning)
i = int(sys.argv[1])
for k in range(150):
  diskcache_put("own", f"{i}-{k}", (i, k) * 50)
  diskcache_put("shared", str(k % 10), k % 10)
  assert diskcache_get("own", f"{i}-{k}") == (i, k) * 50 and diskcache_get("shared", str(k % 10)) == k % 10
"""

def test_four_processes_share_one_cache(cachedb):
  procs = [subprocess.Popen([sys.executable, "-c", SHARER, str(i)], stderr=subprocess.PIPE, text=True) for i in range(4)]
  errs = [p.communicate(timeout=120)[1] for p in procs]
  assert [p.returncode for p in procs] == [0] * 4, errs
  assert all(diskcache_get("own", f"{i}-{k}") == (i, k) * 50 for i in range(4) for k in range(150))
  assert [diskcache_get("shared", str(k)) for k in range(10)] == list(range(10))

def test_an_error_that_isnt_the_files_fault_leaves_the_file_alone(cachedb):
  from tg.codegen import diskcache
  diskcache_put("t", "k", 1)
  diskcache._files[cachedb].conn.close()  # sqlite3.ProgrammingError on next use: a DatabaseError, but the file is fine
  with pytest.warns(CacheWarning, match=rf"disk cache {cachedb}: Cannot operate on a closed database.: running uncached"):
    assert diskcache_get("t", "k") is None
  assert not cachedb.with_name("cache.db.corrupt").exists() and sqlite3.connect(cachedb).execute("SELECT count(*) FROM t").fetchone() == (1,)
