"""The kernels a convolution's gradients are scheduled into: their results against numpy, and the vector loads the
heuristics give them (a gather of scalars where memory is contiguous is a slow kernel, not a wrong one)."""
import math
import numpy as np
from tg.uop import Ops, dtypes
from tg.codegen import Opt, OptOps
from tg.tensor import Tensor, Device
from tg.tensor.realize import get_runner

def _np_conv_weight_grad(x: np.ndarray, g: np.ndarray, k: int) -> np.ndarray:
  """d/dw of sum(conv2d(x, w, padding=k//2) * g): the padded input's k x k windows against g."""
  p = k // 2
  xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
  h, w = g.shape[2:]
  return np.stack([np.stack([np.einsum("nchw,nohw->oc", xp[:, :, i:i + h, j:j + w], g) for j in range(k)], -1) for i in range(k)], -2)

def test_conv_weight_gradient_loads_channels_as_vectors():
  """The weight gradient reads a channels-last copy of the input: the channels are the vector lanes (one load each),
  the 3-wide window the rows of the tile. With the window as the fast lanes every vector was shuffled together from
  the loads, or gathered from scalars (3x slower at ResNet's 64->64 channels, 56x56)."""
  rng = np.random.default_rng(0)
  xn, wn, gn = (rng.standard_normal(s, dtype=np.float32) for s in ((2, 64, 14, 14), (64, 64, 3, 3), (2, 64, 14, 14)))
  def weight_grad() -> Tensor:
    x, w = Tensor(xn, requires_grad=True), Tensor(wn, requires_grad=True)
    (x.conv2d(w, padding=1) * Tensor(gn)).sum().backward()
    return w.grad
  np.testing.assert_allclose(weight_grad().numpy(), _np_conv_weight_grad(xn, gn, 3), rtol=1e-4, atol=1e-3)
  p = get_runner(weight_grad().schedule()[-1].ast, "CPU").p  # the kernel storing the gradient
  assert p.name == "r_64_64_3_3_2_14_14"  # the gradient's dims, then the batch and positions it sums over
  # no scalar loads (a gather); lanes leave their vectors (GEP) where the tile (e.g. 4 out x 8 in channels x 3 on AVX2) is
  # stored and to broadcast the output channels, not to shuffle the loads into the accumulators' lanes
  tile = math.prod(o.arg for o in p.applied_opts if o.op is OptOps.UPCAST)
  assert not any(u.op is Ops.LOAD and u.dtype == dtypes.float32 for u in p.uops), p.applied_opts
  assert 16 * 3 <= tile and sum(1 for u in p.uops if u.op is Ops.GEP) <= 2 * tile, p.applied_opts

