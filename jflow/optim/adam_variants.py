"""``optim.Adamax``, ``optim.NAdam`` and ``optim.RAdam``: Adam's moments with a different
denominator (infinity norm), Nesterov momentum, or a variance rectification.

Everything that depends on the step count is computed with ops on the 0-d ``step`` tensor
(RAdam's ``rho_t > 5`` branch is a ``where``), so one compiled step serves every step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _C
from ..creation import ones, zeros, zeros_like
from ..dtypes import float64
from ..tensor import Tensor
from .adam import _check
from .optimizer import Optimizer, scalar_dtype

__all__ = ["Adamax", "NAdam", "RAdam"]


def _f64(step: Tensor) -> Tensor:
    """The step count as float64: step-dependent scalars (bias corrections, RAdam's
    ``rho_t = rho_inf - ...`` with ``rho_inf`` ≈ 2000) cancel badly in float32, and PyTorch
    computes them as Python floats."""
    return step.to(float64)


class Adamax(Optimizer):
    """PyTorch's Adamax::

        g = grad + weight_decay * p;  t += 1
        m = lerp(m, g, 1 - b1);  u = max(b2 u, |g| + eps)
        p -= lr / (1 - b1^t) * m / u
    """

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, foreach: Any = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize))

    def _initial_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": zeros((), dtype=scalar_dtype(p)), "exp_avg": zeros_like(p),
                "exp_inf": zeros_like(p)}

    def _update(self, p: Tensor, g: Tensor, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        lr, (b1, b2), eps, wd = (group["lr"], group["betas"], group["eps"],
                                 group["weight_decay"])
        step, m, u = state["step"], state["exp_avg"], state["exp_inf"]
        step.add_(1)
        g = self._weight_decay(p, g, lr, wd)
        m.lerp_(g, 1 - b1)
        u.copy_(_C.maximum(u * b2, g.abs() + eps))
        self._descend_(p, m / u, lr / (1 - b1 ** _f64(step)).to(p.dtype))


class NAdam(Optimizer):
    """PyTorch's NAdam (Dozat 2016, with the momentum schedule ``momentum_decay``)::

        t += 1;  weight decay (L2, or decoupled: p *= 1 - lr wd)
        mu_t = b1 (1 - 0.5 · 0.96^(t · momentum_decay));  mu_product *= mu_t
        m = lerp(m, g, 1 - b1);  v = b2 v + (1 - b2) g²;  d = sqrt(v / (1 - b2^t)) + eps
        p -= lr (1 - mu_t) / (1 - mu_product) · g / d
        p -= lr mu_{t+1} / (1 - mu_product · mu_{t+1}) · m / d
    """

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: Any = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize))

    def _initial_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        d = scalar_dtype(p)
        return {"step": zeros((), dtype=d), "mu_product": ones((), dtype=d),
                "exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)}

    def _update(self, p: Tensor, g: Tensor, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        lr, (b1, b2), eps, wd = (group["lr"], group["betas"], group["eps"],
                                 group["weight_decay"])
        md, decoupled = group["momentum_decay"], group["decoupled_weight_decay"]
        step, mu_prod = state["step"], state["mu_product"]
        m, v = state["exp_avg"], state["exp_avg_sq"]
        step.add_(1)
        g = self._weight_decay(p, g, lr, wd, decoupled)
        t = _f64(step)
        mu = b1 * (1.0 - 0.5 * 0.96 ** (t * md))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * md))
        mu_prod.mul_(mu.to(mu_prod.dtype))
        m.lerp_(g, 1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = (v / (1 - b2 ** t).to(p.dtype)).sqrt() + eps
        mp = mu_prod.to(float64)
        c1 = ((1.0 - mu) / (1.0 - mp)).to(p.dtype)
        c2 = (mu_next / (1.0 - mp * mu_next)).to(p.dtype)
        p.sub_(g / denom * (lr * c1))
        p.sub_(m / denom * (lr * c2))


class RAdam(Optimizer):
    """PyTorch's RAdam (Liu et al. 2019)::

        t += 1;  weight decay (L2, or decoupled: p *= 1 - lr wd)
        m, v as Adam;  rho_inf = 2 / (1 - b2) - 1;  rho_t = rho_inf - 2 t b2^t / (1 - b2^t)
        rho_t > 5: p -= lr m / (1 - b1^t) · r_t · sqrt(1 - b2^t) / (sqrt(v) + eps)
        else:      p -= lr m / (1 - b1^t)

    The branch is a ``where`` on the step tensor (the rectification term is clamped at 0
    so the unused branch stays finite).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, decoupled_weight_decay: bool = False, *,
                 foreach: Any = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def _initial_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": zeros((), dtype=scalar_dtype(p)), "exp_avg": zeros_like(p),
                "exp_avg_sq": zeros_like(p)}

    def _update(self, p: Tensor, g: Tensor, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        lr, (b1, b2), eps, wd = (group["lr"], group["betas"], group["eps"],
                                 group["weight_decay"])
        decoupled = group["decoupled_weight_decay"]
        rho_inf = 2 / (1 - b2) - 1
        step, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
        step.add_(1)
        g = self._weight_decay(p, g, lr, wd, decoupled)
        m.lerp_(g, 1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        t = _f64(step)
        bc2 = 1 - b2 ** t
        rho_t = rho_inf - 2 * t * (b2 ** t) / bc2
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                / ((rho_inf - 4) * (rho_inf - 2) * rho_t)).clamp(min=0).sqrt()
        adaptive = bc2.sqrt().to(p.dtype) / (v.sqrt() + eps)
        update = _C.where(rho_t > 5.0, adaptive * rect.to(p.dtype),
                          ones((), dtype=p.dtype))
        self._descend_(p, m / (1 - b1 ** t).to(p.dtype) * update, lr)


