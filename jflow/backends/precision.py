"""The float32 matmul precision: PyTorch's names over ``jax_default_matmul_precision``.

PyTorch's ``"highest"`` is full float32 (JAX ``"float32"``), ``"high"`` allows TensorFloat-32
(``"tensorfloat32"``; on TPU, where there is no TF32, XLA uses three bfloat16 passes) and
``"medium"`` allows bfloat16 (``"bfloat16"``). Setting it calls
``jax.config.update("jax_default_matmul_precision", ...)``: a process-wide JAX setting that
applies to every float32 matrix product, einsum, convolution and attention traced afterwards
(JAX keys its compiled programs on it, so the next call of an op compiles anew).

When nobody has set it (JAX's default, ``None``), jflow's kernels ask XLA for full float32
products on every backend (``jflow/ops/precision.py``), PyTorch's default, where XLA's own
default would be TF32 on NVIDIA GPUs and a bfloat16 pass on TPUs: so
:func:`get_float32_matmul_precision` reports ``"highest"``.
"""

from __future__ import annotations

import jax

__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision"]

_TO_JAX = {"highest": "float32", "high": "tensorfloat32", "medium": "bfloat16"}
_FROM_JAX = {"float32": "highest", "highest": "highest", "F32_F32_F32": "highest",
             "tensorfloat32": "high", "high": "high", "TF32_TF32_F32": "high",
             "TF32_TF32_F32_X3": "high", "BF16_BF16_F32_X3": "high",
             "BF16_BF16_F32_X6": "high", "BF16_BF16_F32_X9": "highest",
             "bfloat16": "medium", "BF16_BF16_F32": "medium", "BF16_BF16_BF16": "medium"}


def set_float32_matmul_precision(precision: str) -> None:
    """``"highest"``, ``"high"`` or ``"medium"`` (see the module docstring)."""
    if precision not in _TO_JAX:
        raise RuntimeError(f"set_float32_matmul_precision: invalid precision {precision!r}; "
                           f"expected one of 'highest', 'high', 'medium'")
    jax.config.update("jax_default_matmul_precision", _TO_JAX[precision])


def get_float32_matmul_precision() -> str:
    """The current float32 matmul precision, in PyTorch's names."""
    value = jax.config.jax_default_matmul_precision
    if value is None or value == "default":
        return "highest"
    return _FROM_JAX.get(str(value), "highest")
