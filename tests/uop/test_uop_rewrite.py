"""UPat matching, PatternMatcher dispatch, graph_rewrite to a fixed point (deep graphs too) and graph_rewrite_map."""
from __future__ import annotations
import pytest
from hypothesis import given, strategies as st
from tg.uop import Ops, PatternMatcher, RewriteLoop, UOp, UPat, dtypes, graph_rewrite, graph_rewrite_map

x, y = UOp.variable("x", 0, 10), UOp.variable("y", 0, 10)
fx = UOp.variable("f", 0, 1, dtypes.int32).cast(dtypes.float32)

def matches(p: UPat, u: UOp) -> list[dict[str, UOp]]: return p.match(u, {})

def test_upat_op_dtype_arg_and_names() -> None:
  assert matches(UPat(Ops.ADD, name="a"), x + 1) == [{"a": x + 1}] and matches(UPat(Ops.MUL), x + 1) == []
  assert matches(UPat((Ops.ADD, Ops.MUL)), x * 2) == [{}] and matches(UPat(dtype=dtypes.float32), fx) == [{}]
  assert matches(UPat(dtype={dtypes.int32, dtypes.index}), x) == [{}] and matches(UPat(dtype=dtypes.int32), x) == []
  assert matches(UPat(dtype=dtypes.float32), UOp.const(dtypes.float32.vec(2), 1.0)) == [{}]  # vectors match their scalar
  assert matches(UPat(Ops.CONST, arg=3), UOp.const(dtypes.index, 3)) == [{}] and matches(UPat(Ops.CONST, arg=4), UOp.const(dtypes.index, 3)) == []
  assert matches(UPat.cvar("c"), UOp.const(dtypes.index, 3)) == [{"c": UOp.const(dtypes.index, 3)}] and matches(UPat.cvar("c"), x) == []
  assert matches(UPat.var("v"), x) == [{"v": x}]

def test_upat_sources_tuple_list_and_repeat() -> None:
  e = x + 1
  ordered = UPat(Ops.ADD, src=(UPat.cvar("c"), UPat.var("v")))
  assert matches(ordered, e) == [] and matches(UPat(Ops.ADD, src=(UPat.var("v"), UPat.cvar("c"))), e) == [{"v": x, "c": e.src[1]}]
  assert matches(UPat(Ops.ADD, src=[UPat.cvar("c"), UPat.var("v")]), e) == [{"c": e.src[1], "v": x}]
  every = UPat(Ops.ADD, src=UPat(Ops.DEFINE_VAR))
  assert matches(every, x + y) == [{}] and matches(every, x + 1) == []
  assert matches(UPat(Ops.ADD, src=(UPat.var("a"),)), x + y) == [] and matches(UPat(Ops.ADD, src=(UPat.var("a"),), allow_any_len=True), x + y)
  # a name used twice must capture the same UOp
  same = UPat(Ops.ADD, src=(UPat.var("a"), UPat.var("a")))
  assert matches(same, x + x) == [{"a": x}] and matches(same, x + y) == []
  # a list finds every permutation that matches
  both = UPat(Ops.ADD, src=[UPat.var("a"), UPat.var("b")])
  assert {(m["a"], m["b"]) for m in matches(both, x + y)} == {(x, y), (y, x)}

