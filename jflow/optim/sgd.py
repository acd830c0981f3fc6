"""``optim.SGD``: stochastic gradient descent with momentum, dampening, Nesterov, decay."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..autograd import no_grad
from ..creation import zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer, required

__all__ = ["SGD"]


class SGD(Optimizer):
    """PyTorch's SGD::

        g = grad + weight_decay * p
        buf = g (first step) | momentum * buf + (1 - dampening) * g
        g = g + momentum * buf (nesterov) | buf
        p -= lr * g
    """

    def __init__(self, params: Iterable[Any], lr: float = required, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
                 *, maximize: bool = False, foreach: Any = None) -> None:
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _initial_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any] | None:
        # the first step sets the buffer to the gradient; a zero buffer gives the same
        # ``0 * momentum + (1 - dampening) * g`` only without dampening
        if group["momentum"] == 0 or group["dampening"] != 0:
            return None
        return {"momentum_buffer": zeros_like(p)}

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, mom, damp = group["lr"], group["momentum"], group["dampening"]
                wd, nesterov = group["weight_decay"], group["nesterov"]
                for p, g in self._grads(group):
                    g = self._weight_decay(p, g, lr, wd)
                    if mom != 0:
                        state = self.state.setdefault(p, {})
                        buf = state.get("momentum_buffer")
                        if buf is None:
                            buf = state["momentum_buffer"] = g.clone()
                        else:
                            buf.mul_(mom).add_(g, alpha=1 - damp)
                        g = g.add(buf, alpha=mom) if nesterov else buf
                    self._descend_(p, g, lr)
        return loss
