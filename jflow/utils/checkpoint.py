"""``flow.utils.checkpoint`` (``torch.utils.checkpoint``): activation checkpointing's API.

``checkpoint(fn, *args)`` runs ``fn(*args)`` once with the tape recording as usual, so values,
gradients and random draws are PyTorch's (PyTorch re-runs ``fn`` in the backward with the
same RNG state, which gives the same numbers). What differs is memory: the activations inside
``fn`` are kept until the backward instead of being recomputed there. Inside ``flow.compile``
/ ``nn.Graph`` XLA decides what to keep (``jax.checkpoint`` policies belong there)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["checkpoint", "checkpoint_sequential", "set_checkpoint_debug_enabled",
           "CheckpointPolicy", "create_selective_checkpoint_contexts"]


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               context_fn: Any = None, determinism_check: str = "default",
               debug: bool = False, preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, recorded normally (see the module docstring)."""
    return function(*args, **kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any,  # noqa: A002
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run a ``Sequential`` (or list of modules) on ``input`` (see the module docstring)."""
    fns: Iterable[Callable[..., Any]] = (functions.children() if hasattr(functions, "children")
                                         else functions)
    for fn in fns:
        input = fn(input)  # noqa: A001
    return input


class set_checkpoint_debug_enabled:  # noqa: N801  (PyTorch's name)
    """Context for checkpoint debugging: nothing is recomputed, so nothing to debug."""

    def __init__(self, enabled: bool | None) -> None:
        self.enabled = enabled

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


class CheckpointPolicy:
    """Selective-checkpoint policies (names only: everything is saved)."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3


def create_selective_checkpoint_contexts(policy_fn_or_list: Any, allow_cache_entry_mutation:
                                         bool = False) -> Any:
    """Two no-op contexts: with everything saved, every policy gives the same results."""
    import contextlib  # noqa: PLC0415
    return contextlib.nullcontext(), contextlib.nullcontext()
