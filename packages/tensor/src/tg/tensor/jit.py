"""TinyJit: run a function once, capture the kernels its second call runs, then replay them on new inputs.

A replay launches the captured kernels with the new input buffers swapped in for the captured ones: no graph building,
no scheduling, no compiling. Everything else a kernel touches (parameters, optimizer state, intermediate buffers) is the
same buffer every replay, which is what a training step wants. The function must be the same computation every call:
what it does in Python besides building tensors (prints, reading .item(), branching on values) runs only while capturing.

Symbolic sizes: pass a bound variable (`UOp.variable("n", 1, 32).bind(k)`) as an argument and shrink by it inside the
function; a replay launches the captured kernels with the arguments' values of the variables."""
from __future__ import annotations
import functools
from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar
from tg.uop import UOp, DType, Ops
from tg.codegen.device import Buffer
from tg.codegen.pipeline import CompiledRunner
from tg.tensor.tensor import Tensor
from tg.tensor.graph import buffers
from tg.tensor.schedule import ExecItem
from tg.tensor.realize import capturing, get_runner, run_item, launch

R = TypeVar("R")

def _input_tensors(args: tuple, kwargs: dict) -> list[tuple[str, Tensor]]:
  named = [(f"argument {i}", a) for i, a in enumerate(args)] + [(f"argument {k!r}", v) for k, v in sorted(kwargs.items())]
  return [(n, t) for n, t in named if isinstance(t, Tensor)]

def _var_vals(args: tuple, kwargs: dict) -> dict[str, int]:
  """The values of the bound variables among the arguments."""
  return {a.src[0].arg[0]: a.src[1].arg for a in (*args, *kwargs.values()) if isinstance(a, UOp) and a.op is Ops.BIND}

def _buffer(t: Tensor) -> Buffer:
  return buffers[t.uop if t.uop.op is Ops.BUFFER else t.uop.src[0]]

def _map_outputs(ret: Any, fn: Callable[[Tensor], Tensor]) -> Any:
  if isinstance(ret, Tensor): return fn(ret)
  if isinstance(ret, (list, tuple)): return type(ret)(_map_outputs(r, fn) for r in ret)
  if isinstance(ret, dict): return {k: _map_outputs(v, fn) for k, v in ret.items()}
  return ret

@dataclass
class _Step:
  """One captured ExecItem: what to launch, its buffers, and which of them are inputs (slot in bufs -> input number)."""
  item: ExecItem
  runner: CompiledRunner | None  # None for a copy
  inputs: list[tuple[int, int]]

class TinyJit(Generic[R]):
  def __init__(self, fxn: Callable[..., R]):
    self.fxn = fxn
    self.reset()
  def reset(self) -> None:
    """Forget the capture: the next call runs plainly, the one after captures again."""
    self.calls, self.steps, self.signature, self.outputs = 0, list[_Step](), list[tuple[tuple[int, ...], DType, str]](), None
    self.captured_inputs: list[Buffer] = []
  def __get__(self, obj: Any, objtype: Any = None) -> Callable[..., R]: return functools.partial(self.__call__, obj)  # a jitted method

  def __call__(self, *args: Any, **kwargs: Any) -> R:
    ins = _input_tensors(args, kwargs)
    Tensor.realize_all(*[t for _, t in ins])  # inputs are buffers from here on (nothing to do when they already are)
    self.calls += 1
    if self.calls == 1: return self._realized(self.fxn(*args, **kwargs))
    if self.calls == 2: return self._capture(ins, args, kwargs)
    return self._replay(ins, _var_vals(args, kwargs))

  @staticmethod
  def _realized(ret: R) -> R:
    outs: list[Tensor] = []
    _map_outputs(ret, lambda t: outs.append(t) or t)
    Tensor.realize_all(*outs)
    return ret

  def _capture(self, ins: list[tuple[str, Tensor]], args: tuple, kwargs: dict) -> R:
    items: list[ExecItem] = []
    capturing.append(items)
    try: ret = self._realized(self.fxn(*args, **kwargs))
    finally: capturing.pop()
    self.signature = [(t.shape, t.dtype, t.device) for _, t in ins]
    self.captured_inputs = [_buffer(t) for _, t in ins]
    slot = {id(b): i for i, b in enumerate(self.captured_inputs)}
    self.steps = [_Step(ei, None if ei.ast.op is Ops.COPY else get_runner(ei.ast, ei.bufs[0].device),
                        [(j, slot[id(b)]) for j, b in enumerate(ei.bufs) if id(b) in slot]) for ei in items]
    self.outputs = ret
    return ret

  def _replay(self, ins: list[tuple[str, Tensor]], var_vals: dict[str, int]) -> R:
    if len(ins) != len(self.signature): raise TypeError(f"TinyJit captured {len(self.signature)} tensor inputs, got {len(ins)}")
    for (name, t), (shape, dtype, device) in zip(ins, self.signature):
      if (t.shape, t.dtype, t.device) != (shape, dtype, device):
        raise ValueError(f"TinyJit: {name} is {t.shape} {t.dtype} on {t.device}, but the kernels were captured for {shape} {dtype} on "
                         f"{device}; call .reset() to capture again, or use another TinyJit for this shape")
    new = [_buffer(t) for _, t in ins]
    for st in self.steps:
      bufs = st.item.bufs
      if st.inputs:
        bufs = list(bufs)
        for j, i in st.inputs: bufs[j] = new[i]
      if st.runner is None: run_item(ExecItem(st.item.ast, bufs))
      else: launch(st.runner, bufs, {**st.item.var_vals, **var_vals})
    by_buffer = {id(b): t for b, (_, t) in zip(self.captured_inputs, ins)}
    return _map_outputs(self.outputs, lambda t: by_buffer.get(id(_buffer(t)), Tensor(t.uop)))
