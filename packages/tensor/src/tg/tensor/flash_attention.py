"""Flash attention: softmax(q k^T * scale + mask) v as three hand-written kernels (Tensor.custom_kernel) that never hold
the Nq x Nk score matrix, so memory grows with N, not N^2.

The forward walks, for each tile of queries, the tiles of keys with an online softmax (a running max and sum per
query, the output rescaled when the max grows) and keeps the log-sum-exp per query. The backward recomputes the scores
tile by tile from it: one kernel per query tile sums dq over the keys, one per key tile sums dk and dv over the queries
(and over the query heads that share the key head, for grouped-query attention, so K/V are never repeated). Causal
masking ends the loops at the diagonal tile; a boolean or additive mask is read where it is, broadcast by index.
Everything accumulates in float32. In a tile (8 x 8) the query rows are unrolled and the keys are vector lanes (UPCAST),
so the C compiler gets independent vector FMAs; the inputs are padded to whole tiles and the padding is masked out."""
from __future__ import annotations
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable
from tg.uop import UOp, Ops, AxisType, AddrSpace, KernelInfo, dtypes, ContextVar, round_up, all_int
from tg.tensor.custom import kernel_of

if TYPE_CHECKING:
  from tg.tensor.tensor import Tensor

FLASH_ATTENTION = ContextVar("FLASH_ATTENTION", 1)  # 0: scaled_dot_product_attention always builds the full score matrix
LOG2E, LN2 = 1.4426950408889634, 0.6931471805599453

@dataclass(frozen=True)
class Plan:
  """The shapes one attention call runs at: bh rows of (batch, query head), `group` query heads per key head."""
  bh: int
  heads: int
  group: int
  nq: int
  nk: int
  d: int
  dv: int
  scale: float
  causal: bool
  mask: str | None = None  # None, "bool" or "add"
  mask_bh: tuple[bool, bool] = (False, False)  # the mask has a batch axis, a head axis (else it broadcasts over them)
  tile: int = 8  # queries and keys per tile
  @property
  def nqp(self) -> int: return round_up(self.nq, self.tile)
  @property
  def nkp(self) -> int: return round_up(max(self.nk, self.nq) if self.causal else self.nk, self.tile)  # causal: the diagonal tile exists

def _f32(x: UOp) -> UOp: return x if x.dtype == dtypes.float else x.cast(dtypes.float)

def _dot(rows: Callable[[UOp], UOp], lanes: Callable[[UOp], UOp], n: int, axis: int) -> UOp:
  e = UOp.range(n, axis, AxisType.REDUCE)
  return (_f32(rows(e)) * _f32(lanes(e))).reduce(e, arg=Ops.ADD)

