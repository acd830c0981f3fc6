"""Tensor creation: ``flow.tensor``, ``from_numpy``, and the PyTorch-style factories.

Factories accept sizes as varargs or one sequence (``zeros(2, 3)`` / ``zeros((2, 3))``) and
call the ``flow._C`` factory functions; defaults are float32 / int64 as in PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from jax.core import Tracer

from jflow.functional import api_default  # absolute: ruff resolves it for B008

from . import dtypes as _dt
from .device import DEFAULT_IS_META as _DEFAULT_IS_META
from .functional import F
from .host_transfer import to_device
from .lazy_values import LazyRef, LazyTensor
from .memory_format import check_layout, check_memory_format
from .tensor import HOST_DATA, Tensor, _sizes, _tensor_value, _wrap
from .value_bounds import note_host as _note_bounds
from .views import as_strided

__all__ = ["tensor", "from_numpy", "as_tensor", "zeros", "ones", "full", "empty", "arange",
           "linspace", "eye", "rand", "randn", "randint", "zeros_like", "ones_like",
           "full_like", "empty_like", "rand_like", "randn_like", "randint_like", "randperm",
           "bernoulli", "multinomial", "normal", "empty_strided", "logspace", "frombuffer"]


def tensor(data: Any, dtype: Any = None, device: Any = None,
           requires_grad: bool = False, placement: Any = None, sbp: Any = None) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, scalars, NumPy or JAX arrays,
    tensors). Python floats become float32, ints int64, bools bool; arrays keep their dtype.
    With ``placement=`` and ``sbp=`` the data is the logical value of a global tensor."""
    if (data.__class__ is np.ndarray and dtype is None and device is None and placement is None
            and sbp is None and HOST_DATA[0] is None and not _DEFAULT_IS_META[0]
            and data.dtype in _dt.BY_NUMPY_DTYPE):
        # (a training loop's batch: _tensor_value's path for an array of a jflow dtype to the
        # default device, outside lazy mode, without its branches: ~1.7 us of ~9)
        value = to_device(data)  # (a private copy: jflow.host_transfer)
        if data.dtype.kind in "iu":
            _note_bounds(value, data)
        t = _wrap(value)
        if requires_grad:
            if not t.is_floating_point():
                raise RuntimeError("flow.tensor: only floating point tensors can require "
                                   "gradients")
            t.requires_grad_()
        return t
    d = None if dtype is None else _dt.as_dtype(dtype)
    t = _wrap(_tensor_value(data, d, device, "flow.tensor", pending=True))
    if t._meta.__class__ is LazyRef:  # (lazy mode: the data moves with the pending run)
        t.__class__ = LazyTensor
    if requires_grad and not t.is_floating_point():
        raise RuntimeError("flow.tensor: only floating point tensors can require gradients")
    return _finish(t, requires_grad, placement, sbp, "tensor")


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """``data`` as a tensor: a tensor is returned as is when no dtype / device is asked for."""
    if isinstance(data, Tensor) and dtype is None and device is None:
        return data
    d = None if dtype is None else _dt.as_dtype(dtype)
    return _wrap(_tensor_value(data, d, device, "flow.as_tensor", copy=False))


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor from a NumPy array, keeping its dtype, without a copy where JAX can alias the
    buffer (CPU, suitably aligned). As with ``torch.from_numpy`` later writes to the array may
    then show in the tensor; in-place ops on the tensor never write back to the array."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray, got {type(ndarray).__name__}")
    return _wrap(_tensor_value(ndarray, None, None, "flow.from_numpy", copy=False))


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """``torch.frombuffer``: a 1-d tensor of ``dtype`` over the bytes of an object with the
    buffer protocol (``bytes``, ``bytearray``, ``array.array``, ``memoryview``) from byte
    ``offset``, ``count`` elements (all that remain when negative), with PyTorch's checks. As
    :func:`from_numpy`: without a copy where JAX can alias the memory, so later writes to the
    buffer may show; jflow never writes to it (in-place ops on the tensor rebind it), so a
    read-only buffer needs no warning."""
    d = _dt.as_dtype(dtype)
    data = memoryview(buffer).cast("B")
    n, size = len(data), d.itemsize
    if n == 0 or count == 0:
        raise ValueError(f"both buffer length ({n}) and count ({count}) must not be 0")
    if not 0 <= offset < n:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({n} bytes) minus 1")
    if count < 0:
        if (n - offset) % size:
            raise ValueError(f"buffer length ({n - offset} bytes) after offset ({offset} bytes) "
                             f"must be a multiple of element size ({size})")
        count = (n - offset) // size
    elif count * size > n - offset:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({n} bytes)")
    arr = np.frombuffer(data, dtype=d.np, count=count, offset=offset)
    out = _wrap(_tensor_value(arr, None, None, "flow.frombuffer", copy=False))
    return out.requires_grad_(True) if requires_grad else out


