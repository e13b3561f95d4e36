"""Neural-network functions on Tensors: convolution and pooling (windows made by movement ops, so a convolution is
one fused multiply-and-reduce kernel), normalization, dropout, losses, attention."""
from __future__ import annotations
import itertools, math, string
from typing import TYPE_CHECKING, Sequence
from tg.uop import UOp, Ops, GroupOp, DType, dtypes, cdiv, least_upper_dtype
from tg.tensor.schedule import is_buffer_view, names_buffer
from tg.tensor.errors import TensorBroadcastError, TensorShapeError, TensorUnsupportedError, TensorValueError
from tg.tensor.graph import shape_text
from tg.tensor.mathops import narrow_float
from tg.tensor.indexing import _check_index, _hits, _last_only
from tg.tensor import flash_attention

if TYPE_CHECKING:
  from tg.tensor.tensor import Tensor

Pad = tuple[int, int]

def _tuple(x: int | Sequence[int], n: int) -> tuple[int, ...]: return (x,) * n if isinstance(x, int) else tuple(x)

def _resolve_pads(padding: int | Sequence[int], nd: int) -> list[tuple[int, int]]:
  """(before, after) for each of nd spatial axes from PyTorch's forms: an int, one int per axis, or the flat
  (left, right, top, bottom, ...) list, last axis first, with 2 * nd entries (any may be asymmetric or negative)."""
  if isinstance(padding, int): return [(padding, padding)] * nd
  p = tuple(padding)
  if len(p) == nd: return [(x, x) for x in p]
  if len(p) == 2 * nd: return [(p[i], p[i + 1]) for i in range(2 * nd - 2, -1, -2)]
  raise TensorValueError(f"padding {p} for {nd} spatial axes: give an int, {nd} ints, or {2 * nd} (left, right, top, bottom, ...)")

