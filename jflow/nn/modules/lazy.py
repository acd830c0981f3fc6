"""``LazyModuleMixin``: modules whose parameters take their shape from the first input
(``torch.nn.modules.lazy``): ``LazyLinear``, ``LazyConv*``, ``LazyConvTranspose*``,
``LazyBatchNorm*``, ``LazyInstanceNorm*``.

As PyTorch's: until the first call the module holds ``UninitializedParameter`` /
``UninitializedBuffer`` objects; a forward pre-hook calls ``initialize_parameters(*args)``
on the first call, which materializes them (in place: the same objects become ``Parameter``
/ ``Tensor``, so an optimizer built before the call keeps working, as in PyTorch) and
re-initializes them as the ordinary module would; then the module's class becomes
``cls_to_become`` (``LazyLinear`` → ``Linear``) and the hooks go. ``state_dict()`` holds the
uninitialized objects until then; loading a state dict into an uninitialized module
materializes it with the checkpoint's shapes.

Where jflow must differ: the first call must run eagerly. Inside ``flow.jit`` /
``nn.Graph`` / ``flow.func`` the inputs are traced and the parameters would be made inside
the trace (PyTorch's ``torch.compile`` initializes them from the example inputs before
tracing), so an uninitialized module raises there, asking for one eager call first (a "dry
run", as PyTorch's documentation recommends before building an optimizer).
"""

from __future__ import annotations

import itertools
from typing import Any

from jax.core import Tracer

from ...tensor import Tensor
from ..parameter import is_lazy
from .module import _bump_structure

__all__ = ["LazyModuleMixin", "lazy_class"]


class LazyModuleMixin:
    """Mixin of the lazy modules (see the module docstring). A subclass implements
    ``initialize_parameters(*args)`` and sets ``cls_to_become``."""

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                if not (is_lazy(param) or keep_vars):
                    param = param.detach()
                destination[prefix + name] = param
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers:
                if not (is_lazy(buf) or keep_vars):
                    buf = buf.detach()
                destination[prefix + name] = buf

    def _lazy_load_hook(self, state_dict: dict, prefix: str, local_metadata: dict,
                        strict: bool, missing_keys: list, unexpected_keys: list,
                        error_msgs: list) -> None:
        """An uninitialized parameter or buffer takes the shape of the checkpoint's (so a
        module saved after its first call loads into a new one)."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param):
                value = state_dict[key]
                if not is_lazy(value):
                    param.materialize(value.shape)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Materialize the parameters from the first call's arguments (the subclass's)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module is still uninitialized."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(),
                                                       self._buffers.values()))

    def _infer_parameters(self, module: Any, args: tuple, kwargs: dict | None = None) -> None:
        """The forward pre-hook: initialize from ``args``, then become ``cls_to_become``."""
        if any(isinstance(a, Tensor) and isinstance(a._meta, Tracer) for a in args):
            raise RuntimeError(f"{self._get_name()} has uninitialized parameters and is being "
                               f"traced (flow.jit / nn.Graph / flow.func): call it once "
                               f"eagerly with a batch of the right shape first, so its "
                               f"parameters get their shapes outside the trace")
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become
        _bump_structure()  # (compiled steps' fast path: the module's structure changed)

    def _replicate_for_data_parallel(self) -> Any:
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize "
                           "the modules")


def lazy_class(base: type, mixin: type, what: str, module: str,
               namespace: dict | None = None) -> type:
    """``Lazy<base>`` (defined in ``module``): a subclass of ``mixin`` and ``base`` that
    becomes ``base`` (``cls_to_become``) once its first input told it ``what`` (e.g.
    "``in_channels`` is the channel dim")."""
    name = f"Lazy{base.__name__}"
    return type(name, (mixin, base), {
        "cls_to_become": base, "__module__": module, "__qualname__": name,
        "__doc__": f"A ``{base.__name__}`` whose {what} of its first input (PyTorch's; see "
                   f":mod:`jflow.nn.modules.lazy`): after that call it is a "
                   f"``{base.__name__}``.", **(namespace or {})})
