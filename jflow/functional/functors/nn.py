"""Functors of the nn ops: softmax and log_softmax, linear (for autocast), embedding, dropout.

``dim=None`` means the last axis here (OneFlow's default). ``flow.nn.functional.softmax`` /
``log_softmax`` / ``softmin`` (and ``nn.Softmax(dim=None)``) apply PyTorch's guess first (dim 0
for 0-, 1- and 3-d inputs, else 1, with its deprecation warning), as PyTorch.

Like PyTorch, integer and bool inputs are refused unless ``dtype=`` names a floating dtype,
which casts the input before the op (PyTorch's way to get a float32 softmax of float16 data).
"""

from __future__ import annotations

import warnings
from typing import Any

from ..._dims import wrap_dim
from ...amp.autocast_mode import state as _autocast
from ...autograd.grad_mode import no_grad
from ...ops import get
from ...random import default_generator
from ...tensor import Tensor
from ..promotion import assign_inplace, cast, scalar_tensor
from ..registry import api as _api
from ..registry import functor
from .index import IndexOutOfRangeError, _int_index, checked_min_max, host_min_max
from .matmul import autocast_args

_softmax = get("softmax").apply
_log_softmax = get("log_softmax").apply


def _prepare(fname: str, input: Tensor, dim: Any, dtype: Any) -> tuple[Tensor, int]:
    if dtype is not None:
        if not dtype.is_floating_point:
            raise TypeError(f"{fname}(): dtype must be a floating dtype, got {dtype}")
        input = cast(input, dtype.np)
    elif not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}; pass "
                        f"dtype=flow.float32 to compute it in floating point")
    return input, wrap_dim(fname, -1 if dim is None else dim, input._meta.ndim)


