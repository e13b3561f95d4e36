"""The disk cache: compiled binaries, BEAM choices and emulator shapes in one sqlite file (CACHEDB), shared by processes.

It only saves time, so no fault of it may stop a program. A file that isn't a database (corrupt, truncated) is moved
aside to NAME.corrupt and a fresh one started; a folder or file that can't be written, a home that can't be found, or a
database another process keeps locked for longer than CACHEDB_LOCK_MS (default 10 s) means running uncached from then on;
a row that doesn't unpickle is dropped and recomputed. Each warns once per file (CacheWarning, naming the path). Rows carry
their last use; once the file holds more than CACHEDB_MAX_MB (default 1024) the least recently used go, down to 90%."""
from __future__ import annotations
import atexit, contextlib, os, pathlib, pickle, sqlite3, threading, time, warnings
from typing import Any, Callable, Iterator, TypeVar
from tg.uop import getenv, cache_db_path

T = TypeVar("T")

class CacheWarning(UserWarning):
  """The disk cache can't be used as it is: the program goes on, uncached or with a fresh file."""

def max_bytes() -> int: return getenv("CACHEDB_MAX_MB", 1024, lo=1) << 20

@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
  """One write transaction (one journal sync), taking the write lock at its start so it can't deadlock with another writer."""
  conn.execute("BEGIN IMMEDIATE")
  try: yield
  except BaseException:
    with contextlib.suppress(sqlite3.Error): conn.execute("ROLLBACK")
    raise
  conn.execute("COMMIT")

