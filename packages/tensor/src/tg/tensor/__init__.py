"""tg.tensor: a lazy Tensor with autograd, fused scheduling and realize."""
from tg.uop import dtypes, UOp, Ops
from tg.codegen.device import Device
from tg.tensor.tensor import Tensor, no_grad
from tg.tensor.realize import Counters

__all__ = ["Tensor", "no_grad", "dtypes", "Device", "UOp", "Ops", "Counters"]
