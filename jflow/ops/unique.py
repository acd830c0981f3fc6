"""The ``unique`` op: the distinct values of a tensor (sorted, or each run of equal neighbours),
with the inverse indices and the counts, behind ``torch.unique`` and
``torch.unique_consecutive``.

The number of distinct values is data-dependent: the functor computes it from the data and
passes it as the ``size`` attr (eager only), so the op's output shapes are static.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from ..kernels.registry import register_kernel
from .infer import ANY, check_dtype, desc
from .primitive import define_op
from .registry import Attr

_INT64 = np.dtype(np.int64)


def _unique_infer(x: Any, *, size: int, consecutive: bool) -> Any:
    check_dtype(x, ANY, "input")
    return desc((size,), x.dtype), desc(x.shape, _INT64), desc((size,), _INT64)


def _unique(x: Any, size: int, consecutive: bool) -> tuple[Any, Any, Any]:
    """The distinct values of the flattened x (sorted; or each run of equal neighbours when
    ``consecutive``), the index of each element's value and the counts. ``size`` is the
    number of distinct values, fixed by the caller from the data. nan equals nothing (as
    PyTorch): each nan is a value of its own."""
    xf = x.reshape(-1)
    if consecutive:
        order, srt = jnp.arange(xf.size), xf
    else:
        order = jnp.argsort(xf, stable=True)
        srt = xf[order]
    new = jnp.concatenate([jnp.ones((min(xf.size, 1),), bool), srt[1:] != srt[:-1]])
    group = jnp.cumsum(new) - 1  # the value's slot of each sorted element
    values = jnp.zeros((size,), x.dtype).at[group].set(srt, mode="drop")
    counts = jnp.zeros((size,), jnp.int64).at[group].add(1, mode="drop")
    inverse = jnp.zeros((xf.size,), jnp.int64).at[order].set(group.astype(jnp.int64))
    return values, inverse.reshape(x.shape), counts


define_op("unique", inputs=["x"], outputs=["values", "inverse", "counts"],
          attrs=[Attr("size", "int64"), Attr("consecutive", "bool", False)],
          infer=_unique_infer, traits=("NoSideEffect", "NoGrad"),
          doc="distinct values of x (flattened; sorted, or runs when consecutive), the inverse "
              "indices and counts; size = the number of distinct values (a data-dependent size "
              "the caller supplies)")
register_kernel("unique", _unique, name="unique_xla")
