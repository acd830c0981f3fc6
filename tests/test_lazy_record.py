"""Lazy mode's fused recorder (jflow/lazy_mode/record.py): a one-output op with one or two
inputs records its call and its tape node in one function. The node must be the one eager
mode records (op, needs, edges, avals, what is saved and at which version), every input it
cannot handle must take the general path (Segment.add + the tape), and the gradients must
equal eager mode's."""

from __future__ import annotations

import threading

import jax.numpy as jnp
import numpy as np
import pytest

import jflow as flow
from jflow.autograd import register_backward
from jflow.autograd.graph import LEAF
from jflow.kernels import register_kernel
from jflow.lazy_mode import backward as lazy_backward
from jflow.lazy_mode import record as _record
from jflow.lazy_mode import segment as _segment
from jflow.lazy_values import LazyRef
from jflow.ops import define_op
from jflow.ops.infer import desc
from jflow.ops.registry import get

RNG = np.random.default_rng(11)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32) + 2.0


def _walk(root):
    """The graph under ``root`` as comparable facts, in a fixed order: per node its op,
    needs, avals, saved entries (kind, version, output number) and edges (node index or
    leaf); and the saved values, apart (a fused run may round in the last bit)."""
    order, index, leaves, facts, values = [root], {id(root): 0}, {}, [], []
    k = 0
    while k < len(order):
        n = order[k]
        k += 1
        saved = []
        for v, ref, ver, nr in n.saved or ():
            kind = "free" if ref is None else ("input" if nr == LEAF else "output")
            values.append(np.asarray(v.get() if v.__class__ is LazyRef else v))
            saved.append((kind, ver, nr))
        edges = []
        for e in n.next_edges:
            if e is None:
                edges.append(None)
            elif e[1] == LEAF:
                edges.append(("leaf", leaves.setdefault(id(e[0]), len(leaves))))
            else:
                if id(e[0]) not in index:
                    index[id(e[0])] = len(order)
                    order.append(e[0])
                edges.append((index[id(e[0])], e[1]))
        facts.append((n.op.name, n.needs, [(a.shape, str(a.dtype)) for a in n.in_avals],
                      [(a.shape, str(a.dtype)) for a in n.out_avals], saved, edges, n.dyn))
    return facts, values


def _graph(fn, lazy: bool):
    x = flow.tensor(A, requires_grad=True)
    c = flow.tensor(B)
    if lazy:
        with flow.lazy():
            out = fn(x, c)
            for _ in range(2):  # (the second and third calls take the fused path)
                out = fn(x, c)
            facts = _walk(out.grad_fn)
            out.sum().backward()
    else:
        out = fn(x, c)
        facts = _walk(out.grad_fn)
        out.sum().backward()
    return (*facts, x.grad.numpy())


