"""Functors of linear algebra: products with a scaled accumulator (``addmm`` & co.), ``einsum``
and the contractions built on it (``tensordot``, ``kron``, ``inner``), diagonals, ``cross``,
``cdist``, ``multi_dot``, and ``torch.linalg`` (``linalg_*`` entries, exposed as
``flow.linalg.<name>`` by :mod:`jflow.linalg`).

Where a composition of existing ops has the right gradient it is used (``addmm`` = beta *
input + alpha * mm, ``det`` = sign * exp(logabsdet), ``pinv`` through the SVD, norms through
``reduce_norm`` and the singular values); factorizations are ops of their own
(:mod:`jflow.ops.linalg`). Linalg functions take float32 / float64 only, as PyTorch's CPU
kernels, and eager calls check the result where PyTorch's LAPACK call would report an error
(singular matrix, not positive-definite).
"""

from __future__ import annotations

import math
import string
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from ..._dims import wrap_dim
from ...autograd.grad_mode import no_grad
from ...ops import get
from ...ops.linalg import check_matrix_shape
from ...tensor import Tensor, _wrap
from ..promotion import cast, promote, scalar_tensor
from ..registry import functor
from .matmul import bmm, matmul, mm, mv

_einsum = get("einsum").apply
_diag_embed = get("diag_embed").apply
_inv = get("linalg_inv").apply
_slogdet = get("linalg_slogdet").apply
_det = get("linalg_det").apply
_solve = get("linalg_solve").apply
_cholesky = get("linalg_cholesky").apply
_qr = get("linalg_qr").apply
_geqrf = get("geqrf").apply
_svd = get("linalg_svd").apply
_eigh = get("linalg_eigh").apply
_mul, _add, _sub, _div = (get(n).apply for n in ("mul", "add", "sub", "div"))
_abs, _gt, _where = (get(n).apply for n in ("abs", "gt", "where"))
_rsum, _rmax, _rmin = (get(n).apply for n in ("reduce_sum", "reduce_max", "reduce_min"))
_rnorm, _reshape, _transpose = (get(n).apply for n in ("reduce_norm", "reshape", "transpose"))
_narrow, _expand, _roll, _cast = (get(n).apply for n in ("narrow", "expand", "roll", "cast"))
_full = get("full").apply
_split = get("split").apply

_LINALG_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_TORCH_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                "uint8": "Byte", "bool": "Bool", "float16": "Half", "bfloat16": "BFloat16"}


# -- shared helpers ---------------------------------------------------------------------------

def _nd(t: Tensor) -> int:
    return t._meta.ndim


def _shape(t: Tensor) -> tuple[int, ...]:
    return tuple(int(s) for s in t._meta.shape)


def _float_input(fname: str, t: Tensor, arg: str = "A") -> None:
    if t._meta.dtype not in _LINALG_DTYPES:
        name = _TORCH_NAMES.get(t._meta.dtype.name, t._meta.dtype.name)
        raise TypeError(f"{fname}: Expected a float32 or float64 tensor as argument '{arg}'. "
                        f"Got {name}")


def _matrix_input(fname: str, t: Tensor, arg: str = "A", square: bool = False) -> None:
    _float_input(fname, t, arg)
    check_matrix_shape(fname, arg, _shape(t), square)


def _scalar(v: Any, like: Tensor) -> Tensor:
    return scalar_tensor(v, like._meta.dtype)


def _mT(t: Tensor) -> Tensor:
    nd = _nd(t)
    return _transpose(t, perm=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _bmm(a: Tensor, b: Tensor) -> Tensor:
    return matmul(a, b, False, False, 1.0)


def _eager(*ts: Tensor) -> bool:
    """Concrete local values (no tracer, no global tensor): a host check is possible."""
    return all(not isinstance(t._meta, Tracer) and getattr(t, "_global", None) is None
               for t in ts)


def _check_finite(fname: str, out: Tensor, inp: Tensor, what: str) -> None:
    """PyTorch reports a failed LAPACK call (``info > 0``); XLA returns inf/nan instead, so an
    eager call with a finite input and a non-finite result raises the same way."""
    if _eager(out, inp) and not bool(jnp.isfinite(out._value).all()) \
            and bool(jnp.isfinite(inp._value).all()):   # one bool to the host per call
        raise RuntimeError(f"{fname}: {what}")


def _broadcast_batch(fname: str, a: Tensor, b: Tensor, core_a: int, core_b: int
                     ) -> tuple[Tensor, Tensor]:
    """Expand the leading (batch) dims of ``a`` and ``b`` to their broadcast shape."""
    sa, sb = _shape(a), _shape(b)
    try:
        batch = tuple(np.broadcast_shapes(sa[:len(sa) - core_a], sb[:len(sb) - core_b]))
    except ValueError:
        raise ValueError(f"{fname}: the batch dimensions of {sa} and {sb} cannot be broadcast "
                         f"together") from None
    if sa[:len(sa) - core_a] != batch:
        a = _expand(a, shape=batch + sa[len(sa) - core_a:])
    if sb[:len(sb) - core_b] != batch:
        b = _expand(b, shape=batch + sb[len(sb) - core_b:])
    return a, b


def _dim(fname: str, d: int, nd: int, arg: str = "dim") -> int:
    return wrap_dim(fname, d, nd, arg=arg)


# -- addmm / addmv / addbmm / baddbmm ---------------------------------------------------------

def _add_scaled(fname: str, input: Tensor, prod: Tensor, beta: Any, alpha: Any) -> Tensor:
    """beta * input + alpha * prod, input broadcast to prod's shape; beta == 0 ignores input
    (nan and inf included), as PyTorch."""
    if input._meta.dtype != prod._meta.dtype:
        raise TypeError(f"{fname}(): expected input and the product to have the same dtype, "
                        f"got {input.dtype} and {prod.dtype}")
    if prod._meta.dtype.kind in "iub" and any(isinstance(v, float) for v in (beta, alpha)):
        raise TypeError(f"{fname}(): for integral input tensors, arguments beta and alpha "
                        f"must not be floating point numbers")
    si, so = _shape(input), _shape(prod)
    try:
        ok = tuple(np.broadcast_shapes(si, so)) == so
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{fname}(): argument 'input' of shape {si} cannot be broadcast to the "
                         f"product's shape {so}")
    if alpha != 1:
        prod = _mul(prod, _scalar(alpha, prod))
    if beta == 0:
        return prod
    scaled = input if beta == 1 else _mul(input, _scalar(beta, input))
    return _add(scaled, prod)


@functor("Addmm")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, beta: Any, alpha: Any) -> Tensor:
    """torch.addmm: beta * input + alpha * (mat1 @ mat2) for 2-D mat1, mat2."""
    return _add_scaled("addmm", input, mm(mat1, mat2), beta, alpha)


@functor("Addmv")
def addmv(input: Tensor, mat: Tensor, vec: Tensor, beta: Any, alpha: Any) -> Tensor:
    """torch.addmv: beta * input + alpha * (mat @ vec)."""
    return _add_scaled("addmv", input, mv(mat, vec), beta, alpha)


@functor("Baddbmm")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, beta: Any, alpha: Any) -> Tensor:
    """torch.baddbmm: beta * input + alpha * bmm(batch1, batch2)."""
    return _add_scaled("baddbmm", input, bmm(batch1, batch2), beta, alpha)


@functor("Addbmm")
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, beta: Any, alpha: Any) -> Tensor:
    """torch.addbmm: beta * input + alpha * sum_b batch1[b] @ batch2[b]."""
    return _add_scaled("addbmm", input, _rsum(bmm(batch1, batch2), axis=(0,), keepdim=False),
                       beta, alpha)


# -- einsum and contractions ------------------------------------------------------------------

def _same_dtype(fname: str, ts: Any) -> None:
    d = ts[0]._meta.dtype
    for k, t in enumerate(ts[1:], 1):
        if t._meta.dtype != d:
            raise TypeError(f"{fname}(): expected all operands to have the same dtype, got "
                            f"{ts[0].dtype} and {t.dtype} (operand {k}); cast one")


def _canonical_einsum(equation: str, operands: Any) -> tuple[str, list[Tensor]]:
    """PyTorch's einsum grammar (spaces, ``...`` broadcasting, implicit output) as the op's
    explicit letters-only equation; size-1 ellipsis dims are expanded to the broadcast size."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError("einsum(): more operands were provided than specified in the "
                         "equation" if len(operands) > len(terms) else
                         "einsum(): fewer operands were provided than specified in the "
                         "equation")
    letters = set(c for c in eq if c.isalpha())
    bad = set(eq) - letters - set(".,->")
    if bad:
        raise ValueError(f"einsum(): invalid subscript {sorted(bad)[0]!r} in {equation!r}: "
                         f"subscripts must be letters in [a-zA-Z]")
    free = [c for c in string.ascii_letters if c not in letters]
    ell_n = []
    for t, x in zip(terms, operands):
        n_let = len(t.replace("...", ""))
        if t.count("...") > 1 or t.replace("...", "").count(".") or \
                ("..." not in t and n_let != _nd(x)) or n_let > _nd(x):
            raise ValueError(f"einsum(): the subscripts {t!r} do not match operand of shape "
                             f"{_shape(x)}")
        ell_n.append(_nd(x) - n_let if "..." in t else 0)
    ne = max(ell_n, default=0)
    ell = "".join(free[:ne])
    ell_sizes = [1] * ne      # each operand's ellipsis dims are right-aligned
    new_terms = []
    for t, x, k in zip(terms, operands, ell_n):
        if "..." in t:
            pre = t.index("...")
            sub = _shape(x)[pre:pre + k]
            for j, n in enumerate(sub):
                pos = ne - k + j
                if n != 1:
                    if ell_sizes[pos] not in (1, n):
                        raise ValueError(f"einsum(): operands do not broadcast with remapped "
                                         f"shapes; the ellipsis dims {sub} do not match")
                    ell_sizes[pos] = n
            t = t.replace("...", ell[ne - k:])
        new_terms.append(t)
    ops = []
    for t, x, k in zip(terms, operands, ell_n):  # expand size-1 ellipsis dims
        if k:
            want = list(_shape(x))
            pre = t.index("...")
            for j in range(k):
                want[pre + j] = ell_sizes[ne - k + j]
            if tuple(want) != _shape(x):
                x = _expand(x, shape=tuple(want))
        ops.append(x)
    if arrow:
        if rhs.count("...") > 1 or rhs.replace("...", "").count("."):
            raise ValueError(f"einsum(): invalid output subscripts in {equation!r}")
        out = rhs.replace("...", ell)   # without '...' the ellipsis dims are summed out
    else:
        counts: dict[str, int] = {}
        for t in terms:
            for c in t.replace("...", ""):
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    return ",".join(new_terms) + "->" + out, ops


@functor("Einsum")
def einsum(equation: str, operands: Any) -> Tensor:
    """torch.einsum: PyTorch's full equation grammar, lowered to one ``einsum`` op."""
    operands = list(operands)
    if not operands:
        raise ValueError("einsum(): must provide at least one operand")
    _same_dtype("einsum", operands)
    eq, ops = _canonical_einsum(equation, operands)
    return _einsum(ops, equation=eq)


