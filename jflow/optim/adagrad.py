"""``optim.Adagrad`` and ``optim.Adadelta``: per-coordinate step sizes from accumulated
squared gradients (Adadelta also accumulates squared updates, so it needs no lr scale).

Step counts are 0-d tensors in the state (as Adam's), so a compiled step does not bake the
count into the executable; ``lr`` may be a 0-d tensor inside a compiled step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..creation import full_like, zeros, zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer, scalar_dtype

__all__ = ["Adagrad", "Adadelta"]


def _check_nonneg(**values: float) -> None:
    """PyTorch's constructor checks (``Invalid <name> value: <v>``)."""
    names = {"lr": "learning rate", "eps": "epsilon value"}
    for k, v in values.items():
        if v < 0.0:
            raise ValueError(f"Invalid {names.get(k, k + ' value')}: {v}")


class Adagrad(Optimizer):
    """PyTorch's Adagrad::

        g = grad + weight_decay * p;  t += 1
        clr = lr / (1 + (t - 1) * lr_decay)
        sum += g²;  p -= clr * g / (sqrt(sum) + eps)

    As PyTorch, the state (``step``, ``sum`` = ``initial_accumulator_value``) is created in
    the constructor, not lazily.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, foreach: Any = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: Any = None) -> None:
        _check_nonneg(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                      initial_accumulator_value=initial_accumulator_value, eps=eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      maximize=maximize))
        for g in self.param_groups:
            for p in g["params"]:
                self.state[p] = self._initial_state(p, g)

    def _initial_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        # (PyTorch reads the accumulator's start from the defaults, not the group)
        return {"step": zeros((), dtype=scalar_dtype(p)),
                "sum": full_like(p, self.defaults["initial_accumulator_value"])}

    def _update(self, p: Tensor, g: Tensor, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        lr, lr_decay, eps, wd = (group["lr"], group["lr_decay"], group["eps"],
                                 group["weight_decay"])
        step, acc = state["step"], state["sum"]
        step.add_(1)
        g = self._weight_decay(p, g, lr, wd)
        clr = lr / (1 + (step - 1) * lr_decay) if lr_decay != 0 else lr
        acc.addcmul_(g, g)
        self._descend_(p, g / (acc.sqrt() + eps), clr)


class Adadelta(Optimizer):
    """PyTorch's Adadelta::

        g = grad + weight_decay * p
        v = rho v + (1 - rho) g²
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho u + (1 - rho) delta²;  p -= lr * delta
    """

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0.0, foreach: Any = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_nonneg(lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))

    def _initial_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": zeros((), dtype=scalar_dtype(p)), "square_avg": zeros_like(p),
                "acc_delta": zeros_like(p)}

    def _update(self, p: Tensor, g: Tensor, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        lr, rho, eps, wd = group["lr"], group["rho"], group["eps"], group["weight_decay"]
        state["step"].add_(1)
        g = self._weight_decay(p, g, lr, wd)
        sq, acc = state["square_avg"], state["acc_delta"]
        sq.mul_(rho).addcmul_(g, g, value=1 - rho)
        delta = (acc + eps).sqrt() / (sq + eps).sqrt() * g
        acc.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        self._descend_(p, delta, lr)
