"""``flow.compile``: ``torch.compile``'s signature over :func:`flow.jit <jflow.compiler.jit>`.

``flow.compile(model)`` returns a :class:`CompiledModule`: attribute access, ``.eval()`` /
``.train()``, ``.parameters()``, ``.state_dict()`` (with the module's own keys: no
``_orig_mod.`` prefix, unlike PyTorch), ``.load_state_dict``, submodules, indexing a
``Sequential`` -- all reach the module itself; only calling it runs ``flow.jit(module)``.
``flow.compile(fn)`` returns a :class:`CompiledCallable` around ``flow.jit(fn)``. Both are also
decorators (``@flow.compile`` or ``@flow.compile(mode=...)``); ``disable=True`` returns the
original.

The autocast state is part of what a compiled call is specialized on (as torch.compile guards
on it): each autocast dtype (or none) gets its own ``flow.jit`` executable cache, since an
executable bakes the casts in.

The options map as follows: ``fullgraph`` -- flow.jit compiles the whole call as one graph;
where the trace reads a traced value (``if x.sum() > 0:``, ``.item()``, ``int(t)``: a *graph
break* in PyTorch) ``fullgraph=False`` (the default) runs calls with that signature eagerly,
the reason in ``recompile_reasons``, and ``fullgraph=True`` raises an error naming the read,
as PyTorch does; ``dynamic`` -- accepted; flow.jit specializes on shapes (and Python numbers)
and traces again for a new one (``recompile_reasons`` says why); past 8 traced signatures
(``jit.RECOMPILE_LIMIT``, which ``torch._dynamo.config.recompile_limit`` sets under mock_torch)
a new one warns once and runs eagerly, as past torch.compile's recompile limit; ``backend``
-- any name is accepted (XLA compiles everything) except ``"eager"``, which runs the
original uncompiled, and callables (custom dynamo backends), which are refused; ``mode`` --
PyTorch's names are accepted, no effect; ``options`` -- a dict, accepted, no effect.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import jax

from ..amp.autocast_mode import state as _autocast
from ..nn.modules.module import Module
from ..tensor import Tensor
from .jit import RECOMPILE_LIMIT, CompiledFunction

__all__ = ["compile", "CompiledModule", "CompiledCallable"]

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def _tracing(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether this call runs inside a trace (a tracer among the tensor arguments)."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor) and isinstance(a._value, jax.core.Tracer):
            return True
    return False


class _Compiled:
    """What both wrappers share: one ``flow.jit`` per autocast state, made on first use."""

    def __init__(self, target: Callable[..., Any], eager: bool, fullgraph: bool = False) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_eager", eager)
        object.__setattr__(self, "_fullgraph", fullgraph)
        object.__setattr__(self, "_by_autocast", {})

    def _compiled_for(self) -> CompiledFunction:
        key = _autocast.dtype
        fn = self._by_autocast.get(key)
        if fn is None:
            fn = self._by_autocast[key] = CompiledFunction(
                self._target, graph_breaks=not self._fullgraph,
                recompile_limit=RECOMPILE_LIMIT[0])
        return fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._eager or _tracing(args, kwargs):  # inside another trace: it is compiled there
            return self._target(*args, **kwargs)
        return self._compiled_for()(*args, **kwargs)

    @property
    def recompile_reasons(self) -> list[str]:
        """Why the compiled call traced again, over every autocast state it ran in."""
        return [r for fn in self._by_autocast.values() for r in fn.recompile_reasons]


class CompiledModule(_Compiled):
    """``flow.compile(module)``: calls run ``flow.jit(module)``; everything else is the
    module's (attributes are read from and written to it). ``_orig_mod`` is the module, as
    PyTorch's ``OptimizedModule``."""

    def __init__(self, module: Module, eager: bool = False, fullgraph: bool = False) -> None:
        super().__init__(module, eager, fullgraph)
        object.__setattr__(self, "_orig_mod", module)

    def __getattr__(self, name: str) -> Any:
        # only reached for names not found on the wrapper itself
        return getattr(object.__getattribute__(self, "_orig_mod"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self._orig_mod, name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._orig_mod)) | {"_orig_mod", "recompile_reasons"})

    # dunder methods are looked up on the type, not through __getattr__
    def __getitem__(self, idx: Any) -> Any:
        return self._orig_mod[idx]

    def __len__(self) -> int:
        return len(self._orig_mod)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._orig_mod)

    def __repr__(self) -> str:
        return f"CompiledModule({self._orig_mod!r})"


class CompiledCallable(_Compiled):
    """``flow.compile(fn)``: calls run ``flow.jit(fn)`` (one per autocast state); attributes
    not its own are the current ``flow.jit`` function's (``cache_size``, ``trace_count``...)."""

    def __init__(self, fn: Callable[..., Any], eager: bool = False,
                 fullgraph: bool = False) -> None:
        super().__init__(fn, eager, fullgraph)
        functools.update_wrapper(self, fn, updated=())  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._compiled_for(), name)

    def __repr__(self) -> str:
        return f"CompiledCallable({self._target!r})"


def compile(model: Callable[..., Any] | None = None, *, fullgraph: bool = False,  # noqa: A001
            dynamic: bool | None = None, backend: Any = None, mode: str | None = None,
            options: dict[str, Any] | None = None, disable: bool = False) -> Any:
    """``torch.compile``: compile ``model`` (an ``nn.Module`` or a function) with
    ``flow.jit``; see the module docstring for what each option does. Without ``model``,
    a decorator."""
    if mode is not None and options is not None:
        raise RuntimeError("flow.compile: either mode or options can be specified, but both "
                           "can't be specified at the same time.")
    if mode not in _MODES:
        raise RuntimeError(f"flow.compile: unrecognized mode={mode!r}, should be one of: "
                           f"{', '.join(m for m in _MODES if m)}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"flow.compile: options must be a dict, got {type(options).__name__}")
    if backend is not None and not isinstance(backend, str):
        raise NotImplementedError("flow.compile: custom (callable) backends are not supported; "
                                  "jflow compiles with XLA through flow.jit (leave backend "
                                  "unset)")

    def wrap(m: Callable[..., Any]) -> Any:
        if disable:
            return m
        eager = backend == "eager"
        if isinstance(m, Module):
            return CompiledModule(m, eager, fullgraph)
        if not callable(m):
            raise RuntimeError(f"flow.compile: expected an nn.Module or a callable, got "
                               f"{type(m).__name__}")
        return CompiledCallable(m, eager, fullgraph)

    return wrap if model is None else wrap(model)
