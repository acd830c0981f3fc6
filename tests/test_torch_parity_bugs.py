"""Behaviours where jflow differed from PyTorch (found by differential testing), each pinned
twice: against a hand-written expectation (always), and against PyTorch itself where it is
installed (``*_matches_torch``, skipped otherwise).

1. backward from several roots of one op (split outputs, one tensor twice, in-place relu);
2. integer ``**`` a negative integer;
3. ``add``/``sub``'s ``alpha`` takes no part in type promotion;
4. ``.grad`` assignments are checked (dtype, shape, type);
5. ``clamp`` with ``min > max`` is defined (every value is ``max``);
6. ``zero_``/``fill_``/``copy_`` keep the graph of a tensor with history.
"""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

X0 = [1.0, -2.0, 3.0, -4.0]


def _np(t) -> np.ndarray:
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


# -- 1. backward with several roots from one op ------------------------------------------------

def _split_roots(lib, x, g2, **kw):
    a, b = (x * 2).split(2)
    lib.autograd.backward([a, b], [g2, g2 * 3], **kw)


def _same_root_twice(lib, x, g4, **kw):
    y = x * 2 + 0.5  # a root whose node feeds another node (not only the leaf)
    lib.autograd.backward([y, y], [g4, g4], **kw)


def _inplace_relu_roots(lib, x, g4, **kw):
    y = x * 2
    z = lib.nn.functional.relu(y, inplace=True)  # y and z: one tensor, one node
    lib.autograd.backward([y, z], [g4, g4], **kw)


def _root_reachable_from_root(lib, x, g4, **kw):
    y = x * 2
    z = lib.nn.functional.relu(y, inplace=True)
    lib.autograd.backward([z * 3, z], [g4, g4], **kw)  # z is a root and an input of a root


_MULTI_ROOT = {  # case -> (function, which gradient it takes, x.grad by hand)
    "split": (_split_roots, "g2", [2.0, 4.0, 6.0, 12.0]),
    "same_root_twice": (_same_root_twice, "g4", [4.0, 8.0, 12.0, 16.0]),
    "inplace_relu": (_inplace_relu_roots, "g4", [4.0, 0.0, 12.0, 0.0]),
    "root_reachable_from_root": (_root_reachable_from_root, "g4", [8.0, 0.0, 24.0, 0.0]),
}
_PATHS = {"compiled": {}, "create_graph": {"create_graph": True}}


def _run_multi_root(lib, case, kw, hook=False):
    fn, gname, _ = _MULTI_ROOT[case]
    x = lib.tensor(X0, requires_grad=True)
    if hook:  # a leaf hook: the graph runs rule by rule instead of as one executable
        x.register_hook(lambda g: None)
    g = lib.tensor([1.0, 2.0]) if gname == "g2" else lib.tensor([1.0, 2.0, 3.0, 4.0])
    fn(lib, x, g, **kw)
    return _np(x.grad)


@pytest.mark.parametrize("path", ["compiled", "per_node", "create_graph"])
@pytest.mark.parametrize("case", list(_MULTI_ROOT))
def test_backward_from_several_roots_of_one_op(case, path) -> None:
    kw = _PATHS.get(path, {})
    for _ in range(2):  # the whole-graph executable: first sighting, then the cached one
        got = _run_multi_root(flow, case, kw, hook=path == "per_node")
        np.testing.assert_array_equal(got, _MULTI_ROOT[case][2])


@pytest.mark.parametrize("case", list(_MULTI_ROOT))
def test_backward_from_several_roots_matches_torch(case) -> None:
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(_run_multi_root(flow, case, {}),
                                  _run_multi_root(torch, case, {}))


def test_autograd_grad_from_several_outputs_of_one_op() -> None:
    x = flow.tensor(X0, requires_grad=True)
    a, b = (x * 2).split(2)
    g = flow.tensor([1.0, 2.0])
    (gx,) = flow.autograd.grad([a, b], [x], [g, g * 3])
    np.testing.assert_array_equal(gx.numpy(), [2.0, 4.0, 6.0, 12.0])


