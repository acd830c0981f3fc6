"""torch.nn.functional.grouped_mm (``flow.nn.functional.grouped_mm``, op ``grouped_mm``).

Values against a NumPy loop over the groups (always) and against PyTorch 2.13's CPU kernel
(when torch is installed), gradients against PyTorch's autograd, the errors PyTorch raises,
jax.jit with traced offs (no host read), vmap with any operands batched, and the mock_torch
mapping. Op-level checks (inference, jit, vmap, finite-difference gradients, SBP) are the
checker's (jflow/testing/op_samples/matmul.py). Shapes are shared between tests so the test
compiles few programs; K and N are multiples of 4, as PyTorch's CPU kernel wants 16-byte
strides.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jflow as flow
from jflow.nn import functional as F
from jflow.tensor import _wrap

try:
    import torch
except ImportError:  # pragma: no cover - the torch comparisons are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

_rng = np.random.default_rng(23)


def _f(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def _offs(*ends):
    return np.array(ends, np.int32)


# (mat_a, mat_b, offs) per layout; the offs of the 2-D layouts have an empty group and end
# before the ragged size (S = 8), so rows / columns past the last end are exercised
E, S, K, N, M = 3, 8, 4, 8, 4
OFFS = _offs(2, 2, 6)
CASES = {
    "2d_3d": (_f(S, K), _f(E, K, N), OFFS),       # (S, K) x (E, K, N) -> (S, N)
    "3d_2d": (_f(E, M, K), _f(K, S), OFFS),       # (E, M, K) x (K, S) -> (M, S)
    "2d_2d": (_f(M, S), _f(S, N), OFFS),          # (M, S) x (S, N) -> (E, M, N)
    "3d_3d": (_f(E, M, K), _f(E, K, N), None),    # batched
}


def _bounds(offs, ragged):
    """PyTorch's groups for increasing ends; jflow's rule (clip, running max) otherwise."""
    end, out = 0, []
    for o in np.asarray(offs).tolist():
        start, end = end, max(end, min(max(o, 0), ragged))
        out.append((start, end))
    return out


def _ref(a, b, offs):
    """The NumPy reference: one float64 product per group; positions in no group are 0."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    if offs is None:
        return np.einsum("gmk,gkn->gmn", a, b)
    if a.ndim == 2 and b.ndim == 3:
        out = np.zeros((a.shape[0], b.shape[2]))
        for g, (lo, hi) in enumerate(_bounds(offs, a.shape[0])):
            out[lo:hi] = a[lo:hi] @ b[g]
    elif a.ndim == 3:
        out = np.zeros((a.shape[1], b.shape[1]))
        for g, (lo, hi) in enumerate(_bounds(offs, b.shape[1])):
            out[:, lo:hi] = a[g] @ b[:, lo:hi]
    else:
        out = np.zeros((len(offs), a.shape[0], b.shape[1]))
        for g, (lo, hi) in enumerate(_bounds(offs, a.shape[1])):
            out[g] = a[:, lo:hi] @ b[lo:hi]
    return out


def _call(a, b, offs, grad=False):
    ta, tb = flow.tensor(a), flow.tensor(b)
    if grad:
        ta.requires_grad_(), tb.requires_grad_()
    out = F.grouped_mm(ta, tb, offs=None if offs is None else flow.tensor(offs))
    return out, ta, tb


def _defined(name, out):
    """The part of a result PyTorch defines: rows (3-D 2-D: columns) up to the last end."""
    end = int(OFFS[-1])
    return out[:end] if name == "2d_3d" else out[:, :end] if name == "3d_2d" else out


# -- values ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(CASES))
def test_matches_numpy_reference(name):
    a, b, offs = CASES[name]
    out, _, _ = _call(a, b, offs)
    want = _ref(a, b, offs)
    assert tuple(out.shape) == want.shape and out.dtype == flow.float32
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("offs", [(2, 2, 6), (3, 1, 6), (2, 5, 20), (0, 0, 0), (8, 8, 8)],
                         ids=["empty group", "decreasing end", "end past S", "all empty",
                              "all in group 0"])
def test_offs_edge_cases(offs):
    # rows past the last end are zeros (PyTorch: unwritten memory); an end past S is clipped,
    # as PyTorch's slice clips it; a decreasing end gives an empty group
    a, b, _ = CASES["2d_3d"]
    out, _, _ = _call(a, b, _offs(*offs))
    np.testing.assert_allclose(out.numpy(), _ref(a, b, _offs(*offs)), rtol=1e-5, atol=1e-5)


def test_bfloat16_and_float16():
    a, b, offs = CASES["2d_3d"]
    want = _ref(a, b, offs)
    for dt, tol in ((flow.bfloat16, 5e-2), (flow.float16, 5e-3)):
        out = F.grouped_mm(flow.tensor(a).to(dt), flow.tensor(b).to(dt), offs=flow.tensor(offs))
        assert out.dtype == dt
        np.testing.assert_allclose(out.float().numpy(), want, rtol=tol, atol=tol * 8)


def test_reachable_names():
    assert flow.nn.functional.grouped_mm is flow._C.grouped_mm
    import jflow.mock_torch as mock
    with mock.enable():
        import torch as mocked
        assert mocked.nn.functional.grouped_mm is flow.nn.functional.grouped_mm


