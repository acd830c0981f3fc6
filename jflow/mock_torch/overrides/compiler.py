"""``torch.compiler`` with PyTorch's API (jflow's own ``jflow.compiler`` is its compilation
machinery, another API): ``compile`` is ``flow.compile``; ``is_compiling`` is True while jflow
traces a compiled step; ``disable`` / ``allow_in_graph`` return the function."""

from __future__ import annotations

from typing import Any

from jflow.compiler import compile  # noqa: A004  (torch.compiler.compile)

from ._compiling import allow_in_graph, assume_constant_result, disable, is_compiling, reset

__mock_fallback__ = False
__all__ = ["compile", "allow_in_graph", "assume_constant_result", "disable", "is_compiling",
           "is_dynamo_compiling", "is_exporting", "reset", "list_backends",
           "cudagraph_mark_step_begin", "substitute_in_graph", "set_stance"]


def is_dynamo_compiling() -> bool:
    """As :func:`is_compiling`."""
    return is_compiling()


def is_exporting() -> bool:
    """False: jflow has no ``torch.export``."""
    return False


def list_backends(exclude_tags: Any = ()) -> list[str]:
    """jflow compiles with XLA only."""
    return ["xla"]


def cudagraph_mark_step_begin() -> None:
    """No-op: jflow never records CUDA graphs (XLA owns the device program)."""


def substitute_in_graph(original_fn: Any, *, can_constant_fold_through: bool = False,
                        skip_signature_check: bool = False) -> Any:
    """A decorator registering a traceable stand-in for ``original_fn``: JAX traces the
    original directly, so the stand-in is returned unregistered."""
    return lambda fn: fn


def set_stance(stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
               force_backend: Any = None) -> Any:
    """Accepted only for ``"default"`` (compile as usual); any other stance raises."""
    if stance != "default":
        raise NotImplementedError(f"torch.compiler.set_stance({stance!r}): jflow's compiler "
                                  f"has only the default stance")
    import contextlib  # noqa: PLC0415
    return contextlib.nullcontext()
