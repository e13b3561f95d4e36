"""spec: type_verify accepts well-formed graphs at each stage and names the UOp of a malformed one; helpers: getenv, Context."""
from __future__ import annotations
import pytest
from tg.uop import (DEBUG, SPEC, AxisType, Context, EnvError, KernelInfo, Ops, SpecError, UOp, dtypes, getenv, kernel_spec, program_spec, tensor_spec,
                    type_verify)

def gemm(M: int = 4, N: int = 5, K: int = 6) -> UOp:
  C, A, B = UOp.param(0, dtypes.float32, (M, N)), UOp.param(1, dtypes.float32, (M, K)), UOp.param(2, dtypes.float32, (K, N))
  i, j = UOp.range(C.shape[0], 0), UOp.range(C.shape[1], 1)
  k = UOp.range(A.shape[1], 2, axis_type=AxisType.REDUCE)
  C = C[i, j].set(0.0)
  C = C[i, j].set(C.after(k)[i, j] + A[i, k] * B[k, j], end=k)
  return C.end(i, j).sink(arg=KernelInfo(name="gemm", opts_to_apply=()))

def test_gemm_kernel_passes_kernel_spec() -> None:
  ast = gemm()
  type_verify(ast, kernel_spec)
  assert ast.arg.name == "gemm" and {u.op for u in ast.toposort()} >= {Ops.PARAM, Ops.RESHAPE, Ops.RANGE, Ops.INDEX, Ops.STORE, Ops.AFTER, Ops.END}

def break_one(ast: UOp, op: Ops, **change: object) -> UOp:
  target = next(u for u in ast.toposort() if u.op is op)
  return ast.substitute({target: target.replace(**change)})

@pytest.mark.parametrize("op,change", [
  (Ops.RANGE, {"arg": "not an axis"}),                                   # a RANGE's arg is (axis_id, AxisType)
  (Ops.STORE, {"dtype": dtypes.float32}),                                # STORE is void
  (Ops.PARAM, {"dtype": dtypes.float32}),                                # a PARAM is a pointer
  (Ops.END, {"src": ()}),                                                # END closes ranges
  (Ops.CONST, {"arg": "zero"}),                                          # a float CONST holds a float
], ids=lambda v: str(v))
def test_malformed_gemm_fails_kernel_spec(op: Ops, change: dict) -> None:
  bad = break_one(gemm(), op, **change)
  with pytest.raises(SpecError, match=op.name): type_verify(bad, kernel_spec)

def test_malformed_alu_and_unknown_ops_fail() -> None:
  f = UOp.param(0, dtypes.float32, 4)[0].load()
  with pytest.raises(SpecError, match="IDIV"): type_verify(UOp(Ops.IDIV, dtypes.float32, (f, f)).sink(), kernel_spec)
  mixed = UOp(Ops.ADD, dtypes.float32, (f, UOp.const(dtypes.int32, 1)))
  with pytest.raises(SpecError, match="ADD") as e: type_verify(mixed.sink(), kernel_spec)
  assert "UOp(Ops.ADD" in str(e.value)  # the offending UOp is printed
  with pytest.raises(SpecError, match="no rule matches"): type_verify(UOp(Ops.COPY, dtypes.float32, (f,)).sink(), kernel_spec)
  with pytest.raises(SpecError): type_verify(UOp(Ops.WHERE, dtypes.float32, (f, f, f)), kernel_spec)

def test_tensor_and_program_specs() -> None:
  buf = UOp(Ops.BUFFER, dtypes.float32, (), 12)
  type_verify(UOp(Ops.RESHAPE, dtypes.float32, (buf,), (3, 4)).sink(), tensor_spec)
  with pytest.raises(SpecError, match="PERMUTE"): type_verify(UOp(Ops.PERMUTE, dtypes.float32, (buf,), (0, 0)), tensor_spec)
  p = UOp(Ops.PARAM, dtypes.float32.ptr(4), (), 0)
  r = UOp.range(4, 0)
  idx = UOp(Ops.INDEX, dtypes.float32.ptr(4), (p, r))
  lin = [p, r.src[0], r, idx, UOp(Ops.LOAD, dtypes.float32, (idx,)), UOp(Ops.STORE, dtypes.void, (idx, UOp(Ops.LOAD, dtypes.float32, (idx,))))]
  type_verify(lin, program_spec)
  with pytest.raises(SpecError, match="INDEX"): type_verify([UOp(Ops.INDEX, dtypes.float32, (p, r))], program_spec)

