"""``flow.amp.GradScaler`` (and ``flow.cuda.amp.GradScaler``): PyTorch's dynamic loss scaling.

Multiply the loss by a scale before ``backward`` so small float16 gradients do not underflow;
``step`` divides the gradients by the scale again and skips the optimizer step when any of them
is inf or NaN (the scale was too large), and ``update`` adjusts the scale: times
``backoff_factor`` after a skipped step, times ``growth_factor`` after ``growth_interval``
steps in a row without one. The usual loop works unchanged::

    scaler = flow.amp.GradScaler()
    with flow.autocast("cuda"):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()

With bfloat16 (jflow's default autocast dtype) no scaling is needed, but the API works the same;
``enabled=False`` makes every method a pass-through (``scale`` returns its argument, ``step``
calls ``optimizer.step()``).

jflow's choices: the scale is a Python float (checking the gradients already costs one read
from the device per step, as the skip decision is made in Python), so the scaler is for eager
steps: inside ``flow.jit`` the decision cannot be read from the device. The check is one
reduction per gradient (``sum(g * 0)``: NaN exactly when ``g`` holds an inf or a NaN) and
one device read per optimizer step.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ..autograd.grad_mode import no_grad
from ..tensor import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState:
    """Where an optimizer is in the scale / unscale / step / update cycle."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


class GradScaler:
    """Dynamic loss scaling, as ``torch.amp.GradScaler(device, init_scale, growth_factor,
    backoff_factor, growth_interval, enabled)``. ``device`` is accepted and recorded only."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        if growth_factor <= 1.0:
            raise ValueError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be in (0, 1), got "
                             f"{backoff_factor}")
        if not isinstance(growth_interval, int) or growth_interval <= 0:
            raise ValueError(f"GradScaler: growth_interval must be a positive int, got "
                             f"{growth_interval!r}")
        self._device = device
        self._enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        # id(optimizer) -> {"stage": OptState.*, "found_inf": bool}
        self._per_optimizer: dict[int, dict[str, Any]] = {}

    # -- the cycle ---------------------------------------------------------------------------
    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or lists / tuples of them) times the current scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, Iterable):
            return [self.scale(o) for o in outputs]
        raise ValueError(f"GradScaler.scale: outputs must be a Tensor or an iterable of "
                         f"Tensors, got {type(outputs).__name__}")

    def _state(self, optimizer: Any) -> dict[str, Any]:
        return self._per_optimizer.setdefault(id(optimizer),
                                              {"stage": OptState.READY, "found_inf": False})

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, and record whether any of
        them holds an inf or a NaN (then :meth:`step` skips). Call it before clipping
        gradients; at most once per optimizer between two :meth:`update` calls."""
        if not self._enabled:
            return
        st = self._state(optimizer)
        if st["stage"] == OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if st["stage"] == OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        grads = [p.grad for g in optimizer.param_groups for p in g["params"]
                 if p.grad is not None]
        inv = 1.0 / self._scale
        with no_grad():
            check = None
            for g in grads:
                c = (g * 0).sum()  # NaN exactly when g holds an inf or a NaN
                check = c if check is None else check + c
            for g in grads:
                g.mul_(inv)
        st["found_inf"] = check is not None and not math.isfinite(float(check))
        st["stage"] = OptState.UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale ``optimizer``'s gradients (unless :meth:`unscale_` did) and call
        ``optimizer.step(*args, **kwargs)`` unless they hold an inf or a NaN; returns what
        ``step`` returned, or ``None`` when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        st = self._state(optimizer)
        if st["stage"] == OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["stage"] == OptState.READY:
            self.unscale_(optimizer)
        out = None if st["found_inf"] else optimizer.step(*args, **kwargs)
        st["stage"] = OptState.STEPPED
        return out

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Adjust the scale after this iteration's steps (or set it to ``new_scale``)."""
        if not self._enabled:
            return
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1:
                    raise ValueError("GradScaler.update: new_scale must have one element")
                new_scale = new_scale.item()
            self._scale = float(new_scale)
        else:
            if not self._per_optimizer:
                raise RuntimeError("No inf checks were recorded prior to update(): call "
                                   "step(optimizer) (or unscale_) first.")
            if any(st["found_inf"] for st in self._per_optimizer.values()):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._per_optimizer.clear()

    # -- accessors ---------------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and
        ``_growth_tracker`` (PyTorch's keys); empty when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (PyTorch's too)."""
        if not self._enabled:
            raise RuntimeError("Attempting to load state_dict from a disabled instance of "
                               "GradScaler.")
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")

        def num(v: Any) -> Any:
            return v.item() if isinstance(v, Tensor) else v
        self._scale = float(num(state_dict["scale"]))
        self._growth_factor = float(num(state_dict["growth_factor"]))
        self._backoff_factor = float(num(state_dict["backoff_factor"]))
        self._growth_interval = int(num(state_dict["growth_interval"]))
        self._growth_tracker = int(num(state_dict["_growth_tracker"]))

    def __repr__(self) -> str:
        return (f"GradScaler(scale={self.get_scale()}, enabled={self._enabled}, "
                f"growth_interval={self._growth_interval})")
