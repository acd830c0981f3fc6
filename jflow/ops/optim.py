"""Optimizer update ops: one op per parameter update, so an eager ``optim.Adam.step()`` is one
dispatch per parameter instead of ~16 (and a compiled step gets the same fused math).

``adam_update(param, grad, exp_avg, exp_avg_sq, step, lr, *, beta1, beta2, eps, weight_decay,
decoupled) -> (param, exp_avg, exp_avg_sq)`` is exactly the update ``optim.Adam`` /
``optim.AdamW`` wrote op by op (PyTorch's, non-amsgrad), ``step`` being the count including
this update (the optimizer increments it first: a scalar output would not share the
parameter's SBP)::

    decoupled: param *= 1 - lr * weight_decay      else: grad += weight_decay * param
    exp_avg = beta1 * exp_avg + (1 - beta1) * grad
    exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad²
    param -= lr / (1 - beta1^step) * exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps)

``step`` and ``lr`` are 0-d tensors (the step count is state; the lr is an input of compiled
steps, so schedules don't recompile). Updates carry no gradient (NoGrad).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, S, Signature
from .infer import FLOAT, check_dtype, desc
from .primitive import define_op
from .registry import Attr


def _adam_infer(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, step: Any, lr: Any,
                **attrs: Any) -> Any:
    check_dtype(param, FLOAT, "param")
    for name, t in (("grad", grad), ("exp_avg", exp_avg), ("exp_avg_sq", exp_avg_sq)):
        if tuple(t.shape) != tuple(param.shape) or np.dtype(t.dtype) != np.dtype(param.dtype):
            raise ValueError(f"{name} must have the param's shape {tuple(param.shape)} and dtype "
                             f"{np.dtype(param.dtype).name}, got {tuple(t.shape)} "
                             f"{np.dtype(t.dtype).name}")
    for name, t in (("step", step), ("lr", lr)):
        if tuple(t.shape) != ():
            raise ValueError(f"{name} must be a 0-d tensor, got shape {tuple(t.shape)}")
        check_dtype(t, FLOAT, name)
    return (desc(param.shape, param.dtype),) * 3


def _adam_update(p: Any, g: Any, m: Any, v: Any, step: Any, lr: Any, beta1: float,
                 beta2: float, eps: float, weight_decay: float, decoupled: bool) -> Any:
    dt = p.dtype
    # the scalars (bias corrections, step size) in the step count's dtype — float32 for a
    # bfloat16 / float16 parameter (its beta2 = 0.999 is 1.0 in bfloat16: the correction
    # would be 0 and nothing would update) — applied to the tensors in their own dtype, as
    # PyTorch applies its Python-float corrections
    w = jnp.promote_types(step.dtype, dt)
    lr_w = lr.astype(w)
    if weight_decay != 0:
        if decoupled:
            p = p * (1 - lr_w * weight_decay).astype(dt)
        else:
            g = g + p * weight_decay
    m = m * beta1 + g * (1 - beta1)
    v = v * beta2 + g * g * (1 - beta2)
    s = step.astype(w)
    bc1 = 1 - beta1 ** s
    bc2_sqrt = jnp.sqrt(1 - beta2 ** s).astype(dt)
    return p - m / (jnp.sqrt(v) / bc2_sqrt + eps) * (lr_w / bc1).astype(dt), m, v


def _adam_sbp(in_shapes: Any, n_out: int = 3, **_: Any) -> list[Signature]:
    # elementwise over the parameter's axes; the scalars (step, lr) stay broadcast
    nd = len(in_shapes[0])
    sigs = [Signature((S(a),) * 4 + (B, B), (S(a),) * 3) for a in range(nd)]
    return sigs + [Signature((B,) * 6, (B,) * 3)]


define_op("adam_update", inputs=["param", "grad", "exp_avg", "exp_avg_sq", "step", "lr"],
          outputs=["param_out", "exp_avg_out", "exp_avg_sq_out"],
          # static: hyperparameters (one value per optimizer); weight_decay is Python control flow
          attrs=[Attr("beta1", "double", 0.9, static=True),
                 Attr("beta2", "double", 0.999, static=True),
                 Attr("eps", "double", 1e-8, static=True),
                 Attr("weight_decay", "double", 0.0, static=True),
                 Attr("decoupled", "bool", False)],
          infer=_adam_infer, sbp=_adam_sbp, traits=("NoSideEffect", "NoGrad"),
          doc="one Adam/AdamW update of a parameter and its moments (optim.Adam's math)")
register_kernel("adam_update", _adam_update, name="adam_update_xla")
