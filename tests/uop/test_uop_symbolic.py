"""symbolic: constant folding against numpy, identities, like terms, comparisons, div/mod, gates; vmin/vmax range analysis."""
from __future__ import annotations
import math
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tg.uop import DType, Invalid, Ops, UOp, dtypes, simplify_given_valid
from uop_interp import evaluate

x, y = UOp.variable("x", 0, 100), UOp.variable("y", 0, 3)
z = UOp.variable("z", -10, 10)
INTS = [dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64]
NP = {dtypes.int8: np.int8, dtypes.uint8: np.uint8, dtypes.int16: np.int16, dtypes.uint16: np.uint16, dtypes.int32: np.int32,
      dtypes.uint32: np.uint32, dtypes.int64: np.int64, dtypes.uint64: np.uint64, dtypes.float16: np.float16, dtypes.float32: np.float32,
      dtypes.float64: np.float64}

def np_int_alu(op: Ops, a: np.generic, b: np.generic) -> object:
  """numpy with C semantics (division truncates toward zero), fixed-width wraparound."""
  if op is Ops.IDIV: return (a - np.fmod(a, b)) // b
  return {Ops.ADD: np.add, Ops.MUL: np.multiply, Ops.MOD: np.fmod, Ops.MAX: np.maximum, Ops.AND: np.bitwise_and, Ops.OR: np.bitwise_or,
          Ops.XOR: np.bitwise_xor, Ops.CMPLT: np.less, Ops.CMPNE: np.not_equal, Ops.CMPEQ: np.equal, Ops.SUB: np.subtract}[op](a, b)

INT_OPS = [Ops.ADD, Ops.SUB, Ops.MUL, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ]

@pytest.mark.parametrize("dt", INTS, ids=str)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_int_constant_folding_matches_numpy(dt: DType, data: st.DataObject) -> None:
  a, b = data.draw(st.integers(dt.min, dt.max)), data.draw(st.integers(dt.min, dt.max))
  op = data.draw(st.sampled_from(INT_OPS))
  if op in (Ops.IDIV, Ops.MOD) and (b == 0 or (a == dt.min and b == -1)): return  # undefined in C
  folded = UOp.const(dt, a).alu(op, UOp.const(dt, b)).simplify()
  with np.errstate(all="ignore"): want = np_int_alu(op, NP[dt](a), NP[dt](b)).item()
  assert folded.op is Ops.CONST and folded.arg == want and type(folded.arg) is type(want), f"{dt} {a} {op} {b}"
  neg = (-UOp.const(dt, a)).simplify()
  with np.errstate(all="ignore"): assert neg.arg == (-NP[dt](a)).item()
  s = data.draw(st.integers(0, 8 * dt.itemsize - 1))
  assert (UOp.const(dt, a) << UOp.const(dt, s)).simplify().arg == (NP[dt](a) << NP[dt](s)).item()
  assert (UOp.const(dt, a) >> UOp.const(dt, s)).simplify().arg == (NP[dt](a) >> NP[dt](s)).item()

FLOAT_UNARY = {Ops.SQRT: np.sqrt, Ops.EXP2: np.exp2, Ops.LOG2: np.log2, Ops.SIN: np.sin, Ops.RECIPROCAL: np.reciprocal, Ops.TRUNC: np.trunc,
               Ops.NEG: np.negative}
FLOAT_BINARY = {Ops.ADD: np.add, Ops.SUB: np.subtract, Ops.MUL: np.multiply, Ops.FDIV: np.divide, Ops.MAX: np.maximum, Ops.CMPLT: np.less,
                Ops.CMPNE: np.not_equal, Ops.CMPEQ: np.equal}

def same_float(a: object, b: object, signed_zero: bool = True) -> bool:
  if isinstance(a, float) and isinstance(b, float) and math.isnan(a): return math.isnan(b)
  return a == b and (not signed_zero or not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b))  # type: ignore[arg-type]

