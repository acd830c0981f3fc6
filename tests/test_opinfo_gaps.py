"""Gaps PyTorch's OpInfo database found, each against PyTorch on random inputs (values in
float32, gradients in float64): reflected dunders with a tensor operand, memory formats and
layouts, the ``*_copy`` view variants and other compositions (jflow/view_copies.py,
jflow/composites.py), complex silu, tensordot's size-1 contraction, ctc_loss's gradient
through log_softmax and as_strided on a view."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _pair(*shape, dtype=np.float64, grad=True):
    a = RNG.standard_normal(shape).astype(dtype)
    t = torch.tensor(a, requires_grad=grad)
    f = flow.tensor(a, requires_grad=grad)
    return t, f


def _close(f, t, rtol=1e-5, atol=1e-6):
    t = t.detach().resolve_conj().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    np.testing.assert_allclose(f.detach().numpy(), t, rtol=rtol, atol=atol)


# -- reflected dunders called directly with a tensor operand ---------------------------------

@pytest.mark.parametrize("name", ["__radd__", "__rsub__", "__rmul__", "__rdiv__",
                                  "__rtruediv__", "__rpow__", "__rmod__"])
def test_reflected_dunder_with_a_tensor_operand(name):
    ta, fa = _pair(5)
    tb, fb = _pair()                                   # a 0-d tensor: other + self
    if name == "__rpow__":
        tb, fb = torch.tensor(1.5, requires_grad=True), flow.tensor(1.5, requires_grad=True)
    tout, fout = getattr(ta, name)(tb), getattr(fa, name)(fb)
    _close(fout, tout)
    g = RNG.standard_normal(5)
    tout.backward(torch.tensor(g))
    fout.backward(flow.tensor(g))
    _close(fa.grad, ta.grad)
    _close(fb.grad, tb.grad)


def test_reflected_matmul_and_bitwise_with_tensors():
    ta, fa = _pair(4)
    tb, fb = _pair(3, 4)
    _close(fa.__rmatmul__(fb), ta.__rmatmul__(tb))     # other @ self
    x, y = np.array([3, 5, 6]), np.array([1, 4, 2])
    for name in ("__rand__", "__ror__", "__rxor__"):
        want = getattr(torch.tensor(x), name)(torch.tensor(y)).numpy()
        np.testing.assert_array_equal(getattr(flow.tensor(x), name)(flow.tensor(y)).numpy(),
                                      want)
    assert (flow.tensor([1.0]) + 2).tolist() == [3.0]  # the operator path is unchanged
    assert flow.Tensor.__rdiv__ is flow.Tensor.__rtruediv__


# -- memory formats and layouts ----------------------------------------------------------------

def test_memory_format_objects():
    for name in ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d"):
        fmt = getattr(flow, name)
        assert isinstance(fmt, flow.memory_format) and repr(fmt) == f"flow.{name}"
        assert pickle.loads(pickle.dumps(fmt)) is fmt
    assert isinstance(flow.strided, flow.layout) and repr(flow.strided) == "flow.strided"


def test_memory_format_arguments_keep_the_values():
    a = RNG.standard_normal((2, 3, 2, 3)).astype(np.float32)
    x, t = flow.tensor(a), torch.tensor(a)
    cl = flow.channels_last
    for f in (lambda v, m: v.contiguous(memory_format=m), lambda v, m: v.clone(memory_format=m),
              lambda v, m: v.to(memory_format=m), lambda v, m: v.double(memory_format=m),
              lambda v, m: v.cfloat(memory_format=m), lambda v, m: v.int(memory_format=m)):
        np.testing.assert_array_equal(f(x, cl).numpy(), f(t, torch.channels_last).numpy())
    np.testing.assert_array_equal(flow.clone(x, memory_format=flow.preserve_format).numpy(), a)
    z = flow.zeros_like(x, layout=flow.strided, memory_format=flow.channels_last)
    assert tuple(z.shape) == a.shape and z.dtype == flow.float32
    assert flow.ones_like(x, memory_format=flow.preserve_format).sum().item() == a.size
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        flow.randn(3).contiguous(memory_format=flow.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5 tensor"):
        x.float(memory_format=flow.channels_last_3d)
    with pytest.raises(TypeError, match="must be flow.memory_format"):
        x.to(memory_format="channels_last")
    with pytest.raises(ValueError, match="layout"):
        flow.zeros_like(x, layout=flow.layout("sparse_coo"))


def test_is_contiguous_in_a_memory_format_follows_the_row_major_strides():
    for shape in ((2, 3, 4, 5), (2, 1, 4, 5), (2, 3, 1, 1)):
        x, t = flow.zeros(shape), torch.zeros(shape)   # PyTorch's default: row-major
        for fmt in ("contiguous_format", "channels_last", "preserve_format"):
            assert x.is_contiguous(memory_format=getattr(flow, fmt)) == \
                t.is_contiguous(memory_format=getattr(torch, fmt)), (shape, fmt)
        assert x.stride() == t.stride()
    assert not flow.zeros(2, 3).is_contiguous(memory_format=flow.channels_last)
    p = flow.zeros(2, 4, 5, 3).permute(0, 3, 1, 2)     # a channels-last view reports it
    assert p.is_contiguous(memory_format=flow.channels_last) and not p.is_contiguous()


def test_to_copy_keeps_the_history():
    t, f = _pair(3)
    out = f.to(flow.float64, copy=True)
    assert out is not f and out.requires_grad
    out.sum().backward()
    np.testing.assert_array_equal(f.grad.numpy(), np.ones(3))


# -- copy variants -------------------------------------------------------------------------------

COPIES = [
    ("alias_copy", ()), ("as_strided_copy", ((2, 2), (1, 2), 1)), ("diagonal_copy", (1,)),
    ("expand_copy", ((2, 3, 4),)), ("permute_copy", ((1, 0),)), ("squeeze_copy", ()),
    ("split_with_sizes_copy", ((1, 2),)), ("t_copy", ()), ("transpose_copy", (0, 1)),
    ("unbind_copy", (1,)), ("unsqueeze_copy", (1,)), ("view_copy", ((4, 3),)),
    ("unsafe_chunk", (2, 1)), ("unsafe_split", (2,)),
]


@pytest.mark.parametrize("name,args", COPIES, ids=[c[0] for c in COPIES])
def test_view_copies(name, args):
    t, f = _pair(3, 4)
    tout, fout = getattr(torch, name)(t, *args), getattr(flow, name)(f, *args)
    touts = list(tout) if isinstance(tout, (list, tuple)) else [tout]
    fouts = list(fout) if isinstance(fout, (list, tuple)) else [fout]
    assert len(touts) == len(fouts)
    loss_t, cots_f = 0, []
    for a, b in zip(touts, fouts):
        _close(b, a)
        c = RNG.standard_normal(tuple(a.shape))
        loss_t = loss_t + (a * torch.tensor(c)).sum()
        cots_f.append(flow.tensor(c))
    loss_t.backward()
    flow.autograd.backward(fouts, cots_f)              # jflow: the same c as grad_tensors
    _close(f.grad, t.grad)
    if name.endswith("_copy"):                         # a copy: writes do not reach input
        before = f.detach().numpy().copy()
        with flow.no_grad():
            fouts[0].add_(1.0)
        np.testing.assert_array_equal(f.detach().numpy(), before)


def test_unfold_copy_where_unfold_exists():
    if not hasattr(flow.Tensor, "unfold"):
        pytest.skip("Tensor.unfold is not in jflow yet")
    t, f = _pair(6, 2, grad=False)
    _close(flow.unfold_copy(f, 0, 2, 2), torch.unfold_copy(t, 0, 2, 2))


# -- other compositions ------------------------------------------------------------------------

def test_constant_pad_nd_and_nonzero_static():
    t, f = _pair(2, 3)
    for pad in ((1, 2), (1, -1, 0, 1)):
        tout, fout = torch.constant_pad_nd(t, pad, 0.5), flow.constant_pad_nd(f, pad, 0.5)
        _close(fout, tout)
    a = np.array([[0, 1, 0], [2, 0, 3]])
    for size in (2, 5):
        for fill in (-1, 7):
            want = torch.nonzero_static(torch.tensor(a), size=size, fill_value=fill).numpy()
            got = flow.nonzero_static(flow.tensor(a), size=size, fill_value=fill)
            assert got.dtype == flow.int64
            np.testing.assert_array_equal(got.numpy(), want)


def test_as_strided_scatter():
    t, f = _pair(3, 3)
    ts, fs = _pair(2, 2)
    tout = torch.as_strided_scatter(t, ts, (2, 2), (1, 2), 1)
    fout = flow.as_strided_scatter(f, fs, (2, 2), (1, 2), 1)
    _close(fout, tout)
    g = RNG.standard_normal((3, 3))
    tout.backward(torch.tensor(g))
    fout.backward(flow.tensor(g))
    _close(fs.grad, ts.grad)
    # input's gradient: the cotangent outside the scattered elements (PyTorch's rule returns
    # the complement, a known PyTorch bug: docs/porting.md)
    mask = np.ones(9)
    mask[[1, 2, 3, 4]] = 0
    _close(f.grad, (g.reshape(-1) * mask).reshape(3, 3))


def test_empty_permuted_and_new_empty_strided():
    e = flow.empty_permuted((2, 3, 4), (0, 2, 1), dtype=flow.float64)
    assert tuple(e.shape) == (2, 3, 4) and e.dtype == flow.float64
    assert e.stride() == torch.empty_permuted((2, 3, 4), (0, 2, 1)).stride()
    n = flow.zeros(3, dtype=flow.int32).new_empty_strided((2, 3), (1, 2))
    assert tuple(n.shape) == (2, 3) and n.dtype == flow.int32 and n.stride() == (1, 2)


def _grads_match(tout, fout, tleaves, fleaves):
    """Values, then the gradients of sum(output * c) over the outputs (random c): PyTorch
    builds that loss, jflow takes the c as grad_outputs (the same vector-Jacobian product,
    without compiling a product, a sum and their backwards per output shape)."""
    loss_t, outs_f, cots_f = 0, [], []
    for a, b in zip(tout, fout):
        _close(b, a)
        c = RNG.standard_normal(tuple(a.shape))
        loss_t = loss_t + (a * torch.tensor(c)).sum()
        if b.requires_grad:
            outs_f.append(b)
            cots_f.append(flow.tensor(c, dtype=b.dtype))
    grads_f = flow.autograd.grad(outs_f, fleaves, grad_outputs=cots_f)
    for gt, gf in zip(torch.autograd.grad(loss_t, tleaves), grads_f, strict=True):
        _close(gf, gt)


def test_native_norms_return_pytorchs_tuples():
    tx, fx = _pair(2, 6, 5)
    tw, fw = _pair(6)
    tb, fb = _pair(6)
    tl, fl = _pair(5)
    tout = torch.native_layer_norm(tx, [5], tl, None, 1e-5)
    fout = flow.native_layer_norm(fx, [5], fl, None, 1e-5)
    _grads_match(tout, fout, [tx, tl], [fx, fl])
    tout = torch.native_group_norm(tx, tw, tb, 2, 6, 5, 3, 1e-5)
    fout = flow.native_group_norm(fx, fw, fb, 2, 6, 5, 3, 1e-5)
    _grads_match(tout, fout, [tx, tw, tb], [fx, fw, fb])
    trm, tv = torch.zeros(6, dtype=torch.float64), torch.ones(6, dtype=torch.float64)
    frm, fv = flow.zeros(6, dtype=flow.float64), flow.ones(6, dtype=flow.float64)
    tout = torch.native_batch_norm(tx, tw, tb, trm, tv, True, 0.1, 1e-5)
    fout = flow.native_batch_norm(fx, fw, fb, frm, fv, True, 0.1, 1e-5)
    _grads_match(tout, fout, [tx, tw, tb], [fx, fw, fb])
    _close(frm, trm)
    _close(fv, tv)
    tout = torch.native_batch_norm(tx, tw, tb, trm, tv, False, 0.1, 1e-5)
    fout = flow.native_batch_norm(fx, fw, fb, frm, fv, False, 0.1, 1e-5)
    assert [tuple(o.shape) for o in fout] == [tuple(o.shape) for o in tout]
    _close(fout[0], tout[0])


@pytest.mark.parametrize("shape", [(8, 12), (2, 10, 7)])
def test_svd_and_pca_lowrank_factor_a_low_rank_matrix(shape):
    *batch, m, n = shape
    a = RNG.standard_normal((*batch, m, 3)) @ RNG.standard_normal((*batch, 3, n))  # rank 3
    def rebuilt(u, s, v):  # U diag(S) V^T, in NumPy: the factors are what is tested
        u, s, v = u.numpy(), s.numpy(), v.numpy()
        return (u * s[..., None, :]) @ np.swapaxes(v, -2, -1)

    u, s, v = flow.svd_lowrank(flow.tensor(a), q=4)
    tu, ts, tv = torch.svd_lowrank(torch.tensor(a), q=4)
    assert [tuple(x.shape) for x in (u, s, v)] == [tuple(x.shape) for x in (tu, ts, tv)]
    np.testing.assert_allclose(rebuilt(u, s, v), a, atol=1e-8)
    u, s, v = flow.pca_lowrank(flow.tensor(a), q=3)
    centered = a - a.mean(axis=-2, keepdims=True)
    np.testing.assert_allclose(rebuilt(u, s, v), centered, atol=1e-8)
    np.testing.assert_allclose(s.numpy(), torch.pca_lowrank(torch.tensor(a), q=3)[1].numpy(),
                               rtol=1e-8)


def test_linear_cross_entropy():
    tx, fx = _pair(8, 3)
    tw, fw = _pair(4, 3)
    tb, fb = _pair(4)
    target = RNG.integers(0, 4, 8)
    options = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    for kw in ({"reduction": "none", "label_smoothing": 0.1}, {"options": options}):
        tout = torch.nn.functional.linear_cross_entropy(tx, tw, torch.tensor(target),
                                                        linear_bias=tb, **kw)
        fout = flow.nn.functional.linear_cross_entropy(fx, fw, flow.tensor(target),
                                                       linear_bias=fb, **kw)
        _grads_match([tout], [fout], [tx, tw, tb], [fx, fw, fb])
    tw3, fw3 = _pair(2, 3, 3)                          # K-dimensional: (C, d_1, in_features)
    t3 = RNG.integers(0, 2, (8, 3))
    tout = torch.nn.functional.linear_cross_entropy(tx, tw3, torch.tensor(t3))
    fout = flow.nn.functional.linear_cross_entropy(fx, fw3, flow.tensor(t3))
    _grads_match([tout], [fout], [tx, tw3], [fx, fw3])


# -- values and gradients that differed ------------------------------------------------------

def test_complex_silu():
    a = (RNG.standard_normal((4,)) + 1j * RNG.standard_normal((4,))).astype(np.complex64)
    _close(flow.nn.functional.silu(flow.tensor(a)), torch.nn.functional.silu(torch.tensor(a)))
    t, f = _pair(4)                                    # the real path is the op, unchanged
    _grads_match([torch.nn.functional.silu(t)], [flow.nn.functional.silu(f)], [t], [f])


def test_tensordot_size_one_contracted_dim_broadcasts():
    ta, fa = _pair(1, 1, 1)
    tb, fb = _pair(2, 1, 2)
    dims = ([0, 1], [2, 0])
    _grads_match([torch.tensordot(ta, tb, dims=dims)], [flow.tensordot(fa, fb, dims=dims)],
                 [ta, tb], [fa, fb])


@pytest.mark.parametrize("reduction,zero_infinity", [("mean", False), ("none", True)])
def test_ctc_loss_gradient_through_log_softmax_matches_pytorch(reduction, zero_infinity):
    """Through log_softmax (how PyTorch's own gradient test calls ctc_loss) the gradients
    agree; on raw log_probs jflow's is the derivative and PyTorch's adds exp(log_probs)
    (tests/test_norm_loss_parity.py pins that difference)."""
    t_len, n, c = 6, 3, 5
    logits = RNG.standard_normal((t_len, n, c))
    targets = np.array([[1, 2, 2], [3, 1, 0], [4, 4, 4]])
    il, tl = np.array([6, 5, 3]), np.array([3, 2, 3])  # the last: no alignment (inf loss)
    tx, fx = torch.tensor(logits, requires_grad=True), flow.tensor(logits, requires_grad=True)
    kw = dict(reduction=reduction, zero_infinity=zero_infinity)

    def both(lengths):
        tout = torch.nn.functional.ctc_loss(tx.log_softmax(2), torch.tensor(targets),
                                            torch.tensor(il), torch.tensor(lengths), **kw)
        fout = flow.nn.functional.ctc_loss(fx.log_softmax(2), flow.tensor(targets),
                                           flow.tensor(il), flow.tensor(lengths), **kw)
        return tout, fout

    tout, fout = both(tl)
    if zero_infinity:
        _grads_match([tout], [fout], [tx], [fx])
    else:                                              # inf loss: compare the finite samples
        np.testing.assert_allclose(fout.item(), tout.item(), rtol=1e-6)
        tout, fout = both(np.array([3, 2, 1]))
        _grads_match([tout], [fout], [tx], [fx])


@pytest.mark.parametrize("offset", [None, 0, 10])
@pytest.mark.parametrize("leaf_view", [True, False])
def test_as_strided_of_a_view_addresses_the_base_storage(offset, leaf_view):
    b = RNG.standard_normal(20)
    tb, fb = torch.tensor(b, requires_grad=not leaf_view), flow.tensor(b,
                                                                       requires_grad=not leaf_view)
    tx, fx = tb[5:15], fb[5:15]
    if leaf_view:
        tx.requires_grad_(True)
        fx.requires_grad_(True)
    args = ((2, 2), (1, 2)) if offset is None else ((2, 2), (1, 2), offset)
    tout, fout = tx.as_strided(*args), fx.as_strided(*args)
    tleaf, fleaf = (tx, fx) if leaf_view else (tb, fb)
    _grads_match([tout], [fout], [tleaf], [fleaf])
