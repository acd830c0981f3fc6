"""Autocast for ``flow._C.linear`` (and so ``flow.linear``, ``nn.functional.linear``,
``nn.Linear``).

api.yaml binds ``linear`` straight to its op (``=> op:linear``), so no functor runs where the
matrix-product functors read the autocast state; this module replaces ``flow._C.linear``
(and the functional namespace's) by a wrapper that casts the eligible floating input,
weight and bias to the autocast dtype first
and otherwise calls the generated function unchanged (its ``_entry``, docstring and signature
are kept). ``jflow/__init__.py`` imports it right after ``flow._C`` is built, before
``flow.linear`` is taken from ``flow._C``. The check costs one thread-local read when
autocast is off.
"""

from __future__ import annotations

import functools
from typing import Any

from .. import _C
from ..functional import F
from ..functional.functors.matmul import autocast_args
from .autocast_mode import state as _autocast

__all__: list[str] = []


def _wrap(linear: Any) -> Any:
    if getattr(linear, "_jflow_autocast", False):  # already wrapped (a module reload)
        return linear

    @functools.wraps(linear)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _autocast.dtype is not None:
            args = autocast_args(_autocast.dtype, *args)
            kwargs = {k: autocast_args(_autocast.dtype, v)[0] if k in ("input", "weight", "bias")
                      else v for k, v in kwargs.items()}
        return linear(*args, **kwargs)

    wrapper._jflow_autocast = True  # type: ignore[attr-defined]
    return wrapper


_C.linear = _wrap(_C.linear)
F.linear = _C.linear  # (flow._C and the functional namespace hold the same functions)
