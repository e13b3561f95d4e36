"""UPats compiled to Python: one generated function per op tries that op's patterns in order, each pattern's checks
written out as one condition (no closure call per sub-pattern, no dicts of captures), calling its function with the
captures as keywords; a source pattern repeated over every source (without names) becomes one `all(...)`. Patterns
the generator doesn't spell (UPat.any, a repeated source with names) call their interpreted matcher from inside the
generated code, so every pattern matcher compiles.

A pattern's function may carry a guard (`@guard("x.dtype.count == 1 and ...")`): the checks it would make before building
anything, as one expression over its captures, which it can then take as given. The generated matcher writes the expression into the pattern's
condition, so a node the guard rejects costs no call; the interpreted matcher calls it as a function before the pattern's.

UPAT_INTERPRET=1 (or `with Context(UPAT_INTERPRET=1)`) rewrites with the interpreted matcher instead: bench/uop.py
measures both in one run."""
from __future__ import annotations
import ast, builtins, inspect, re
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping
from tg.uop.helpers import ContextVar
from tg.uop.ops import Ops

if TYPE_CHECKING:
  from tg.uop.rewrite import UPat
  from tg.uop.uop import UOp

UPAT_INTERPRET = ContextVar("UPAT_INTERPRET", 0)
MAX_ALTERNATIVES = 24  # more orderings than this (nested commutative sources): call the interpreted matcher

class GuardError(ValueError):
  """A guard names something that is neither a capture of its pattern, one of its `names`, nor a builtin."""

class Guard:
  """A condition over a pattern's captures that both matchers test before calling its function, which may take it as
  given (the function's own early checks, moved here). `names` are the other names the expression uses (helpers, constants)."""
  def __init__(self, expr: str, names: dict[str, Any]):
    self.expr, self.names = expr, names
    read = {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}
    self.free = sorted(n for n in read if n not in names and not hasattr(builtins, n))  # the captures it reads
    self.check: Callable[..., bool] = eval(f"lambda {', '.join(self.free)}{', ' if self.free else ''}**_: {expr}", dict(names))  # noqa: S307
  def inline(self, g: _Gen, bound: dict[str, str], op: Ops) -> str:
    """The expression with each capture replaced by the local that holds it and each name by a constant of g; the
    generated function is for one `op`, so tests of the root's op (`x.op is ADD`) are decided here."""
    self.needs(bound)
    to = {**{k: g.const(v) for k, v in self.names.items()}, **{k: bound[k] for k in self.free}}
    root = next((k for k in self.free if bound[k] == "u"), None)
    return f"({ast.unparse(_Specialise(to, root, op, self.names).visit(ast.parse(self.expr, mode='eval')))})"
  def needs(self, captures: Iterable[str]) -> None:
    """Raise GuardError unless every name the guard reads is among a pattern's `captures`."""
    if missing := [n for n in self.free if n not in captures]:
      raise GuardError(f"guard {self.expr!r} reads {missing}, which its pattern doesn't capture: name them in the UPat or in guard(..., name=value)")

class _Specialise(ast.NodeTransformer):
  """Rename a guard's names, decide `root.op is NAME` / `is not` where NAME is an Ops, and drop what that decides from
  `and`/`or`/`not` (post-order: children first)."""
  def __init__(self, to: dict[str, str], root: str | None, op: Ops, names: dict[str, Any]):
    self.to, self.root, self.op, self.names = to, root, op, names
  def visit_Name(self, n: ast.Name) -> ast.AST: return ast.copy_location(ast.Name(self.to.get(n.id, n.id), n.ctx), n)
  def visit_Attribute(self, n: ast.Attribute) -> ast.AST:
    if isinstance(n.value, ast.Name) and n.value.id == self.root and n.attr in _ROOT_FIELDS:  # the locals compile_op binds
      return ast.copy_location(ast.Name(_ROOT_FIELDS[n.attr], ast.Load()), n)
    return self.generic_visit(n)
  def visit_Subscript(self, n: ast.Subscript) -> ast.AST:
    v, i = n.value, n.slice
    if isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and v.value.id == self.root and v.attr == "src" and \
       isinstance(i, ast.Constant) and type(i.value) is int and i.value >= 0:
      return ast.copy_location(ast.Name(f"s{i.value}", ast.Load()), n)  # a source compile_op binds
    return self.generic_visit(n)
  def visit_Compare(self, n: ast.Compare) -> ast.AST:
    l, r = n.left, n.comparators[0]
    if len(n.ops) == 1 and isinstance(n.ops[0], (ast.Is, ast.IsNot)) and isinstance(l, ast.Attribute) and l.attr == "op" and \
       isinstance(l.value, ast.Name) and l.value.id == self.root and isinstance(r, ast.Name) and isinstance(self.names.get(r.id), Ops):
      return ast.Constant((self.names[r.id] is self.op) == isinstance(n.ops[0], ast.Is))
    return self.generic_visit(n)
  def visit_UnaryOp(self, n: ast.UnaryOp) -> ast.AST:
    n = self.generic_visit(n)  # type: ignore[assignment]
    return ast.Constant(not n.operand.value) if isinstance(n.op, ast.Not) and isinstance(n.operand, ast.Constant) else n
  def visit_BoolOp(self, n: ast.BoolOp) -> ast.AST:
    n = self.generic_visit(n)  # type: ignore[assignment]
    decides, neutral = isinstance(n.op, ast.Or), isinstance(n.op, ast.And)  # the constant that decides it, the one dropped
    if any(isinstance(v, ast.Constant) and bool(v.value) is decides for v in n.values): return ast.Constant(decides)
    rest = [v for v in n.values if not (isinstance(v, ast.Constant) and bool(v.value) is neutral)]
    return ast.Constant(neutral) if not rest else rest[0] if len(rest) == 1 else ast.BoolOp(n.op, rest)

