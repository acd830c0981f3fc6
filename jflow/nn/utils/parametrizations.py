"""``flow.nn.utils.parametrizations``: ready-made parametrizations (see :mod:`.parametrize`),
as ``torch.nn.utils.parametrizations``: :func:`weight_norm`."""

from __future__ import annotations

from typing import Any

from ...tensor import Tensor
from ..modules.module import Module
from .parametrize import register_parametrization
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["weight_norm"]


class _WeightNorm(Module):
    """``weight = g * v / ||v||`` with the norm over every axis but ``dim`` (``-1``: the
    whole tensor); its ``right_inverse`` splits a weight into ``(g, v)``."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Weight normalization of ``module.<name>`` as a parametrization: the magnitude in
    ``parametrizations.<name>.original0`` (the norm over every axis but ``dim``;
    ``dim=None``: one norm for the whole tensor) and the direction in ``original1``.
    A state dict of the older form (``<name>_g`` / ``<name>_v``,
    ``flow.nn.utils.weight_norm``) loads into it. Returns ``module``."""
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def old_keys(state_dict: dict, prefix: str, *_: Any) -> None:
        g, v = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g in state_dict and v in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v)

    module._register_load_state_dict_pre_hook(old_keys)
    return module