def _lerp_uint8(a: Tensor, b: Tensor, frac: list[float], shape: tuple[int, ...]) -> Tensor:
  """a * (1 - f) + b * f for uint8 a, b along one axis (f: frac, reshaped to shape) as PyTorch's uint8 resampling computes
  it: the weights in fixed point with the most fraction bits p (at most 22) that keep the biggest weight's 2^(p+1) multiple
  under 2^15, each rounded, the sum rounded half up and clamped, one axis at a time. tinygrad matches it; rounding once
  from exact weights (tg's float path) differs by 1 in a fifth of the outputs."""
  from tg.tensor.tensor import Tensor
  w_max = max(max(1 - f, f) for f in frac)
  p = next((q for q in range(22) if int(0.5 + w_max * (1 << (q + 1))) >= 1 << 15), 22)
  wl, wh = (Tensor([round(w * (1 << p)) for w in ws], device=a.device, dtype=dtypes.int32).reshape(shape)
            for ws in ([1 - f for f in frac], frac))
  acc = a.cast(dtypes.int32) * wl + b.cast(dtypes.int32) * wh + (1 << (p - 1))
  return (acc // (1 << p)).clip(0, 255).cast(dtypes.uint8)

def _pool_dims(kernel_size: int | Sequence[int]) -> int: return 2 if isinstance(kernel_size, int) else len(tuple(kernel_size))

def _ceil_overhang(n: int, pad: tuple[int, int], k: int, s: int, d: int) -> int:
  """The extra right padding ceil_mode needs: one more window when the axis leaves a partial one, if it starts inside the
  input or its left padding (PyTorch's rule)."""
  span, eff = n + pad[0] + pad[1], d * (k - 1) + 1
  o = cdiv(span - eff, s) + 1
  if (o - 1) * s >= n + pad[0]: o -= 1
  return max(0, (o - 1) * s + eff - span)

def _check_smoothing(label_smoothing: float) -> None:
  if not 0.0 <= label_smoothing <= 1.0: raise TensorValueError(f"label_smoothing is in [0, 1], got {label_smoothing}")

WGRAD_CACHED_BYTES, WGRAD_MAX_PARTS, WGRAD_PART_ELEMENTS = 8 << 20, 16, 1 << 21

def _weight_grad_parts(bs: int, input_bytes: int, weight_elements: int) -> int:
  """Into how many batch chunks a conv's weight gradient is summed apart (then their partial sums added): each tile of
  its kernel reads all of the input and the output gradient again, so past the caches (WGRAD_CACHED_BYTES of input) a
  chunk at a time keeps them there. ResNet's 64->64 3x3 at 56x56, batch 16, one thread: 25.7 ms in one sum (144
  GFLOP/s), 18.3 in 16 (202 GFLOP/s, the sum of the partials 0.2 ms). At most WGRAD_MAX_PARTS chunks of whole images, and
  WGRAD_PART_ELEMENTS partial values."""
  if input_bytes <= WGRAD_CACHED_BYTES: return 1
  return max([1] + [p for p in range(2, min(bs, WGRAD_MAX_PARTS) + 1) if bs % p == 0 and p * weight_elements <= WGRAD_PART_ELEMENTS])

def _reduce_loss(loss: Tensor, reduction: str, count: Tensor | None = None) -> Tensor:
  """A loss's reduction; "mean" divides by count if given (the weight or number of targets counted), else the elements."""
  if reduction not in ("mean", "sum", "none"): raise TensorValueError(f"reduction is 'mean', 'sum' or 'none', not {reduction!r}")
  if reduction == "mean": return loss.mean() if count is None else loss.sum() / count
  return loss.sum() if reduction == "sum" else loss

def _channels_last(t: Tensor) -> Tensor:
  """t (bs, c, *spatial) as a copy with the channels innermost in memory, viewed in the same shape; t itself when it is
  such a view already (a conv's input stored so for its forward is read by its weight gradient, no second copy)."""
  from tg.tensor.tensor import Tensor
  back = (0, t.ndim - 1, *range(1, t.ndim - 1))
  u = t.uop
  if u.op is Ops.PERMUTE and u.arg == back and (u.src[0].op is Ops.CONTIGUOUS or is_buffer_view(u.src[0])): return Tensor(u)
  return t.permute(0, *range(2, t.ndim), 1).contiguous().permute(*back)

def _stored(u: UOp) -> bool:
  """u is a view (movement ops, a detach) of a buffer or of a value that will be one (CONTIGUOUS): reading it needs no
  kernel of its own."""
  while u.op in GroupOp.Movement or u.op is Ops.DETACH: u = u.src[0]
  return u.op is Ops.CONTIGUOUS or names_buffer(u)

class NNMixin:
  def _window_last(self: Tensor, k: int, stride: int, dilation: int) -> Tensor:
    """(..., n) -> (..., o, k): the sliding windows of the last axis, by expand/reshape/pad/shrink only."""
    n = self.shape[-1]
    o = (n - dilation * (k - 1) - 1) // stride + 1
    if o <= 0: raise TensorValueError(f"a window of {k} (dilation {dilation}) doesn't fit in an axis of {n}")
    lead = self.shape[:-1]
    x = self.unsqueeze(-2).expand(*lead, k, n).reshape(*lead, k * n).pad([(0, 0)] * len(lead) + [(0, k * dilation)])
    x = x.reshape(*lead, k, n + dilation).shrink([None] * (len(lead) + 1) + [(0, (o - 1) * stride + 1)])
    if stride > 1:
      x = x.pad([(0, 0)] * (len(lead) + 1) + [(0, stride - 1)]).reshape(*lead, k, o, stride).shrink([None] * (len(lead) + 2) + [(0, 1)])
      x = x.reshape(*lead, k, o)
    return x.transpose(-1, -2)
  def _pool(self: Tensor, k: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...]) -> Tensor:
    """(..., *spatial) -> (..., *out_spatial, *k) over the last len(k) axes."""
    nd, lead, x = len(k), self.ndim - len(k), self
    for j in range(nd):
      ax = lead + j
      # window spatial axis j at the end: (lead, spatial but j, k_0..k_{j-1}, o_j, k_j), then put o_j back in place
      x = x.permute([i for i in range(x.ndim) if i != ax] + [ax])._window_last(k[j], stride[j], dilation[j])
      spatial = [lead + p if p < j else lead + nd - 1 + j if p == j else lead + p - 1 for p in range(nd)]
      x = x.permute(list(range(lead)) + spatial + list(range(lead + nd - 1, lead + nd - 1 + j)) + [x.ndim - 1])
    return x

  def _dilate(self: Tensor, stride: tuple[int, ...]) -> Tensor:
    """(bs, c, *n) -> (bs, c, *((n - 1) * s + 1)): s - 1 zeros between neighbours along each spatial axis."""
    x = self
    for j, s in enumerate(stride):
      if s == 1: continue
      ax, n = 2 + j, x.shape[2 + j]
      x = x.unsqueeze(ax + 1).pad([(0, s - 1) if i == ax + 1 else (0, 0) for i in range(x.ndim + 1)])
      x = x.reshape(*x.shape[:ax], n * s, *x.shape[ax + 2:]).shrink([(0, (n - 1) * s + 1) if i == ax else None for i in range(x.ndim - 1)])
    return x

  def _conv_input_grad(self: Tensor, weight: Tensor, size: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...],
                       groups: int) -> Tensor:
    """The gradient wrt a strided conv's input (of spatial size `size`), self being the output's: each output position's gradient
    times the whole kernel (a matmul over the output channels, with no padding zeros in it), then the products of each
    kernel tap added at the input positions it came from (one elementwise kernel)."""
    bs, cout, *o = self.shape
    cin_g, k = weight.shape[1], weight.shape[2:]
    npos, taps, cout_g = math.prod(o), math.prod(k), cout // groups
    g = self.reshape(bs, groups, cout_g, npos).permute(0, 3, 1, 2).reshape(bs, npos, groups, cout_g, 1)
    prods = (g * weight.reshape(groups, cout_g, cin_g * taps)).sum(3).contiguous()  # (bs, positions, groups, cin_g * taps)
    nd = len(k)
    prods = prods.reshape(bs, *o, groups * cin_g, *k).permute(0, nd + 1, *range(1, nd + 1), *range(nd + 2, 2 * nd + 2))
    out = None
    for tap in itertools.product(*[range(kk) for kk in k]):
      v = prods.shrink([None] * (2 + nd) + [(t, t + 1) for t in tap]).reshape(bs, groups * cin_g, *o)._dilate(stride)
      v = v.pad([(0, 0), (0, 0)] + [(t * d, n - t * d - m) for t, d, n, m in zip(tap, dilation, size, v.shape[2:])])
      out = v if out is None else out + v
    assert out is not None
    return out.contiguous()  # once: its readers (an activation's gradient, a bias's sum, the next weight's) would each redo the taps

  def conv2d(self: Tensor, weight: Tensor, bias: Tensor | None = None, groups: int = 1, stride: int | Sequence[int] = 1,
             dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0, dtype: DType | str | None = None) -> Tensor:
    """N-d convolution (the name is PyTorch's; the spatial dims are weight.ndim - 2). Its gradients are written out here:
    wrt the input the adjoint conv (stride 1) or a matmul and a sum of shifted taps (_conv_input_grad: the adjoint of a
    strided conv would multiply the zeros between its inputs), wrt the weight the input's windows against the output's
    gradient. (Differentiating the windowing itself would give a kernel dividing and testing every index.) dtype
    (tinygrad's): the products are summed in it, and the result is of it."""
    from tg.tensor.tensor import Tensor
    nd = weight.ndim - 2
    if self.ndim != nd + 2:
      raise TensorShapeError(f"conv of input {shape_text(self.shape)} with weight {shape_text(weight.shape)}: the input needs {nd + 2} dims")
    (bs, cin), (cout, cin_g) = self.shape[:2], weight.shape[:2]
    if cin != cin_g * groups:
      raise TensorShapeError(f"input has {cin} channels, weight {shape_text(weight.shape)} with groups={groups} expects {cin_g * groups}")
    if cout % groups: raise TensorShapeError(f"{cout} output channels don't split into {groups} groups")
    pads, st, dil, k = _resolve_pads(padding, nd), _tuple(stride, nd), _tuple(dilation, nd), weight.shape[2:]
    # a computed input (an activation) of a trained conv is stored channels-last, as its weight gradient reads it: one copy for both
    src = self if _stored(self.uop) or not weight.requires_grad else _channels_last(self)
    x = src.pad([(0, 0), (0, 0)] + pads) if any(b or a for b, a in pads) else src
    win = x._pool(k, st, dil)  # (bs, cin, *o, *k)
    win = win.reshape(bs, groups, 1, cin_g, *win.shape[2:])
    osz = win.shape[4:4 + nd]
    # the weights are small: a copy with the output channels innermost lets a kernel load a vector of them at once
    wl = weight.permute(*range(1, nd + 2), 0).contiguous().permute(nd + 1, *range(nd + 1))
    w = wl.reshape(1, groups, cout // groups, cin_g, *[1] * nd, *k)
    narrow = narrow_float(out_dt := least_upper_dtype(win.dtype, w.dtype)) and dtype is None
    if narrow: win, w = win.float(), w.float()  # each product exact in the float32 sum, as Tensor._product's
    prod = win * w
    out = prod.sum([3] + list(range(4 + nd, 4 + 2 * nd)), dtype=dtype).reshape(bs, cout, *osz)
    if narrow: out = out.cast(out_dt)
    if bias is not None: out = out + bias.reshape(1, cout, *[1] * nd)
    # the gradient's closure holds plain values: holding the product tensor kept it alive as long as the output, and a
    # write to the weight then realized it as a reader of the old weight (a 300 MB product, every step)
    grad_dt, has_bias = out_dt if narrow else prod.dtype, bias is not None

    def grad_fxn(g: UOp, call: UOp) -> tuple[UOp, ...]:
      gt, wt = Tensor(g).cast(grad_dt), Tensor(call.src[2])
      xt = Tensor(call.src[1]).pad([(0, 0), (0, 0)] + pads)
      # stride 1: the adjoint conv, as fast as the forward, no products summed in memory (ResNet's 64->64 56x56 single-
      # threaded 38 ms vs 42 + 42 for the matmul and the taps; the small CNN's padding-0 conv does 36% more multiplies
      # behind the padding's gates, and is still faster: 4.6 ms vs 6.2-7.8)
      if all(s == 1 for s in st):
        gx = gt.conv_transpose2d(wt, groups=groups, dilation=dil, padding=[v for p in reversed(pads) for v in p])
      else: gx = gt._conv_input_grad(wt, xt.shape[2:], st, dil, groups).pad([(0, 0), (0, 0)] + [(-b, -a) for b, a in pads])
      # the weight's gradient sums over batch and positions; with channels innermost (copies of x and g; x's is the forward's
      # when it made one) the kernel's innermost output axis (cin) is contiguous in memory and the reduce is an outer product
      # of cout and cin
      xw = _channels_last(xt)._pool(k, st, dil).reshape(bs, groups, cin_g, *osz, *k)
      xw = xw.permute(0, *range(3, 3 + nd), 1, *range(3 + nd, 3 + 2 * nd), 2).reshape(bs, *osz, groups, 1, *k, cin_g)
      gl = _channels_last(gt)  # read by the weight's and the bias's gradients (channels contiguous: a column sum)
      prods = (xw * gl.reshape(bs, groups, cout // groups, *osz).permute(0, *range(3, 3 + nd), 1, 2)
               .reshape(bs, *osz, groups, cout // groups, *[1] * nd, 1))
      p = _weight_grad_parts(bs, xt.numel() * xt.element_size(), wt.numel())
      gw = prods.reshape(p, bs // p, *prods.shape[1:]).sum(list(range(1, 2 + nd)))  # partial sums of p batch chunks
      gw = gw.reshape(p, cout, *k, cin_g).permute(0, 1, nd + 2, *range(2, nd + 2))
      gw = gw.contiguous().sum(0) if p > 1 else gw.reshape(gw.shape[1:])
      gb = (gl.sum([0, *range(2, 2 + nd)]).uop,) if has_bias else ()
      return gx.uop, gw.uop, *gb
    return Tensor(UOp(Ops.CALL, out.dtype, (out.detach().uop, src.uop, weight.uop, *(() if bias is None else (bias.uop,))), grad_fxn))

  def conv_transpose2d(self: Tensor, weight: Tensor, bias: Tensor | None = None, groups: int = 1, stride: int | Sequence[int] = 1,
                       dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0, output_padding: int | Sequence[int] = 0) -> Tensor:
    """The adjoint of conv2d (what it does to an output's gradient), as a convolution: zeros between the inputs (stride),
    a full padding and the flipped kernel with in/out channels swapped. weight is (cin, cout // groups, *k), as in PyTorch."""
    nd = weight.ndim - 2
    if self.ndim != nd + 2:
      raise TensorShapeError(f"conv_transpose of input {shape_text(self.shape)} with weight {shape_text(weight.shape)}: "
                             f"the input needs {nd + 2} dims")
    cin, cout_g, k = weight.shape[0], weight.shape[1], weight.shape[2:]
    if self.shape[1] != cin or cin % groups:
      raise TensorShapeError(f"input has {self.shape[1]} channels, weight {shape_text(weight.shape)} expects {cin}")
    st, dil, pads, opad = _tuple(stride, nd), _tuple(dilation, nd), _resolve_pads(padding, nd), _tuple(output_padding, nd)
    size = [(n - 1) * s - b - a + d * (kk - 1) + op + 1 for n, s, (b, a), d, kk, op in zip(self.shape[2:], st, pads, dil, k, opad)]
    if any(n <= 0 for n in size):
      raise TensorShapeError(f"conv_transpose of input {shape_text(self.shape)} with kernel {shape_text(tuple(k))}, stride {st}, padding {padding}, "
                             f"dilation {dil}: the output would be {tuple(size)}; pad less")
    x = self._dilate(st)
    full = [(d * (kk - 1) - b, d * (kk - 1) - a + op) for kk, d, (b, a), op in zip(k, dil, pads, opad)]
    x = x.pad([(0, 0), (0, 0)] + full)
    w = weight.reshape(groups, cin // groups, cout_g, *k).transpose(1, 2).reshape(groups * cout_g, cin // groups, *k).flip(list(range(2, 2 + nd)))
    return x.conv2d(w, bias, groups=groups, dilation=dil)

  def _pool_setup(self: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None, dilation: int | Sequence[int],
                  padding: int | Sequence[int], ceil_mode: bool) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], list[Pad], list[Pad]]:
    """Kernel, stride, dilation, the explicit padding and the padding to apply (with ceil_mode's overhang) of a pool over
    the last len(kernel_size) axes (an int kernel_size: two, hence the name; a 1- or 3-tuple pools 1-d or 3-d, as tinygrad)."""
    nd = _pool_dims(kernel_size)
    if self.ndim < nd: raise TensorShapeError(f"a {nd}-d pool of a tensor of shape {shape_text(self.shape)}: it needs {nd} spatial axes")
    k, dil = _tuple(kernel_size, nd), _tuple(dilation, nd)
    st = _tuple(stride if stride is not None else kernel_size, nd)
    if len(dil) != nd or len(st) != nd: raise TensorValueError(f"a pool with kernel {k}: give stride and dilation as an int or {nd} ints")
    pads = _resolve_pads(padding, nd)
    full = [(b, a + (_ceil_overhang(n, (b, a), kk, s, d) if ceil_mode else 0)) for (b, a), n, kk, s, d in zip(pads, self.shape[-nd:], k, st, dil)]
    return k, st, dil, pads, full
  def max_pool2d(self: Tensor, kernel_size: int | Sequence[int] = 2, stride: int | Sequence[int] | None = None,
                 dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0, ceil_mode: bool = False,
                 return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Max over windows of the last two axes (or len(kernel_size)); padding never wins (it is the dtype's lowest value, so
    ints stay ints). return_indices adds each maximum's flat position (h * W + w in 2-d) in the input (the first, if tied),
    as max_unpool2d takes."""
    from tg.tensor.tensor import Tensor
    k, st, dil, _, full = self._pool_setup(kernel_size, stride, dilation, padding, ceil_mode)
    nd, axes = len(k), tuple(range(-len(k), 0))
    low = -math.inf if dtypes.is_float(self.dtype) else dtypes.min(self.dtype)
    win = self.pad([(0, 0)] * (self.ndim - nd) + full, value=low)._pool(k, st, dil)
    out = win.max(axes)
    if not return_indices: return out
    spatial = self.shape[-nd:]
    pos = Tensor.arange(math.prod(spatial), device=self.device).reshape(spatial).pad(full)._pool(k, st, dil).flatten(-nd)
    win, n = win.flatten(-nd), math.prod(k)
    first = n - win.eq(out.unsqueeze(-1)).where(Tensor.arange(n, 0, -1, device=self.device), 0).max(-1, keepdim=True)
    return out, first.eq(Tensor.arange(n, device=self.device)).where(pos, 0).sum(-1).cast(dtypes.int32)
  def avg_pool2d(self: Tensor, kernel_size: int | Sequence[int] = 2, stride: int | Sequence[int] | None = None,
                 dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> Tensor:
    """Mean over windows of the last two axes (or len(kernel_size)). The divisor counts the explicit padding if
    count_include_pad (PyTorch's default), never ceil_mode's overhang."""
    from tg.tensor.tensor import Tensor
    k, st, dil, pads, full = self._pool_setup(kernel_size, stride, dilation, padding, ceil_mode)
    axes = tuple(range(-len(k), 0))
    x = self.pad([(0, 0)] * (self.ndim - len(k)) + full) if any(b or a for b, a in full) else self
    if full == pads and (count_include_pad or not any(b or a for b, a in pads)): return x._pool(k, st, dil).mean(axes)
    inside = Tensor.ones(*self.shape[-len(k):], device=self.device)
    counted = inside.pad(pads, value=1.0) if count_include_pad else inside.pad(pads)
    counted = counted.pad([(0, a2 - a) for (_, a), (_, a2) in zip(pads, full)])
    summed = x._pool(k, st, dil).sum(axes)
    return summed / counted._pool(k, st, dil).sum(axes).cast(summed.dtype if dtypes.is_float(summed.dtype) else dtypes.default_float)
  def max_unpool2d(self: Tensor, indices: Tensor, kernel_size: int | Sequence[int] = 2, stride: int | Sequence[int] | None = None,
                   dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0, output_size: Sequence[int] | None = None) -> Tensor:
    """The inverse of max_pool2d(return_indices=True): each value put at its flat position (h * W + w in 2-d), zeros
    elsewhere. The output size is output_size's last len(k), else what the pool's parameters give back
    ((n - 1) * s - 2p + d(k - 1) + 1)."""
    if indices.shape != self.shape:
      raise TensorShapeError(f"max_unpool2d indices of shape {shape_text(indices.shape)} for values of shape {shape_text(self.shape)}")
    nd = _pool_dims(kernel_size)
    k, dil, pads = _tuple(kernel_size, nd), _tuple(dilation, nd), _resolve_pads(padding, nd)
    st = _tuple(stride if stride is not None else kernel_size, nd)
    if output_size is None: out = tuple((n - 1) * s - b - a + d * (kk - 1) + 1 for n, s, (b, a), d, kk in zip(self.shape[-nd:], st, pads, dil, k))
    else: out = tuple(output_size)[-nd:]
    hit = _hits(indices.flatten(-nd), math.prod(out))  # (..., inputs, outputs)
    # overlapping windows can send one maximum twice: the last input sent wins, as in PyTorch (not their sum)
    pick = _last_only(hit, hit.ndim - 2)
    return pick.where(self.flatten(-nd).unsqueeze(-1), 0).sum(-2, acc_dtype=self.dtype).reshape(*self.shape[:-nd], *out)

  def interpolate(self: Tensor, size: Sequence[int], mode: str = "linear", align_corners: bool = False) -> Tensor:
    """Resize the trailing len(size) axes (PyTorch's F.interpolate; "linear" is bi/trilinear over them), one axis at a time
    as a gather of constant indices (and a blend of two for linear, in float; integer inputs are rounded back). PyTorch's
    names for linear over 2 and 3 axes, "bilinear" and "trilinear", are taken for it when size has that many."""
    from tg.tensor.tensor import Tensor
    if (mode, len(size)) in (("bilinear", 2), ("trilinear", 3)): mode = "linear"
    if mode not in ("nearest", "nearest-exact", "linear"):
      raise TensorUnsupportedError(f"interpolate mode is 'nearest', 'nearest-exact' or 'linear' ('bilinear' for 2 axes, "
                                   f"'trilinear' for 3), not {mode!r} for {len(size)} axes")
    if len(size) > self.ndim:
      raise TensorValueError(f"interpolate to {tuple(size)} needs at least {len(size)} dims, got shape {shape_text(self.shape)}")
    if align_corners and mode != "linear": raise TensorValueError(f"align_corners is for linear interpolation, not {mode!r}")
    fixed = mode == "linear" and self.dtype == dtypes.uint8  # PyTorch's uint8 kernel (tinygrad's too): see _lerp_uint8
    x = self if dtypes.is_float(self.dtype) or mode == "nearest" or fixed else self.float()
    for ax, m in reversed(list(zip(range(self.ndim - len(size), self.ndim), size))):  # the last axis first, as PyTorch
      n = x.shape[ax]
      if n == m: continue
      pre: list[slice] = [slice(None)] * ax
      if mode != "linear":  # nearest: source floor(i * n / m); nearest-exact: of the pixel centres, floor((i + 0.5) * n / m)
        half = 0.5 if mode == "nearest-exact" else 0.0
        x = x[(*pre, Tensor([min(n - 1, int((i + half) * n / m)) for i in range(m)], device=x.device))]
        continue
      src = [i * (n - 1) / (m - 1) if m > 1 else 0.0 for i in range(m)] if align_corners else [max(0.0, (i + 0.5) * n / m - 0.5) for i in range(m)]
      lo = [min(int(s), n - 1) for s in src]
      hi = [min(i + 1, n - 1) for i in lo]
      frac = [s - i for s, i in zip(src, lo)]
      a, b = x[(*pre, Tensor(lo, device=x.device))], x[(*pre, Tensor(hi, device=x.device))]
      col = (m, *[1] * (x.ndim - ax - 1))
      if fixed: x = _lerp_uint8(a, b, frac, col)
      else: x = a + (b - a) * Tensor(frac, device=x.device, dtype=x.dtype).reshape(col)
    return x if x.dtype == self.dtype else x.round().clip(dtypes.min(self.dtype), dtypes.max(self.dtype)).cast(self.dtype)
  def layernorm(self: Tensor, axis: int | Sequence[int] = -1, eps: float = 1e-5) -> Tensor:
    y = self - self.mean(axis, keepdim=True)
    return y * (y * y).mean(axis, keepdim=True).add(eps).rsqrt()
  def normalize(self: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """self over its p-norm along dim, the norm at least eps (PyTorch's F.normalize, tinygrad's normalize). The floor
    goes under the root, eps^p on the sum: a zero's gradient is then 1 / eps, as PyTorch's, not 0 * inf."""
    if p == math.inf: return self / self.abs().max(dim, keepdim=True).maximum(eps)
    return self / (self.abs() ** p).sum(dim, keepdim=True).maximum(eps ** p) ** (1 / p)
  def batchnorm(self: Tensor, weight: Tensor | None, bias: Tensor | None, mean: Tensor, invstd: Tensor,
                axis: int | Sequence[int] = 1) -> Tensor:
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    shape = tuple(s if i in axes else 1 for i, s in enumerate(self.shape))
    x = (self - mean.reshape(shape)) * (invstd.reshape(shape) if weight is None else (weight.reshape(shape) * invstd.reshape(shape)))
    return x + bias.reshape(shape) if bias is not None else x
  def dropout(self: Tensor, p: float = 0.5) -> Tensor:
    """In training, each element zeroed with chance p and the rest scaled by 1 / (1 - p); p = 1 zeroes all, as PyTorch
    and tinygrad (it divided by zero). p outside [0, 1] raises, training or not."""
    from tg.tensor.tensor import Tensor
    if not 0 <= p <= 1: raise TensorValueError(f"dropout probability {p} is not in [0, 1]")
    if not Tensor.training or p == 0: return self
    if p == 1: return self.zeros_like()
    return (Tensor.rand(*self.shape, device=self.device) >= p).where(self, 0) * (1 / (1 - p))

  @staticmethod
  def einsum(formula: str, *operands: Tensor, dtype: DType | str | None = None) -> Tensor:
    """Tensor.einsum("ij,jk->ik", a, b): every operand is aligned to one axis per letter, multiplied, and summed over the
    letters not in the output (a broadcasting product and one reduce: one kernel); dtype: summed in it, and of it."""
    return _einsum(formula, list(operands[0] if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else operands), dtype)

  def one_hot(self: Tensor, num_classes: int = -1) -> Tensor:
    if num_classes == -1: num_classes = int(self.max().item()) + 1
    return _hits(self, num_classes).cast(dtypes.int32)
  def sparse_categorical_crossentropy(self: Tensor, Y: Tensor, ignore_index: int = -1, label_smoothing: float = 0.0,
                                      reduction: str = "mean") -> Tensor:
    """Cross entropy of logits (..., classes) against integer labels Y (...). A label outside the classes selects no
    class (its loss is 0, as in tinygrad); with CHECK_OOB=1 it raises IndexError."""
    if Y.shape != self.shape[:-1]:
      raise TensorShapeError(f"class index targets of shape {shape_text(Y.shape)} for logits of shape {shape_text(self.shape)}: "
                             f"expected {shape_text(self.shape[:-1])}")
    _check_smoothing(label_smoothing)
    n = self.shape[-1]
    log_probs = self.log_softmax(-1)
    mask = Y != ignore_index
    _check_index(mask.where(Y, 0), n, "sparse_categorical_crossentropy labels", False)
    hit = _hits(Y, n) & mask.unsqueeze(-1)
    nll = -hit.where(log_probs, 0).sum(-1)  # where, not a product: a class of log-probability -inf elsewhere stays out
    smooth = -log_probs.mean(-1) * mask
    loss = (1 - label_smoothing) * nll + label_smoothing * smooth
    return _reduce_loss(loss, reduction, mask.sum().maximum(1))
  def cross_entropy(self: Tensor, Y: Tensor, reduction: str = "mean", label_smoothing: float = 0.0, ignore_index: int = -100) -> Tensor:
    """Cross entropy of logits (N, C, ...) or (C,) against class indices (integer Y, (N, ...)) or class probabilities
    (float Y, the logits' shape); the classes are dim 1 as in PyTorch and tinygrad. A class index of ignore_index counts
    in no term and not in the mean (PyTorch's; tinygrad's cross_entropy has no ignore_index)."""
    def classes_last(t: Tensor) -> Tensor: return t.permute(0, *range(2, t.ndim), 1) if t.ndim > 2 else t  # (N, ..., C)
    x = classes_last(self)  # (a transpose(1, -1) swapped the other axes: H and W of (N, C, H, W) logits)
    if dtypes.is_int(Y.dtype):
      return x.sparse_categorical_crossentropy(Y, ignore_index=ignore_index, label_smoothing=label_smoothing, reduction=reduction)
    if Y.shape != self.shape:
      raise TensorShapeError(f"cross_entropy with probability targets of shape {shape_text(Y.shape)} for logits of shape {shape_text(self.shape)}")
    _check_smoothing(label_smoothing)
    y = classes_last(Y)
    y = y * (1 - label_smoothing) + label_smoothing / x.shape[-1]
    return _reduce_loss(-(x.log_softmax(-1) * y).sum(-1), reduction)
  def binary_crossentropy(self: Tensor, Y: Tensor, reduction: str = "mean") -> Tensor:
    """Binary cross entropy of probabilities; each log is clamped at -100 as PyTorch's (a probability of exactly 0 or 1
    gives a finite loss and gradient; tinygrad's gives inf or nan there)."""
    def log(p: Tensor) -> Tensor: return (p > 0).where((p > 0).where(p, 1).log().maximum(-100), -100)
    return _reduce_loss(-(Y * log(self) + (1 - Y) * log(1 - self)), reduction)
  def binary_crossentropy_logits(self: Tensor, Y: Tensor, reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """Binary cross entropy of logits x, stably: -log sigmoid(x) = max(-x, 0) + log(1 + exp(-|x|)). pos_weight (broadcast
    over the classes, PyTorch's) scales the positive term: (1 - y) * x + (1 + (pos_weight - 1) * y) * -log sigmoid(x)."""
    neg_log_sig = (-self).maximum(0) + (1 + (-self.abs()).exp()).log()
    loss = (1 - Y) * self + (neg_log_sig if pos_weight is None else (1 + (pos_weight - 1) * Y) * neg_log_sig)
    return _reduce_loss(loss, reduction)
  def nll_loss(self: Tensor, Y: Tensor, weight: Tensor | None = None, ignore_index: int | None = None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of log-probabilities self, (N, C, *d) or (C,), at class indices Y, (N, *d) or (): classes on
    dim 1 as PyTorch. Each term is -weight[y] * self[y]; "mean" divides by the weights of the targets not ignored."""
    from tg.tensor.tensor import Tensor
    cdim = 0 if self.ndim == 1 else 1
    c, want = self.shape[cdim], self.shape[:cdim] + self.shape[cdim + 1:]
    if Y.shape != want:
      raise TensorShapeError(f"nll_loss target of shape {shape_text(Y.shape)} for input of shape {shape_text(self.shape)}: "
                             f"expected {shape_text(want)}")
    if weight is not None and weight.shape != (c,): raise TensorShapeError(f"nll_loss weight of shape {shape_text(weight.shape)} for {c} classes")
    classes = Tensor.arange(c, device=self.device).reshape(c, *[1] * (self.ndim - cdim - 1))
    hit = Y.unsqueeze(cdim).eq(classes)
    if ignore_index is not None: hit = hit & Y.ne(ignore_index).unsqueeze(cdim)
    w = hit.cast(self.dtype) if weight is None else hit.where(weight.reshape(classes.shape).cast(self.dtype), 0)
    loss = -hit.where(self * w, 0).sum(cdim)
    return _reduce_loss(loss, reduction, w.sum())
  def scaled_dot_product_attention(self: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                   is_causal: bool = False, enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T / sqrt(d) + mask) v, the attention weights dropped out with probability dropout_p in training (the
    arguments in PyTorch's and tinygrad's order). enable_gqa: key and value have fewer heads (dim -3) than the query, each
    shared by a group of query heads (their count divides the query's). Flash attention's kernels (flash_attention.py)
    where they apply, without the full score matrix; FLASH_ATTENTION=0 always builds it."""
    from tg.tensor.tensor import Tensor
    if is_causal and attn_mask is not None: raise TensorValueError("scaled_dot_product_attention takes is_causal or attn_mask, not both")
    if enable_gqa and key.shape[-3] != self.shape[-3]:
      if self.shape[-3] % key.shape[-3]:  # (an IndexError too, as tinygrad's: the heads don't broadcast)
        raise TensorBroadcastError(f"{self.shape[-3]} query heads don't group into {key.shape[-3]} key heads")
    dropping = dropout_p > 0 and Tensor.training
    if not dropping and (plan := flash_attention.plan_for(self, key, value, attn_mask, is_causal, enable_gqa)) is not None:
      return flash_attention.attention(self, key, value, attn_mask, plan)
    if enable_gqa and key.shape[-3] != self.shape[-3]:
      rep = self.shape[-3] // key.shape[-3]
      key, value = key.repeat_interleave(rep, -3), value.repeat_interleave(rep, -3)
    scores = self.matmul(key.transpose(-1, -2)) * (1 / math.sqrt(self.shape[-1]))
    if is_causal:
      causal = Tensor.ones(scores.shape[-2], scores.shape[-1], dtype=dtypes.bool, device=self.device).tril()
      scores = causal.where(scores, -math.inf)
    if attn_mask is not None: scores = attn_mask.where(scores, -math.inf) if attn_mask.dtype == dtypes.bool else scores + attn_mask
    # (in the query's dtype, as PyTorch and tinygrad: a float32 additive mask made a half attention float32)
    return scores.cast(self.dtype).softmax(-1).dropout(dropout_p).matmul(value)

def _einsum_ellipsis(ins: list[str], out: str, arrow: str, ops: list[Tensor]) -> tuple[list[str], str]:
  """'...' replaced by letters of its own: numpy's broadcasting of the ellipsis axes (aligned right across operands), in
  front of the output when no output is named."""
  free = [c for c in string.ascii_letters if c not in "".join(ins) + out]
  k = max((t.ndim - len(spec) + 3 for spec, t in zip(ins, ops) if "..." in spec), default=0)
  if k < 0 or k > len(free): raise TensorValueError(f"einsum: '...' stands for {k} axes")
  ell = "".join(free[:k])
  new = [spec.replace("...", ell[k - (t.ndim - len(spec) + 3):]) if "..." in spec else spec for spec, t in zip(ins, ops)]
  if not arrow:
    lhs = ",".join(ins).replace("...", "")
    return new, ell + "".join(sorted(c for c in set(lhs) if c != "," and lhs.count(c) == 1))
  return new, out.replace("...", ell)

def _einsum(formula: str, ops: list[Tensor], dtype: DType | str | None) -> Tensor:
  """Each operand's repeated letters taken as diagonals first (np.einsum("ii->i") is the diagonal, "ii" the trace)."""
  lhs, arrow, out = formula.replace(" ", "").partition("->")
  ins = lhs.split(",")
  if len(ins) != len(ops): raise TensorValueError(f"einsum {formula!r} names {len(ins)} operands, got {len(ops)}")
  if not arrow: out = "".join(sorted(c for c in set(lhs) if c != "," and lhs.count(c) == 1))
  if "." in lhs: ins, out = _einsum_ellipsis(ins, out, arrow, ops)
  for i, (spec, t) in enumerate(zip(ins, ops)):
    if len(spec) != t.ndim: raise TensorShapeError(f"einsum operand {spec!r} has {len(spec)} letters, the tensor has shape {shape_text(t.shape)}")
    while (c := next((c for c in spec if spec.count(c) > 1), None)) is not None:  # a diagonal: it goes last
      p, q = spec.index(c), spec.index(c, spec.index(c) + 1)
      if t.shape[p] != t.shape[q]: raise TensorShapeError(f"einsum {formula!r}: repeated letter {c!r} has sizes {t.shape[p]} and {t.shape[q]}")
      t, spec = t.diagonal(0, p, q), spec[:p] + spec[p + 1:q] + spec[q + 1:] + c
    ins[i], ops[i] = spec, t
  letters = sorted(set("".join(ins)))
  sizes: dict[str, int] = {}
  aligned = []
  for spec, t in zip(ins, ops):
    for c, s in zip(spec, t.shape):
      if s != 1 and sizes.get(c, 1) not in (1, s):
        raise TensorShapeError(f"einsum {formula!r}: letter {c!r} has sizes {sizes[c]} and {s} (shapes {[o.shape for o in ops]})")
      sizes[c] = max(sizes.get(c, 1), s)
    x = t.permute([spec.index(c) for c in letters if c in spec])
    aligned.append(x.reshape([t.shape[spec.index(c)] if c in spec else 1 for c in letters]))
  if any(c not in letters for c in out): raise TensorValueError(f"einsum {formula!r}: output letters must appear in the inputs")
  prod_ = aligned[0]
  for a in aligned[1:]: prod_ = prod_ * a
  prod_ = prod_.expand([sizes[c] for c in letters])
  summed = [i for i, c in enumerate(letters) if c not in out]
  red = prod_.sum(summed, dtype=dtype) if summed else prod_ if dtype is None else prod_.cast(dtype)
  kept = [c for c in letters if c in out]
  return red.permute([kept.index(c) for c in out])