# -- 2. integer ** negative integer ------------------------------------------------------------

_INT_DTYPES = ["int64", "int32", "uint8", "bool"]


@pytest.mark.parametrize("dtype", _INT_DTYPES)
def test_integer_tensor_to_a_negative_integer_power_raises(dtype) -> None:
    x = flow.tensor([1, 2, 3], dtype=getattr(flow, dtype))
    for call in (lambda: x ** -1, lambda: flow.pow(x, -2), lambda: x.pow(-1),
                 lambda: x.clone().pow_(-1)):
        with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
            call()
    y = x.clone()
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        y **= -1
    assert (x ** -1.0).dtype is flow.float32  # a float exponent is a float result
    assert (x ** 0).tolist() == [1, 1, 1]


_BASE = [-2, -1, 0, 1, 2, 3, -1]
_EXP = [-1, -3, -2, -5, -2, 2, -2]
_POWERS = [0, -1, 0, 1, 0, 9, 1]  # 1 / x ** n truncated; ±1 for base ±1 (parity); 0 for 0


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8"])
def test_integer_tensor_to_negative_tensor_powers(dtype) -> None:
    d = getattr(flow, dtype)
    assert (flow.tensor(_BASE, dtype=d) ** flow.tensor(_EXP, dtype=d)).tolist() == _POWERS
    assert (flow.tensor([2, 3], dtype=d) ** flow.tensor(-1, dtype=d)).tolist() == [0, 0]
    assert (2 ** flow.tensor([-2, 3], dtype=d)).tolist() == [0, 8]
    assert ((-1) ** flow.tensor([-2, -3, 3], dtype=d)).tolist() == [1, -1, -1]


def test_integer_powers_match_torch() -> None:
    torch = pytest.importorskip("torch")
    for dtype in ["int64", "int32", "int8"]:
        f, t = getattr(flow, dtype), getattr(torch, dtype)
        got = flow.tensor(_BASE, dtype=f) ** flow.tensor(_EXP, dtype=f)
        want = torch.tensor(_BASE, dtype=t) ** torch.tensor(_EXP, dtype=t)
        assert got.tolist() == want.tolist()
        assert (2 ** flow.tensor(_EXP, dtype=f)).tolist() == \
            (2 ** torch.tensor(_EXP, dtype=t)).tolist()
    for dtype in _INT_DTYPES:
        with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
            torch.tensor([1, 2], dtype=getattr(torch, dtype)) ** -1
        with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
            flow.tensor([1, 2], dtype=getattr(flow, dtype)) ** -1


# -- 3. alpha takes no part in type promotion --------------------------------------------------

def _alpha_cases(lib):
    b = lib.tensor
    return {
        "bool_bool_2": lambda: lib.add(b([False, True]), b([True, False]), alpha=2),
        "bool_bool_0": lambda: lib.add(b([False, True]), b([True, True]), alpha=0),
        "bool_bool_true": lambda: lib.add(b([False, True]), b([True, False]), alpha=True),
        "bool_scalar_true": lambda: lib.add(b([False, True]), True, alpha=2),
        "bool_scalar_int": lambda: lib.add(b([False, True]), 1, alpha=2),
        "bool_int8": lambda: lib.add(b([True]), b([1], dtype=lib.int8), alpha=2),
        "int_float_alpha_float": lambda: lib.add(b([1.0]), b([1]), alpha=2.5),
        "inplace_bool": lambda: b([False, True]).add_(b([True, False]), alpha=2),
        "int_sub": lambda: lib.sub(b([5, 6]), b([1, 2]), alpha=2),
    }


_ALPHA_WANT = {
    "bool_bool_2": ([True, True], "bool"), "bool_bool_0": ([False, True], "bool"),
    "bool_bool_true": ([True, True], "bool"), "bool_scalar_true": ([True, True], "bool"),
    "bool_scalar_int": ([2, 3], "int64"), "bool_int8": ([3], "int8"),
    "int_float_alpha_float": ([3.5], "float32"), "inplace_bool": ([True, True], "bool"),
    "int_sub": ([3, 2], "int64"),
}


