"""Checker samples for jflow/ops/shape.py (independent NumPy references).

Shape ops are sampled on several dtypes (float, int, bool), negative dims, 0-d inputs and
zero-size dims. The indexing ops' references are written per spec by hand with NumPy (basic
indexing first, as PyTorch applies ints and slices before index tensors), so they do not
share the op's index planner.
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(2)


def _f(*shape, dtype=np.float32):
    return _rng.uniform(-2.0, 2.0, shape).astype(dtype)


def _g(*shape):
    """float64 data for the extra gradient samples (own generator: the data above is unchanged)."""
    return _rng_g.uniform(-2.0, 2.0, shape)


_rng_g = np.random.default_rng(3)


def _i(*shape, lo=-5, hi=6, dtype=np.int64):
    return _rng.integers(lo, hi, shape).astype(dtype)


_X = _f(2, 3, 4)
_X64 = _f(3, 4, dtype=np.float64)
_I = _i(2, 3, 4)
_I32 = _i(3, 4, dtype=np.int32)
_B = _rng.random((2, 3)) > 0.5
_S = np.array(1.5, np.float32)  # 0-d
_E = np.zeros((0, 3), np.float32)  # zero-size


def _reg(op, samples, ref, errors=()):
    register_samples(op, samples, ref, errors=list(errors))


# -- reshape / flatten -------------------------------------------------------------------------

_reg("reshape",
     [Sample([_X], {"shape": (4, 6)}), Sample([_X], {"shape": (-1,)}),
      Sample([_I], {"shape": (3, -1, 2)}), Sample([_B], {"shape": (6, 1)}),
      Sample([_S], {"shape": (1, 1)}), Sample([_E], {"shape": (3, 0)}),
      Sample([_f(4, 6, 2)], {"shape": (4, 2, 6)}), Sample([_f(4, 6, 2)], {"shape": (6, -1)})],
     lambda x, shape: np.reshape(x, shape),
     [ErrorSample([_X], {"shape": (5, 5)}, ValueError, "invalid for input of size 24"),
      ErrorSample([_X], {"shape": (-1, -1)}, ValueError, "only one dimension"),
      ErrorSample([_E], {"shape": (-1, 0)}, ValueError, "ambiguous")])


def _flatten_ref(x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start_dim % x.ndim, end_dim % x.ndim
    merged = int(np.prod(x.shape[s:e + 1]))
    return x.reshape(x.shape[:s] + (merged,) + x.shape[e + 1:])


_reg("flatten",
     [Sample([_X]), Sample([_X], {"start_dim": 1}), Sample([_I], {"start_dim": -2, "end_dim": -1}),
      Sample([_X], {"start_dim": 0, "end_dim": 1}), Sample([_S]), Sample([_E], {"start_dim": 0})],
     _flatten_ref,
     [ErrorSample([_X], {"start_dim": 2, "end_dim": 1}, ValueError, "cannot come after"),
      ErrorSample([_X], {"start_dim": 3}, ValueError, "out of range")])

# -- squeeze / unsqueeze -------------------------------------------------------------------------

_Q = _f(1, 3, 1, 2)
_reg("squeeze",
     [Sample([_Q], {"axes": (0, 2)}), Sample([_Q], {"axes": (-2,)}), Sample([_Q], {"axes": ()}),
      Sample([_Q.astype(np.int32)], {"axes": (0,)}), Sample([_S], {"axes": ()})],
     lambda x, axes: np.squeeze(x, axis=tuple(axes)),
     [ErrorSample([_Q], {"axes": (1,)}, ValueError, "only size-1 axes"),
      ErrorSample([_Q], {"axes": (0, -4)}, ValueError, "repeat")])

_reg("unsqueeze",
     [Sample([_X], {"dim": 0}), Sample([_X], {"dim": -1}), Sample([_I], {"dim": 2}),
      Sample([_S], {"dim": 0}), Sample([_B], {"dim": -2})],
     lambda x, dim: np.expand_dims(x, dim),
     [ErrorSample([_X], {"dim": 4}, ValueError, "out of range")])

# -- transpose / expand --------------------------------------------------------------------------

_reg("transpose",
     [Sample([_X], {"perm": (2, 0, 1)}), Sample([_X64], {"perm": (1, 0)}),
      Sample([_I], {"perm": (-1, 0, 1)}), Sample([_S], {"perm": ()}),
      Sample([_E], {"perm": (1, 0)})],
     lambda x, perm: np.transpose(x, perm),
     [ErrorSample([_X], {"perm": (0, 0, 1)}, ValueError, "repeats a dim"),
      ErrorSample([_X], {"perm": (0, 1)}, ValueError, "has 2 entries")])

_COL = _f(3, 1)
_reg("expand",
     [Sample([_COL], {"shape": (3, 4)}), Sample([_COL], {"shape": (2, -1, 5)}),
      Sample([_S], {"shape": (2, 2)}), Sample([_B[:1]], {"shape": (4, 3)}),
      Sample([_I32[:, :1]], {"shape": (3, 0)})],
     lambda x, shape: np.broadcast_to(
         x, tuple(x.shape[j - (len(shape) - x.ndim)] if s == -1 else s
                  for j, s in enumerate(shape))),
     [ErrorSample([_COL], {"shape": (4, 4)}, ValueError, "must match the existing size"),
      ErrorSample([_COL], {"shape": (4,)}, ValueError, "number of sizes"),
      ErrorSample([_COL], {"shape": (-1, 3, 1)}, ValueError, "leading")])

# -- cat / stack / split --------------------------------------------------------------------------

_reg("cat",
     [Sample([[_X, _f(2, 3, 4)]], {"dim": 0}), Sample([[_X, _f(2, 3, 2)]], {"dim": -1}),
      Sample([[_I32, _i(1, 4, dtype=np.int32), _i(2, 4, dtype=np.int32)]]),
      Sample([[_B, _B]], {"dim": 1}), Sample([[_E, _E]], {"dim": 0})],
     lambda xs, dim=0: np.concatenate(xs, axis=dim),
     [ErrorSample([[_X, _X.astype(np.float64)]], {}, TypeError, "same dtype"),
      ErrorSample([[_X, _f(2, 2, 4)]], {"dim": 0}, ValueError, "must match except in dimension"),
      ErrorSample([[_X, _f(2, 3)]], {}, ValueError, "same number of dimensions"),
      ErrorSample([[_S, _S]], {}, ValueError, "zero-dimensional")])

_reg("stack",
     [Sample([[_X, _f(2, 3, 4)]], {"dim": 0}), Sample([[_X, _X, _X]], {"dim": -1}),
      Sample([[_I32, _I32]], {"dim": 1}), Sample([[_S, _S]]), Sample([[_B]], {"dim": 2})],
     lambda xs, dim=0: np.stack(xs, axis=dim),
     [ErrorSample([[_X, _f(2, 3, 3)]], {}, ValueError, "equal size"),
      ErrorSample([[_X, _X]], {"dim": 4}, ValueError, "out of range")])


def _split_ref(x, dim, sizes):
    return np.split(x, np.cumsum(sizes)[:-1], axis=dim)


_reg("split",
     [Sample([_X], {"dim": 1, "sizes": (1, 2)}), Sample([_X], {"dim": -1, "sizes": (2, 2, 0)}),
      Sample([_I], {"dim": 0, "sizes": (2,)}), Sample([_B], {"dim": 1, "sizes": (1, 1, 1)})],
     _split_ref,
     [ErrorSample([_X], {"dim": 1, "sizes": (1, 1)}, ValueError, "must sum exactly to 3"),
      ErrorSample([_X], {"dim": 1, "sizes": (4, -1)}, ValueError, "non-negative"),
      ErrorSample([_S], {"dim": 0, "sizes": (1,)}, ValueError, "0-d")])

# -- narrow / slice -------------------------------------------------------------------------------

_reg("narrow",
     [Sample([_X], {"dim": 1, "start": 1, "length": 2}),
      Sample([_I], {"dim": -1, "start": 0, "length": 0}),
      Sample([_X64], {"dim": 0, "start": 2, "length": 1})],
     lambda x, dim, start, length: np.take(x, np.arange(start, start + length), axis=dim),
     [ErrorSample([_X], {"dim": 1, "start": 2, "length": 2}, ValueError, "exceeds"),
      ErrorSample([_X], {"dim": 1, "start": -1, "length": 1}, ValueError, "non-negative")])


def _slice_ref(x, start, stop, step):
    return x[tuple(slice(a, b, c) for a, b, c in zip(start, stop, step))]


_reg("slice",
     [Sample([_X], {"start": (0, 1, 0), "stop": (2, 3, 4), "step": (1, 1, 2)}),
      Sample([_I], {"start": (-1, -3, 1), "stop": (100, -1, 4), "step": (1, 2, 3)}),
      Sample([_X64], {"start": (2, 0), "stop": (1, 4), "step": (1, 1)}),
      Sample([_B], {"start": (0, 0), "stop": (2, 3), "step": (2, 5)}),
      Sample([_g(2, 3, 4)], {"start": (-1, -3, 1), "stop": (100, -1, 4), "step": (1, 2, 3)})],
     _slice_ref,
     [ErrorSample([_X], {"start": (0, 0, 0), "stop": (1, 1, 1), "step": (1, 0, 1)}, ValueError,
                  "positive"),
      ErrorSample([_X], {"start": (0,), "stop": (1,), "step": (1,)}, ValueError,
                  "one entry per dim")])

# -- flip / roll / repeat / tril / triu -----------------------------------------------------------

_reg("flip",
     [Sample([_X], {"axes": (0,)}), Sample([_X], {"axes": (0, -1)}), Sample([_I], {"axes": ()}),
      Sample([_B], {"axes": (1,)})],
     lambda x, axes: np.flip(x, axis=tuple(axes)) if axes else x,
     [ErrorSample([_X], {"axes": (0, -3)}, ValueError, "multiple times"),
      ErrorSample([_X], {"axes": (3,)}, ValueError, "out of range")])


def _roll_ref(x, shifts, axes=()):
    if not axes:
        return np.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    for s, d in zip(shifts, axes):
        x = np.concatenate([x.take(np.arange(x.shape[d] - s % x.shape[d], x.shape[d]), axis=d),
                            x.take(np.arange(0, x.shape[d] - s % x.shape[d]), axis=d)], axis=d)
    return x


_reg("roll",
     [Sample([_X], {"shifts": (1,)}), Sample([_X], {"shifts": (1, -2), "axes": (0, 2)}),
      Sample([_I], {"shifts": (5,), "axes": (-2,)}), Sample([_B], {"shifts": (-1,)})],
     _roll_ref,
     [ErrorSample([_X], {"shifts": (1, 2), "axes": (0,)}, ValueError, "same length"),
      ErrorSample([_X], {"shifts": (1, 2)}, ValueError, "one entry")])


def _repeat_ref(x, repeats):
    x = x.reshape((1,) * (len(repeats) - x.ndim) + x.shape)
    for d, r in enumerate(repeats):
        x = np.concatenate([x] * r, axis=d) if r else x.take(np.arange(0), axis=d)
    return x


_reg("repeat",
     [Sample([_X], {"repeats": (1, 2, 1)}), Sample([_I32], {"repeats": (2, 1, 3)}),
      Sample([_S], {"repeats": (3,)}), Sample([_B], {"repeats": (0, 2)}),
      Sample([_g(2, 3)], {"repeats": (2, 3, 2)}), Sample([_g(2, 3)], {"repeats": (0, 2)})],
     _repeat_ref,
     [ErrorSample([_X], {"repeats": (2, 2)}, ValueError, "can not be smaller"),
      ErrorSample([_X], {"repeats": (1, -1, 1)}, ValueError, "non-negative")])


def _tri_ref(upper):
    def ref(x, diagonal=0):
        r, c = x.shape[-2:]
        i, j = np.arange(r)[:, None], np.arange(c)[None, :]
        keep = (j - i >= diagonal) if upper else (j - i <= diagonal)
        return np.where(keep, x, np.zeros((), x.dtype))
    return ref


for _name, _upper in [("tril", False), ("triu", True)]:
    _reg(_name,
         [Sample([_f(4, 4)]), Sample([_X], {"diagonal": 1}), Sample([_I], {"diagonal": -1}),
          Sample([_B], {"diagonal": 5}), Sample([_f(3, 5, dtype=np.float64)], {"diagonal": -2})],
         _tri_ref(_upper),
         [ErrorSample([_f(4)], {}, ValueError, "at least 2 dimensions")])

# -- pad / clone ------------------------------------------------------------------------------


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


_reg("pad",
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
     [ErrorSample([_X], {"pad": (1, 2, 3)}, ValueError, "divisible by 2"),
      ErrorSample([_X], {"pad": (4, 0), "mode": "reflect"}, ValueError, "less than"),
      ErrorSample([_X], {"pad": (1, 1), "mode": "wrap"}, ValueError, "mode must be one of"),
      ErrorSample([_X], {"pad": (-3, -2)}, ValueError, "negative output size"),
      ErrorSample([_X], {"pad": (0, 0) * 4}, ValueError, "too large")])

_reg("clone", [Sample([_X]), Sample([_I]), Sample([_B]), Sample([_S]), Sample([_E])],
     lambda x: x.copy())

# -- getitem / setitem ------------------------------------------------------------------------

_Y = _f(4, 4, 6)  # even sizes, so the SBP test can split every dim on two ranks
_YI = _i(4, 4, 6)
_ix = _i(2, lo=-4, hi=4)          # indexes dim 0 (size 4), negatives included
_iy = _i(2, 3, lo=-4, hi=4)       # indexes dim 1 (size 4)
_iz = _i(3, lo=0, hi=6, dtype=np.int32)   # indexes dim 2 (size 6)
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


_reg("getitem",
     [Sample([x, list(idx)], {"spec": spec}, name=f"{x.dtype}[{spec}]")
      for spec, (idx, _) in _GET.items() for x in ((_Y, _YI) if spec in _INT_TOO else (_Y,))]
     + [Sample([_B, [np.array([1, 0])]], {"spec": "s::,t"}),
        Sample([_S, []], {"spec": "n"}), Sample([_E, [np.array([1, 2])]], {"spec": "s::,t"})],
     _getitem_ref,
     [ErrorSample([_Y, []], {"spec": "s::,s::,s::,i0"}, IndexError, "too many indices"),
      ErrorSample([_Y, []], {"spec": "i4"}, IndexError, "out of bounds for dimension 0"),
      ErrorSample([_Y, [np.array([0.5])]], {"spec": "t"}, TypeError, "integer dtype"),
      ErrorSample([_Y, [_ix, _iz]], {"spec": "t,s::,t"}, ValueError, "could not be broadcast"),
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


_reg("setitem",
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
     [ErrorSample([_Y, _f(3), []], {"spec": "i0"}, ValueError, "cannot be broadcast"),
      ErrorSample([_Y, _f(6).astype(np.float64), []], {"spec": "i0"}, TypeError, "dtype"),
      ErrorSample([_Y, _f(6), [_MASK[:2]]], {"spec": "m"}, IndexError, "does not match"),
      ErrorSample([_Y, _f(6), [_iz]], {"spec": "m"}, TypeError, "bool"),
      ErrorSample([_Y, _f(6), []], {"spec": "i0,m"}, ValueError, "only item")])