@functor("Softmax")
def softmax(input: Tensor, dim: Any, dtype: Any) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (default: the last axis), numerically stable."""
    x, d = _prepare("softmax", input, dim, dtype)
    return _softmax(x, dim=d)


@functor("LogSoftmax")
def log_softmax(input: Tensor, dim: Any, dtype: Any) -> Tensor:
    """x - logsumexp(x) along ``dim`` (default: the last axis), numerically stable."""
    x, d = _prepare("log_softmax", input, dim, dtype)
    return _log_softmax(x, dim=d)


# -- linear ---------------------------------------------------------------------------------------

_linear = get("linear").apply


@functor("Linear")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """torch.nn.functional.linear: ``input @ weight.T + bias`` as one op. A functor only for
    autocast: the eligible floating operands are cast to its dtype first, as for the matrix
    products (the check is one thread-local read when autocast is off)."""
    if _autocast.dtype is not None:
        input, weight, bias = autocast_args(_autocast.dtype, input, weight, bias)
    return _linear(input, weight, bias)


# -- embedding, dropout --------------------------------------------------------------------------

_embedding = get("embedding").apply
_dropout = get("dropout").apply


def _renorm_rows(fname: str, weight: Tensor, flat: Tensor, max_norm: float,
                 norm_type: float) -> None:
    """PyTorch's max_norm: the rows of ``weight`` indexed by ``flat`` whose ``norm_type``-norm
    exceeds ``max_norm`` are scaled in place (under no_grad) by max_norm / (norm + 1e-7)."""
    if weight._meta.ndim != 2 or flat._meta.size == 0:
        return
    F = _api()
    with no_grad():
        rows = F.index_select(weight, 0, flat)
        norms = F.linalg_vector_norm(rows, float(norm_type), [1], True)
        scale = F.where(norms > float(max_norm), float(max_norm) / (norms + 1e-7),
                        scalar_tensor(1.0, norms._meta.dtype))
        new = F.index_copy(weight, 0, flat, rows * scale)
        assign_inplace(weight, new, fname)


def _check_indices(fname: str, input: Tensor, weight: Tensor, padding_idx: Any) -> Any:
    """Integer indices within num_embeddings (eager calls); padding_idx made non-negative."""
    _int_index(fname, input, "input")
    n = int(weight._meta.shape[0]) if weight._meta.ndim == 2 else 0
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise ValueError(f"{fname}(): padding_idx {padding_idx} must be within "
                             f"num_embeddings ({n})")
        padding_idx %= n
    def check(lo: int, hi: int) -> None:
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise IndexOutOfRangeError(f"{fname}(): index {bad} is out of bounds for "
                                       f"num_embeddings {n}")
    if weight._meta.ndim == 2:
        checked_min_max(input, check)
    return padding_idx


@functor("Embedding", checks=True)
def embedding(input: Tensor, weight: Tensor, padding_idx: Any, max_norm: Any, norm_type: float,
              scale_grad_by_freq: bool, sparse: bool) -> Tensor:
    """weight[input]; the ``padding_idx`` row gets no gradient. ``max_norm``: the looked-up
    rows are first renormalised in place (``norm_type``-norm at most max_norm, under no_grad),
    as PyTorch. ``scale_grad_by_freq`` and ``sparse`` are not supported (an error if set)."""
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding(): scale_grad_by_freq and sparse are not "
                                  "supported by jflow")
    padding_idx = _check_indices("embedding", input, weight, padding_idx)
    if max_norm is not None:
        _renorm_rows("embedding", weight, _api().reshape(input, (-1,)), max_norm, norm_type)
    return _embedding(weight, input, padding_idx=padding_idx)


_BAG_MODES = ("sum", "mean", "max")


@functor("EmbeddingBag", checks=True)
def embedding_bag(input: Tensor, weight: Tensor, offsets: Any, max_norm: Any, norm_type: float,
                  scale_grad_by_freq: bool, mode: str, sparse: bool, per_sample_weights: Any,
                  include_last_offset: bool, padding_idx: Any) -> Tensor:
    """torch.nn.functional.embedding_bag: the rows of ``weight`` looked up by ``input``,
    reduced per bag (``mode`` sum / mean / max) without materialising the lookups per bag.
    Bags: the rows of a 2-d input, or the slices of a 1-d input starting at ``offsets``
    (``include_last_offset``: offsets also holds the end of the last bag).
    ``per_sample_weights`` (input-shaped, mode "sum" only) scale each looked-up row; indices
    equal to ``padding_idx`` are left out of their bag (not counted by "mean"); an empty bag
    gives zeros. ``max_norm`` renormalises the looked-up rows in place first."""
    fname = "embedding_bag"
    F = _api()
    if scale_grad_by_freq or sparse:
        raise NotImplementedError(f"{fname}(): scale_grad_by_freq and sparse are not supported "
                                  f"by jflow")
    if mode not in _BAG_MODES:
        raise ValueError(f"{fname}(): mode has to be one of {list(_BAG_MODES)}, got {mode!r}")
    if not weight.is_floating_point() or weight._meta.ndim != 2:
        raise ValueError(f"{fname}(): weight must be a 2-d floating point tensor "
                         f"(num_embeddings, embedding_dim), got {weight.dtype} of shape "
                         f"{list(weight._meta.shape)}")
    padding_idx = _check_indices(fname, input, weight, padding_idx)
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"{fname}(): per_sample_weights is only supported for "
                                      f"mode='sum' (got mode={mode!r})")
        if tuple(per_sample_weights._meta.shape) != tuple(input._meta.shape):
            raise ValueError(f"{fname}(): per_sample_weights must have the shape of input "
                             f"{list(input._meta.shape)}, got "
                             f"{list(per_sample_weights._meta.shape)}")
        per_sample_weights = per_sample_weights.to(weight.dtype)
    nd = input._meta.ndim
    if nd == 2:
        if offsets is not None:
            raise ValueError(f"{fname}(): offsets has to be None when input is 2-d (one bag "
                             f"per row)")
    elif nd == 1:
        if offsets is None or offsets._meta.ndim != 1:
            raise ValueError(f"{fname}(): offsets has to be a 1-d tensor when input is 1-d, "
                             f"got {None if offsets is None else list(offsets._meta.shape)}")
        _int_index(fname, offsets, "offsets")
        if include_last_offset and offsets._meta.shape[0] < 1:
            raise ValueError(f"{fname}(): include_last_offset needs at least one offset")
        mm = host_min_max(offsets)
        if mm is not None and int(offsets[0]) != 0:
            raise ValueError(f"{fname}(): offsets[0] has to be 0, i.e., the first sequence in "
                             f"the mini-batch has to start from position 0, got "
                             f"{int(offsets[0])}")
    else:
        raise ValueError(f"{fname}(): input has to be 1-d or 2-d, got shape "
                         f"{list(input._meta.shape)}")
    flat = F.reshape(input, (-1,))
    if max_norm is not None:
        _renorm_rows(fname, weight, flat, max_norm, norm_type)
    emb = _embedding(weight, flat, padding_idx=padding_idx)              # (n, D)
    dt = weight.dtype
    n_idx, d = int(flat._meta.shape[0]), int(weight._meta.shape[1])
    valid = (F.full((n_idx,), 1.0, dtype=dt) if padding_idx is None
             else (flat != padding_idx).to(dt))
    if nd == 2:
        b, length = (int(s) for s in input._meta.shape)
        pos = F.arange(n_idx, dtype=flat.dtype)
        member = (F.unsqueeze(pos // max(length, 1), 0)
                  == F.unsqueeze(F.arange(b, dtype=flat.dtype), 1))
    else:
        n_off = int(offsets._meta.shape[0])
        offs = offsets.to(flat.dtype)
        if include_last_offset:
            starts, ends = F.narrow(offs, 0, 0, n_off - 1), F.narrow(offs, 0, 1, n_off - 1)
        else:
            starts = offs
            ends = F.cat([F.narrow(offs, 0, 1, n_off - 1),
                          F.full((1,), n_idx, dtype=flat.dtype)])
        pos = F.unsqueeze(F.arange(n_idx, dtype=flat.dtype), 0)
        member = (pos >= F.unsqueeze(starts, 1)) & (pos < F.unsqueeze(ends, 1))
    m = member.to(dt) * F.unsqueeze(valid, 0)                            # (B, n)
    count = m.sum(1, keepdim=True)
    if mode == "max":
        big = F.where(F.unsqueeze(m, 2) > 0, F.unsqueeze(emb, 0),
                      F.full((1, 1, 1), float("-inf"), dtype=dt))
        out = big.amax(1) if n_idx else F.full((int(m.shape[0]), d), 0.0, dtype=dt)
        return F.where(count > 0, out, scalar_tensor(0.0, out._meta.dtype))
    if per_sample_weights is not None:
        m = m * F.unsqueeze(F.reshape(per_sample_weights, (-1,)), 0)
    out = F.matmul(m, emb)
    if mode == "mean":
        out = out / F.clamp(count, min=1.0)
    return out


@functor("Dropout")
def dropout(input: Tensor, p: float, training: bool, inplace: bool, generator: Any) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p) when
    ``training``; the identity otherwise. Draws from ``generator`` (default: the global one)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if not input.is_floating_point():
        raise TypeError(f"dropout(): expected a floating point input, got {input.dtype}")
    key, counter = (generator or default_generator)._next()
    y, _ = _dropout(input, key, counter, p=float(p))
    return assign_inplace(input, y, "dropout") if inplace else y


# -- channel dropout, alpha dropout ------------------------------------------------------------

def _check_p(fname: str, p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{fname}(): dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input: Tensor, shape: tuple[int, ...], p: float) -> tuple[Tensor, Tensor]:
    """(keep / (1 - p), keep) of ``shape`` in the input's dtype: one Bernoulli(1 - p) draw per
    element from the default generator (the dropout op on ones)."""
    key, counter = default_generator._next()
    scaled, keep = _dropout(_api().full(shape, 1.0, dtype=input.dtype), key, counter,
                            p=float(p))
    return scaled, keep.to(input.dtype)


def _feature_dropout(fname: str, nd: int, input: Tensor, p: float, training: bool,
                     inplace: bool) -> Tensor:
    _check_p(fname, p)
    dim = input._meta.ndim
    if dim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{fname}(): Expected {nd + 1}D (unbatched) or {nd + 2}D input, but "
                           f"received a {dim}D input (channel-wise dropout over {nd} spatial "
                           f"dim{'s' if nd > 1 else ''}, a channel dim and an optional batch dim)")
    if not training or p == 0.0:
        return input
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    shape = tuple(input._meta.shape)
    mshape = shape[:dim - nd] + (1,) * nd
    if nd == 2 and dim == 3:        # PyTorch's legacy reading of a 3-d input
        warnings.warn("dropout2d: received a 3D input; as PyTorch, it is treated as (N, C, L) "
                      "and channel-wise 1D dropout is applied", stacklevel=3)
        mshape = shape[:2] + (1,)
    scale, _ = _keep_mask(input, mshape, p)
    y = input * scale
    return assign_inplace(input, y, fname) if inplace else y


@functor("Dropout1d")
def dropout1d(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) with probability ``p`` (one draw per sample
    and channel), scaling the rest by 1 / (1 - p), when ``training``."""
    return _feature_dropout("dropout1d", 1, input, p, training, inplace)