def _finish(t: Tensor, requires_grad: bool, placement: Any = None, sbp: Any = None,
            fname: str = "factory") -> Tensor:
    """Make the new tensor global when ``placement=`` / ``sbp=`` are given (both needed: the
    value created here is the logical value, distributed as ``sbp`` says), then set
    ``requires_grad``."""
    if placement is not None or sbp is not None:
        if placement is None or sbp is None:
            raise ValueError(f"flow.{fname}: a global tensor needs both placement= and sbp=")
        t = t.to_global(placement, sbp)
    if requires_grad:
        t.requires_grad_()  # floating dtypes only (a clear error otherwise)
    return t


def full(size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
         requires_grad: bool = False, placement: Any = None, sbp: Any = None) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value`` (dtype inferred from it if not set)."""
    d = None if dtype is None else _dt.as_dtype(dtype)
    return _finish(F.full(_sizes((size,), "full"), fill_value, dtype=d, device=device),
                   requires_grad, placement, sbp, "full")


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          placement: Any = None, sbp: Any = None, **kw: Any) -> Tensor:
    """A tensor of zeros of shape ``size``, in the default dtype unless ``dtype`` is given."""
    d = _dt.get_default_dtype() if dtype is None else _dt.as_dtype(dtype)
    shape = _sizes(_size_kw(size, kw, "zeros"), "zeros")
    return _finish(F.full(shape, 0, dtype=d, device=device), requires_grad, placement, sbp,
                   "zeros")


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
         placement: Any = None, sbp: Any = None, **kw: Any) -> Tensor:
    """A tensor of ones of shape ``size``, in the default dtype unless ``dtype`` is given."""
    d = _dt.get_default_dtype() if dtype is None else _dt.as_dtype(dtype)
    shape = _sizes(_size_kw(size, kw, "ones"), "ones")
    return _finish(F.full(shape, 1, dtype=d, device=device), requires_grad, placement, sbp,
                   "ones")


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          placement: Any = None, sbp: Any = None, **kw: Any) -> Tensor:
    """Uninitialised memory does not exist for immutable arrays: ``empty`` is ``zeros``."""
    return zeros(*_size_kw(size, kw, "empty"), dtype=dtype, device=device,
                 requires_grad=requires_grad, placement=placement, sbp=sbp)


def _size_kw(size: tuple, kw: dict, fname: str) -> tuple:
    """PyTorch's ``size=`` keyword (``torch.zeros(size=(2, 3))``), the positional sizes'
    alternative; any other keyword is an error naming it."""
    extra = sorted(k for k in kw if k != "size")
    if extra:
        raise TypeError(f"{fname}() got an unexpected keyword argument {extra[0]!r}")
    if "size" not in kw:
        return size
    if size:
        raise TypeError(f"{fname}(): the size given both positionally {size} and as size=")
    return (kw["size"],)


def arange(start: Any, end: Any = None, step: Any = api_default("arange", "step"), *,
           dtype: Any = None, device: Any = None, requires_grad: bool = False,
           placement: Any = None, sbp: Any = None) -> Tensor:
    """``start, start + step, ...`` up to ``end`` (excluded); ``arange(n)`` is ``0 .. n - 1``."""
    d = None if dtype is None else _dt.as_dtype(dtype)
    if end is None:
        start, end = 0, start
    # (a 0-dim tensor bound is its number, as PyTorch's Scalar parameters read it:
    # torch.arange(seq_len) with seq_len a tensor)
    start, end, step = (v.item() if isinstance(v, Tensor) and not v.shape else v
                        for v in (start, end, step))
    return _finish(F.arange(start, end, step, dtype=d, device=device), requires_grad,
                   placement, sbp, "arange")


def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, placement: Any = None, sbp: Any = None) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included."""
    d = None if dtype is None else _dt.as_dtype(dtype)
    start, end = _bound("linspace", "start", start), _bound("linspace", "end", end)
    return _finish(F.linspace(start, end, steps, dtype=d, device=device), requires_grad,
                   placement, sbp, "linspace")