class CacheFile:
  """One cache file, opened once per process. `conn` is None until opened and after a fault turned the cache off."""
  def __init__(self, path: pathlib.Path):
    self.path, self.conn, self.off = path, None, False
    self.tables: set[str] = set()
    self.touched: dict[tuple[str, str], float] = {}  # last uses not written yet: they go with the next write
    self.warned: set[str] = set()

  def warn(self, kind: str, msg: str) -> None:
    if kind not in self.warned:
      self.warned.add(kind)
      warnings.warn(f"disk cache {self.path}: {msg}", CacheWarning, stacklevel=5)

  def connect(self) -> sqlite3.Connection:
    if self.conn is None:
      self.path.parent.mkdir(parents=True, exist_ok=True)
      self.conn = sqlite3.connect(self.path, timeout=getenv("CACHEDB_LOCK_MS", 10000, lo=0) / 1000, isolation_level=None,
                                  check_same_thread=False)
      self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # reads the header: a file that isn't a database fails here
      self.conn.execute("PRAGMA synchronous=OFF")  # no fsync per write: a crash of the OS may cost the cache, never the program
    return self.conn

  def close(self) -> None:
    if self.conn is not None: self.conn.close()
    self.conn, self.tables = None, set()

  def run(self, fn: Callable[[sqlite3.Connection], T]) -> T | None:
    """fn(connection), or None once the cache is off. A file that isn't a database is replaced by a fresh one and fn tried again."""
    for fresh in (False, True):
      if self.off: return None
      try: return fn(self.connect())
      except sqlite3.OperationalError as e:  # locked past the timeout, read-only, can't create the file or its journal, disk full
        self.turn_off("locked" if "locked" in str(e) else "unwritable", f"{e}: running uncached")
      except sqlite3.DatabaseError as e:
        if getattr(e, "sqlite_errorname", None) not in ("SQLITE_NOTADB", "SQLITE_CORRUPT"): self.turn_off("error", f"{e}: running uncached")
        elif fresh: self.turn_off("corrupt", f"{e}, even after starting a fresh file: running uncached")
        else: self.move_aside(e)  # corrupt or truncated: "file is not a database", "database disk image is malformed"
      except OSError as e:                   # the folder can't be made (unwritable home, a file in the way)
        self.turn_off("unwritable", f"can't create {self.path.parent} ({e.strerror or e}): running uncached")
    return None

  def turn_off(self, kind: str, msg: str) -> None:
    self.close()
    self.off = True
    self.warn(kind, msg)

  def move_aside(self, err: sqlite3.DatabaseError) -> None:
    self.close()
    aside = self.path.with_name(self.path.name + ".corrupt")
    try:
      os.replace(self.path, aside)
      for side in ("-journal", "-wal", "-shm"): self.path.with_name(self.path.name + side).unlink(missing_ok=True)
    except OSError as e: return self.turn_off("corrupt", f"{err}, and it can't be moved aside ({e.strerror or e}): running uncached")
    self.warn("corrupt", f"{err}: moved to {aside.name}, starting a fresh cache")

  def table(self, conn: sqlite3.Connection, table: str) -> sqlite3.Connection:
    """`conn` with `table` there (key, val, atime); a table from before last-use times is dropped (it is only a cache)."""
    if table not in self.tables:
      if not table.isidentifier(): raise ValueError(f"bad cache table name {table!r}")
      if "atime" not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}:
        with _transaction(conn):
          if "atime" not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}:  # another process may have made it
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(f"CREATE TABLE {table} (key TEXT PRIMARY KEY, val BLOB, atime REAL NOT NULL)")
      self.tables.add(table)
    return conn

  def get(self, table: str, key: str) -> Any:
    def read(conn: sqlite3.Connection) -> tuple[bytes] | None:
      return self.table(conn, table).execute(f"SELECT val FROM {table} WHERE key=?", (key,)).fetchone()
    if (row := self.run(read)) is None: return None
    try: val = pickle.loads(row[0])
    except Exception:  # noqa: BLE001 -- a damaged or outdated row raises whatever unpickling hits; it is recomputed
      self.run(lambda conn: conn.execute(f"DELETE FROM {table} WHERE key=?", (key,)))
      return None
    self.touched[(table, key)] = time.time()
    return val

  def put(self, table: str, key: str, blob: bytes) -> None:
    if len(blob) > (limit := max_bytes()) // 2: return  # it would push out everything else
    def write(conn: sqlite3.Connection) -> None:
      self.table(conn, table)
      with _transaction(conn):
        conn.execute(f"INSERT OR REPLACE INTO {table} (key, val, atime) VALUES (?, ?, ?)", (key, blob, time.time()))
        self.write_touched(conn)
        if (used := self.used_bytes(conn)) > limit: self.trim(conn, used - limit * 9 // 10)
    self.run(write)

  def write_touched(self, conn: sqlite3.Connection) -> None:
    for (table, key), t in self.touched.items():
      if table in self.tables: conn.execute(f"UPDATE {table} SET atime=max(atime, ?) WHERE key=?", (t, key))
    self.touched.clear()

  def flush(self) -> None:
    """Write the last uses noted since the last write (at exit: a process that only read still marks what it used)."""
    if self.touched and not self.off and self.conn is not None:
      def write(conn: sqlite3.Connection) -> None:
        with _transaction(conn): self.write_touched(conn)
      self.run(write)

  @staticmethod
  def used_bytes(conn: sqlite3.Connection) -> int:
    (pages,), (free,), (size,) = (conn.execute(f"PRAGMA {p}").fetchone() for p in ("page_count", "freelist_count", "page_size"))
    return (pages - free) * size

  @staticmethod
  def trim(conn: sqlite3.Connection, excess: int) -> None:
    """Delete the least recently used rows of every table until their values add up to `excess` bytes (freed pages are reused)."""
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    rows = sorted((atime, size, t, key) for t in tables for key, size, atime in conn.execute(f"SELECT key, length(val), atime FROM {t}"))
    for _, size, t, key in rows:
      if excess <= 0: break
      conn.execute(f"DELETE FROM {t} WHERE key=?", (key,))
      excess -= size + len(key)

_files: dict[pathlib.Path, CacheFile] = {}
_lock = threading.Lock()  # one connection per file per process, shared by threads (e.g. the emulator's background saves)

def _file() -> CacheFile | None:
  try: path = cache_db_path()
  except RuntimeError as e:  # pathlib can't find a home (no HOME, no passwd entry)
    warnings.warn(f"disk cache: no CACHEDB and {e}: running uncached", CacheWarning, stacklevel=4)
    return None
  if (f := _files.get(path)) is None: f = _files[path] = CacheFile(path)
  return f

def diskcache_get(table: str, key: str) -> Any:
  """The value stored under `key` in `table` of the cache db, None if absent or the cache can't be read."""
  with _lock: return f.get(table, key) if (f := _file()) is not None else None

def diskcache_put(table: str, key: str, value: Any) -> Any:
  """Store `value` under `key` in `table` (nothing when the cache can't be written); returns `value`."""
  blob = pickle.dumps(value)
  with _lock:
    if (f := _file()) is not None: f.put(table, key, blob)
  return value

@atexit.register
def _flush_all() -> None:
  with _lock:
    for f in _files.values(): f.flush()
