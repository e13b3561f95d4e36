"""A saved VIZ trace, read for the viewer: the graph after each match of a rewrite, a graph as nodes for drawing, and
the diff of a step. Works on the plain data tg.uop.track saves (no UOps): the graph after match k is the graph after
match k-1 with the match's node replaced by what it became, rebuilt through the trace's node table."""
from __future__ import annotations
import difflib, pathlib, pickle
from typing import Any
from tg.uop.track import TRACE_VERSION, NodeTable

MAX_NODES = 2000  # a bigger graph is drawn from its root down to this many nodes (dagre lays out ~2k nodes in a second)
MAX_DIFF_LINES = 4000

class TraceError(ValueError):
  """A file that isn't a VIZ trace this version of tg can read, or a group/rewrite/step that isn't in it."""

def load(path: str | pathlib.Path) -> dict[str, Any]:
  """The trace saved at `path` (by VIZ=1 or VIZ=-1)."""
  try:
    with open(path, "rb") as f: data = pickle.load(f)
  except FileNotFoundError: raise TraceError(f"no VIZ trace at {path}: run the program with VIZ=-1 (save) or VIZ=1 (save and serve)") from None
  except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError) as e:
    raise TraceError(f"{path} is not a VIZ trace ({type(e).__name__}: {e})") from None
  if not isinstance(data, dict) or data.get("version") != TRACE_VERSION:
    found = data.get("version") if isinstance(data, dict) else type(data).__name__
    raise TraceError(f"{path} is not a VIZ trace of version {TRACE_VERSION} (found {found!r}): record it again with this tg")
  return data

