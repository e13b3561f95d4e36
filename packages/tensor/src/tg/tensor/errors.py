"""Exception classes shared by tg.tensor. numpy raises ValueError for a bad argument or shapes that don't fit, PyTorch
and tinygrad RuntimeError: these derive from both, so code written for either catches them."""

class TensorValueError(ValueError, RuntimeError):
  """An argument tg can't take (an unknown mode string, a repeated axis, a negative size, ...)."""

class TensorShapeError(TensorValueError):
  """Shapes that don't fit together (matmul, broadcast, permute, gather, conv, ...)."""

class TensorSymbolicError(TensorValueError, AssertionError):
  """A symbolic size an op can't take (equal pieces of a symbolic axis): tinygrad asserts, so it is an AssertionError too."""

class TensorDtypeError(TypeError, RuntimeError):
  """A tensor of a dtype the op can't take (a bitwise op or a shift of floats, scatter of another dtype, an integer to a
  negative power): numpy raises TypeError, PyTorch and tinygrad RuntimeError."""

class TensorUnsupportedError(ValueError, NotImplementedError):
  """A mode tg doesn't have (a pad or interpolate mode): tinygrad and PyTorch raise NotImplementedError (a RuntimeError)."""