def _alpha_errors(lib):
    b = lib.tensor
    return {
        "Boolean alpha": [lambda: lib.add(b([1]), b([1]), alpha=True),
                          lambda: lib.add(b([1.0]), 1.0, alpha=True)],
        "alpha must not be a floating point": [
            lambda: lib.add(b([1]), b([1]), alpha=2.5),
            lambda: lib.add(b([True]), b([True]), alpha=1.0),
            lambda: lib.sub(b([1]), 2, alpha=2.5),
            lambda: b([1]).add_(2, alpha=2.5)],
        "Subtraction, the `-` operator, with a bool tensor": [
            lambda: lib.sub(b([1, 2]), b([True, False]), alpha=2),
            lambda: lib.sub(b([1, 2]), True, alpha=2)],
    }


@pytest.mark.parametrize("case", list(_ALPHA_WANT))
def test_alpha_takes_no_part_in_promotion(case) -> None:
    got = _alpha_cases(flow)[case]()
    values, dtype = _ALPHA_WANT[case]
    assert got.tolist() == values and got.dtype is getattr(flow, dtype)


def test_alpha_errors() -> None:
    for msg, calls in _alpha_errors(flow).items():
        for call in calls:
            with pytest.raises(RuntimeError, match=msg):
                call()


def test_alpha_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = _alpha_cases(flow), _alpha_cases(torch)
    for case in ours:
        got, want = ours[case](), theirs[case]()
        assert got.tolist() == want.tolist(), case
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], case
    for msg, calls in _alpha_errors(torch).items():
        for call in calls:
            with pytest.raises(RuntimeError, match=msg):
                call()


# -- 4. checked .grad assignment ---------------------------------------------------------------

def _bad_grads(lib, x):
    return [(lib.zeros(3), RuntimeError, "size"), (lib.zeros(1), RuntimeError, "size"),
            (lib.zeros(2, dtype=lib.float64), RuntimeError, "dtype"),
            (lib.zeros(2, dtype=lib.int64), RuntimeError, "dtype"),
            (np.zeros(2, np.float32), TypeError, "Tensor or None"),
            (x, RuntimeError, "its own grad")]


def _assign(x, g):
    x.grad = g


@pytest.mark.parametrize("param", [False, True])
def test_grad_assignment_is_checked(param) -> None:
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    if param:
        x = flow.nn.Parameter(x)
    for g, exc, msg in _bad_grads(flow, x):
        with pytest.raises(exc, match=msg):
            _assign(x, g)
        assert x.grad is None  # a refused assignment changes nothing
    x.grad = flow.ones(2)
    (x * 3).sum().backward()  # accumulates into the assigned gradient
    assert x.grad.tolist() == [4.0, 4.0]
    x.grad = None
    assert x.grad is None


def test_grad_assignment_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    fx = flow.tensor([1.0, 2.0], requires_grad=True)
    for (tg, texc, _), (fg, fexc, msg) in zip(_bad_grads(torch, tx), _bad_grads(flow, fx)):
        assert texc is fexc
        with pytest.raises(texc):
            _assign(tx, tg)
        with pytest.raises(fexc, match=msg):
            _assign(fx, fg)


def test_optimizer_and_module_grads_still_flow() -> None:
    lin = flow.nn.Linear(3, 2)
    opt = flow.optim.SGD(lin.parameters(), lr=0.1)
    lin(flow.ones(4, 3)).sum().backward()
    assert lin.weight.grad.shape == lin.weight.shape
    opt.step()
    opt.zero_grad()
    assert lin.weight.grad is None
    lin(flow.ones(4, 3)).sum().backward()
    lin.double()  # parameter and its grad change dtype together
    assert lin.weight.grad.dtype is flow.float64


# -- 5. clamp with min > max --------------------------------------------------------------------

