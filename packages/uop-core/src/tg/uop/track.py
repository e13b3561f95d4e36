"""VIZ: what graph_rewrite did, recorded for the viewer (`tg.uop.viz`).

With VIZ=1 (or -1) every graph_rewrite records its input graph, each match (the pattern's function and where it is
written, the node before and what it became) and its result, into the innermost `group` open at the time (a schedule,
a kernel's lowering), or else into a group named after the rewrite (simplify, substitute, ...). At exit the trace is
saved next to the compile cache (VIZ_PATH overrides the file) as plain data: a table of nodes that graphs refer to by
number, so the viewer needs no UOp and a deep graph pickles without recursion. VIZ=1 then serves it in a browser,
VIZ=-1 only saves it. With VIZ off the cost is one branch per graph_rewrite."""
from __future__ import annotations
import atexit, contextlib, linecache, os, pathlib, pickle, sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator
from tg.uop.helpers import ContextVar, cache_db_path
from tg.uop.uop import UOp

if TYPE_CHECKING:
  from tg.uop.rewrite import PatternMatcher

VIZ = ContextVar("VIZ", 0, lo=-1, hi=1)
TRACE_VERSION = 1

@dataclass
class Rewrite:
  """One graph_rewrite: its name, who called it (file:line), its input, its matches (before, after, pattern's function)
  in the order they fired, and its output (None while it runs)."""
  name: str
  loc: str
  input: UOp
  matches: list[tuple[UOp, UOp, Callable | tuple[str, str]]] = field(default_factory=list)  # (a `record`: (loc, name))
  output: UOp | None = None
  bottom_up: bool = False

@dataclass
class Group:
  """What one caller did: kind is "schedule", "kernel" or "rewrite" (rewrites outside any other group, by name); info
  holds what the caller adds (a kernel's source, its device)."""
  kind: str
  name: str
  rewrites: list[Rewrite] = field(default_factory=list)
  info: dict[str, Any] = field(default_factory=dict)

groups: list[Group] = []
_open: list[Group] = []
_by_name: dict[str, Group] = {}
# producers of extra trace sections (tg.codegen adds the launch timeline): name -> a function returning plain data
sections: dict[str, Callable[[], Any]] = {}

def reset() -> None:
  """Forget what was recorded."""
  groups.clear()
  _by_name.clear()

@contextlib.contextmanager
def group(kind: str, name: str) -> Iterator[Group | None]:
  """Rewrites inside the block go to a new group (yielded so the caller can rename it or add info); None with VIZ off."""
  if not VIZ.value:
    yield None
    return
  g = Group(kind, name)
  groups.append(g)
  _open.append(g)
  try: yield g
  finally: _open.pop()

def _current(name: str) -> Group:
  if _open: return _open[-1]
  if (g := _by_name.get(name)) is None:
    g = _by_name[name] = Group("rewrite", name)
    groups.append(g)
  return g

_SKIP = tuple(str(pathlib.Path(__file__).with_name(f)) for f in ("rewrite.py", "track.py", "uop.py"))
def _caller() -> str:
  """file:line of the first frame outside graph_rewrite's own modules."""
  f = sys._getframe(2)
  while f.f_back is not None and f.f_code.co_filename in _SKIP: f = f.f_back
  return f"{_short(f.f_code.co_filename)}:{f.f_lineno}"

def _short(path: str) -> str:
  """A path from its package folder (tg/...) on, or as given."""
  parts = pathlib.Path(path).parts
  return "/".join(parts[parts.index("tg"):]) if "tg" in parts else path

def record(name: str, input: UOp, output: UOp) -> None:
  """A step that isn't a graph_rewrite (the scheduler building a kernel): input to output as one match, whose "pattern"
  is the caller."""
  if VIZ.value:
    loc = _caller()
    _current(name).rewrites.append(Rewrite(name, loc, input, [(input, output, (loc, name))], output))

def traced(root: UOp, pm: PatternMatcher, ctx: Any, bottom_up: bool, name: str | None,
           walk: Callable[[UOp, Callable, Any, bool, str | None], dict[UOp, UOp]]) -> dict[UOp, UOp]:
  """graph_rewrite's walk with a rewriter that records each match (the interpreted matcher: it knows which pattern fired)."""
  rw = Rewrite(name or "rewrite", _caller(), root, bottom_up=bottom_up)
  _current(rw.name).rewrites.append(rw)
  first_match = pm.first_match
  def rewrite(u: UOp, ctx: Any) -> UOp | None:
    if (m := first_match(u, ctx)) is None: return None
    rw.matches.append((u, m[0], m[1]))
    return m[0]
  done = walk(root, rewrite, ctx, bottom_up, name)
  rw.output = done[root]
  return done

