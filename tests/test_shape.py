"""Functional-level tests of the shape ops (flow.reshape ... flow.pad) and their SBP signatures.

Values are compared with NumPy (and PyTorch where installed); dim handling, -1 sizes,
int-or-list arguments, dtype promotion of cat/stack, the varargs Tensor methods and
PyTorch's error types are checked at the ``flow.*`` level. The op-level checks (inference,
jit, vmap) are the checker's (jflow/testing/op_samples/view.py, join.py, slicing.py,
rearrange.py, subscript.py); the SBP signatures of every shape op are verified here by running
each signature on two simulated ranks.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jflow as flow
import jflow.tensor_indexing  # noqa: F401  (attaches the varargs shape methods)
from jflow.ops import get as get_op
from jflow.sharding.sbp import B, P, signatures_of
from jflow.tensor import _wrap
from jflow.testing import get_samples
from jflow.testing.op_samples import load_builtin

_rng = np.random.default_rng(3)
A3 = _rng.uniform(-2, 2, (2, 3, 4)).astype(np.float32)
IA = _rng.integers(-5, 6, (2, 3, 4)).astype(np.int64)


def t(a, dtype=None):
    return flow.tensor(np.asarray(a), dtype=dtype)


def eq(x, want):
    want = np.asarray(want)
    assert tuple(x.shape) == want.shape, (tuple(x.shape), want.shape)
    np.testing.assert_array_equal(x.numpy(), want)


# -- reshape / view / flatten --------------------------------------------------------------------

def test_reshape_view_and_methods():
    x = t(A3)
    eq(flow.reshape(x, (4, -1)), A3.reshape(4, 6))
    eq(flow.view(x, [-1]), A3.reshape(-1))
    eq(x.reshape(3, 8), A3.reshape(3, 8))
    eq(x.reshape((6, 4)), A3.reshape(6, 4))
    eq(x.reshape(shape=(24,)), A3.reshape(24))
    eq(x.view(-1, 2), A3.reshape(-1, 2))
    eq(x.view(flow.Size([4, 6])), A3.reshape(4, 6))
    eq(x.reshape_as(t(np.zeros((12, 2)))), A3.reshape(12, 2))
    eq(x.view_as(t(np.zeros((24,)))), A3.reshape(24))
    eq(t(np.float32(3.0)).reshape(1, 1), np.full((1, 1), 3.0, np.float32))
    eq(t(np.zeros((0, 3))).reshape(3, 0, 5), np.zeros((3, 0, 5)))


def test_reshape_errors():
    x = t(A3)
    with pytest.raises(ValueError, match=r"reshape\(\): shape \[5, 5\] is invalid for input of "
                                         r"size 24"):
        flow.reshape(x, (5, 5))
    with pytest.raises(ValueError, match="only one dimension can be inferred"):
        x.view(-1, -1)
    with pytest.raises(ValueError, match="invalid shape dimension -2"):
        x.reshape(-2, 12)
    with pytest.raises(ValueError, match="ambiguous"):
        t(np.zeros((0, 3))).reshape(-1, 0)
    with pytest.raises(TypeError, match="reshape"):
        flow.reshape(x, "ab")
    # view(dtype) reinterprets the bytes (tests/test_meta.py has its aliasing and errors)
    np.testing.assert_array_equal(x.view(flow.int32).numpy(), A3.view(np.int32))


def test_flatten_unflatten():
    x = t(A3)
    eq(flow.flatten(x), A3.reshape(-1))
    eq(flow.flatten(x, 1), A3.reshape(2, 12))
    eq(flow.flatten(x, 0, -2), A3.reshape(6, 4))
    eq(flow.flatten(t(np.float32(1.0))), np.ones(1, np.float32))
    eq(flow.unflatten(x, -1, (2, -1)), A3.reshape(2, 3, 2, 2))
    with pytest.raises(IndexError, match=r"flatten\(\): Dimension out of range"):
        flow.flatten(x, 3)
    with pytest.raises(ValueError, match="cannot come after"):
        flow.flatten(x, 2, 1)
    with pytest.raises(ValueError, match="don't multiply up"):
        flow.unflatten(x, 1, (2, 2))


# -- squeeze / unsqueeze / transpose / permute -----------------------------------------------------

def test_squeeze_unsqueeze():
    q = np.zeros((1, 3, 1, 2), np.float32)
    x = t(q)
    assert tuple(flow.squeeze(x).shape) == (3, 2)
    assert tuple(flow.squeeze(x, 0).shape) == (3, 1, 2)
    assert tuple(flow.squeeze(x, 1).shape) == (1, 3, 1, 2)  # not size 1: no-op, as torch
    assert tuple(flow.squeeze(x, (0, -2)).shape) == (3, 2)
    assert tuple(flow.squeeze(t(np.float32(1))).shape) == ()
    assert tuple(flow.unsqueeze(x, -1).shape) == (1, 3, 1, 2, 1)
    assert tuple(flow.unsqueeze(x, 4).shape) == (1, 3, 1, 2, 1)
    assert tuple(flow.unsqueeze(t(np.float32(1)), 0).shape) == (1,)
    with pytest.raises(IndexError, match=r"unsqueeze\(\): Dimension out of range \(expected to be "
                                         r"in range of \[-5, 4\], but got 5\)"):
        flow.unsqueeze(x, 5)
    with pytest.raises(IndexError, match="squeeze"):
        flow.squeeze(x, 4)


def test_transpose_permute_movedim_t():
    x = t(A3)
    eq(flow.transpose(x, 0, -1), A3.swapaxes(0, -1))
    eq(flow.swapaxes(x, 1, 2), A3.swapaxes(1, 2))
    eq(flow.swapdims(x, 1, 1), A3)
    eq(flow.permute(x, (2, 0, 1)), A3.transpose(2, 0, 1))
    eq(x.permute(1, 0, 2), A3.transpose(1, 0, 2))
    eq(x.permute([-1, -2, -3]), A3.transpose(2, 1, 0))
    eq(flow.movedim(x, 0, -1), np.moveaxis(A3, 0, -1))
    eq(flow.movedim(x, (0, 1), (2, 0)), np.moveaxis(A3, (0, 1), (2, 0)))
    eq(flow.t(t(A3[0])), A3[0].T)
    eq(flow.t(t(A3[0, 0])), A3[0, 0])
    with pytest.raises(ValueError, match="number of dims don't match"):
        x.permute(1, 0)
    with pytest.raises(ValueError, match="repeated dim"):
        x.permute(1, 1, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        flow.transpose(x, 0, 3)
    with pytest.raises(ValueError, match=r"t\(\) expects a tensor with <= 2 dimensions"):
        flow.t(x)
    with pytest.raises(ValueError, match="repeated dim in `source`"):
        flow.movedim(x, (0, 0), (1, 2))


# -- expand / broadcast_to -------------------------------------------------------------------------

def test_expand_broadcast_to():
    c = _rng.uniform(size=(3, 1)).astype(np.float32)
    x = t(c)
    eq(x.expand(3, 4), np.broadcast_to(c, (3, 4)))
    eq(x.expand(2, -1, 5), np.broadcast_to(c, (2, 3, 5)))
    eq(x.expand((2, 3, 2)), np.broadcast_to(c, (2, 3, 2)))
    eq(flow.broadcast_to(x, (2, 3, 4)), np.broadcast_to(c, (2, 3, 4)))
    eq(flow.expand(t(np.int64(5)), (2, 2)), np.full((2, 2), 5))
    eq(x.expand_as(t(np.zeros((3, 7)))), np.broadcast_to(c, (3, 7)))
    with pytest.raises(ValueError, match=r"expand\(\): the expanded size of the tensor \(4\) must "
                                         r"match the existing size \(3\) at non-singleton "
                                         r"dimension 0"):
        x.expand(4, 4)
    with pytest.raises(ValueError, match="number of sizes provided"):
        x.expand(4)
    with pytest.raises(ValueError, match="leading, non-existing dimension"):
        x.expand(-1, 3, 1)


# -- cat / stack / split / chunk / unbind ----------------------------------------------------------

def test_cat_and_promotion():
    x, i = t(A3), t(IA)
    eq(flow.cat([x, x], 0), np.concatenate([A3, A3], 0))
    eq(flow.cat((x, x, x), dim=-1), np.concatenate([A3] * 3, -1))
    eq(flow.concat([x, x], 1), np.concatenate([A3, A3], 1))
    out = flow.cat([i, x], 2)
    assert out.dtype == flow.float32
    np.testing.assert_allclose(out.numpy(), np.concatenate([IA.astype(np.float32), A3], 2))
    assert flow.cat([t(np.array([True])), t(np.array([2], np.int32))]).dtype == flow.int32
    # PyTorch's legacy rule: 1-d empty tensors are skipped
    eq(flow.cat([t(np.zeros(0, np.float32)), x], 1), A3)
    eq(flow.cat([t(np.zeros(0, np.float32)), t(np.zeros(0, np.float32))]), np.zeros(0))
    with pytest.raises(ValueError, match="non-empty list"):
        flow.cat([])
    with pytest.raises(ValueError, match="zero-dimensional tensor"):
        flow.cat([t(np.float32(1)), t(np.float32(2))])
    with pytest.raises(ValueError, match="must match except in dimension 0"):
        flow.cat([x, t(A3[:, :2])])
    with pytest.raises(IndexError, match="Dimension out of range"):
        flow.cat([x, x], 3)
    with pytest.raises(TypeError, match="cat"):
        flow.cat(x)


def test_stack():
    x, i = t(A3), t(IA)
    eq(flow.stack([x, x]), np.stack([A3, A3]))
    eq(flow.stack([x, x, x], -1), np.stack([A3] * 3, -1))
    eq(flow.stack([x, x], dim=3), np.stack([A3, A3], 3))
    assert flow.stack([i, x]).dtype == flow.float32
    eq(flow.stack([t(np.float32(1)), t(np.float32(2))]), np.array([1, 2], np.float32))
    with pytest.raises(ValueError, match="stack expects each tensor to be equal size"):
        flow.stack([x, t(A3[:1])])
    with pytest.raises(IndexError, match="Dimension out of range"):
        flow.stack([x, x], 4)


def test_split_chunk_unbind():
    x = t(A3)
    parts = flow.split(x, 2, 2)
    assert isinstance(parts, tuple) and len(parts) == 2
    for p, w in zip(parts, np.split(A3, 2, 2)):
        eq(p, w)
    parts = flow.split(x, 3, -1)
    assert [tuple(p.shape) for p in parts] == [(2, 3, 3), (2, 3, 1)]
    parts = flow.split(x, [1, 0, 2], dim=1)
    assert [tuple(p.shape) for p in parts] == [(2, 1, 4), (2, 0, 4), (2, 2, 4)]
    eq(parts[2], A3[:, 1:])
    assert [tuple(p.shape) for p in flow.split(t(np.zeros(0)), 2)] == [(0,)]
    assert [p.shape[0] for p in flow.chunk(t(np.zeros(5)), 3)] == [2, 2, 1]
    assert [p.shape[0] for p in flow.chunk(t(np.zeros(6)), 4)] == [2, 2, 2]
    assert [p.shape[0] for p in flow.chunk(t(np.zeros(0)), 3)] == [0, 0, 0]
    eq(flow.chunk(x, 2, 1)[1], A3[:, 2:])
    u = flow.unbind(x, 1)
    assert len(u) == 3
    eq(u[1], A3[:, 1])
    with pytest.raises(ValueError, match="must sum exactly to 3"):
        flow.split(x, [1, 1], 1)
    with pytest.raises(ValueError, match="split_size can only be 0"):
        flow.split(x, 0)
    with pytest.raises(ValueError, match="chunks must be greater than 0"):
        flow.chunk(x, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        flow.split(x, 1, 3)


def test_split_matches_torch():
    torch = pytest.importorskip("torch")
    for n, size in [(7, 3), (6, 2), (1, 4)]:
        a = np.arange(n)
        got = [p.numpy().tolist() for p in flow.split(t(a), size)]
        want = [p.numpy().tolist() for p in torch.split(torch.tensor(a), size)]
        assert got == want
        for chunks in (1, 2, 3, 5):
            got = [p.numpy().tolist() for p in flow.chunk(t(a), chunks)]
            want = [p.numpy().tolist() for p in torch.chunk(torch.tensor(a), chunks)]
            assert got == want, (n, chunks)


# -- narrow / slice / flip / roll ------------------------------------------------------------------

def test_narrow_slice():
    x = t(A3)
    eq(flow.narrow(x, 1, 1, 2), A3[:, 1:3])
    eq(flow.narrow(x, -1, -2, 2), A3[..., 2:4])
    eq(flow.narrow(x, 0, 2, 0), A3[2:2])
    eq(flow.slice(x, [0, 1, 0], [2, 3, 4], [1, 1, 2]), A3[0:2, 1:3, 0:4:2])
    eq(flow.slice(x, [-1, -100, 1], [100, -1, 4], [1, 2, 3]), A3[-1:100, -100:-1:2, 1:4:3])
    with pytest.raises(IndexError, match="start out of range"):
        flow.narrow(x, 1, 4, 0)
    with pytest.raises(ValueError, match=r"start \(2\) \+ length \(2\) exceeds dimension size"):
        flow.narrow(x, 1, 2, 2)
    with pytest.raises(ValueError, match="length must be non-negative"):
        flow.narrow(x, 1, 0, -1)
    with pytest.raises(ValueError, match="step must be greater than zero"):
        flow.slice(x, [0, 0, 0], [1, 1, 1], [1, -1, 1])
    with pytest.raises(ValueError, match="one entry per dim"):
        flow.slice(x, [0], [1], [1])


def test_flip_roll():
    x = t(A3)
    eq(flow.flip(x, 0), A3[::-1])
    eq(flow.flip(x, [0, -1]), A3[::-1, :, ::-1])
    eq(x.flip(1, 2), A3[:, ::-1, ::-1])
    eq(x.flip([2]), A3[..., ::-1])
    eq(flow.roll(x, 1), np.roll(A3, 1))
    eq(flow.roll(x, -2, 1), np.roll(A3, -2, 1))
    eq(flow.roll(x, (1, 5), (0, 2)), np.roll(A3, (1, 5), (0, 2)))
    with pytest.raises(ValueError, match="appears multiple times"):
        flow.flip(x, [0, -3])
    with pytest.raises(ValueError, match="shifts and dimensions must align"):
        flow.roll(x, (1, 2), 0)
    with pytest.raises(ValueError, match="must have one entry"):
        flow.roll(x, (1, 2))


# -- repeat / tile / tril / triu / pad / clone -----------------------------------------------------

def test_repeat_tile():
    m = A3[0]
    x = t(m)
    eq(x.repeat(2, 1), np.tile(m, (2, 1)))
    eq(x.repeat(2, 1, 3), np.tile(m, (2, 1, 3)))
    eq(x.repeat((1, 2)), np.tile(m, (1, 2)))
    eq(flow.repeat(x, (0, 1)), np.tile(m, (0, 1)))
    eq(flow.tile(x, (2,)), np.tile(m, 2))
    eq(x.tile(2, 1, 1), np.tile(m, (2, 1, 1)))
    with pytest.raises(ValueError, match="can not be smaller than number of dimensions"):
        x.repeat(2)
    with pytest.raises(ValueError, match="negative dimension"):
        x.repeat(1, -1)


def test_repeat_matches_torch():
    torch = pytest.importorskip("torch")
    m = np.arange(6).reshape(2, 3)
    for reps in [(2, 2), (3, 1, 2), (1, 0)]:
        np.testing.assert_array_equal(t(m).repeat(*reps).numpy(),
                                      torch.tensor(m).repeat(*reps).numpy())
    np.testing.assert_array_equal(t(m).tile(2).numpy(), torch.tensor(m).tile(2).numpy())


def test_tril_triu():
    x = t(A3)
    for k in (0, 1, -1, 5, -5):
        eq(flow.tril(x, k), np.tril(A3, k))
        eq(flow.triu(x, diagonal=k), np.triu(A3, k))
    eq(flow.tril(t(IA > 0)), np.tril(IA > 0))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        flow.tril(t(np.zeros(3)))


def test_pad():
    x = t(A3)
    eq(flow.pad(x, (1, 2)), np.pad(A3, ((0, 0), (0, 0), (1, 2))))
    eq(flow.pad(x, [1, 0, 0, 2], value=3.5),
       np.pad(A3, ((0, 0), (0, 2), (1, 0)), constant_values=3.5))
    eq(flow.pad(x, (-1, 1)), np.pad(A3[..., 1:], ((0, 0), (0, 0), (0, 1))))
    eq(flow.pad(t(IA), (1, 1), value=2.7), np.pad(IA, ((0, 0), (0, 0), (1, 1)),
                                                  constant_values=2))
    eq(flow.pad(x, (2, 1, 1, 1), mode="reflect"),
       np.pad(A3, ((0, 0), (1, 1), (2, 1)), mode="reflect"))
    eq(flow.pad(x, (1, 3), "replicate"), np.pad(A3, ((0, 0), (0, 0), (1, 3)), mode="edge"))
    eq(flow.pad(x, (2, 4), mode="circular"), np.pad(A3, ((0, 0), (0, 0), (2, 4)), mode="wrap"))
    with pytest.raises(ValueError, match="divisible by 2"):
        flow.pad(x, (1, 2, 3))
    with pytest.raises(ValueError, match="mode must be one of"):
        flow.pad(x, (1, 1), mode="wrap")
    with pytest.raises(ValueError, match="doesn't take in value"):
        flow.pad(x, (1, 1), mode="reflect", value=1.0)
    with pytest.raises(ValueError, match="padding size should be less than"):
        flow.pad(x, (4, 0), mode="reflect")
    with pytest.raises(ValueError, match="too large"):
        flow.pad(x, (0,) * 8)


def test_pad_matches_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    for a, pad, mode in [(A3[None], (1, 2, 0, 1), "reflect"), (A3, (2, 1), "replicate"),
                         (A3[None], (1, 1, 2, 2), "circular"),
                         (A3[None], (-1, 2, 1, -2), "constant")]:
        want = F.pad(torch.tensor(a), pad, mode=mode).numpy()
        np.testing.assert_array_equal(flow.pad(t(a), pad, mode).numpy(), want)


def test_clone():
    x = t(A3)
    y = flow.clone(x)
    eq(y, A3)
    y[0] = 0  # writing the clone leaves the original alone
    eq(x, A3)


# -- jit / vmap through the functional layer -------------------------------------------------------

def test_functional_shape_ops_trace():
    def f(v):
        x = _wrap(v)
        y = flow.cat([x.reshape(4, 6), flow.flatten(x, 1).T.reshape(-1, 6)[:2]], 0)
        a, b = flow.split(y, [4, 2])
        return flow.stack([a[:2], b]).permute(2, 0, 1)._value

    want = f(jnp.asarray(A3))
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(jnp.asarray(A3))), np.asarray(want))
    batched = jax.vmap(f)(jnp.stack([jnp.asarray(A3), jnp.asarray(2 * A3)]))
    np.testing.assert_array_equal(np.asarray(batched[1]), np.asarray(f(jnp.asarray(2 * A3))))


# -- SBP signatures: run each one on two simulated ranks -------------------------------------------

_SHAPE_OPS = ["reshape", "flatten", "squeeze", "unsqueeze", "transpose", "expand", "cat", "stack",
              "split", "narrow", "slice", "flip", "roll", "repeat", "tril", "triu", "pad", "clone",
              "getitem", "setitem"]
_RANKS = 2


def _flat(inputs):
    out, layout = [], []
    for x in inputs:
        if isinstance(x, list):
            out += x
            layout.append(len(x))
        else:
            out.append(x)
            layout.append(None)
    return out, layout


def _unflat(flat, layout):
    out, i = [], 0
    for n in layout:
        if n is None:
            out.append(flat[i])
            i += 1
        else:
            out.append(list(flat[i:i + n]))
            i += n
    return out


def _run(op, flat, layout, attrs):
    ins = [[_wrap(jnp.asarray(a)) for a in x] if isinstance(x, list) else _wrap(jnp.asarray(x))
           for x in _unflat(flat, layout)]
    res = op.apply(*ins, **attrs)
    return [np.asarray(r._value) for r in (res if isinstance(res, tuple) else (res,))]


def _physical_attrs(name, attrs, out_sbp):
    """Attrs that carry logical output sizes become per-rank sizes (OneFlow derives the
    physical shape from the logical one and the sbp)."""
    if name in ("reshape", "expand"):
        shape = list(attrs["shape"])
        s = out_sbp[0]
        if s is not B and s is not P:
            shape[s.axis] //= _RANKS
        return {**attrs, "shape": tuple(shape)}
    return attrs


def _check_signature(name, op, flat, layout, attrs, sig, full):
    pieces = []
    for x, s in zip(flat, sig.inputs):
        x = np.asarray(x)
        if s is B:
            pieces.append([x] * _RANKS)
        elif s is P:
            if x.dtype == np.bool_:
                return False
            part = (np.ones_like(x) if x.dtype.kind in "iu" else np.full_like(x, 0.25))
            pieces.append([x - part, part])
        else:
            if x.ndim <= s.axis or x.shape[s.axis] % _RANKS:
                return False
            pieces.append(np.split(x, _RANKS, axis=s.axis))
    for o, s in zip(full, sig.outputs):
        if s is not B and s is not P and o.shape[s.axis] % _RANKS:
            return False
    local = [_run(op, [p[r] for p in pieces], layout, _physical_attrs(name, attrs, sig.outputs))
             for r in range(_RANKS)]
    for k, (o, s) in enumerate(zip(full, sig.outputs)):
        outs = [local[r][k] for r in range(_RANKS)]
        if s is B:
            got = outs[0]
            np.testing.assert_allclose(outs[1], got)
        elif s is P:
            got = outs[0] + outs[1]
        else:
            got = np.concatenate(outs, axis=s.axis)
        np.testing.assert_allclose(got.astype(np.float64), o.astype(np.float64), rtol=1e-6,
                                   atol=1e-6, err_msg=f"{name} {attrs} signature {sig}")
    return True


@pytest.mark.parametrize("name", _SHAPE_OPS)
def test_sbp_signatures_hold_on_two_ranks(name):
    load_builtin()
    op = get_op(name)
    checked = 0
    for s in get_samples(name).samples:
        flat, layout = _flat(s.inputs)
        full = _run(op, flat, layout, s.attrs)
        sigs = signatures_of(op, [np.shape(a) for a in flat], len(full),
                             op.normalize_attrs(dict(s.attrs)))
        for sig in sigs:
            assert len(sig.inputs) == len(flat) and len(sig.outputs) == len(full), sig
            checked += _check_signature(name, op, flat, layout, s.attrs, sig, full)
    assert checked > len(get_samples(name).samples), f"too few signatures checked for {name}"
