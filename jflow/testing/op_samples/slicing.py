"""Checker samples for jflow/ops/slicing.py: the slicing ops (narrow, slice, pad), with independent
NumPy references.

Samples cover several dtypes (float, int, bool), negative dims, 0-d inputs and zero-size
dims.
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples
from ._shape_data import _B, _I, _I32, _X, _X64, _g

# -- narrow / slice -------------------------------------------------------------------------------

register_samples("narrow",
     [Sample([_X], {"dim": 1, "start": 1, "length": 2}),
      Sample([_I], {"dim": -1, "start": 0, "length": 0}),
      Sample([_X64], {"dim": 0, "start": 2, "length": 1})],
     lambda x, dim, start, length: np.take(x, np.arange(start, start + length), axis=dim),
     errors=[ErrorSample([_X], {"dim": 1, "start": 2, "length": 2}, ValueError, "exceeds"),
      ErrorSample([_X], {"dim": 1, "start": -1, "length": 1}, ValueError, "non-negative")])


def _slice_ref(x, start, stop, step):
    return x[tuple(slice(a, b, c) for a, b, c in zip(start, stop, step))]


register_samples("slice",
     [Sample([_X], {"start": (0, 1, 0), "stop": (2, 3, 4), "step": (1, 1, 2)}),
      Sample([_I], {"start": (-1, -3, 1), "stop": (100, -1, 4), "step": (1, 2, 3)}),
      Sample([_X64], {"start": (2, 0), "stop": (1, 4), "step": (1, 1)}),
      Sample([_B], {"start": (0, 0), "stop": (2, 3), "step": (2, 5)}),
      Sample([_g(2, 3, 4)], {"start": (-1, -3, 1), "stop": (100, -1, 4), "step": (1, 2, 3)})],
     _slice_ref,
     errors=[ErrorSample([_X], {"start": (0, 0, 0), "stop": (1, 1, 1), "step": (1, 0, 1)},
                         ValueError, "positive"),
      ErrorSample([_X], {"start": (0,), "stop": (1,), "step": (1,)}, ValueError,
                  "one entry per dim")])


# -- pad ----------------------------------------------------------------------------------------

def _pad_ref(x, pad, mode="constant", value=0.0):
    nd = x.ndim
    w = [(0, 0)] * nd
    for j in range(len(pad) // 2):
        w[nd - 1 - j] = (pad[2 * j], pad[2 * j + 1])
    if mode == "constant":
        crop = tuple(slice(-lo if lo < 0 else 0, s + hi if hi < 0 else s)
                     for (lo, hi), s in zip(w, x.shape))
        x = x[crop]
        w = [(max(lo, 0), max(hi, 0)) for lo, hi in w]
        return np.pad(x, w, mode="constant", constant_values=np.asarray(value).astype(x.dtype))
    return np.pad(x, w, mode={"reflect": "reflect", "replicate": "edge",
                              "circular": "wrap"}[mode])


register_samples("pad",
     [Sample([_X], {"pad": (1, 2)}), Sample([_X], {"pad": (1, 0, 0, 2), "value": 3.5}),
      Sample([_I], {"pad": (-1, 1, 2, -2), "value": -7.0}), Sample([_B], {"pad": (1, 1, 1, 0)}),
      Sample([_X], {"pad": (2, 1, 1, 1), "mode": "reflect"}),
      Sample([_I32], {"pad": (1, 3), "mode": "replicate"}),
      Sample([_X64], {"pad": (2, 4, 1, 0), "mode": "circular"}),
      # float versions of the int samples, for the gradient check (crop; replicate)
      Sample([_g(2, 3, 4)], {"pad": (-1, 1, 2, -2), "value": -7.0}),
      Sample([_g(3, 4)], {"pad": (1, 3, 2, 0), "mode": "replicate"}),
      Sample([_g(2, 3, 4)], {"pad": (3, 1, 0, 2), "mode": "circular"})],
     _pad_ref,
     errors=[ErrorSample([_X], {"pad": (1, 2, 3)}, ValueError, "divisible by 2"),
      ErrorSample([_X], {"pad": (4, 0), "mode": "reflect"}, ValueError, "less than"),
      ErrorSample([_X], {"pad": (1, 1), "mode": "wrap"}, ValueError, "mode must be one of"),
      ErrorSample([_X], {"pad": (-3, -2)}, ValueError, "negative output size"),
      ErrorSample([_X], {"pad": (0, 0) * 4}, ValueError, "too large")])
