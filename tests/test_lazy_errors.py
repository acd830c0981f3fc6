"""Lazy eager (jflow/lazy_mode), part 3: errors. Value checks of functors (integer division
by zero, index and class-target bounds) do not flush: they run with the pending ops and
raise the same error as eagerly, with a note naming the user's line that recorded them. A
kernel that fails at run time raises its own error with the failing op and that line; the
values computed before it keep their values, the later ones raise."""

from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest

import jflow as flow
from jflow.kernels import register_kernel
from jflow.kernels.registry import KernelNotFoundError
from jflow.lazy_mode import segment as seg
from jflow.ops import Attr, Input, define_op
from jflow.ops.infer import desc
from jflow.sharding.sbp import B, S, Signature

F = flow.nn.functional
HERE = __file__


def _line() -> int:
    """The caller's line number (where the op under test is recorded)."""
    return inspect.currentframe().f_back.f_lineno


def _recorded_at(err: BaseException, *lines: int) -> None:
    notes = getattr(err, "__notes__", [])
    assert any(f"{HERE}:{line})" in n for n in notes for line in lines), notes


IDX = flow.tensor(np.array([0, 2, 5]))


@pytest.mark.parametrize("case", ["int_div", "index_select", "take", "cross_entropy",
                                  "embedding", "getitem"])
def test_value_checks_do_not_flush_and_raise_at_run_with_the_line(case):
    """Each bad call raises eagerly; in lazy mode it records without a flush and raises
    the same error when the pending ops run, naming the recording line."""
    x = flow.tensor(np.arange(12).reshape(3, 4))
    logits = flow.tensor(np.zeros((3, 4), np.float32))
    emb = flow.nn.Embedding(5, 2)

    def bad(idx):
        if case == "int_div":
            return x // (idx[:1] - idx[:1])
        if case == "index_select":
            return flow.index_select(x, 1, idx)
        if case == "take":
            return flow.take(x, idx * 3)
        if case == "cross_entropy":
            return F.cross_entropy(logits, idx)
        if case == "embedding":
            return emb(idx)
        return x[:, idx]

    with pytest.raises(Exception) as eager:
        bad(IDX)
    with flow.lazy():
        before = seg.stats()["flushes"]
        pending = IDX * 1  # (a pending index: its values are not known at the call)
        good = x + 1
        out = bad(pending)
        after = x * 2
        assert seg.stats()["flushes"] == before  # nothing ran
        with pytest.raises(type(eager.value)) as lazy:
            out.detach().numpy()
    assert str(lazy.value) == str(eager.value)
    first = bad.__code__.co_firstlineno  # (the line in bad() that called the op)
    _recorded_at(lazy.value, *range(first, first + 14))
    np.testing.assert_array_equal(good.numpy(), np.arange(12).reshape(3, 4) + 1)  # before: kept
    with pytest.raises(RuntimeError, match="never computed"):
        after.numpy()  # recorded after the failing check: never ran (as eagerly)