def _scores(p: Plan, rows: Callable[[UOp], UOp], lanes: Callable[[UOp], UOp], qi: UOp, kj: UOp, bh: UOp, M: tuple[UOp, ...],
            axis: int) -> UOp:
  """The score scale * (row . lane) + mask over the head dim in base 2 (times log2(e), so exp2 takes it), -inf where
  attention is not allowed (qi, kj: the query and key of the element, one of them through the lane range)."""
  s = _dot(rows, lanes, p.d, axis) * (p.scale * LOG2E)
  # compared as int32, a vector compare: as indices the lanes were compared one by one and packed into a mask (72
  # scalar compares in the forward kernel; 4-8% of each kernel's time)
  k32, q32 = kj.cast(dtypes.int32), qi.cast(dtypes.int32)
  ok = (k32 < p.nk) if p.nk != p.nkp else None  # padded keys
  if p.causal: ok = (k32 <= q32) if ok is None else ok & (k32 <= q32)
  if M:
    b, h = (bh // p.heads if p.mask_bh[0] else 0), (bh % p.heads if p.mask_bh[1] else 0)
    mv = M[0][b, h, qi.minimum(p.nq - 1), kj.minimum(p.nk - 1)]  # padding reads the last row / column: its keys are masked anyway
    if p.mask == "bool": ok = mv if ok is None else ok & mv
    else: s = s + _f32(mv) * LOG2E
  return s if ok is None else ok.where(s, -math.inf)

def _exp2(x: UOp) -> UOp:
  """2^x for x <= 0 (0 at -inf) in plain arithmetic (cheaper than the C library's exp2f per lane): 2^n by building the
  float's exponent bits (n = -127 gives the bits of 0.0, so no test for underflow), 2^f for |f| <= 1/2 by the Taylor
  series of e^(f ln 2) to degree 6 (relative error 1.2e-7, float32's)."""
  x = x.maximum(-127.0)
  n = (x + 12582912.0) - 12582912.0  # round to nearest: 1.5 * 2^23 pushes the fraction out of the mantissa
  f = x - n
  poly = f.const_like(LN2 ** 6 / 720)
  for k in range(5, -1, -1): poly = poly * f + LN2 ** k / math.factorial(k)
  return poly * ((n.cast(dtypes.int32) + 127) * (1 << 23)).bitcast(dtypes.float.vec(x.dtype.count) if x.dtype.count > 1 else dtypes.float)

def _fold(vals: list[UOp], op: Ops) -> UOp:
  """vals combined by op as a tree (independent ops for the C compiler)."""
  while len(vals) > 1: vals = [vals[i].alu(op, vals[i + 1]) if i + 1 < len(vals) else vals[i] for i in range(0, len(vals), 2)]
  return vals[0]

def _reg(shape: tuple[int, ...], slot: int) -> UOp: return UOp.placeholder(shape, dtypes.float, slot, AddrSpace.REG)

def _fill(reg: UOp, val: float, after: tuple[UOp, ...], axis: int) -> UOp:
  """reg (rows, cols) set to val once `after` opened (so it is reset for every tile)."""
  r, c = UOp.range(reg.shape[0], axis), UOp.range(reg.shape[1], axis + 1)
  return reg.after(*after)[r, c].set(val, end=(r, c))

def _over_dim(n: int, axis: int) -> tuple[UOp, UOp]:
  """A loop over n elements, up to 8 at a time as vector lanes: (index, loop range to END)."""
  w = next(w for w in (8, 4, 2, 1) if n % w == 0)
  do, di = UOp.range(n // w, axis), UOp.range(w, axis + 1, AxisType.UPCAST)
  return do * w + di, do

def _stage(reg: UOp, t: int, lanes: UOp, val: UOp, loop: UOp) -> UOp:
  """Row t of the register reg set to val over the lane range inside `loop`: a tile's scores or weights, computed and
  written as one vector and read back one at a time (codegen pushes a GEP of one lane into the ops that made it, so
  reading the lanes of the vector would compute its exp2 lane by lane)."""
  return reg.after(loop)[t, lanes].store(val).end(lanes)

def _weighted(w: UOp, t: int, row: Callable[[int], UOp]) -> UOp:
  """sum over the columns u of row t of the register w (after its _stage) of w[t, u] * row(u)."""
  out = w[t, 0] * _f32(row(0))
  for u in range(1, w.shape[1]): out = out + w[t, u] * _f32(row(u))
  return out

def _accumulate(acc: UOp, loop: UOp, n: int, axis: int, rows: Callable[[int, UOp], UOp], scale: Callable[[int], UOp | None]) -> list[UOp]:
  """Each row t of the register acc (tile, n) rescaled by scale(t) (if any) plus rows(t, column) inside `loop`."""
  c, cl = _over_dim(n, axis)
  out = []
  for t in range(acc.shape[0]):
    old = acc.after(loop)[t, c]
    out.append(acc.after(loop)[t, c].store((old if (f := scale(t)) is None else old * f) + rows(t, c)).end(cl))
  return out

def _write(dst: Callable[[int, UOp], UOp], acc: UOp, n: int, axis: int, fxn: Callable[[int, UOp], UOp]) -> list[UOp]:
  """dst(t, column) = fxn(t, acc[t, column]) for each row t, cast to the destination's dtype."""
  c, cl = _over_dim(n, axis)
  return [(ix := dst(t, c)).store(fxn(t, acc[t, c]).cast(ix.dtype)).end(cl) for t in range(acc.shape[0])]

def _sink(name: str, p: Plan, *effects: UOp) -> UOp:
  return UOp.group(*effects).sink(arg=KernelInfo(name=f"{name}_{p.nqp}_{p.nkp}", opts_to_apply=()))

def forward_kernel(p: Plan) -> Callable[..., UOp]:
  """O (bh, nqp, dv) and the log-sum-exp L (bh, nqp, base 2) from Q (bh, nqp, d), K (bh/group, nkp, d), V (bh/group, nkp, dv)."""
  def fxn(O: UOp, L: UOp, Q: UOp, K: UOp, V: UOp, *M: UOp) -> UOp:
    T = p.tile
    bh, ib = UOp.range(p.bh, 0, AxisType.GLOBAL), UOp.range(p.nqp // T, 1, AxisType.GLOBAL)
    kv = bh // p.group
    m, l, acc = (_fill(_reg((T, 1), 0), -math.inf, (bh, ib), 2), _fill(_reg((T, 1), 1), 0.0, (bh, ib), 4),
                 _fill(_reg((T, p.dv), 2), 0.0, (bh, ib), 6))
    P, S = _reg((T, T), 3), _reg((T, T), 4)
    jb = UOp.range(ib + 1 if p.causal else p.nkp // T, 8, AxisType.REDUCE)
    uk = UOp.range(T, 9, AxisType.UPCAST)
    kj, staged, corrs, stores = jb * T + uk, [], [], []
    for t in range(T):
      qi = ib * T + t
      s = _scores(p, lambda e: Q[bh, qi, e], lambda e: K[kv, kj, e], qi, kj, bh, M, 10)  # noqa: B023
      mo, lo = m.after(jb)[t, 0], l.after(jb)[t, 0]
      st = S.after(_stage(S, t, uk, s, jb))
      mn = mo.maximum(_fold([st[t, u] for u in range(T)], Ops.MAX))
      base = mn.eq(-math.inf).where(0.0, mn)  # nothing allowed yet: no rescale, no weight (no -inf - -inf)
      pr = _exp2(s - base)
      corrs.append(_exp2(mo - base))
      staged.append(_stage(P, t, uk, pr, jb))
      pt = P.after(staged[t])
      stores += [m.after(jb)[t, 0].store(mn), l.after(jb)[t, 0].store(lo * corrs[t] + _fold([pt[t, u] for u in range(T)], Ops.ADD))]
    P = P.after(*staged)
    stores += _accumulate(acc, jb, p.dv, 11, lambda t, c: _weighted(P, t, lambda u: V[kv, jb * T + u, c]), corrs.__getitem__)
    done = UOp.group(*stores).end(jb)
    m, l, acc = m.after(done), l.after(done), acc.after(done)
    outs = _write(lambda t, c: O[bh, ib * T + t, c], acc, p.dv, 13, lambda t, a: a / l[t, 0])
    outs += [L[bh, ib * T + t].store(m[t, 0] + l[t, 0].log2()) for t in range(T)]  # log-sum-exp in base 2
    return _sink("flash_fwd", p, UOp.group(*outs).end(bh, ib))
  return fxn

def _probs(p: Plan, s: UOp, L: UOp, Dl: UOp, dp: UOp) -> tuple[UOp, UOp]:
  """The softmax weights P = exp(s - lse) recomputed from the forward's log-sum-exp, and dS = P * (dP - rowsum(dO * O))."""
  pr = _exp2(s - L)
  return pr, pr * (dp - Dl)

def dq_kernel(p: Plan) -> Callable[..., UOp]:
  """dQ (bh, nqp, d) from Q, K, V, dO, L, Dl: for each query tile, a loop over the key tiles."""
  def fxn(dQ: UOp, Q: UOp, K: UOp, V: UOp, dO: UOp, L: UOp, Dl: UOp, *M: UOp) -> UOp:
    T = p.tile
    bh, ib = UOp.range(p.bh, 0, AxisType.GLOBAL), UOp.range(p.nqp // T, 1, AxisType.GLOBAL)
    kv = bh // p.group
    acc, G = _fill(_reg((T, p.d), 0), 0.0, (bh, ib), 2), _reg((T, T), 1)
    jb = UOp.range(ib + 1 if p.causal else p.nkp // T, 4, AxisType.REDUCE)
    uk = UOp.range(T, 5, AxisType.UPCAST)
    kj, staged = jb * T + uk, []
    for t in range(T):
      qi = ib * T + t
      s = _scores(p, lambda e: Q[bh, qi, e], lambda e: K[kv, kj, e], qi, kj, bh, M, 6)  # noqa: B023
      dp = _dot(lambda e: dO[bh, qi, e], lambda e: V[kv, kj, e], p.dv, 7)  # noqa: B023
      staged.append(_stage(G, t, uk, _probs(p, s, L[bh, qi], Dl[bh, qi], dp)[1], jb))
    G = G.after(*staged)
    done = UOp.group(*_accumulate(acc, jb, p.d, 8, lambda t, c: _weighted(G, t, lambda u: K[kv, jb * T + u, c]), lambda t: None)).end(jb)
    acc = acc.after(done)
    return _sink("flash_dq", p, UOp.group(*_write(lambda t, c: dQ[bh, ib * T + t, c], acc, p.d, 10, lambda t, a: a * p.scale)).end(bh, ib))
  return fxn

def dkv_kernel(p: Plan) -> Callable[..., UOp]:
  """dK (bh/group, nkp, d) and dV (bh/group, nkp, dv) from Q, K, V, dO, L, Dl: for each key tile, a loop over the query
  heads that share it and their query tiles (from the diagonal on, when causal)."""
  def fxn(dK: UOp, dV: UOp, Q: UOp, K: UOp, V: UOp, dO: UOp, L: UOp, Dl: UOp, *M: UOp) -> UOp:
    T = p.tile
    kv, jb = UOp.range(p.bh // p.group, 0, AxisType.GLOBAL), UOp.range(p.nkp // T, 1, AxisType.GLOBAL)
    dk, dv = _fill(_reg((T, p.d), 0), 0.0, (kv, jb), 2), _fill(_reg((T, p.dv), 1), 0.0, (kv, jb), 4)
    g = UOp.range(p.group, 6, AxisType.REDUCE)
    r = UOp.range((p.nqp // T - jb).maximum(0) if p.causal else p.nqp // T, 7, AxisType.REDUCE)
    ib, bh = (p.nqp // T - 1 - r if p.causal else r), kv * p.group + g  # causal: from the last query tile down to the diagonal
    uq = UOp.range(T, 8, AxisType.UPCAST)
    P, G = _reg((T, T), 2), _reg((T, T), 3)
    qi, staged = ib * T + uq, []
    for u in range(T):
      kj = jb * T + u
      s = _scores(p, lambda e: K[kv, kj, e], lambda e: Q[bh, qi, e], qi, kj, bh, M, 9)  # noqa: B023
      dp = _dot(lambda e: V[kv, kj, e], lambda e: dO[bh, qi, e], p.dv, 10)  # noqa: B023
      pr, ds = _probs(p, s, L[bh, qi], Dl[bh, qi], dp)
      staged += [_stage(P, u, uq, pr, r), _stage(G, u, uq, ds, r)]
    P, G = P.after(*staged), G.after(*staged)
    upd = _accumulate(dk, r, p.d, 11, lambda u, c: _weighted(G, u, lambda t: Q[bh, ib * T + t, c]), lambda u: None)
    upd += _accumulate(dv, r, p.dv, 13, lambda u, c: _weighted(P, u, lambda t: dO[bh, ib * T + t, c]), lambda u: None)
    done = UOp.group(*upd).end(g, r)
    dk, dv = dk.after(done), dv.after(done)
    outs = _write(lambda u, c: dK[kv, jb * T + u, c], dk, p.d, 15, lambda u, a: a * p.scale)
    outs += _write(lambda u, c: dV[kv, jb * T + u, c], dv, p.dv, 17, lambda u, a: a)
    return _sink("flash_dkv", p, UOp.group(*outs).end(kv, jb))
  return fxn

# ***** the tensor side: shapes, padding, the kernels and their backward *****

def _heads4(t: Tensor) -> Tensor:
  """(..., heads, n, d) as (batch, heads, n, d): no batch axes is a batch of 1, no heads axis is 1 head."""
  return t.reshape(1, 1, *t.shape) if t.ndim == 2 else t.reshape(-1, *t.shape[-3:])

def _mask4(mask: Tensor, q: Tensor, nk: int) -> tuple[Tensor, tuple[bool, bool]] | None:
  """The mask as (1 or batch, 1 or heads, nq, nk) and whether it has a batch and a heads axis; None when it broadcasts
  to more axes than the query has (the full score matrix path handles that)."""
  if mask.ndim > q.ndim or (mask.dtype != dtypes.bool and not dtypes.is_float(mask.dtype)): return None
  m = mask.reshape((1,) * (q.ndim - mask.ndim) + mask.shape)
  m = m.expand(*m.shape[:-2], q.shape[-2], nk)
  lead, heads = m.shape[:-3], (m.shape[-3] if q.ndim >= 3 else 1)
  has_b = any(s != 1 for s in lead)
  if has_b: m = m.expand(*q.shape[:-3], *m.shape[-3:])
  if heads not in (1, q.shape[-3] if q.ndim >= 3 else 1): return None
  return m.reshape(-1 if has_b else 1, heads, q.shape[-2], nk), (has_b, heads != 1)

def plan_for(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, is_causal: bool, enable_gqa: bool) -> Plan | None:
  """The flash plan for these inputs, or None where it doesn't apply (FLASH_ATTENTION=0, dtypes other than float32,
  float16 and bfloat16, axes that broadcast between q, k and v, a mask with more axes than q or one that wants a
  gradient: the kernels give none to the mask; a symbolic size, as a KV cache's keys up to a bound variable: the kernels'
  loops and padding are ints; an empty axis; a sharded tensor)."""
  if not FLASH_ATTENTION or q.ndim < 2 or not q.ndim == k.ndim == v.ndim or not q.dtype == k.dtype == v.dtype: return None
  if not all_int(q.shape + k.shape + v.shape) or 0 in q.shape + k.shape + v.shape: return None  # (empty: no kernels)
  if q.dtype not in (dtypes.float, dtypes.half, dtypes.bfloat16) or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]: return None
  if q.shape[:-3] != k.shape[:-3] or k.shape[:-1] != v.shape[:-1] or len({q.device, k.device, v.device}) != 1: return None
  if isinstance(q.device, tuple): return None  # sharded: the kernels read one buffer (they read the pieces as one: garbage)
  heads, kheads = (q.shape[-3], k.shape[-3]) if q.ndim >= 3 else (1, 1)
  if heads != kheads and not (enable_gqa and heads % kheads == 0): return None
  mask, mask_bh = None, (False, False)
  if attn_mask is not None:
    if attn_mask.requires_grad or (m := _mask4(attn_mask, q, k.shape[-2])) is None: return None
    mask, mask_bh = ("bool" if attn_mask.dtype == dtypes.bool else "add"), m[1]
  bh, nq, nk = _heads4(q).shape[0] * heads, q.shape[-2], k.shape[-2]
  return Plan(bh, heads, heads // kheads, nq, nk, q.shape[-1], v.shape[-1], 1 / math.sqrt(q.shape[-1]), is_causal, mask, mask_bh,
              8 if min(nq, nk) >= 32 else 2)  # short sequences: small tiles, less padding and far smaller kernels to compile

def _rows(t: Tensor, n: int) -> Tensor:
  """(batch, heads, rows, d) as (batch * heads, n, d), zero rows added (none: a view of t, no copy)."""
  t = _heads4(t)
  t = t.reshape(-1, *t.shape[-2:])
  return t if n == t.shape[-2] else t.pad(((0, 0), (0, n - t.shape[-2]), (0, 0)))

def attention(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, p: Plan) -> Tensor:
  """scaled_dot_product_attention through the flash kernels (p from plan_for)."""
  from tg.tensor.tensor import Tensor
  M = () if attn_mask is None else (_mask4(attn_mask, q, p.nk)[0],)  # type: ignore[index]
  Q, K, V = _rows(q, p.nqp), _rows(k, p.nkp), _rows(v, p.nkp)
  out = Tensor.empty(p.bh, p.nqp, p.dv, dtype=q.dtype, device=q.device)
  lse = Tensor.empty(p.bh, p.nqp, dtype=dtypes.float, device=q.device)
  o = Tensor.custom_kernel(out, lse, Q, K, V, *M, fxn=forward_kernel(p), grad_fxn=lambda g, kernel: _backward(p, g, kernel))[0]
  return o[:, :p.nq].reshape(*q.shape[:-1], p.dv)

def _backward(p: Plan, gradient: UOp, kernel: UOp) -> tuple[UOp | None, ...]:
  """Gradients of Q, K and V (the kernel's inputs) from the output's: dq and dk/dv kernels over the saved log-sum-exp."""
  from tg.tensor.tensor import Tensor
  _, o_buf, l_buf, *ins = kernel.src  # (src[0]: the kernel's AST)
  O, L = (Tensor(UOp(Ops.AFTER, b.dtype, (b, kernel_of(kernel)))) for b in (o_buf, l_buf))
  Q, K, V, *masks = (Tensor(u) for u in ins)
  dO = Tensor(gradient)
  Dl = (dO.float() * O.float()).sum(-1)
  def like(t: Tensor) -> Tensor: return Tensor.empty(*t.shape, dtype=t.dtype, device=t.device)
  dq = Tensor.custom_kernel(like(Q), Q, K, V, dO, L, Dl, *masks, fxn=dq_kernel(p))[0]
  dk, dv = Tensor.custom_kernel(like(K), like(V), Q, K, V, dO, L, Dl, *masks, fxn=dkv_kernel(p))[:2]
  return (None, None, dq.uop, dk.uop, dv.uop, *(None for _ in masks))
