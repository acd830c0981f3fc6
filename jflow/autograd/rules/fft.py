"""Backward rules of the DFT ops (``jflow/ops/fft.py``).

Each rule is the plain transpose of its op (JAX's convention, docs/autograd.md "Complex
numbers"; the engine conjugates where gradients meet the user, which gives PyTorch's
``fft_*_backward`` results there). With ``g`` the incoming gradient and ``s`` the op's scale:

* ``fft_c2c``: the DFT matrix is symmetric, so the transpose is the same transform, same
  direction and normalization (PyTorch's conjugate convention turns it into the other
  direction).
* ``fft_r2c``: ``real`` of the forward c2c of ``g`` zero-padded back to the signal length on
  ``dim[-1]`` (onesided), over all of ``dim``.
* ``fft_c2r``: ``y = Re(sum_k w_k e^{+i..} x_k)`` with ``w_k`` = 2 for the points whose
  conjugate partner is implied, else 1; the transpose is ``w * conj(r2c(g))`` (onesided, same
  normalization): ATen's ``fft_c2r_backward`` with the doubled middle points, conjugated.
"""

from __future__ import annotations

import jax
import numpy as np

from ...tensor import _wrap
from ..rule import register_backward
from ._util import O


@register_backward("fft_c2c")
def _c2c(ctx, g):
    return O.fft_c2c(g, dim=ctx.dim, normalization=ctx.normalization, forward=ctx.forward)


@register_backward("fft_r2c")
def _r2c(ctx, g):
    shape = tuple(ctx.input_shapes[0])
    nd = len(shape)
    dims = tuple(d % nd for d in ctx.dim)
    if ctx.onesided:
        last = dims[-1]
        missing = shape[last] - int(g._meta.shape[last])
        if missing > 0:
            g = _pad_end(g, last, missing)
    full = O.fft_c2c(g, dim=dims, normalization=ctx.normalization, forward=True)
    return O.real(full)


@register_backward("fft_c2r")
def _c2r(ctx, g):
    nd = g._meta.ndim
    dims = tuple(d % nd for d in ctx.dim)
    last = dims[-1]
    n = ctx.last_dim_size
    half = O.fft_r2c(g, dim=dims, normalization=ctx.normalization, onesided=True)
    gx = O.conj(half)
    m = n // 2 + 1
    doubled = n - m  # points 1 .. n - m stand for themselves and their conjugate partner
    if doubled > 0:
        w = np.ones(m, np.float64)
        w[1:1 + doubled] = 2.0
        wshape = [1] * nd
        wshape[last] = m
        gx = O.mul(gx, _wrap(jax.device_put(w.reshape(wshape).astype(gx._meta.dtype))))
    return gx


def _pad_end(g, axis: int, count: int):
    """``g`` with ``count`` zeros appended on ``axis``."""
    shape = list(g._meta.shape)
    shape[axis] = count
    zeros = O.full(shape=tuple(shape), value=0.0, dtype=g._meta.dtype)
    return O.cat([g, zeros], dim=axis)

