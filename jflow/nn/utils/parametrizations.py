"""``flow.nn.utils.parametrizations``: ready-made parametrizations (see :mod:`.parametrize`),
as ``torch.nn.utils.parametrizations``: :func:`weight_norm`, :func:`spectral_norm`."""

from __future__ import annotations

from typing import Any

from ... import _C
from ...autograd import no_grad
from ...tensor import Tensor
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from .parametrize import register_parametrization
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["spectral_norm", "weight_norm"]


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


class _SpectralNorm(Module):
    """``weight / sigma``, ``sigma`` the largest singular value of the weight seen as a
    matrix (``dim`` first, the other axes flattened), estimated by power iteration: the
    buffers ``_u`` / ``_v`` hold the singular vectors' estimates and take
    ``n_power_iterations`` more steps at each training-mode read (without gradient, as
    PyTorch's). A 1-D weight is divided by its norm."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < max(ndim, 1):
            raise IndexError(f"spectral_norm(): dim {dim} is out of range for a {ndim}-D "
                             f"weight (expected in [{-ndim}, {ndim - 1}])")
        if n_power_iterations <= 0:
            raise ValueError(f"spectral_norm(): n_power_iterations must be positive, got "
                             f"{n_power_iterations}")
        self.dim = dim % ndim if ndim else 0
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            with no_grad():
                mat = self._as_matrix(weight.detach())
                h, w = mat.shape
                self.register_buffer("_u", F.normalize(mat.new_empty(h).normal_(0, 1), dim=0,
                                                       eps=eps))
                self.register_buffer("_v", F.normalize(mat.new_empty(w).normal_(0, 1), dim=0,
                                                       eps=eps))
            self._power_method(mat, 15)

    def _as_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.flatten(1)

    def _power_method(self, mat: Tensor, n: int) -> None:
        with no_grad():
            for _ in range(n):
                self._u.copy_(F.normalize(_C.mv(mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_C.mv(mat.conj().t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._as_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        return weight / _C.vdot(u, _C.mv(mat, v))

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Spectral normalization (Miyato et al., 2018) of ``module.<name>`` as a
    parametrization: the weight divided by its largest singular value, estimated by
    ``n_power_iterations`` of power iteration per training-mode read (buffers
    ``parametrizations.<name>.0._u`` / ``._v``). ``dim``: the output axis (default 1 for
    transposed convolutions, else 0). Returns ``module``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"spectral_norm(): {type(module).__name__} has no parameter or buffer "
                         f"named '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
