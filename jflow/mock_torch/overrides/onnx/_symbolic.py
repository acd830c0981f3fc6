"""The body of ``torch.onnx.symbolic_helper`` and ``symbolic_opset<N>``: any symbolic
function looked up is one that raises (ONNX export is not in jflow)."""

from __future__ import annotations

from typing import Any, NoReturn


def symbolic(name: str) -> Any:
    """A symbolic function that raises when called."""
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(f"torch.onnx symbolic {name}: jflow has no ONNX export")
    refuse.__name__ = refuse.__qualname__ = name
    return refuse


def module_getattr(module: str, name: str) -> Any:
    """``torch.onnx.<module>.<name>``."""
    if name.startswith("__"):
        raise AttributeError(name)
    return symbolic(f"{module}.{name}")
