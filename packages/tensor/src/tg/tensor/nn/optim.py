"""Optimizers. step() builds the update of every parameter and state tensor as one lazy graph and realizes it together,
so all updates fuse into a few kernels (and a TinyJit captures them like any other kernel). The learning rate and the
step count live in tensors, so changing them needs no new kernels."""
from __future__ import annotations
from tg.uop import dtypes
from tg.tensor.tensor import Tensor
from tg.tensor.errors import TensorValueError

def _non_negative(**values: float) -> None:
  """PyTorch's and tinygrad's argument checks: a negative learning rate, momentum, weight decay or epsilon is a mistake."""
  for name, v in values.items():
    if v < 0: raise ValueError(f"Invalid {name} value: {v} (it must be >= 0)")

class Optimizer:
  def __init__(self, params: list[Tensor], lr: float):
    _non_negative(learning_rate=lr)
    for p in params:
      if p.requires_grad is None: p.requires_grad_(True)
    self.params = list({id(p): p for p in params if p.requires_grad}.values())
    if not self.params: raise ValueError("the optimizer got no parameters that require grad")
    self.buffers: list[Tensor] = []  # state realized with the params
    self.lr = Tensor([lr], device=self.params[0].device, dtype=dtypes.float32, requires_grad=False)  # a half lr of 1e10 is inf
  def zero_grad(self) -> None:
    for p in self.params: p.grad = None
  def step(self) -> None:
    """The update, realized."""
    Tensor.realize_all(*self.schedule_step())
  def schedule_step(self) -> list[Tensor]:
    """Assign the new values (lazily) and return the tensors to realize: with them the gradients, stored by the kernels
    that compute them, so that a p.grad read after step() is the gradient backward computed, at the old weights, as in
    PyTorch and tinygrad (left lazy, it would be computed again from the updated weights). Only in training mode, as in
    tinygrad (PyTorch steps in any mode): a step taken by mistake during evaluation raises instead of changing the model."""
    if not Tensor.training:
      raise RuntimeError("Tensor.training is False: the optimizer steps only in training mode; set Tensor.training = True "
                         "or step inside `with Tensor.train():` (or tinygrad's `with Context(TRAINING=1):`)")
    grads = []
    for p in self.params:
      if p.grad is None:  # (an AssertionError too, as tinygrad's; PyTorch skips the parameter)
        raise TensorValueError(f"parameter {p} has no gradient: call backward() first, or leave it out of the optimizer")
      grads.append(p.grad)
    self._step([g.detach() for g in grads])
    return self.params + self.buffers + grads
  def _step(self, grads: list[Tensor]) -> None: raise NotImplementedError
  def _update(self, p: Tensor, new: Tensor) -> None:
    """p's new value, computed in float32 (or wider) for a lower-precision parameter, stored in p's dtype; a 0-d p's is
    its shape again (the (1,) learning rate made it (1,), and the assign raised)."""
    p.assign(new.cast(p.dtype).reshape(p.shape))
  def _zeros(self) -> list[Tensor]:
    ts = [Tensor.zeros(*p.shape, dtype=p.dtype, device=p.device, requires_grad=False).contiguous().realize() for p in self.params]
    self.buffers += ts
    return ts

class OptimizerGroup(Optimizer):
  """Several optimizers stepped as one (tinygrad's): say Muon for the matrices and AdamW for the rest. Their updates
  realize together, in the same few kernels one optimizer's would."""
  def __init__(self, *optimizers: Optimizer):
    if not optimizers: raise ValueError("OptimizerGroup needs at least one optimizer")
    self.optimizers = optimizers
    self.params = [p for o in optimizers for p in o.params]
  def __getitem__(self, i: int) -> Optimizer: return self.optimizers[i]
  def zero_grad(self) -> None:
    for o in self.optimizers: o.zero_grad()
  def schedule_step(self) -> list[Tensor]: return [t for o in self.optimizers for t in o.schedule_step()]

class SGD(Optimizer):
  """PyTorch's SGD: weight decay adds wd*w to the gradient; momentum b = m*b + g; nesterov steps by g + m*b. classic
  (tinygrad's flag, Sutskever's form): the learning rate scales the gradient before the momentum, b = m*b + lr*g, and the
  step is b (the same steps while lr is constant)."""
  def __init__(self, params: list[Tensor], lr: float = 0.001, momentum: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
               classic: bool = False):
    super().__init__(params, lr)
    _non_negative(momentum=momentum, weight_decay=weight_decay)
    if nesterov and momentum == 0: raise ValueError("nesterov needs a momentum")
    self.momentum, self.wd, self.nesterov, self.classic = momentum, weight_decay, nesterov, classic
    self.b = self._zeros() if momentum else []
  def _step(self, grads: list[Tensor]) -> None:
    for i, (p, g) in enumerate(zip(self.params, grads)):
      rate = self.lr * self._trust(p, g)
      g = g + self.wd * p.detach() if self.wd else g
      d = self._direction(i, rate * g) if self.classic else rate * self._direction(i, g)
      self._update(p, p.detach() - d)
  def _trust(self, p: Tensor, g: Tensor) -> Tensor | float:
    """A factor of the learning rate per parameter: 1 (LARS's is its trust ratio)."""
    return 1.0
  def _direction(self, i: int, g: Tensor) -> Tensor:
    """The step for gradient g of parameter i: g, or with momentum b = m*b + g, b (or g + m*b with nesterov). b is kept in
    the parameter's dtype, as PyTorch's (classic's lr * g is float32: a half b raised, assign doesn't cast)."""
    if not self.momentum: return g
    b = self.b[i].assign((self.momentum * self.b[i] + g).cast(self.b[i].dtype))
    return g + self.momentum * b if self.nesterov else b

