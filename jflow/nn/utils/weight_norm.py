"""Weight normalization (Salimans & Kingma, 2016): a weight ``w = g * v / ||v||`` learnt as
a magnitude ``g`` and a direction ``v``.

Two forms, as PyTorch has them: :func:`weight_norm` here, the older one (a forward pre-hook
recomputes ``module.weight`` from the parameters ``weight_g`` / ``weight_v`` before each
call; deprecated in PyTorch, still used by libraries), and
``flow.nn.utils.parametrizations.weight_norm`` (``parametrizations.weight.original0`` /
``original1``). Both compute the weight with :func:`_weight_norm`, from plain ops, so
autograd, ``flow.jit`` and ``nn.Graph`` differentiate it like any other expression.
"""

from __future__ import annotations

import warnings
from typing import Any

from ...tensor import Tensor
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["norm_except_dim", "remove_weight_norm", "weight_norm"]


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every axis but ``dim``, shaped to broadcast against
    ``v`` (size 1 on the other axes); ``dim=-1`` is the norm of the whole tensor (a 0-dim
    result), as ``torch.norm_except_dim``."""
    if dim == -1:
        return v.norm(pow)
    d = dim % v.dim() if v.dim() else 0
    rows = v.movedim(d, 0).reshape(v.shape[d], -1).norm(pow, dim=1)
    return rows.reshape([v.shape[d] if i == d else 1 for i in range(v.dim())])


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """``v * (g / norm_except_dim(v, 2, dim))``: the weight of weight normalization
    (``torch._weight_norm``)."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook of :func:`weight_norm`: sets ``module.<name>`` from
    ``<name>_g`` and ``<name>_v`` before each call."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        return _weight_norm(getattr(module, self.name + "_v"),
                            getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"weight_norm(): '{name}' of {type(module).__name__} "
                                   f"already has a weight_norm hook")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name, None)
        if not isinstance(weight, Parameter):
            raise ValueError(f"weight_norm(): {type(module).__name__} has no parameter "
                             f"'{name}'")
        del module._parameters[name]
        module.register_parameter(name + "_g",
                                  Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module).detach()
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Re-parametrize ``module.<name>`` as ``<name>_g`` (its norm over every axis but
    ``dim``; ``dim=None``: the whole tensor) times ``<name>_v`` over its norm, both
    parameters; the weight is recomputed before each call. Deprecated in PyTorch in favour
    of ``flow.nn.utils.parametrizations.weight_norm``, and warns as it does."""
    warnings.warn("torch.nn.utils.weight_norm is deprecated in favor of "
                  "torch.nn.utils.parametrizations.weight_norm.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_hook_form(module: Module, hook_type: type, name: str, what: str) -> Module:
    """Undo a hook-form re-parametrization (``weight_norm`` / ``spectral_norm``): its
    ``hook_type`` pre-hook on ``name`` puts one parameter back and is dropped."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, hook_type) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"remove_{what}(): {what} of '{name}' not found in "
                     f"{type(module).__name__}")


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`weight_norm`: ``module.<name>`` becomes one parameter again, holding the
    current weight."""
    return remove_hook_form(module, WeightNorm, name, "weight_norm")
