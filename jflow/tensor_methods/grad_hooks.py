"""``Tensor.register_post_accumulate_grad_hook``: ``hook(tensor)`` after backward has
accumulated this leaf's gradient into ``.grad`` (the optimizer-in-backward idiom: the hook
steps the parameter and frees its gradient).

Built on the engine's leaf hooks (``autograd.engine.register_leaf_hook``): a leaf with hooks
runs them once, on its whole gradient, then accumulates it into ``.grad``; a hook marked
``after_accumulation`` (one :class:`_PostAccumulate` per leaf) is instead called with the
leaf after that accumulation, and runs the post-accumulate hooks in registration order.
Differences from PyTorch: the hooks run when the whole backward has finished (as jflow's
tensor hooks on leaves do), not as each leaf's gradient is ready; a leaf with hooks takes the
engine's rule-by-rule backward rather than the whole-graph compiled one; and
``backward(inputs=...)`` runs no leaf hooks.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable
from typing import Any

from ..autograd.engine import _leaf_hooks, register_leaf_hook
from ..tensor import Tensor

__all__ = ["register_post_accumulate_grad_hook", "RemovableHandle"]

_IDS = itertools.count()


class RemovableHandle:
    """What ``register_post_accumulate_grad_hook`` returns: ``remove()`` unregisters the hook
    (also on leaving ``with handle:``), as ``torch.utils.hooks.RemovableHandle``."""

    __slots__ = ("_hooks", "id", "_on_empty")

    def __init__(self, hooks: dict, on_empty: Callable[[], None]) -> None:
        self._hooks, self._on_empty = hooks, on_empty
        self.id = next(_IDS)

    def remove(self) -> None:
        if self._hooks.pop(self.id, None) is not None and not self._hooks:
            self._on_empty()

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class _PostAccumulate:
    """A leaf's post-accumulate hooks, as one of the engine's hooks of that leaf."""

    __slots__ = ("leaf", "hooks", "__weakref__")
    #: the engine calls this hook with the leaf once its gradient is in ``.grad``
    after_accumulation = True

    def __init__(self, leaf: Tensor) -> None:
        self.leaf = weakref.ref(leaf)
        self.hooks: dict[int, Callable[[Tensor], Any]] = {}

    def __call__(self, leaf: Tensor) -> None:
        for hook in list(self.hooks.values()):
            hook(leaf)


def _dispatcher(t: Tensor) -> _PostAccumulate:
    for h in _leaf_hooks.get(id(t), ()):
        if isinstance(h, _PostAccumulate) and h.leaf() is t:
            return h
    d = _PostAccumulate(t)
    register_leaf_hook(t, d)
    return d


def register_post_accumulate_grad_hook(self: Tensor, hook: Callable[[Tensor], Any]
                                       ) -> RemovableHandle:
    """Run ``hook(self)`` each time backward has accumulated this leaf's gradient into
    ``self.grad`` (its return value is ignored; it may read, change or free ``.grad``).
    Returns a handle whose ``remove()`` unregisters it. Only leaves that require grad take
    one, as in PyTorch. (See the module for where jflow's timing differs.)"""
    if not self.requires_grad:
        raise RuntimeError("register_post_accumulate_grad_hook(): cannot register a hook on a "
                           "tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("register_post_accumulate_grad_hook(): post accumulate grad hooks "
                           "cannot be registered on non-leaf tensors")
    if not callable(hook):
        raise TypeError(f"register_post_accumulate_grad_hook(): hook must be callable, got "
                        f"{type(hook).__name__}")
    d = _dispatcher(self)
    ref, key = weakref.ref(d), id(self)

    def on_empty() -> None:  # no hook left: the dispatcher leaves the engine's list
        disp, hooks = ref(), _leaf_hooks.get(key)
        if disp is not None and hooks is not None and disp.leaf() is not None:
            hooks[:] = [h for h in hooks if h is not disp]

    handle = RemovableHandle(d.hooks, on_empty)
    d.hooks[handle.id] = hook
    return handle


Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook  # type: ignore[attr-defined]
