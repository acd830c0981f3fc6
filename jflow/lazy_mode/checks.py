"""Functors' value checks in lazy mode: checked now on host data, or deferred to the run.

A functor that must look at values to raise PyTorch's error (an index out of range, a target
outside ``[0, C)``) would flush the segment on every call. Instead it asks here: values at
hand are checked now, as eagerly; a new tensor's host data (a batch of targets or token ids
from a data loader, or a reshape of one) is checked now on its host copy; anything else
pending is checked when the segment runs (``Segment.add_check``), the error attributed to the
recording line.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..lazy_values import LOCAL, LazyRef
from ..tensor import Tensor
from .replay import host_to_device

__all__ = ["defer_check", "discard_checks_on_error", "host_value"]

#: view steps replayed on host data (numpy), by kind: what a value check of a view of a new
#: tensor's host data needs (a reshape of a batch of targets, a squeeze of token ids)
_HOST_STEPS = {
    "reshape": lambda a, shape: a.reshape(shape),
    "transpose": lambda a, perm: a.transpose(perm),
    "squeeze": lambda a, axes: np.squeeze(a, axis=axes),
    "unsqueeze": lambda a, dim: np.expand_dims(a, dim),
    "expand": lambda a, shape: np.broadcast_to(a, shape),
}


def host_value(t: Tensor) -> np.ndarray | None:
    """``t``'s value without running anything, when it is a new tensor's host data pending on
    this thread's segment (``flow.tensor(ndarray)`` in lazy mode) or a reshaping view of one;
    else None."""
    seg = LOCAL.active
    if seg is None:
        return None
    steps: tuple = ()
    if t._aliases:
        m = t._view
        steps = m.steps
        if any(kind not in _HOST_STEPS for kind, _ in steps):
            return None
        t = m.base
    v = t._meta
    if v.__class__ is not LazyRef or v.array is not None or v.segment is not seg:
        return None
    f, wiring, _, _ = seg.nodes[v.wire[0]]
    if f is not host_to_device:
        return None
    a = seg.inputs[wiring[0]]
    for kind, args in steps:
        a = _HOST_STEPS[kind](a, *args)
    return a


def defer_check(reduce: Any, ins: tuple, check: Any, host: Any = None) -> bool:
    """A functor's value check without a flush: in lazy mode, when an input is pending, record
    ``reduce(*ins)`` and run ``check(*its values)`` when the segment runs (see
    ``Segment.add_check``); True. False when the values are at hand or lazy mode is off:
    the caller checks now, as eagerly. ``host``: ``reduce`` on NumPy arrays. With it, inputs
    that are all new tensors' host data (a batch of targets or token ids from a data
    loader, or a reshape of one) are checked now, on their host copies, as eagerly: the
    error is raised at the call, and the run has no check to wait for (a deferred check
    reads its values back as soon as the segment ran, so it ends the overlap of the next
    step's Python with this one's computation)."""
    seg = LOCAL.active
    if seg is None:
        return False
    for t in ins:
        v = t._meta
        if v.__class__ is LazyRef and v.array is None and v.segment is seg:
            break
    else:
        return False
    if host is not None:
        arrays = [host_value(t) for t in ins]
        if all(a is not None for a in arrays):
            check(*host(*arrays))
            return True
    return seg.add_check(reduce, ins, check)


def discard_checks_on_error(fn: Any) -> Any:
    """``fn`` (a functor that may defer a value check, :func:`defer_check`) whose deferred
    checks are dropped when it raises after deferring them (a shape error found after the
    bounds check was recorded): its op was never recorded, so its check must not fire at the
    next run, long after the call already raised. Costs one frame per call."""
    local = LOCAL

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        seg = local.active
        if seg is None:
            return fn(*args, **kwargs)
        checks = seg.checks
        n = len(checks)
        try:
            return fn(*args, **kwargs)
        except BaseException:
            if seg.checks is checks:  # (not flushed in between: these are the call's)
                del checks[n:]
            raise
    return call
