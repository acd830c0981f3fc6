"""``flow.backends``: ``torch.backends``' switches, and the float32 matmul precision.

* ``flow.backends.cudnn``: ``benchmark``, ``deterministic``, ``enabled``, ``allow_tf32`` are
  accepted and kept, and change nothing (XLA picks convolution algorithms itself);
* ``flow.backends.cuda.matmul.allow_tf32``: setting it sets the float32 matmul precision
  (True: ``"high"``, False: ``"highest"``), as PyTorch;
* ``flow.set_float32_matmul_precision`` / ``flow.get_float32_matmul_precision``: PyTorch's
  ``"highest"`` / ``"high"`` / ``"medium"`` mapped to JAX's ``jax_default_matmul_precision``
  (``"float32"`` / ``"tensorfloat32"`` / ``"bfloat16"``), which governs float32 matrix
  products and convolutions.
"""

from __future__ import annotations

from . import cuda, cudnn, mps
from .precision import get_float32_matmul_precision, set_float32_matmul_precision

__all__ = ["cuda", "cudnn", "mps", "set_float32_matmul_precision",
           "get_float32_matmul_precision"]