# ***** saving: plain data *****

class NodeTable:
  """Nodes as (op, dtype, arg text, source numbers), each once: a node is its number in `nodes`. The viewer builds new
  graphs through the same table, so a node rebuilt from the same parts gets the same number."""
  def __init__(self, nodes: list[tuple[str, str, str, tuple[int, ...]]] | None = None):
    self.nodes = nodes if nodes is not None else []
    self.index = {n: i for i, n in enumerate(self.nodes)}
  def intern(self, op: str, dtype: str, arg: str, src: tuple[int, ...]) -> int:
    if (i := self.index.get(k := (op, dtype, arg, src))) is None:
      i = self.index[k] = len(self.nodes)
      self.nodes.append(k)
    return i

def _arg_text(arg: Any) -> str:
  t = repr(arg) if not isinstance(arg, str) else arg
  return t if len(t) <= 200 else t[:197] + "..."

class _Flattener:
  def __init__(self) -> None:
    self.table, self.ids = NodeTable(), dict[UOp, int]()
  def __call__(self, root: UOp) -> int:
    """root's number, numbering every node under it first (iteratively)."""
    ids = self.ids
    stack = [(root, False)]
    while stack:  # down to the nodes numbered already: each node is visited once over the whole trace
      u, expanded = stack.pop()
      if u in ids: continue
      if expanded: ids[u] = self.table.intern(u.op.name, str(u.dtype), _arg_text(u.arg), tuple(ids[s] for s in u.src))
      else:
        stack.append((u, True))
        stack.extend((s, False) for s in reversed(u.src) if s not in ids)
    return ids[root]

def _pattern(fxn: Callable | tuple[str, str], cache: dict[Callable, tuple[str, str]]) -> tuple[str, str]:
  """(file:line, the source line) of a pattern's function: where the pattern is written."""
  if isinstance(fxn, tuple): return fxn
  if (p := cache.get(fxn)) is None:
    code = getattr(fxn, "__code__", None)
    if code is None: p = (repr(fxn), repr(fxn))
    else: p = (f"{_short(code.co_filename)}:{code.co_firstlineno}", linecache.getline(code.co_filename, code.co_firstlineno).strip())
    cache[fxn] = p
  return p

def to_data(gs: list[Group] | None = None) -> dict[str, Any]:
  """The trace as plain data: {"version", "nodes", "groups": [{kind, name, info, rewrites: [{name, loc, input, output,
  bottom_up, matches: [(before, after, pattern number)]}]}], "patterns": [(loc, text)], and each of `sections`}."""
  flat, pats, pat_ids = _Flattener(), dict[Callable, tuple[str, str]](), dict[tuple[str, str], int]()
  def pattern_id(fxn: Callable | tuple[str, str]) -> int: return pat_ids.setdefault(_pattern(fxn, pats), len(pat_ids))
  out_groups = []
  for g in (groups if gs is None else gs):
    rws = [{"name": r.name, "loc": r.loc, "bottom_up": r.bottom_up, "input": flat(r.input),
            "output": flat(r.output if r.output is not None else r.input),
            "matches": [(flat(b), flat(a), pattern_id(f)) for b, a, f in r.matches]} for r in g.rewrites]
    out_groups.append({"kind": g.kind, "name": g.name, "info": dict(g.info), "rewrites": rws})
  return {"version": TRACE_VERSION, "nodes": flat.table.nodes, "groups": out_groups, "patterns": list(pat_ids),
          **{k: f() for k, f in sections.items()}}

def trace_path() -> pathlib.Path:
  """VIZ_PATH, else viz.pkl beside the compile cache."""
  if p := os.environ.get("VIZ_PATH"): return pathlib.Path(p)
  return cache_db_path().with_name("viz.pkl")

def save(path: pathlib.Path | None = None) -> pathlib.Path:
  """Write the trace (see to_data) to `path` (default trace_path()); returns where."""
  path = path or trace_path()
  path.parent.mkdir(parents=True, exist_ok=True)
  data = to_data()
  with open(path, "wb") as f: pickle.dump(data, f, protocol=pickle.HIGHEST_PROTOCOL)
  return path

def _at_exit() -> None:
  if not (mode := VIZ.value) or not groups: return
  VIZ.value = 0  # the viewer's own rewrites are not part of the trace
  path = save()
  print(f"VIZ: saved {len(groups)} groups to {path}")
  if mode > 0:
    from tg.uop.viz import serve_forever
    serve_forever(path)

atexit.register(_at_exit)
