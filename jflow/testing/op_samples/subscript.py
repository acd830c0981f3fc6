"""Checker samples for jflow/ops/subscript.py: the subscript ops (getitem, setitem), with
independent NumPy references.

Samples cover several dtypes (float, int, bool), negative dims, 0-d inputs and zero-size
dims. The references are written per spec by hand with NumPy (basic indexing first, as PyTorch
applies ints and slices before index tensors), so they do not share the op's index planner.
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples
from ._shape_data import _B, _E, _S, _f, _g, _i

# -- getitem / setitem ------------------------------------------------------------------------

_Y = _f(4, 4, 6)  # even sizes, so the SBP test can split every dim on two ranks
_YI = _i(4, 4, 6)
_ix = _i(2, lo=-4, hi=4)          # indexes dim 0 (size 4), negatives included
_iy = _i(2, 3, lo=-4, hi=4)       # indexes dim 1 (size 4)
# indexes dim 2 (size 6); distinct, so set[i0,s::,t] writes every position once (a duplicate
# would make finite differences see only the last write while the gradient goes to both)
_iz = np.array([4, 1, 3], np.int32)
_i0 = np.array(-2, np.int64)      # a 0-d index tensor (acts as an int)

# spec -> (inputs, NumPy reference of x[index] written with PyTorch's semantics)
_GET = {
    "i1": ([], lambda x: x[1]),
    "i-1,s1:3:": ([], lambda x: x[-1, 1:3]),
    "e,i2": ([], lambda x: x[..., 2]),
    "n,s::2,n": ([], lambda x: x[None, ::2, None]),
    "s-2::,s:-1:,s1:100:3": ([], lambda x: x[-2:, :-1, 1:100:3]),
    "b1,i0": ([], lambda x: x[None, 0]),
    "b0": ([], lambda x: x[None][:0]),
    "t": ([_ix], lambda x, a: x[a]),
    "s::,t": ([_iy], lambda x, a: x[:, a]),
    "t,s::,t": ([_ix[:1], _iz[:2]], lambda x, a, c: x[a, :, c]),
    "s::,t,t": ([_iy, _iz], lambda x, b, c: x[:, b, c]),
    "i0,s::,t": ([_iz[:2]], lambda x, c: x[0][:, c]),       # torch: int applied first
    "t,s1:3:,t": ([_i0, _iz], lambda x, a, c: x[int(a)][1:3][:, c]),
    "n,e,t,n,t": ([_iy[:1], _iz[:, None]], lambda x, b, c: x[None, :, b, None, c]),
    "b1,t": ([_ix], lambda x, a: x[None][np.zeros(1, np.int64), a]),
    "e": ([], lambda x: x),
    "n": ([], lambda x: x[None]),
    "": ([], lambda x: x),
    "t,b1": ([_ix], lambda x, a: x[:, None][a, np.zeros(1, np.int64)]),
}


_INT_TOO = ("i-1,s1:3:", "n,s::2,n", "s::,t", "i0,s::,t")


def _getitem_ref(x, indices, spec):
    return _GET[spec][1](x, *indices)


register_samples("getitem",
     [Sample([x, list(idx)], {"spec": spec}, name=f"{x.dtype}[{spec}]")
      for spec, (idx, _) in _GET.items() for x in ((_Y, _YI) if spec in _INT_TOO else (_Y,))]
     + [Sample([_B, [np.array([1, 0])]], {"spec": "s::,t"}),
        Sample([_S, []], {"spec": "n"}), Sample([_E, [np.array([1, 2])]], {"spec": "s::,t"})],
     _getitem_ref,
     errors=[ErrorSample([_Y, []], {"spec": "s::,s::,s::,i0"}, IndexError, "too many indices"),
      ErrorSample([_Y, []], {"spec": "i4"}, IndexError, "out of bounds for dimension 0"),
      ErrorSample([_Y, [np.array([0.5])]], {"spec": "t"}, TypeError, "integer dtype"),
      ErrorSample([_Y, [_ix, _iz]], {"spec": "t,s::,t"}, IndexError, "could not be broadcast"),
      ErrorSample([_Y, []], {"spec": "s::0"}, ValueError, "greater than zero"),
      ErrorSample([_Y, []], {"spec": "x1"}, ValueError, "malformed"),
      ErrorSample([_Y, []], {"spec": "t"}, ValueError, "uses 1 index tensors"),
      ErrorSample([_Y, [_B]], {"spec": "m"}, ValueError, "only supported by setitem")])


def _set(fn):
    def ref(x, v, *idx):
        y = x.copy()
        fn(y, v, *idx)
        return y
    return ref


def _set_basic(y, v, *idx):
    y[1, 1:3] = v


def _set_view_then_adv(y, v, c):  # torch: the int is applied first, then the index tensor
    y[0][:, c] = v


def _set_adv(y, v, a, c):
    y[a, :, c] = v


def _set_new(y, v, b):
    y[None, :, b] = v


def _set_mask(y, v, m):
    y[m] = v


def _set_cols(y, v, b):
    y[:, b] = v


def _set_nothing(y, v):
    pass


_MASK = _Y[:, :, 0] > 0
# spec -> (value, index tensors, NumPy assignment)
_SET = {
    "i1,s1:3:": (_f(2, 6), [], _set_basic),
    "i0,s::,t": (_f(4, 1), [_iz[:2]], _set_view_then_adv),
    "t,s::,t": (_f(1, 1, 4), [_ix[:1], _iz[:2]], _set_adv),   # leading 1s of value dropped
    "n,s::,t": (_f(1, 4, 2, 3, 6), [_iy], _set_new),
    "m": (_f(6), [_MASK], _set_mask),
}


_SET_FNS = {spec: fn for spec, (_, _, fn) in _SET.items()}
_SET_FNS.update({"s::,t": _set_cols, "s::,b0": _set_nothing})


# accumulate=True: np.add.at sums repeated indices
_ADD_FNS = {
    "i1,s1:3:": lambda y, v: np.add.at(y, (1, slice(1, 3)), v),
    "i0,s::,t": lambda y, v, c: np.add.at(y[0], (slice(None), c), v),
    "t,s::,t": lambda y, v, a, c: np.add.at(y, (a, slice(None), c), v[0]),
    "s::,t": lambda y, v, b: np.add.at(y, (slice(None), b), v),
    "m": lambda y, v, m: y.__setitem__(m, y[m] + v),
}


def _setitem_ref(x, value, indices, spec, accumulate=False):
    fns = _ADD_FNS if accumulate else _SET_FNS
    return _set(fns[spec])(x, value.astype(x.dtype), *indices)


_DUP = np.array([1, -3, 1, 0, 1])  # repeated indices (dim 1, size 4)


register_samples("setitem",
     # _iy repeats indices (0 and -4): with accumulate=False only one of the duplicates is
     # written, so finite differences see the value only there, while the gradient (as
     # torch's index_put backward) goes to every duplicate: no gradient check on that sample
     [Sample([_Y, v, list(idx)], {"spec": spec}, name=f"set[{spec}]",
             grad=spec != "n,s::,t")
      for spec, (v, idx, _) in _SET.items()]
     + [Sample([_g(4, 4, 6), _g(4, 1, 1, 6), [np.array([[0, -1, 1]])]], {"spec": "n,s::,t"},
               name="set[n,s::,t] unique, broadcast value"),
        Sample([_g(3, 4, 2), _g(1, 1, 2, 1), [np.array([2, 0])]], {"spec": "s::,t"},
               name="set[s::,t] broadcast value")]
     + [Sample([_YI, np.array(7, np.int64), [_iy]], {"spec": "s::,t"}),
        Sample([_B, np.array(True), [np.array([1, 1])]], {"spec": "s::,t"}),
        Sample([_YI, _i(4, 6), [_YI[:, 0, 0] > 0]], {"spec": "m"}),
        Sample([_Y, np.array(1.0, np.float32), []], {"spec": "s::,b0"})]
     + [Sample([_Y, v, list(idx)], {"spec": spec, "accumulate": True}, name=f"add[{spec}]")
        for spec, (v, idx, _) in _SET.items() if spec in _ADD_FNS]
     + [Sample([_YI, _i(4, 5, 6), [_DUP]], {"spec": "s::,t", "accumulate": True}),
        Sample([_Y, _f(4, 1, 6), [_DUP]], {"spec": "s::,t", "accumulate": True}, rtol=1e-5)],
     _setitem_ref,
     errors=[ErrorSample([_Y, _f(3), []], {"spec": "i0"}, ValueError, "cannot be broadcast"),
      ErrorSample([_Y, _f(6).astype(np.float64), []], {"spec": "i0"}, TypeError, "dtype"),
      ErrorSample([_Y, _f(6), [_MASK[:2]]], {"spec": "m"}, IndexError, "does not match"),
      ErrorSample([_Y, _f(6), [_iz]], {"spec": "m"}, TypeError, "bool"),
      ErrorSample([_Y, _f(6), []], {"spec": "i0,m"}, ValueError, "only item")])