@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.float32, dtypes.float64], ids=str)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_float_constant_folding_matches_numpy(dt: DType, data: st.DataObject) -> None:
  a, b = (data.draw(st.floats(width=8 * dt.itemsize, allow_subnormal=True)) for _ in range(2))
  op = data.draw(st.sampled_from(list(FLOAT_BINARY)))
  with np.errstate(all="ignore"): want = FLOAT_BINARY[op](NP[dt](a), NP[dt](b)).item()
  got = UOp.const(dt, a).alu(op, UOp.const(dt, b)).simplify()
  # which zero max(0.0, -0.0) gives is implementation-defined in C (fmax)
  assert got.op is Ops.CONST and same_float(got.arg, want, op is not Ops.MAX), f"{dt} {a} {op} {b}: {got.arg} != {want}"
  uop = data.draw(st.sampled_from(list(FLOAT_UNARY)))
  with np.errstate(all="ignore"):
    # libm's float kernels for sin/exp2/log2 can be a bit off (numpy's float32 log2(0.875) is); the reference for narrow
    # floats is the double result rounded to the type
    narrow_libm = uop in (Ops.SIN, Ops.EXP2, Ops.LOG2) and dt is not dtypes.float64
    want = (NP[dt](FLOAT_UNARY[uop](np.float64(NP[dt](a)))) if narrow_libm else FLOAT_UNARY[uop](NP[dt](a))).item()
  got = UOp.const(dt, a).alu(uop).simplify()
  # doubles: two libms may differ in the last bit of a transcendental (numpy's exp2(1.334499148633128) is 1 ulp off Python's)
  one_ulp = uop in (Ops.SIN, Ops.EXP2, Ops.LOG2) and math.isfinite(want) and abs(got.arg - want) <= math.ulp(want)
  assert got.op is Ops.CONST and (same_float(got.arg, want) or one_ulp), (uop, a)

def s(e: UOp) -> str: return e.simplify().render(simplify=False)

