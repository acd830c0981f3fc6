"""``torch.nn.utils.init``: ``skip_init``."""

from __future__ import annotations

import inspect
from typing import Any

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Module:
    """Build ``module_cls(*args, **kwargs)`` without running its initialisation, as PyTorch:
    on the meta device (nothing is drawn: the random generator does not move), then
    ``to_empty(device=...)``. PyTorch's parameters then hold uninitialised memory; jflow's
    hold zeros (its arrays have no uninitialised memory) — to be overwritten by the caller."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
