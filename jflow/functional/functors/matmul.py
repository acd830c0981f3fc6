"""Functors of the matrix products: ``matmul`` (torch.matmul's cases), ``mm``, ``bmm``, ``dot``,
``mv``, ``outer``. (``a @ b`` is ``flow._C.matmul``, attached in jflow/tensor_methods/operators.py.)

``torch.matmul`` dispatches on the operands' ranks; each case is one op (see
:mod:`jflow.ops.matmul`), so no reshape is ever needed:

* 1-D @ 1-D -> ``dot`` (0-d); N-d @ 1-D -> ``matrix_vector_product``;
  1-D @ N-d -> ``vector_matrix_product``; 2-D @ 2-D -> ``matmul``;
  otherwise -> ``batch_matmul`` (batch dims broadcast).

Like PyTorch, matrix products do not promote: both operands must have the same dtype
(``outer`` is the exception, it promotes as PyTorch's does). ``transpose_a`` / ``transpose_b``
/ ``alpha`` are OneFlow's keyword extensions of ``matmul``.
"""

from __future__ import annotations

from typing import Any

from ...amp.autocast_mode import ELIGIBLE as _AUTOCAST_ELIGIBLE
from ...amp.autocast_mode import state as _autocast
from ...ops import get
from ...tensor import Tensor
from ..promotion import cast, promote, scalar_tensor
from ..registry import functor

_matmul = get("matmul").apply
_batch_matmul = get("batch_matmul").apply
_mv = get("matrix_vector_product").apply
_vm = get("vector_matrix_product").apply
_dot = get("dot").apply
_outer = get("outer").apply
_mul = get("mul").apply


def autocast_args(dtype: Any, *tensors: Any) -> tuple[Any, ...]:
    """Autocast's cast of an op's inputs: each tensor of an eligible floating dtype (float32,
    float16, bfloat16; not float64, as PyTorch) as ``dtype``; ``None`` and others unchanged."""
    return tuple(cast(t, dtype) if isinstance(t, Tensor) and t._meta.dtype in _AUTOCAST_ELIGIBLE
                 else t for t in tensors)


def _same_dtype(fname: str, a: Tensor, b: Tensor) -> None:
    if a._meta.dtype != b._meta.dtype:
        raise TypeError(f"{fname}(): expected both operands to have the same dtype, got "
                        f"{a.dtype} and {b.dtype} (matrix products do not promote; cast one)")


def _require_ndim(fname: str, arg: str, t: Tensor, ndim: int) -> None:
    if t._meta.ndim != ndim:
        raise ValueError(f"{fname}(): argument '{arg}' must be a {ndim}-D tensor, got a "
                         f"{t._meta.ndim}-D tensor of shape {tuple(t.shape)}")


@functor("MatMul")
def matmul(input: Tensor, other: Tensor, transpose_a: bool, transpose_b: bool,
           alpha: float) -> Tensor:
    """torch.matmul: the product of two tensors, by the operands' ranks (module docstring)."""
    if _autocast.dtype is not None:
        input, other = autocast_args(_autocast.dtype, input, other)
    aa, ab = input._meta.aval, other._meta.aval  # (an aval's fields: cheaper than the
    na, nb = aa.ndim, ab.ndim                      # array's properties on the hot path)
    if na == 2 and nb == 2 and aa.dtype == ab.dtype and alpha == 1.0:  # the hot path
        if not (transpose_a or transpose_b):  # the op's defaults: its cheapest call
            return _matmul(input, other)
        return _matmul(input, other, transpose_a=transpose_a, transpose_b=transpose_b,
                       alpha=alpha)
    _same_dtype("matmul", input, other)
    if na == 0 or nb == 0:
        raise ValueError(f"matmul(): both arguments need to be at least 1-D, but they are "
                         f"{na}-D and {nb}-D")
    if alpha != 1.0 and input._meta.dtype.kind in "iub":
        raise TypeError(f"matmul(): alpha must be 1 for {input.dtype} operands, got {alpha}")
    if na >= 2 and nb >= 2:
        op = _matmul if na == 2 and nb == 2 else _batch_matmul
        return op(input, other, transpose_a=transpose_a, transpose_b=transpose_b, alpha=alpha)
    if (na == 1 and transpose_a) or (nb == 1 and transpose_b):
        raise ValueError("matmul(): transpose_a / transpose_b apply to matrices and cannot be "
                         "set for a 1-D operand")
    if na == 1 and nb == 1:
        out = _dot(input, other)
    elif nb == 1:
        out = _mv(input, other, transpose_a=transpose_a)
    else:
        out = _vm(input, other, transpose_b=transpose_b)
    if alpha != 1.0:
        out = _mul(out, scalar_tensor(alpha, out._meta.dtype))
    return out