def test_identities_and_like_terms() -> None:
  assert s(x + 0) == "x" and s(x * 1) == "x" and s(x // 1) == "x" and s(x * 0) == "0" and s(x % 1) == "0"
  assert s(x - x) == "0" and s(x + x) == "(x*2)" and s(x * 3 + x * 2 - x * 5 + 7) == "7" and s(3 + x + 4) == "(x+7)"
  assert s(x + x + x) == "(x*3)" and s((x + 2) * 3) == "((x*3)+6)" and s(x * 2 * 3) == "(x*6)" and s((x + y) - (y + x)) == "0"
  assert s(x.maximum(x)) == "x" and s((x < 3).where(y, y)) == "y" and s(z.ne(z)) == "False" and s(z < z) == "False"
  b = x < 5
  assert s(b & True) == "(x<5)" and s(b | True) == "True" and s(b & False) == "False" and s(b.logical_not().logical_not()) == "(x<5)"

def test_comparisons_fold_by_range() -> None:
  assert s(x < 101) == "True" and s(x < 0) == "False" and s(y < x + 4) == "True" and s((x + 3) < 10) == "(x<7)"
  assert s(x * 4 < 9) == "(x<3)" and s(x.eq(200)) == "False" and s((x // 4) < 3) == "(x<12)"
  assert s(x.maximum(200)) == "200" and s(y.maximum(x + 3)) == "(x+3)"

def test_div_and_mod() -> None:
  assert s((x * 4 + y) // 4) == "x" and s((x * 4 + y) % 4) == "y" and s((x * 4 + 3) // 4) == "x"
  assert s((x * 8 + y) // 4) == "(x*2)" and s((x * 6 + 4) // 2) == "((x*3)+2)" and s(x // 4 * 4 + x % 4) == "x"
  assert s(x % 8 % 4) == "(x%4)" and s(x // 2 // 3) == "(x//6)" and s(y % 4) == "y" and s(y // 4) == "0"
  assert s((x * 4 + y + 8) // 4) == "(x+2)" and s((x * 8 + 4) % 8) == "4"
  # a product's common factor divides out of the product whole: split as terms it grew (((x+z)*-2)//4 -> ((-x)-z)//2)
  assert s(((x + z) * -2) // 4) == "((-(x+z))//2)" and s(((x + z) * 6) // 4) == "(((x+z)*3)//2)"

def test_c_semantics_keep_negative_division() -> None:
  # (z*4 + y) // 4 is not z + y//4 when z < 0: -4 + 3 = -1, and -1 // 4 == 0 in C
  e = (z * 4 + y) // 4
  for zv in range(-10, 11):
    for yv in range(4): assert evaluate(e.simplify(), {"z": zv, "y": yv}) == evaluate(e, {"z": zv, "y": yv})
  assert evaluate(e, {"z": -1, "y": 3}) == 0 and (z % 4).simplify().vmin == -3

def test_index_under_a_gate() -> None:
  i = UOp.range(16, 0)
  assert simplify_given_valid(i < 4, i % 4) is i and simplify_given_valid(i < 4, i // 4).arg == 0
  gated = (i // 4).valid(i < 4).simplify()
  assert gated.op is Ops.WHERE and gated.src[1].arg == 0 and gated.src[0] is (i < 4)
  assert simplify_given_valid((i < 12).logical_not(), i // 12) is UOp.const(dtypes.index, 1)

# ***** vmin/vmax: every value an op can take lies in its range *****
VM_DTYPES = [dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.index]
VM_OPS = [Ops.ADD, Ops.SUB, Ops.MUL, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ,
          Ops.NEG, Ops.WHERE, Ops.CAST]

@st.composite
def bounded(draw: st.DrawFn, dt: DType, name: str) -> tuple[UOp, int, int]:
  lo_b, hi_b = (dt.min, dt.max) if dt is not dtypes.index else (-2**40, 2**40)
  a, b = sorted((draw(st.integers(lo_b, hi_b)), draw(st.one_of(st.integers(lo_b, hi_b), st.integers(-20, 20).filter(lambda v: lo_b <= v <= hi_b)))))
  return UOp.variable(name, a, b, dt), a, b

@settings(max_examples=800, deadline=None)
@given(data=st.data())
def test_vmin_vmax_contain_every_value(data: st.DataObject) -> None:
  dt, op = data.draw(st.sampled_from(VM_DTYPES)), data.draw(st.sampled_from(VM_OPS))
  (va, alo, ahi), (vb, blo, bhi) = data.draw(bounded(dt, "a")), data.draw(bounded(dt, "b"))
  if op is Ops.NEG: e = va.alu(Ops.NEG)
  elif op is Ops.WHERE: e = (va < vb).where(va, vb)
  elif op is Ops.CAST: e = va.cast(data.draw(st.sampled_from(VM_DTYPES + [dtypes.bool])))
  elif op in (Ops.SHL, Ops.SHR):
    if dt is dtypes.index: return
    k = data.draw(st.integers(0, 8 * dt.itemsize - 1))
    e, vb, blo, bhi = va.alu(op, UOp.const(dt, k)), UOp.const(dt, k), k, k
  else: e = va.alu(op, vb)
  for _ in range(8):
    env = {"a": data.draw(st.sampled_from([alo, ahi]) | st.integers(alo, ahi)), "b": data.draw(st.sampled_from([blo, bhi]) | st.integers(blo, bhi))}
    if op in (Ops.IDIV, Ops.MOD) and (env["b"] == 0 or (env["a"] == dt.min and env["b"] == -1)): continue
    v = evaluate(e, env)
    assert e.vmin <= v <= e.vmax, f"{dt} {e.render(simplify=False)} = {v} at {env} outside [{e.vmin}, {e.vmax}]"

@settings(max_examples=300, deadline=None)
@given(st.integers(1, 50), st.integers(0, 100))
def test_vmin_vmax_of_range_special_and_variable(n: int, v: int) -> None:
  end = UOp.variable("n", 1, n)
  for u in (UOp.range(n, 0), UOp.special(n, "gidx0"), UOp.range(end, 1)): assert (u.vmin, u.vmax) == (0, n - 1)
  var = UOp.variable("v", min(v, n), max(v, n))
  assert (var.vmin, var.vmax) == (min(v, n), max(v, n)) and (var.bind(min(v, n)).vmin, var.bind(min(v, n)).vmax) == (min(v, n),) * 2

def test_flattened_index_of_three_axes_folds_back():
  # the index of a (32, 12, 12) view flattened again: ((i//144)*12 + (i//12)%12)*12 + i%12 is i
  i = UOp.variable("i", 0, 32 * 144 - 1)
  assert (((i // 144) * 12 + (i // 12) % 12) * 12 + i % 12).simplify() is i

def test_like_terms_of_one_term_fold_to_a_multiple() -> None:
  a = UOp.variable("a", 0, 10)
  assert (a + a).simplify() is a * 2 and (z + z + 1).simplify() is z * 2 + 1 and ((a + 3) + (a + 4)).simplify() is a * 2 + 7

def test_mod_with_a_common_factor_never_grows() -> None:
  from uop_interp import tree_size
  e = (x * 4) % 6  # ((x*2)%3)*2 is the same value in 7 nodes instead of 5
  assert tree_size(e.simplify()) <= tree_size(e)
  assert ((x * 2 + y * 4) % 6).simplify() is ((x + y * 2) % 3) * 2  # here the division drops a MUL: no bigger
  for v in range(0, 101, 7):
    for w in range(4): assert evaluate(((x * 2 + y * 4) % 6).simplify(), {"x": v, "y": w}) == (v * 2 + w * 4) % 6

@settings(max_examples=100, deadline=None)
@given(st.sampled_from([2, 4, 8, 16]), st.integers(1, 64), st.integers(0, 15))
def test_a_mod_of_a_multiple_plus_a_small_part_splits(k: int, m: int, lane: int) -> None:
  """(a*k + lane) % (k*m) with 0 <= lane < k is (a % m)*k + lane: the lanes of a flip's vector index share one base
  and differ by a constant, so they load as one vector (16 loads, each with its own mod, before)."""
  a, lane = UOp.variable("a", 0, 300), lane % k
  e = (a * k + lane) % (k * m)
  got = e.simplify()
  assert got.op is not Ops.MOD, got.render(simplify=False)
  for v in range(301): assert evaluate(got, {"a": v}) == (v * k + lane) % (k * m)

@settings(max_examples=200, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(-3, 3).filter(bool), st.integers(-40, 0), st.integers(0, 40))
def test_nested_div_mod_pieces_fold_into_one_mod(c: int, m: int, k: int, lo: int, hi: int) -> None:
  """((v//c)%m)*c*k + (v%c)*k is (v%(c*m))*k, with C's truncating division (v may be negative)."""
  v = UOp.variable("v", lo, hi)
  e = ((v // c) % m) * (c * k) + (v % c) * k
  from uop_interp import tree_size
  s = e.simplify()
  assert tree_size(s) <= tree_size((v % (c * m)) * k), f"{e.render(simplify=False)} -> {s.render(simplify=False)}"
  for val in range(lo, hi + 1): assert evaluate(s, {"v": val}) == evaluate(e, {"v": val})

@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add_var", "add_const", "mulc", "mulv", "add_self"]), st.integers(0, 9)), min_size=40, max_size=90),
       st.booleans())
def test_split_terms_marks_long_sums_as_a_full_split_finds_them(steps: list[tuple[str, int]], right: bool) -> None:
  """A sum marked too long (so its users skip the split) is exactly one whose own split passes MAX_TERMS: splitting
  every node sources-first (marks in use) answers as splitting each one top-down (no marks below it)."""
  from tg.uop.symbolic import split_terms, _LONG
  vs = [UOp.variable(f"t{i}", 0, 5) for i in range(10)]
  u = vs[0]
  for kind, i in steps:
    if kind == "add_var": u = vs[i] + u if right else u + vs[i]
    elif kind == "add_const": u = u + (i + 1)
    elif kind == "mulc": u = u * (i + 2)
    elif kind == "mulv": u = u * vs[i]  # a product of two UOps is one term, however long its sources
    else: u = u + u
  topo = list(u.toposort())
  def answers(order: list[UOp]) -> dict[UOp, bool]:
    for n in topo: n.__dict__.pop(_LONG, None)
    return {n: split_terms(n) is None for n in order}
  assert answers(topo[::-1]) == answers(topo)

def test_constants_of_a_chain_step_fold_into_one() -> None:
  # (t + c1) + c2 takes fold_add's short way: the same node the split into terms gives, and t alone where they cancel
  a = UOp.variable("a", 0, 10)
  assert ((a + 3) + 4).simplify() is a + 7 and ((a + 3) + -3).simplify() is a and ((a // 2 + 1) + 1).simplify() is a // 2 + 2
  assert ((a * 2 + 3) + 4).simplify() is a * 2 + 7 and (((a + 1) + 2) + 3).simplify().src[1].arg == 6

def test_sum_of_variables_simplifies_without_the_prefix_ranges() -> None:
  """x0+x1+...: the right source (a variable of a range wider than one number) rules out folding the sum by its range,
  so simplify never computes the range of a left prefix, which nothing else needs: along a long chain that range work
  is most of what simplify costs. The result is the same sum, with the range numpy sums give."""
  xs = [UOp.variable(f"s{i}", 0, 3 + i) for i in range(8)]
  s = xs[0]
  for x in xs[1:]: s = s + x
  prefixes = [u for u in s.toposort() if u.op is Ops.ADD and u is not s]
  assert s.simplify() is s
  assert not [p for p in prefixes if "vmin" in p.__dict__], "simplify computed the range of a prefix sum"
  assert (s.vmin, s.vmax) == (0, int(np.sum(np.arange(3, 11))))

def test_a_gate_under_a_negated_condition_stays_a_gate():
  """idx.valid(not c) keeps Invalid as the false branch (the form the lowering reads a gate from): the rule that swaps a
  negated condition's branches made it where(c, Invalid, idx), which reached the renderer as a value."""
  i, j = UOp.range(4, 0), UOp.range(3, 1)
  gated = j.valid((i < 1).logical_not()).simplify()
  assert gated.op is Ops.WHERE and gated.src[2].arg is Invalid and gated.src[1] is j
  assert (i < 1).logical_not().where(i, j).simplify() is (i < 1).where(j, i)  # a value's branches still swap

@given(st.integers(-12, 12), st.integers(0, 12), st.integers(-9, 9), st.integers(0, 6))
@settings(max_examples=200, deadline=None)
def test_mod_bounds_hold_for_divisors_of_either_sign(alo: int, awidth: int, blo: int, bwidth: int) -> None:
  """C's remainder: |a % b| < |b| for a divisor range of either sign. A negative divisor gave no bound (the whole int
  range: tinygrad's test_mod_min_max, x % -4 in [0, 3] for x >= 0); every value, computed by truncation, lies inside."""
  bhi = blo + bwidth
  if blo <= 0 <= bhi: return
  a, b = UOp.variable("a", alo, alo + awidth), UOp.variable("b", blo, bhi)
  e = a % b
  vals = [int(math.fmod(p, q)) for p in range(alo, alo + awidth + 1) for q in range(blo, bhi + 1)]
  assert e.vmin <= min(vals) and max(vals) <= e.vmax
  assert e.vmax - e.vmin <= 2 * max(abs(blo), abs(bhi))  # a bound, not the int range
