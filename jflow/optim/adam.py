"""``optim.Adam`` / ``optim.AdamW`` (with optional AMSGrad)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .. import _C
from ..autograd import no_grad
from ..creation import zeros, zeros_like
from ..device import device_scalar
from ..dispatch import _WATCH, donating_executable
from ..lazy_mode import segment as _lazy
from ..lazy_mode.optimizer_step import donatable, lr_value
from ..ops import get as _get_op
from ..sharding.sbp import broadcast
from ..tensor import Tensor, _wrap
from .optimizer import Optimizer, assign_, scalar_dtype

_ADAM_OP = _get_op("adam_update")
_ADAM = _ADAM_OP.apply
#: adam_update's inputs (param, grad, exp_avg, exp_avg_sq, step, lr) it may donate
_DONATED = (0, 2, 3)

__all__ = ["Adam", "AdamW"]


def _check(lr: float, betas: tuple[float, float], eps: float, weight_decay: float) -> None:
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    """PyTorch's Adam (L2 weight decay added to the gradient)::

        g = grad + weight_decay * p;  t += 1
        m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g²;  (amsgrad: v̂ = max(v̂, v))
        p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)

    The step count is a 0-d tensor in the state (bias corrections are computed with ops), so
    a compiled step does not change with ``t``.
    """

    _decoupled = False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: Any = None) -> None:
        _check(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def _init_state(self, p: Tensor, amsgrad: bool) -> dict[str, Any]:
        state = {"step": zeros((), dtype=scalar_dtype(p)), "exp_avg": zeros_like(p),
                 "exp_avg_sq": zeros_like(p)}
        if amsgrad:
            state["max_exp_avg_sq"] = zeros_like(p)
        return state

    def _initial_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return self._init_state(p, group["amsgrad"])

    def _one_op_per_parameter(self) -> bool:
        # (AMSGrad updates with several ops)
        return not any(g["amsgrad"] for g in self.param_groups)

    def _fused_update(self, p: Tensor, g: Tensor, state: dict[str, Any], lr: Any, b1: float,
                      b2: float, eps: float, wd: float, lrs: dict[Any, Tensor]) -> None:
        """The whole update as one ``adam_update`` op (jflow/ops/optim.py); the results are
        written into the parameter and state tensors in place. ``lrs``: the group's learning
        rate as a tensor, by dtype (made once per step, not per parameter).

        Eagerly, when nothing else holds the parameter's and moments' arrays
        (``lazy_mode.optimizer_step.donatable``), the op's executable *donates* them: XLA
        writes the new values into the old buffers, as PyTorch updates in place. Without it
        every step allocates three new buffers per parameter while the old ones are live and
        frees the old ones after, and the C heap's layout drifts from step to step (the GPT
        benchmark's first three eager steps, warm, six fresh processes each: peak RSS growth
        62.8-73.9 MiB against 69.6-78.8, and 64.4-66.0 with the second trim after a compile,
        jflow/_malloc_trim.py: benchmarks/results_real_models_cpu.txt, session 26). The same
        op and values as ``op.apply``'s, the same step time."""
        step, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
        step.add_(1)
        if isinstance(lr, Tensor):
            lr_t = lr
        elif step._global is not None:
            lr_t = _scalar(lr, step)
        else:
            lr_t = lrs.get(step._meta.dtype)
            if lr_t is None:
                lr_t = lrs[step._meta.dtype] = _scalar(lr, step)
        vals = donatable((p, m, v), (g, step, lr_t))
        if vals is not None:
            exe = donating_executable(_ADAM_OP, _DONATED, beta1=b1, beta2=b2, eps=eps,
                                      weight_decay=wd, decoupled=self._decoupled)
            outs = exe(vals[0], vals[3], vals[1], vals[2], vals[4], vals[5])
            for t, new in zip((p, m, v), outs):
                t._value = new
                t._version += 1
            return
        outs = _ADAM(p, g, m, v, step, lr_t, beta1=b1, beta2=b2, eps=eps, weight_decay=wd,
                     decoupled=self._decoupled)
        for t, new in zip((p, m, v), outs):
            assign_(t, new)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
                wd, amsgrad = group["weight_decay"], group["amsgrad"]
                lrs: dict[Any, Tensor] = {}
                for p, g in self._grads(group):
                    state = self.state.get(p)
                    if not state:
                        state = self.state[p] = self._init_state(p, amsgrad)
                    if amsgrad and "max_exp_avg_sq" not in state:
                        state["max_exp_avg_sq"] = zeros_like(p)
                    if not amsgrad:
                        self._fused_update(p, g, state, lr, b1, b2, eps, wd, lrs)
                        continue
                    step = state["step"]
                    step.add_(1)
                    g = self._weight_decay(p, g, lr, wd, self._decoupled)
                    m, v = state["exp_avg"], state["exp_avg_sq"]
                    m.mul_(b1).add_(g, alpha=1 - b1)
                    v.mul_(b2).add_(g * g, alpha=1 - b2)
                    bc1 = 1 - b1 ** step
                    bc2_sqrt = _C.sqrt(1 - b2 ** step)
                    if amsgrad:
                        vmax = state["max_exp_avg_sq"]
                        vmax.copy_(_C.maximum(vmax, v))
                        v = vmax
                    denom = _C.sqrt(v) / bc2_sqrt + eps
                    p.sub_(m / denom * (lr / bc1))
        return loss


def _scalar(value: Any, like: Tensor) -> Tensor:
    """A 0-d tensor of ``value`` on ``like``'s placement (cached device scalars). Eagerly on
    one device, :func:`lr_value`'s cached arrays: a scheduler's new value every step costs
    no ``device_put`` of its own, which would wait for the queued computations (measured:
    +50% per step of a small MLP with Adam, benchmarks/optimizer_lr.py)."""
    if like._global is None and _WATCH[0] is None and _lazy.active() is None:
        return _wrap(lr_value(value, like._meta.dtype))
    t = _wrap(device_scalar(value, like._meta.dtype))
    if like._global is not None:
        t = t.to_global(like._global[0], [broadcast] * len(like._global[1]))
    return t


class AdamW(Adam):
    """Adam with decoupled weight decay: ``p *= 1 - lr * weight_decay`` before the Adam
    update (default ``weight_decay=1e-2``, as PyTorch)."""

    _decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: Any = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)

