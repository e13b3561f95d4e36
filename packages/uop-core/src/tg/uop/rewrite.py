"""Patterns over UOps, a matcher that dispatches on the op, and graph_rewrite: rewriting a graph to a fixed point."""
from __future__ import annotations
import gc, inspect, itertools
from typing import Any, Callable, Iterable, Sequence
from tg.uop.dtype import DType
from tg.uop.ops import GroupOp, Ops
from tg.uop.uop import UOp, build_uop
from tg.uop.upat_compile import UPAT_INTERPRET, compile_matcher, guard_of
from tg.uop.track import VIZ, traced

class UPat:
  """A pattern: `src` is a tuple (in order), a list (in any order) or one UPat (every source); None matches anything."""
  __slots__ = ("op", "dtype", "arg", "name", "srcs", "allowed_len", "min_len", "early_reject", "_matcher")
  def __init__(self, op: Ops | Iterable[Ops] | None = None, dtype: DType | Iterable[DType] | None = None,
               src: UPat | tuple[UPat, ...] | list[UPat] | None = None, arg: Any = None, name: str | None = None, allow_any_len: bool = False):
    self.op: frozenset[Ops] | None = None if op is None else frozenset((op,) if isinstance(op, Ops) else op)
    self.dtype: frozenset[DType] | None = None if dtype is None else frozenset((dtype,) if isinstance(dtype, DType) else dtype)
    self.arg, self.name = arg, name
    self.srcs: list[Sequence[UPat]] | None
    if src is None: self.srcs = None
    elif isinstance(src, list): self.srcs = [tuple(p) for p in dict.fromkeys(itertools.permutations(src))]
    elif isinstance(src, tuple): self.srcs = [src]
    else: self.srcs = [_Repeat(src)]
    self.allowed_len = -1 if allow_any_len or src is None or isinstance(src, UPat) else len(src)
    self.min_len = len(src) if isinstance(src, (tuple, list)) else 0  # allow_any_len still needs every listed source
    first = self.srcs[0] if self.srcs and type(self.srcs[0]) is tuple else ()
    self.early_reject = frozenset(next(iter(p.op)) for p in first if p.op is not None and len(p.op) == 1)
    self._matcher: Callable[[UOp, dict[str, UOp]], list[dict[str, UOp]]] | None = None

  @staticmethod
  def var(name: str | None = None, dtype: DType | Iterable[DType] | None = None) -> UPat: return UPat(dtype=dtype, name=name)
  @staticmethod
  def cvar(name: str | None = None, dtype: DType | Iterable[DType] | None = None, vec: bool = True) -> UPat:
    return UPat((Ops.CONST, Ops.VCONST) if vec else Ops.CONST, dtype, name=name)
  @staticmethod
  def const(dtype: DType | Iterable[DType] | None, b: Any) -> UPat: return UPat(Ops.CONST, dtype, arg=b)
  @staticmethod
  def any(*pats: UPat) -> UPat: return _Any(pats)
  def named(self, name: str) -> UPat:
    p = UPat.__new__(type(self))
    for k in UPat.__slots__: setattr(p, k, getattr(self, k))
    p.name, p._matcher = name, None
    if isinstance(self, _Any): p.pats = self.pats  # type: ignore[attr-defined]
    return p

  # builders that read like the UOp expressions they match
  def alu(self, op: Ops, *src: UPat | Any) -> UPat:
    pats = (self, *(s if isinstance(s, UPat) else UPat.const(None, s) for s in src))
    return UPat(op, None, list(pats) if op in GroupOp.Commutative else pats)
  def __add__(self, x: UPat | Any) -> UPat: return self.alu(Ops.ADD, x)
  def __radd__(self, x: UPat | Any) -> UPat: return self.alu(Ops.ADD, x)
  def __mul__(self, x: UPat | Any) -> UPat: return self.alu(Ops.MUL, x)
  def __rmul__(self, x: UPat | Any) -> UPat: return self.alu(Ops.MUL, x)
  def __floordiv__(self, x: UPat | Any) -> UPat: return self.alu(Ops.IDIV, x)
  def __mod__(self, x: UPat | Any) -> UPat: return self.alu(Ops.MOD, x)
  def __truediv__(self, x: UPat | Any) -> UPat: return self.alu(Ops.FDIV, x)
  def __and__(self, x: UPat | Any) -> UPat: return self.alu(Ops.AND, x)
  def __or__(self, x: UPat | Any) -> UPat: return self.alu(Ops.OR, x)
  def __xor__(self, x: UPat | Any) -> UPat: return self.alu(Ops.XOR, x)
  def __lshift__(self, x: UPat | Any) -> UPat: return self.alu(Ops.SHL, x)
  def __rshift__(self, x: UPat | Any) -> UPat: return self.alu(Ops.SHR, x)
  def __lt__(self, x: UPat | Any) -> UPat: return self.alu(Ops.CMPLT, x)
  def ne(self, x: UPat | Any) -> UPat: return self.alu(Ops.CMPNE, x)
  def eq(self, x: UPat | Any) -> UPat: return self.alu(Ops.CMPEQ, x)
  def maximum(self, x: UPat | Any) -> UPat: return self.alu(Ops.MAX, x)
  def where(self, t: UPat | Any, f: UPat | Any) -> UPat: return self.alu(Ops.WHERE, t, f)
  def cast(self, dtype: DType | None = None, name: str | None = None) -> UPat: return UPat(Ops.CAST, dtype, (self,), name=name)
  def bitcast(self, dtype: DType | None = None) -> UPat: return UPat(Ops.BITCAST, dtype, (self,))
  def gep(self, i: tuple[int, ...] | None = None) -> UPat: return UPat(Ops.GEP, None, (self,), i)
  def load(self, **kw: Any) -> UPat: return UPat(Ops.LOAD, src=(self,), **kw)
  def store(self, val: UPat, **kw: Any) -> UPat: return UPat(Ops.STORE, src=(self, val), **kw)

  def match(self, uop: UOp, store: dict[str, UOp]) -> list[dict[str, UOp]]:
    """Every way this pattern matches `uop`, as dicts of named captures extending `store`."""
    return self.matcher(uop, store)

  @property
  def matcher(self) -> Callable[[UOp, dict[str, UOp]], list[dict[str, UOp]]]:
    """`match` compiled into a closure that does only the checks this pattern needs (built once, on first use)."""
    if self._matcher is None: self._matcher = self._compile()
    return self._matcher

  def _compile(self) -> Callable[[UOp, dict[str, UOp]], list[dict[str, UOp]]]:
    op, dtype, arg, name, n, min_len = self.op, self.dtype, self.arg, self.name, self.allowed_len, self.min_len
    def head(u: UOp, store: dict[str, UOp]) -> dict[str, UOp] | None:
      """The checks on the node itself; the store extended with its capture, or None."""
      if (op is not None and u.op not in op) or (arg is not None and arg != u.arg) or (n != -1 and len(u.src) != n) or len(u.src) < min_len or \
         (dtype is not None and u.dtype not in dtype and u.dtype.scalar() not in dtype): return None
      if name is None: return store
      if (prev := store.get(name)) is None: return {**store, name: u}
      return store if prev is u else None
    if self.srcs is None:
      return lambda u, store: [] if (st := head(u, store)) is None else [st]
    alternatives = [(True, p[0].matcher) if isinstance(p, _Repeat) else (False, tuple(q.matcher for q in p)) for p in self.srcs]
    def match(u: UOp, store: dict[str, UOp]) -> list[dict[str, UOp]]:
      if (st := head(u, store)) is None: return []
      out: list[dict[str, UOp]] = []
      for repeat, ms in alternatives:
        stores = [st]
        for s, m in zip(u.src, itertools.repeat(ms) if repeat else ms):  # type: ignore[arg-type]
          stores = m(s, stores[0]) if len(stores) == 1 else [r for x in stores for r in m(s, x)]
          if not stores: break
        out.extend(stores)
      return out
    return match

  def capture_names(self) -> set[str]:
    """The names this pattern and the patterns under it capture."""
    out: set[str] = set()
    stack: list[UPat] = [self]
    while stack:
      p = stack.pop()
      if p.name is not None: out.add(p.name)
      if isinstance(p, _Any): stack.extend(p.pats)
      for alt in p.srcs or (): stack.extend(alt[:1] if isinstance(alt, _Repeat) else alt)
    return out

  def __repr__(self) -> str:
    return f"UPat({sorted(o.name for o in self.op) if self.op else None}, name={self.name!r}, arg={self.arg!r})"

