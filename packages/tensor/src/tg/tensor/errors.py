"""Exception classes shared by tg.tensor."""

class TensorShapeError(ValueError, RuntimeError):
  """Shapes that don't fit together (matmul, broadcast, permute, gather, conv, ...). numpy raises ValueError for these,
  PyTorch and tinygrad RuntimeError: deriving from both lets code written for either catch it."""
