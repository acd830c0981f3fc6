"""Checker samples for jflow/ops/join.py: the join / split ops (cat, stack, split), with independent
NumPy references.

Samples cover several dtypes (float, int, bool), negative dims, 0-d inputs and zero-size
dims.
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples
from ._shape_data import _B, _E, _I, _I32, _S, _X, _f, _i

# -- cat / stack / split --------------------------------------------------------------------------

register_samples("cat",
     [Sample([[_X, _f(2, 3, 4)]], {"dim": 0}), Sample([[_X, _f(2, 3, 2)]], {"dim": -1}),
      Sample([[_I32, _i(1, 4, dtype=np.int32), _i(2, 4, dtype=np.int32)]]),
      Sample([[_B, _B]], {"dim": 1}), Sample([[_E, _E]], {"dim": 0})],
     lambda xs, dim=0: np.concatenate(xs, axis=dim),
     errors=[ErrorSample([[_X, _X.astype(np.float64)]], {}, TypeError, "same dtype"),
      ErrorSample([[_X, _f(2, 2, 4)]], {"dim": 0}, ValueError, "must match except in dimension"),
      ErrorSample([[_X, _f(2, 3)]], {}, ValueError, "same number of dimensions"),
      ErrorSample([[_S, _S]], {}, ValueError, "zero-dimensional")])

register_samples("stack",
     [Sample([[_X, _f(2, 3, 4)]], {"dim": 0}), Sample([[_X, _X, _X]], {"dim": -1}),
      Sample([[_I32, _I32]], {"dim": 1}), Sample([[_S, _S]]), Sample([[_B]], {"dim": 2})],
     lambda xs, dim=0: np.stack(xs, axis=dim),
     errors=[ErrorSample([[_X, _f(2, 3, 3)]], {}, ValueError, "equal size"),
      ErrorSample([[_X, _X]], {"dim": 4}, ValueError, "out of range")])


def _split_ref(x, dim, sizes):
    return np.split(x, np.cumsum(sizes)[:-1], axis=dim)


register_samples("split",
     [Sample([_X], {"dim": 1, "sizes": (1, 2)}), Sample([_X], {"dim": -1, "sizes": (2, 2, 0)}),
      Sample([_I], {"dim": 0, "sizes": (2,)}), Sample([_B], {"dim": 1, "sizes": (1, 1, 1)})],
     _split_ref,
     errors=[ErrorSample([_X], {"dim": 1, "sizes": (1, 1)}, ValueError, "must sum exactly to 3"),
      ErrorSample([_X], {"dim": 1, "sizes": (4, -1)}, ValueError, "non-negative"),
      ErrorSample([_S], {"dim": 0, "sizes": (1,)}, ValueError, "0-d")])
