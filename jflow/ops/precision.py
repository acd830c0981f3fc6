"""The precision of float32 products (matmul, einsum, convolution, attention) in jflow's kernels.

PyTorch multiplies float32 matrices in full float32 unless the user allows less
(``torch.set_float32_matmul_precision("high")``: TF32, ``"medium"``: bfloat16). XLA's own
default is TF32 on NVIDIA GPUs and one bfloat16 pass on TPUs, so jflow's kernels ask for
``Precision.HIGHEST`` explicitly, until the user sets a precision: then they pass ``None`` and
JAX applies its ``jax_default_matmul_precision``, which ``flow.set_float32_matmul_precision``
(or ``jax.default_matmul_precision(...)`` / ``JAX_DEFAULT_MATMUL_PRECISION``) sets.

Read when a kernel is traced; JAX keys its compiled programs on that setting, so a change
applies from the next call on (eager ops, ``flow.jit``, lazy mode alike). On CPU every choice
computes the same: XLA's CPU products are float32.
"""

from __future__ import annotations

import jax
from jax import lax

__all__ = ["float32_products", "float32_exact"]

#: ``jax_default_matmul_precision`` values that keep float32 products full float32
_FULL_FLOAT32 = frozenset(("float32", "highest", "F32_F32_F32", "BF16_BF16_F32_X9"))


def float32_products() -> lax.Precision | None:
    """The ``precision=`` of a float product: HIGHEST (PyTorch's default) unless the user has
    chosen one, then ``None`` (JAX's setting applies)."""
    return lax.Precision.HIGHEST if jax.config.jax_default_matmul_precision is None else None


def float32_exact() -> bool:
    """Whether float32 products must be full float32: nobody set a precision (PyTorch's
    default, see :func:`float32_products`) or the setting is a full-float32 one. Kernels that
    pick their own instructions (Pallas' ``dot``: TF32 or not) read it where XLA's products
    read ``precision=``."""
    p = jax.config.jax_default_matmul_precision
    return p is None or str(p) in _FULL_FLOAT32
