"""Compiling jflow code into one XLA executable: ``flow.jit`` and the machinery ``nn.Graph``
builds on (moving module / optimizer / generator state in and out of ``jax.jit``), and
``flow.compile`` (``torch.compile``'s signature over ``flow.jit``: :mod:`.compile`).

``flow.jit.script`` and ``flow.jit.trace`` (TorchScript) exist only to say what to use instead.
"""

from __future__ import annotations

from typing import Any, NoReturn

from .compile import CompiledCallable, CompiledModule, compile
from .jit import CompiledFunction, RecompileWarning, jit

__all__ = ["jit", "compile", "CompiledFunction", "CompiledModule", "CompiledCallable",
           "RecompileWarning"]


def _torchscript(name: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(
            f"flow.jit.{name} (TorchScript) is not supported in jflow; use flow.compile(model) "
            f"or flow.jit(fn) to compile, and flow.save(model.state_dict(), path) to save")
    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"``torch.jit.{name}``: not supported; raises NotImplementedError."
    return refuse


jit.script = _torchscript("script")  # type: ignore[attr-defined]
jit.trace = _torchscript("trace")  # type: ignore[attr-defined]
