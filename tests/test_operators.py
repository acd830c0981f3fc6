"""Python operators on tensors: values (vs NumPy, and torch where importable), reflected forms
with Python scalars and NumPy arrays, in-place forms with PyTorch's dtype rules and version
counters, and the errors PyTorch gives for bool subtraction and integer division by zero."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import jflow as flow

A = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.25]], np.float32)
B = np.array([[2.0, 0.5, -1.5], [3.0, -2.0, 4.0]], np.float32)
IA = np.array([[7, -7, 3], [0, 9, -4]], np.int64)
IB = np.array([[2, 3, -2], [5, -4, 3]], np.int64)
MA = np.array([[True, False, True], [False, True, True]])
MB = np.array([[True, True, False], [False, False, True]])

ARITH = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
         "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
         "pow": operator.pow}
COMPARE = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
           "gt": operator.gt, "ge": operator.ge}
BITWISE = {"and": operator.and_, "or": operator.or_, "xor": operator.xor}


def _close(t: flow.Tensor, want: np.ndarray, dtype: flow.dtype | None = None) -> None:
    assert isinstance(t, flow.Tensor)
    if dtype is not None:
        assert t.dtype is dtype
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", list(ARITH))
def test_arith_float(name):
    op = ARITH[name]
    a, b = (np.abs(A) + 0.5, B) if name == "pow" else (A, B)
    _close(op(flow.tensor(a), flow.tensor(b)), op(a, b), flow.float32)
    _close(op(flow.tensor(a), 2.5), op(a, np.float32(2.5)), flow.float32)
    _close(op(2.5, flow.tensor(np.abs(b) + 0.5)), op(np.float32(2.5), np.abs(b) + 0.5),
           flow.float32)


@pytest.mark.parametrize("name", list(ARITH))
def test_arith_int(name):
    op = ARITH[name]
    b = np.abs(IB) if name == "pow" else IB
    want_dtype = flow.float32 if name == "truediv" else flow.int64
    _close(op(flow.tensor(IA), flow.tensor(b)), op(IA, b), want_dtype)
    _close(op(flow.tensor(IA), 3), op(IA, 3), want_dtype)
    _close(op(5, flow.tensor(IB)) if name != "pow" else op(2, flow.tensor(b)),
           op(5, IB) if name != "pow" else op(2, b), want_dtype)


def test_floor_division_and_remainder_follow_python_signs():
    # PyTorch: // floors and % takes the divisor's sign, as Python (not C's truncation)
    x = flow.tensor([7, -7, 7, -7])
    y = flow.tensor([2, 2, -2, -2])
    assert (x // y).tolist() == [3, -4, -4, 3]
    assert (x % y).tolist() == [1, 1, -1, -1]
    assert (flow.tensor([-7.5]) // 2).tolist() == [-4.0]
    assert (flow.tensor([-7.5]) % 2).tolist() == [0.5]


def test_operators_match_torch():
    torch = pytest.importorskip("torch")
    cases = [(A, B), (IA, IB)]
    for a, b in cases:
        for name, op in {**ARITH, **COMPARE}.items():
            if name == "pow":
                a, b = np.abs(a), np.abs(b)
            got = op(flow.tensor(a), flow.tensor(b))
            want = op(torch.tensor(a), torch.tensor(b))
            assert str(got.dtype).replace("flow.", "") == str(want.dtype).replace("torch.", "")
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
            for s in (3, -2.5):
                if name == "pow" and s < 0:
                    continue
                got, want = op(flow.tensor(a), s), op(torch.tensor(a), s)
                assert got.dtype.name == str(want.dtype).replace("torch.", ""), (name, s)
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_unary_operators():
    _close(-flow.tensor(A), -A, flow.float32)
    _close(-flow.tensor(IA), -IA, flow.int64)
    _close(abs(flow.tensor(A)), np.abs(A), flow.float32)
    _close(abs(flow.tensor(IA)), np.abs(IA), flow.int64)
    _close(~flow.tensor(IA), ~IA, flow.int64)
    _close(~flow.tensor(MA), ~MA, flow.bool)
    t = flow.tensor(A)
    assert +t is t
    with pytest.raises(TypeError, match="integer or bool"):
        ~flow.tensor(A)


@pytest.mark.parametrize("name", list(COMPARE))
def test_comparisons(name):
    op = COMPARE[name]
    _close(op(flow.tensor(A), flow.tensor(B)), op(A, B), flow.bool)
    _close(op(flow.tensor(IA), 3), op(IA, 3), flow.bool)
    _close(op(flow.tensor(IA), 2.5), op(IA, 2.5), flow.bool)
    _close(op(3, flow.tensor(IA)), op(3, IA), flow.bool)  # Python reflects to the mirrored op
    _close(op(flow.tensor(A), flow.tensor(IB)), op(A, IB), flow.bool)


@pytest.mark.parametrize("name", list(BITWISE))
def test_bitwise(name):
    op = BITWISE[name]
    _close(op(flow.tensor(IA), flow.tensor(IB)), op(IA, IB), flow.int64)
    _close(op(flow.tensor(MA), flow.tensor(MB)), op(MA, MB), flow.bool)
    _close(op(flow.tensor(IA), 6), op(IA, 6), flow.int64)
    _close(op(6, flow.tensor(IA)), op(6, IA), flow.int64)
    _close(op(flow.tensor(MA), True), op(MA, True), flow.bool)
    _close(op(flow.tensor(MA), flow.tensor(IB)), op(MA, IB), flow.int64)
    with pytest.raises(TypeError, match="integer or bool"):
        op(flow.tensor(A), flow.tensor(B))


def test_numpy_operands_become_tensors():
    t = flow.tensor(A)
    for r in (t + B, B + t, t * B.astype(np.float64), B - t):
        assert isinstance(r, flow.Tensor)
    assert (t + B.astype(np.float64)).dtype is flow.float64  # an ndarray is a tensor operand
    _close(B - t, B - A)
    _close(np.float64(2.0) * t, 2 * A, flow.float32)  # NumPy scalars are Python scalars
    assert (B == t).dtype is flow.bool


def test_matmul_operator():
    x, y = flow.tensor(A), flow.tensor(B.T.copy())
    _close(x @ y, A @ B.T, flow.float32)
    _close(A @ y, A @ B.T)
    _close(x @ B.T, A @ B.T)


def test_unsupported_operands():
    t = flow.tensor(A)
    for bad in ("a", None, [1.0, 2.0], object()):
        with pytest.raises(TypeError, match="unsupported operand"):
            t + bad
    assert (t == None) is False  # noqa: E711  (Python's fallback, as torch)


def test_bool_subtraction_is_refused_as_in_torch():
    m = flow.tensor(MA)
    for f in (lambda: m - m, lambda: m - 1, lambda: 1 - m, lambda: flow.tensor(A) - m,
              lambda: flow.tensor(A) - True, lambda: flow.sub(flow.tensor(A), m)):
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool"):
            f()


def test_integer_division_by_a_zero_scalar():
    x = flow.tensor(IA)
    for f, name in ((lambda: x // 0, "floor_divide"), (lambda: x % 0, "remainder"),
                    (lambda: flow.fmod(x, 0), "fmod")):
        with pytest.raises(ZeroDivisionError, match=name):
            f()
    assert np.isinf((flow.tensor(A) // 0).numpy()).all()  # floats give inf, as torch
    assert (x / 0).dtype is flow.float32  # true division is float


def test_integer_division_by_a_tensor_holding_zero():
    x, z = flow.tensor([4, 5, 6]), flow.tensor([2, 0, 1])
    for f, name in ((lambda: x // z, "floor_divide"), (lambda: x % z, "remainder"),
                    (lambda: flow.fmod(x, z), "fmod"), (lambda: 7 // z, "floor_divide"),
                    (lambda: flow.trunc_divide(x, z.int()), "trunc_divide")):
        with pytest.raises(ZeroDivisionError, match=name):
            f()
    assert (x // flow.tensor([2, 1, 1])).tolist() == [2, 5, 6]
    assert np.isinf((flow.tensor([4.0]) // flow.tensor([0.0])).numpy()).all()


def test_integer_scalar_overflow_is_an_error():
    with pytest.raises(OverflowError, match="2147483648 cannot be converted to flow.int32"):
        flow.tensor([1], dtype=flow.int32) + 2**31
    with pytest.raises(OverflowError, match="uint8"):
        flow.tensor([1], dtype=flow.uint8) * 256


def test_negative_zero_scalar_is_not_confused_with_zero():
    t = flow.ones(2)
    assert np.signbit((t * 0.0).numpy()).tolist() == [False, False]
    assert np.signbit((t * -0.0).numpy()).tolist() == [True, True]
    assert np.signbit((t * 0.0).numpy()).tolist() == [False, False]


# -- in-place --------------------------------------------------------------------------------

@pytest.mark.parametrize("name,op", [("iadd", operator.iadd), ("isub", operator.isub),
                                     ("imul", operator.imul), ("itruediv", operator.itruediv),
                                     ("ifloordiv", operator.ifloordiv), ("imod", operator.imod),
                                     ("ipow", operator.ipow)])
def test_inplace_operators_keep_identity_and_bump_version(name, op):
    t = flow.tensor(np.abs(A) + 1)
    t0, v0 = t, t._version
    t = op(t, flow.tensor(np.abs(B) + 1))
    assert t is t0 and t._version == v0 + 1 and t.dtype is flow.float32
    _close(t, op(np.abs(A) + 1, np.abs(B) + 1))
    t = op(t, 2)
    assert t is t0 and t._version == v0 + 2


@pytest.mark.parametrize("op", [operator.iand, operator.ior, operator.ixor])
def test_inplace_bitwise(op):
    t = flow.tensor(IA)
    t0 = t
    t = op(t, 5)
    assert t is t0 and t._version == 1
    _close(t, op(IA.copy(), 5), flow.int64)


def test_inplace_methods():
    t = flow.tensor(A)
    assert t.add_(1) is t and t._version == 1
    _close(t, A + 1)
    t.add_(flow.tensor(B), alpha=2)
    _close(t, A + 1 + 2 * B)
    t.mul_(flow.tensor(B))
    _close(t, (A + 1 + 2 * B) * B)
    t.sub_(1).div_(2)
    _close(t, ((A + 1 + 2 * B) * B - 1) / 2)
    assert t._version == 5


def test_zero_fill_copy():
    t = flow.tensor(A)
    assert t.zero_() is t and t._version == 1
    _close(t, np.zeros_like(A), flow.float32)
    t.fill_(2.5)
    _close(t, np.full_like(A, 2.5))
    t.fill_(flow.tensor(-1.0))
    _close(t, np.full_like(A, -1.0))
    assert t._version == 3
    t.copy_(flow.tensor(B))
    _close(t, B, flow.float32)
    t.copy_(flow.tensor(IB))  # copy_ casts to the destination's dtype
    _close(t, IB.astype(np.float32), flow.float32)
    assert t._version == 5
    i = flow.tensor(IA)
    i.copy_(flow.tensor([[1.7, -1.7, 0.2], [3.0, 4.0, 5.0]]))  # float -> int truncates
    assert i.tolist() == [[1, -1, 0], [3, 4, 5]] and i.dtype is flow.int64
    i.fill_(3.9)
    assert i.tolist() == [[3] * 3] * 2
    with pytest.raises(RuntimeError, match="0-dimension"):
        t.fill_(flow.ones(2))
    with pytest.raises(TypeError, match="value"):
        t.fill_("x")
    with pytest.raises(TypeError, match="src"):
        t.copy_(B)


def test_copy_broadcasts():
    t = flow.zeros(2, 3)
    t.copy_(flow.tensor([1.0, 2.0, 3.0]))
    assert t.tolist() == [[1.0, 2.0, 3.0]] * 2


def test_inplace_dtype_rules_follow_torch():
    i = flow.tensor([1, 2], dtype=flow.int32)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Int"):
        i += 1.5
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        i *= flow.ones(2)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        i /= 2
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                           "output type Bool"):
        m = flow.tensor([True, False])
        m += 1
    assert i.tolist() == [1, 2] and i._version == 0  # a refused op leaves the tensor as it was
    i += flow.tensor([10, 20])  # int64 result cast back to int32 (same category): allowed
    assert i.dtype is flow.int32 and i.tolist() == [11, 22]
    f = flow.ones(2)
    f += flow.ones(2, dtype=flow.float64)
    assert f.dtype is flow.float32
    f += flow.tensor([1, 2])
    assert f.tolist() == [3.0, 4.0]
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the "
                                           r"broadcast shape \[2, 2\]"):
        f += flow.ones(2, 2)


def test_inplace_dtype_rules_match_torch_across_dtypes():
    torch = pytest.importorskip("torch")
    names = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"]
    for dst in names:
        for src in names + [1, 1.5, True]:
            if isinstance(src, str):
                t_src, f_src = torch.ones(2, dtype=getattr(torch, src)), \
                    flow.ones(2, dtype=getattr(flow, src))
            else:
                t_src = f_src = src
            td = torch.ones(2, dtype=getattr(torch, dst))
            fd = flow.ones(2, dtype=getattr(flow, dst))
            try:
                td.mul_(t_src)
                torch_ok = True
            except RuntimeError:
                torch_ok = False
            try:
                fd.mul_(f_src)
                ok = True
            except RuntimeError:
                ok = False
            assert ok == torch_ok, (dst, src)
            if ok:
                assert fd.dtype.name == dst
