"""What a compiled function can reach: the modules and optimizers a step uses without them
being arguments (closure cells, globals, the object a method is bound to, containers), found
on every call so that rebinding one retraces instead of running stale state.

:func:`discover` walks and records what it read; :func:`reach_holds` re-checks those reads
by identity (the compiled call's fast path); :func:`describe_reach_change` says what changed.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from itertools import repeat as _repeat
from operator import is_ as _is
from typing import Any

import jax
import numpy as np

from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer
from ..tensor import Tensor

__all__ = ["discover", "reach_holds", "describe_reach_change", "Opaque"]


class Opaque:
    """Base of objects :func:`discover` does not look into (compiled functions: their own
    reach is theirs)."""

    __slots__ = ()


#: How far :func:`discover` follows containers and attributes, and how many objects it visits
#: at most (it runs on every call: a step must not pay for walking a large data structure).
_DISCOVER_DEPTH = 3
_DISCOVER_LIMIT = 256
#: Values that never lead to a module (checked by exact type first: the common case).
_LEAF_TYPES = frozenset({int, float, bool, str, bytes, complex, type(None)})
_SKIP = (types.ModuleType, type, Tensor, np.ndarray, jax.Array, types.BuiltinFunctionType,
         Opaque)
#: Functions of these packages are not user code: their closures and globals hold no model.
_LIBRARIES = frozenset({"jflow", "jax", "jaxlib", "numpy", "builtins", "functools"})


_PATH_FORMATS = {"self": "self", "__self__": ".__self__", "closure": "closure '{}'",
                 "global": "global '{}'", "item": "[{!r}]", "attr": ".{}"}


def _path_text(path: Any) -> str:
    """A path kept as nested ``(parent, kind, key)`` triples (cheap to build: formatted only
    for what is found) as text."""
    parts = []
    while path is not None:
        path, kind, key = path
        parts.append(_PATH_FORMATS[kind].format(key))
    return "".join(reversed(parts))


def discover(*roots: Callable[..., Any], checks: list | None = None
             ) -> tuple[tuple[str, Any], ...]:
    """``(path, object)`` for every module and optimizer the roots can reach: a root itself
    (a module), the object a method is bound to and that object's attributes, closure cells,
    the globals the code names, functions reached that way (their closures and globals), and
    dicts, lists, tuples and plain objects among those, a few levels deep.

    It runs on every call, so a rebinding (``model = Net()`` again in the closure or module,
    ``models["g"] = other``, ``trainer.model = other``) is seen before the executable runs:
    the reachable set is part of the cache key and a change retraces, with the path as the
    reason. Paths read like the code: ``closure 'model'``, ``global 'models'['g']``,
    ``self.model``.

    ``checks``: filled with what the walk read from every mutable object it looked into
    (closure cells, the globals named, list items, dict and ``__dict__`` entries, by
    identity), so :func:`reach_holds` can tell cheaply that a new walk would find the same;
    ``checks[0]`` is False when the walk was cut short (then only a walk can tell)."""
    complete = [True]
    found: list[tuple[Any, Any]] = []
    seen: set[int] = set()
    budget = [_DISCOVER_LIMIT]

    def visit(path: Any, obj: Any, depth: int) -> None:
        t = type(obj)
        if t in _LEAF_TYPES or id(obj) in seen:
            return
        if budget[0] <= 0:
            complete[0] = False
            return
        seen.add(id(obj))
        budget[0] -= 1
        if isinstance(obj, (Module, Optimizer)):
            found.append((path, obj))
            return
        if depth >= _DISCOVER_DEPTH:
            return
        if t is types.MethodType:
            visit((path, "__self__", None) if path is not None else (None, "self", None),
                  obj.__self__, depth)
            visit(path, obj.__func__, depth)
        elif t is types.FunctionType:
            if (obj.__module__ or "").partition(".")[0] in _LIBRARIES:
                return
            code = obj.__code__
            if checks is not None:
                cells = obj.__closure__ or ()
                g = obj.__globals__
                checks.append((2, obj, code, cells, tuple(map(_cell_value, cells)), g,
                               code.co_names, tuple(map(g.get, code.co_names,
                                                        _repeat(_MISSING)))))
            for name, cell in zip(code.co_freevars, obj.__closure__ or ()):
                try:
                    value = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                visit((None, "closure", name), value, depth + 1)
            g = obj.__globals__
            for name in code.co_names:
                value = g.get(name, _MISSING)
                if value is not _MISSING:
                    visit((None, "global", name), value, depth + 1)
        elif t is list or t is tuple:
            if checks is not None and t is list:
                checks.append((0, obj, tuple(obj)))
            if len(obj) > _DISCOVER_LIMIT:
                complete[0] = False
            for i, v in enumerate(obj[:_DISCOVER_LIMIT]):
                if type(v) not in _LEAF_TYPES:
                    visit((path, "item", i), v, depth + 1)
        elif isinstance(obj, dict):
            if checks is not None:
                checks.append((1, obj, tuple(obj), tuple(obj.values())))
            if len(obj) > _DISCOVER_LIMIT:
                complete[0] = False
            for n, (k, v) in enumerate(obj.items()):
                if n >= _DISCOVER_LIMIT:
                    break
                if type(v) not in _LEAF_TYPES:
                    visit((path, "item", k), v, depth + 1)
        elif not isinstance(obj, _SKIP):
            d = getattr(obj, "__dict__", None)  # a plain or callable object, e.g. nn.Graph
            if type(d) is dict:
                if checks is not None:
                    checks.append((1, d, tuple(d), tuple(d.values())))
                if len(d) > _DISCOVER_LIMIT:
                    complete[0] = False
                known = getattr(t, "_state_known_to_compiler", ())  # e.g. a Graph's registry
                for n, (k, v) in enumerate(d.items()):
                    if n >= _DISCOVER_LIMIT:
                        break
                    if type(v) not in _LEAF_TYPES and k not in known:
                        visit((path, "attr", k), v, depth + 1)

    if checks is not None:
        checks.append(None)  # (becomes the completeness flag)
    for root in roots:
        visit(None, root, 0)
    if checks is not None:
        checks.insert(0, complete[0])
        checks.pop(1)
    return tuple((_path_text(p), o) for p, o in found)


def _cell_value(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return _MISSING


def reach_holds(checks: list) -> bool:
    """Whether everything :func:`discover` read when it filled ``checks`` is still the same
    objects (then a new walk finds exactly what that one found)."""
    if not checks[0]:
        return False
    for c in checks[1:]:
        kind = c[0]
        if kind == 0:  # a list: its items
            obj, snap = c[1], c[2]
            if len(obj) != len(snap) or not all(map(_is, obj, snap)):
                return False
        elif kind == 1:  # a dict or __dict__: its keys and values
            d, keys, values = c[1], c[2], c[3]
            if len(d) != len(keys) or not all(map(_is, d, keys)) \
                    or not all(map(_is, d.values(), values)):
                return False
        else:  # a function: its code, closure cells and the globals it names
            f, code, cells, cvals, g, names, gvals = c[1:]
            if f.__code__ is not code or not all(map(_is, map(_cell_value, cells), cvals)) \
                    or not all(map(_is, map(g.get, names, _repeat(_MISSING)), gvals)):
                return False
    return True


_MISSING = object()


def describe_reach_change(old: tuple, new: tuple) -> str:
    """Why the reachable modules/optimizers differ: which paths were rebound, appeared or
    disappeared (keys are ``((path, id), ...)``)."""
    a, b = dict(old), dict(new)
    out = []
    for path in dict.fromkeys([*a, *b]):
        if path in a and path in b:
            if a[path] != b[path]:
                out.append(f"{path or 'the function'} was rebound to another object")
        elif path in b:
            out.append(f"{path} now holds a module or optimizer")
        else:
            out.append(f"{path} no longer holds the module or optimizer it held")
    return "; ".join(out) or "the reachable modules and optimizers changed"