def guard(expr: str, **names: Any) -> Callable[[Callable], Callable]:
  """Give a pattern's function the guard `expr` (see Guard): the matchers test it before calling the function."""
  def wrap(fxn: Callable) -> Callable:
    fxn.guard = Guard(expr, names)  # type: ignore[attr-defined]
    return fxn
  return wrap

def guard_of(fxn: Callable) -> Guard | None: return getattr(fxn, "guard", None)

class _Gen:
  """Source text and the constants it refers to (as g0, g1, ...)."""
  def __init__(self) -> None:
    self.consts: dict[str, Any] = {"Ops": Ops}
    self.lines: list[str] = []
    self.n = 0
  def const(self, v: Any) -> str:
    name = f"g{len(self.consts)}"
    self.consts[name] = v
    return name
  def tmp(self) -> str:
    self.n += 1
    return f"t{self.n}"

def _repeated(p: UPat) -> UPat | None:
  """The pattern p's every source must match, if p has one."""
  from tg.uop.rewrite import _Repeat
  return p.srcs[0][0] if p.srcs is not None and isinstance(p.srcs[0], _Repeat) else None

def _orderings(p: UPat) -> list[tuple[UPat, ...]] | None:
  """The source orderings of p: tuple srcs, or each permutation of a list src; None for a repeated source."""
  if p.srcs is None: return []
  if _repeated(p) is not None: return None
  return [tuple(s) for s in p.srcs]

def _alternatives(p: UPat) -> int | None:
  """How many ways the generator spells p (the product of the orderings below it), None if it can't."""
  from tg.uop.rewrite import _Any
  if isinstance(p, _Any): return None
  if (q := _repeated(p)) is not None: return 1 if q.name is None and _alternatives(q) == 1 else None
  if (ords := _orderings(p)) is None: return None
  if not ords: return 1
  total = 0
  for o in ords:
    n = 1
    for q in o:
      if (a := _alternatives(q)) is None: return None
      n *= a
    total += n
  return total

def _ways(g: _Gen, p: UPat, var: str, bound: dict[str, str], root: bool = False) -> list[tuple[list[str], dict[str, str]]]:
  """Each way p can match the UOp in local `var`: its conditions (joined with `and`) and the capture names bound to
  locals by then (each way has its own copy of `bound`). The root's op is known: the function is per op."""
  src, n, dtype = ("src", "n", "dt") if root else (f"{var}.src", f"len({var}.src)", f"{var}.dtype")  # the root's: locals (see compile_op)
  head: list[str] = []
  if p.op is not None and not root: head.append(f"{var}.op is {g.const(next(iter(p.op)))}" if len(p.op) == 1 else f"{var}.op in {g.const(p.op)}")
  if p.arg is not None: head.append(f"{var}.arg == {g.const(p.arg)}")
  if p.allowed_len != -1: head.append(f"{n} == {p.allowed_len}")
  elif p.min_len: head.append(f"{n} >= {p.min_len}")
  if p.dtype is not None:
    dt = g.const(p.dtype)
    head.append(f"({dtype} in {dt} or {dtype}.scalar() in {dt})")
  out: list[tuple[list[str], dict[str, str]]] = []
  for order in (_orderings(p) or [()]):
    c, b = list(head), dict(bound)
    if p.name is not None:
      if p.name in b: c.append(f"{var} is {b[p.name]}")
      else: b[p.name] = var  # the local that holds this node is the capture
    ways = [(c, b)]
    if (rep := _repeated(p)) is not None:  # nameless, one way (_alternatives checked): the same test on every source
      (conds, _), = _ways(g, rep, "s", b)
      (first, _), = _ways(g, rep, "s0" if root else f"{var}.src[0]", b)  # most nodes fail on their first source: test it without a generator
      c.append(f"(not {src} or {' and '.join(first) or 'True'}) and all({' and '.join(conds) or 'True'} for s in {src})")
    for i, q in enumerate(order):
      if root: sv, bind = f"s{i}", []  # compile_op binds the root's sources
      else: sv = g.tmp(); bind = [f"({sv} := {var}.src[{i}]) is not None"]
      ways = [(c2 + bind + c3, b3) for c2, b2 in ways for c3, b3 in _ways(g, q, sv, b2)]
    out.extend(ways)
  return out