class Trace:
  def __init__(self, data: dict[str, Any]):
    self.data, self.table = data, NodeTable(data["nodes"])
    self._roots: dict[tuple[int, int], dict[int, int]] = {}  # (group, rewrite) -> {k: the root after k matches}, as asked

  def rewrite(self, g: int, r: int) -> dict[str, Any]:
    groups = self.data["groups"]
    if not 0 <= g < len(groups): raise TraceError(f"no group {g}: the trace has {len(groups)}")
    rws = groups[g]["rewrites"]
    if not 0 <= r < len(rws): raise TraceError(f"no rewrite {r} in group {g}: it has {len(rws)}")
    return rws[r]

  def toposort(self, root: int) -> list[int]:
    """The nodes under root, each after its sources (iterative)."""
    nodes, seen, out = self.table.nodes, set(), []
    stack = [(root, False)]
    while stack:
      n, expanded = stack.pop()
      if expanded: out.append(n); continue
      if n in seen: continue
      seen.add(n)
      stack.append((n, True))
      stack.extend((s, False) for s in reversed(nodes[n][3]) if s not in seen)
    return out

  def substitute(self, root: int, mapping: dict[int, int], bottom_up: bool = False) -> int:
    """root's graph with the nodes above a replaced node rebuilt, and each node that is (or was rebuilt into) a key of
    `mapping` replaced by its value, itself substituted the same way: graph_rewrite's walk with `mapping` for patterns,
    in its order (bottom_up: a node is looked up before its sources)."""
    nodes, out, targets = self.table.nodes, dict[int, int](), set[int]()
    stack: list[tuple[int, int]] = [(root, -1)]  # (node, -1): visit it; (node, t): it becomes what t becomes
    def becomes(n: int, m: int) -> bool:
      """n becomes what mapping[m] becomes: True when that is scheduled or known."""
      if (t := mapping.get(m, -1)) < 0 or (t not in out and t in targets): return False  # (a target met again while resolving: a loop)
      if t in out: out[n] = out[t]
      else:
        targets.add(t)
        stack.append((n, t))
        stack.append((t, -1))
      return True
    while stack:
      n, t = stack.pop()
      if t >= 0: out[n] = out[t]; continue
      if n in out or (bottom_up and becomes(n, n)): continue
      op, dtype, arg, src = nodes[n]
      if any(s not in out for s in src):  # sources first (a DAG: they are done when n comes up again)
        stack.append((n, -1))
        stack.extend((s, -1) for s in src if s not in out)
        continue
      ns = tuple(out[s] for s in src)
      m = n if ns == src else self.table.intern(op, dtype, arg, ns)
      if not becomes(n, m): out[n] = m
    return out[root]

  def root_at(self, g: int, r: int, k: int) -> int:
    """The graph of rewrite r of group g after its first k matches (k=0: its input): the input with every node matched so
    far replaced by what it became, wherever it appears (also once its sources were rewritten), and what it became
    rewritten the same way, as graph_rewrite does (a node it already rewrote stands for its result). One pass over the
    graph, whatever k."""
    rw = self.rewrite(g, r)
    if not 0 <= k <= len(rw["matches"]): raise TraceError(f"no step {k} in rewrite {r} of group {g}: it has {len(rw['matches'])} matches")
    roots = self._roots.setdefault((g, r), {0: rw["input"]})
    if k not in roots: roots[k] = self.substitute(rw["input"], {b: a for b, a, _ in rw["matches"][:k]}, rw["bottom_up"])
    return roots[k]

  def graph(self, root: int) -> dict[str, Any]:
    """root's graph for drawing: nodes (id, op, dtype, arg, src ids) in order, the root last; at most MAX_NODES, the
    ones nearest the root first (`hidden` counts the rest)."""
    order = self.toposort(root)
    keep = order[-MAX_NODES:]
    return {"nodes": [self._node(n) for n in keep], "hidden": len(order) - len(keep), "root": root}

  def _node(self, n: int) -> dict[str, Any]:
    op, dtype, arg, src = self.table.nodes[n]
    return {"id": n, "op": op, "dtype": dtype, "arg": arg, "src": list(src)}

  def text(self, root: int) -> list[str]:
    """root's graph as lines `n7 = ADD dtypes.int (n3, n5) arg`: a node keeps its number in every step, so a diff of
    two steps shows only what changed."""
    lines = []
    for n in self.toposort(root):
      op, dtype, arg, src = self.table.nodes[n]
      lines.append(f"n{n} = {op} {dtype} ({', '.join(f'n{s}' for s in src)}){' ' + arg if arg != 'None' else ''}")
    return lines

  def step(self, g: int, r: int, k: int) -> dict[str, Any]:
    """Step k of rewrite r of group g: the graph after k matches, the nodes match k made, and a diff (match k's node
    before and after; step 0: the rewrite's input and output)."""
    rw = self.rewrite(g, r)
    root = self.root_at(g, r, k)
    if k == 0: a, b, pattern, changed = rw["input"], rw["output"], None, []
    else:
      a, b, pid = rw["matches"][k - 1]
      pattern = self.data["patterns"][pid]
      prev = set(self.toposort(self.root_at(g, r, k - 1)))
      changed = [n for n in self.toposort(root) if n not in prev]
    diff = list(difflib.unified_diff(self.text(a), self.text(b), "before", "after", lineterm="", n=2))
    if len(diff) > MAX_DIFF_LINES: diff = diff[:MAX_DIFF_LINES] + [f"... {len(diff) - MAX_DIFF_LINES} more lines"]
    return {"graph": self.graph(root), "changed": changed, "diff": diff, "pattern": pattern}

  def groups(self) -> list[dict[str, Any]]:
    """Each group without its graphs: kind, name, device and how many rewrites and matches."""
    return [{"kind": g["kind"], "name": g["name"], "device": g["info"].get("device", ""), "rewrites": len(g["rewrites"]),
             "matches": sum(len(r["matches"]) for r in g["rewrites"])} for g in self.data["groups"]]

  def group(self, g: int) -> dict[str, Any]:
    """A group's info (source, device, opts) and its rewrites, each with its matches' patterns."""
    if not 0 <= g < len(self.data["groups"]): raise TraceError(f"no group {g}: the trace has {len(self.data['groups'])}")
    grp, pats = self.data["groups"][g], self.data["patterns"]
    return {"kind": grp["kind"], "name": grp["name"], "info": grp["info"],
            "rewrites": [{"name": r["name"], "loc": r["loc"], "matches": [pats[p] for _, _, p in r["matches"]]} for r in grp["rewrites"]]}