class _Repeat(tuple):
  """The sources of a pattern whose single UPat must match every source."""
  def __new__(cls, pat: UPat) -> _Repeat: return super().__new__(cls, (pat,))
  def __iter__(self): return itertools.repeat(self[0])  # type: ignore[override]

class _Any(UPat):
  __slots__ = ("pats",)
  def __init__(self, pats: Sequence[UPat]):
    super().__init__()
    self.pats = tuple(pats)
    ops = [p.op for p in pats]
    self.op = None if any(o is None for o in ops) else frozenset().union(*ops)  # type: ignore[arg-type]
  def _compile(self) -> Callable[[UOp, dict[str, UOp]], list[dict[str, UOp]]]:
    ms = tuple(p.matcher for p in self.pats)
    return lambda u, store: [r for m in ms for r in m(u, store)]

class PatternMatcher:
  """An ordered list of (pattern, function); `rewrite` returns the first non-None result of a matching function.
  Functions take the named captures as keyword arguments, and `ctx` too if they name it."""
  def __init__(self, patterns: Sequence[tuple[UPat, Callable[..., UOp | None]]]):
    self.patterns = list(patterns)
    self._compiled: dict[Ops, Callable[[UOp, Any], UOp | None]] | None = None
    self.pdict: dict[Ops, list[tuple[Callable[[UOp, dict[str, UOp]], list[dict[str, UOp]]], Callable, frozenset[Ops], bool,
                                     Callable[..., bool] | None]]] = {}
    for pat, fxn in self.patterns:
      if pat.op is None: raise ValueError(f"a top-level pattern needs an op to dispatch on: {pat}")
      has_ctx = "ctx" in inspect.signature(fxn).parameters
      if (grd := guard_of(fxn)) is not None: grd.needs(pat.capture_names())
      check = None if grd is None else grd.check
      for op in pat.op: self.pdict.setdefault(op, []).append((pat.matcher, fxn, pat.early_reject, has_ctx, check))
  def __add__(self, other: PatternMatcher) -> PatternMatcher: return PatternMatcher(self.patterns + other.patterns)
  def rewrite(self, uop: UOp, ctx: Any = None) -> UOp | None:
    """The first result of a matching pattern's function that is not None and not uop itself."""
    return self.rewriter()(uop, ctx)
  def rewriter(self) -> Callable[[UOp, Any], UOp | None]:
    """rewrite as a function of (uop, ctx): the compiled matcher, or with UPAT_INTERPRET=1 the interpreted one."""
    if UPAT_INTERPRET: return self.rewrite_interpreted
    get = self.compiled().get
    def rewrite(uop: UOp, ctx: Any) -> UOp | None: return None if (f := get(uop.op)) is None else f(uop, ctx)
    return rewrite
  def compiled(self) -> dict[Ops, Callable[[UOp, Any], UOp | None]]:
    """op -> the compiled function trying this matcher's patterns for that op (built on first use)."""
    if (table := self._compiled) is None: table = self._compiled = compile_matcher(self.patterns)
    return table
  def rewrite_interpreted(self, uop: UOp, ctx: Any = None) -> UOp | None:
    return None if (m := self.first_match(uop, ctx)) is None else m[0]
  def first_match(self, uop: UOp, ctx: Any = None) -> tuple[UOp, Callable] | None:
    """The interpreted rewrite with the function of the pattern that fired (VIZ records it)."""
    entries = self.pdict.get(uop.op)
    if entries is None: return None
    src_ops = {s.op for s in uop.src}
    for match, fxn, early_reject, has_ctx, check in entries:
      if not early_reject <= src_ops: continue
      for m in match(uop, {}):
        if check is not None and not check(**m): continue
        if (ret := (fxn(ctx=ctx, **m) if has_ctx else fxn(**m))) is not None and ret is not uop: return ret, fxn
    return None

