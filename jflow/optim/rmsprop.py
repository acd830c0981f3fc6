"""``optim.RMSprop``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .. import _C
from ..autograd import no_grad
from ..creation import zeros, zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer, scalar_dtype

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """PyTorch's RMSprop::

        g = grad + weight_decay * p
        s = alpha s + (1 - alpha) g²
        avg = sqrt(s - ḡ²) + eps with ḡ = alpha ḡ + (1 - alpha) g (centered) | sqrt(s) + eps
        buf = momentum buf + g / avg; p -= lr buf (momentum) | p -= lr g / avg
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False, *, maximize: bool = False, foreach: Any = None) -> None:
        for name, v in (("learning rate", lr), ("epsilon value", eps), ("momentum value",
                        momentum), ("weight_decay value", weight_decay), ("alpha value", alpha)):
            if v < 0.0:
                raise ValueError(f"Invalid {name}: {v}")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def _initial_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        state = {"step": zeros((), dtype=scalar_dtype(p)), "square_avg": zeros_like(p)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = zeros_like(p)
        return state

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
                wd, mom, centered = group["weight_decay"], group["momentum"], group["centered"]
                for p, g in self._grads(group):
                    state = self.state.get(p)
                    if not state:
                        state = self.state[p] = {"step": zeros((), dtype=scalar_dtype(p)),
                                                 "square_avg": zeros_like(p)}
                    if mom > 0 and "momentum_buffer" not in state:
                        state["momentum_buffer"] = zeros_like(p)
                    if centered and "grad_avg" not in state:
                        state["grad_avg"] = zeros_like(p)
                    state["step"].add_(1)
                    g = self._weight_decay(p, g, lr, wd)
                    sq = state["square_avg"]
                    sq.mul_(alpha).add_(g * g, alpha=1 - alpha)
                    if centered:
                        ga = state["grad_avg"]
                        ga.mul_(alpha).add_(g, alpha=1 - alpha)
                        avg = _C.sqrt(sq - ga * ga) + eps
                    else:
                        avg = _C.sqrt(sq) + eps
                    if mom > 0:
                        buf = state["momentum_buffer"]
                        buf.mul_(mom).add_(g / avg)
                        self._descend_(p, buf, lr)
                    else:
                        p.sub_(g / avg * lr)
        return loss