@functor("TensorDot")
def tensordot(a: Tensor, b: Tensor, dims_a: Any, dims_b: Any) -> Tensor:
    """torch.tensordot with explicit dim lists (``flow.tensordot`` turns ``dims=n`` into the
    last n dims of ``a`` and the first n of ``b``)."""
    if len(dims_a) != len(dims_b):
        raise ValueError(f"tensordot(): both dimension lists should have the same length, got "
                         f"{len(dims_a)} and {len(dims_b)}")
    a, b = promote(a, b)
    na, nb = _nd(a), _nd(b)
    da = [_dim("tensordot", d, na, "dims") for d in dims_a]
    db = [_dim("tensordot", d, nb, "dims") for d in dims_b]
    la = list(string.ascii_letters[:na])
    lb = list(string.ascii_letters[na:na + nb])
    for i, j in zip(da, db):
        # PyTorch: a size-1 contracted dim broadcasts (the other side is summed over it first)
        if _shape(a)[i] == 1 and _shape(b)[j] != 1:
            b = _rsum(b, axis=(j,), keepdim=True)
        elif _shape(b)[j] == 1 and _shape(a)[i] != 1:
            a = _rsum(a, axis=(i,), keepdim=True)
        if _shape(a)[i] != _shape(b)[j]:
            raise ValueError(f"tensordot(): contracted dimensions need to match, but first has "
                             f"size {_shape(a)[i]} in dim {i} and second has size "
                             f"{_shape(b)[j]} in dim {j}")
        lb[j] = la[i]
    out = [c for k, c in enumerate(la) if k not in da] + \
          [c for k, c in enumerate(lb) if k not in db]
    return _einsum([a, b], equation="".join(la) + "," + "".join(lb) + "->" + "".join(out))


@functor("Kron")
def kron(input: Tensor, other: Tensor) -> Tensor:
    """torch.kron: the Kronecker product (ranks padded with leading 1s), one einsum + reshape."""
    a, b = promote(input, other)
    nd = max(_nd(a), _nd(b))
    sa = (1,) * (nd - _nd(a)) + _shape(a)
    sb = (1,) * (nd - _nd(b)) + _shape(b)
    a, b = _reshape(a, shape=sa), _reshape(b, shape=sb)
    la, lb = string.ascii_lowercase[:nd], string.ascii_uppercase[:nd]
    out = _einsum([a, b], equation=f"{la},{lb}->" + "".join(x + y for x, y in zip(la, lb)))
    return _reshape(out, shape=tuple(x * y for x, y in zip(sa, sb)))


@functor("Inner")
def inner(input: Tensor, other: Tensor) -> Tensor:
    """torch.inner: the sum over the last dims; a 0-d operand multiplies."""
    a, b = promote(input, other)
    if _nd(a) == 0 or _nd(b) == 0:
        return _mul(a, b)
    if _shape(a)[-1] != _shape(b)[-1]:
        raise ValueError(f"inner() the last dimension must match on both input tensors but got "
                         f"shapes {list(_shape(a))} and {list(_shape(b))}")
    la = string.ascii_lowercase[:_nd(a) - 1]
    lb = string.ascii_uppercase[:_nd(b) - 1]
    return _einsum([a, b], equation=f"{la}z,{lb}z->{la}{lb}")


@functor("Vdot")
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """torch.vdot: the dot product of two 1-D tensors (the conjugate is a no-op for reals)."""
    for arg, t in (("input", input), ("other", other)):
        if _nd(t) != 1:
            raise ValueError(f"vdot(): argument '{arg}' must be a 1-D tensor, got a "
                             f"{_nd(t)}-D tensor")
    if input._meta.dtype != other._meta.dtype:
        raise TypeError(f"vdot(): expected both vectors to have same dtype, but found "
                        f"{input.dtype} and {other.dtype}")
    if _shape(input) != _shape(other):
        raise ValueError(f"vdot(): inconsistent tensor size, expected tensor [{_shape(input)[0]}]"
                         f" and src [{_shape(other)[0]}] to have the same number of elements")
    return get("dot").apply(input, other)


@functor("LinalgMultiDot")
def multi_dot(tensors: Any) -> Tensor:
    """torch.linalg.multi_dot: a 1-D first (last) operand is a row (column) vector and that
    dim is dropped from the result. Products run left to right."""
    return _multi_dot(list(tensors), "linalg.multi_dot")


def _multi_dot(ts: list[Tensor], fname: str) -> Tensor:
    if len(ts) < 2:
        raise ValueError(f"{fname}(): expected at least 2 tensors but got {len(ts)}")
    for k, t in enumerate(ts):
        ok = _nd(t) == 2 or (_nd(t) == 1 and k in (0, len(ts) - 1))
        if not ok:
            raise ValueError(f"{fname}(): tensor {k} must be 2-D (only the first and last may "
                             f"be 1-D), got {_nd(t)}-D")
    _same_dtype(fname, ts)
    first_vec, last_vec = _nd(ts[0]) == 1, _nd(ts[-1]) == 1
    if first_vec:
        ts[0] = _reshape(ts[0], shape=(1,) + _shape(ts[0]))
    if last_vec:
        ts[-1] = _reshape(ts[-1], shape=_shape(ts[-1]) + (1,))
    out = ts[0]
    for k, t in enumerate(ts[1:], 1):
        if _shape(out)[-1] != _shape(t)[0]:
            raise ValueError(f"{fname}(): tensors {k - 1} and {k} cannot be multiplied "
                             f"({_shape(out)} and {_shape(t)})")
        out = mm(out, t)
    s = _shape(out)
    s = s[1:] if first_vec else s
    s = s[:-1] if last_vec else s
    return _reshape(out, shape=s) if s != _shape(out) else out


@functor("ChainMatmul")
def chain_matmul(matrices: Any) -> Tensor:
    """torch.chain_matmul (deprecated there for linalg.multi_dot): 2-D matrices only."""
    ts = list(matrices)
    if len(ts) == 1:
        if _nd(ts[0]) != 2:
            raise ValueError(f"chain_matmul(): Expected 2-D matrices, got {_nd(ts[0])}-D")
        return ts[0]
    for k, t in enumerate(ts):
        if _nd(t) != 2:
            raise ValueError(f"chain_matmul(): Tensor dimension is {_nd(t)}, expected 2 "
                             f"instead (matrix {k})")
    return _multi_dot(ts, "chain_matmul")


# -- diagonals ----------------------------------------------------------------------------------

def _diag_part(x: Tensor, offset: int) -> Tensor:
    """A copy of the offset diagonal of the last two dims (narrow to the square block, then
    ``...ii->...i``), so the gradient flows through ops, not a view."""
    s = _shape(x)
    nd = len(s)
    r, c = s[-2], s[-1]
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    n = max(0, min(r - r0, c - c0))
    x = _narrow(_narrow(x, dim=nd - 2, start=min(r0, r), length=n), dim=nd - 1,
                start=min(c0, c), length=n)
    b = string.ascii_lowercase[:nd - 2]
    return _einsum([x], equation=f"{b}zz->{b}z")


@functor("Diag")
def diag(input: Tensor, diagonal: int) -> Tensor:
    """torch.diag: a 1-D input becomes a matrix with it on the ``diagonal``; a 2-D input gives
    that diagonal (a copy)."""
    if _nd(input) == 1:
        return _diag_embed(input, offset=diagonal)
    if _nd(input) == 2:
        return _diag_part(input, diagonal)
    raise ValueError(f"diag(): Supports 1D or 2D tensors. Got {_nd(input)}D")


@functor("DiagEmbed")
def diag_embed(input: Tensor, offset: int, dim1: int, dim2: int) -> Tensor:
    """torch.diag_embed: the last dim on the ``offset`` diagonal of the planes (dim1, dim2) of
    a result with one more dim."""
    nd = _nd(input) + 1
    d1, d2 = _dim("diag_embed", dim1, nd, "dim1"), _dim("diag_embed", dim2, nd, "dim2")
    if d1 == d2:
        raise ValueError(f"diag_embed(): diagonal dimensions cannot be identical {dim1}, {dim2}")
    y = _diag_embed(input, offset=offset)
    if (d1, d2) == (nd - 2, nd - 1):
        return y
    perm, rest = [0] * nd, iter(range(nd - 2))
    for k in range(nd):
        perm[k] = nd - 2 if k == d1 else nd - 1 if k == d2 else next(rest)
    return _transpose(y, perm=tuple(perm))


