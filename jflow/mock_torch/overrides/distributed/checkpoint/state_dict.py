"""``torch.distributed.checkpoint.state_dict``: model / optimizer state dicts. A jflow module
holds its whole state on every rank (global tensors keep their SBP), so these are the
module's and optimizer's own ``state_dict`` / ``load_state_dict``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["StateDictOptions", "get_model_state_dict", "set_model_state_dict",
           "get_optimizer_state_dict", "set_optimizer_state_dict", "get_state_dict",
           "set_state_dict"]


@dataclass
class StateDictOptions:
    """PyTorch's options; ``full_state_dict`` / ``cpu_offload`` change nothing for state that
    is already whole."""

    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False


def get_model_state_dict(model: Any, *, submodules: Any = None,
                         options: StateDictOptions | None = None) -> dict[str, Any]:
    """``model.state_dict()`` (without frozen parameters if the options say so)."""
    sd = model.state_dict()
    if options is not None and options.ignore_frozen_params:
        frozen = {k for k, p in model.named_parameters() if not p.requires_grad}
        sd = {k: v for k, v in sd.items() if k not in frozen}
    return sd


def set_model_state_dict(model: Any, model_state_dict: dict[str, Any], *,
                         options: StateDictOptions | None = None) -> Any:
    """``model.load_state_dict(...)``."""
    strict = True if options is None else options.strict
    return model.load_state_dict(model_state_dict, strict=strict)


def get_optimizer_state_dict(model: Any, optimizers: Any, *, submodules: Any = None,
                             options: StateDictOptions | None = None) -> dict[str, Any]:
    """``optimizer.state_dict()``."""
    return optimizers.state_dict()


def set_optimizer_state_dict(model: Any, optimizers: Any, optim_state_dict: dict[str, Any], *,
                             options: StateDictOptions | None = None) -> None:
    """``optimizer.load_state_dict(...)``."""
    optimizers.load_state_dict(optim_state_dict)


def get_state_dict(model: Any, optimizers: Any, *, submodules: Any = None,
                   options: StateDictOptions | None = None) -> tuple[dict, dict]:
    """Both state dicts."""
    return (get_model_state_dict(model, options=options),
            get_optimizer_state_dict(model, optimizers, options=options))


def set_state_dict(model: Any, optimizers: Any, *, model_state_dict: dict[str, Any],
                   optim_state_dict: dict[str, Any], options: StateDictOptions | None = None
                   ) -> Any:
    """Load both."""
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return set_model_state_dict(model, model_state_dict, options=options)
