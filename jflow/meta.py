"""Meta tensors: device ``"meta"``, shape and dtype without data (PyTorch's meta device).

A meta tensor is a ``Tensor`` whose value slot holds a ``MetaValue`` (a
``jax.ShapeDtypeStruct`` with the ``aval`` that jflow's functors read for metadata) instead of
an array. Libraries build models on it (``with torch.device("meta"):``) to learn parameter
shapes without allocating, then materialise (``Module.to_empty``) or replace the parameters
with loaded ones (``load_state_dict(assign=True)``). What follows PyTorch's rules:

- factories on ``device="meta"`` (or under the meta default device) allocate nothing and draw
  no random numbers (the generator's state is unchanged, as in PyTorch);
- an op with a meta input runs JAX's abstract evaluation of the op's primitive (its
  inference, ``jax.eval_shape``): the result is meta, with the shape and dtype a real input
  would give; mixing a meta tensor with a non-meta tensor of one or more dimensions raises
  PyTorch's "not on the expected device" error (0-d tensors and Python numbers mix, as in
  PyTorch);
- reading values (``numpy``, ``item``, ``tolist``, ``bool``, ``.to("cpu")``, ops whose result
  shape depends on values) raises ``NotImplementedError`` saying meta tensors have no data.

The value type and the device-level helpers live in ``device.py`` (layer 0, which ``Tensor``
may import); this module (also layer 0) re-exports them and adds the abstract evaluation that
``dispatch.py`` (an op's generated ``apply``), the backward engine and lazy mode use."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from .device import META, MetaValue, is_meta_device, is_meta_value, meta_value, no_data
from .device import device as _device

__all__ = ["META", "MetaValue", "is_meta_value", "is_meta_device", "meta_value", "no_data",
           "abstract_bind"]

_SDS = MetaValue


def abstract_bind(prim: Any, params: dict, vals: list) -> list:
    """The outputs of ``prim`` on ``vals`` when some are meta values: JAX's abstract
    evaluation of the primitive (its shape and dtype inference), as meta values.

    Called from an op's generated ``apply`` while the ``TypeError`` that JAX raised for a
    meta operand is being handled: when no operand is meta, that error is re-raised as is."""
    if not any(v.__class__ is _SDS for v in vals):
        raise  # noqa: PLE0704 (the caller's TypeError, being handled: not a meta call)
    for v in vals:
        if v.__class__ is not _SDS and getattr(v, "ndim", 0) and \
                np.dtype(v.dtype).kind not in "iu":
            # (a real integer tensor mixes: index tensors, as PyTorch's index ops allow)
            other = _device.from_jax(next(iter(v.devices()))) if hasattr(v, "devices") else "cpu"
            raise RuntimeError(f"{prim.name}: Tensor on device {other} is not on the expected "
                               f"device meta! (a meta tensor mixes only with 0-d tensors, "
                               f"integer index tensors and numbers, as in PyTorch)")
    # (JAX refuses a MetaValue itself: device.py's _refuse_meta)
    outs = jax.eval_shape(lambda *a: prim.bind(*a, **params),
                          *[jax.ShapeDtypeStruct(v.shape, v.dtype) if v.__class__ is _SDS else v
                            for v in vals])
    return [_SDS(o.shape, o.dtype) for o in outs]