@functor("Trace")
def trace(input: Tensor) -> Tensor:
    """torch.trace: the sum of the main diagonal of a 2-D input (integers sum as int64)."""
    if _nd(input) != 2:
        raise ValueError(f"trace(): expected a matrix, but got tensor with dim {_nd(input)}")
    x = cast(input, np.dtype(np.int64)) if input._meta.dtype.kind in "iub" else input
    return _rsum(_diag_part(x, 0), axis=(0,), keepdim=False)


# -- cross / cdist ----------------------------------------------------------------------------

def _cross(fname: str, input: Tensor, other: Tensor, dim: int | None) -> Tensor:
    a, b = promote(input, other)
    if _nd(a) != _nd(b):
        raise ValueError(f"{fname}: inputs must have the same number of dimensions, got "
                         f"{_nd(a)} and {_nd(b)}")
    a, b = _broadcast_batch(fname, a, b, 0, 0)
    s = _shape(a)
    if dim is None:  # torch.cross's deprecated default: the first dim of size 3
        dim = next((i for i, n in enumerate(s) if n == 3), None)
        if dim is None:
            raise ValueError(f"{fname}: no dimension of size 3 in input")
    d = _dim(fname, dim, len(s))
    if s[d] != 3:
        raise ValueError(f"{fname}: inputs dimension {dim} must have length 3. Got "
                         f"{_shape(input)[d]} and {_shape(other)[d]}")
    # c_i = a_{i+1} b_{i+2} - a_{i+2} b_{i+1}
    r = lambda t, k: _roll(t, shifts=(k,), axes=(d,))  # noqa: E731
    return _sub(_mul(r(a, -1), r(b, -2)), _mul(r(a, -2), r(b, -1)))


@functor("Cross")
def cross(input: Tensor, other: Tensor, dim: int | None) -> Tensor:
    """torch.cross: dim=None is the first dim of size 3 (PyTorch's deprecated default)."""
    return _cross("cross", input, other, dim)


@functor("LinalgCross")
def linalg_cross(input: Tensor, other: Tensor, dim: int) -> Tensor:
    """torch.linalg.cross: the cross product along ``dim`` (default -1), batch broadcast."""
    return _cross("linalg.cross", input, other, dim)


@functor("Cdist")
def cdist(x1: Tensor, x2: Tensor, p: float, compute_mode: str | None) -> Tensor:
    """torch.cdist: the p-norm distance of each row of x1 (..., P, M) to each row of x2
    (..., R, M), batch dims broadcast; one broadcast difference and ``reduce_norm``, whatever
    ``compute_mode`` (PyTorch's matmul form for p=2 is a speed path with less precision)."""
    for arg, t in (("x1", x1), ("x2", x2)):
        if _nd(t) < 2:
            raise ValueError(f"cdist(): argument '{arg}' must have at least 2 dimensions, got "
                             f"{_nd(t)}")
        if t._meta.dtype.kind not in "fV" and t._meta.dtype.name != "bfloat16":
            raise TypeError(f"cdist only supports floating-point dtypes, {arg} got: "
                            f"{_TORCH_NAMES.get(t._meta.dtype.name, t._meta.dtype.name)}")
    if _shape(x1)[-1] != _shape(x2)[-1]:
        raise ValueError(f"cdist(): X1 and X2 must have the same number of columns. X1: "
                         f"{_shape(x1)[-1]} X2: {_shape(x2)[-1]}")
    if p < 0:
        raise ValueError(f"cdist only supports non-negative p values, got {p}")
    if compute_mode not in (None, "use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"cdist(): {compute_mode!r} is not a valid value for compute_mode")
    a, b = promote(x1, x2)
    a, b = _broadcast_batch("cdist", a, b, 2, 2)
    sa, sb = _shape(a), _shape(b)
    diff = _sub(_reshape(a, shape=sa[:-1] + (1, sa[-1])),
                _reshape(b, shape=sb[:-2] + (1,) + sb[-2:]))
    return _rnorm(diff, ord=float(p), axis=(len(sa),), keepdim=False)


# -- torch.linalg: inverses, determinants, solves -----------------------------------------------

@functor("LinalgInv")
def linalg_inv(A: Tensor) -> Tensor:
    """torch.linalg.inv (and torch.inverse); a singular input raises in eager mode."""
    _matrix_input("linalg.inv", A, square=True)
    out = _inv(A)
    _check_finite("linalg.inv", out, A, "The diagonal element of the LU factorization is zero, "
                  "the inversion could not be completed because the input matrix is singular.")
    return out


@functor("LinalgSlogdet")
def linalg_slogdet(A: Tensor) -> tuple[Tensor, Tensor]:
    """torch.linalg.slogdet: (sign, log|det|); a singular input gives (0, -inf)."""
    _matrix_input("linalg.slogdet", A, square=True)
    return tuple(_slogdet(A))


@functor("LinalgDet")
def linalg_det(A: Tensor) -> Tensor:
    """torch.linalg.det (and torch.det): an op of its own, not sign * exp(logabsdet), so that
    the gradient is the cofactor matrix, finite at singular inputs as PyTorch's."""
    _matrix_input("linalg.det", A, square=True)
    return _det(A)


@functor("LinalgSolve")
def linalg_solve(A: Tensor, B: Tensor, left: bool) -> Tensor:
    """torch.linalg.solve: X with A X = B (``left=False``: X A = B). B is a batch of vectors
    when it is 1-D or has A's shape without the last dim; batch dims broadcast."""
    _matrix_input("linalg.solve", A, square=True)
    _float_input("linalg.solve", B, "B")
    if A._meta.dtype != B._meta.dtype:
        raise TypeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                        f"A of type {A.dtype} and B of type {B.dtype} instead")
    vec = _nd(B) == 1 or (left and _nd(B) == _nd(A) - 1 and _shape(B) == _shape(A)[:-1])
    if vec:
        B = _reshape(B, shape=_shape(B) + (1,))
    if _nd(B) < 2:
        raise ValueError("linalg.solve: argument 'B' must have at least 1 dimension")
    if not left:   # X A = B  <=>  A^T X^T = B^T
        A, B = _mT(A), _mT(B)
    if _shape(B)[-2] != _shape(A)[-1]:
        raise ValueError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                         f"{'AX = B' if left else 'XA = B'} ({_shape(A)} and {_shape(B)})")
    a, b = _broadcast_batch("linalg.solve", A, B, 2, 2)
    x = _solve(a, b)
    _check_finite("linalg.solve", x, a, "The solver failed because the input matrix is "
                  "singular.")
    if not left:
        x = _mT(x)
    return _reshape(x, shape=_shape(x)[:-1]) if vec else x


# -- factorizations --------------------------------------------------------------------------

@functor("LinalgCholesky")
def linalg_cholesky(A: Tensor, upper: bool) -> Tensor:
    """torch.linalg.cholesky: reads the lower (``upper``: the upper) triangle; a matrix that
    is not positive-definite raises in eager mode."""
    _matrix_input("linalg.cholesky", A, square=True)
    out = _cholesky(A, upper=upper)
    _check_finite("linalg.cholesky", out, A, "The factorization could not be completed "
                  "because the input is not positive-definite.")
    return out


@functor("LinalgQr")
def linalg_qr(A: Tensor, mode: str) -> tuple[Tensor, Tensor]:
    """torch.linalg.qr: mode 'reduced', 'complete', or 'r' (an empty Q)."""
    _matrix_input("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"linalg.qr: qr received unrecognized mode '{mode}' but expected one of "
                         f"'reduced' (default), 'r', or 'complete'")
    q, r = _qr(A, mode="reduced" if mode == "r" else mode)
    if mode == "r":
        q = _full(shape=(0,), value=0.0, dtype=A._meta.dtype)
    return q, r


@functor("LinalgSvd")
def linalg_svd(A: Tensor, full_matrices: bool) -> tuple[Tensor, Tensor, Tensor]:
    """torch.linalg.svd: (U, S, Vh), S descending."""
    _matrix_input("linalg.svd", A)
    return tuple(_svd(A, full_matrices=full_matrices))


@functor("LinalgSvdvals")
def linalg_svdvals(A: Tensor) -> Tensor:
    """torch.linalg.svdvals: the singular values (descending); the gradient is U dS V^T."""
    _matrix_input("linalg.svdvals", A)
    return _svd(A, full_matrices=False)[1]


