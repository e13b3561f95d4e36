"""Exception classes shared by tg.tensor. numpy raises ValueError for a bad argument or shapes that don't fit, PyTorch
RuntimeError, and tinygrad asserts most of its argument checks (AssertionError): these derive from all three, so code
written for any of them catches them."""

class TensorValueError(ValueError, RuntimeError, AssertionError):
  """An argument tg can't take (an unknown mode string, a repeated axis, a negative size, ...)."""

class TensorShapeError(TensorValueError):
  """Shapes that don't fit together (matmul, broadcast, permute, gather, conv, ...)."""

class TensorBroadcastError(TensorShapeError, IndexError):
  """Shapes an elementwise op can't broadcast together: tinygrad raises IndexError (numpy's "shape mismatch"), PyTorch
  RuntimeError."""

class TensorSymbolicError(TensorValueError):
  """A symbolic size an op can't take (equal pieces of a symbolic axis)."""

class TensorDtypeError(TypeError, RuntimeError, AssertionError):
  """A tensor of a dtype the op can't take (a bitwise op or a shift of floats, scatter of another dtype, an integer to a
  negative power): numpy raises TypeError, PyTorch RuntimeError, tinygrad asserts."""

class TensorUnsupportedError(ValueError, NotImplementedError, AssertionError):
  """A mode tg doesn't have (a pad or interpolate mode): PyTorch raises NotImplementedError (a RuntimeError), tinygrad asserts."""
