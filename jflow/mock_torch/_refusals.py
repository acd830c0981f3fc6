"""The names the mock keeps for PyTorch features jflow does not have: functions that raise when
called and classes that raise when constructed. Libraries import, annotate with and subclass
these names at import time, so they must exist; using one must fail with a message naming it
and saying why. One module's names share one message, built here once instead of a ``def``
per name in every override.

    _refuse = refuser("torch.fx", "jflow has no FX symbolic tracing; ...")
    symbolic_trace, replace_pattern = refusing_functions(__name__, _refuse,
                                                         "symbolic_trace", "replace_pattern")
    Graph = refusing_class(__name__, _refuse, "Graph", "An FX graph (never built in jflow).")

Not an override itself (it lives outside ``overrides``), so it is no ``torch.<name>``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

__all__ = ["refuser", "refusing_function", "refusing_functions", "refusing_class"]

Refuse = Callable[[str], NoReturn]


def refuser(prefix: str, reason: str, exc: type[Exception] = NotImplementedError) -> Refuse:
    """A module's ``_refuse(name)``: raises ``exc(f"{prefix}.{name}: {reason}")``."""
    def refuse(name: str) -> NoReturn:
        raise exc(f"{prefix}.{name}: {reason}")

    return refuse


def refusing_function(module: str, refuse: Refuse, name: str, doc: str | None = None
                      ) -> Callable[..., NoReturn]:
    """A function ``module.name`` that calls ``refuse(name)`` with any arguments."""
    def fn(*args: Any, **kwargs: Any) -> NoReturn:
        refuse(name)

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = module
    fn.__doc__ = doc or "Raises (see the module docstring)."
    return fn


def refusing_functions(module: str, refuse: Refuse, *names: str) -> tuple[Callable[..., NoReturn],
                                                                          ...]:
    """:func:`refusing_function` for each name, in order (to unpack into module globals)."""
    return tuple(refusing_function(module, refuse, n) for n in names)


def refusing_class(module: str, refuse: Refuse, name: str, doc: str | None = None,
                   base: type = object) -> type:
    """A class ``module.name`` (subclassable; ``isinstance`` of any jflow object is False)
    whose construction calls ``refuse(name)``; a subclass's construction refuses too."""
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        refuse(name)

    ns = {"__init__": __init__, "__module__": module,
          "__doc__": doc or "Not in jflow: constructing one raises."}
    cls = type(name, (base,), ns)
    cls.__qualname__ = name
    return cls
