"""tg.tensor: a lazy Tensor with autograd, fused scheduling and realize; nn layers, optimizers, safetensors state,
TinyJit, and custom kernels (Tensor.custom_kernel, Tensor.call)."""
from tg.uop import dtypes, UOp, Ops, Context, Timing
from tg.codegen.device import Device, GlobalCounters
from tg.tensor.tensor import Tensor, no_grad
from tg.tensor.realize import Counters
from tg.tensor.jit import TinyJit
from tg.tensor.errors import TensorBroadcastError, TensorShapeError, TensorValueError, TensorUnsupportedError, TensorDtypeError, TensorSymbolicError
from tg.tensor import nn

Variable = UOp.variable  # tinygrad's name: Variable("n", 1, 10).bind(4) is a size or index the same kernels serve for every value

__all__ = ["Tensor", "no_grad", "dtypes", "Device", "UOp", "Variable", "Ops", "Context", "Timing", "GlobalCounters", "Counters", "TinyJit", "nn",
           "TensorShapeError", "TensorValueError", "TensorUnsupportedError", "TensorDtypeError",
           "TensorSymbolicError", "TensorBroadcastError"]
