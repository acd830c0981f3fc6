"""Sampling and interpolation against PyTorch on random inputs: ``grid_sample`` (4-d and 5-d,
every mode and padding mode, both ``align_corners``; gradients for the input and the grid),
``affine_grid`` (2-d and 3-d maps; gradient for theta), ``interpolate`` with 'bicubic', 'area'
and ``antialias=True`` (random sizes and scale factors; input gradients), the existing modes,
and error messages. Op-level checks are the checker's (jflow/testing/op_samples/upsample.py).
"""

import numpy as np
import pytest
from _pairwise import pairwise

import jflow as flow
import jflow.nn.functional as F
from jflow import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional

_rng = np.random.default_rng(11)


def _x(*shape, lo=None, hi=None):
    if lo is not None:
        return _rng.uniform(lo, hi, shape).astype(np.float32)
    return _rng.standard_normal(shape).astype(np.float32)


def _compare(fn_j, fn_t, inputs, kw, rtol=1e-4, atol=1e-5, grads=None):
    """Forward and the gradients (through ``.backward()`` of a random cotangent) of every
    input in ``inputs`` (or those whose positions ``grads`` lists) against PyTorch."""
    js = [flow.tensor(a, requires_grad=True) for a in inputs]
    ts = [torch.tensor(a, requires_grad=True) for a in inputs]
    yj, yt = fn_j(*js, **kw), fn_t(*ts, **kw)
    np.testing.assert_allclose(yj.detach().numpy(), yt.detach().numpy(), rtol=rtol, atol=atol)
    g = _x(*yt.shape)
    yj.backward(flow.tensor(g))
    yt.backward(torch.tensor(g))
    for i in grads if grads is not None else range(len(inputs)):
        np.testing.assert_allclose(js[i].grad.numpy(), ts[i].grad.numpy(), rtol=rtol,
                                   atol=10 * atol, err_msg=f"gradient of input {i}")


# -- grid_sample -----------------------------------------------------------------------------

_X4, _G4 = (2, 3, 5, 6), (2, 4, 7, 2)


