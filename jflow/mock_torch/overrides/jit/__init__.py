"""``torch.jit`` as a module (jflow's ``flow.jit`` is a function: its compiler). TorchScript
does not exist in jflow: ``script`` and ``trace`` return the function or module unchanged so it
runs eagerly (what TorchScript computes, without its compilation; use ``flow.compile`` to
compile), ``is_scripting`` / ``is_tracing`` are False, the annotation helpers (``ignore``,
``unused``, ``export``, ``Final``, ``annotate``, ``interface``) do what they mean for eager
code. ``save`` / ``load`` of TorchScript archives raise."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, NoReturn

from . import annotations  # noqa: F401  (torch.jit.annotations)

__mock_fallback__ = False
__all__ = ["script", "trace", "trace_module", "ignore", "unused", "export", "Final", "annotate",
           "interface", "is_scripting", "is_tracing", "script_if_tracing", "ScriptModule",
           "ScriptFunction", "RecursiveScriptModule", "TracerWarning", "Attribute", "fork",
           "wait", "Future", "save", "load", "freeze", "optimize_for_inference",
           "isinstance", "enable_onednn_fusion", "strict_fusion"]

#: ``x: torch.jit.Final[int]``: a class attribute TorchScript treats as constant
Final = typing.Final


def script(obj: Any = None, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:
    """Returns ``obj`` (function, module or class) unchanged: it runs eagerly, computing what
    the scripted version computes. jflow compiles with ``flow.compile``, not TorchScript."""
    return obj


def trace(func: Any, example_inputs: Any = None, *args: Any, **kwargs: Any) -> Any:
    """Returns ``func`` unchanged (runs eagerly; ``example_inputs`` are not run). A traced
    function in PyTorch freezes Python control flow to the example's path; here it keeps it."""
    return func


def trace_module(mod: Any, inputs: Any = None, *args: Any, **kwargs: Any) -> Any:
    """As :func:`trace`, for a module."""
    return mod


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """``@torch.jit.ignore`` (with or without arguments): the function, unchanged."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn: Any) -> Any:
    """``@torch.jit.unused``: the function, unchanged (it runs eagerly when called)."""
    return fn


def export(fn: Any) -> Any:
    """``@torch.jit.export``: the method, unchanged."""
    return fn


def interface(obj: Any) -> Any:
    """``@torch.jit.interface``: the class, unchanged."""
    return obj


def annotate(the_type: Any, the_value: Any) -> Any:
    """``torch.jit.annotate(T, v)``: ``v`` (a type hint for the TorchScript compiler)."""
    return the_value


def isinstance(obj: Any, target_type: Any) -> bool:  # noqa: A001  (torch.jit.isinstance)
    """``torch.jit.isinstance``: a plain ``isinstance`` on the runtime class (container
    element types are not checked)."""
    import builtins  # noqa: PLC0415
    origin = typing.get_origin(target_type) or target_type
    return builtins.isinstance(obj, origin)


def is_scripting() -> bool:
    """False: code always runs as Python in jflow (never as TorchScript)."""
    return False


def is_tracing() -> bool:
    """False: ``torch.jit.trace`` does not trace in jflow (see :func:`trace`)."""
    return False


def script_if_tracing(fn: Callable) -> Callable:
    """The function, unchanged."""
    return fn


_script_if_tracing = script_if_tracing


def _overload_method(fn: Callable) -> Callable:
    """TorchScript overload declaration: the function, unchanged."""
    return fn


def _overload(fn: Callable) -> Callable:
    """TorchScript overload declaration: the function, unchanged."""
    return fn


class ScriptModule:
    """``torch.jit.ScriptModule``: no object is ever one (nothing is scripted in jflow), so
    ``isinstance(m, torch.jit.ScriptModule)`` is False; constructing one raises."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("torch.jit.ScriptModule: jflow has no TorchScript; "
                                  "torch.jit.script(module) returns the module itself")


class RecursiveScriptModule(ScriptModule):
    """See :class:`ScriptModule`."""


class ScriptFunction:
    """``torch.jit.ScriptFunction``: no object is ever one (see :class:`ScriptModule`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("torch.jit.ScriptFunction: jflow has no TorchScript")


class TracerWarning(Warning):
    """Warnings of ``torch.jit.trace`` (never emitted: nothing is traced)."""


class Attribute:
    """``torch.jit.Attribute(value, type)``: eagerly, the value itself."""

    def __new__(cls, value: Any, type: Any = None) -> Any:  # noqa: A002
        return value


class Future:
    """What :func:`fork` returns: the result, computed when forked."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def wait(self) -> Any:
        """The forked call's result."""
        return self._value


def fork(func: Callable, *args: Any, **kwargs: Any) -> Future:
    """``torch.jit.fork``: runs ``func`` now (eager code has no inter-op parallelism) and
    returns a :class:`Future` holding its result."""
    return Future(func(*args, **kwargs))


def wait(future: Future) -> Any:
    """The result of :func:`fork`."""
    return future.wait()


def _refuse(name: str) -> Callable[..., NoReturn]:
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(
            f"torch.jit.{name}: jflow has no TorchScript archives or graph passes; save "
            f"weights with torch.save(model.state_dict(), path) and compile with torch.compile")
    refuse.__name__ = refuse.__qualname__ = name
    return refuse


save = _refuse("save")
load = _refuse("load")
freeze = _refuse("freeze")
optimize_for_inference = _refuse("optimize_for_inference")


def enable_onednn_fusion(enabled: bool) -> None:
    """No-op: oneDNN fusion is a TorchScript pass; XLA fuses on its own."""


class strict_fusion:  # noqa: N801  (PyTorch's name)
    """A TorchScript fusion assertion context: nothing to assert for eager code."""

    def __enter__(self) -> strict_fusion:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None