def test_upat_any_and_builders() -> None:
  p = UPat.any(UPat(Ops.CONST, name="k"), UPat(Ops.DEFINE_VAR, name="k"))
  assert matches(p, x) == [{"k": x}] and matches(p, x + 1) == [] and matches(p.named("z"), x)
  assert matches(UPat.var("a") + 1, 1 + x) == [{"a": x}] and matches(UPat.var("a") * UPat.var("b"), x * y)
  assert matches(UPat.var("a") // 2, x // 2) == [{"a": x}] and matches(UPat.var("a") // 2, x // 3) == []
  assert matches(UPat.var("a").cast(dtypes.float32), fx) and matches((UPat.var("a") < 3).where(UPat.var("t"), UPat.var("f")),
                                                                    (x < 3).where(x, y)) == [{"a": x, "t": x, "f": y}]

def test_pattern_matcher_dispatch_order_ctx_and_none() -> None:
  calls: list[str] = []
  def first(a: UOp) -> None: calls.append("first")
  pm = PatternMatcher([(UPat.var("a") + 0, first), (UPat.var("a") + 0, lambda a: a), (UPat(Ops.MUL, name="m"), lambda ctx, m: ctx)])
  assert pm.rewrite(x + 0) is x and calls == ["first"]  # None falls through to the next pattern
  assert pm.rewrite(x * 2, ctx=y) is y and pm.rewrite(x // 2) is None
  with pytest.raises(ValueError, match="needs an op"): PatternMatcher([(UPat.var("a"), lambda a: a)])
  assert len((pm + pm).patterns) == 6

mul2_to_shl = PatternMatcher([(UPat.var("a") * 2, lambda a: a << 1), (UPat.var("a") + 0, lambda a: a)])

def test_graph_rewrite_fixed_point_and_order() -> None:
  assert graph_rewrite(((x + 0) + 0) * 2, mul2_to_shl) is x << 1
  seen: list[Ops] = []
  def log(u: UOp) -> None: seen.append(u.op)
  pm = PatternMatcher([(UPat((Ops.ADD, Ops.MUL, Ops.DEFINE_VAR, Ops.CONST), name="u"), log)])
  graph_rewrite((x + 1) * 3, pm)
  assert seen[-1] is Ops.MUL and seen.index(Ops.ADD) < seen.index(Ops.MUL)
  seen.clear()
  graph_rewrite((x + 1) * 3, pm, bottom_up=True)
  assert seen[0] is Ops.MUL
  # bottom_up sees a node before its sources change: a pattern on the parent wins
  pm2 = PatternMatcher([(UPat(Ops.MUL, src=(UPat(Ops.ADD), UPat.cvar())), lambda: UOp.const(dtypes.index, 7)),
                        (UPat(Ops.ADD, name="a"), lambda a: a.src[0])])
  assert graph_rewrite((x + 1) * 3, pm2, bottom_up=True).arg == 7 and graph_rewrite((x + 1) * 3, pm2) is x * 3

def test_graph_rewrite_map_and_ctx() -> None:
  e = (x + 0) * 2
  m = graph_rewrite_map(e.sink(y), mul2_to_shl)
  assert m[e] is x << 1 and m[x + 0] is x and m[y] is y and m[e.sink(y)] is (x << 1).sink(y)
  count = PatternMatcher([(UPat(Ops.DEFINE_VAR, name="v"), lambda ctx, v: ctx.append(v.arg[0]))])
  names: list[str] = []
  graph_rewrite(x + y + x, count, ctx=names)
  assert sorted(names) == ["x", "y"]

def test_graph_rewrite_map_bottom_up_leaves_out_nodes_it_never_reached() -> None:
  # bottom_up rewrites (x+1)*3 to 7 before visiting x+1: the map has the nodes reached (it raised KeyError on x+1)
  pm = PatternMatcher([(UPat(Ops.MUL, src=(UPat(Ops.ADD), UPat.cvar())), lambda: UOp.const(dtypes.index, 7))])
  e = (x + 1) * 3
  m = graph_rewrite_map(e.sink(y), pm, bottom_up=True)
  assert m == {e: UOp.const(dtypes.index, 7), y: y, e.sink(y): UOp.const(dtypes.index, 7).sink(y)}

def test_graph_rewrite_deep_chain() -> None:
  u = x
  for _ in range(100_000): u = u + 0
  assert graph_rewrite(u, mul2_to_shl) is x
  v = x
  for _ in range(100_000): v = v * 2
  out = graph_rewrite(v, mul2_to_shl, bottom_up=True)
  assert out.op is Ops.SHL and len(out.toposort()) == 100_002

def test_graph_rewrite_loop_is_reported() -> None:
  pm = PatternMatcher([(UPat(Ops.ADD, name="a"), lambda a: a + 0)])
  with pytest.raises(RewriteLoop, match="grow"): graph_rewrite(x + y, pm, name="grow")

def test_allow_any_len_still_needs_every_listed_source() -> None:
  # the bug: zip() stopped at the shorter side, so a pattern listing two sources matched a UOp with one
  two = UPat(Ops.SINK, src=(UPat.var("a"), UPat.var("b")), allow_any_len=True)
  assert matches(two, UOp.sink(x)) == [] and matches(two, UOp.sink()) == []
  assert matches(two, UOp.sink(x, y)) == [{"a": x, "b": y}] and matches(two, UOp.sink(x, y, x + 1)) == [{"a": x, "b": y}]
  assert matches(UPat(Ops.SINK, src=[UPat.var("a"), UPat.var("b")], allow_any_len=True), UOp.sink(y)) == []

def test_compiled_and_interpreted_matchers_agree_on_allow_any_len_names_and_any() -> None:
  from tg.uop import Context
  pm = PatternMatcher([
    (UPat(Ops.SINK, src=(UPat.var("a"), UPat.var("b")), allow_any_len=True), lambda a, b: UOp.sink(b, a)),
    (UPat(Ops.ADD, src=[UPat.var("a"), UPat.var("a")]), lambda a: a * 2),
    (UPat(Ops.MUL, src=(UPat.any(UPat(Ops.CONST, name="c"), UPat(Ops.DEFINE_VAR, name="c")), UPat.var("b"))), lambda c, b: b + c),
    (UPat(Ops.IDIV, src=UPat(Ops.DEFINE_VAR)), lambda: UOp.const(dtypes.index, 7))])
  cases = [UOp.sink(x), UOp.sink(x, y), UOp.sink(x, y, x), x + x, x + y, x * y, (x + 1) * y, x // y, x // 2]
  got = [pm.rewrite(u) for u in cases]
  with Context(UPAT_INTERPRET=1): assert [pm.rewrite(u) for u in cases] == got
  assert got == [None, UOp.sink(y, x), UOp.sink(y, x), x * 2, None, y + x, None, UOp.const(dtypes.index, 7), None]

def test_guard_runs_before_the_function_in_both_matchers() -> None:
  from tg.uop import Context, guard
  calls: list[UOp] = []
  @guard("a.op is DEFINE_VAR and c.arg > 1", DEFINE_VAR=Ops.DEFINE_VAR)
  def double(a: UOp, c: UOp) -> UOp:
    calls.append(a)
    return a * (c.arg * 2)
  pm = PatternMatcher([(UPat.var("a") * UPat.cvar("c"), double)])
  cases = [x * 3, x * 1, (x + 1) * 3, 3 * y]
  for interpret in (0, 1):
    calls.clear()
    with Context(UPAT_INTERPRET=interpret): got = [pm.rewrite(u) for u in cases]
    assert got == [x * 6, None, None, y * 6] and calls == [x, y], interpret  # rejected nodes cost no call
  # the compiled matcher writes the guard into the pattern's condition
  assert "c.arg" not in pm.compiled()[Ops.MUL].source and ".arg > 1" in pm.compiled()[Ops.MUL].source

def test_guard_reading_an_uncaptured_name_is_an_error() -> None:
  from tg.uop import GuardError, guard
  @guard("b.vmin > 0")
  def f(a: UOp) -> UOp: return a
  with pytest.raises(GuardError, match=r"reads \['b'\]"): PatternMatcher([(UPat(Ops.ADD, src=(UPat.var("a"), UPat.var())), f)])

def test_guard_tests_of_the_root_op_are_decided_per_op() -> None:
  from tg.uop import Context, guard
  @guard("u.op is MUL or not (u.op is not ADD or u.src[1].op is not CONST)", MUL=Ops.MUL, ADD=Ops.ADD, CONST=Ops.CONST)
  def zero(u: UOp) -> UOp: return u.const_like(0)
  pm = PatternMatcher([(UPat((Ops.ADD, Ops.MUL, Ops.IDIV), name="u"), zero)])
  src = {op: f.source for op, f in pm.compiled().items()}
  assert "u.op" not in src[Ops.MUL] + src[Ops.ADD] + src[Ops.IDIV] and "s1.op is" in src[Ops.ADD] and "False" in src[Ops.IDIV]
  cases = [x * y, x + 1, x + y, x // 2]
  with Context(UPAT_INTERPRET=1): want = [pm.rewrite(u) for u in cases]
  assert [pm.rewrite(u) for u in cases] == want == [UOp.const(dtypes.index, 0), UOp.const(dtypes.index, 0), None, None]

@given(st.lists(st.lists(st.integers(0, 10_000), max_size=3), min_size=1, max_size=40), st.lists(st.integers(0, 39), max_size=8))
def test_toposort_is_a_topological_order_with_cached_parts(edges, cached_first):
  """A random DAG (node i's sources among nodes < i), some nodes' toposorts computed (cached) first, whose results are
  spliced in: each toposort holds exactly the node's ancestors and itself, every UOp after all its sources."""
  nodes: list[UOp] = []
  for i, srcs in enumerate(edges):
    src = tuple(dict.fromkeys(nodes[s % i] for s in srcs)) if i else ()
    nodes.append(UOp(Ops.NOOP, dtypes.void, src, i))
  for c in cached_first: nodes[c % len(nodes)].toposort()
  for n in nodes:
    topo, seen, todo = list(n.toposort()), set(), [n]
    while todo:  # the ancestors by a plain walk
      u = todo.pop()
      if u not in seen: seen.add(u); todo.extend(u.src)
    assert set(topo) == seen and len(topo) == len(seen) and topo[-1] is n
    pos = {u: k for k, u in enumerate(topo)}
    assert all(pos[s] < pos[u] for u in topo for s in u.src)
