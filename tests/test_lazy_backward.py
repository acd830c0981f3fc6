"""Lazy ``loss.backward()`` by template (jflow/lazy_mode/backward.py): a step whose graph
matches the last one's skips re-deriving the plan, and anything that differs takes the
general path. Every case is compared with eager mode (float tolerance: a fused run may
round differently) and with the general path in lazy mode (the same plan: equal bits)."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow
from jflow.lazy_mode import backward as lb

RNG = np.random.default_rng(7)
X = RNG.standard_normal(8).astype(np.float32)
C = RNG.standard_normal(8).astype(np.float32)


def _chain(x, c):
    y = (x * c + c).tanh()
    y = y.sigmoid() * 2.0 - c
    return (y.sin() * y).sum()


def _run(fn, steps: int, lazy: bool, templates: bool = True):
    """``steps`` calls of ``fn(step)`` (which builds a graph and calls backward), each in its
    own lazy block when ``lazy``; the gradients each step left, as NumPy."""
    was = lb.ENABLED[0]
    lb.ENABLED[0] = templates
    out = []
    try:
        for i in range(steps):
            if lazy:
                with flow.lazy():
                    grads = fn(i)
            else:
                grads = fn(i)
            out.append([None if g is None else g.numpy() for g in grads])
    finally:
        lb.ENABLED[0] = was
    return out


def _compare(fn_factory, steps: int = 4, matched: int | None = None):
    """Eager, lazy general path and lazy by template: the same gradients (the template path
    bit for bit the general path's); ``matched``: how many backwards the templates ran."""
    eager = _run(fn_factory(), steps, lazy=False)
    general = _run(fn_factory(), steps, lazy=True, templates=False)
    before = lb.stats()
    templated = _run(fn_factory(), steps, lazy=True)
    after = lb.stats()
    for e, g, t in zip(eager, general, templated):
        for a, b, c in zip(e, g, t):
            if a is None:
                assert b is None and c is None
                continue
            np.testing.assert_allclose(c, a, rtol=2e-6, atol=1e-6)
            np.testing.assert_array_equal(c, b)
    if matched is not None:
        assert after["matched"] - before["matched"] == matched
    return {k: after[k] - before[k] for k in after}


def test_a_repeated_step_runs_by_template_and_equals_eager():
    def factory():
        x = flow.tensor(X, requires_grad=True)
        c = flow.tensor(C)

        def step(i):
            x.grad = None
            _chain(x, c).backward()
            return [x.grad]
        return step
    assert _compare(factory, matched=4) == {"matched": 4, "built": 1, "declined": 0}


def test_gradients_accumulate_across_backwards():
    def factory():
        x = flow.tensor(X, requires_grad=True)
        c = flow.tensor(C)

        def step(i):  # (no zeroing: .grad accumulates, as in PyTorch)
            _chain(x, c).backward()
            return [x.grad]
        return step
    _compare(factory, matched=4)


def test_another_structure_each_step_gets_its_own_template():
    def factory():
        x = flow.tensor(X, requires_grad=True)
        c = flow.tensor(C)

        def step(i):
            x.grad = None
            y = x * c
            y = y.exp() if i % 2 else (y + c).tanh()  # (both roots: reduce_sum on [8])
            y.sum().backward()
            return [x.grad]
        return step
    assert _compare(factory, steps=6, matched=6)["built"] == 2


def test_a_hook_added_later_runs():
    seen = []

    def factory():
        x = flow.tensor(X, requires_grad=True)
        c = flow.tensor(C)

        def step(i):
            x.grad = None
            y = (x * c).tanh()
            if i >= 2:  # (the template exists by now: the hooked graph must not use it)
                y.register_hook(lambda g: seen.append(1) or g * 3.0)
            (y * y).sum().backward()
            return [x.grad]
        return step
    assert _compare(factory, matched=2)["declined"] == 2
    assert len(seen) == 6  # (twice in each of the three runs)


def test_a_leaf_hook_and_retain_grad_added_later():
    def factory():
        x = flow.tensor(X, requires_grad=True)
        w = flow.tensor(C, requires_grad=True)

        def step(i):
            x.grad = w.grad = None
            y = (x * w).tanh()
            if i == 2:
                w.register_hook(lambda g: g * 0.5)
            if i == 3:
                y.retain_grad()
            (y * y).sum().backward()
            return [x.grad, w.grad, y.grad]
        return step
    assert _compare(factory, matched=2)["declined"] == 2  # (the hooked and retaining steps)


def test_retain_graph_backpropagates_twice_and_a_freed_graph_raises():
    x = flow.tensor(X, requires_grad=True)
    c = flow.tensor(C)
    for _ in range(2):  # (the second time by template)
        with flow.lazy():
            x.grad = None
            loss = _chain(x, c)
            loss.backward(retain_graph=True)
            loss.backward()
            g2 = x.grad.numpy()
            with pytest.raises(RuntimeError, match="second time"):
                loss.backward()
    x.grad = None
    _chain(x, c).backward()
    np.testing.assert_allclose(g2, 2 * x.grad.numpy(), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("what", ["input", "output"])
def test_a_saved_tensor_modified_in_place_raises_after_a_template_exists(what):
    x = flow.tensor(X, requires_grad=True)
    for i in range(3):
        with flow.lazy():
            a = x * 1.0
            s = a.sigmoid()  # (sigmoid saves its output; mul saves its inputs)
            loss = (s * a).sum()
            if i == 2:
                (a if what == "input" else s).mul_(2.0)
                with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                    loss.backward()
            else:
                loss.backward()


@pytest.mark.parametrize("two_first", [True, False], ids=["two then one", "one then two"])
def test_leaves_unlike_the_templates_take_the_general_path(two_first: bool):
    # the same structure, but one leaf where the template had two, or two where it had one:
    # a wrong match would give eager-unlike gradients
    def factory():
        a = flow.tensor(X, requires_grad=True)
        b = flow.tensor(C, requires_grad=True)
        c = flow.tensor(C)

        def step(i):
            a.grad = b.grad = None
            second = (b if i < 2 else a) if two_first else (a if i < 2 else b)
            ((a * c).tanh() + (second * c).tanh()).sum().backward()
            return [a.grad, b.grad]
        return step
    _compare(factory, matched=4)


@pytest.mark.parametrize("two_first", [True, False], ids=["two then one", "one then two"])
def test_nodes_unlike_the_templates_take_the_general_path(two_first: bool):
    # one node where the template had two equal ones, or two where it had one
    def factory():
        x = flow.tensor(X, requires_grad=True)
        c = flow.tensor(C)
        d = flow.tensor(X)

        def step(i):
            x.grad = None
            z = x * c
            w = (z if i >= 2 else x * c) if two_first else (z if i < 2 else x * d)
            (z.tanh() + w.tanh()).sum().backward()
            return [x.grad]
        return step
    _compare(factory, matched=4)


def test_complex_leaves_take_the_general_path():
    def factory():
        z = flow.tensor((X + 1j * C).astype(np.complex64)).requires_grad_()

        def step(i):
            z.grad = None
            (z * z).abs().sum().backward()
            return [z.grad]
        return step
    assert _compare(factory, matched=0)["declined"] == 4


def test_a_training_loop_by_template_equals_eager():
    """An MLP with SGD + momentum: the backward by template, the step after it."""
    data = RNG.standard_normal((4, 8)).astype(np.float32)
    target = RNG.standard_normal((4, 2)).astype(np.float32)

    def factory():
        flow.manual_seed(0)
        model = flow.nn.Sequential(flow.nn.Linear(8, 8), flow.nn.ReLU(), flow.nn.Linear(8, 2))
        opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(i):
            opt.zero_grad()
            loss = flow.nn.functional.mse_loss(model(flow.tensor(data)), flow.tensor(target))
            loss.backward()
            opt.step()
            return [p.detach() for p in model.parameters()]
        return step
    _compare(factory, matched=4)


def test_templates_are_bounded():
    x = flow.tensor(X, requires_grad=True)
    with flow.lazy():
        for k in range(lb.PER_ROOT + 3):
            y = x
            for _ in range(k + 1):  # (a new structure with the same root each time)
                y = y * 1.5
            y.sum().backward()
    assert all(len(v) <= lb.PER_ROOT for v in lb.TEMPLATES.values())
    assert len(lb.TEMPLATES) <= lb.ROOTS


def test_another_attribute_value_is_another_graph():
    def factory():
        x = flow.tensor(X, requires_grad=True)
        c = flow.tensor(C)

        def step(i):  # (same ops and shapes; the shift differs from step 2 on)
            x.grad = None
            ((x * c).roll(1 if i < 2 else 3, 0) * c).sum().backward()
            return [x.grad]
        return step
    _compare(factory, matched=4)