def _uplo(fname: str, UPLO: str) -> bool:
    if UPLO not in ("L", "U"):
        raise ValueError(f"{fname}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO == "U"


@functor("LinalgEigh")
def linalg_eigh(A: Tensor, UPLO: str) -> tuple[Tensor, Tensor]:
    """torch.linalg.eigh: eigenvalues (ascending) and eigenvectors of the symmetric matrix
    read from the ``UPLO`` triangle."""
    _matrix_input("linalg.eigh", A, square=True)
    return tuple(_eigh(A, upper=_uplo("linalg.eigh", UPLO)))


@functor("LinalgEigvalsh")
def linalg_eigvalsh(A: Tensor, UPLO: str) -> Tensor:
    """torch.linalg.eigvalsh: the eigenvalues of :func:`linalg_eigh`."""
    _matrix_input("linalg.eigvalsh", A, square=True)
    return _eigh(A, upper=_uplo("linalg.eigvalsh", UPLO))[0]


def _col(v: Tensor) -> Tensor:
    s = _shape(v)
    return _reshape(v, shape=s[:-1] + (1, s[-1]))


def _tol_tensor(v: Any, like: Tensor) -> Tensor | None:
    if v is None or isinstance(v, Tensor):
        return v if v is None or v._meta.dtype == like._meta.dtype else cast(v, like._meta.dtype)
    return _scalar(float(v), like)


def _tolerance(A: Tensor, s: Tensor, atol: Any, rtol: Any) -> Tensor:
    """max(atol, rtol * s_max) per matrix, a tensor of A's batch shape (PyTorch's rule: rtol
    defaults to eps * max(m, n) where atol is not given or not positive, else to 0). ``atol``
    / ``rtol`` are numbers or tensors broadcasting with the batch; ``s`` holds the singular
    values (or |eigenvalues|) along its last dim."""
    m, n = _shape(A)[-2:]
    batch = _shape(A)[:-2]
    at, rt = _tol_tensor(atol, s), _tol_tensor(rtol, s)
    if rt is None:
        default = _scalar(float(np.finfo(A._meta.dtype).eps) * max(m, n), s)
        rt = default if at is None else _where(_gt(at, _scalar(0.0, s)), _scalar(0.0, s),
                                               default)
    smax = _rmax(s, axis=(_nd(s) - 1,), keepdim=False) if _shape(s)[-1] else \
        _full(shape=batch, value=0.0, dtype=s._meta.dtype)
    tol = api().mul(smax, rt)
    if at is not None:
        tol = api().maximum(tol, at)
    if _shape(tol) != batch:
        try:
            tol = _expand(tol, shape=batch)
        except Exception:
            raise ValueError(f"linalg.pinv: atol / rtol of shape {_shape(tol)} do not broadcast "
                             f"to the batch shape {batch} of A") from None
    return tol


def _spectrum(fname: str, A: Tensor, hermitian: bool) -> Tensor:
    """The singular values, or |eigenvalues| of the symmetric matrix read from A's lower
    triangle when ``hermitian`` (PyTorch's)."""
    if hermitian:
        _matrix_input(fname, A, square=True)
        return _abs(_eigh(A, upper=False)[0])
    return _svd(A, full_matrices=False)[1]


@functor("LinalgPinv")
def linalg_pinv(A: Tensor, atol: Any, rtol: Any, hermitian: bool) -> Tensor:
    """torch.linalg.pinv (see :func:`pinv_impl`)."""
    return pinv_impl(A, atol, rtol, hermitian)


def pinv_impl(A: Tensor, atol: Any, rtol: Any, hermitian: bool) -> Tensor:
    """torch.linalg.pinv: V diag(1/s) U^T over the singular values above the tolerance
    (``hermitian``: from eigh of the lower triangle, as PyTorch). One op (linalg_pinv) whose
    gradient is pinv's own (Golub-Pereyra), finite at repeated singular values; ``atol`` /
    ``rtol`` may be numbers or tensors."""
    _matrix_input("linalg.pinv", A)
    with no_grad():
        tol = _tolerance(A, _spectrum("linalg.pinv", A.detach(), hermitian), atol, rtol)
    return _pinv(A, tol, hermitian=hermitian)


@functor("LinalgPinvRcond")
def linalg_pinv_rcond(A: Tensor, rcond: Any, hermitian: bool) -> Tensor:
    """torch.linalg.pinv(A, rcond, hermitian): the older form, rcond = rtol."""
    return linalg_pinv(A, None, rcond, hermitian)


@functor("LinalgMatrixRank")
def linalg_matrix_rank(A: Tensor, atol: Any, rtol: Any, hermitian: bool) -> Tensor:
    """torch.linalg.matrix_rank (see :func:`matrix_rank_impl`)."""
    return matrix_rank_impl(A, atol, rtol, hermitian)


def matrix_rank_impl(A: Tensor, atol: Any, rtol: Any, hermitian: bool) -> Tensor:
    """torch.linalg.matrix_rank: the number of singular values (|eigenvalues| when
    ``hermitian``) above the tolerance (int64); ``atol`` / ``rtol`` numbers or tensors."""
    _matrix_input("linalg.matrix_rank", A)
    s = _spectrum("linalg.matrix_rank", A, hermitian)
    keep = _gt(s, _reshape(_tolerance(A, s, atol, rtol), shape=_shape(s)[:-1] + (1,)))
    return _rsum(_cast(keep, dtype=np.dtype(np.int64)), axis=(_nd(s) - 1,), keepdim=False)


@functor("LinalgMatrixRankTol")
def linalg_matrix_rank_tol(A: Tensor, tol: Any, hermitian: bool) -> Tensor:
    """torch.linalg.matrix_rank(A, tol, hermitian): the older form, tol = atol (rtol 0)."""
    return linalg_matrix_rank(A, tol, 0.0, hermitian)


@functor("LinalgLstsq")
def linalg_lstsq(A: Tensor, B: Tensor, rcond: float | None, driver: str | None
                 ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """torch.linalg.lstsq: the minimum-norm least-squares solution pinv(A) @ B (what every
    driver returns for a full-rank A; PyTorch's 'gels' assumes full rank). The other fields
    follow PyTorch's CPU drivers (default 'gelsy'): ``residuals`` (squared residual norms,
    when m > n and A has full rank) for all but 'gelsy', ``rank`` for all but 'gels',
    ``singular_values`` for 'gelsd' / 'gelss'; an absent field is an empty tensor."""
    _matrix_input("linalg.lstsq", A)
    _float_input("linalg.lstsq", B, "B")
    driver = "gelsy" if driver is None else driver
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise ValueError(f"linalg.lstsq: parameter `driver` should be one of (gels, gelsy, "
                         f"gelsd, gelss), got {driver!r}")
    if A._meta.dtype != B._meta.dtype:
        raise TypeError(f"linalg.lstsq: Expected A and B to have the same dtype, but found A of "
                        f"type {A.dtype} and B of type {B.dtype} instead")
    vec = _nd(B) == _nd(A) - 1
    b = _reshape(B, shape=_shape(B) + (1,)) if vec else B
    if _shape(b)[-2] != _shape(A)[-2]:
        raise ValueError(f"linalg.lstsq: input.size(-2) should match other.size(-2), got "
                         f"{_shape(A)[-2]} and {_shape(b)[-2]}")
    a, b = _broadcast_batch("linalg.lstsq", A, b, 2, 2)
    x = _bmm(linalg_pinv(a, None, rcond, False), b)
    m, n = _shape(a)[-2:]
    dt = a._meta.dtype
    empty = _full(shape=(0,), value=0.0, dtype=dt)
    rank = _full(shape=(0,), value=0, dtype=np.dtype(np.int64)) if driver == "gels" else \
        linalg_matrix_rank(a, None, rcond, False)
    svals = _svd(a, full_matrices=False)[1] if driver in ("gelsd", "gelss") else empty
    residuals = empty
    full_rank = driver == "gels" or (_eager(rank) and bool(np.all(np.asarray(rank._value) == n)))
    if driver != "gelsy" and m > n and full_rank:
        r = _sub(_bmm(a, x), b)
        residuals = _rsum(_mul(r, r), axis=(_nd(r) - 2,), keepdim=False)
        if vec:
            residuals = _reshape(residuals, shape=_shape(residuals)[:-1])
    if vec:
        x = _reshape(x, shape=_shape(x)[:-1])
    return x, residuals, rank, svals


# -- norms ----------------------------------------------------------------------------------------

def _norm_input(fname: str, x: Tensor, dtype: Any) -> Tensor:
    if dtype is not None:
        x = cast(x, np.dtype(dtype.np) if hasattr(dtype, "np") else np.dtype(dtype))
    if x._meta.dtype.kind not in "f" and x._meta.dtype.name != "bfloat16":
        name = _TORCH_NAMES.get(x._meta.dtype.name, x._meta.dtype.name)
        raise TypeError(f"{fname}: Expected a floating point or complex tensor as input. Got "
                        f"{name}")
    return x


@functor("LinalgVectorNorm")
def linalg_vector_norm(x: Tensor, ord: Any, dim: Any, keepdim: bool, dtype: Any) -> Tensor:
    """torch.linalg.vector_norm over ``dim`` (every dim when None) through ``reduce_norm``."""
    if isinstance(ord, bool):
        raise TypeError("linalg.vector_norm: argument 'ord' must be a number, not bool")
    x = _norm_input("linalg.vector_norm", x, dtype)
    nd = _nd(x)
    axes = tuple(range(nd)) if dim is None or len(dim) == 0 else \
        tuple(sorted({_dim("linalg.vector_norm", d, nd) for d in dim}))
    if float(ord) < 0 or math.isinf(ord):
        if any(_shape(x)[a] == 0 for a in axes):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty "
                               f"tensor because the operation does not have an identity")
    if nd == 0:
        return _abs(x) if float(ord) != 0 else cast(_gt(_abs(x), _scalar(0.0, x)),
                                                    x._meta.dtype)
    return _rnorm(x, ord=float(ord), axis=axes, keepdim=keepdim)


def _matrix_norm(fname: str, A: Tensor, ord: Any, dim: Any, keepdim: bool, dtype: Any
                 ) -> Tensor:
    A = _norm_input(fname, A, dtype)
    nd = _nd(A)
    if nd < 2:
        raise ValueError(f"{fname}: The input tensor A must have at least 2 dimensions.")
    dim = (-2, -1) if dim is None else tuple(dim)
    if len(dim) != 2:
        raise ValueError(f"{fname}: dim must be a 2-tuple. Got {dim}")
    d0, d1 = (_dim(fname, d, nd) for d in dim)
    if d0 == d1:
        raise ValueError(f"{fname}: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        return _rnorm(A, ord=2.0, axis=tuple(sorted((d0, d1))), keepdim=keepdim)
    if ord not in ("nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise ValueError(f"{fname}: Order {ord} not supported.")
    rest = [i for i in range(nd) if i not in (d0, d1)]
    x = _transpose(A, perm=tuple(rest) + (d0, d1))      # (..., m, n)
    if ord in ("nuc", 2, -2):
        s = _svd(x, full_matrices=False)[1]
        last = (_nd(s) - 1,)
        if ord == 2 and _shape(s)[-1] == 0:    # an empty matrix: 0, as PyTorch
            s = _full(shape=_shape(s)[:-1] + (1,), value=0.0, dtype=s._meta.dtype)
        out = _rsum(s, axis=last, keepdim=False) if ord == "nuc" else \
            (_rmax if ord == 2 else _rmin)(s, axis=last, keepdim=False)
    else:   # 1: max column sum of |a|; inf: max row sum
        summed_axis, then = (nd - 2, nd - 2) if abs(ord) == 1 else (nd - 1, nd - 2)
        sums = _rsum(_abs(x), axis=(summed_axis,), keepdim=False)
        if ord > 0 and _shape(sums)[then] == 0:     # the max over nothing: 0, as PyTorch
            sums = _full(shape=_shape(sums)[:then] + (1,) + _shape(sums)[then + 1:], value=0.0,
                         dtype=sums._meta.dtype)
        out = (_rmax if ord > 0 else _rmin)(sums, axis=(then,), keepdim=False)
    if keepdim:
        shape = list(_shape(A))
        shape[d0] = shape[d1] = 1
        out = _reshape(out, shape=tuple(shape))
    return out


@functor("LinalgMatrixNorm")
def linalg_matrix_norm(A: Tensor, ord: Any, dim: Any, keepdim: bool, dtype: Any) -> Tensor:
    """torch.linalg.matrix_norm: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2 over ``dim`` (default
    the last two dims); 2 / -2 / 'nuc' through the singular values."""
    if isinstance(ord, bool):
        raise TypeError("linalg.matrix_norm: argument 'ord' must be a number or a string")
    return _matrix_norm("linalg.matrix_norm", A, ord, dim, keepdim, dtype)


@functor("LinalgNorm")
def linalg_norm(A: Tensor, ord: Any, dim: Any, keepdim: bool, dtype: Any) -> Tensor:
    """torch.linalg.norm: a vector norm over one dim (or all dims when ``ord`` and ``dim`` are
    None), a matrix norm over two dims (or a 2-D input with ``ord`` given)."""
    if isinstance(ord, bool):
        raise TypeError("linalg.norm: argument 'ord' must be a number or a string")
    nd = _nd(A)
    if dim is not None and len(dim) not in (1, 2):
        raise ValueError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got "
                         f"{list(dim)}")
    if isinstance(ord, str):
        if dim is None and nd != 2:
            raise ValueError(f"linalg.norm: If dim is not specified but ord is, the input must "
                             f"be 1D or 2D. Got {nd}D.")
        if dim is not None and len(dim) != 2:
            raise ValueError(f"linalg.norm: ord={ord!r} is a matrix norm and needs 2 dims")
        return _matrix_norm("linalg.norm", A, ord, dim, keepdim, dtype)
    if ord is None:
        if dim is not None and len(dim) == 2:
            return _matrix_norm("linalg.norm", A, "fro", dim, keepdim, dtype)
        return linalg_vector_norm(A, 2, dim, keepdim, dtype)
    if dim is None:
        if nd not in (1, 2):
            raise ValueError(f"linalg.norm: If dim is not specified but ord is, the input must "
                             f"be 1D or 2D. Got {nd}D.")
        dim = tuple(range(nd))
    if len(dim) == 2:
        return _matrix_norm("linalg.norm", A, ord, dim, keepdim, dtype)
    return linalg_vector_norm(A, ord, dim, keepdim, dtype)


# -- matrix powers -------------------------------------------------------------------------------
# Compositions of matmul / linalg_* / outer / diag (their gradients and SBP).

from ... import dtypes as _dt  # noqa: E402
from ..registry import api  # noqa: E402


@functor("MatrixPower")
def matrix_power(input: Tensor, n: int) -> Tensor:
    """torch.matrix_power (torch.linalg.matrix_power): ``input`` multiplied by itself ``n``
    times by repeated squaring (``n = 0``: identity matrices of its dtype; ``n < 0``: the
    inverse's power, float inputs only)."""
    s = _shape(input)
    if len(s) < 2 or s[-1] != s[-2]:
        raise ValueError(f"matrix_power(): argument 'input' must be a (batch of) square "
                         f"matrices, got shape {list(s)}")
    f = api()
    if n == 0:  # identities, on the tape with a zero gradient (as PyTorch's)
        eye = _full(shape=(s[-1],), value=1, dtype=input._meta.dtype)
        keep = _full(shape=s, value=1.0, dtype=np.dtype(np.bool_))
        return _where(keep, _expand(_diag_embed(eye, offset=0), shape=s), input)
    base = input
    if n < 0:
        _float_input("matrix_power()", input, "input")
        base, n = f.linalg_inv(input), -n
    out = None
    while n:
        if n & 1:
            out = base if out is None else f.matmul(out, base)
        n >>= 1
        if n:
            base = f.matmul(base, base)
    return out


@functor("Pinverse")
def pinverse(input: Tensor, rcond: float) -> Tensor:
    """torch.pinverse: ``linalg.pinv`` with singular values below ``rcond`` times the largest
    one treated as zero."""
    return linalg_pinv(input, None, rcond, False)


@functor("Logdet")
def logdet(input: Tensor) -> Tensor:
    """torch.logdet: ``log(det(input))`` from ``slogdet`` (NaN for a negative determinant,
    -inf for a zero one, as PyTorch); float32 / float64 square matrices."""
    f = api()
    sign, logabs = f.linalg_slogdet(input)
    nan = _scalar(float("nan"), logabs)
    return _where(f.lt(sign, 0), nan, logabs)


@functor("Addr")
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, beta: Any, alpha: Any) -> Tensor:
    """torch.addr: ``beta * input + alpha * outer(vec1, vec2)`` (``beta = 0`` ignores
    ``input``, NaN included)."""
    for arg, v in (("vec1", vec1), ("vec2", vec2)):
        if _nd(v) != 1:
            raise ValueError(f"addr(): argument '{arg}' must be a vector, got a {_nd(v)}-D "
                             f"tensor")
    prod = api().outer(vec1, vec2)
    if input._meta.dtype != prod._meta.dtype:
        raise TypeError(f"addr(): argument 'input' ({input.dtype}) must have the dtype of "
                        f"outer(vec1, vec2) ({prod.dtype})")
    if prod._meta.dtype == np.bool_:  # bool: logical or / and, as PyTorch
        f = api()
        keep = f.logical_and(input, bool(beta)) if beta else None
        term = f.logical_and(prod, bool(alpha))
        out = term if keep is None else f.logical_or(keep, term)
        return f.broadcast_to(out, _shape(prod))
    return _add_scaled("addr", input, prod, beta, alpha)


@functor("Diagflat")
def diagflat(input: Tensor, offset: int) -> Tensor:
    """torch.diagflat: ``input`` flattened, on the ``offset`` diagonal of a square matrix."""
    return diag(_reshape(input, shape=(-1,)), offset)


@functor("Renorm")
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """torch.renorm: each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled to
    norm ``maxnorm`` (``maxnorm / (norm + 1e-7)``, as PyTorch); float inputs."""
    if input._meta.dtype.kind != "f" and input._meta.dtype.name != "bfloat16":
        raise TypeError(f"renorm(): argument 'input' must be a floating point tensor, got "
                        f"{input.dtype}")
    if p <= 0:
        raise ValueError(f"renorm(): argument 'p' must be positive, got {p}")
    if maxnorm < 0:
        raise ValueError(f"renorm(): argument 'maxnorm' must be non-negative, got {maxnorm}")
    nd = _nd(input)
    if nd == 0:
        raise ValueError("renorm(): argument 'input' must have at least 1 dimension")
    a = _dim("renorm()", dim, nd)
    f = api()
    others = [i for i in range(nd) if i != a]
    norm = f.linalg_vector_norm(input, p, others, True) if others else f.abs(input)
    big = _gt(norm, _scalar(maxnorm, norm))
    one = _scalar(1.0, norm)
    factor = _where(big, f.div(maxnorm, f.add(norm, 1e-7)), one)
    return f.mul(input, factor)


@functor("Vander")
def vander(x: Tensor, N: Any, increasing: bool) -> Tensor:
    """torch.vander: columns ``x ** (N - 1), ..., x ** 0`` (``increasing``: the other way);
    integer and bool inputs give int64, as PyTorch."""
    if _nd(x) != 1:
        raise ValueError(f"vander(): argument 'x' must be a 1-D tensor, got {_nd(x)}-D")
    n = _shape(x)[0] if N is None else N
    if n < 0:
        raise ValueError(f"vander(): argument 'N' must be non-negative, got {n}")
    f = api()
    if x._meta.dtype.kind in "iub":
        x = f.cast(x, _dt.int64)
    rows = _shape(x)[0]
    ones = _full(shape=(rows, 1), value=1, dtype=x._meta.dtype)
    reps = f.expand(f.unsqueeze(x, 1), (rows, max(n - 1, 0)))  # (keeps x on the tape)
    powers = f.cumprod(f.cat([ones, reps], 1), 1)
    if n == 0:
        return f.narrow(powers, 1, 0, 0)
    return powers if increasing else f.flip(powers, [1])


# -- torch.linalg: LU, triangular solves, eig, the *_ex variants, and PyTorch's older torch.*
# factorizations (svd, qr, cholesky_solve, triangular_solve, lu_unpack ...). New ops where a
# kernel is needed (linalg_lu_factor, lu_pivots_to_permutation, linalg_solve_triangular,
# linalg_matrix_exp, linalg_eig, linalg_pinv); the rest composes them.

_lu_factor = get("linalg_lu_factor").apply
_piv_to_perm = get("lu_pivots_to_permutation").apply
_trisolve = get("linalg_solve_triangular").apply
_expm = get("linalg_matrix_exp").apply
_eig = get("linalg_eig").apply
_pinv = get("linalg_pinv").apply
_tril, _triu, _one_hot = (get(n).apply for n in ("tril", "triu", "one_hot"))
_INT32 = np.dtype(np.int32)


def _lu_info(lu: Tensor) -> Tensor:
    """LAPACK getrf's info: the 1-based index of the first exactly-zero diagonal entry of U,
    0 when there is none (int32, one per matrix)."""
    f = api()
    if min(_shape(lu)[-2:]) == 0:
        return _full(shape=_shape(lu)[:-2], value=0, dtype=_INT32)
    d = _diag_part(lu, 0)
    zero = f.eq(d, 0)
    first = f.add(f.argmax(cast(zero, _INT32), -1, False), 1)
    return cast(f.where(f.any(zero, -1, False), first, 0), _INT32)


def _raise_info(fname: str, info: Tensor, what: str, *ts: Tensor) -> None:
    """check_errors: raise (eager calls) when some info is positive."""
    if _eager(info, *ts):
        bad = np.asarray(info._value)
        if (bad > 0).any():
            i = int(bad.reshape(-1)[np.argmax(bad.reshape(-1) > 0)])
            raise RuntimeError(f"{fname}: {what.format(i=i)}")


@functor("LinalgLuFactorEx")
def linalg_lu_factor_ex(A: Tensor, pivot: bool, check_errors: bool
                        ) -> tuple[Tensor, Tensor, Tensor]:
    """torch.linalg.lu_factor_ex: (LU, pivots, info) as LAPACK's getrf: info = i > 0 when
    U[i, i] (1-based) is exactly zero; ``check_errors`` raises then."""
    _matrix_input("linalg.lu_factor_ex", A)
    if not pivot:
        raise RuntimeError("linalg.lu_factor_ex: LU without pivoting is not implemented on the "
                           "CPU")
    lu, piv = _lu_factor(A)
    info = _lu_info(lu)
    if check_errors:
        _raise_info("linalg.lu_factor_ex", info, "The factorization could not be completed "
                    "because the input is not invertible (U[{i},{i}] is zero).", lu)
    return lu, piv, info


@functor("LinalgLuFactor")
def linalg_lu_factor(A: Tensor, pivot: bool) -> tuple[Tensor, Tensor]:
    """torch.linalg.lu_factor: (LU, pivots); an eager call raises when U has a zero on its
    diagonal (lu_solve would divide by it), as PyTorch."""
    lu, piv, info = linalg_lu_factor_ex(A, pivot, False)
    _raise_info("linalg.lu_factor", info, "U[{i},{i}] is zero and using it on lu_solve would "
                "result in a division by zero. If you still want to perform the factorization, "
                "consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)", lu)
    return lu, piv


def _perm_matrix(perm: Tensor, dtype: Any) -> Tensor:
    """P with A = P L U: P[j, i] = (j == perm[i])."""
    return _mT(_one_hot(perm, num_classes=_shape(perm)[-1], dtype=dtype))


@functor("LuUnpack")
def lu_unpack(LU: Tensor, pivots: Tensor, unpack_data: bool, unpack_pivots: bool
              ) -> tuple[Tensor, Tensor, Tensor]:
    """torch.lu_unpack: (P, L, U) of lu_factor's (LU, pivots); a part not unpacked is an
    empty tensor."""
    _matrix_input("lu_unpack", LU, "LU_data")
    if pivots._meta.dtype != _INT32:
        raise TypeError(f"lu_unpack: argument 'LU_pivots' must be an int32 tensor, got "
                        f"{pivots.dtype}")
    m, n = _shape(LU)[-2:]
    k = min(m, n)
    if _shape(pivots) != _shape(LU)[:-2] + (k,):
        raise ValueError(f"lu_unpack: LU_pivots of shape {_shape(pivots)} do not match LU_data "
                         f"of shape {_shape(LU)} (expected {_shape(LU)[:-2] + (k,)})")
    dt = LU._meta.dtype
    empty = _full(shape=(0,), value=0.0, dtype=dt)
    low = up = p = empty
    if unpack_data:
        nd = _nd(LU)
        # The unit diagonal and the strictly lower mask are host constants (device_put
        # compiles nothing), and a narrow to the full size is skipped: fewer programs compiled
        # per shape than tril + eye + add.
        lcols = LU if k == n else _narrow(LU, dim=nd - 1, start=0, length=k)
        low = api().where(_wrap(jax.device_put(np.tri(m, k, -1, dtype=bool))), lcols,
                          _wrap(jax.device_put(np.eye(m, k, dtype=dt))))
        up = _triu(LU if k == m else _narrow(LU, dim=nd - 2, start=0, length=k), diagonal=0)
    if unpack_pivots:
        p = _perm_matrix(_piv_to_perm(pivots, m=m), dt)
    return p, low, up


@functor("LinalgLu")
def linalg_lu(A: Tensor, pivot: bool) -> tuple[Tensor, Tensor, Tensor]:
    """torch.linalg.lu: A = P L U (L unit lower (m, k), U upper (k, n)); the gradient is
    PyTorch's linalg_lu_backward (square, wide and tall) through lu_factor's rule."""
    _matrix_input("linalg.lu", A)
    if not pivot:
        raise RuntimeError("linalg.lu: LU without pivoting is not implemented on the CPU")
    lu, piv = _lu_factor(A)
    return lu_unpack(lu, piv, True, True)


def _rows_by_perm(perm: Tensor, B: Tensor, inverse: bool) -> Tensor:
    """P^T B (rows gathered: row i is B[perm[i]]) or, ``inverse``, P B, as one-hot matmuls
    (linear in B, so the gradient is the other permutation)."""
    oh = _one_hot(perm, num_classes=_shape(perm)[-1], dtype=B._meta.dtype)   # P^T
    return _bmm(_mT(oh) if inverse else oh, B)


def _lu_solve(fname: str, LU: Tensor, pivots: Tensor, B: Tensor, left: bool, adjoint: bool
              ) -> Tensor:
    _matrix_input(fname, LU, "LU", square=True)
    _matrix_input(fname, B, "B")
    if LU._meta.dtype != B._meta.dtype:
        raise TypeError(f"{fname}: Expected LU and B to have the same dtype, but found LU of "
                        f"type {LU.dtype} and B of type {B.dtype} instead")
    if pivots._meta.dtype != _INT32:
        raise TypeError(f"{fname}: argument 'pivots' must be an int32 tensor, got "
                        f"{pivots.dtype}")
    n = _shape(LU)[-1]
    if not left:   # X A = B <=> A^T X^T = B^T (and X A^H = B <=> A X^T = B^T)
        return _mT(_lu_solve(fname, LU, pivots, _mT(B), True, not adjoint))
    if _shape(B)[-2] != n:
        raise ValueError(f"{fname}: Incompatible shapes of A and B for the equation AX = B "
                         f"({_shape(LU)} and {_shape(B)})")
    if _shape(pivots) != _shape(LU)[:-1]:
        raise ValueError(f"{fname}: pivots of shape {_shape(pivots)} do not match LU of shape "
                         f"{_shape(LU)}")
    lu, b = _broadcast_batch(fname, LU, B, 2, 2)
    piv = _expand(pivots, shape=_shape(lu)[:-1]) if _shape(pivots) != _shape(lu)[:-1] \
        else pivots
    perm = _piv_to_perm(piv, m=n)
    if not adjoint:     # U^{-1} L^{-1} P^T B
        y = _trisolve(lu, _rows_by_perm(perm, b, False), upper=False, left=True,
                      unitriangular=True)
        return _trisolve(lu, y, upper=True, left=True, unitriangular=False)
    lt = _mT(lu)        # P L^{-T} U^{-T} B
    y = _trisolve(lt, b, upper=False, left=True, unitriangular=False)
    y = _trisolve(lt, y, upper=True, left=True, unitriangular=True)
    return _rows_by_perm(perm, y, True)


@functor("LinalgLuSolve")
def linalg_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, left: bool, adjoint: bool
                    ) -> Tensor:
    """torch.linalg.lu_solve: X with A X = B (``adjoint``: A^H X = B; ``left=False``: X A = B)
    from lu_factor's (LU, pivots); triangular solves reading LU's triangles."""
    return _lu_solve("linalg.lu_solve", LU, pivots, B, left, adjoint)


