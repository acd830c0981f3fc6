"""``torch.onnx``: jflow.onnx (export raises), plus the symbolic-function modules libraries
import to register ONNX symbolics: ``register_custom_op_symbolic`` accepts a registration
(export never runs in jflow, so nothing is lost); calling a symbolic raises."""

from __future__ import annotations

from typing import Any

__all__ = ["register_custom_op_symbolic", "unregister_custom_op_symbolic", "dynamo_export",
           "is_onnx_log_enabled"]


def register_custom_op_symbolic(symbolic_name: str, symbolic_fn: Any, opset_version: int
                                ) -> None:
    """Accepted: used only by ``torch.onnx.export``, which raises in jflow."""


def unregister_custom_op_symbolic(symbolic_name: str, opset_version: int) -> None:
    """Accepted (see :func:`register_custom_op_symbolic`)."""


def dynamo_export(*args: Any, **kwargs: Any) -> Any:
    """Raises: no ONNX export in jflow."""
    import jflow.onnx  # noqa: PLC0415
    return jflow.onnx.export(*args, **kwargs)


def is_onnx_log_enabled() -> bool:
    """False."""
    return False
