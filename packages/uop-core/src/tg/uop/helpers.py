"""Small shared helpers: environment flags, Context variables, Timing and a few sequence utilities."""
from __future__ import annotations
import contextlib, math, os, pathlib, time
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

T = TypeVar("T")

class EnvError(ValueError):
  """An environment switch holds a value tg can't use; the message names the variable and the values it accepts."""

def getenv(key: str, default: Any = 0, lo: int | None = None, hi: int | None = None) -> Any:
  """The switch `key` read as the type of `default`: a str as is; an int checked against [lo, hi]; a bool as 0 or 1.
  Unset or empty is `default`. A bad value raises EnvError at the read, so a typo never becomes a silent 0 or a crash
  deep inside a kernel (CPU_THREADS=0 used to divide by zero in C)."""
  raw = os.environ.get(key, "").strip()
  if raw == "" or isinstance(default, str): return raw or default
  if isinstance(default, bool): lo, hi = 0, 1
  accepted = "0 or 1" if isinstance(default, bool) else ("an integer" + (f" >= {lo}" if lo is not None else "") +
                                                       (f" <= {hi}" if hi is not None else ""))
  try: val = int(raw)
  except ValueError: raise EnvError(f"{key}={raw!r} is not valid: {key} takes {accepted}") from None
  if (lo is not None and val < lo) or (hi is not None and val > hi): raise EnvError(f"{key}={raw!r} is out of range: {key} takes {accepted}")
  return bool(val) if isinstance(default, bool) else val

def cache_db_path() -> pathlib.Path:
  """CACHEDB, else <XDG_CACHE_HOME or ~/.cache>/tg/cache.db (read each time so tests and subprocesses can move it); VIZ
  saves its trace beside it."""
  if p := os.environ.get("CACHEDB"): return pathlib.Path(p)
  return pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "tg" / "cache.db"

_ONE = 1  # the small-int singleton: prod's `is` test of it is one pointer compare
def prod(xs: Iterable[Any], start: Any = 1) -> Any:
  """The product of xs times start; a factor of 1 in front isn't multiplied in, so symbolic sizes read (i*3), not ((1*i)*3)."""
  out = start
  for x in xs: out = x if out is _ONE else out * x
  return out
def dedup(xs: Iterable[T]) -> list[T]: return list(dict.fromkeys(xs))
def flatten(xss: Iterable[Iterable[T]]) -> list[T]: return [x for xs in xss for x in xs]
def all_same(xs: Sequence[Any]) -> bool: return all(x == xs[0] for x in xs)
def all_int(xs: Iterable[Any]) -> bool: return all(isinstance(x, int) for x in xs)
def cdiv(a: int, b: int) -> int: return -(-a // b) if b != 0 else 0
def argsort(xs: Sequence[Any]) -> list[int]: return sorted(range(len(xs)), key=xs.__getitem__)
def round_up(n: int, m: int) -> int: return cdiv(n, m) * m
def is_pow2(n: int) -> bool: return n > 0 and n & (n - 1) == 0
def ceillog2(n: int) -> int: return max(0, math.ceil(math.log2(n))) if n > 0 else 0

class ContextVar:
  """A named integer setting, initialised from the environment (checked against [lo, hi]) and changed for a block with `Context`."""
  registry: dict[str, ContextVar] = {}
  def __init__(self, key: str, default: int, lo: int | None = 0, hi: int | None = None):
    self.key, self.value = key, getenv(key, default, lo, hi)
    ContextVar.registry[key] = self
  def __bool__(self) -> bool: return bool(self.value)
  def __int__(self) -> int: return int(self.value)
  def __ge__(self, x: int) -> bool: return self.value >= x
  def __gt__(self, x: int) -> bool: return self.value > x
  def __lt__(self, x: int) -> bool: return self.value < x
  def __le__(self, x: int) -> bool: return self.value <= x
  def __eq__(self, x: object) -> bool: return self.value == x
  def __hash__(self) -> int: return hash(self.key)
  def __repr__(self) -> str: return f"ContextVar({self.key}={self.value})"

@contextlib.contextmanager
def Context(**kwargs: int) -> Iterator[None]:
  """`with Context(DEBUG=2, SPEC=1): ...` sets ContextVars for the block and restores them after."""
  unknown = [k for k in kwargs if k not in ContextVar.registry]
  if unknown: raise KeyError(f"unknown context variable(s) {unknown}; known: {sorted(ContextVar.registry)}")
  old = {k: ContextVar.registry[k].value for k in kwargs}
  for k, v in kwargs.items(): ContextVar.registry[k].value = v
  try: yield
  finally:
    for k, v in old.items(): ContextVar.registry[k].value = v

DEBUG, SPEC = ContextVar("DEBUG", 0), ContextVar("SPEC", 0)
# tinygrad's switches that change nothing tg computes, accepted so that Context(...) written for tinygrad runs: WINO asks
# for Winograd convolutions (tg's are direct: the same values, to rounding), IGNORE_OOB skips a static proof that every
# index is in bounds (tg has none to skip; CHECK_OOB=1 checks at run time)
WINO, IGNORE_OOB = ContextVar("WINO", 0), ContextVar("IGNORE_OOB", 0)

class Timing(contextlib.ContextDecorator):
  """`with Timing("step "):` (or as a decorator) prints the block's wall time, "step  12.34 ms", as tinygrad's Timing;
  on_exit(ns) returns text to append. The time stays in .elapsed_ns."""
  def __init__(self, prefix: str = "", on_exit: Callable[[int], str] | None = None, enabled: bool = True):
    self.prefix, self.on_exit, self.enabled, self.elapsed_ns = prefix, on_exit, enabled, 0
  def __enter__(self) -> Timing:
    self.start = time.perf_counter_ns()
    return self
  def __exit__(self, *exc: Any) -> None:
    self.elapsed_ns = time.perf_counter_ns() - self.start
    if self.enabled: print(f"{self.prefix}{self.elapsed_ns * 1e-6:6.2f} ms" + (self.on_exit(self.elapsed_ns) if self.on_exit else ""))