def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False, placement: Any = None, sbp: Any = None) -> Tensor:
    """An ``n x m`` matrix (``m = n`` by default) with ones on the diagonal, zeros elsewhere."""
    d = None if dtype is None else _dt.as_dtype(dtype)
    return _finish(F.eye(n, m, dtype=d, device=device), requires_grad, placement, sbp, "eye")


def rand(*size: Any, generator: Any = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False, placement: Any = None, sbp: Any = None) -> Tensor:
    """Uniform [0, 1). A global draw is the same logical tensor for every placement/SBP."""
    d = None if dtype is None else _dt.as_dtype(dtype)
    return _finish(F.rand(_sizes(size, "rand"), generator=generator, dtype=d, device=device),
                   requires_grad, placement, sbp, "rand")


def randn(*size: Any, generator: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False, placement: Any = None, sbp: Any = None) -> Tensor:
    """Standard normal. A global draw is the same logical tensor for every placement/SBP."""
    d = None if dtype is None else _dt.as_dtype(dtype)
    return _finish(F.randn(_sizes(size, "randn"), generator=generator, dtype=d,
                              device=device), requires_grad, placement, sbp, "randn")


def randint(low: int, high: Any = None, size: Any = None, *, generator: Any = None,
            dtype: Any = None, device: Any = None, placement: Any = None,
            sbp: Any = None) -> Tensor:
    """``randint(high, size)`` or ``randint(low, high, size)``, as PyTorch."""
    if size is None:
        if high is None:
            raise TypeError("randint() missing required argument 'size'")
        low, high, size = 0, low, high
    elif high is None:  # randint(high, size=...)
        low, high = 0, low
    d = None if dtype is None else _dt.as_dtype(dtype)
    return _finish(F.randint(low, high, _sizes((size,), "randint"), generator=generator,
                                dtype=d, device=device), False, placement, sbp, "randint")


def _like(input: Tensor, dtype: Any, placement: Any, sbp: Any, layout: Any = None,
          memory_format: Any = None) -> tuple[tuple[int, ...], Any, Any, Any]:
    """Shape, dtype and layout of a ``*_like`` result: a global input's placement and SBP are
    kept unless others are given (as OneFlow)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"expected a Tensor as input, got {type(input).__name__}")
    # PyTorch's layout= / memory_format= pick strides, never values (jflow: dense, row-major)
    check_layout("*_like", layout)
    check_memory_format("*_like", memory_format, input.ndim)
    if input._global is not None and placement is None and sbp is None:
        placement, sbp = input._global
    return (tuple(input.shape), input.dtype if dtype is None else _dt.as_dtype(dtype),
            placement, sbp)


def _like_device(input: Tensor, device: Any) -> Any:
    """A ``*_like`` result's device: the one given, else a meta input's (PyTorch keeps the
    input's device; jflow's other tensors go to the default device)."""
    return "meta" if device is None and input.is_meta else device


def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, placement: Any = None, sbp: Any = None,
               layout: Any = None, memory_format: Any = None) -> Tensor:
    """Zeros of ``input``'s shape and dtype (unless ``dtype`` is given)."""
    shape, d, placement, sbp = _like(input, dtype, placement, sbp, layout, memory_format)
    device = _like_device(input, device)
    return zeros(shape, dtype=d, device=device, requires_grad=requires_grad,
                 placement=placement, sbp=sbp)


def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, placement: Any = None, sbp: Any = None,
              layout: Any = None, memory_format: Any = None) -> Tensor:
    """Ones of ``input``'s shape and dtype (unless ``dtype`` is given)."""
    shape, d, placement, sbp = _like(input, dtype, placement, sbp, layout, memory_format)
    device = _like_device(input, device)
    return ones(shape, dtype=d, device=device, requires_grad=requires_grad,
                placement=placement, sbp=sbp)


