"""Running recorded nodes: one by one on the eager executables, or traced into one program.

A segment (:mod:`jflow.lazy_mode.segment`) is a list of nodes — ``(executable, wiring, number
of dynamic values, number of outputs)`` — over the inputs it reads from outside. This module
runs such a list (:func:`replay`), decides which outputs a run must return (:func:`live`:
the ones anything still references) and holds the helpers every lazy trace or run goes
through: recording off while lazy mode itself traces or computes (:func:`not_recording`,
:func:`computing`) and the jit of a node that stands for many eager ops (:func:`eager_jit`).
"""

from __future__ import annotations

import sys
from typing import Any

import jax

from .._jax_compat import trace_state_clean_fn
from .._jax_setup import EAGER_ROUNDING
from ..lazy_values import LOCAL, LazyRef

__all__ = ["replay", "NodeFailed", "live", "not_recording", "computing", "eager_jit",
           "host_to_device"]


class NodeFailed(Exception):
    """Node ``node`` of a node-by-node replay raised ``cause``; ``outs``: the outputs of the
    nodes before it."""

    def __init__(self, node: int, outs: list[list[Any]], cause: BaseException) -> None:
        super().__init__(node)
        self.node, self.outs, self.cause = node, outs, cause


def replay(nodes: list, inputs: list, dvs: list, nested: bool = False) -> list[list[Any]]:
    """Every node's outputs, computed in order (eagerly, or — ``nested`` — traced into a
    segment's executable: see :func:`eager_jit`); a failing node raises
    :class:`NodeFailed`."""
    outs: list[list[Any]] = []
    pos = 0
    for k, (f, wiring, ndv, _) in enumerate(nodes):
        if nested:
            f = getattr(f, "_jflow_nested", f)
        args = [inputs[w] if w.__class__ is int else outs[w[0]][w[1]] for w in wiring]
        if ndv:
            args += dvs[pos:pos + ndv]
            pos += ndv
        try:
            r = f(*args)
        except Exception as e:  # noqa: BLE001
            raise NodeFailed(k, outs, e) from e
        outs.append(list(r) if isinstance(r, (tuple, list)) else [r])
    return outs


def host_to_device(x: Any) -> Any:
    """Host data as a device array: inside a compiled run the call's own transfer (the
    ``device_put`` of a traced value is the identity), in a node-by-node run a plain
    ``device_put`` (never a compile per shape: a transfer is not a computation)."""
    return jax.device_put(x)


def eager_jit(fn: Any) -> Any:
    """``jax.jit(fn)`` for one recorded node that stands for many eager ops (a backward, an
    optimizer step): run alone (a segment replayed node by node) it compiles with
    :data:`EAGER_ROUNDING`, as a segment does; traced into a segment's executable — which
    has the options, and a nested jit may not — its plain twin (``_jflow_nested``) is."""
    f = jax.jit(fn, compiler_options=EAGER_ROUNDING)
    f._jflow_nested = jax.jit(fn)
    return f


def not_recording(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` with this thread's recording off: a trace that lazy mode runs (an op's
    abstract evaluation, a compiled backward's rules, a segment's compile) may run jflow ops
    on concrete constants (a rule's ``neg(lambd)``); they must run, not record into the
    segment being built — a later read would flush it halfway through a call."""
    local = LOCAL
    was = local.active
    local.active = None
    try:
        return fn(*args)
    finally:
        local.active = was


_TRACE_CLEAN = trace_state_clean_fn()


def computing(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` computing values on this thread, recording off: under
    ``jax.ensure_compile_time_eval`` while a trace is active (a read inside ``flow.jit`` /
    ``jax.jit`` must compute, not stage into the trace)."""
    if _TRACE_CLEAN is not None and _TRACE_CLEAN():
        return not_recording(fn, *args)
    with jax.ensure_compile_time_eval():
        return not_recording(fn, *args)


def live(refs: list[tuple[LazyRef, ...]]) -> tuple[tuple[bool, ...], ...]:
    """Per node, which outputs anything outside the segment still references (a tensor, the
    tape, a reader): only those come back from the run, so XLA fuses the rest away and an
    unread intermediate costs no output buffer. A value nothing references can never be read
    again (CPython frees it), so this is exact, not a guess."""
    out = []
    keep = out.append
    for rs in refs:
        if len(rs) == 1:  # (most ops: no inner loop)
            keep(_KEPT if _refcount(rs[0]) > _BASE1 else _DROPPED)
        else:
            keep(tuple([_refcount(r) > _BASE for r in rs]))
    return tuple(out)


_KEPT, _DROPPED = (True,), (False,)
_refcount = sys.getrefcount
_BASE = _BASE1 = 0


def _calibrate() -> None:
    """The reference counts :func:`live` sees for a value only the segment holds (they
    depend on the interpreter's frame layout, so they are measured, not assumed)."""
    global _BASE, _BASE1

    def dead(n: int) -> bool:  # (n fresh values held by their tuple only)
        return not any(live([tuple(object.__new__(LazyRef) for _ in range(n))])[0])
    for _BASE1 in range(16):  # noqa: B007  (the global is the loop variable)
        if dead(1):
            break
    for _BASE in range(16):  # noqa: B007
        if dead(2):
            break
    if not (dead(1) and dead(2)):
        raise RuntimeError("lazy_mode: cannot calibrate reference counts")


_calibrate()