class LARS(SGD):
  """LARS (You et al. 2017; tinygrad's): SGD whose learning rate is scaled per parameter by the trust ratio
  tcoef * |w| / (|g| + wd * |w|) (1 where |w| or |g| is 0), classic momentum by default."""
  def __init__(self, params: list[Tensor], lr: float = 0.001, momentum: float = 0.9, weight_decay: float = 1e-4, nesterov: bool = False,
               classic: bool = True, tcoef: float = 0.001):
    super().__init__(params, lr, momentum, weight_decay, nesterov, classic)
    self.tcoef = tcoef
  def _trust(self, p: Tensor, g: Tensor) -> Tensor | float:
    r1, r2 = p.detach().square().sum().sqrt(), g.square().sum().sqrt()
    return (r1 > 0).where((r2 > 0).where(self.tcoef * r1 / (r2 + self.wd * r1), 1.0), 1.0)

class Muon(SGD):
  """Muon (Keller Jordan's; tinygrad's): SGD whose momentum step is orthogonalized by ns_steps Newton-Schulz iterations
  (Tensor.newton_schulz, a parameter of more than two dims as (shape[0], -1)), with decoupled weight decay after it.
  PyTorch's torch.optim.Muon differs as tinygrad does: it also scales the step of a tall matrix by sqrt(rows / cols), and
  it iterates in bfloat16 (tg in the parameters' dtype)."""
  def __init__(self, params: list[Tensor], lr: float = 0.001, momentum: float = 0.95, weight_decay: float = 0.1, ns_steps: int = 5,
               ns_coefficients: tuple[float, ...] = (3.4445, -4.775, 2.0315), nesterov: bool = True):
    super().__init__(params, lr, momentum, 0.0, nesterov and momentum != 0)
    self.post_wd, self.ns_steps, self.coeffs = weight_decay, ns_steps, ns_coefficients
  def _step(self, grads: list[Tensor]) -> None:
    for i, (p, g) in enumerate(zip(self.params, grads)):
      d = self._direction(i, g)
      d = d.reshape(d.shape[0], -1).newton_schulz(self.ns_steps, self.coeffs).reshape(d.shape)
      self._update(p, p.detach() - self.lr * (d + self.post_wd * p.detach()))

class LAMB(Optimizer):
  """LAMB (You et al. 2019): Adam's bias-corrected update plus decoupled weight decay, scaled per tensor by the trust
  ratio |w| / |update|. adam=True leaves out the trust ratio: that is AdamW (and Adam when weight_decay is 0)."""
  def __init__(self, params: list[Tensor], lr: float = 0.001, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-6,
               weight_decay: float = 0.0, adam: bool = False):
    super().__init__(params, lr)
    _non_negative(epsilon=eps, weight_decay=weight_decay)
    for i, b in enumerate((b1, b2)):
      if not 0 <= b < 1: raise ValueError(f"Invalid beta parameter at index {i}: {b} (it must be in [0, 1))")
    self.b1, self.b2, self.eps, self.wd, self.adam = b1, b2, eps, weight_decay, adam
    dev = self.params[0].device
    self.b1_t, self.b2_t = (Tensor([1.0], device=dev, dtype=dtypes.float32, requires_grad=False) for _ in range(2))
    self.m, self.v = self._zeros(), self._zeros()
    self.buffers += [self.b1_t, self.b2_t]
  def _step(self, grads: list[Tensor]) -> None:
    b1_t, b2_t = self.b1_t.assign(self.b1_t * self.b1), self.b2_t.assign(self.b2_t * self.b2)
    for p, g, m, v in zip(self.params, grads, self.m, self.v):  # the state may live elsewhere (moved to the CPU to save
      g = g if g.device == m.device else g.shard_like(m)  # device memory): the moments are updated where they live
      m.assign(self.b1 * m + (1 - self.b1) * g)
      v.assign(self.b2 * v + (1 - self.b2) * g * g)
      adam = (m / (1 - b1_t)) / ((v / (1 - b2_t)).sqrt() + self.eps)
      up = (adam if adam.device == p.device else adam.shard_like(p)) + self.wd * p.detach()
      if not self.adam:
        wn, un = p.detach().square().sum().sqrt(), up.square().sum().sqrt()
        up = up * ((wn > 0) & (un > 0)).where(wn / un, 1.0)
      self._update(p, p.detach() - self.lr * up)

def AdamW(params: list[Tensor], lr: float = 0.001, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.01) -> LAMB:
  """Adam with decoupled weight decay (Loshchilov & Hutter): the decay is added to the step, not the gradient."""
  return LAMB(params, lr, b1, b2, eps, weight_decay, adam=True)

def Adam(params: list[Tensor], lr: float = 0.001, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> LAMB:
  return LAMB(params, lr, b1, b2, eps, 0.0, adam=True)
