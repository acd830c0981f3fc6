"""``optim.ASGD`` (averaged SGD) and ``optim.Rprop`` (resilient backpropagation): the two
optimizers whose per-parameter state includes step sizes rather than moments."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _C
from ..creation import full_like, ones, ones_like, zeros, zeros_like
from ..dtypes import float64
from ..tensor import Tensor
from .optimizer import Optimizer, scalar_dtype

__all__ = ["ASGD", "Rprop"]


def _filled(like: Tensor, lr: Any) -> Tensor:
    """``like`` filled with the learning rate: a float, or (state created inside a compiled
    step, where lr is an input) a 0-d tensor, added with an op so the trace stays pure."""
    return zeros_like(like) + lr if isinstance(lr, Tensor) else full_like(like, lr)


class ASGD(Optimizer):
    """PyTorch's ASGD::

        g = grad + weight_decay * p;  t += 1
        p = p (1 - lambd eta) - eta g
        ax = p if mu == 1 else ax + mu (p - ax)
        eta = lr / (1 + lambd lr t)^alpha;  mu = 1 / max(1, t - t0)

    ``eta`` and ``mu`` are 0-d tensors in the state (as PyTorch), so compiled steps carry
    them. The first ``eta`` is the group's lr when the state is created.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0.0,
                 foreach: Any = None, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, maximize=maximize))

    def _initial_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        d = scalar_dtype(p)
        return {"step": zeros((), dtype=d), "eta": _filled(zeros((), dtype=d), group["lr"]),
                "mu": ones((), dtype=d), "ax": zeros_like(p)}

    def _update(self, p: Tensor, g: Tensor, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
        wd = group["weight_decay"]
        step, eta, mu, ax = state["step"], state["eta"], state["mu"], state["ax"]
        step.add_(1)
        g = self._weight_decay(p, g, lr, wd)
        p.mul_(1 - lambd * eta)
        p.sub_(g * eta)
        # (PyTorch copies p when mu == 1: ax + 1 · (p - ax) may differ from p)
        ax.copy_(_C.where(mu == 1, p, ax + (p - ax) * mu))
        # (in float64, as PyTorch's Python floats: t0 defaults to 1e6)
        t = step.to(float64)
        eta.copy_((lr / (1 + lambd * lr * t) ** alpha).to(eta.dtype))
        mu.copy_((1 / _C.clamp(t - t0, min=1)).to(mu.dtype))


class Rprop(Optimizer):
    """PyTorch's Rprop::

        s = sign(g · prev);  f = etaplus (s > 0) | etaminus (s < 0) | 1
        step_size = clamp(step_size · f, *step_sizes);  g = 0 where s < 0
        p -= sign(g) · step_size;  prev = g

    ``step_size`` starts at the group's lr; lr is not used after that (as PyTorch).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: Any = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                                      maximize=maximize))

    def _initial_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": zeros((), dtype=scalar_dtype(p)), "prev": zeros_like(p),
                "step_size": _filled(p, group["lr"])}

    def _update(self, p: Tensor, g: Tensor, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        (etaminus, etaplus), (lo, hi) = group["etas"], group["step_sizes"]
        prev, step_size = state["prev"], state["step_size"]
        state["step"].add_(1)
        s = (g * prev).sign()
        # (factors built in the parameter's dtype: a float32 1.2 would not
        # equal PyTorch's float64 one)
        f = _C.where(s > 0, full_like(p, etaplus),
                     _C.where(s < 0, full_like(p, etaminus), ones_like(p)))
        step_size.copy_(_C.clamp(step_size * f, lo, hi))
        g = _C.where(s < 0, zeros_like(g), g)
        p.sub_(g.sign() * step_size)
        prev.copy_(g)
