"""Property: simplify() keeps the value of random integer expressions (C semantics) and never grows them.
UOP_FUZZ_SCALE=20 runs twenty times the examples (for hunting bugs locally)."""
from __future__ import annotations
import itertools, os
from hypothesis import example, given, settings, strategies as st, HealthCheck
from tg.uop import Context, Ops, PatternMatcher, UOp, UPat, dtypes, graph_rewrite_map, symbolic
from tg.uop.symbolic import fold_add
from uop_interp import evaluate, tree_size

VARS = {"a": (0, 10), "b": (-5, 5), "c": (1, 8), "d": (-20, -3), "e": (0, 100)}
POSITIVE = ["c"]  # variables that are safe divisors
SCALE = int(os.environ.get("UOP_FUZZ_SCALE", "1"))
var_uops = {n: UOp.variable(n, lo, hi) for n, (lo, hi) in VARS.items()}

def leaf(variables: dict[str, UOp]) -> st.SearchStrategy[UOp]:
  dtype = next(iter(variables.values())).dtype
  return st.one_of(st.sampled_from(list(variables.values())), st.integers(-12, 12).map(lambda v: UOp.const(dtype, v)))

@st.composite
def int_expr(draw: st.DrawFn, depth: int = 4, variables: dict[str, UOp] = var_uops) -> UOp:
  """A random integer expression over `variables` (all of one dtype, "c" a safe divisor)."""
  if depth == 0 or draw(st.integers(0, 4)) == 0: return draw(leaf(variables))
  sub = lambda: draw(int_expr(depth - 1, variables))
  kind = draw(st.sampled_from(["add", "sub", "mul", "mulc", "divc", "modc", "divv", "modv", "max", "min", "where", "neg"]))
  if kind == "add": return sub() + sub()
  if kind == "sub": return sub() - sub()
  if kind == "mul": return sub() * sub()
  if kind == "mulc": return sub() * draw(st.integers(-6, 6))
  if kind == "divc": return sub() // draw(st.integers(1, 9))
  if kind == "modc": return sub() % draw(st.integers(1, 9))
  if kind == "divv": return sub() // variables[draw(st.sampled_from(POSITIVE))]
  if kind == "modv": return sub() % variables[draw(st.sampled_from(POSITIVE))]
  if kind == "max": return sub().maximum(sub())
  if kind == "min": return sub().minimum(sub())
  if kind == "neg": return -sub()
  return draw(bool_expr(depth - 1, variables)).where(sub(), sub())

@st.composite
def bool_expr(draw: st.DrawFn, depth: int, variables: dict[str, UOp] = var_uops) -> UOp:
  sub = lambda: draw(int_expr(max(depth - 1, 0), variables))
  a, b = sub(), sub()
  kind = draw(st.sampled_from(["lt", "gt", "le", "ge", "ne", "eq", "and", "or", "not"]))
  if kind == "lt": return a < b
  if kind == "gt": return a > b
  if kind == "le": return a <= b
  if kind == "ge": return a >= b
  if kind == "ne": return a.ne(b)
  if kind == "eq": return a.eq(b)
  if kind == "not": return (a < b).logical_not()
  c = sub() < sub()
  return (a < b) & c if kind == "and" else (a < b) | c