# pairwise (tests/_pairwise.py): every mode with every padding mode, each of them with both
# align_corners (each triple a forward and a backward program of its own)
@pytest.mark.parametrize("mode,padding_mode,align", pairwise(
    ["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [False, True]))
def test_grid_sample_4d(mode, padding_mode, align):
    # grid values beyond [-1, 1] exercise the padding modes
    x, grid = _x(*_X4), _x(*_G4, lo=-1.4, hi=1.4)
    kw = {"mode": mode, "padding_mode": padding_mode, "align_corners": align}
    _compare(F.grid_sample, TF.grid_sample, [x, grid], kw)


def test_grid_sample_nearest_grid_gradient_is_zero():
    x, grid = _x(*_X4), _x(*_G4, lo=-1, hi=1)
    xj, gj = flow.tensor(x, requires_grad=True), flow.tensor(grid, requires_grad=True)
    F.grid_sample(xj, gj, mode="nearest").sum().backward()
    np.testing.assert_array_equal(gj.grad.numpy(), np.zeros_like(grid))


@pytest.mark.parametrize("mode,padding_mode,align", pairwise(
    ["bilinear", "nearest"], ["zeros", "border", "reflection"], [False, True]))
def test_grid_sample_5d(mode, padding_mode, align):
    x, grid = _x(2, 2, 3, 4, 5), _x(2, 2, 3, 4, 3, lo=-1.3, hi=1.3)
    kw = {"mode": mode, "padding_mode": padding_mode, "align_corners": align}
    _compare(F.grid_sample, TF.grid_sample, [x, grid], kw)


def test_grid_sample_default_and_identity_grid():
    x = _x(*_X4)
    theta = np.tile(np.array([[1, 0, 0], [0, 1, 0]], np.float32), (2, 1, 1))
    for align in (False, True):
        grid = F.affine_grid(flow.tensor(theta), list(_X4), align_corners=align)
        y = F.grid_sample(flow.tensor(x), grid, align_corners=align)
        np.testing.assert_allclose(y.numpy(), x, rtol=1e-5, atol=1e-5)
    grid = _x(*_G4, lo=-1, hi=1)
    np.testing.assert_allclose(F.grid_sample(flow.tensor(x), flow.tensor(grid)).numpy(),
                               TF.grid_sample(torch.tensor(x), torch.tensor(grid),
                                              align_corners=False).numpy(), rtol=1e-4, atol=1e-5)


# -- affine_grid -----------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:Since version 1.3.0, affine_grid")
@pytest.mark.parametrize("size", [[2, 3, 4, 5], [2, 1, 3, 1], [2, 3, 3, 4, 5], [2, 1, 1, 4, 2]])
def test_affine_grid(size):
    nd = len(size) - 2
    for align in (False, True):
        theta = _x(size[0], nd, nd + 1)
        _compare(F.affine_grid, TF.affine_grid, [theta], {"size": size, "align_corners": align})


def test_affine_grid_then_grid_sample_theta_gradient():
    """The spatial-transformer pipeline: gradients reach theta through both functions."""
    theta = (np.tile(np.array([[1, 0, 0], [0, 1, 0]], np.float32), (2, 1, 1))
             + 0.3 * _x(2, 2, 3))
    x = _x(*_X4)
    for mode in ("bilinear", "bicubic"):
        def run(lib, th, xx, mode=mode):
            fn = F if lib == "j" else TF
            grid = fn.affine_grid(th, list(_X4), align_corners=False)
            return fn.grid_sample(xx, grid, mode=mode, padding_mode="border",
                                  align_corners=False)
        _compare(lambda th, xx: run("j", th, xx), lambda th, xx: run("t", th, xx),
                 [theta, x], {})


# -- interpolate -----------------------------------------------------------------------------

def _random_resize(rng, nd, in_sizes, antialias, use_size=None):
    """A random ``size`` or ``scale_factor`` (output sizes >= 1; ``use_size`` picks which,
    else chance does). With antialias: outputs >= 2, where PyTorch's kernel mis-handles an
    output width of 1, and no scale factor that leaves a size unchanged, where PyTorch's
    backward is not its forward's gradient (see
    ``test_interpolate_antialias_unresized_axis_is_copied``)."""
    low = 2 if antialias else 1
    if rng.integers(2) if use_size is None else use_size:
        return {"size": [int(v) for v in rng.integers(low, 11, nd)]}
    while True:
        sf = [float(v) for v in np.round(rng.uniform(0.3, 2.6, nd), 2)]
        out = [np.floor(n * s) for n, s in zip(in_sizes, sf)]
        if all(o >= low for o in out) and not (antialias and any(
                o == n for o, n in zip(out, in_sizes))):
            return {"scale_factor": sf if nd > 1 else sf[0]}


@pytest.mark.parametrize("mode,antialias", [("bicubic", False), ("area", False),
                                            ("bilinear", True), ("bicubic", True)])
def test_interpolate_random(mode, antialias):
    # four trials (each a forward and a backward program of its own, for new random sizes):
    # a size and a scale factor, each with both align_corners ('area': both ranks)
    rng = np.random.default_rng(len(mode) + 10 * antialias)
    for trial in range(4):
        nd = 1 if mode == "area" and trial % 2 else 2
        in_sizes = [int(v) for v in rng.integers(2, 9, nd)]
        kw = _random_resize(rng, nd, in_sizes, antialias, use_size=trial < 2)
        kw["mode"] = mode
        if antialias:
            kw["antialias"] = True
        if mode != "area":
            kw["align_corners"] = bool(trial % 2)
        _compare(F.interpolate, TF.interpolate, [_x(2, 2, *in_sizes)], kw)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "linear"])
def test_interpolate_existing_modes_random(mode):
    # a size and a scale factor (with both align_corners for the linear modes, where a
    # scale factor is used as given without align_corners and ignored with it)
    rng = np.random.default_rng(len(mode))
    nd = 1 if mode == "linear" else 2
    trials = 4 if mode in ("bilinear", "linear") else 2
    for trial in range(trials):
        in_sizes = [int(v) for v in rng.integers(2, 9, nd)]
        kw = {**_random_resize(rng, nd, in_sizes, False, use_size=trial < trials // 2),
              "mode": mode}
        if mode in ("bilinear", "linear"):
            kw["align_corners"] = bool(trial % 2)
        _compare(F.interpolate, TF.interpolate, [_x(2, 2, *in_sizes)], kw)


def test_interpolate_antialias_unresized_axis_is_copied():
    """An axis whose size a scale factor leaves unchanged is copied, as PyTorch's forward.
    PyTorch's backward resamples that axis with the scale factor instead, so its gradient is
    not its forward's; jflow's is: the transposed Jacobian of PyTorch's (linear) forward."""
    x = _x(1, 1, 4, 6)
    for mode in ("bilinear", "bicubic"):
        kw = {"scale_factor": [1.1, 0.5], "mode": mode, "antialias": True}
        xj = flow.tensor(x, requires_grad=True)
        yj = F.interpolate(xj, **kw)
        np.testing.assert_allclose(yj.detach().numpy(),
                                   TF.interpolate(torch.tensor(x), **kw).numpy(),
                                   rtol=1e-5, atol=1e-6)
        basis = torch.eye(x.size, dtype=torch.float64).reshape((x.size, 1) + x.shape[2:])
        jac = TF.interpolate(basis, **kw).reshape(x.size, -1).numpy()  # (inputs, outputs)
        g = _x(*yj.shape)
        yj.backward(flow.tensor(g))
        np.testing.assert_allclose(xj.grad.numpy().reshape(-1), jac @ g.reshape(-1),
                                   rtol=1e-5, atol=1e-5)


def test_upsample_module_bicubic():
    x = _x(1, 2, 4, 5)
    m, mt = nn.Upsample(scale_factor=2, mode="bicubic"), torch.nn.Upsample(scale_factor=2,
                                                                           mode="bicubic")
    np.testing.assert_allclose(m(flow.tensor(x)).numpy(), mt(torch.tensor(x)).numpy(),
                               rtol=1e-4, atol=1e-5)


# -- errors ----------------------------------------------------------------------------------

def test_grid_sample_errors():
    x, grid = flow.tensor(_x(*_X4)), flow.tensor(_x(*_G4))
    with pytest.raises(ValueError, match=r"grid_sample\(\): expected mode to be one of"):
        F.grid_sample(x, grid, mode="linear")
    with pytest.raises(ValueError, match=r"grid_sample\(\): expected padding_mode"):
        F.grid_sample(x, grid, padding_mode="circular")
    with pytest.raises(ValueError, match=r"grid_sample\(\): expected a 4-d or 5-d input"):
        F.grid_sample(flow.tensor(_x(2, 3, 5)), flow.tensor(_x(2, 4, 1)))
    with pytest.raises(ValueError, match=r"grid_sample\(\): expected a 4-d or 5-d input"):
        F.grid_sample(x, flow.tensor(_x(2, 4, 2)))
    with pytest.raises(ValueError, match=r"grid_sample\(\): expected grid to have size 2"):
        F.grid_sample(x, flow.tensor(_x(2, 4, 7, 3)))
    with pytest.raises(ValueError, match=r"grid_sample\(\): expected grid and input to have "
                                         r"the same batch size"):
        F.grid_sample(x, flow.tensor(_x(3, 4, 7, 2)))
    with pytest.raises(ValueError, match=r"grid_sample\(\): mode 'bicubic' only supports"):
        F.grid_sample(flow.tensor(_x(1, 1, 2, 2, 2)), flow.tensor(_x(1, 1, 1, 1, 3)),
                      mode="bicubic")
    with pytest.raises(TypeError, match=r"grid_sample\(\): expected floating point input"):
        F.grid_sample(x, flow.tensor(_x(*_G4).astype(np.float64)))


def test_affine_grid_errors():
    theta = flow.tensor(_x(2, 2, 3))
    with pytest.raises(ValueError, match=r"affine_grid\(\): expected theta of shape \[2, 2, 3\]"):
        F.affine_grid(flow.tensor(_x(2, 3, 3)), [2, 3, 4, 5])
    with pytest.raises(ValueError, match=r"affine_grid\(\): expected theta of shape \[2, 3, 4\]"):
        F.affine_grid(theta, [2, 3, 4, 5, 6])
    with pytest.raises(ValueError, match=r"affine_grid\(\): size must have 4"):
        F.affine_grid(theta, [2, 3, 4])
    with pytest.raises(TypeError, match=r"affine_grid\(\): expected theta to have a floating"):
        F.affine_grid(flow.tensor(np.ones((2, 2, 3), np.int64)), [2, 3, 4, 5])


def test_interpolate_errors():
    x = flow.tensor(_x(1, 2, 4, 5))
    with pytest.raises(ValueError, match=r"interpolate\(\): mode must be one of"):
        F.interpolate(x, size=[3, 3], mode="cubic")
    with pytest.raises(NotImplementedError, match=r"interpolate\(\): mode 'bicubic' is not "
                                                  r"supported for a 3-d input"):
        F.interpolate(flow.tensor(_x(1, 2, 4)), size=3, mode="bicubic")
    with pytest.raises(ValueError, match=r"interpolate\(\): anti-alias option is restricted"):
        F.interpolate(x, size=[3, 3], mode="nearest", antialias=True)
    with pytest.raises(ValueError, match=r"interpolate\(\): align_corners option can only be "
                                         r"set"):
        F.interpolate(x, size=[3, 3], mode="area", align_corners=True)