@functor("LuSolve")
def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """torch.lu_solve(b, LU_data, LU_pivots) (deprecated there for linalg.lu_solve)."""
    return _lu_solve("lu_solve", LU_data, LU_pivots, b, True, False)


@functor("LinalgSolveTriangular")
def linalg_solve_triangular(A: Tensor, B: Tensor, upper: bool, left: bool,
                            unitriangular: bool) -> Tensor:
    """torch.linalg.solve_triangular: reads A's upper (lower) triangle only; batch dims
    broadcast."""
    fname = "linalg.solve_triangular"
    _matrix_input(fname, A, "A", square=True)
    _matrix_input(fname, B, "B")
    if A._meta.dtype != B._meta.dtype:
        raise TypeError(f"{fname}: Expected A and B to have the same dtype, but found A of "
                        f"type {A.dtype} and B of type {B.dtype} instead")
    n = _shape(A)[-1]
    if (_shape(B)[-2] if left else _shape(B)[-1]) != n:
        raise ValueError(f"{fname}: Incompatible shapes of A and B for the equation "
                         f"{'AX = B' if left else 'XA = B'} ({_shape(A)} and {_shape(B)})")
    a, b = _broadcast_batch(fname, A, B, 2, 2)
    return _trisolve(a, b, upper=upper, left=left, unitriangular=unitriangular)