class RewriteLoop(RuntimeError): pass

def _rewrite(root: UOp, pm: PatternMatcher, ctx: Any, bottom_up: bool, name: str | None) -> dict[UOp, UOp]:
  """Rewrite every node reachable from root to a fixed point; returns old -> new for every node visited. With VIZ on
  the rewrite is recorded (tg.uop.track): this branch is all it costs when off. UPAT_INTERPRET=1 runs the reference:
  the interpreted matcher in `_walk`."""
  if VIZ.value: return traced(root, pm, ctx, bottom_up, name, _walk)
  # each collection the garbage collector starts meanwhile traverses the whole graph: pausing it takes a quarter off a
  # 100,000-node rewrite (reference counting still frees the walk's garbage; cycles wait for the next collection). Both
  # matchers run paused, so bench/uop.py's ratio is the matchers' own.
  if not gc.isenabled(): return _walk_either(root, pm, ctx, bottom_up, name)
  gc.disable()
  try: return _walk_either(root, pm, ctx, bottom_up, name)
  finally: gc.enable()

def _walk_either(root: UOp, pm: PatternMatcher, ctx: Any, bottom_up: bool, name: str | None) -> dict[UOp, UOp]:
  if UPAT_INTERPRET: return _walk(root, pm.rewrite_interpreted, ctx, bottom_up, name)
  return _walk_compiled(root, pm.compiled(), ctx, bottom_up, name)

