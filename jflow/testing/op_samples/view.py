"""Checker samples for jflow/ops/view.py: the view ops (reshape, flatten, squeeze, unsqueeze,
transpose, expand), with independent NumPy references.

Samples cover several dtypes (float, int, bool), negative dims, 0-d inputs and zero-size
dims.
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples
from ._shape_data import _B, _E, _I, _I32, _S, _X, _X64, _f

# -- reshape / flatten -------------------------------------------------------------------------

register_samples("reshape",
     [Sample([_X], {"shape": (4, 6)}), Sample([_X], {"shape": (-1,)}),
      Sample([_I], {"shape": (3, -1, 2)}), Sample([_B], {"shape": (6, 1)}),
      Sample([_S], {"shape": (1, 1)}), Sample([_E], {"shape": (3, 0)}),
      Sample([_f(4, 6, 2)], {"shape": (4, 2, 6)}), Sample([_f(4, 6, 2)], {"shape": (6, -1)})],
     lambda x, shape: np.reshape(x, shape),
     errors=[ErrorSample([_X], {"shape": (5, 5)}, ValueError, "invalid for input of size 24"),
      ErrorSample([_X], {"shape": (-1, -1)}, ValueError, "only one dimension"),
      ErrorSample([_E], {"shape": (-1, 0)}, ValueError, "ambiguous")])


def _flatten_ref(x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start_dim % x.ndim, end_dim % x.ndim
    merged = int(np.prod(x.shape[s:e + 1]))
    return x.reshape(x.shape[:s] + (merged,) + x.shape[e + 1:])


register_samples("flatten",
     [Sample([_X]), Sample([_X], {"start_dim": 1}), Sample([_I], {"start_dim": -2, "end_dim": -1}),
      Sample([_X], {"start_dim": 0, "end_dim": 1}), Sample([_S]), Sample([_E], {"start_dim": 0})],
     _flatten_ref,
     errors=[ErrorSample([_X], {"start_dim": 2, "end_dim": 1}, ValueError, "cannot come after"),
      ErrorSample([_X], {"start_dim": 3}, ValueError, "out of range")])

# -- squeeze / unsqueeze -------------------------------------------------------------------------

_Q = _f(1, 3, 1, 2)
register_samples("squeeze",
     [Sample([_Q], {"axes": (0, 2)}), Sample([_Q], {"axes": (-2,)}), Sample([_Q], {"axes": ()}),
      Sample([_Q.astype(np.int32)], {"axes": (0,)}), Sample([_S], {"axes": ()}),
      # even kept dims, so the SBP check runs (S(0)) -> S(0), (S(2)) -> S(1), (S(2)) -> S(2)
      Sample([_X[:, :1]], {"axes": (1,)}), Sample([_X[..., None]], {"axes": (-1,)})],
     lambda x, axes: np.squeeze(x, axis=tuple(axes)),
     errors=[ErrorSample([_Q], {"axes": (1,)}, ValueError, "only size-1 axes"),
      ErrorSample([_Q], {"axes": (0, -4)}, ValueError, "repeat")])

register_samples("unsqueeze",
     [Sample([_X], {"dim": 0}), Sample([_X], {"dim": -1}), Sample([_I], {"dim": 2}),
      Sample([_S], {"dim": 0}), Sample([_B], {"dim": -2})],
     lambda x, dim: np.expand_dims(x, dim),
     errors=[ErrorSample([_X], {"dim": 4}, ValueError, "out of range")])

# -- transpose / expand --------------------------------------------------------------------------

register_samples("transpose",
     [Sample([_X], {"perm": (2, 0, 1)}), Sample([_X64], {"perm": (1, 0)}),
      Sample([_I], {"perm": (-1, 0, 1)}), Sample([_S], {"perm": ()}),
      Sample([_E], {"perm": (1, 0)})],
     lambda x, perm: np.transpose(x, perm),
     errors=[ErrorSample([_X], {"perm": (0, 0, 1)}, ValueError, "repeats a dim"),
      ErrorSample([_X], {"perm": (0, 1)}, ValueError, "has 2 entries")])

_COL = _f(3, 1)
register_samples("expand",
     [Sample([_COL], {"shape": (3, 4)}), Sample([_COL], {"shape": (2, -1, 5)}),
      # no broadcast dim before dim 2 (whose (B) -> S(2) the sample above shadows with
      # (B) -> S(0)), and an even one, so the SBP check runs (B) -> S(2)
      Sample([_COL], {"shape": (1, -1, 4)}),
      Sample([_S], {"shape": (2, 2)}), Sample([_B[:1]], {"shape": (4, 3)}),
      Sample([_I32[:, :1]], {"shape": (3, 0)})],
     lambda x, shape: np.broadcast_to(
         x, tuple(x.shape[j - (len(shape) - x.ndim)] if s == -1 else s
                  for j, s in enumerate(shape))),
     errors=[ErrorSample([_COL], {"shape": (4, 4)}, ValueError, "must match the existing size"),
      ErrorSample([_COL], {"shape": (4,)}, ValueError, "number of sizes"),
      ErrorSample([_COL], {"shape": (-1, 3, 1)}, ValueError, "leading")])


# -- bitcast (Tensor.view(dtype)) --------------------------------------------------------------

def _bitcast_ref(x, dtype):
    """NumPy's ``ndarray.view(dtype)`` (same bytes; the last dim scales), bools as bytes."""
    x = np.array(x, order="C")  # (a copy: 0-d stays 0-d)
    dst = np.dtype(dtype)
    if x.ndim and x.dtype.itemsize != dst.itemsize:
        return x.view(dst)
    return x.view(dst) if dst != np.bool_ else x.view(np.uint8) != 0


register_samples("bitcast",
     [Sample([_X], {"dtype": np.dtype(np.int32)}), Sample([_X], {"dtype": np.dtype(np.uint8)}),
      Sample([_X], {"dtype": np.dtype(np.float16)}), Sample([_X64], {"dtype": np.dtype(np.int64)}),
      Sample([_I], {"dtype": np.dtype(np.float32)}),
      Sample([np.arange(8, dtype=np.uint8).reshape(2, 4) + 60], {"dtype": np.dtype(np.float32)}),
      Sample([_B], {"dtype": np.dtype(np.uint8)}), Sample([_S], {"dtype": np.dtype(np.int32)}),
      Sample([_E], {"dtype": np.dtype(np.int16)})],
     _bitcast_ref,
     errors=[ErrorSample([_S], {"dtype": np.dtype(np.uint8)}, RuntimeError, "0-d tensor"),
      ErrorSample([np.zeros((2, 3), np.uint8)], {"dtype": np.dtype(np.float32)}, RuntimeError,
                  "multiple of 4")])