@functor("Dropout2d")
def dropout2d(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """Zero whole channels of (N, C, H, W) with probability ``p``, scaling the rest by
    1 / (1 - p), when ``training``. A 3-d input is read as (N, C, L) with a warning (PyTorch's
    legacy behaviour), not as (C, H, W)."""
    return _feature_dropout("dropout2d", 2, input, p, training, inplace)


@functor("Dropout3d")
def dropout3d(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability ``p``, scaling
    the rest by 1 / (1 - p), when ``training``."""
    return _feature_dropout("dropout3d", 3, input, p, training, inplace)


# SELU's saturation value -scale * alpha (Klambauer et al. 2017): dropped units take it.
_SELU_SAT = -1.0507009873554805 * 1.6732632423543772


def _alpha_dropout(fname: str, input: Tensor, p: float, training: bool, inplace: bool,
                   feature: bool) -> Tensor:
    _check_p(fname, p)
    if not training or p == 0.0:
        return input
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    shape = tuple(input._meta.shape)
    if feature:
        if len(shape) < 2:
            raise RuntimeError(f"{fname}(): expected an input of at least 2 dims (N, C, *), "
                               f"got shape {list(shape)}")
        mshape = shape[:2] + (1,) * (len(shape) - 2)
    else:
        mshape = shape
    if p == 1.0:
        y = input * 0.0
    else:
        _, keep = _keep_mask(input, mshape, p)
        # dropped units take the saturation value s; a (x keep + s (1 - keep)) + b keeps zero
        # mean and unit variance for standardised inputs
        a = ((1.0 - p) * (1.0 + p * _SELU_SAT ** 2)) ** -0.5
        b = -a * _SELU_SAT * p
        y = (input * keep + (1.0 - keep) * _SELU_SAT) * a + b
    return assign_inplace(input, y, fname) if inplace else y


@functor("AlphaDropout")
def alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """Alpha dropout (self-normalising networks) when ``training``: each element is set with
    probability ``p`` to SELU's saturation value, then an affine map restores zero mean and
    unit variance."""
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, False)


@functor("FeatureAlphaDropout")
def feature_alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """Alpha dropout of whole channels of (N, C, *) (one draw per sample and channel) when
    ``training``."""
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, True)


# -- bilinear ----------------------------------------------------------------------------------

@functor("Bilinear")
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Any) -> Tensor:
    """torch.nn.functional.bilinear: ``y[..., o] = sum_ij input1[..., i] weight[o, i, j]
    input2[..., j] + bias[o]`` (one einsum)."""
    fname = "bilinear"
    s1, s2, sw = (tuple(t._meta.shape) for t in (input1, input2, weight))
    if len(sw) != 3:
        raise ValueError(f"{fname}(): weight must be 3-d (out_features, in1_features, "
                         f"in2_features), got shape {list(sw)}")
    if len(s1) < 1 or len(s2) < 1 or s1[:-1] != s2[:-1]:
        raise ValueError(f"{fname}(): input1 and input2 must have the same leading dims, got "
                         f"shapes {list(s1)} and {list(s2)}")
    if s1[-1] != sw[1] or s2[-1] != sw[2]:
        raise ValueError(f"{fname}(): input1's last dim ({s1[-1]}) and input2's ({s2[-1]}) must "
                         f"match weight's dims 1 and 2, got weight shape {list(sw)}")
    if bias is not None and tuple(bias._meta.shape) != (sw[0],):
        raise ValueError(f"{fname}(): bias must have shape ({sw[0]},), got "
                         f"{list(bias._meta.shape)}")
    y = _api().einsum("...i,oij,...j->...o", [input1, weight, input2])
    return y if bias is None else y + bias