def _call_args(params: Mapping[str, inspect.Parameter], bound: dict[str, str]) -> str:
  """The arguments of a pattern's function: positional when they are exactly its plain parameters (a faster call),
  else as keywords."""
  given = {**bound, "ctx": "ctx"} if "ctx" in params else bound
  if set(given) == set(params) and all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params.values()): return ", ".join(given[k] for k in params)
  return ", ".join(f"{k}={v}" for k, v in given.items())

def compile_op(pats: list[tuple[UPat, Callable]], op: Ops) -> Callable[[UOp, Any], UOp | None]:
  """One function trying `pats` (all dispatching on `op`) in order on a UOp, returning the first result that is not
  None and not the UOp itself."""
  g = _Gen()
  body: list[str] = []
  for pat, fxn in pats:
    f = g.const(fxn)
    params = inspect.signature(fxn).parameters
    grd = guard_of(fxn)
    if (_alternatives(pat) or MAX_ALTERNATIVES + 1) > MAX_ALTERNATIVES:
      m = g.const(pat.matcher)
      ctx_kw = "ctx=ctx, " if "ctx" in params else ""
      check = "" if grd is None else f"{g.const(grd.check)}(**m) and "
      body += [f"  for m in {m}(u, {{}}):", f"    if {check}(r := {f}({ctx_kw}**m)) is not None and r is not u: return r"]
      continue
    for conds, bound in _ways(g, pat, "u", {}, root=True):
      test = " and ".join(conds + ([] if grd is None else [grd.inline(g, bound, op)])) or "True"
      body += [f"  if {test}:", f"    if (r := {f}({_call_args(params, bound)})) is not None and r is not u: return r"]
  src = f"def rewrite_{op.name}(u, ctx):\n" + "".join(_prelude("\n".join(body))) + "\n".join(body) + "\n  return None\n"
  namespace = dict(g.consts)
  exec(compile(src, f"<upat {op.name}>", "exec"), namespace)  # noqa: S102 - our own generated source
  fn = namespace[f"rewrite_{op.name}"]
  fn.source = src
  return fn

_ROOT_FIELDS = {"src": "src", "dtype": "dt"}

def _prelude(body: str) -> list[str]:
  """The root's fields the body reads, bound once to locals: `src`, `n` (its length), `dt`, and `s0`, `s1`, ... (its
  sources, None past the end: every read of one comes after a test of `n`). Each pattern read them again before."""
  used = set(re.findall(r"\b(src|n|dt|s\d+)\b", body))
  sources = sorted(int(v[1:]) for v in used if v[0] == "s" and v[1:].isdigit())
  out = ["  src = u.src\n"] if used - {"dt"} else []
  if "n" in used or sources: out.append("  n = len(src)\n")
  if "dt" in used: out.append("  dt = u.dtype\n")
  return out + [f"  s{i} = src[{i}] if n > {i} else None\n" for i in sources]

def compile_matcher(patterns: list[tuple[UPat, Callable]]) -> dict[Ops, Callable[[UOp, Any], UOp | None]]:
  """op -> the compiled function for the patterns that can match it, in their order."""
  by_op: dict[Ops, list[tuple[UPat, Callable]]] = {}
  for pat, fxn in patterns:
    for op in pat.op or (): by_op.setdefault(op, []).append((pat, fxn))
  return {op: compile_op(ps, op) for op, ps in by_op.items()}