def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, placement: Any = None, sbp: Any = None,
               layout: Any = None, memory_format: Any = None) -> Tensor:
    """``zeros_like``: JAX arrays have no uninitialised memory."""
    return zeros_like(input, dtype=dtype, device=device, requires_grad=requires_grad,
                      placement=placement, sbp=sbp, layout=layout, memory_format=memory_format)


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, placement: Any = None, sbp: Any = None,
              layout: Any = None, memory_format: Any = None) -> Tensor:
    """``fill_value`` everywhere, of ``input``'s shape and dtype (unless ``dtype`` is given)."""
    shape, d, placement, sbp = _like(input, dtype, placement, sbp, layout, memory_format)
    device = _like_device(input, device)
    return full(shape, fill_value, dtype=d, device=device, requires_grad=requires_grad,
                placement=placement, sbp=sbp)


def rand_like(input: Tensor, *, generator: Any = None, dtype: Any = None,
              device: Any = None, placement: Any = None, sbp: Any = None,
              layout: Any = None, memory_format: Any = None) -> Tensor:
    """Uniform [0, 1) samples of ``input``'s shape and dtype (unless ``dtype`` is given)."""
    shape, d, placement, sbp = _like(input, dtype, placement, sbp, layout, memory_format)
    device = _like_device(input, device)
    return rand(shape, generator=generator, dtype=d, device=device, placement=placement,
                sbp=sbp)


def randn_like(input: Tensor, *, generator: Any = None, dtype: Any = None,
               device: Any = None, placement: Any = None, sbp: Any = None,
               layout: Any = None, memory_format: Any = None) -> Tensor:
    """Standard normal samples of ``input``'s shape and dtype (unless ``dtype`` is given)."""
    shape, d, placement, sbp = _like(input, dtype, placement, sbp, layout, memory_format)
    device = _like_device(input, device)
    return randn(shape, generator=generator, dtype=d, device=device, placement=placement,
                 sbp=sbp)


def randint_like(input: Tensor, low: int, high: Any = None, *, generator: Any = None,
                 dtype: Any = None, device: Any = None, placement: Any = None,
                 sbp: Any = None,
                 layout: Any = None, memory_format: Any = None) -> Tensor:
    """Integers uniform in ``[low, high)`` (``[0, low)`` if one bound), of ``input``'s shape."""
    shape, d, placement, sbp = _like(input, dtype, placement, sbp, layout, memory_format)
    device = _like_device(input, device)
    if high is None:
        low, high = 0, low
    if d.is_floating_point or d is _dt.bool_:  # PyTorch: integers held in the input's dtype
        r = randint(low, high, shape, generator=generator, dtype=_dt.int64, device=device,
                    placement=placement, sbp=sbp)
        return F.cast(r, d)
    return randint(low, high, shape, generator=generator, dtype=d, device=device,
                   placement=placement, sbp=sbp)


# -- random permutations and sampling ------------------------------------------------------------

def _draw_device(t: Tensor) -> Any:
    """The device a draw for ``t`` goes to: ``t``'s (none under a trace: the value is a
    tracer, and the draw is staged where the trace runs)."""
    return None if isinstance(t._meta, Tracer) else t.device


def _draw_dtype(t: Tensor) -> _dt.dtype:
    """The float dtype uniform draws are made in for ``t``: float64 for float64 tensors,
    float32 otherwise (half-precision results are rounded from float32 draws)."""
    return _dt.float64 if t._meta.dtype == np.float64 else _dt.float32


def _host(t: Tensor) -> np.ndarray | None:
    """``t``'s value on the host for an argument check, or None under a trace (unchecked)."""
    v = t._value
    return None if isinstance(v, Tracer) else np.asarray(v)