def test_getenv_and_context(monkeypatch: pytest.MonkeyPatch) -> None:
  monkeypatch.setenv("TG_TEST_FLAG", "7")
  monkeypatch.setenv("TG_TEST_NAME", "abc")
  assert getenv("TG_TEST_FLAG") == 7 and getenv("TG_TEST_NAME", "") == "abc" and getenv("TG_TEST_UNSET", 3) == 3
  old = DEBUG.value
  with Context(DEBUG=4, SPEC=2):
    assert DEBUG >= 4 and int(SPEC) == 2 and DEBUG.value == 4
    with Context(DEBUG=0): assert not DEBUG
    assert DEBUG.value == 4
  assert DEBUG.value == old
  with pytest.raises(KeyError, match="unknown context variable"), Context(NOT_A_VAR=1): pass
  with Context(WINO=1, IGNORE_OOB=1): pass  # tinygrad's, accepted (they change nothing tg computes)
  with pytest.raises(ZeroDivisionError), Context(DEBUG=9): 1 // 0  # noqa: B018
  assert DEBUG.value == old

@pytest.mark.parametrize("raw, default, lo, hi, want", [
  ("", 3, 1, None, 3), ("  ", 3, 1, None, 3), ("12", 3, 1, None, 12), (" 7 ", 0, None, None, 7), ("-4", 0, None, None, -4),
  ("0", 1, 0, 2, 0), ("2", 1, 0, 2, 2), ("1", False, None, None, True), ("0", True, None, None, False), ("x y", "", None, None, "x y")])
def test_getenv_accepts(monkeypatch: pytest.MonkeyPatch, raw: str, default, lo, hi, want) -> None:
  monkeypatch.setenv("TG_TEST_SW", raw)
  assert (got := getenv("TG_TEST_SW", default, lo, hi)) == want and type(got) is type(want)

@pytest.mark.parametrize("raw, default, lo, hi, accepted", [
  ("abc", 0, None, None, "an integer"), ("1.5", 0, 0, None, "an integer >= 0"), ("0", 4, 1, 256, "an integer >= 1 <= 256"),
  ("-1", 4, 1, 256, "an integer >= 1 <= 256"), ("257", 4, 1, 256, "an integer >= 1 <= 256"), ("2", False, None, None, "0 or 1"),
  ("yes", False, None, None, "0 or 1")])
def test_getenv_rejects_naming_the_switch(monkeypatch: pytest.MonkeyPatch, raw: str, default, lo, hi, accepted: str) -> None:
  monkeypatch.setenv("TG_TEST_SW", raw)
  with pytest.raises(EnvError) as e: getenv("TG_TEST_SW", default, lo, hi)
  msg = str(e.value)
  assert isinstance(e.value, ValueError) and msg.startswith(f"TG_TEST_SW={raw!r} is ") and msg.endswith(f"TG_TEST_SW takes {accepted}")

def copy_kernel(n_out: int = 8, n_in: int = 8, idx=None, val=None, ids: tuple[int, int] = (0, 1)) -> UOp:
  O, A = UOp.param(0, dtypes.float32, n_out), UOp.param(1, dtypes.float32, n_in)
  i = UOp.range(n_out, ids[0])
  st = O[i].store(A[idx(i) if idx else i] if val is None else val(A, i))
  if ids[1] != ids[0]: return st.end(i).sink(arg=KernelInfo(name="copy"))
  j = UOp.range(2, ids[1], AxisType.REDUCE)
  return O[i].store(A[i].reduce(j, arg=Ops.ADD) + A[i]).end(i).sink(st, arg=KernelInfo(name="copy"))

def test_kernel_spec_whole_kernel_checks() -> None:
  type_verify(copy_kernel(), kernel_spec)
  type_verify(copy_kernel(idx=lambda i: (i - 1).valid(i >= 1)), kernel_spec)  # the gate keeps -1 out
  type_verify(copy_kernel(4, 8, idx=lambda i: i * 2 + 1), kernel_spec)
  with pytest.raises(SpecError, match=r"kernel 'copy': two RANGEs have id 0"): type_verify(copy_kernel(ids=(0, 0)), kernel_spec)
  with pytest.raises(SpecError, match=r"a STORE of dtypes.int32 into PARAM 0 \(dtypes.float32.ptr\(8\)\)"):
    type_verify(copy_kernel(val=lambda A, i: i.cast(dtypes.int32)), kernel_spec)
  with pytest.raises(SpecError, match=r"index \(r0\+1\) into PARAM 1 \(dtypes.float32.ptr\(8\)\) spans \[1, 8\], past its 8 elements \[0, 7\]"):
    type_verify(copy_kernel(idx=lambda i: i + 1), kernel_spec)
  with pytest.raises(SpecError, match=r"spans \[-1, 6\]"): type_verify(copy_kernel(idx=lambda i: i - 1), kernel_spec)
  P = UOp.param(0, dtypes.float32, (4, 5))
  r, c = UOp.range(4, 0), UOp.range(6, 1)
  with pytest.raises(SpecError, match=r"index r1 into PARAM 0 .* spans \[0, 5\], past axis 1 of shape \(4, 5\) \[0, 4\]"):
    type_verify(P[r, c].store(1.0).end(r, c).sink(arg=KernelInfo(name="rows")), kernel_spec)