def test_good_values_pass_the_deferred_checks():
    x = flow.tensor(np.arange(12).reshape(3, 4))
    idx = flow.tensor(np.array([0, 3, 1]))
    ref = (x // (idx[:1] + 1), flow.index_select(x, 1, idx), x[:, idx])
    for _ in range(2):  # node by node, then compiled
        with flow.lazy():
            p = idx * 1
            got = (x // (p[:1] + 1), flow.index_select(x, 1, p), x[:, p])
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_checks_of_new_host_data_run_at_the_call():
    """A value check whose input is a new tensor's host data (a batch from a data loader), or
    a reshape of one, runs at the call on the host copy, as eagerly: a bad value raises
    there, a good one records no check into the run (nothing for the run to wait for). So
    does a reshape (pending) of a tensor computed before: its base's values are read."""
    x = flow.tensor(np.arange(12).reshape(3, 4))
    logits = flow.tensor(np.zeros((3, 4), np.float32))
    made_bad, made_good = x[:1, :3] + 2, x[:1, :3] % 4  # (concrete: computed eagerly)
    with flow.lazy():
        before = seg.stats()["flushes"]
        with pytest.raises(IndexError, match="out of bounds"):
            F.cross_entropy(logits, made_bad.reshape(-1))
        made_loss = F.cross_entropy(logits, made_good.reshape(-1))
        assert not seg.active().checks
        bad = flow.tensor(np.array([[0, 4, 1]]))
        assert seg.active().nodes  # (pending: its host copy goes with the next run)
        with pytest.raises(IndexError, match="out of bounds"):
            F.cross_entropy(logits, bad.reshape(-1))
        with pytest.raises(ZeroDivisionError):
            x // flow.tensor(np.array([1, 0, 2, 3]))
        good = flow.tensor(np.array([[3, 0, 2]]))
        loss = F.cross_entropy(logits, good.reshape(-1))
        picked = flow.index_select(x, 1, good.squeeze(0))
        assert not seg.active().checks
        assert seg.stats()["flushes"] == before
        window = flow.tensor(np.array([[0, 9]]))  # (a slice keeps only some elements: a
        assert flow.index_select(x, 1, window[0, :1]) is not None  # deferred check)
        assert seg.active().checks
    np.testing.assert_allclose(loss.item(), np.log(4.0), rtol=1e-6)
    np.testing.assert_allclose(made_loss.item(), np.log(4.0), rtol=1e-6)
    np.testing.assert_array_equal(picked.numpy(), np.arange(12).reshape(3, 4)[:, [3, 0, 2]])


def test_host_made_ranges_are_pending_host_inputs():
    """``flow.arange`` (position ids, every step) and the host-computed factories (windows,
    logspace) in lazy mode are pending inputs of the next run, as ``flow.tensor``'s data: no
    transfer of their own, and an embedding's bounds check reads their host values at the
    call (a bad index raises there; a good one records no check and flushes nothing)."""
    from jflow.lazy_mode import checks
    emb = flow.nn.Embedding(16, 3)
    with flow.lazy():
        before = seg.stats()["flushes"]
        n = len(seg.active().nodes) if seg.active() is not None else 0
        pos = flow.arange(12)
        window = flow.hann_window(5)
        assert len(seg.active().nodes) == n + 2  # (pending: nothing placed yet)
        np.testing.assert_array_equal(checks.host_value(pos), np.arange(12))
        with pytest.raises(IndexError, match="out of range|out of bounds"):
            emb(flow.arange(17))
        out = emb(pos)
        assert not seg.active().checks
        assert seg.stats()["flushes"] == before
    np.testing.assert_allclose(out.detach().numpy(), emb.weight.detach().numpy()[:12])
    np.testing.assert_allclose(window.numpy(), 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(5) / 5),
                               rtol=1e-6, atol=1e-7)


_ids = itertools.count()


def _failing_op():
    op = define_op(f"test_lazy_fails_{next(_ids)}", inputs=["x"],
                   infer=lambda x, **_: desc(x.shape, x.dtype))

    def kernel(x):
        if (x < 0).any():
            raise ValueError("negative input")
        return np.sqrt(x)
    register_kernel(op.name, kernel, backend="python", name="numpy_sqrt")
    return op


@pytest.mark.parametrize("sighting", [1, 2])
def test_a_failing_kernel_names_its_op_and_line(sighting):
    op = _failing_op()
    x = flow.tensor(np.array([1.0, 4.0], np.float32))
    with pytest.raises(RuntimeError, match="raised ValueError: negative input") as eager:
        op(x - 5.0)
    for k in range(sighting):
        with flow.lazy():
            a = x * 2.0
            line = _line() + 1
            b = op(x - (5.0 if k == sighting - 1 else 0.0))
            c = b + 1.0
            if k < sighting - 1:  # (a good run first: the second sighting is compiled)
                np.testing.assert_allclose(c.numpy(), [2.0, 3.0])
                continue
            with pytest.raises(RuntimeError) as lazy:
                c.numpy()
    assert str(lazy.value) == str(eager.value)
    _recorded_at(lazy.value, line)
    assert any(f"'{op.name}'" in n for n in lazy.value.__notes__)
    np.testing.assert_allclose(a.numpy(), [2.0, 8.0])  # recorded before the failure: kept
    with pytest.raises(RuntimeError, match="never computed"):
        b.numpy()


def test_call_sites_can_be_turned_off():
    x = flow.tensor(np.arange(4))
    old = flow.config.set_lazy_call_sites(False)
    try:
        with flow.lazy():
            y = x // (x * 0)
            with pytest.raises(ZeroDivisionError) as info:
                y.numpy()
        assert HERE not in " ".join(info.value.__notes__)
        assert "no recorded line" in info.value.__notes__[0]
    finally:
        flow.config.set_lazy_call_sites(old)
    with pytest.raises(TypeError, match="set_lazy_call_sites"):
        flow.config.set_lazy_call_sites(1)


@pytest.mark.parametrize("case", ["int_div", "nll_loss", "getitem", "embedding"])
def test_a_call_that_raises_after_deferring_its_check_leaves_no_check(case):
    """A functor defers the bound check of a pending index, then finds another error (a
    shape that does not broadcast) and raises at the call: its op was never recorded, so the
    bad index must not raise again when the pending ops run (eagerly the call raised once
    and nothing else)."""
    x = flow.tensor(np.arange(12).reshape(3, 4))
    logp = flow.tensor(np.zeros((3, 4), np.float32))
    emb = flow.nn.Embedding(5, 2, max_norm=1.0)

    def bad(idx):  # idx holds 0 (a zero divisor) and 7 (out of bounds everywhere)
        if case == "int_div":
            return x // idx[:2]                    # (3, 4) // (2,): no broadcast
        if case == "nll_loss":
            return F.nll_loss(logp, idx)           # 4 targets for 3 rows
        if case == "getitem":
            return x[idx, idx[:3]]                 # index shapes (4,) and (3,)
        return F.embedding(idx, emb.weight, max_norm=1.0, norm_type=float("nan"))

    expected = {"int_div": Exception, "nll_loss": ValueError, "getitem": IndexError,
                "embedding": Exception}[case]
    with flow.lazy():
        idx = flow.tensor(np.array([0, 7, 1, 2])) * 1  # (pending: its values unknown)
        with pytest.raises(expected) as info:
            bad(idx)
        assert not isinstance(info.value, ZeroDivisionError)
        assert "out of" not in str(info.value)  # (not the bounds check's error)
        assert not seg.active().checks   # the failed call's check is gone
        after = x + 1
    np.testing.assert_array_equal(after.numpy(), np.arange(12).reshape(3, 4) + 1)


def test_no_kernel_for_the_dtypes_raises_at_the_call():
    """An op whose only kernel takes float32: a float64 call finds no kernel. Eagerly that
    raises at the call; in lazy mode too (its kernel is selected when the call records,
    once per shape), without running what is pending."""
    op = define_op(f"test_lazy_f32_only_{next(_ids)}", inputs=["x"],
                   infer=lambda x, **_: desc(x.shape, x.dtype))
    register_kernel(op.name, lambda x: x * 2, backend="python", dtypes={"x": ["float32"]})
    x32 = flow.tensor(np.ones(3, np.float32))
    x64 = flow.tensor(np.ones(3, np.float64))
    with pytest.raises(KernelNotFoundError) as eager:
        op(x64)
    with flow.lazy():
        before = seg.stats()["flushes"]
        pending = x64 + 1.0
        with pytest.raises(KernelNotFoundError) as lazy:
            op(pending)
        ok = op(x32)
        assert seg.stats()["flushes"] == before
    assert str(lazy.value) == str(eager.value)
    np.testing.assert_allclose(ok.numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(pending.numpy(), [2.0, 2.0, 2.0])


def test_a_user_kernel_rejecting_an_attr_when_traced_raises_at_the_call():
    """A kernel written outside jflow that raises when traced (an attr value it rejects)
    raises at the call in lazy mode too — the call is lowered when it records — without
    running what is pending (before: at the read that ran the segment)."""
    op = define_op(f"test_lazy_scale_{next(_ids)}", inputs=["x"],
                   attrs=[Attr("k", "int64", 1)], infer=lambda x, **_: desc(x.shape, x.dtype))

    def kernel(x, k):
        if k < 0:
            raise ValueError("k must be >= 0")
        return x * k
    register_kernel(op.name, kernel)
    x = flow.tensor(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="k must be >= 0"):
        op(x, k=-1)
    with flow.lazy():
        before = seg.stats()["flushes"]
        pending = x + 1.0
        with pytest.raises(ValueError, match="k must be >= 0"):
            op(pending, k=-2)
        ok = op(pending, k=3)
        assert seg.stats()["flushes"] == before
    np.testing.assert_allclose(ok.numpy(), [6.0, 6.0, 6.0])


def test_a_global_op_whose_sbp_signature_cannot_trace_raises_at_the_call():
    """A user op declaring (S(1)) -> (B) for a sum over the split axis: its sharded program
    does not trace (the result is not replicated). Eagerly that raises at the call; in lazy
    mode too (a sharded executable is traced when first recorded), not at the read."""
    def sbp(in_shapes, n_out=1, **_):
        return [Signature((S(1),), (B,))]
    op = define_op(f"test_lazy_badsbp_{next(_ids)}", inputs=["x"],
                   infer=lambda x: desc(x.shape[:1], x.dtype), sbp=sbp)
    register_kernel(op.name, lambda x: x.sum(axis=1))
    plc = flow.placement("cpu", ranks=list(range(4)))
    gx = flow.tensor(np.ones((4, 8), np.float32)).to_global(plc, S(1))
    with pytest.raises(ValueError, match="out_specs") as eager:
        op(gx)
    with flow.lazy():
        before = seg.stats()["flushes"]
        pending = gx * 2.0
        with pytest.raises(ValueError, match="out_specs") as lazy:
            op(pending)
        assert seg.stats()["flushes"] == before
    assert str(lazy.value).splitlines()[0] == str(eager.value).splitlines()[0]
    np.testing.assert_allclose(pending.numpy(), np.full((4, 8), 2.0))


def _same_error_at_the_call(op, exc):
    """``op`` raises ``exc`` at the call eagerly, and in lazy mode on a pending input at the
    call too, with the same message, leaving what is pending intact; the error."""
    x = flow.tensor(np.ones(3, np.float32))
    with pytest.raises(exc) as eager:
        op(x)
    with flow.lazy():
        pending = x + 1.0
        with pytest.raises(exc) as lazy:
            op(pending)
        assert type(pending).__name__ == "Tensor"
    assert str(lazy.value) == str(eager.value)
    np.testing.assert_allclose(pending.numpy(), [2.0, 2.0, 2.0])
    return lazy.value


def test_an_op_without_any_kernel_raises_at_the_call():
    """An op defined with no kernel yet: eagerly the call raises KernelNotFoundError; in lazy
    mode too, at the call (before: at the read)."""
    _same_error_at_the_call(define_op(f"test_lazy_nokernel_{next(_ids)}", inputs=["x"],
                                      infer=lambda x, **_: desc(x.shape, x.dtype)),
                            KernelNotFoundError)


def test_errors_name_a_pending_tensor_as_a_tensor():
    """An error that names the type of what was passed says ``Tensor`` for a pending tensor
    too (its class is lazy mode's pending twin; before, messages said ``LazyTensor``)."""
    op = define_op(f"test_lazy_variadic_{next(_ids)}", inputs=[Input("xs", variadic=True)],
                   infer=lambda xs: desc(xs[0].shape, xs[0].dtype))
    assert str(_same_error_at_the_call(op, TypeError)).endswith("got Tensor")
