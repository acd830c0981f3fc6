"""``torch.onnx.symbolic_helper``: the decorators libraries apply at import to their ONNX
symbolic functions (``parse_args``, ``quantized_args``) return the function unchanged (export
never runs in jflow); any other helper raises when called."""

from collections.abc import Callable
from typing import Any

from ._symbolic import module_getattr


def parse_args(*arg_descriptors: Any) -> Callable[[Callable], Callable]:
    """A decorator for a symbolic function: the function, unchanged."""
    return lambda fn: fn


def quantized_args(*arg_q_descriptors: Any, **kwargs: Any) -> Callable[[Callable], Callable]:
    """A decorator for a symbolic function: the function, unchanged."""
    return lambda fn: fn


def __getattr__(name: str) -> Any:
    return module_getattr(__name__, name)
