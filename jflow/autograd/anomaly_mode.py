"""Anomaly mode: ``torch.autograd.detect_anomaly`` / ``set_detect_anomaly`` and the switch
under them (``set_anomaly_enabled``, ``is_anomaly_enabled``,
``is_anomaly_check_nan_enabled``; PyTorch exports these three at top level).

What it does in jflow, exactly: while anomaly mode is on **with** ``check_nan`` (PyTorch's
default), an eager backward (``Tensor.backward``, ``autograd.backward``, ``autograd.grad``)
runs node by node instead of as one compiled program, and after each node's backward rule
(or a ``Function``'s ``backward``) it reads the gradients the node returned; the first that
holds a NaN raises PyTorch's error, naming the node as jflow names it
(``RuntimeError: Function 'mul_backward' returned nan values in its 0th output.`` where
PyTorch says ``'MulBackward0'``; the index is the node's input, PyTorch's output of the
backward function). The same gradients, the same ``.grad`` values otherwise; only slower (a
host read per node, one compiled rule per op instead of one program per graph).

What it does not do:

* record the forward's traceback: PyTorch stores each op's Python stack in its node and
  prints it ("Traceback of forward call that caused the error") when a backward fails;
  jflow's tape records no stacks, so the error names the node only;
* check what it cannot read: values inside ``flow.jit`` / ``nn.Graph`` / ``flow.func`` /
  ``jax`` transforms (tracers), meta tensors, global tensors (their shards may be on other
  processes), and a backward that ``flow.lazy()`` records by template
  (``jflow.lazy_mode.backward``) are not checked;
* anything with ``check_nan=False``: the mode's flag is set (``is_anomaly_enabled()`` is
  True) and the backward runs as usual.

The engine integration: while the check is on, :func:`_check_node` is the engine's node
check (``engine.set_node_check``), which it calls with each node's results; with a check
installed the engine runs node by node (no whole-graph executable). The switch is
process-wide, as PyTorch's.
"""

from __future__ import annotations

import warnings
from typing import Any

import jax.numpy as jnp
from jax.core import Tracer

from ..meta import is_meta_value
from . import engine as _engine

__all__ = ["detect_anomaly", "set_detect_anomaly", "set_anomaly_enabled", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]

#: ``[enabled, check_nan]``: PyTorch's defaults (off; NaN checks on once enabled)
_STATE = [False, True]


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on (``torch.is_anomaly_enabled``)."""
    return _STATE[0]


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly mode checks backward results for NaN
    (``torch.is_anomaly_check_nan_enabled``; True by default, as PyTorch)."""
    return _STATE[1]


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly mode on or off (``torch.set_anomaly_enabled``); see the module docstring
    for what it checks."""
    _STATE[0], _STATE[1] = bool(enabled), bool(check_nan)
    _engine.set_node_check(_check_node if _STATE[0] and _STATE[1] else None)


def _has_nan(g: Any) -> bool:
    if g._global is not None:  # (a global tensor's shards may live on other processes)
        return False
    v = g._value
    if isinstance(v, Tracer) or is_meta_value(v) or not hasattr(v, "dtype"):
        return False
    if jnp.dtype(v.dtype).kind not in "fc" and str(v.dtype) != "bfloat16":
        return False
    return bool(jnp.isnan(v).any())


def _check_node(node: Any, out: list[Any]) -> None:
    """PyTorch's NaN check of one backward node's results (the engine's node check while
    anomaly mode checks NaN; the engine then runs node by node)."""
    for i, g in enumerate(out):
        if g is not None and _has_nan(g):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               f"output.")


class detect_anomaly:
    """Context manager that turns anomaly mode on for the block (``check_nan=True``: a
    backward node returning NaN raises, naming the node); warns on construction, as
    PyTorch's. Not a decorator (neither is PyTorch's)."""

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the "
                      "runtime and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args: object) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Set anomaly mode on or off: as a function (``set_detect_anomaly(True)``) or as a
    context manager that restores the previous setting on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: object) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)