@functor("Mm")
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """torch.mm: the product of two 2-D matrices (no broadcasting)."""
    if _autocast.dtype is not None:
        input, mat2 = autocast_args(_autocast.dtype, input, mat2)
    _require_ndim("mm", "input", input, 2)
    _require_ndim("mm", "mat2", mat2, 2)
    _same_dtype("mm", input, mat2)
    return _matmul(input, mat2)


@functor("Bmm")
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """torch.bmm: batched product of (b, n, m) and (b, m, p) tensors (no broadcasting)."""
    if _autocast.dtype is not None:
        input, mat2 = autocast_args(_autocast.dtype, input, mat2)
    _require_ndim("bmm", "input", input, 3)
    _require_ndim("bmm", "mat2", mat2, 3)
    _same_dtype("bmm", input, mat2)
    b1, b2 = input._meta.shape[0], mat2._meta.shape[0]
    if b1 != b2:
        raise ValueError(f"bmm(): batch sizes must match, got {b1} (input {tuple(input.shape)}) "
                         f"and {b2} (mat2 {tuple(mat2.shape)})")
    return _batch_matmul(input, mat2)


@functor("Dot")
def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """torch.dot: the inner product of two 1-D tensors with the same number of elements."""
    _require_ndim("dot", "input", input, 1)
    _require_ndim("dot", "tensor", tensor, 1)
    _same_dtype("dot", input, tensor)
    return _dot(input, tensor)


@functor("Mv")
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """torch.mv: a 2-D matrix times a 1-D vector."""
    if _autocast.dtype is not None:
        input, vec = autocast_args(_autocast.dtype, input, vec)
    _require_ndim("mv", "input", input, 2)
    _require_ndim("mv", "vec", vec, 1)
    _same_dtype("mv", input, vec)
    return _mv(input, vec)


@functor("Outer")
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """torch.outer: out[i, j] = input[i] * vec2[j]; dtypes promote as in multiplication."""
    _require_ndim("outer", "input", input, 1)
    _require_ndim("outer", "vec2", vec2, 1)
    return _outer(*promote(input, vec2))


_grouped_mm = get("grouped_mm").apply
_GROUPED_DTYPES = ("float32", "bfloat16", "float16")


@functor("GroupedMm")
def grouped_mm(mat_a: Tensor, mat_b: Tensor, offs: Any, bias: Any, out_dtype: Any) -> Tensor:
    """torch.nn.functional.grouped_mm: one matrix product per group, the groups given by the
    int32 cumulative ends ``offs`` of the ragged dimension of a 2-D operand. ``(S, K) x
    (G, K, N) -> (S, N)`` (rows of group g times ``mat_b[g]``: an MoE layer's experts),
    ``(G, M, K) x (K, S) -> (M, S)`` (columns in groups), ``(M, S) x (S, N) -> (G, M, N)``
    (the shared S axis in groups: weight gradients), ``(G, M, K) x (G, K, N) -> (G, M, N)``
    (``offs=None``). Rows / columns past ``offs[-1]`` are zeros (PyTorch leaves them
    unwritten); ends past the ragged size are clipped, decreasing ends give empty groups.
    As PyTorch's: float32 / bfloat16 / float16 operands of one dtype, ``out_dtype`` only that
    dtype, ``bias`` refused ("not supported yet")."""
    for arg, t in (("mat_a", mat_a), ("mat_b", mat_b)):
        if t._meta.dtype.name not in _GROUPED_DTYPES:
            raise TypeError(f"grouped_mm(): expected {arg} to be a float32, bfloat16 or "
                            f"float16 matrix, got {t.dtype}")
    _same_dtype("grouped_mm", mat_a, mat_b)
    if offs is not None and offs._meta.dtype.name != "int32":
        raise TypeError(f"grouped_mm(): offs must be an int32 tensor (cumulative group ends), "
                        f"got {offs.dtype}")
    if bias is not None:
        raise NotImplementedError("grouped_mm(): bias is not supported (PyTorch 2.13 raises "
                                  "'Bias not supported yet' too); add it to the result")
    if out_dtype is not None and out_dtype != mat_a.dtype:
        raise TypeError(f"grouped_mm(): out_dtype must be mat_a's dtype {mat_a.dtype} "
                        f"(PyTorch computes grouped products in the operands' dtype), got "
                        f"{out_dtype}")
    return _grouped_mm(mat_a, mat_b, offs)