def randperm(n: int, *, generator: Any = None, dtype: Any = _dt.int64, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of ``0 .. n-1`` (as ``torch.randperm``): the argsort of ``n``
    float64 uniform draws from ``generator`` (default: the global one), so it is one draw of
    the generator, reproducible from its seed and valid under ``flow.jit``."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
    n = int(n)
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    d = _dt.as_dtype(dtype)
    keys = F.rand((n,), generator=generator, dtype=_dt.float64, device=device)
    return _finish(F.cast(F.argsort(keys), d), requires_grad, fname="randperm")


def bernoulli(input: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:
    """0/1 draws in ``input``'s shape and dtype: 1 with probability ``input`` (elementwise,
    each in [0, 1]), or with probability ``p`` (a number) when it is given."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if p is None:
        if not input.is_floating_point():
            raise RuntimeError(f"bernoulli(): expected a floating point tensor of "
                               f"probabilities, got {input.dtype}")
        probs: Any = input
        h = _host(input)
        if h is not None and h.size and not ((h >= 0) & (h <= 1)).all():
            raise RuntimeError("bernoulli(): expected all probabilities in [0, 1]")
    else:
        if isinstance(p, Tensor):
            raise TypeError("bernoulli(): p must be a number (use bernoulli(probs) or "
                            "Tensor.bernoulli_(p_tensor) for tensor probabilities)")
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli(): p must be in [0, 1], got {p}")
        probs = p
    u = F.rand(tuple(input.shape), generator=generator, dtype=_draw_dtype(input),
               device=_draw_device(input))
    return F.cast(F.lt(u, probs), input.dtype)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Any = None) -> Tensor:
    """``num_samples`` category indices (int64) per row of the non-negative weights ``input``
    (1-D or 2-D; rows need not sum to 1), as ``torch.multinomial``.

    Sampled with the Gumbel-max trick from one draw of ``generator``: without replacement the
    indices of the ``num_samples`` largest ``log(w) + Gumbel`` scores (the order sequential
    sampling would give, so the indices of a row are distinct); with replacement the argmax
    over an independent Gumbel draw per sample, which takes ``num_samples`` x categories
    memory per row. Weights are checked (finite, non-negative, a positive sum, enough
    non-zero categories without replacement) on concrete values; under a trace they are not.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial(): prob_dist must be 1 or 2 dim, got {input.ndim}")
    if not input.is_floating_point():
        raise RuntimeError(f"multinomial(): only supports floating-point dtypes for input, "
                           f"got {input.dtype}")
    if isinstance(num_samples, Tensor) and num_samples._meta.dtype.kind in "iu" \
            and num_samples.numel() == 1:  # (a one-element integer tensor: PyTorch's SymInt)
        num_samples = int(num_samples.item())
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)):
        raise TypeError(f"multinomial(): argument 'num_samples' must be int, not "
                        f"{type(num_samples).__name__}")
    num_samples = int(num_samples)
    n = int(input.shape[-1])
    if num_samples <= 0:
        raise RuntimeError(f"multinomial(): cannot sample n_sample <= 0 samples "
                           f"(got {num_samples})")
    if not replacement and num_samples > n:
        raise RuntimeError(f"multinomial(): cannot sample n_sample > prob_dist.size(-1) "
                           f"samples without replacement ({num_samples} > {n})")
    h = _host(input)
    if h is not None:
        h = h.reshape(-1, n).astype(np.float64)
        if not np.isfinite(h).all() or (h < 0).any():
            raise RuntimeError("multinomial(): probability tensor contains either `inf`, "
                               "`nan` or element < 0")
        if (h.sum(axis=1) <= 0).any():
            raise RuntimeError("multinomial(): invalid multinomial distribution (sum of "
                               "probabilities <= 0)")
        if not replacement and ((h > 0).sum(axis=1) < num_samples).any():
            raise RuntimeError("multinomial(): invalid multinomial distribution (with "
                               "replacement=False, not enough non-negative category to "
                               "sample)")
    d = _draw_dtype(input)
    logw = F.log(F.cast(input, d))
    shape = tuple(input.shape) if not replacement else \
        (*tuple(input.shape)[:-1], num_samples, n)
    u = F.rand(shape, generator=generator, dtype=d, device=_draw_device(input))
    gumbel = F.neg(F.log(F.neg(F.log(u))))
    if not replacement:
        return F.topk(logw + gumbel, num_samples, dim=-1)[1]
    return F.argmax(F.unsqueeze(logw, -2) + gumbel, dim=-1).long()


# -- normal, empty_strided, logspace -----------------------------------------------------------

def _bound(fname: str, arg: str, v: Any) -> Any:
    """A linspace / logspace bound: a number, or a 0-d tensor's value (as PyTorch)."""
    if isinstance(v, Tensor):
        if v.ndim != 0:
            raise RuntimeError(f"{fname}(): argument '{arg}' must be a number or a 0-dimensional "
                               f"tensor, got a tensor of shape {list(v.shape)}")
        return v.item()
    return v


