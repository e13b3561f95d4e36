"""VIZ tracking: graph_rewrite records its input, each match (which pattern, before, after) and its result, grouped by its
caller; the saved trace replays every match back to the result; with VIZ off nothing is recorded."""
from __future__ import annotations
import inspect, pathlib, pickle
from typing import Iterator
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from tg.uop import Context, Ops, PatternMatcher, UOp, UPat, graph_rewrite, symbolic, track
from tg.uop.viz import Trace, TraceError, load
from test_uop_symbolic_fuzz import int_expr

@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
  track.reset()
  yield
  track.reset()

def double(x: UOp) -> UOp: return x + x
pm_double = PatternMatcher([(UPat(Ops.MUL, src=(UPat.var("x"), UPat.const(None, 2))), double)])

def test_records_each_match_in_order() -> None:
  a = UOp.variable("a", 0, 10)
  g = (a * 2) * 2
  with Context(VIZ=-1): out = graph_rewrite(g, pm_double, name="double")
  assert out is (a + a) + (a + a)
  [grp] = track.groups
  assert (grp.kind, grp.name) == ("rewrite", "double")
  [rw] = grp.rewrites
  assert rw.input is g and rw.output is out
  # sources first: the inner product, then the outer one (whose source is already rewritten)
  assert [(b, af) for b, af, _ in rw.matches] == [(a * 2, a + a), ((a + a) * 2, out)]
  assert all(f is double for _, _, f in rw.matches)
  line = inspect.currentframe().f_lineno - 9  # type: ignore[union-attr]  # the graph_rewrite call above
  assert rw.loc == f"{pathlib.Path(__file__).name}:{line}" or rw.loc.endswith(f"test_viz_track.py:{line}")

def test_off_records_nothing() -> None:
  a = UOp.variable("a", 0, 10)
  graph_rewrite(a * 2, pm_double)
  with track.group("kernel", "k") as g: graph_rewrite(a * 2, pm_double)
  assert g is None and track.groups == []

def test_groups_by_caller() -> None:
  a = UOp.variable("a", 0, 10)
  with Context(VIZ=-1):
    with track.group("kernel", "k1") as g:
      graph_rewrite(a * 2, pm_double, name="first")
      (a + 0).simplify()
    (a + 0).simplify()
    (a * 1).simplify()
  assert [(x.kind, x.name) for x in track.groups] == [("kernel", "k1"), ("rewrite", "simplify")]
  assert g is track.groups[0] and [r.name for r in g.rewrites] == ["first", "simplify"]
  assert [r.input for r in track.groups[1].rewrites] == [a + 0, a * 1]

def test_pattern_location_is_where_it_is_written(tmp_path: pathlib.Path) -> None:
  a = UOp.variable("a", 0, 10)
  with Context(VIZ=-1): graph_rewrite(a * 2, pm_double)
  data = track.to_data()
  [(loc, text)] = data["patterns"]
  assert loc.endswith(f"test_viz_track.py:{double.__code__.co_firstlineno}") and text.startswith("def double(x: UOp)")

def _replayed(out: UOp, data: dict) -> None:
  """Every rewrite of the trace, replayed match by match, ends at its recorded output."""
  trace = Trace(data)
  for g, grp in enumerate(data["groups"]):
    for r, rw in enumerate(grp["rewrites"]):
      assert trace.root_at(g, r, len(rw["matches"])) == rw["output"], f"{grp['name']}/{rw['name']}: replay doesn't reach the output"

@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(int_expr(), st.booleans())
def test_recorded_rewrite_is_the_same_and_replays(e: UOp, bottom_up: bool) -> None:
  """The recording rewriter (interpreted matcher) gives the compiled one's result, and replaying its matches one by
  one on the input graph reproduces the output: what the viewer draws at each step is what happened."""
  track.reset()
  want = graph_rewrite(e, symbolic, bottom_up=bottom_up)
  with Context(VIZ=-1): got = graph_rewrite(e, symbolic, bottom_up=bottom_up)
  assert got is want
  _replayed(got, track.to_data())

def test_save_and_load(tmp_path: pathlib.Path) -> None:
  a = UOp.variable("a", 0, 10)
  with Context(VIZ=-1): out = graph_rewrite((a * 2) * 2, pm_double, name="double")
  path = track.save(tmp_path / "t.pkl")
  trace = Trace(load(path))
  assert trace.groups() == [{"kind": "rewrite", "name": "double", "device": "", "rewrites": 1, "matches": 2}]
  last = trace.step(0, 0, 2)
  # drawn graph: a, a+a, (a+a)+(a+a), and the new nodes of the last match are the outer add alone
  assert sorted(n["op"] for n in last["graph"]["nodes"]) == ["ADD", "ADD", "DEFINE_VAR"]
  assert [trace.table.nodes[n][0] for n in last["changed"]] == ["ADD"] and last["graph"]["root"] == last["changed"][0]
  assert last["pattern"][1].startswith("def double")
  assert any(line.startswith("+") and "ADD" in line for line in last["diff"]) and any(line.startswith("-") and "MUL" in line for line in last["diff"])
  assert trace.text(trace.root_at(0, 0, 2))[-1].split(" = ")[1].startswith("ADD")
  del out

def test_bad_trace_files(tmp_path: pathlib.Path) -> None:
  with pytest.raises(TraceError, match="no VIZ trace"): load(tmp_path / "missing.pkl")
  (tmp_path / "junk.pkl").write_bytes(b"not a pickle")
  with pytest.raises(TraceError, match="not a VIZ trace"): load(tmp_path / "junk.pkl")
  (tmp_path / "old.pkl").write_bytes(pickle.dumps({"version": -3}))
  with pytest.raises(TraceError, match="version"): load(tmp_path / "old.pkl")
  with pytest.raises(TraceError, match="no group 5"): Trace({"version": 1, "nodes": [], "groups": [], "patterns": []}).step(5, 0, 0)

def test_deep_graph_saves_without_recursion(tmp_path: pathlib.Path) -> None:
  u = UOp.variable("x", 0, 10)
  for _ in range(5_000): u = u * 2
  with Context(VIZ=-1): out = graph_rewrite(u, pm_double)
  trace = Trace(load(track.save(tmp_path / "deep.pkl")))
  assert trace.rewrite(0, 0)["output"] == trace.toposort(trace.rewrite(0, 0)["output"])[-1]
  assert len(trace.toposort(trace.rewrite(0, 0)["output"])) == len(out.toposort())
