"""Checker samples for jflow/ops/rearrange.py: the rearranging ops (flip, roll, repeat, tril, triu),
with independent NumPy references.

Samples cover several dtypes (float, int, bool), negative dims, 0-d inputs and zero-size
dims.
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples
from ._shape_data import _B, _I, _I32, _S, _X, _f, _g

# -- flip / roll / repeat / tril / triu -----------------------------------------------------------

register_samples("flip",
     [Sample([_X], {"axes": (0,)}), Sample([_X], {"axes": (0, -1)}), Sample([_I], {"axes": ()}),
      Sample([_B], {"axes": (1,)})],
     lambda x, axes: np.flip(x, axis=tuple(axes)) if axes else x,
     errors=[ErrorSample([_X], {"axes": (0, -3)}, ValueError, "multiple times"),
      ErrorSample([_X], {"axes": (3,)}, ValueError, "out of range")])


def _roll_ref(x, shifts, axes=()):
    if not axes:
        return np.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    for s, d in zip(shifts, axes):
        x = np.concatenate([x.take(np.arange(x.shape[d] - s % x.shape[d], x.shape[d]), axis=d),
                            x.take(np.arange(0, x.shape[d] - s % x.shape[d]), axis=d)], axis=d)
    return x


register_samples("roll",
     [Sample([_X], {"shifts": (1,)}), Sample([_X], {"shifts": (1, -2), "axes": (0, 2)}),
      Sample([_I], {"shifts": (5,), "axes": (-2,)}), Sample([_B], {"shifts": (-1,)})],
     _roll_ref,
     errors=[ErrorSample([_X], {"shifts": (1, 2), "axes": (0,)}, ValueError, "same length"),
      ErrorSample([_X], {"shifts": (1, 2)}, ValueError, "one entry")])


def _repeat_ref(x, repeats):
    x = x.reshape((1,) * (len(repeats) - x.ndim) + x.shape)
    for d, r in enumerate(repeats):
        x = np.concatenate([x] * r, axis=d) if r else x.take(np.arange(0), axis=d)
    return x


register_samples("repeat",
     [Sample([_X], {"repeats": (1, 2, 1)}), Sample([_I32], {"repeats": (2, 1, 3)}),
      Sample([_S], {"repeats": (3,)}), Sample([_B], {"repeats": (0, 2)}),
      Sample([_g(2, 3)], {"repeats": (2, 3, 2)}), Sample([_g(2, 3)], {"repeats": (0, 2)})],
     _repeat_ref,
     errors=[ErrorSample([_X], {"repeats": (2, 2)}, ValueError, "can not be smaller"),
      ErrorSample([_X], {"repeats": (1, -1, 1)}, ValueError, "non-negative")])


def _tri_ref(upper):
    def ref(x, diagonal=0):
        r, c = x.shape[-2:]
        i, j = np.arange(r)[:, None], np.arange(c)[None, :]
        keep = (j - i >= diagonal) if upper else (j - i <= diagonal)
        return np.where(keep, x, np.zeros((), x.dtype))
    return ref


for _name, _upper in [("tril", False), ("triu", True)]:
    register_samples(_name,
         [Sample([_f(4, 4)]), Sample([_X], {"diagonal": 1}), Sample([_I], {"diagonal": -1}),
          Sample([_B], {"diagonal": 5}), Sample([_f(3, 5, dtype=np.float64)], {"diagonal": -2})],
         _tri_ref(_upper),
         errors=[ErrorSample([_f(4)], {}, ValueError, "at least 2 dimensions")])
