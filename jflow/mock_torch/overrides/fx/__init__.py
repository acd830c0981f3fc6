"""``torch.fx``: its names exist so libraries that mark functions for FX (``@torch.fx.wrap``)
or subclass its tracer import and run; symbolic tracing itself is not available in jflow and
raises a clear error (jflow captures graphs by tracing with JAX: ``flow.compile``)."""

from __future__ import annotations

from typing import Any, NoReturn

from jflow.mock_torch._refusals import refuser, refusing_class, refusing_function

__all__ = ["wrap", "symbolic_trace", "Proxy", "Tracer", "Graph", "GraphModule", "Node",
           "Interpreter", "Transformer", "has_side_effect", "replace_pattern"]


_no_tracing = refuser("torch.fx", "jflow has no FX symbolic tracing; jflow captures a "
                                  "program's graph by tracing it with JAX (torch.compile / "
                                  "flow.compile)")


def wrap(fn_or_name: Any) -> Any:
    """``@torch.fx.wrap`` / ``torch.fx.wrap("name")``: marks a function as a leaf for FX
    tracing; returns its argument (jflow never FX-traces, so the mark has no effect)."""
    return fn_or_name


def has_side_effect(fn: Any) -> Any:
    """Marks a function as impure for FX: returns it."""
    return fn


symbolic_trace = refusing_function(__name__, _no_tracing, "symbolic_trace",
                                   "Raises: FX tracing is not available in jflow.")
replace_pattern = refusing_function(__name__, _no_tracing, "replace_pattern",
                                    "Raises: there are no FX graphs in jflow.")
Proxy = refusing_class(__name__, _no_tracing, "Proxy",
                       "An FX proxy value: none exists in jflow (``isinstance(x, Proxy)`` is "
                       "always False); constructing one raises.")
Node = refusing_class(__name__, _no_tracing, "Node",
                      "An FX graph node (never constructed in jflow).")
Graph = refusing_class(__name__, _no_tracing, "Graph", "An FX graph (never constructed in jflow).")
GraphModule = refusing_class(__name__, _no_tracing, "GraphModule",
                             "An FX graph module (never constructed in jflow).")
Interpreter = refusing_class(__name__, _no_tracing, "Interpreter",
                             "Runs an FX graph: there are none in jflow.")


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


class Transformer(Interpreter):
    """Rewrites an FX graph: there are none in jflow."""
