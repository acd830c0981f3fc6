"""``torch.onnx.symbolic_opset10``: each symbolic raises when called (no ONNX export in jflow)."""

from typing import Any

from ._symbolic import module_getattr


def __getattr__(name: str) -> Any:
    return module_getattr(__name__, name)
