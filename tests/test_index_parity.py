"""PyTorch parity of the shape / index functions of issue 14: nonzero / argwhere /
masked_select / masked_scatter, index_add / index_copy / index_fill / index_put (and their
in-place forms), take / take_along_dim, repeat_interleave, the stacking helpers, block_diag,
meshgrid, cartesian_prod, combinations, fliplr / flipud / rot90, diff, tril / triu_indices
and scatter_reduce.

Each case runs the same random inputs through ``flow`` and ``torch`` and compares values,
result dtypes and shapes, and (float64 inputs) the gradients of a random weighting of the
outputs; negative dims / indices, duplicates (index_add, index_put accumulate), broadcasting
and 0-d inputs are among the cases. Errors are checked for their function / argument names.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np
import pytest

import jflow as flow
import jflow.tensor_indexing as ti

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(1414)


def _f(*shape: int) -> np.ndarray:
    return _RNG.standard_normal(shape)  # float64: gradients are compared


def _i(*shape: int, lo: int = 0, hi: int = 4) -> np.ndarray:
    return _RNG.integers(lo, hi, shape).astype(np.int64)


def _b(*shape: int) -> np.ndarray:
    return _RNG.random(shape) > 0.5


def _conv(x: Any, lib: Any, grad: bool) -> Any:
    """NumPy arrays (nested in lists / tuples / dicts) -> tensors of ``lib``; float64 ones
    require grad when ``grad``."""
    if isinstance(x, np.ndarray):
        t = lib.tensor(x)
        if grad and x.dtype == np.float64:
            t.requires_grad_(True)
        return t
    if isinstance(x, (list, tuple)):
        return type(x)(_conv(v, lib, grad) for v in x)
    if isinstance(x, dict):
        return {k: _conv(v, lib, grad) for k, v in x.items()}
    return x


def _tensors(x: Any) -> list:
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return [x] if hasattr(x, "requires_grad") else []


def _name(dtype: Any) -> str:
    return str(dtype).split(".")[-1]


def _np(t: Any) -> np.ndarray:
    return t.detach().numpy() if hasattr(t, "detach") else t.numpy()


def _same(got: Any, want: Any) -> None:
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert _name(got.dtype) == _name(want.dtype), (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape), (tuple(got.shape), tuple(want.shape))
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12, atol=1e-12)


class Case(NamedTuple):
    name: str
    args: tuple
    kwargs: dict = {}
    star: bool = False      # torch takes the first argument (a list) as varargs
    method: bool = False    # call as a Tensor method (flow and torch)
    id: str = ""
    grad: bool = True       # compare gradients too (False: a documented difference)


def _call(case: Case, lib: Any, grad: bool) -> tuple[Any, list]:
    args, kwargs = _conv(case.args, lib, grad), _conv(case.kwargs, lib, grad)
    leaves = [t for t in _tensors((args, kwargs)) if t.requires_grad]
    if case.method:
        return getattr(args[0], case.name)(*args[1:], **kwargs), leaves
    if case.star and lib is torch:
        return getattr(torch, case.name)(*args[0], *args[1:], **kwargs), leaves
    return getattr(lib, case.name)(*args, **kwargs), leaves


def _run(case: Case) -> None:
    arrays = _arrays(case.args + tuple(case.kwargs.values()))
    grad = case.grad and any(t.dtype == np.float64 for t in arrays)
    fo, fl = _call(case, flow, grad)
    to, tl = _call(case, torch, grad)
    _same(fo, to)
    if not grad:
        return
    fouts = [o for o in _tensors(fo) if o.requires_grad]
    touts = [o for o in _tensors(to) if o.requires_grad]
    assert len(fouts) == len(touts)
    if not touts:
        return
    # the gradient of a random weighting sum(o * w): backward from the outputs with w as
    # their gradient (one compiled backward, no mul / sum programs per output shape)
    ws = [_RNG.standard_normal(tuple(o.shape)) for o in touts]
    flow.autograd.backward(fouts, [flow.tensor(w) for w in ws])
    torch.autograd.backward(touts, [torch.tensor(w) for w in ws])
    for f, t in zip(fl, tl):
        want = t.grad if t.grad is not None else torch.zeros_like(t)
        got = f.grad if f.grad is not None else flow.zeros_like(f)
        _same(got, want)


def _arrays(x: Any) -> list:
    if isinstance(x, np.ndarray):
        return [x]
    if isinstance(x, (list, tuple)):
        return [a for v in x for a in _arrays(v)]
    return []


_X = _f(3, 4)
_CASES = [
    # nonzero / argwhere / masked_select / masked_scatter
    Case("nonzero", (_i(3, 4, lo=-1, hi=2),)),
    Case("nonzero", (_b(2, 3, 2),), {"as_tuple": True}),
    Case("nonzero", (np.array(2.5),), id="0-d"),
    Case("nonzero", (np.array(0),), {"as_tuple": True}, id="0-d zero tuple"),
    Case("nonzero", (np.zeros((0, 3)),), id="empty"),
    Case("argwhere", (_i(4, 3, lo=-1, hi=2),)),
    Case("argwhere", (np.array(True),), id="0-d"),
    Case("masked_select", (_X, _b(3, 4))),
    Case("masked_select", (_X, _b(3, 1)), id="broadcast mask"),
    Case("masked_select", (_f(4), _b(3, 4)), id="broadcast input"),
    Case("masked_select", (_i(2, 3), _b(2, 3)), method=True),
    Case("masked_scatter", (_X, _b(3, 4), _f(15))),
    Case("masked_scatter", (_X, _b(4), _f(3, 5)), id="broadcast mask, 2-d source"),
    Case("masked_scatter", (_i(2, 3), _b(2, 3), _i(6)), method=True),
    # index_add / index_copy / index_fill
    Case("index_add", (_X, 0, np.array([2, 0, 2, 2, 1]), _f(5, 4)), id="duplicates"),
    Case("index_add", (_X, -1, np.array([3, 3]), _f(3, 2)), {"alpha": 2.5}, id="neg dim alpha"),
    Case("index_add", (_i(3, 4), 1, np.array([0, 0, 1]), _i(3, 3)), {"alpha": -2}),
    Case("index_add", (np.array(1.5), 0, np.array([0]), np.array(2.0)), id="0-d"),
    Case("index_add", (_X, 1, np.array([1, 3]), _f(3, 2)), method=True),
    Case("index_copy", (_X, 0, np.array([2, 0]), _f(2, 4))),
    Case("index_copy", (_f(2, 3, 4), -2, np.array([1]), _f(2, 1, 4)), method=True),
    Case("index_fill", (_X, 1, np.array([0, 3, 3]), -1.5)),
    Case("index_fill", (_i(3, 4), -1, np.array([2]), 7), method=True),
    Case("index_fill", (_X, 0, np.array([1]), np.array(3.0)), id="tensor value"),
    # index_put
    Case("index_put", (_X, (np.array([0, 2, 0]), np.array([1, -1, 1])), _f(3)),
         {"accumulate": True}, id="accumulate duplicates, negative index"),
    Case("index_put", (_X, (np.array([2, -3]),), _f(4)), id="one index, broadcast values"),
    Case("index_put", (_f(2, 3, 2), (np.array([[0], [1]]), np.array([0, 2])), _f(2, 2, 2)),
         {"accumulate": True}, id="broadcast indices"),
    Case("index_put", (_X, (np.array([[True, False, True, False]] * 3),), np.array(9.0)),
         id="bool mask"),
    Case("index_put", (_i(3, 4), (np.array([1, 1]), np.array([2, 2])), np.array([5, 6])),
         {"accumulate": True}, method=True),
    # take / take_along_dim
    Case("take", (_X, np.array([[0, -1], [5, 5], [-12, 11]]))),
    Case("take", (np.array(4.0), np.array([0, -1])), id="0-d"),
    Case("take_along_dim", (_X, _i(3, 2, hi=4), 1)),
    Case("take_along_dim", (_X, _i(1, 4, hi=3), -2), id="broadcast, negative dim"),
    Case("take_along_dim", (_f(3, 1, 2), _i(1, 4, 2, hi=2), 2), id="broadcast both"),
    Case("take_along_dim", (_X, _i(5, hi=12)), id="dim None"),
    Case("take_along_dim", (_X, np.argsort(_X, axis=1), 1), method=True),
    # repeat_interleave
    Case("repeat_interleave", (_X, 2)),
    Case("repeat_interleave", (_X, np.array([1, 0, 3]), 0)),
    Case("repeat_interleave", (_X, np.array([2]), -1), {"output_size": 8}),
    Case("repeat_interleave", (np.array(3.0), 3), id="0-d"),
    Case("repeat_interleave", (np.array([2, 0, 1]),), id="repeats only"),
    Case("repeat_interleave", (_X, 3, 1), method=True),
    # stacking / block_diag / meshgrid / cartesian_prod / combinations
    Case("hstack", ([_f(3), _f(2), np.array(1.0)],)),
    Case("hstack", ([_f(2, 3), _i(2, 1)],), id="promotion"),
    Case("vstack", ([_f(3), _f(2, 3)],)),
    Case("row_stack", ([_f(2), np.array([1.0, 2.0])],)),
    Case("dstack", ([_f(3), _f(1, 3), _f(1, 3, 2)],)),
    Case("column_stack", ([_f(3), _f(3, 2), _i(3)],)),
    Case("block_diag", ([_f(2, 3), _f(2), np.array(5.0), _f(1, 1)],), star=True),
    Case("block_diag", ([_i(2, 2), _f(1, 2)],), star=True, id="promotion"),
    Case("meshgrid", ([_f(3), _f(2), _f(4)],), {"indexing": "ij"}, star=True),
    Case("meshgrid", ([_f(3), _f(2), _f(4)],), {"indexing": "xy"}, star=True, id="xy"),
    Case("meshgrid", ([_f(3), np.array(2.0)],), {"indexing": "xy"}, star=True, id="0-d xy"),
    Case("cartesian_prod", ([_f(3), _f(2), _f(2)],), star=True),
    Case("cartesian_prod", ([_i(3)],), star=True, id="one input"),
    Case("combinations", (_f(4),)),
    Case("combinations", (_f(4), 3), {"with_replacement": True}),
    Case("combinations", (_i(3), 1), id="r=1"),
    Case("combinations", (_f(2), 3), id="r > n"),
    # fliplr / flipud / rot90 / diff
    Case("fliplr", (_X,)),
    Case("flipud", (_f(3),)),
    Case("fliplr", (_f(2, 3, 2),), method=True),
    *[Case("rot90", (_f(2, 3, 4), k, [0, -1]), id=f"k={k}") for k in (-3, -1, 0, 1, 2, 3, 5)],
    Case("rot90", (_X,), method=True),
    Case("diff", (_X,)),
    Case("diff", (_X, 2, 0), {"prepend": _f(1, 4), "append": _f(2, 4)}),
    Case("diff", (_f(5), 3)),
    Case("diff", (_f(3), 0), id="n=0"),
    Case("diff", (_f(2), 4), id="n > size"),
    Case("diff", (_b(2, 5),), id="bool"),
    Case("diff", (_i(2, 5, hi=9), 1, -1), method=True),
    # scatter_reduce: every reduction, with and without self, duplicates, ties, ints
    *[Case("scatter_reduce", (_f(3, 4), 0, _i(5, 4, hi=3), _f(5, 4), r),
           {"include_self": inc}, id=f"{r}-self={inc}")
      for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)],
    *[Case("scatter_reduce", (_i(3, 4, lo=-5, hi=5), -1, _i(3, 6, hi=4), _i(3, 7, lo=-5, hi=5),
                              r), {"include_self": inc}, id=f"int-{r}-self={inc}")
      for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)],
    Case("scatter_reduce", (np.array([1.0, 2.0, 0.5]), 0, np.array([0, 0, 1, 1, 2]),
                            np.array([3.0, 3.0, 2.0, -1.0, 0.5]), "amax"),
         id="amax ties share the gradient"),
    Case("scatter_reduce", (np.array([1.0, 2.0, 0.5]), 0, np.array([0, 0, 2]),
                            np.array([1.0, 1.0, 0.5]), "amin"), {"include_self": False},
         id="amin ties without self", grad=False),
    Case("scatter_reduce", (_f(2, 3), 1, _i(2, 2, hi=3), _f(2, 2), "sum"), method=True),
    Case("narrow_copy", (_X, -1, 1, 2)),
    Case("narrow_copy", (_X, 0, 1, 2), method=True),
]


@pytest.mark.parametrize("case", _CASES, ids=[f"{c.name}-{c.id or k}" for k, c in
                                              enumerate(_CASES)])
def test_matches_torch(case: Case) -> None:
    _run(case)


@pytest.mark.parametrize("fn", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("rc", [(3, 3, 0), (4, 3, -1), (3, 5, 2), (0, 3, 0), (3, 4, -5)])
def test_tri_indices(fn: str, rc: tuple[int, int, int]) -> None:
    _same(getattr(flow, fn)(*rc), getattr(torch, fn)(*rc))
    _same(getattr(flow, fn)(*rc, dtype=flow.int32), getattr(torch, fn)(*rc, dtype=torch.int32))


def test_amin_ties_without_self_share_all_of_the_gradient() -> None:
    """A deliberate difference: with ``include_self=False`` PyTorch still counts the input's
    own (excluded) value among the ties, so the src entries get ``dy / 3`` here and the
    gradient no longer sums to ``dy``; jflow shares ``dy`` among the entries that contribute
    (``dy / 2`` each)."""
    x = flow.tensor([1.0, 2.0, 0.5], dtype=flow.float64, requires_grad=True)
    src = flow.tensor([1.0, 1.0, 0.5], dtype=flow.float64, requires_grad=True)
    flow.scatter_reduce(x, 0, flow.tensor([0, 0, 2]), src, "amin",
                        include_self=False).sum().backward()
    np.testing.assert_allclose(src.grad.numpy(), [0.5, 0.5, 1.0])
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 1.0, 0.0])


def test_narrow_copy_is_not_a_view() -> None:
    x = flow.arange(6.0).reshape(2, 3)
    y = x.narrow_copy(1, 1, 2)
    y[0, 0] = 100.0
    assert x.numpy()[0, 1] == 1.0


def test_where_nonzero_functor() -> None:
    """The functor for torch.where(condition) (its api.yaml overload belongs to ``where``)."""
    from jflow.functional.registry import FUNCTORS
    c = _b(3, 4)
    _same(FUNCTORS["WhereNonzero"](flow.tensor(c)), torch.where(torch.tensor(c)))


def test_varargs_forms() -> None:
    a, b = _f(3), _f(2)
    _same(ti.meshgrid(flow.tensor(a), flow.tensor(b), indexing="xy"),
          torch.meshgrid(torch.tensor(a), torch.tensor(b), indexing="xy"))
    _same(ti.block_diag(flow.tensor(a), flow.tensor(b)),
          torch.block_diag(torch.tensor(a), torch.tensor(b)))
    _same(ti.cartesian_prod(flow.tensor(a), flow.tensor(b)),
          torch.cartesian_prod(torch.tensor(a), torch.tensor(b)))


# -- in-place forms: through views, with autograd ----------------------------------------------

_SRC32, _SRC22, _SRC3, _SRC4, _MASK22 = _f(3, 2), _f(2, 2), _f(3), _f(4), _b(2, 2)
_INPLACE = [
    ("index_add_", lambda lib: (0, lib.tensor([1, 1, 0]), lib.tensor(_SRC32)), {"alpha": 2}),
    ("index_copy_", lambda lib: (1, lib.tensor([1, 0]), lib.tensor(_SRC22)), {}),
    ("index_fill_", lambda lib: (0, lib.tensor([1]), -3.0), {}),
    ("index_put_", lambda lib: ((lib.tensor([0, 0, 1]), lib.tensor([1, 1, -1])),
                                lib.tensor(_SRC3)), {"accumulate": True}),
    ("masked_scatter_", lambda lib: (lib.tensor(_MASK22), lib.tensor(_SRC4)), {}),
    ("scatter_reduce_", lambda lib: (0, lib.tensor([[0, 1], [0, 1]]), lib.tensor(_SRC22),
                                     "amax"), {"include_self": False}),
]


@pytest.mark.parametrize("name,make,kwargs", _INPLACE, ids=[c[0] for c in _INPLACE])
def test_inplace_through_view(name: str, make: Any, kwargs: dict) -> None:
    base, w = _f(3, 2), _f(3, 2)
    results = []
    for lib in (flow, torch):
        leaf = lib.tensor(base, requires_grad=True)
        y = leaf * 1.0
        v = y[1:]                     # a view of y: the write must reach y
        out = getattr(v, name)(*make(lib), **kwargs)
        assert out is v
        (y * lib.tensor(w)).sum().backward()
        results.append((y, leaf.grad))
    _same(results[0][0], results[1][0])
    _same(results[0][1], results[1][1])


# -- errors -------------------------------------------------------------------------------------

def test_data_dependent_shapes_refuse_tracing() -> None:
    for fn in (flow.nonzero, flow.argwhere, lambda t: flow.masked_select(t, t > 0),
               lambda t: flow.repeat_interleave(t, (t > 0).long())):
        with pytest.raises(TypeError, match="tracing"):
            jax.jit(fn)(flow.ones(3))


def test_repeat_interleave_traces_with_output_size() -> None:
    x, r = _f(2, 3), np.array([2, 0, 3])
    got = jax.jit(lambda a, b: flow.repeat_interleave(a, b, 1, output_size=5))(
        flow.tensor(x), flow.tensor(r))
    _same(got, torch.repeat_interleave(torch.tensor(x), torch.tensor(r), 1, output_size=5))


def test_masked_scatter_and_index_put_trace() -> None:
    """No data-dependent size: both run under jax.jit."""
    def f(t: Any) -> Any:
        m = flow.masked_scatter(t, t > 0, t * 10)
        return flow.index_put(m, (flow.tensor([0, 0]),), flow.tensor(1.0), accumulate=True)
    a = flow.tensor([-1.0, 2.0, 3.0])
    np.testing.assert_allclose(jax.jit(f)(a).numpy(), f(a).numpy())
    np.testing.assert_allclose(f(a).numpy(), [1.0, -10.0, 20.0])


@pytest.mark.parametrize("call,exc,match", [
    (lambda: flow.index_add(flow.zeros(3), 0, flow.tensor([3]), flow.ones(1)), IndexError,
     r"index_add\(\): index 3 is out of bounds"),
    (lambda: flow.index_add(flow.zeros(3), 0, flow.tensor([0.0]), flow.ones(1)), TypeError,
     r"index_add\(\): expected 'index'"),
    (lambda: flow.index_add(flow.zeros(3, 2), 0, flow.tensor([0]), flow.ones(2, 2)),
     ValueError, r"number of indices \(1\) should be equal to source.size\(0\)"),
    (lambda: flow.index_add(flow.zeros(3), 0, flow.tensor([0]), flow.ones(1).double()),
     TypeError, "same dtype"),
    (lambda: flow.index_add(flow.zeros(3), 1, flow.tensor([0]), flow.ones(1)), IndexError,
     r"index_add\(\): Dimension out of range .*but got 1"),
    (lambda: flow.index_copy(flow.zeros(3), 0, flow.tensor([[0]]), flow.ones(1)), ValueError,
     "dimension 1 or 0"),
    (lambda: flow.index_put(flow.zeros(3), (flow.tensor([-4]),), flow.tensor(1.0)),
     IndexError, r"index_put\(\): index -4 is out of bounds for dimension 0 with size 3"),
    (lambda: flow.index_put(flow.zeros(3), (flow.tensor([0]),) * 2, flow.tensor(1.0)),
     IndexError, "too many indices"),
    (lambda: flow.index_put(flow.zeros(3, 2), (flow.tensor([0, 1]),), flow.ones(3)),
     ValueError, "shape mismatch"),
    (lambda: flow.take(flow.zeros(2, 2), flow.tensor([4])), IndexError, r"take\(\): out of range"),
    (lambda: flow.masked_select(flow.zeros(2), flow.ones(2)), TypeError,
     r"masked_select\(\): expected 'mask' to be a bool tensor"),
    (lambda: flow.masked_scatter(flow.zeros(3), flow.ones(3).bool(), flow.ones(2)), ValueError,
     r"number of elements in source \(2\) < number of ones in mask \(3\)"),
    (lambda: flow.take_along_dim(flow.zeros(2, 2), flow.tensor([0]), 0), ValueError,
     "same number of dimensions"),
    (lambda: flow.repeat_interleave(flow.zeros(3), flow.tensor([1, 2])), ValueError,
     "same size as input"),
    (lambda: flow.repeat_interleave(flow.zeros(3), 2, output_size=5), ValueError,
     "output_size"),
    (lambda: flow.repeat_interleave(flow.zeros(3), -1), ValueError, "negative"),
    (lambda: flow.rot90(flow.zeros(2, 2), 1, [0, 0]), ValueError, "rotation dims"),
    (lambda: flow.rot90(flow.zeros(2), 1), ValueError, "total dims >= 2"),
    (lambda: flow.diff(flow.tensor(1.0)), ValueError, "at least one-dimensional"),
    (lambda: flow.diff(flow.zeros(3), -1), ValueError, "non-negative"),
    (lambda: flow.fliplr(flow.zeros(3)), ValueError, ">= 2-d"),
    (lambda: flow.meshgrid([flow.zeros(2)], indexing="ji"), ValueError, "'xy' or 'ij'"),
    (lambda: flow.meshgrid([flow.zeros(2, 2)]), ValueError, "0D or 1D"),
    (lambda: flow.block_diag([flow.zeros(1, 1, 1)]), ValueError, "2 or fewer dimensions"),
    (lambda: flow.combinations(flow.zeros(2, 2)), ValueError, "1D vector"),
    (lambda: flow.tril_indices(-1, 2), ValueError, "non-negative"),
    (lambda: flow.hstack([]), ValueError, "non-empty"),
    (lambda: flow.scatter_reduce(flow.zeros(3), 0, flow.tensor([0]), flow.ones(1), "max"),
     ValueError, "sum, prod, mean, amax or amin"),
    (lambda: flow.scatter_reduce(flow.zeros(3), 0, flow.tensor([0]), flow.ones(1).long(),
                                 "sum"), TypeError, "scatter_reduce"),
])
def test_errors(call: Any, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        call()


def test_bounds_of_a_reshaping_view_are_its_bases(monkeypatch):
    """An index check reads a reshaping view's bounds from its base (the same values), on CPU
    from the array's own buffer: no executable runs, so the check does not wait behind queued
    computations. A slice (other values) is read itself; the bounds and the errors are the
    ones the values give."""
    from jflow.functional.functors import index

    def no_executable(x):
        raise AssertionError("an executable computed the bounds")

    monkeypatch.setattr(index, "_min_max", no_executable)
    base = flow.tensor(np.array([[3, 9, 4], [7, 1, 5]]))
    views = {"view": base.view(-1), "T": base.T, "unsqueeze": base.unsqueeze(0),
             "expand": base[None].expand(4, 2, 3), "slice": base[:, 2:]}
    want = {"view": (1, 9), "T": (1, 9), "unsqueeze": (1, 9), "expand": (1, 9), "slice": (4, 5)}
    for name, v in views.items():
        assert index.host_min_max(v) == want[name], name
    emb = flow.nn.Embedding(9, 2)
    with pytest.raises(IndexError, match=r"embedding\(\): index 9 is out of bounds for "
                                         r"num_embeddings 9"):
        emb(base.view(-1))
    assert emb(base[:, 2:]).shape == (2, 1, 2)