@functor("TriangularSolve")
def triangular_solve(b: Tensor, A: Tensor, upper: bool, transpose: bool, unitriangular: bool
                     ) -> tuple[Tensor, Tensor]:
    """torch.triangular_solve: (X, a copy of A) with op(A) X = b, op = transpose or not."""
    a = _mT(A) if transpose else A
    x = linalg_solve_triangular(a, b, upper != transpose, True, unitriangular)
    return x, get("clone").apply(A)


@functor("LinalgMatrixExp")
def linalg_matrix_exp(A: Tensor) -> Tensor:
    """torch.linalg.matrix_exp (torch.matrix_exp): exp of each square matrix; 16-bit inputs
    are computed in float32 and rounded back."""
    if A._meta.dtype.name in ("float16", "bfloat16") and _nd(A) >= 2:
        return cast(linalg_matrix_exp(cast(A, np.dtype(np.float32))), A._meta.dtype)
    _matrix_input("linalg.matrix_exp", A, square=True)
    return _expm(A)


@functor("LinalgEig")
def linalg_eig(A: Tensor) -> tuple[Tensor, Tensor]:
    """torch.linalg.eig: complex eigenvalues and unit-norm eigenvectors (complex64 for
    float32, complex128 for float64); the gradient is PyTorch's linalg_eig_backward. CPU
    only (XLA's geev)."""
    _matrix_input("linalg.eig", A, square=True)
    return tuple(_eig(A))


