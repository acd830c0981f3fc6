"""leaky_relu_yzh: a user op defined in Python, outside jflow (OneFlow's "add an op" seed).

Importing this module does, with public jflow APIs only, what a built-in op does:

1. define the op and its grad op: inputs, outputs, a typed attr, a check, the shape/dtype
   inference and the SBP signatures;
2. register kernels: an xla kernel for every floating dtype, and a second kernel for float64
   only at a higher priority (kernels are chosen per platform and dtype at lowering);
3. register the backward rules: the op's rule calls the grad op, and the grad op's own rule
   makes second derivatives and forward mode (jax.jvp) work too;
4. bind both into the functional layer from our own yaml (leaky_relu_yzh_api.yaml);
5. register op-checker samples, so ``jflow.testing.check_op`` can verify it all.
"""

from __future__ import annotations

import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jflow.autograd import register_backward
from jflow.functional import load_api
from jflow.kernels import OPTIMIZED, register_kernel
from jflow.ops import Attr, define_op
from jflow.sharding.sbp import B, P, S, Signature
from jflow.testing import ErrorSample, Sample, register_samples

# -- 1. the ops --------------------------------------------------------------------------


def _check(alpha: float) -> None:
    """OneFlow's SetCheckAttrFn: reject attr values the kernels cannot handle."""
    if not math.isfinite(alpha):
        raise ValueError(f"alpha must be a finite float, got {alpha}")


def _floating(arg: str, aval) -> None:
    if not jnp.issubdtype(aval.dtype, jnp.floating):
        raise TypeError(f"{arg} must have a floating dtype, got {np.dtype(aval.dtype).name}")


def _infer(x, alpha):
    """Logical shape and dtype (this is also the primitive's abstract eval)."""
    _floating("x", x)
    return jax.ShapeDtypeStruct(x.shape, x.dtype)


def _infer_grad(x, dy, alpha):
    _floating("x", x)
    if tuple(x.shape) != tuple(dy.shape) or x.dtype != dy.dtype:
        raise ValueError(f"dy must match x: x is {np.dtype(x.dtype).name}{list(x.shape)}, "
                         f"dy is {np.dtype(dy.dtype).name}{list(dy.shape)}")
    return jax.ShapeDtypeStruct(x.shape, x.dtype)


def _sbp(in_shapes, n_out, **attrs):
    """OneFlow's GetSbpFn: elementwise, so a split on any axis stays a split. (All-broadcast
    is always implied.) Not P -> P: leaky_relu is not linear."""
    (x_shape,) = in_shapes
    return [Signature((S(i),), (S(i),)) for i in range(len(x_shape))]


def _sbp_grad(in_shapes, n_out, **attrs):
    """dx is linear in dy: besides the splits, (x broadcast, dy partial) gives dx partial."""
    x_shape, _ = in_shapes
    sigs = [Signature((S(i), S(i)), (S(i),)) for i in range(len(x_shape))]
    sigs.append(Signature((B, P), (P,)))
    return sigs


LEAKY_RELU_YZH = define_op(
    "leaky_relu_yzh", inputs=["x"], outputs=["y"], attrs=[Attr("alpha", "float", 0.01)],
    traits=["NoSideEffect"], check=_check, infer=_infer, sbp=_sbp,
    doc="y = x if x > 0 else alpha * x")
LEAKY_RELU_YZH_GRAD = define_op(
    "leaky_relu_yzh_grad", inputs=["x", "dy"], outputs=["dx"],
    attrs=[Attr("alpha", "float", 0.01)], check=_check, infer=_infer_grad, sbp=_sbp_grad,
    doc="dx = dy if x > 0 else alpha * dy")

# -- 2. kernels ----------------------------------------------------------------------------
# Attrs arrive as Python values: cast alpha to x's dtype so float32 stays float32.


@register_kernel("leaky_relu_yzh", name="leaky_relu_yzh_xla")
def _forward(x, alpha):
    return jnp.where(x > 0, x, x * jnp.asarray(alpha, x.dtype))


@register_kernel("leaky_relu_yzh", name="leaky_relu_yzh_f64", priority=OPTIMIZED,
                 dtypes={"x": ["float64"], "y": ["float64"]})
def _forward_f64(x, alpha):
    """Chosen for float64 only (same math, another formulation): shows per-dtype kernels."""
    return x * jnp.where(x > 0, 1.0, alpha)


@register_kernel("leaky_relu_yzh_grad", name="leaky_relu_yzh_grad_xla")
def _backward_kernel(x, dy, alpha):
    return jnp.where(x > 0, dy, dy * jnp.asarray(alpha, dy.dtype))


# -- 4. functional binding (before the rules, which call the grad function) ------------------


def _leaky_relu_yzh_functor(x, alpha):
    return LEAKY_RELU_YZH.apply(x, alpha=alpha)


def _leaky_relu_yzh_grad_functor(x, dy, alpha):
    return LEAKY_RELU_YZH_GRAD.apply(x, dy, alpha=alpha)


F = load_api(Path(__file__).with_name("leaky_relu_yzh_api.yaml"),
             functors={"LeakyReluYZH": _leaky_relu_yzh_functor,
                       "LeakyReluYZHGrad": _leaky_relu_yzh_grad_functor})
#: the public function: ``leaky_relu_yzh(x, alpha=0.01)``
leaky_relu_yzh = F.leaky_relu_yzh

# -- 3. backward rules ----------------------------------------------------------------------


@register_backward("leaky_relu_yzh", save=["x"])
def _leaky_relu_yzh_backward(ctx, dy):
    """OneFlow's OpExprGradFunction: capture x, then dx = leaky_relu_yzh_grad(x, dy)."""
    (x,) = ctx.saved_tensors
    return F.leaky_relu_yzh_grad(x, dy, ctx.alpha)


@register_backward("leaky_relu_yzh_grad", save=["x"])
def _leaky_relu_yzh_grad_backward(ctx, ddx):
    """The grad op is linear in dy (with the same slope) and piecewise constant in x."""
    (x,) = ctx.saved_tensors
    return None, F.leaky_relu_yzh_grad(x, ddx, ctx.alpha)


# -- 5. checker samples ---------------------------------------------------------------------
# Values away from 0 (the kink), so finite differences are meaningful.
_X = np.array([[-1.5, -0.3, 0.4], [2.0, -0.7, 1.1]], np.float32)
_DY = np.array([[0.5, -1.0, 2.0], [0.25, 3.0, -0.5]], np.float32)


def _ref(x, alpha=0.01):
    return np.where(x > 0, x, alpha * x)


def _ref_grad(x, dy, alpha=0.01):
    return np.where(x > 0, dy, alpha * dy)


register_samples(
    "leaky_relu_yzh",
    [Sample([_X], {"alpha": 0.2}), Sample([_X.astype(np.float64)], {"alpha": 0.05}),
     Sample([_X.astype(np.float64)])],
    _ref,
    errors=[ErrorSample([_X], {"alpha": float("nan")}, ValueError, "alpha must be a finite"),
            ErrorSample([_X.astype(np.int32)], {}, TypeError, "floating dtype")])
register_samples(
    "leaky_relu_yzh_grad",
    [Sample([_X, _DY], {"alpha": 0.2}), Sample([_X.astype(np.float64), _DY.astype(np.float64)])],
    _ref_grad,
    errors=[ErrorSample([_X, _DY[:1]], {}, ValueError, "dy must match x")])
