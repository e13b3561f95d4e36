"""tg.tensor: a lazy Tensor with autograd, fused scheduling and realize; nn layers, optimizers, safetensors state,
TinyJit, and custom kernels (Tensor.custom_kernel, Tensor.call)."""
from tg.uop import dtypes, UOp, Ops, Context, Timing
from tg.codegen.device import Device, GlobalCounters
from tg.tensor.tensor import Tensor, no_grad
from tg.tensor.realize import Counters
from tg.tensor.jit import TinyJit
from tg.tensor.errors import TensorBroadcastError, TensorShapeError, TensorValueError, TensorUnsupportedError, TensorDtypeError, TensorSymbolicError
from tg.tensor import nn

__all__ = ["Tensor", "no_grad", "dtypes", "Device", "UOp", "Ops", "Context", "Timing", "GlobalCounters", "Counters", "TinyJit", "nn",
           "TensorShapeError", "TensorValueError", "TensorUnsupportedError", "TensorDtypeError",
           "TensorSymbolicError", "TensorBroadcastError"]