@functor("LinalgEigvals")
def linalg_eigvals(A: Tensor) -> Tensor:
    """torch.linalg.eigvals: the eigenvalues of :func:`linalg_eig`."""
    _matrix_input("linalg.eigvals", A, square=True)
    return _eig(A)[0]


@functor("LinalgVecdot")
def linalg_vecdot(x: Tensor, y: Tensor, dim: int) -> Tensor:
    """torch.linalg.vecdot: sum(conj(x) * y) over ``dim``, broadcasting."""
    f = api()
    if x._meta.dtype != y._meta.dtype:
        raise TypeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x "
                        f"of type {x.dtype} and y of type {y.dtype} instead")
    if x._meta.dtype.kind == "c":
        x = f.conj(x)
    prod = _mul(x, y)
    return _rsum(prod, axis=(_dim("linalg.vecdot", dim, _nd(prod)),), keepdim=False)


def _chol_info(A: Tensor, upper: bool) -> Tensor:
    """LAPACK potrf's info: the order of the first leading minor of the symmetric matrix read
    from A's triangle that is not positive (Sylvester), 0 when all are; one batched slogdet
    over the n leading blocks (each completed by the identity)."""
    f = api()
    n = _shape(A)[-1]
    if n == 0:
        return _full(shape=_shape(A)[:-2], value=0, dtype=_INT32)
    # The masks and the identity are host constants (device_put compiles nothing; the same
    # index arithmetic as eager ops compiled ~8 programs per matrix size).
    ar = np.arange(n)
    lower = _wrap(jax.device_put(ar[:, None] >= ar[None, :]))
    t = _mT(A)
    sym = f.where(lower, t, A) if upper else f.where(lower, A, t)   # the triangle, mirrored
    k, i, j = ar[:, None, None], ar[None, :, None], ar[None, None, :]
    inside = _wrap(jax.device_put((i <= k) & (j <= k)))  # (n, n, n): block k is [:k+1, :k+1]
    eye = _wrap(jax.device_put(np.eye(n, dtype=A._meta.dtype)))
    blocks = f.where(inside, _reshape(sym, shape=_shape(sym)[:-2] + (1, n, n)), eye)
    sign, _ = _slogdet(blocks)
    bad = f.le(sign, 0)
    first = f.add(f.argmax(cast(bad, _INT32), -1, False), 1)
    return cast(f.where(f.any(bad, -1, False), first, 0), _INT32)


@functor("LinalgCholeskyEx")
def linalg_cholesky_ex(A: Tensor, upper: bool, check_errors: bool) -> tuple[Tensor, Tensor]:
    """torch.linalg.cholesky_ex: (L, info), info = the order of the first leading minor that
    is not positive-definite (0 on success); ``check_errors`` raises then."""
    _matrix_input("linalg.cholesky_ex", A, square=True)
    out = _cholesky(A, upper=upper)
    info = _chol_info(A, upper)
    if check_errors:
        _raise_info("linalg.cholesky_ex", info, "The factorization could not be completed "
                    "because the input is not positive-definite (the leading minor of order "
                    "{i} is not positive-definite).", A)
    return out, info


@functor("LinalgInvEx")
def linalg_inv_ex(A: Tensor, check_errors: bool) -> tuple[Tensor, Tensor]:
    """torch.linalg.inv_ex: (inverse, info) with getrf's info (U[i, i] exactly zero)."""
    _matrix_input("linalg.inv_ex", A, square=True)
    info = _lu_info(_lu_factor(A)[0])
    if check_errors:
        _raise_info("linalg.inv_ex", info, "The diagonal element {i} is zero, the inversion "
                    "could not be completed because the input matrix is singular.", A)
    return _inv(A), info


@functor("LinalgSolveEx")
def linalg_solve_ex(A: Tensor, B: Tensor, left: bool, check_errors: bool
                    ) -> tuple[Tensor, Tensor]:
    """torch.linalg.solve_ex: (result, info) with getrf's info; no raise unless
    ``check_errors``."""
    _matrix_input("linalg.solve_ex", A, square=True)
    info = _lu_info(_lu_factor(A)[0])
    if check_errors:
        _raise_info("linalg.solve_ex", info, "The solver failed because the input matrix is "
                    "singular.", A)
    vec = _nd(B) == 1 or (left and _nd(B) == _nd(A) - 1 and _shape(B) == _shape(A)[:-1])
    b = _reshape(B, shape=_shape(B) + (1,)) if vec else B
    a, bb = (A, b) if left else (_mT(A), _mT(b))
    a, bb = _broadcast_batch("linalg.solve_ex", a, bb, 2, 2)
    x = _solve(a, bb)
    x = x if left else _mT(x)
    return (_reshape(x, shape=_shape(x)[:-1]) if vec else x), info


@functor("LinalgCond")
def linalg_cond(A: Tensor, p: Any) -> Tensor:
    """torch.linalg.cond: s_max / s_min for p = None / 2 (s_min / s_max for -2), else
    norm(A, p) * norm(inv(A), p) (square matrices)."""
    _matrix_input("linalg.cond", A)
    if p is None or p in (2, -2):
        s = _svd(A, full_matrices=False)[1]
        last = (_nd(s) - 1,)
        hi, lo = _rmax(s, axis=last, keepdim=False), _rmin(s, axis=last, keepdim=False)
        return _div(lo, hi) if p == -2 else _div(hi, lo)
    _matrix_input("linalg.cond", A, square=True)
    inv = _inv(A)
    return _mul(_matrix_norm("linalg.cond", A, p, None, False, None),
                _matrix_norm("linalg.cond", inv, p, None, False, None))


@functor("LinalgHouseholderProduct")
def linalg_householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """torch.linalg.householder_product: the first n columns of H_1 ... H_k, H_i = I - tau_i
    v_i v_i^T with v_i = A[:, i] below the diagonal and 1 on it (LAPACK orgqr)."""
    fname = "linalg.householder_product"
    _matrix_input(fname, A, "input")
    _float_input(fname, tau, "tau")
    m, n = _shape(A)[-2:]
    k = _shape(tau)[-1] if _nd(tau) else 0
    if n > m:
        raise ValueError(f"{fname}: input.shape[-2] must be greater than or equal to "
                         f"input.shape[-1]")
    if k > n:
        raise ValueError(f"{fname}: input.shape[-1] must be greater than or equal to "
                         f"tau.shape[-1]")
    if _shape(tau)[:-1] != _shape(A)[:-2]:
        raise ValueError(f"{fname}: Expected batch dimensions of tau to be equal to "
                         f"input.shape[:-2], got {_shape(tau)[:-1]}")
    if tau._meta.dtype != A._meta.dtype:
        raise TypeError(f"{fname}: tau dtype {tau.dtype} does not match input dtype {A.dtype}")
    nd = _nd(A)
    dt = A._meta.dtype
    # host constants (device_put compiles nothing): the identity's first n columns, and the
    # strictly lower triangle that holds the reflectors
    eye = _wrap(jax.device_put(np.eye(m, n, dtype=dt)))
    v = api().where(_wrap(jax.device_put(np.tri(m, n, -1, dtype=bool))), A, eye)  # unit columns
    q = _expand(eye, shape=_shape(A))
    if k == 0:   # the identity's first n columns, on the tape with a zero gradient
        q = _add(q, _mul(A, _scalar(0.0, A)))
    if k:
        # The columns and taus as the pieces of one split each (a narrow per i would compile
        # one program per start); every iteration then reuses the same programs.
        vs = _split(v, dim=nd - 1, sizes=(1,) * n)                            # (..., m, 1)
        ts = _split(_reshape(tau, shape=_shape(tau)[:-1] + (1, k)), dim=_nd(tau), sizes=(1,) * k)
    for i in reversed(range(k)):     # Q = H_i Q, from the last reflector on
        vi, ti = vs[i], ts[i]                                     # (..., m, 1), (..., 1, 1)
        q = _sub(q, _mul(ti, _bmm(vi, _bmm(_mT(vi), q))))
    return q


