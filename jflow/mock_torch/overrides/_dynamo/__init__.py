"""``torch._dynamo``: the part of Dynamo's API programs call (``allow_in_graph``, ``disable``,
``is_compiling``, ``mark_dynamic``, ``config``, ``optimize``). jflow compiles by tracing with
JAX (``flow.compile``), so the hints are accepted and the queries answer for jflow's tracing."""

from __future__ import annotations

from typing import Any

from .._compiling import (
    allow_in_graph,
    assume_constant_result,
    disable,
    graph_break,
    is_compiling,
    mark_dynamic,
    mark_static,
    mark_static_address,
    maybe_mark_dynamic,
    reset,
)
from . import config

__mock_fallback__ = False
__all__ = ["allow_in_graph", "assume_constant_result", "disable", "graph_break", "is_compiling",
           "mark_dynamic", "mark_static", "mark_static_address", "maybe_mark_dynamic", "reset",
           "config", "optimize", "run", "disallow_in_graph", "explain"]


def disallow_in_graph(fn: Any) -> Any:
    """Returns ``fn``: jflow traces every function it calls."""
    return fn


def optimize(backend: Any = "inductor", *, nopython: bool = False, **kwargs: Any) -> Any:
    """``torch._dynamo.optimize(backend)(fn)``: ``flow.compile(fn)``."""
    from jflow.compiler import compile  # noqa: PLC0415, A004
    return lambda fn: compile(fn)


def run(fn: Any = None) -> Any:
    """Run ``fn`` without compiling it (as Dynamo's ``run``): returns it."""
    return fn if fn is not None else (lambda f: f)


def explain(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Dynamo's graph-break report has no jflow counterpart (``flow.compile`` reports its own
    fallbacks in ``recompile_reasons``)."""
    raise NotImplementedError("torch._dynamo.explain: not in jflow; see flow.compile's "
                              "recompile_reasons")
