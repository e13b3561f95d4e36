"""A tour of tg.uop: build index math, simplify it, check its range, and rewrite a graph with your own pattern."""
from tg.uop import UOp, UPat, PatternMatcher, graph_rewrite, dtypes, Ops

x, y = UOp.variable("x", 0, 100), UOp.variable("y", 0, 3)
for e in [(x * 4 + 3) // 4, (x * 4 + y) // 4, (x * 4 + y) % 4, x // 4 * 4 + x % 4, (x + 3) < 10]:
  s = e.simplify()
  print(f"{e.render(simplify=False):>28}  ->  {s.render(simplify=False):<10} range [{s.vmin}, {s.vmax}]")

# a pattern of our own: strength-reduce multiplication by a power of two into a shift
def to_shift(a: UOp, c: UOp) -> UOp | None: return a << (c.arg.bit_length() - 1) if c.arg > 0 and c.arg & (c.arg - 1) == 0 else None
shift = PatternMatcher([(UPat.var("a") * UPat.cvar("c"), to_shift)])
e = (x * 8 + y * 3).simplify()
print(f"{e.render(simplify=False)}  ->  {graph_rewrite(e, shift).render(simplify=False)}")
assert graph_rewrite(UOp.const(dtypes.int32, 1) * 2, shift).op is Ops.SHL
