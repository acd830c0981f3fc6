"""Views alias their base (jflow.views): writes through any view reach the base and every
other view; strides / contiguity as PyTorch reports them; autograd through writes into
views; the same under jax.jit, flow.jit and on global tensors. NumPy (whose basic views
alias too) is the reference here; tests/test_views_random.py compares with PyTorch."""

from __future__ import annotations

import copy
import pickle

import jax
import numpy as np
import pytest

import jflow as flow
import jflow.nn as nn

A = np.arange(24, dtype=np.float32).reshape(4, 6)


def pair():
    return flow.tensor(A.copy()), A.copy()


def test_writes_through_each_view_op_reach_the_base():
    cases = [
        (lambda t: t[1], lambda a: a[1]),
        (lambda t: t[:, 2], lambda a: a[:, 2]),
        (lambda t: t[1:3, ::2], lambda a: a[1:3, ::2]),
        (lambda t: t[None, 2, ..., 1:], lambda a: a[None, 2, ..., 1:]),
        (lambda t: t.view(-1), lambda a: a.reshape(-1)),
        (lambda t: t.view(2, 12)[1], lambda a: a.reshape(2, 12)[1]),
        (lambda t: t.reshape(3, 8), lambda a: a.reshape(3, 8)),
        (lambda t: t.t(), lambda a: a.T),
        (lambda t: t.mT[2:], lambda a: a.T[2:]),
        (lambda t: t.permute(1, 0)[::3], lambda a: a.transpose(1, 0)[::3]),
        (lambda t: t.unsqueeze(1)[:, 0], lambda a: a[:, None][:, 0]),
        (lambda t: t[None].squeeze(0), lambda a: a[None][0]),
        (lambda t: t.narrow(1, 2, 3), lambda a: a[:, 2:5]),
        (lambda t: t.select(1, 4), lambda a: a[:, 4]),
        (lambda t: t.unflatten(1, (2, 3))[:, 1], lambda a: a.reshape(4, 2, 3)[:, 1]),
        (lambda t: t.split(2)[1], lambda a: a[2:4]),
        (lambda t: t.chunk(3, dim=1)[2], lambda a: a[:, 4:6]),
        (lambda t: t.unbind(1)[3], lambda a: a[:, 3]),
        (lambda t: t.diagonal(1), lambda a: np.einsum("ii->i", a[:, 1:5])),
        (lambda t: t.view_as(flow.zeros(24)), lambda a: a.reshape(24)),
        (lambda t: t.detach(), lambda a: a),
        (lambda t: t.as_strided((2, 2), (6, 1), 1), lambda a: a.reshape(-1)[
            np.array([[1, 2], [7, 8]])]),
        (lambda t: t.t()[1:, 2], lambda a: a.T[1:, 2]),
    ]
    for k, (fj, fn) in enumerate(cases):
        t, a = pair()
        v = fj(t)
        np.testing.assert_array_equal(v.numpy(), fn(a), err_msg=f"case {k}: read")
        v.mul_(-1)
        b = A.copy()
        if k in (18, 21):  # diagonal / as_strided: NumPy's are not writable views
            idx = np.arange(24).reshape(4, 6)
            pos = np.einsum("ii->i", idx[:, 1:5]) if k == 18 else np.array([[1, 2], [7, 8]])
            b.reshape(-1)[pos] *= -1
        else:
            fn(b)[...] *= -1
        np.testing.assert_array_equal(t.numpy(), b, err_msg=f"case {k}: base after write")
        np.testing.assert_array_equal(v.numpy(), -fn(a), err_msg=f"case {k}: view after write")


def test_every_live_view_sees_a_write_and_versions_are_shared():
    t, a = pair()
    row, col, flat = t[1], t[:, 2], t.view(-1)
    v0 = t._version
    row[2] = 100.0
    a[1, 2] = 100.0
    assert t._version == row._version == col._version == flat._version == v0 + 1
    np.testing.assert_array_equal(col.numpy(), a[:, 2])
    np.testing.assert_array_equal(flat.numpy(), a.reshape(-1))
    t.add_(1)  # a write into the base reaches the views
    np.testing.assert_array_equal(row.numpy(), a[1] + 1)
    y = t[0][1]
    y.fill_(-5)
    assert t[0, 1].item() == -5
    c = t[2].clone()  # a copy does not alias
    t.zero_()
    assert c.abs().sum().item() > 0 and row.abs().sum().item() == 0


