"""tg.tensor: a lazy Tensor with autograd, fused scheduling, realize, JIT and nn.

Still to come (see the tg.tensor issues): Tensor, autograd as UOp rewrite rules, the scheduler that fuses the
graph into kernels, TinyJit, nn layers, optimizers and safetensors state.
"""
