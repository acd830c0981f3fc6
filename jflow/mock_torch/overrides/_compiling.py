"""Whether jflow is compiling (tracing a ``flow.jit`` / ``flow.compile`` / ``nn.Graph`` step):
the answer behind ``torch.compiler.is_compiling`` and ``torch._dynamo.is_compiling``."""

from __future__ import annotations

from typing import Any, TypeVar

from jflow import _jax_compat

F = TypeVar("F")


def is_compiling() -> bool:
    """True while JAX traces the running code (jflow's compilation: ``flow.compile``,
    ``flow.jit``, ``nn.Graph``), as ``torch.compiler.is_compiling`` is True while Dynamo
    traces; False when running eagerly."""
    clean = _jax_compat._TRACE_STATE_CLEAN
    return clean is not None and not clean()


def allow_in_graph(fn: F) -> F:
    """Returns ``fn``: jflow compiles by tracing with JAX, which always follows a function's
    jflow ops (there are no graph breaks to avoid)."""
    return fn


def disable(fn: Any = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """``torch.compiler.disable``: returns ``fn`` unchanged (as a decorator with or without
    arguments). jflow cannot run part of a traced step eagerly: inside ``flow.compile`` the
    function is traced with the rest (results are the same; only compilation differs)."""
    if fn is None:
        return lambda f: f
    return fn


def mark_dynamic(t: Any, index: Any, **kwargs: Any) -> None:
    """A hint for Dynamo's shape specialisation; jflow's compiled steps specialise on every
    input shape (``flow.jit`` retraces per shape), so there is nothing to record."""


def mark_static(t: Any, index: Any = None) -> None:
    """See :func:`mark_dynamic`: every shape is static to jflow's compiler already."""


def mark_static_address(t: Any, guard: bool = False) -> None:
    """A hint for CUDA graphs (the tensor's storage stays put across compiled calls;
    transformers' caches mark theirs): jflow records no CUDA graphs, so there is nothing to
    record."""


def maybe_mark_dynamic(t: Any, index: Any) -> None:
    """See :func:`mark_dynamic`."""


def assume_constant_result(fn: F) -> F:
    """Returns ``fn``: JAX tracing evaluates Python-level results once per trace anyway."""
    return fn


def reset() -> None:
    """Drop compiled steps: jflow's caches belong to each ``flow.compile`` object, so there is
    no global Dynamo cache to clear."""


def graph_break() -> None:
    """No-op: a requested graph break only splits Dynamo's graph; tracing continues through
    it in jflow (the results are the same)."""
