"""``flow.onnx``: ONNX export is not available in jflow."""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["export", "is_in_onnx_export"]


def export(*args: Any, **kwargs: Any) -> NoReturn:
    """``torch.onnx.export``: not supported; raises NotImplementedError."""
    raise NotImplementedError(
        "flow.onnx.export is not supported in jflow: there is no ONNX exporter for JAX "
        "programs. Save the weights with flow.save(model.state_dict(), 'model.safetensors') "
        "and export from PyTorch, or use jax.export / StableHLO (flow.jit compiles to XLA)")


def is_in_onnx_export() -> bool:
    """Always False."""
    return False
