"""The Pallas names jflow's kernels use, in one place (JAX 0.10 is the reference; 0.11 too).

Every version difference of the Pallas API is absorbed here: the kernels import ``pl``,
``load``, ``store`` and :func:`compiler_params` from this module only.

Backend choice: on JAX 0.10 a ``pallas_call`` on GPU is lowered to Mosaic GPU unless its
``compiler_params`` are Triton's (``jax_pallas_use_mosaic_gpu`` defaults to True, and
``pallas_call`` for Mosaic GPU is deprecated in favour of ``plgpu.kernel``). jflow's GPU
kernels are Triton kernels (masked loads of arbitrary shapes, any NVIDIA GPU from Ampere
on), so they always pass Triton's compiler params explicitly: see docs/kernels.md.
"""

from __future__ import annotations

from typing import Any

from jax.experimental import pallas as pl

try:  # JAX >= 0.4.36: the Triton-specific names live in jax.experimental.pallas.triton
    from jax.experimental.pallas import triton as _plt
except ImportError:  # pragma: no cover  (a JAX without the Triton backend)
    _plt = None

__all__ = ["pl", "load", "store", "compiler_params", "next_power_of_2", "cdiv", "out_struct", "dot",
           "SQUEEZED"]


def _triton_params_cls() -> Any:
    for owner, name in ((_plt, "CompilerParams"), (_plt, "TritonCompilerParams"),
                        (pl, "TritonCompilerParams")):
        cls = getattr(owner, name, None) if owner is not None else None
        if cls is not None:
            return cls
    return None


_TRITON_PARAMS = _triton_params_cls()

#: a squeezed (size-1, dropped) block dimension: ``pl.squeezed`` where it exists, else None
SQUEEZED: Any = getattr(pl, "squeezed", None)


def compiler_params(num_warps: int, num_stages: int = 1) -> Any:
    """Triton compiler params (selects the Triton lowering on GPU; ignored in interpret mode)."""
    if _TRITON_PARAMS is None:  # pragma: no cover
        return None
    return _TRITON_PARAMS(num_warps=num_warps, num_stages=num_stages)


def load(ref: Any, *, mask: Any = None, other: Any = None) -> Any:
    """A masked load (Triton's ``load``; the generic ``pl.load`` on JAX versions that keep it)."""
    if _plt is not None and hasattr(_plt, "load"):
        return _plt.load(ref, mask=mask, other=other)
    return pl.load(ref, (), mask=mask, other=other)  # pragma: no cover


def store(ref: Any, value: Any, *, mask: Any = None) -> None:
    """A masked store (see :func:`load`)."""
    if _plt is not None and hasattr(_plt, "store"):
        _plt.store(ref, value, mask=mask)
        return
    pl.store(ref, (), value, mask=mask)  # pragma: no cover


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _check_vma() -> bool:
    try:  # private: whether we are tracing inside a shard_map that checks value types
        from jax._src import config as _cfg
        return bool(_cfg._check_vma.value)
    except (ImportError, AttributeError):  # pragma: no cover
        return False


def out_struct(shape: Any, dtype: Any) -> Any:
    """A ``pallas_call`` output shape.

    Inside ``shard_map`` (how global tensors run: jflow/sharding/execute.py) Pallas wants to be
    told how each output varies over the manual mesh axes. jflow lowers kernels with plain
    avals (the registry strips the manual-axis types: the op's SBP signature decides
    validity), so the outputs vary over no axis: ``manual_axis_type`` with nothing varying on
    JAX 0.10, ``vma`` (an empty set) on later versions.
    """
    import jax
    if not _check_vma():
        return jax.ShapeDtypeStruct(tuple(shape), dtype)
    try:
        from jax._src.core import ManualAxisType
        return jax.ShapeDtypeStruct(tuple(shape), dtype, manual_axis_type=ManualAxisType())
    except (ImportError, TypeError):  # pragma: no cover  (JAX >= 0.11)
        return jax.ShapeDtypeStruct(tuple(shape), dtype, vma=frozenset())


def dot(a: Any, b: Any, *, trans_a: bool = False, trans_b: bool = False,
        exact: bool = False) -> Any:
    """A block matmul with a float32 result (Triton's ``dot``; ``exact`` forbids TF32, for
    float32 inputs that must match the xla kernel)."""
    if _plt is not None and hasattr(_plt, "dot"):
        out = _plt.dot(a, b, trans_a=trans_a, trans_b=trans_b,
                       allow_tf32=False if exact else None)
        return out.astype("float32") if out.dtype != "float32" else out
    import jax.numpy as jnp  # pragma: no cover
    a = a.T if trans_a else a
    b = b.T if trans_b else b
    return jnp.dot(a, b, preferred_element_type=jnp.float32)