def test_conv_weight_gradient_past_the_caches_sums_batch_chunks_apart(monkeypatch):
  """An input past the caches (the threshold lowered here): the weight gradient is partial sums of batch chunks, a kernel
  with the chunk as its first output axis (each chunk's input stays cached while every tile of the weights reads it),
  then their sum; numpy's gradient either way, with groups and a stride too."""
  import tg.tensor.nnops as nnops
  monkeypatch.setattr(nnops, "WGRAD_CACHED_BYTES", 1024)
  rng = np.random.default_rng(1)
  xn, wn, gn = (rng.standard_normal(s, dtype=np.float32) for s in ((6, 16, 10, 10), (32, 16, 3, 3), (6, 32, 10, 10)))
  def grads(groups: int = 1, stride: int = 1) -> tuple[Tensor, Tensor]:
    x, w = Tensor(xn, requires_grad=True), Tensor(wn[:, :16 // groups], requires_grad=True)
    out = x.conv2d(w, padding=1, groups=groups, stride=stride)
    (out * Tensor(gn[:, :, ::stride, ::stride])).sum().backward()
    return x.grad, w.grad
  _, wg = grads()
  items = wg.schedule()
  assert [get_runner(ei.ast, "CPU").p.name for ei in items[-2:]] == ["r_6_32_16_3_3_1_10_10", "r_32_16_3_3_6"]  # 6 chunks of 1 image
  from tg.tensor.realize import run_schedule
  run_schedule(items)
  np.testing.assert_allclose(wg.numpy(), _np_conv_weight_grad(xn, gn, 3), rtol=1e-4, atol=1e-3)
  for groups, stride in ((2, 1), (1, 2)):
    xg, wg = grads(groups, stride)
    xt = Tensor(xn, requires_grad=True)
    ref_w = Tensor(wn[:, :16 // groups], requires_grad=True)
    monkeypatch.setattr(nnops, "WGRAD_CACHED_BYTES", 1 << 40)  # the same gradients in one sum
    (xt.conv2d(ref_w, padding=1, groups=groups, stride=stride) * Tensor(gn[:, :, ::stride, ::stride])).sum().backward()
    monkeypatch.setattr(nnops, "WGRAD_CACHED_BYTES", 1024)
    np.testing.assert_allclose(wg.numpy(), ref_w.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(xg.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
  assert nnops._weight_grad_parts(16, 1 << 30, 512 * 512 * 9) == 1, "never more than WGRAD_PART_ELEMENTS partial values"

def _np_conv(x: np.ndarray, w: np.ndarray, p: int) -> np.ndarray:
  """conv2d (cross-correlation) of x with w, stride 1, padding p, in float64."""
  k, (h, wd) = w.shape[2], x.shape[2:]
  xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (p, p), (p, p)))
  oh, ow = h + 2 * p - k + 1, wd + 2 * p - k + 1
  return sum(np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j]) for i in range(k) for j in range(k))

def test_conv_forward_tile_has_output_channels_as_vector_lanes():
  """ResNet's 64->64 3x3 conv: a register tile of output positions (rows, each an input broadcast) x output channels
  (the vector lanes, a row of the channels-last weights). With the 8-wide row as the lanes the accumulators were shuffled
  together from the loads (3x slower at 56x56)."""
  rng = np.random.default_rng(1)
  xn, wn = rng.standard_normal((2, 64, 8, 8), dtype=np.float32), rng.standard_normal((64, 64, 3, 3), dtype=np.float32)
  np.testing.assert_allclose(Tensor(xn).conv2d(Tensor(wn), padding=1).numpy(), _np_conv(xn, wn, 1), rtol=1e-4, atol=1e-3)
  p = get_runner(Tensor(xn).conv2d(Tensor(wn), padding=1).schedule()[-1].ast, "CPU").p
  ups = [o for o in p.applied_opts if o.op is OptOps.UPCAST]
  isa = Device["CPU"].renderer.isa
  if isa is None: return  # no vector register file known: the other heuristics apply
  assert ups[-1].axis == 1 and ups[-1].arg % isa.lanes(4) == 0 and ups[0].axis == 3 and ups[0].arg > 1, p.applied_opts

def test_conv_input_gradient_is_the_adjoint_conv():
  """A stride-1 conv's input gradient is the conv of the output's gradient with the flipped, transposed kernel: one
  reduce kernel as fast as the forward (the per-tap products summed in memory took as long as the matmul making them),
  equal to the adjoint computed by numpy: <conv(x), g> = <x, gx> for every x, so gx = conv(g, w flipped, padding k-1-p)."""
  rng = np.random.default_rng(2)
  xn, wn, gn = (rng.standard_normal(s, dtype=np.float32) for s in ((2, 8, 9, 9), (16, 8, 3, 3), (2, 16, 9, 9)))
  def input_grad() -> Tensor:
    x = Tensor(xn, requires_grad=True)
    (x.conv2d(Tensor(wn), padding=1) * Tensor(gn)).sum().backward()
    return x.grad
  want = _np_conv(gn, wn.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1], 1)
  np.testing.assert_allclose(input_grad().numpy(), want, rtol=1e-4, atol=1e-3)
  kernels = [ei for ei in input_grad().schedule() if ei.ast.op is Ops.SINK]
  assert sum(1 for ei in kernels if any(u.op is Ops.REDUCE for u in ei.ast.toposort())) == 1
  assert max(ei.bufs[0].size for ei in kernels) <= xn.size  # no per-tap products (9x the input) written out

def test_trained_conv_of_an_activation_copies_it_channels_last_once():
  """A computed input of a conv with a trained weight is stored channels-last by the kernel computing it, and the
  forward and the weight gradient both read that copy (the backward made a second, channels-last copy of the stored
  activation); the bias gradient is a sum over the channels-last copy of the output's gradient. All against numpy."""
  rng = np.random.default_rng(3)
  xn, wn, bn, gn = (rng.standard_normal(s, dtype=np.float32) for s in ((2, 8, 9, 9, 4), (16, 8, 3, 3), (16,), (2, 16, 7, 7)))
  def step() -> tuple[Tensor, Tensor, Tensor]:
    w, b = Tensor(wn, requires_grad=True), Tensor(bn, requires_grad=True)
    out = Tensor(xn).sum(-1).relu().conv2d(w, b)  # the activation of a reduce (a conv's, in a CNN) is stored
    (out * Tensor(gn)).sum().backward()
    return out, w.grad, b.grad
  xr = np.maximum(xn.astype(np.float64).sum(-1), 0)
  out, gw, gb = step()
  np.testing.assert_allclose(out.numpy(), _np_conv(xr, wn, 0) + bn.reshape(1, 16, 1, 1), rtol=1e-4, atol=1e-4)
  want_gw = np.stack([np.stack([np.einsum("nchw,nohw->oc", xr[:, :, i:i + 7, j:j + 7], gn) for j in range(3)], -1) for i in range(3)], -2)
  np.testing.assert_allclose(gw.numpy(), want_gw, rtol=1e-4, atol=1e-3)
  np.testing.assert_allclose(gb.numpy(), gn.sum((0, 2, 3)), rtol=1e-5, atol=1e-4)
  out, gw, gb = step()
  kernels = [ei for ei in Tensor.schedule(out, gw, gb) if ei.ast.op is Ops.SINK]
  assert sum(1 for ei in kernels if ei.bufs[0].size == xr.size) == 1, [get_runner(ei.ast, "CPU").p.name for ei in kernels]

def test_padded_conv_input_gradient_unrolls_the_window_of_its_rows():
  """The small CNN's second conv (16 -> 32 channels, 3x3, no padding): its input gradient is a conv padded by 2, tiled
  as rows x one register of channels; the window axis the padding gate pairs with the rows is unrolled, so each row's
  gate is a constant. Equal to the adjoint numpy computes."""
  rng = np.random.default_rng(4)
  xn, wn, gn = (rng.standard_normal(s, dtype=np.float32) for s in ((2, 16, 14, 14), (32, 16, 3, 3), (2, 32, 12, 12)))
  def input_grad() -> Tensor:
    x = Tensor(xn, requires_grad=True)
    (x.conv2d(Tensor(wn)) * Tensor(gn)).sum().backward()
    return x.grad
  np.testing.assert_allclose(input_grad().numpy(), _np_conv(gn, wn.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1], 2), rtol=1e-4, atol=1e-3)
  isa = Device["CPU"].renderer.isa
  p = get_runner(input_grad().schedule()[-1].ast, "CPU").p
  if isa is None or isa.lanes(4) != 16: return  # the tile (and whether it is one register of channels) is the host's
  assert Opt(OptOps.UNROLL, 1, 3) in p.applied_opts, p.applied_opts

def test_a_conv_and_a_long_max_hold_no_intermediate_tensor_alive():
  """Their gradient closures hold plain values. The conv's held its (batch, channels, positions, window) product tensor as
  long as the output lived, and an update of the weight then realized it as a reader of the old weight: 300 MB and
  0.17 s more per step of a 32-channel 32x32 conv at batch 8. The staged max held the tensor it reduced."""
  import gc, weakref
  before = {id(t) for t in Tensor.live.everything()}
  x, w = Tensor.randn(2, 3, 8, 8), Tensor.randn(4, 3, 3, 3, requires_grad=True)
  out = x.conv2d(w, padding=1)
  gc.collect()
  assert all(t.ndim <= 4 for t in Tensor.live.everything() if id(t) not in before), "an intermediate of the conv is alive"
  big = Tensor.randn(1 << 17) * 2
  ref = weakref.ref(big)
  m = big.max()
  del big
  gc.collect()
  assert ref() is None and out.shape == (2, 4, 8, 8) and m.shape == ()