def _loop(name: str | None, n: UOp) -> RewriteLoop:
  return RewriteLoop(f"graph_rewrite{'(' + name + ')' if name else ''} rewrote {n.op} into a graph that contains it")

_NEW = object()  # _walk_compiled's state of a node not seen yet

def _walk_compiled(root: UOp, table: dict[Ops, Callable[[UOp, Any], UOp | None]], ctx: Any, bottom_up: bool, name: str | None) -> dict[UOp, UOp]:
  """`_walk` for the compiled matcher, in the same order, with less work per node: the stack holds bare UOps (a node
  stays on it while its sources are rewritten and is finished when it is on top again), only sources not done yet are
  pushed, a leaf no pattern matches is done as it is met (no visit: nothing can observe when), a node whose sources
  are all done is finished on its first visit, `state` holds a node while its sources
  are rewritten (None) or the node it was rewritten to until that is done, and a node whose op no pattern matches
  costs one dict lookup. A source that isn't done when its user finishes can only be one that contains its user: a
  rewrite loop."""
  done: dict[UOp, UOp] = {}
  state: dict[UOp, UOp | None] = {}
  get_fn, done_src, state_get = table.get, done.__getitem__, state.get
  build, new_node = build_uop, _NEW
  stack = [root]
  push = stack.append
  while stack:
    n = stack[-1]
    if n in done: stack.pop(); continue  # noqa: E702
    if (st := state_get(n, new_node)) is new_node:  # first visit
      if bottom_up and (f := get_fn(n.op)) is not None and (new := f(n, ctx)) is not None:
        state[n] = new
        push(new)
        continue
      src = n.src
      if len(src) == 2:  # most nodes: no loop
        a, b = src
        if b not in done:
          if b.src or get_fn(b.op) is not None: push(b)
          else: done[b] = b
        if a not in done:
          if a.src or get_fn(a.op) is not None: push(a)
          else: done[a] = a
      else:
        for s in reversed(src):
          if s not in done:
            if s.src or get_fn(s.op) is not None: push(s)
            else: done[s] = s
      if stack[-1] is not n:
        state[n] = None
        continue
      # every source is done: finish it now
    elif st is not None:  # its replacement is done (else the replacement contains it)
      try: done[n] = done[st]
      except KeyError: raise _loop(name, n) from None
      stack.pop()
      continue
    src = n.src
    if len(src) == 2:  # most nodes: no map to build
      a, b = src
      try: a2, b2 = done[a], done[b]
      except KeyError: raise _loop(name, n) from None
      n2 = n if a2 is a and b2 is b else build(UOp, n.op, n.dtype, (a2, b2), n.arg)
    elif src:
      try: new_src = tuple(map(done_src, src))
      except KeyError: raise _loop(name, n) from None
      n2 = n if new_src == src else build(UOp, n.op, n.dtype, new_src, n.arg)
    else: n2 = n
    if bottom_up:
      if n2 is not n:  # visit the changed node as a new one, trying the patterns on it first
        # (its sources are done: when nothing matches its op, that visit would only find it done, so it is done here)
        if n2 in done or get_fn(n2.op) is not None or n2 in state:
          state[n] = n2
          push(n2)
          continue
    elif (f := get_fn(n2.op)) is not None and (new := f(n2, ctx)) is not None:
      state[n] = new
      push(new)
      continue
    stack.pop()
    done[n] = n2
    if n2 is not n and n2 not in done: done[n2] = n2
  return done