ENVS = [dict(zip(VARS, vals)) for vals in itertools.product(*[sorted({lo, hi, (lo + hi) // 2, lo + 1, hi - 1}) for lo, hi in VARS.values()])]

def check_same(e: UOp, s: UOp) -> None:
  assert tree_size(s) <= tree_size(e), f"simplify grew {e.render(simplify=False)} into {s.render(simplify=False)}"
  for env in ENVS[::7] + [{n: (lo + hi) // 3 for n, (lo, hi) in VARS.items()}]:
    want, got = evaluate(e, env), evaluate(s, env)
    assert want == got, f"{e.render(simplify=False)} -> {s.render(simplify=False)} at {env}: {want} != {got}"
    assert s.vmin <= got <= s.vmax and e.vmin <= want <= e.vmax, f"value outside [vmin, vmax] for {e.render(simplify=False)} at {env}"

@settings(max_examples=400 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(int_expr())
def test_simplify_int_expr_keeps_value(e: UOp) -> None: check_same(e, e.simplify())

@settings(max_examples=200 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bool_expr(3))
def test_simplify_bool_expr_keeps_value(e: UOp) -> None: check_same(e, e.simplify())

# fixed-width dtypes wrap: a variable over a dtype's whole range, so a fold that moves a constant across < or // (which
# only holds where the arithmetic doesn't wrap) is caught
NARROW = [dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32]
def _full_range_vars(dt) -> dict[str, UOp]:
  return {"a": UOp.variable("a", dt.min, dt.max, dt), "b": UOp.variable("b", max(dt.min, -5), 5, dt), "c": UOp.variable("c", 1, 8, dt)}
def _narrow_envs(dt) -> list[dict[str, int]]:
  lo, hi = dt.min, dt.max
  return [dict(zip("abc", v)) for v in itertools.product(sorted({lo, lo + 1, 0, 1, hi // 2, hi - 1, hi}), (max(lo, -5), 0, 5), (1, 3, 8))]

@settings(max_examples=80 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(NARROW).flatmap(lambda dt: st.tuples(st.just(dt), bool_expr(3, _full_range_vars(dt)))))
@example((dtypes.uint8, (UOp.variable("a", 0, 255, dtypes.uint8) + 100) < 100))  # folded to a < 0: False
@example((dtypes.int16, (UOp.variable("a", -2**15, 2**15 - 1, dtypes.int16) * 2) // 2 < 0))  # (a*2)//2 folded to a
@example((dtypes.int8, UOp.variable("a", -128, 127, dtypes.int8) + 100 < -100))  # a < -200: the bound wrapped to 56
def test_simplify_keeps_the_value_of_wrapping_arithmetic(case: tuple) -> None:
  """simplify keeps the value of expressions over int8 ... uint32, whose + and * wrap as C's (with -fwrapv) do."""
  dt, e = case
  s = e.simplify()
  for env in _narrow_envs(dt):
    want, got = evaluate(e, env), evaluate(s, env)
    assert want == got, f"{e.render(simplify=False)} -> {s.render(simplify=False)} at {env}: {want} != {got}"

@settings(max_examples=150 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bool_expr(2), int_expr(3))
def test_simplify_gated_index_keeps_value(gate: UOp, idx: UOp) -> None:
  """An index under a gate may change where the gate is false, never where it is true."""
  s = idx.valid(gate).simplify()
  for env in ENVS[::5]:
    if not evaluate(gate, env): continue
    assert evaluate(s, env) == evaluate(idx, env), f"{idx.valid(gate).render(simplify=False)} -> {s.render(simplify=False)} at {env}"

@settings(max_examples=100 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bool_expr(3))
def test_compiled_matcher_rewrites_as_the_interpreted(e: UOp) -> None:
  """The generated matchers of symbolic return what the interpreted ones return, on every node."""
  for u in e.toposort(): assert symbolic.rewrite(u) is symbolic.rewrite_interpreted(u), u.render(simplify=False)

swap_vars = PatternMatcher([(UPat(Ops.DEFINE_VAR, arg=("a", *VARS["a"])), lambda: var_uops["b"] * 2 + 1),
                            (UPat(Ops.MUL, src=[UPat.var("x"), UPat.cvar("c")]), lambda x, c: x + x if c.arg == 2 else None)])

@settings(max_examples=100 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(int_expr(3), min_size=1, max_size=4), bool_expr(2))
def test_graph_rewrite_compiled_gives_the_interpreted_result(es: list[UOp], gate: UOp) -> None:
  """The default graph_rewrite (generated matchers, its own walk) returns the very UOp the reference (UPAT_INTERPRET=1:
  interpreted matchers, the plain walk) returns, for every node of random graphs that share subexpressions, in both
  orders."""
  g = UOp.sink(*es, es[0].valid(gate), gate.where(es[-1], es[0] * 3))
  for pm, bottom_up in ((symbolic, False), (symbolic, True), (swap_vars, False), (swap_vars, True)):
    got = graph_rewrite_map(g, pm, bottom_up=bottom_up)
    with Context(UPAT_INTERPRET=1): want = graph_rewrite_map(g, pm, bottom_up=bottom_up)
    assert got == want and all(got[u] is want[u] for u in got), (pm, bottom_up)

@settings(max_examples=150 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(int_expr())
def test_a_sum_is_one_number_only_when_its_sources_are(e: UOp) -> None:
  """fold_by_range's guard skips a sum's range when a source's is wider than one number, or, when the source is a sum
  too, one of that sum's sources: the range analysis agrees (the second follows from the first, applied twice)."""
  for u in e.toposort():
    if u.op is Ops.ADD and u.vmin == u.vmax: assert all(s.vmin == s.vmax for s in u.src), u.render(simplify=False)

@settings(max_examples=150 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(int_expr(), st.integers(-6, 6), st.integers(-12, 12))
@example((UOp.variable("a", 0, 10) // 1) % 1, -1, 1)  # its own partner in _mod_pair (c = 1): KeyError
def test_fold_add_guard_skips_only_sums_it_leaves_alone(e: UOp, k: int, c: int) -> None:
  """A sum fold_add's guard rejects (one term, or one term times a constant, plus a constant) is one fold_add itself
  returns None for: the guard only spares the split."""
  for u in [*e.toposort(), e * k + c, (e * k).simplify() + c]:
    if u.op is Ops.ADD and dtypes.is_int(u.dtype) and not fold_add.guard.check(x=u): assert fold_add(u) is None, u.render(simplify=False)