@functor("LinalgTensorinv")
def linalg_tensorinv(A: Tensor, ind: int) -> Tensor:
    """torch.linalg.tensorinv: the inverse of A seen as a (prod(shape[:ind]),
    prod(shape[ind:])) matrix, shaped shape[ind:] + shape[:ind]."""
    if ind <= 0:
        raise ValueError(f"linalg.tensorinv: Expected a strictly positive integer for 'ind', "
                         f"but got {ind}")
    s = _shape(A)
    rows, cols = math.prod(s[:ind]), math.prod(s[ind:])
    if rows != cols:
        raise ValueError(f"linalg.tensorinv: Expected self to satisfy the requirement "
                         f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got {cols} != "
                         f"{rows}")
    inv = linalg_inv(_reshape(A, shape=(rows, cols)))
    return _reshape(inv, shape=s[ind:] + s[:ind])


@functor("LinalgTensorsolve")
def linalg_tensorsolve(A: Tensor, B: Tensor, dims: Any) -> Tensor:
    """torch.linalg.tensorsolve: X with tensordot(A, X, X.ndim) = B (``dims``: A's dims moved
    to the end first)."""
    if dims is not None:
        nd = _nd(A)
        ds = [_dim("linalg.tensorsolve", d, nd, "dims") for d in dims]
        rest = [i for i in range(nd) if i not in ds]
        A = _transpose(A, perm=tuple(rest + ds))
    sa, sb = _shape(A), _shape(B)
    rows = math.prod(sb)
    xs = sa[len(sb):]
    if math.prod(sa[:len(sb)]) != rows or math.prod(xs) != rows:
        raise ValueError(f"linalg.tensorsolve: Expected self to satisfy the requirement "
                         f"prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
                         f"but got A of shape {sa} and B of shape {sb}")
    x = linalg_solve(_reshape(A, shape=(rows, rows)), _reshape(B, shape=(rows,)), True)
    return _reshape(x, shape=xs)


@functor("LinalgVander")
def linalg_vander(x: Tensor, N: Any) -> Tensor:
    """torch.linalg.vander: (..., n) -> (..., n, N) with increasing powers x^0 ... x^(N-1)
    (integers as int64, as PyTorch's cumprod)."""
    f = api()
    if _nd(x) < 1:  # a 0-d x is one point, as PyTorch treats it
        x = _reshape(x, shape=(1,))
    n = _shape(x)[-1] if N is None else N
    if n <= 1:
        if n < 1:
            raise ValueError(f"linalg.vander: N must be greater than 1, got {n}")
    if x._meta.dtype.kind in "iub":
        x = cast(x, np.dtype(np.int64))
    s = _shape(x)
    ones = _full(shape=s + (1,), value=1, dtype=x._meta.dtype)
    reps = _expand(_reshape(x, shape=s + (1,)), shape=s + (n - 1,))
    return f.cumprod(f.cat([ones, reps], -1), -1)


@functor("Svd")
def svd(input: Tensor, some: bool, compute_uv: bool) -> tuple[Tensor, Tensor, Tensor]:
    """torch.svd (PyTorch's older API): (U, S, V) with V, not V^H; ``some`` = reduced;
    ``compute_uv=False`` gives zero-filled (m, m) U and (n, n) V."""
    _matrix_input("svd", input, "input")
    if not compute_uv:
        s = _svd(input, full_matrices=False)[1]
        m, n = _shape(input)[-2:]
        b = _shape(input)[:-2]
        dt = input._meta.dtype
        return (_full(shape=b + (m, m), value=0.0, dtype=dt), s,
                _full(shape=b + (n, n), value=0.0, dtype=dt))
    u, s, vh = _svd(input, full_matrices=not some)
    return u, s, _mT(vh)


@functor("Qr")
def qr(input: Tensor, some: bool) -> tuple[Tensor, Tensor]:
    """torch.qr: linalg.qr with mode 'reduced' (some) or 'complete'."""
    return linalg_qr(input, "reduced" if some else "complete")


_GEQRF_DTYPES = _LINALG_DTYPES + (np.dtype(np.complex64), np.dtype(np.complex128))


@functor("Geqrf")
def geqrf(input: Tensor) -> tuple[Tensor, Tensor]:
    """torch.geqrf: LAPACK's compact QR, (a, tau): R on and above the diagonal of ``a``, the
    Householder vectors below it (``linalg.householder_product(a, tau)`` is Q). Real or
    complex; no derivative (a backward through it raises, as PyTorch's)."""
    if input._meta.dtype not in _GEQRF_DTYPES:
        name = _TORCH_NAMES.get(input._meta.dtype.name, input._meta.dtype.name)
        raise TypeError(f"geqrf: Expected a float32, float64, complex64 or complex128 tensor "
                        f"as argument 'input'. Got {name}")
    check_matrix_shape("geqrf", "input", _shape(input), False)
    return tuple(_geqrf(input))


def _chol_factor(L: Tensor, upper: bool) -> Tensor:
    """L's triangle for the value, with PyTorch's gradient: PyTorch differentiates
    cholesky_solve / cholesky_inverse as functions of the whole L (its formulas use L as given),
    so the triangle is taken straight-through (identity Jacobian onto every entry)."""
    tri = _triu(L, diagonal=0) if upper else _tril(L, diagonal=0)
    return _add(tri.detach(), _sub(L, L.detach()))


def _chol_gram(L: Tensor, upper: bool) -> Tensor:
    """A = L L^T (``upper``: U^T U)."""
    return _bmm(_mT(L), L) if upper else _bmm(L, _mT(L))


def _chol_solve(fname: str, B: Tensor, L: Tensor, upper: bool) -> Tensor:
    _matrix_input(fname, L, "input2", square=True)
    _matrix_input(fname, B, "input")
    if L._meta.dtype != B._meta.dtype:
        raise TypeError(f"{fname}: Expected b and A to have the same dtype, but found b of "
                        f"type {B.dtype} and A of type {L.dtype} instead")
    if _shape(B)[-2] != _shape(L)[-1]:
        raise ValueError(f"{fname}: Incompatible matrix sizes for cholesky_solve: each A matrix "
                         f"is {_shape(L)[-1]} by {_shape(L)[-1]} but each b matrix is "
                         f"{_shape(B)[-2]} by {_shape(B)[-1]}")
    lo, b = _broadcast_batch(fname, L, B, 2, 2)
    return _solve(_chol_gram(_chol_factor(lo, upper), upper), b)


@functor("CholeskySolve")
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool) -> Tensor:
    """torch.cholesky_solve(B, L, upper=False): X with (L L^T) X = B (``upper``: U^T U); the
    value reads L's triangle only, the gradient is PyTorch's (every entry of L)."""
    return _chol_solve("cholesky_solve", input, input2, upper)


@functor("CholeskyInverse")
def cholesky_inverse(input: Tensor, upper: bool) -> Tensor:
    """torch.cholesky_inverse(L, upper=False): (L L^T)^{-1} (``upper``: (U^T U)^{-1}); the value
    reads L's triangle only, the gradient is PyTorch's (every entry of L)."""
    _matrix_input("cholesky_inverse", input, "input", square=True)
    return _inv(_chol_gram(_chol_factor(input, upper), upper))


@functor("Cholesky")
def cholesky(input: Tensor, upper: bool) -> Tensor:
    """torch.cholesky (deprecated there for linalg.cholesky)."""
    return linalg_cholesky(input, upper)


# -- LDL (Bunch-Kaufman, LAPACK sytrf / sytrs; not differentiable, as in PyTorch) -------------

_ldl_factor = get("linalg_ldl_factor").apply
_ldl_solve = get("linalg_ldl_solve").apply


@functor("LinalgLdlFactorEx")
def linalg_ldl_factor_ex(A: Tensor, hermitian: bool, check_errors: bool
                         ) -> tuple[Tensor, Tensor, Tensor]:
    """torch.linalg.ldl_factor_ex: (LD, pivots, info) of the symmetric matrix read from A's
    lower triangle, in LAPACK sytrf's format; info = i > 0 when D[i, i] is exactly zero."""
    _matrix_input("linalg.ldl_factor_ex", A, square=True)
    ld, piv, info = _ldl_factor(A, hermitian=hermitian)
    if check_errors:
        _raise_info("linalg.ldl_factor_ex", info, "The factorization could not be completed: "
                    "D[{i},{i}] is exactly zero (the matrix is singular).", A)
    return ld, piv, info


@functor("LinalgLdlFactor")
def linalg_ldl_factor(A: Tensor, hermitian: bool) -> tuple[Tensor, Tensor]:
    """torch.linalg.ldl_factor: (LD, pivots); an eager call raises when D is singular."""
    ld, piv, _ = linalg_ldl_factor_ex(A, hermitian, True)
    return ld, piv


@functor("LinalgLdlSolve")
def linalg_ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, hermitian: bool) -> Tensor:
    """torch.linalg.ldl_solve: X with A X = B from ldl_factor's (LD, pivots); batch dims of B
    broadcast with LD's."""
    fname = "linalg.ldl_solve"
    _matrix_input(fname, LD, "LD", square=True)
    _matrix_input(fname, B, "B")
    if _shape(B)[-2] != _shape(LD)[-1]:
        raise ValueError(f"{fname}: Incompatible shapes of LD and B ({_shape(LD)} and "
                         f"{_shape(B)})")
    ld, b = _broadcast_batch(fname, LD, B, 2, 2)
    piv = _expand(pivots, shape=_shape(ld)[:-1]) if _shape(pivots) != _shape(ld)[:-1] \
        else pivots
    return _ldl_solve(ld, piv, b, hermitian=hermitian)
