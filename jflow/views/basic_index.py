"""Basic-index reads and writes (``x[i]``, ``x[i, 1:3]``, ``x[i] = v``) whose integer
positions reach the cached executable as runtime scalars.

A ``getitem`` / ``setitem`` spec holds its ints as text (``"i5"``), so every new position is a
new executable: a ``Dataset.__getitem__`` doing ``self.data[i]`` over N samples, a decoding loop
writing ``cache[t] = k`` or a per-row loop compiled N times (~30 ms each) and kept evicting
each other from the op's bounded cache. Here each ``i<k>`` item of an eager call on a local
tensor becomes ``t`` — a 0-d index tensor, which the ops already apply as a view item — fed
a cached device scalar, so one executable serves every position. The ints are bounds-checked
and normalised on the host first (JAX would clamp silently). As PyTorch's compiler does with
sizes ("automatic dynamic"), an index pattern goes dynamic only once a second position is
seen for it: a fixed ``x[0]`` keeps its static executable (a dispatch ~4 µs cheaper than one
with a scalar input), a loop over positions compiles twice in all. Traced and global tensors keep
the static spec: inside a trace a static slice is what XLA optimises best, and a global
tensor's index would itself have to be global.

The static spec stays the view's recorded step (its strides and offset are computed from it).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from ..ops import get as _get_op
from ..ops.subscript import parse_index_spec
from ..tensor import Tensor, _wrap, mark_constant

__all__ = ["get", "put"]

_getitem = _get_op("getitem").apply
_setitem = _get_op("setitem").apply

#: (spec, shape) -> (dynamic spec, normalised ints) or None (out of range, or no ints): bounded
_PLANS: dict[tuple[str, tuple[int, ...]], Any] = {}
#: (dynamic spec, shape) -> the static spec first seen for it, or True once another was seen
_SEEN: dict[tuple[str, tuple[int, ...]], Any] = {}
#: int -> a device int64 scalar holding it (an index input): bounded
_SCALARS: dict[int, Tensor] = {}
_LIMIT = 4096


def _plan(spec: str, shape: tuple[int, ...]) -> Any:
    key = (spec, shape)
    plan = _PLANS.get(key, False)
    if plan is not False:
        return plan
    items = parse_index_spec(spec)
    n_e = len(shape) - sum(1 for it in items if it[0] in ("i", "s"))
    toks, ints, d, plan = [], [], 0, None
    for it in items:
        kind = it[0]
        if kind == "i":
            if d >= len(shape) or not -shape[d] <= it[1] < shape[d]:
                break  # out of range: the static op raises PyTorch's error
            toks.append("t")
            ints.append(it[1] % shape[d])
            d += 1
            continue
        if kind == "s":
            toks.append(f"s{'' if it[1] is None else it[1]}:{'' if it[2] is None else it[2]}:"
                        f"{it[3]}")
            d += 1
        elif kind == "e":
            toks.append("e")
            d += max(n_e, 0)
        else:
            toks.append("n" if kind == "n" else f"b{int(it[1])}")
    else:
        if ints:
            plan = (",".join(toks), tuple(ints))
    if len(_PLANS) >= _LIMIT:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


def _scalar(k: int) -> Tensor:
    t = _SCALARS.get(k)
    if t is None:
        if len(_SCALARS) >= _LIMIT:
            _SCALARS.clear()
        t = _SCALARS[k] = mark_constant(_wrap(jax.device_put(np.int64(k))))
    return t


def _dynamic(x: Tensor, spec: str) -> Any:
    v = x._meta  # (shape and tracer-ness only: a lazy value is not computed)
    if x._global is not None or isinstance(v, Tracer) or "i" not in spec:
        return None
    plan = _plan(spec, v.shape)
    if plan is None:
        return None
    key = (plan[0], v.shape)
    seen = _SEEN.get(key)
    if seen is True:
        return plan
    if seen is None:
        if len(_SEEN) >= _LIMIT:
            _SEEN.clear()
        _SEEN[key] = spec
        return None
    if seen == spec:
        return None
    _SEEN[key] = True
    return plan


def get(x: Tensor, spec: str) -> Tensor:
    """``getitem(x, spec)`` for a basic spec (no index tensors)."""
    plan = _dynamic(x, spec)
    if plan is None:
        return _getitem(x, [], spec=spec)
    return _getitem(x, [_scalar(k) for k in plan[1]], spec=plan[0])


def put(x: Tensor, value: Tensor, spec: str) -> Tensor:
    """``setitem(x, value, spec)`` for a basic spec (no index tensors): x with the
    indexed region replaced by ``value``."""
    plan = _dynamic(x, spec)
    if plan is None:
        return _setitem(x, value, [], spec=spec)
    return _setitem(x, value, [_scalar(k) for k in plan[1]], spec=plan[0])