def test_clamp_min_above_max_is_all_max() -> None:
    x = flow.tensor([1.0, 5.0, 10.0], requires_grad=True)
    y = flow.clamp(x, min=6, max=2)
    assert y.tolist() == [2.0, 2.0, 2.0]
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]  # (x >= min) & (x <= max) never holds
    assert flow.clamp(flow.tensor([1, 5, 10]), min=6, max=2).tolist() == [2, 2, 2]
    assert flow.tensor([1.0, 5.0]).clamp_(6, 2).tolist() == [2.0, 2.0]
    assert flow.tensor([1.0, 5.0]).clip(6.5, 2.5).tolist() == [2.5, 2.5]


def test_clamp_min_above_max_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    for lib_vals in ([1.0, 5.0, 10.0], [1, 5, 10], [-3.0, 0.0, 3.0]):
        for lo, hi in ((6, 2), (0.5, -0.5), (2, 2)):
            fx = flow.tensor(lib_vals)
            tx = torch.tensor(lib_vals)
            got, want = flow.clamp(fx, min=lo, max=hi), torch.clamp(tx, min=lo, max=hi)
            assert got.tolist() == want.tolist()
            assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    fx = flow.tensor([1.0, 6.0, 10.0], requires_grad=True)
    tx = torch.tensor([1.0, 6.0, 10.0], requires_grad=True)
    for lo, hi in ((6, 2), (6, 6)):
        fx.grad, tx.grad = None, None
        flow.clamp(fx, min=lo, max=hi).sum().backward()
        torch.clamp(tx, min=lo, max=hi).sum().backward()
        assert fx.grad.tolist() == tx.grad.tolist()


# -- 6. zero_ / fill_ keep the graph ---------------------------------------------------------

def _overwrite(lib, how):
    """x.grad after overwriting y = x * 3 in place and backpropagating (y * x).sum()."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    if how == "zero_":
        y.zero_()
    elif how == "fill_":
        y.fill_(2.0)
    elif how == "fill_tensor":
        y.fill_(lib.tensor(2.0))
    else:
        y.copy_(lib.tensor([4.0, 5.0]))
    assert y.requires_grad and y.grad_fn is not None and not y.is_leaf
    (y * x).sum().backward()
    return x.grad.tolist()


_OVERWRITE_WANT = {"zero_": [0.0, 0.0], "fill_": [2.0, 2.0], "fill_tensor": [2.0, 2.0],
                   "copy_": [4.0, 5.0]}  # y's values; the old y sends x no gradient


@pytest.mark.parametrize("how", list(_OVERWRITE_WANT))
def test_overwriting_in_place_keeps_the_graph(how) -> None:
    assert _overwrite(flow, how) == _OVERWRITE_WANT[how]


@pytest.mark.parametrize("how", list(_OVERWRITE_WANT))
def test_overwriting_in_place_matches_torch(how) -> None:
    torch = pytest.importorskip("torch")
    assert _overwrite(flow, how) == _overwrite(torch, how)


def _fill_from_grad_tensors(lib):
    v = lib.tensor(2.0, requires_grad=True)
    w = lib.tensor([5.0, 6.0], requires_grad=True)
    y, z = lib.ones(3), lib.zeros(2)
    y.fill_(v)
    z.copy_(w)
    assert y.requires_grad and z.requires_grad
    (y.sum() + (z * 2).sum()).backward()
    return v.grad.tolist(), w.grad.tolist()


def test_fill_and_copy_from_a_tensor_that_requires_grad() -> None:
    assert _fill_from_grad_tensors(flow) == (3.0, [2.0, 2.0])


def test_fill_and_copy_from_a_tensor_that_requires_grad_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    assert _fill_from_grad_tensors(flow) == _fill_from_grad_tensors(torch)


def test_overwriting_leaves_and_no_grad() -> None:
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.zero_()
    with flow.no_grad():  # as optimizers do: no tape, the leaf stays a leaf
        x.zero_()
        y = (x * 3).requires_grad_(False)
        y.fill_(1.0)
    assert x.is_leaf and x.requires_grad and x.tolist() == [0.0, 0.0]
    z = flow.ones(2)
    z.zero_()
    assert not z.requires_grad and z.grad_fn is None