def test_advanced_indexing_and_reshape_of_noncontiguous_views_copy():
    t, _ = pair()
    adv = t[[0, 2]]
    adv.zero_()
    np.testing.assert_array_equal(t.numpy(), A)
    r = t.t().reshape(-1)  # cannot be a view: a copy, as PyTorch
    r.zero_()
    np.testing.assert_array_equal(t.numpy(), A)
    assert r._base is None and not r._is_view()
    with pytest.raises(RuntimeError, match="view size is not compatible.*reshape"):
        t.t().view(-1)
    f = t.t().flatten()
    assert not f._is_view()


def test_strides_offsets_and_contiguity_as_pytorch_reports_them():
    t = flow.zeros(4, 6)
    assert t.stride() == (6, 1) and t.storage_offset() == 0 and t.is_contiguous()
    v = t[1:, ::2]
    assert v.stride() == (6, 2) and v.storage_offset() == 6 and not v.is_contiguous()
    assert v.stride(1) == 2 and v.stride(-2) == 6
    tt = t.t()
    assert tt.stride() == (1, 6) and not tt.is_contiguous()
    assert tt._base is t and tt._is_view() and not t._is_view()
    c = tt.contiguous()
    assert c is not tt and c.is_contiguous() and c._base is None
    np.testing.assert_array_equal(c.numpy(), tt.numpy())
    r = t[1]
    assert r.is_contiguous() and r.contiguous() is r  # a contiguous view is returned as is
    assert t.contiguous() is t
    e = t.unsqueeze(0).expand(3, 4, 6)
    assert e.stride() == (0, 6, 1)
    assert t.diagonal().stride() == (7,)
    assert t.view(2, 12)[1]._base is t  # the base of a view of a view is the root
    with pytest.raises(IndexError, match="stride.*out of range"):
        t.stride(2)


def test_writing_into_an_expanded_view_raises_as_pytorch():
    t = flow.zeros(3)
    e = t.expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e.add_(1)
    with pytest.raises(RuntimeError, match="more than one element"):
        e[0] = 1.0
    t.expand(1, 3).add_(1)  # no repeated element: fine
    np.testing.assert_array_equal(t.numpy(), [1, 1, 1])


def test_autograd_through_a_write_into_a_view_is_copyslices():
    # y = 2x; y[1] *= w (w requires grad); loss = sum(y * c)
    x = flow.tensor(A.copy(), requires_grad=True)
    w = flow.tensor(np.full(6, 3.0, np.float32), requires_grad=True)
    c = flow.tensor(np.linspace(0, 1, 24, dtype=np.float32).reshape(4, 6))
    y = x * 2
    y[1].mul_(w)
    (y * c).sum().backward()
    cn = c.numpy()
    gx = 2 * cn
    gx[1] *= 3.0
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), 2 * A[1] * cn[1], rtol=1e-6)