# -- PyTorch -----------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch_values_and_gradients(name):
    a, b, offs = CASES[name]
    out, ta, tb = _call(a, b, offs, grad=True)
    pa, pb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    pout = torch.nn.functional.grouped_mm(pa, pb, offs=None if offs is None
                                          else torch.tensor(offs))
    np.testing.assert_allclose(_defined(name, out.detach().numpy()),
                               _defined(name, pout.detach().numpy()), rtol=1e-5, atol=1e-5)
    # a loss on the defined part only (PyTorch's other entries are uninitialised memory)
    w = _f(*out.shape)
    (_defined(name, out) * flow.tensor(_defined(name, w))).sum().backward()
    (_defined(name, pout) * torch.tensor(_defined(name, w))).sum().backward()
    # PyTorch leaves the gradient entries in no group unwritten (uninitialised) too: they are
    # compared where defined, and jflow's are zeros
    for g, pg, axis in ((ta.grad, pa.grad, _GRAD_RAGGED[name][0]),
                        (tb.grad, pb.grad, _GRAD_RAGGED[name][1])):
        g, pg = g.numpy(), pg.numpy()
        if axis is not None:
            end = int(offs[-1])
            assert not np.take(g, range(end, g.shape[axis]), axis=axis).any()
            g, pg = np.take(g, range(end), axis=axis), np.take(pg, range(end), axis=axis)
        np.testing.assert_allclose(g, pg, rtol=1e-5, atol=1e-5)


#: the ragged axis of each gradient (mat_a's, mat_b's), None where it has none
_GRAD_RAGGED = {"2d_3d": (0, None), "3d_2d": (None, 1), "2d_2d": (1, 0), "3d_3d": (None, None)}


def _bad_calls():
    a, b, offs = CASES["2d_3d"]
    a3, b3 = CASES["3d_3d"][:2]
    return {
        "no offs for a 2-D operand": ((a, b), {}),
        "offs for 3-D 3-D": ((a3, b3), {"offs": OFFS}),
        "int64 offs": ((a, b), {"offs": offs.astype(np.int64)}),
        "2-D offs": ((a, b), {"offs": offs[None]}),
        "offs length": ((a, b), {"offs": offs[:2]}),
        "contraction": ((_f(S, K + 4), b), {"offs": offs}),
        "groups of 3-D 3-D": ((a3, b3[:2]), {}),
        "float64": ((a.astype(np.float64), b.astype(np.float64)), {"offs": offs}),
        "mixed dtypes": ((a, b.astype(np.float16)), {"offs": offs}),
        "1-D mat_a": ((a[0], b), {"offs": offs}),
        "4-D mat_a": ((a3[None], b3), {}),
        "bias": ((a, b), {"offs": offs, "bias": _f(N)}),
        "out_dtype": ((a, b), {"offs": offs, "out_dtype": "bfloat16"}),
    }


@pytest.mark.parametrize("case", list(_bad_calls()))
def test_errors_as_torch(case):
    (a, b), kw = _bad_calls()[case]

    def conv(v, lib):
        if isinstance(v, str):
            return getattr(lib, v)
        return v if v is None else (flow.tensor(v) if lib is flow else torch.tensor(v))

    with pytest.raises((TypeError, ValueError, NotImplementedError), match="grouped_mm"):
        F.grouped_mm(conv(a, flow), conv(b, flow), **{k: conv(v, flow) for k, v in kw.items()})
    if torch is not None:  # PyTorch refuses each of these calls too
        with pytest.raises(RuntimeError):
            torch.nn.functional.grouped_mm(conv(a, torch), conv(b, torch),
                                           **{k: conv(v, torch) for k, v in kw.items()})


def test_out_dtype_of_the_operands_is_accepted():
    a, b, offs = CASES["2d_3d"]
    out = F.grouped_mm(flow.tensor(a), flow.tensor(b), offs=flow.tensor(offs),
                       out_dtype=flow.float32)
    np.testing.assert_allclose(out.numpy(), _ref(a, b, offs), rtol=1e-5, atol=1e-5)


# -- tracing -----------------------------------------------------------------------------------

def test_jit_with_traced_offs_and_grad():
    # the group sizes come from offs on the device: offs is a traced argument here
    a, b, _ = CASES["2d_3d"]

    def f(xa, xb, xo):
        return F.grouped_mm(_wrap(xa), _wrap(xb), offs=_wrap(xo))._value

    jitted = jax.jit(f)
    for offs in (OFFS, _offs(1, 5, 8)):  # one executable, two offs
        np.testing.assert_allclose(np.asarray(jitted(a, b, offs)), _ref(a, b, offs),
                                   rtol=1e-5, atol=1e-5)
    ga = jax.jit(jax.grad(lambda xa: f(xa, b, OFFS).sum()))(a)
    out, ta, _ = _call(a, b, OFFS, grad=True)
    out.sum().backward()
    np.testing.assert_allclose(np.asarray(ga), ta.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("batched", [(True, True, True), (True, False, False),
                                     (False, True, False), (False, False, True)],
                         ids=["all", "mat_a", "mat_b", "offs"])
def test_vmap_any_operand_batched(batched):
    # JAX batches ragged_dot only with every operand batched: the kernel broadcasts the others
    a, b, _ = CASES["2d_3d"]
    offs2 = np.stack([OFFS, _offs(1, 5, 8)])
    args = [np.stack([x, x * 0.5]) if bt else x for x, bt in zip((a, b), batched[:2])]
    args.append(offs2 if batched[2] else OFFS)
    axes = tuple(0 if bt else None for bt in batched)
    got = jax.vmap(lambda xa, xb, xo: F.grouped_mm(_wrap(xa), _wrap(xb), offs=_wrap(xo))._value,
                   in_axes=axes)(*args)
    for i in range(2):
        one = [x[i] if bt else x for x, bt in zip(args, batched)]
        np.testing.assert_allclose(np.asarray(got[i]), _ref(*one), rtol=1e-5, atol=1e-5)
