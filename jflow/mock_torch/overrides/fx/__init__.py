"""``torch.fx``: its names exist so libraries that mark functions for FX (``@torch.fx.wrap``)
or subclass its tracer import and run; symbolic tracing itself is not available in jflow and
raises a clear error (jflow captures graphs by tracing with JAX: ``flow.compile``)."""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["wrap", "symbolic_trace", "Proxy", "Tracer", "Graph", "GraphModule", "Node",
           "Interpreter", "Transformer", "has_side_effect", "replace_pattern"]


def _no_tracing(what: str) -> NoReturn:
    raise NotImplementedError(
        f"torch.fx.{what}: jflow has no FX symbolic tracing; jflow captures a program's graph "
        f"by tracing it with JAX (torch.compile / flow.compile)")


def wrap(fn_or_name: Any) -> Any:
    """``@torch.fx.wrap`` / ``torch.fx.wrap("name")``: marks a function as a leaf for FX
    tracing; returns its argument (jflow never FX-traces, so the mark has no effect)."""
    return fn_or_name


def has_side_effect(fn: Any) -> Any:
    """Marks a function as impure for FX: returns it."""
    return fn


def symbolic_trace(root: Any, concrete_args: Any = None) -> NoReturn:
    """Raises: FX tracing is not available in jflow."""
    _no_tracing("symbolic_trace")


def replace_pattern(gm: Any, pattern: Any, replacement: Any) -> NoReturn:
    """Raises: there are no FX graphs in jflow."""
    _no_tracing("replace_pattern")


class Proxy:
    """An FX proxy value: none exists in jflow (``isinstance(x, Proxy)`` is always False);
    constructing one raises."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _no_tracing("Proxy")


class Node:
    """An FX graph node (never constructed in jflow)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _no_tracing("Node")


class Graph:
    """An FX graph (never constructed in jflow)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _no_tracing("Graph")


class GraphModule:
    """An FX graph module (never constructed in jflow)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _no_tracing("GraphModule")


class Tracer:
    """The FX tracer: may be subclassed and constructed (libraries do at import, to customise
    leaf modules); :meth:`trace` raises."""

    def __init__(self, autowrap_modules: Any = (), autowrap_functions: Any = (),
                 param_shapes_constant: bool = False) -> None:
        self.autowrap_modules = autowrap_modules
        self.autowrap_functions = autowrap_functions

    def is_leaf_module(self, m: Any, module_qualified_name: str) -> bool:
        """FX's default: modules of torch.nn are leaves."""
        return type(m).__module__.startswith(("jflow.nn", "torch.nn"))

    def trace(self, root: Any, concrete_args: Any = None) -> NoReturn:
        """Raises: FX tracing is not available in jflow."""
        _no_tracing("Tracer.trace")


class Interpreter:
    """Runs an FX graph: there are none in jflow."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _no_tracing("Interpreter")


class Transformer(Interpreter):
    """Rewrites an FX graph: there are none in jflow."""
