"""``flow.optim.swa_utils``: Stochastic Weight Averaging and exponential moving averages of a
model's weights, as ``torch.optim.swa_utils``.

- :class:`AveragedModel` keeps a deep copy of a model and averages the model's parameters
  (and, with ``use_buffers=True``, its buffers) into it at each :meth:`~AveragedModel.
  update_parameters` call; ``n_averaged`` (a buffer, so it is in ``state_dict``) counts the
  calls. The average is SWA's running mean by default, or any ``avg_fn`` (one tensor at a
  time) / ``multi_avg_fn`` (a list per device and dtype, updated in place); the
  ``get_*_avg_fn`` factories make PyTorch's SWA and EMA ones.
- :class:`SWALR` anneals each parameter group's learning rate to its ``swa_lr`` over
  ``anneal_epochs`` epochs (cosine or linear), then holds it.
- :func:`update_bn` recomputes BatchNorm running statistics with one pass over a loader (the
  averaged weights need statistics of their own).

The updates are in-place jflow ops under ``flow.no_grad()``: the averaged parameters stay the
same objects and an optimizer or ``state_dict`` holding them keeps working. Without
``avg_fn`` / ``multi_avg_fn`` jflow always computes PyTorch's CPU formula, one tensor at a time
(``avg + (new - avg) / (n + 1)``); PyTorch uses a fused ``lerp`` there on CUDA, which rounds
differently in the last bit.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from .. import dtypes as _dt
from ..autograd import no_grad
from ..creation import tensor
from ..nn.modules.batchnorm import _BatchNorm, _InstanceNorm
from ..nn.modules.module import Module
from ..tensor import Tensor
from .lr_scheduler import LRScheduler, _per_group
from .optimizer import Optimizer

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]

#: what a ``multi_avg_fn`` receives: the averaged tensors and the model's, of one device/dtype
ParamList = Sequence[Tensor]
AvgFn = Callable[[Tensor, Tensor, "Tensor | int"], Tensor]
MultiAvgFn = Callable[[ParamList, ParamList, "Tensor | int"], None]


def _check_decay(fname: str, decay: float) -> None:
    if not isinstance(decay, (int, float)) or isinstance(decay, bool):
        raise TypeError(f"{fname}(): argument 'decay' must be a float, got "
                        f"{type(decay).__name__}")
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")


def _is_float_or_complex(t: Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAvgFn:
    """The ``multi_avg_fn`` of an exponential moving average: each averaged tensor becomes
    ``decay * avg + (1 - decay) * new`` in place (``lerp_`` towards the model's value with
    weight ``1 - decay``, as PyTorch's ``_foreach_lerp_``; integer tensors by the formula)."""
    _check_decay("get_ema_multi_avg_fn", decay)

    def ema_update(ema_param_list: ParamList, current_param_list: ParamList, _: Any) -> None:
        with no_grad():
            if _is_float_or_complex(ema_param_list[0]):
                for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                    p_ema.lerp_(p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> MultiAvgFn:
    """The ``multi_avg_fn`` of SWA's running mean: each averaged tensor moves ``1 / (n + 1)``
    of the way to the model's value in place (``n``: the number of models averaged so far).
    Floating-point and complex tensors only: integer ones raise, as in PyTorch (BatchNorm's
    ``num_batches_tracked`` with ``use_buffers=True``)."""

    def swa_update(averaged_param_list: ParamList, current_param_list: ParamList,
                   num_averaged: Tensor | int) -> None:
        with no_grad():
            if _is_float_or_complex(averaged_param_list[0]):
                w = 1 / (num_averaged + 1)
                for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                    p_avg.lerp_(p_model, w)
            else:  # (PyTorch's integer branch raises too: addcdiv / add with a float alpha)
                raise RuntimeError(f"get_swa_multi_avg_fn(): cannot average integer tensors "
                                   f"({averaged_param_list[0].dtype}) in place; pass "
                                   f"use_buffers=False or an avg_fn")

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> AvgFn:
    """The ``avg_fn`` of an exponential moving average: returns
    ``decay * avg + (1 - decay) * new`` for one tensor."""
    _check_decay("get_ema_avg_fn", decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> AvgFn:
    """The ``avg_fn`` of SWA's running mean: returns ``avg + (new - avg) / (n + 1)`` for one
    tensor (``n``: the number of models averaged so far)."""

    def swa_update(averaged_param: Tensor, current_param: Tensor,
                   num_averaged: Tensor | int) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _group_by_device_and_dtype(avg: list[Tensor], cur: list[Tensor]
                               ) -> dict[tuple[Any, Any], tuple[list[Tensor], list[Tensor]]]:
    groups: dict[tuple[Any, Any], tuple[list[Tensor], list[Tensor]]] = {}
    for a, c in zip(avg, cur):
        g = groups.setdefault((str(a.device), a.dtype), ([], []))
        g[0].append(a)
        g[1].append(c)
    return groups


class AveragedModel(Module):
    """A running average of a model's weights for Stochastic Weight Averaging (SWA) or an
    exponential moving average (EMA), as ``torch.optim.swa_utils.AveragedModel``.

    ``module`` is a deep copy of ``model`` (moved to ``device`` if given); calling the
    averaged model calls it. :meth:`update_parameters` folds ``model``'s current parameters in:
    the first call copies them, later ones apply ``avg_fn`` (per tensor) or ``multi_avg_fn``
    (per device and dtype, in place), SWA's running mean when neither is given. With
    ``use_buffers=True`` buffers are averaged with the parameters; otherwise they are copied
    from ``model``. ``n_averaged`` (an int64 buffer) counts the updates; the state-dict keys
    are PyTorch's (``n_averaged``, ``module.<name>``)."""

    n_averaged: Tensor

    def __init__(self, model: Module, device: Any = None, avg_fn: AvgFn | None = None,
                 multi_avg_fn: MultiAvgFn | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if not isinstance(model, Module):
            raise TypeError(f"AveragedModel(): argument 'model' must be an nn.Module, got "
                            f"{type(model).__name__}")
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        for name, fn in (("avg_fn", avg_fn), ("multi_avg_fn", multi_avg_fn)):
            if fn is not None and not callable(fn):
                raise TypeError(f"AveragedModel(): argument '{name}' must be callable, got "
                                f"{type(fn).__name__}")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=_dt.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the averaged copy of the model."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s parameters (and buffers, with ``use_buffers``) into the average,
        in place, and count one more averaged model."""
        if not isinstance(model, Module):
            raise TypeError(f"AveragedModel.update_parameters(): argument 'model' must be an "
                            f"nn.Module, got {type(model).__name__}")
        if self.use_buffers:
            self_params: Iterable[Tensor] = itertools.chain(self.module.parameters(),
                                                            self.module.buffers())
            model_params: Iterable[Tensor] = itertools.chain(model.parameters(),
                                                             model.buffers())
        else:
            self_params, model_params = self.parameters(), model.parameters()
        with no_grad():
            avg: list[Tensor] = []
            cur: list[Tensor] = []
            first = bool(self.n_averaged == 0)
            for p_avg, p_model in zip(self_params, model_params):
                p_model_ = p_model.detach().to(p_avg.device)
                avg.append(p_avg.detach())
                cur.append(p_model_)
                if first:
                    p_avg.detach().copy_(p_model_)
            if not first:
                self._average(avg, cur)
            if not self.use_buffers:  # buffers follow the source model
                for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged += 1

    def _average(self, avg: list[Tensor], cur: list[Tensor]) -> None:
        if self.multi_avg_fn is not None:
            for (device, _), (a, c) in _group_by_device_and_dtype(avg, cur).items():
                self.multi_avg_fn(a, c, self.n_averaged.to(device))
            return
        avg_fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
        for p_avg, p_model in zip(avg, cur, strict=True):
            p_avg.copy_(avg_fn(p_avg, p_model, self.n_averaged.to(p_avg.device)))


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the running mean and variance of every BatchNorm layer of ``model`` with one
    pass over ``loader`` (a batch is a tensor, or a list / tuple whose first element is the
    input), as ``torch.optim.swa_utils.update_bn``: the statistics are reset and accumulated
    as a cumulative average (``momentum=None``) in training mode; each layer's momentum and
    the model's training mode are restored afterwards. ``device``: where each input is
    moved first."""
    if not isinstance(model, Module):
        raise TypeError(f"update_bn(): argument 'model' must be an nn.Module, got "
                        f"{type(model).__name__}")
    with no_grad():
        momenta: dict[Module, Any] = {}
        for m in model.modules():
            # (jflow's InstanceNorm derives from _BatchNorm; PyTorch's does not, and skips it)
            if isinstance(m, _BatchNorm) and not isinstance(m, _InstanceNorm):
                m.reset_running_stats()
                momenta[m] = m.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for m in momenta:
            m.momentum = None
        try:
            for input in loader:  # noqa: A001
                if isinstance(input, (list, tuple)):
                    input = input[0]  # noqa: A001
                if device is not None:
                    input = input.to(device)  # noqa: A001
                model(input)
        finally:
            for m, momentum in momenta.items():
                m.momentum = momentum
            model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each parameter group's learning rate from its current value to ``swa_lr`` (one
    value, or one per group) over ``anneal_epochs`` epochs, then keeps it there, as
    ``torch.optim.swa_utils.SWALR``. ``anneal_strategy``: ``"cos"`` (cosine) or ``"linear"``.
    Each ``step()`` interpolates from the previous step's lr, so it can take over from another
    scheduler mid-training. Each group's ``swa_lr`` is stored in the group."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | Sequence[float],
                 anneal_epochs: int = 10, anneal_strategy: Literal["cos", "linear"] = "cos",
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        swa_lrs = _per_group("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or isinstance(anneal_epochs, bool) \
                or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        self._step_count = 0
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch and set each group's lr (PyTorch counts the calls in
        ``_step_count``, which the schedule reads; ``epoch`` only sets ``last_epoch``)."""
        self._step_count += 1
        super().step(epoch)

    def get_lr(self) -> list[float]:
        """The learning rates of this step: each group's previous lr moved along the anneal
        curve towards its ``swa_lr``."""
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha)
                for g, lr in zip(groups, prev_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" \
            else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state: everything but the optimizer and the anneal function (as
        PyTorch's; the strategy's name is kept and restores the function)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the state ``state_dict()`` returned."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