def logspace(start: Any, end: Any, steps: int, base: float = api_default("logspace", "base"),
             *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``base ** linspace(start, end, steps)``; ``start`` / ``end`` numbers or 0-d tensors."""
    d = None if dtype is None else _dt.as_dtype(dtype)
    start, end = _bound("logspace", "start", start), _bound("logspace", "end", end)
    return _finish(F.logspace(start, end, steps, base, dtype=d, device=device),
                   requires_grad, None, None, "logspace")


def _check_std(std: Any) -> None:
    if isinstance(std, Tensor):
        if std.numel() and not isinstance(std._meta, Tracer) and \
                bool(F.lt(std.detach(), 0).any()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Any = None,
           dtype: Any = None, layout: Any = None, device: Any = None,
           pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """torch.normal: draws from N(mean, std**2) element by element. ``mean`` / ``std`` are
    tensors (broadcast together) or numbers; two numbers need ``size``. Reparameterised as
    ``mean + std * z`` (z standard normal), so gradients reach tensor arguments: 1 for mean,
    ``z = (out - mean) / std`` for std. Reproducible with ``flow.manual_seed``."""
    if layout is not None and str(layout).rpartition(".")[2] != "strided":
        raise ValueError(f"normal(): only the strided layout exists in jflow, got {layout!r}")
    tm, ts = isinstance(mean, Tensor), isinstance(std, Tensor)
    for arg, v in (("mean", mean), ("std", std)):
        if isinstance(v, Tensor) and not (v.is_floating_point() or v.is_complex()):
            raise RuntimeError(f"normal(): expected a floating point '{arg}' tensor, got "
                               f"{v.dtype}")
    _check_std(std)
    if not tm and not ts:
        if size is None:
            raise TypeError("normal() with a number mean and std needs 'size'")
        d = _dt.get_default_dtype() if dtype is None else _dt.as_dtype(dtype)
        z = F.randn(_sizes((size,), "normal"), generator=generator, dtype=d, device=device)
        out = F.add(F.mul(z, std), mean) if (std != 1 or mean != 0) else z
        return _finish(out, requires_grad, None, None, "normal")
    if size is not None:
        raise TypeError("normal(): 'size' is only accepted with a number mean and std")
    ref = [t for t in (mean, std) if isinstance(t, Tensor)]
    shape = tuple(np.broadcast_shapes(*(tuple(t.shape) for t in ref)))
    dts = [t.dtype for t in ref]
    d = dts[0] if len(dts) == 1 else _dt.promote_types(dts[0], dts[1])
    draw = _dt.float64 if d is _dt.float64 else _dt.float32
    z = F.randn(shape, generator=generator, dtype=draw, device=ref[0].device)
    if z.dtype != d:
        z = F.cast(z, d)
    return F.add(F.mul(z, std), mean)


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
    """A tensor of ``size`` laid out with ``stride`` (``stride()`` reports it): zeros (jflow
    has no uninitialised memory); a non-row-major ``stride`` makes it a strided view of a
    zero storage just large enough, as PyTorch's."""
    size, stride = tuple(int(v) for v in size), tuple(int(v) for v in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"empty_strided(): mismatch in length of strides and shape "
                           f"({len(stride)} strides for {len(size)} sizes)")
    if any(v < 0 for v in size) or any(v < 0 for v in stride):
        raise RuntimeError(f"empty_strided(): sizes and strides must be non-negative, got "
                           f"size {list(size)} and stride {list(stride)}")
    dense = tuple(int(np.prod(size[i + 1:], dtype=np.int64)) for i in range(len(size)))
    if stride == dense or 0 in size or not any(n > 1 for n in size):
        return zeros(size, dtype=dtype, device=device, requires_grad=requires_grad)
    storage = 1 + sum((n - 1) * st for n, st in zip(size, stride))
    out = as_strided(zeros(storage, dtype=dtype, device=device), size, stride, 0)
    if requires_grad:
        out.requires_grad_()
    return out


def zero_grads(params: Any, set_to_none: bool = True) -> None:
    """Reset gradients to ``None``, or to zeros of the same shape, dtype and layout: the one
    reset ``Module.zero_grad`` and ``Optimizer.zero_grad`` share (here, below both ``nn``
    and ``optim``; ``nn.utils`` re-exports it)."""
    for p in params:
        if p.grad is not None:
            p.grad = None if set_to_none else zeros_like(p.grad)
