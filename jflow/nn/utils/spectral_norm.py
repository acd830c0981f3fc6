"""The older, hook form of spectral normalization (``torch.nn.utils.spectral_norm``), which
GAN code written before parametrizations still uses: the parameter ``<name>_orig`` and the
buffers ``<name>_u`` / ``<name>_v`` (power-iteration vectors, updated before each
training-mode call), and ``module.<name>`` recomputed by a forward pre-hook. The newer form
is ``flow.nn.utils.parametrizations.spectral_norm``.
"""

from __future__ import annotations

from typing import Any

from ... import _C
from ...autograd import no_grad
from ...tensor import Tensor
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from ..parameter import Parameter
from .weight_norm import remove_hook_form

__all__ = ["remove_spectral_norm", "spectral_norm"]


class SpectralNorm:
    """The forward pre-hook: ``module.<name> = <name>_orig / sigma``."""

    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        if n_power_iterations <= 0:
            raise ValueError(f"spectral_norm(): n_power_iterations must be positive, got "
                             f"{n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = \
            name, n_power_iterations, dim, eps

    def as_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        mat = self.as_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):  # (v first: PyTorch's order here)
                    v.copy_(F.normalize(_C.mv(mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(_C.mv(mat, v), dim=0, eps=self.eps))
        u, v = u.clone(), v.clone()
        return weight / _C.dot(u, _C.mv(mat, v))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"spectral_norm(): '{name}' of {type(module).__name__} "
                                   f"already has a spectral_norm hook")
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(f"spectral_norm(): {type(module).__name__} has no parameter "
                             f"'{name}'")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        with no_grad():
            mat = fn.as_matrix(weight.detach())
            h, w = mat.shape
            u = F.normalize(mat.new_empty(h).normal_(0, 1), dim=0, eps=eps)
            v = F.normalize(mat.new_empty(w).normal_(0, 1), dim=0, eps=eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Spectral normalization of ``module.<name>`` in the hook form (see the module
    docstring); ``dim``: the output axis (default 1 for transposed convolutions, else 0).
    Returns ``module``."""
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`spectral_norm`: ``module.<name>`` is one parameter again, holding the
    normalized weight."""
    return remove_hook_form(module, SpectralNorm, name, "spectral_norm")