CASES = {
    "mul, one input needs": lambda x, c: x * c,
    "mul, both need": lambda x, c: x * x.exp(),
    "mul, the other needs": lambda x, c: c * x.tanh(),
    "div (saves an input and the output)": lambda x, c: x.sigmoid() / c,
    "tanh (saves its output)": lambda x, c: (x + c).tanh(),
    "sin (saves its input)": lambda x, c: (x - c).sin(),
    "add and sub (save nothing)": lambda x, c: (x + c) - x,
    "a reduction": lambda x, c: (x * c).sum(dim=1),
    "a scalar operand": lambda x, c: (x * 2.0) / 3.0,
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_node_a_lazy_call_records_is_the_eager_one(name: str) -> None:
    before = _segment.stats()["recorded"]
    eager, eager_values, eager_grad = _graph(CASES[name], lazy=False)
    lazy, lazy_values, lazy_grad = _graph(CASES[name], lazy=True)
    assert _segment.stats()["recorded"] > before
    assert lazy == eager
    for a, b in zip(lazy_values, eager_values, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(lazy_grad, eager_grad, rtol=2e-6, atol=1e-6)


def _general_calls(fn):
    """How many calls ``fn`` sent to the general path."""
    calls = []
    real = _record._general
    for f in (_record.record_lazy1, _record.record_lazy2):
        f.__globals__["_general"] = lambda *a: calls.append(a[1]) or real(*a)
    try:
        fn()
    finally:
        for f in (_record.record_lazy1, _record.record_lazy2):
            f.__globals__["_general"] = real
    return len(calls)


def test_the_fused_path_is_taken_for_a_repeated_call() -> None:
    x, c = flow.tensor(A, requires_grad=True), flow.tensor(B)
    with flow.lazy():
        (x * c).tanh()  # (the first calls on these avals: the general path evaluates them)
        out = []
        assert _general_calls(lambda: out.append((x * c).tanh())) == 0
    z = out[0]
    assert z.grad_fn.op.name == "tanh" and z.grad_fn.next_edges[0][0].op.name == "mul"


def test_inputs_the_fused_path_cannot_take_go_the_general_way() -> None:
    x, c = flow.tensor(A, requires_grad=True), flow.tensor(B)
    with flow.lazy():
        (x * c).tanh()  # (warm: these avals are known)
        y = x * c
        assert _general_calls(lambda: x * c) == 0

        # a view
        assert _general_calls(lambda: x[0:3] * c) == 1
        # a value already computed (read in the block)
        y.sum().item()
        assert _general_calls(lambda: y * c) == 1
        # a value pending in another thread's segment
        other, recorded, done = [], threading.Event(), threading.Event()

        def record():
            with flow.lazy():
                other.append(flow.tensor(A) * 1.5)
                recorded.set()
                done.wait()
        t = threading.Thread(target=record)
        t.start()
        recorded.wait()
        try:
            assert _general_calls(lambda: other[0] * c) == 1
        finally:
            done.set()
            t.join()
        # avals not evaluated yet (the general path evaluates them)
        _segment._AVALS.clear()
        assert _general_calls(lambda: flow.tensor(A[:2]) * flow.tensor(B[:2])) == 1
    with flow.lazy():  # (the same graph and gradients as eager after all of it)
        z = (x[0:3] * c).tanh().sum()
        z.backward()
    np.testing.assert_allclose(x.grad.numpy(), (1 - np.tanh(A * B) ** 2) * B, rtol=1e-5,
                               atol=1e-6)


def test_no_node_without_grad_mode_or_a_differentiable_output() -> None:
    x, c = flow.tensor(A, requires_grad=True), flow.tensor(B)
    with flow.lazy():
        _ = x * c, x > c  # (warm: these avals are known)
        with flow.no_grad():
            y = x * c
        assert y.grad_fn is None and not y.requires_grad
        b = x > c  # (two inputs, a bool output: not differentiable)
        assert b.grad_fn is None and not b.requires_grad
        z = x * c
        assert z.requires_grad and z.grad_fn.op.name == "mul"
    np.testing.assert_array_equal(b.numpy(), A > B)
    np.testing.assert_allclose(y.numpy(), A * B, rtol=1e-6)


def test_a_rule_first_used_lazily_saves_what_it_declares() -> None:
    # a user op whose backward saves both inputs, called in lazy mode before any eager call:
    # its saver (graph._saver2) is made by the lazy path, per needs
    name = "test_lazy_record_xy"
    define_op(name, inputs=["x", "y"], infer=lambda x, y: desc(x.shape, x.dtype))
    register_kernel(name, lambda x, y: x * jnp.sin(y))

    @register_backward(name, save=["x", "y", "out"], save_for={"x": ["y"]})
    def _(ctx, dy):
        x, y, _ = ctx.saved_tensors
        return dy * y.sin(), dy * x * y.cos()

    op = get(name)
    for needs in ((True, False), (False, True), (True, True)):
        x = flow.tensor(A, requires_grad=needs[0])
        y = flow.tensor(B, requires_grad=needs[1])
        with flow.lazy():
            for _ in range(2):
                out = op.apply(x, y)
            # x is version-checked only when y's gradient (which reads it) is computed
            kinds = [(s[1] is not None, s[3]) for s in out.grad_fn.saved]
            assert kinds == [(needs[1], LEAF), (True, LEAF), (True, 0)]
            assert out.grad_fn.saved[2][1]() is out
            out.sum().backward()
        if needs[0]:
            np.testing.assert_allclose(x.grad.numpy(), np.sin(B), rtol=1e-5)
        if needs[1]:
            np.testing.assert_allclose(y.grad.numpy(), A * np.cos(B), rtol=1e-5)
    assert set(get(name).grad_rule._savers2) == {(True, False), (False, True), (True, True)}


def test_a_saved_input_modified_in_place_raises_at_the_backward() -> None:
    x, c = flow.tensor(A, requires_grad=True), flow.tensor(B)
    with flow.lazy():
        x * c
        y = x * c  # (fused: saves c at its version)
        c.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_a_full_segment_flushes_and_gradients_still_equal_eager() -> None:
    old = _segment.MAX_NODES
    _segment.MAX_NODES = 8
    try:
        def fn(x, c):
            y = x
            for _ in range(12):
                y = (y * c).tanh()
            return y
        lazy, _, lazy_grad = _graph(fn, lazy=True)
    finally:
        _segment.MAX_NODES = old
    eager, _, eager_grad = _graph(fn, lazy=False)
    assert lazy == eager
    np.testing.assert_allclose(lazy_grad, eager_grad, rtol=2e-6, atol=1e-6)


_UNARY = ("tanh", "sigmoid", "exp", "sin")
_BINARY = ("mul", "add", "sub", "truediv")


@pytest.mark.parametrize("seed", range(6))
def test_random_chains_recorded_lazily_match_pytorch(seed: int) -> None:
    # random chains of the ops the fused recorder takes (one/two inputs, tensor and scalar
    # operands, a reduction, float32 and float64, either input requiring grad), three steps
    # in lazy mode (the second and third record by the fused path and backward by template):
    # values and every gradient against PyTorch eager
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    dtype = (np.float32, np.float64)[seed % 2]
    shape = tuple(int(n) for n in rng.integers(1, 5, size=int(rng.integers(1, 3))))
    xs = rng.uniform(-1, 1, shape).astype(dtype)
    cs = rng.uniform(0.5, 1.5, shape).astype(dtype)
    grad_c = bool(seed % 3 == 0)
    steps = []
    for _ in range(8):
        kind = rng.choice(["unary", "binary", "scalar"])
        if kind == "unary":
            steps.append(("unary", str(rng.choice(_UNARY)), None))
        elif kind == "binary":
            steps.append(("binary", str(rng.choice(_BINARY)), bool(rng.integers(2))))
        else:
            steps.append(("scalar", str(rng.choice(_BINARY)), float(rng.uniform(0.5, 2.0))))

    def run(x, c):
        y = x
        for kind, name, arg in steps:
            if kind == "unary":
                y = getattr(y, name)()
            elif kind == "binary":
                a, b = (y, c) if arg else (c, y)
                y = getattr(a, f"__{name}__")(b)
                if name == "truediv":  # (keep values bounded)
                    y = y.tanh()
            else:
                y = getattr(y, f"__{name}__")(arg)
        return (y * y).sum()

    tx = torch.tensor(xs, requires_grad=True)
    tc = torch.tensor(cs, requires_grad=grad_c)
    tloss = run(tx, tc)
    tloss.backward()
    x = flow.tensor(xs, requires_grad=True)
    c = flow.tensor(cs, requires_grad=grad_c)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    matched = lazy_backward.stats()["matched"]
    for _ in range(3):
        x.grad = c.grad = None
        with flow.lazy():
            loss = run(x, c)
            loss.backward()
        np.testing.assert_allclose(loss.detach().numpy(), tloss.detach().numpy(), **tol)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), **tol)
        if grad_c:
            np.testing.assert_allclose(c.grad.numpy(), tc.grad.numpy(), **tol)
        assert loss.dtype == (flow.float32 if dtype == np.float32 else flow.float64)
    assert lazy_backward.stats()["matched"] - matched >= 2  # (steps 2 and 3 by template)
