"""Containers that say when they change: an optimizer's ``param_groups`` (the list, each group,
each group's ``params`` list) and its ``state`` as a compiled step writes it back.

A compiled step (``flow.jit`` / ``nn.Graph``) reuses its last cache key while nothing that
shapes the trace changed. Re-reading every group and every state entry on each call would cost
more than the step's own dispatch; instead these plain ``list`` / ``dict`` subclasses bump
:data:`VERSION` on every in-place change, so a call compares one integer. A group's ``"lr"``
(and ``"initial_lr"``) are exempt: the learning rate is an input of the step, and schedulers
write it every step.
"""

from __future__ import annotations

from typing import Any

__all__ = ["VERSION", "WatchedDict", "WatchedGroup", "WatchedList"]

#: ``[n]``: bumped by every in-place change of a watched container
VERSION = [0]

#: group entries whose change need not be seen (the learning rate is an input of the step)
_INPUT_KEYS = frozenset(("lr", "initial_lr"))


def _bumping(base: type, name: str) -> Any:
    method = getattr(base, name)

    def bumped(self: Any, *args: Any, **kwargs: Any) -> Any:
        VERSION[0] += 1
        return method(self, *args, **kwargs)
    bumped.__name__ = name
    bumped.__doc__ = method.__doc__
    return bumped


class WatchedList(list):
    """A list that bumps :data:`VERSION` on every in-place change."""

    __slots__ = ()

    __setitem__ = _bumping(list, "__setitem__")
    __delitem__ = _bumping(list, "__delitem__")
    __iadd__ = _bumping(list, "__iadd__")
    __imul__ = _bumping(list, "__imul__")
    append = _bumping(list, "append")
    extend = _bumping(list, "extend")
    insert = _bumping(list, "insert")
    remove = _bumping(list, "remove")
    pop = _bumping(list, "pop")
    clear = _bumping(list, "clear")
    sort = _bumping(list, "sort")
    reverse = _bumping(list, "reverse")


class WatchedDict(dict):
    """A dict that bumps :data:`VERSION` on every in-place change (``opt.state`` and its
    entries as a compiled step writes them back)."""

    __slots__ = ()

    __setitem__ = _bumping(dict, "__setitem__")
    __delitem__ = _bumping(dict, "__delitem__")
    __ior__ = _bumping(dict, "__ior__")
    pop = _bumping(dict, "pop")
    popitem = _bumping(dict, "popitem")
    clear = _bumping(dict, "clear")
    update = _bumping(dict, "update")
    setdefault = _bumping(dict, "setdefault")


class WatchedGroup(WatchedDict):
    """A parameter group: a dict that bumps :data:`VERSION` on every in-place change except
    of its learning rate."""

    __slots__ = ()

    def __setitem__(self, key: Any, value: Any) -> None:
        if key not in _INPUT_KEYS:
            VERSION[0] += 1
        dict.__setitem__(self, key, value)