def test_inplace_on_views_of_leaves_and_version_errors():
    p = flow.tensor(A.copy(), requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        p[0].add_(1)
    with flow.no_grad():
        p[0].add_(1)  # as optimizers do
    assert p[0, 0].item() == 1.0
    with flow.no_grad():
        v = p[1]
    with pytest.raises(RuntimeError, match="created in no_grad mode"):
        (v * 1).sum()  # reading is fine ...
        v.add_(1)      # ... writing with grad mode on is refused, as PyTorch
    y = p * 1
    s = y[0]
    out = (s * s).sum()  # saves s
    y[3] = 0.0           # another region, same storage: PyTorch's shared version counter
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()
    y = p * 1
    a, b = y.split(2)
    with pytest.raises(RuntimeError, match="several views returned by split"):
        a.mul_(2)


def test_detach_and_data_share_values_but_not_history():
    p = nn.Parameter(flow.tensor(A.copy()))
    p.data.mul_(0.5)  # the PyTorch idiom: updates p, untracked
    np.testing.assert_allclose(p.detach().numpy(), A * 0.5)
    d = p.detach()
    assert not d.requires_grad and d._base is None and not d._is_view()
    d[0] = 7.0
    assert p[0, 0].item() == 7.0 and p.requires_grad and p.grad_fn is None
    p.data = flow.ones(2)  # any shape: p holds it from now on
    assert p.shape == (2,) and isinstance(p, nn.Parameter)
    t, _ = pair()
    v = t[1]
    v.data = flow.zeros(5)  # a view given new data stops aliasing its base
    assert not v._is_view() and v.shape == (5,)
    v.add_(1)
    np.testing.assert_array_equal(t.numpy(), A)
    np.testing.assert_array_equal(v.numpy(), np.ones(5))
    with pytest.raises(RuntimeError, match="can't detach views in-place"):
        flow.ones(3)[1:].detach_()


def test_views_pickle_and_deepcopy_as_plain_tensors_and_buffers_own_values():
    t, _ = pair()
    v = t[1:3]
    for c in (copy.deepcopy(v), pickle.loads(pickle.dumps(v))):
        assert c._base is None
        np.testing.assert_array_equal(c.numpy(), A[1:3])
        c.zero_()
    np.testing.assert_array_equal(t.numpy(), A)
    m = nn.Module()
    m.register_buffer("mask", flow.ones(4, 4).tril().view(1, 1, 4, 4))
    assert not m.mask._is_view()


def test_views_under_jax_jit():
    @jax.jit
    def f(a):
        y = a * 1
        y[:, 0].zero_()
        y.t()[1].add_(10)
        return y
    out = f(flow.tensor(A[:2, :3].copy()))
    want = A[:2, :3].copy()
    want[:, 0] = 0
    want[:, 1] += 10
    np.testing.assert_array_equal(out.numpy(), want)


def test_strided_view_positions_made_while_tracing_serve_later_eager_views():
    """A diagonal / as_strided view first made inside flow.jit caches its element positions
    per (shape, layout); they must be concrete, not the trace's tracers (the eager view of
    the same layout after the trace failed with UnexpectedTracerError)."""
    w = flow.nn.Parameter(flow.tensor(A[:5, :3].copy()))

    @flow.jit
    def f():
        return w.diagonal().sum() + w.as_strided((2, 2), (3, 2), 1).sum()
    want = np.trace(A[:5, :3]) + A[:5, :3].ravel()[[1, 3, 4, 6]].sum()
    np.testing.assert_allclose(f().item(), want, rtol=1e-6)
    np.testing.assert_allclose(w.diagonal().detach().numpy(), np.diagonal(A[:5, :3]))
    np.testing.assert_allclose(w.as_strided((2, 2), (3, 2), 1).detach().numpy(),
                               A[:5, :3].ravel()[[1, 3, 4, 6]].reshape(2, 2))


def test_flow_jit_writes_into_views_of_arguments_and_captured_tensors():
    @flow.jit
    def f(x):
        x[0].add_(1)
        x.t()[1] = 5.0
        return x.sum()
    x = flow.zeros(2, 3)
    f(x)
    np.testing.assert_array_equal(x.numpy(), [[1, 5, 1], [0, 5, 0]])

    base = flow.zeros(4, 3)

    @flow.jit
    def g(v):
        v.mul_(0).add_(7)
        return v.sum()
    assert g(base[1:3]).item() == 42
    np.testing.assert_array_equal(base.numpy()[:, 0], [0, 7, 7, 0])
    assert g(base[2:]).item() == 42  # the next call's view gets the executable's writes too
    np.testing.assert_array_equal(base.numpy()[:, 0], [0, 7, 7, 7])

    c = flow.zeros(3)

    @flow.jit
    def h(x):
        c[1:].add_(1)  # a captured tensor written through a view: it becomes state
        return x + c
    for k in range(1, 4):
        np.testing.assert_array_equal(h(flow.ones(3)).numpy(), [1, 1 + k, 1 + k])
    np.testing.assert_array_equal(c.numpy(), [0, 3, 3])
    assert not isinstance(c._value, jax.core.Tracer)


def test_flow_jit_refuses_to_leak_a_tensor_cached_on_a_module():
    class CausalMask(nn.Module):
        def __init__(self):
            super().__init__()
            self.mask = None

        def forward(self, x):
            if self.mask is None:
                self.mask = flow.ones(3, 3).tril()
            return x @ self.mask

    m = CausalMask()
    step = flow.jit(lambda x: m(x).sum())
    with pytest.raises(RuntimeError, match=r"CausalMask\.mask.*register_buffer"):
        step(flow.ones(2, 3))
    assert m.mask is None  # nothing leaked


def test_views_of_global_tensors_keep_sbp_and_writes_reach_the_base():
    if len(jax.devices()) < 2:
        pytest.skip("needs several devices")
    plc = flow.placement("cpu", ranks=list(range(2)))
    g = flow.tensor(A.copy()).to_global(plc, flow.sbp.split(0))
    row = g[:, 1:3]
    assert row.sbp == (flow.sbp.split(0),)
    row.mul_(-1)
    want = A.copy()
    want[:, 1:3] *= -1
    np.testing.assert_array_equal(g.numpy(), want)
    assert g.sbp == (flow.sbp.split(0),)
    d = g.t()[2:4].t()  # a general (index) write on a global base
    d.zero_()
    want[:, 2:4] = 0
    np.testing.assert_array_equal(g.numpy(), want)
    np.testing.assert_array_equal(row.numpy(), want[:, 1:3])