def _walk(root: UOp, rewrite: Callable[[UOp, Any], UOp | None], ctx: Any, bottom_up: bool, name: str | None) -> dict[UOp, UOp]:
  """Default order: a node's sources are rewritten first, then the node. bottom_up=True tries the node first.
  Iterative, so a 100,000-deep chain needs no recursion."""
  done: dict[UOp, UOp] = {}
  active: set[UOp] = set()
  # stack entries: (node, stage, rewritten-to); stage 0 = visit, 1 = sources done, 2 = take the result of the rewrite
  stack: list[tuple[UOp, int, UOp | None]] = [(root, 0, None)]
  while stack:
    n, stage, target = stack.pop()
    if stage == 0:
      if n in done: continue
      if n in active: raise RewriteLoop(f"graph_rewrite{'(' + name + ')' if name else ''} rewrote {n.op} into a graph that contains it")
      if bottom_up and (new := rewrite(n, ctx)) is not None:
        active.add(n)
        stack.append((n, 2, new)); stack.append((new, 0, None))
        continue
      active.add(n)
      stack.append((n, 1, None))
      stack.extend((s, 0, None) for s in reversed(n.src) if s not in done)
    elif stage == 1:
      new_src = tuple(done[s] for s in n.src)
      if new_src != n.src:
        changed = UOp(n.op, n.dtype, new_src, n.arg)
        if bottom_up:  # the node changed: visit it as a new node, trying the patterns on it first
          stack.append((n, 2, changed)); stack.append((changed, 0, None))
          continue
        n2 = changed
      else: n2 = n
      if not bottom_up and (new := rewrite(n2, ctx)) is not None:
        stack.append((n, 2, new)); stack.append((new, 0, None))
        continue
      done[n] = n2
      if n2 is not n: done.setdefault(n2, n2)
      active.discard(n)
    else:
      done[n] = done[target]  # type: ignore[index]
      active.discard(n)
  return done

def graph_rewrite(sink: UOp, pm: PatternMatcher, ctx: Any = None, bottom_up: bool = False, name: str | None = None) -> UOp:
  """`sink` with `pm` applied everywhere until nothing matches."""
  return _rewrite(sink, pm, ctx, bottom_up, name)[sink]

def graph_rewrite_map(sink: UOp, pm: PatternMatcher, ctx: Any = None, bottom_up: bool = False, name: str | None = None) -> dict[UOp, UOp]:
  """Like graph_rewrite, but returns what each node of the original graph became; bottom_up, a node under one that was
  rewritten before its sources were visited is never reached, and isn't in the map."""
  done = _rewrite(sink, pm, ctx, bottom_up, name)
  return {u: done[u] for u in sink.toposort() if u in done}
