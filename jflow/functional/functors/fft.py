"""Functors of the fft family: PyTorch's ``torch.fft`` (``fft_*`` entries, exposed as
``flow.fft.<name>`` by :mod:`jflow.fft`), ``stft`` and ``istft``.

Argument handling follows ATen's ``SpectralOps.cpp``: dtype promotion (integers to the default
float dtype, real input of a complex-to-complex transform made complex; half precision refused
as PyTorch's CPU kernels do), ``n`` / ``s`` zero-padding or trimming the input, dim wrapping,
and the ``norm`` strings mapped onto the ops' ``normalization`` (0 none, 1 1/sqrt(n), 2 1/n).
Every transform is one of the three ops of :mod:`jflow.ops.fft`; ``hfft`` is the c2r of the
conjugate and ``ihfft`` the conjugate of the r2c, as in ATen. ``stft`` / ``istft`` are
compositions (frames by ``index_select``, overlap-add by ``index_add``) so their gradients come
from the ops'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from ... import dtypes as _dt
from ..._dims import wrap_dim
from ...ops import get
from ...tensor import Tensor, _wrap
from ..promotion import cast
from ..registry import api as _api
from ..registry import functor
from .factory import on_device

_c2c = get("fft_c2c").apply
_r2c = get("fft_r2c").apply
_c2r = get("fft_c2r").apply
_conj = get("conj").apply
_narrow, _pad, _roll = (get(n).apply for n in ("narrow", "pad", "roll"))
_reshape, _transpose, _squeeze = (get(n).apply for n in ("reshape", "transpose", "squeeze"))
_unsqueeze, _index_select, _mul = (get(n).apply for n in ("unsqueeze", "index_select", "mul"))
_view_as_real, _full, _cat, _div = (get(n).apply for n in ("view_as_real", "full", "cat", "div"))

_TORCH_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                "float64": "Double", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _shape(t: Tensor) -> tuple[int, ...]:
    return tuple(int(s) for s in t._meta.shape)


def _np_dtype(t: Tensor) -> np.dtype:
    return np.dtype(t._meta.dtype)


def _complex_of(d: np.dtype) -> np.dtype:
    return np.dtype(np.complex128 if d == np.float64 else np.complex64)


def _promote(fname: str, x: Tensor, require_complex: bool = False) -> Tensor:
    """ATen's ``promote_tensor_fft``: complex stays; integers and bool become the default
    float dtype; float32/float64 only (PyTorch's CPU FFT has no half precision)."""
    d = _np_dtype(x)
    if d.kind == "c":
        return x
    if d.kind in "iub":
        d = np.dtype(_dt.get_default_dtype().np)
        x = cast(x, d)
    if d not in (np.float32, np.float64):
        raise TypeError(f"{fname}: Unsupported dtype {_TORCH_NAMES.get(d.name, d.name)}")
    return cast(x, _complex_of(d)) if require_complex else x


def _norm_mode(fname: str, norm: str | None, forward: bool) -> int:
    """ATen's ``norm_from_string``: the op's normalization for ``norm`` in a direction."""
    if norm is None or norm == "backward":
        return 0 if forward else 2
    if norm == "forward":
        return 2 if forward else 0
    if norm == "ortho":
        return 1
    raise ValueError(f"{fname}: Invalid normalization mode: \"{norm}\" (expected None, "
                     f"\"backward\", \"forward\" or \"ortho\")")


def _wrap_dim(fname: str, ndim: int, d: int) -> int:
    if ndim == 0:  # an FFT needs a dim to transform
        raise IndexError(f"{fname}(): Dimension specified as {d} but tensor has no dimensions")
    return wrap_dim(fname, d, ndim)


def _check_points(fname: str, n: int) -> None:
    if n < 1:
        raise ValueError(f"{fname}: Invalid number of data points ({n}) specified")


def _resize(x: Tensor, dims: Sequence[int], sizes: Sequence[int]) -> Tensor:
    """``x`` trimmed or zero-padded (at the end) to ``sizes`` on ``dims``."""
    shape = _shape(x)
    pads = [0] * (2 * len(shape))
    for d, n in zip(dims, sizes):
        if shape[d] > n:
            x = _narrow(x, dim=d, start=0, length=n)
        elif shape[d] < n:
            pads[2 * (len(shape) - 1 - d) + 1] = n - shape[d]
    if any(pads):
        x = _pad(x, pad=tuple(pads), mode="constant", value=0.0)
    return x


# -- one-dimensional transforms --------------------------------------------------------------

def _c2c_1d(fname: str, x: Tensor, n: int | None, dim: int, norm: str | None,
            forward: bool) -> Tensor:
    mode = _norm_mode(fname, norm, forward)
    d = _wrap_dim(fname, x._meta.ndim, dim)
    size = n if n is not None else _shape(x)[d]
    _check_points(fname, size)
    if n is not None:
        x = _resize(x, (d,), (n,))
    return _c2c(x, dim=(d,), normalization=mode, forward=forward)


def _r2c_1d(fname: str, x: Tensor, n: int | None, dim: int, norm: str | None, forward: bool,
            onesided: bool) -> Tensor:
    if _np_dtype(x).kind == "c":
        raise TypeError(f"{fname} expects a real input tensor, but got "
                        f"{_TORCH_NAMES[_np_dtype(x).name]}")
    mode = _norm_mode(fname, norm, forward)
    x = _promote(fname, x)
    d = _wrap_dim(fname, x._meta.ndim, dim)
    size = n if n is not None else _shape(x)[d]
    _check_points(fname, size)
    if n is not None:
        x = _resize(x, (d,), (n,))
    y = _r2c(x, dim=(d,), normalization=mode, onesided=onesided)
    return y if forward else _conj(y)


def _c2r_1d(fname: str, x: Tensor, n: int | None, dim: int, norm: str | None,
            forward: bool) -> Tensor:
    mode = _norm_mode(fname, norm, forward)
    x = _promote(fname, x, require_complex=True)
    d = _wrap_dim(fname, x._meta.ndim, dim)
    last = n if n is not None else 2 * (_shape(x)[d] - 1)
    _check_points(fname, last)
    x = _resize(x, (d,), (last // 2 + 1,))
    if forward:
        x = _conj(x)
    return _c2r(x, dim=(d,), normalization=mode, last_dim_size=last)


@functor("FftFft")
def fft(input: Tensor, n: int | None, dim: int, norm: str | None) -> Tensor:
    """torch.fft.fft: the one-dimensional DFT (real input: a two-sided r2c)."""
    if _np_dtype(input).kind == "c":
        return _c2c_1d("fft.fft", input, n, dim, norm, True)
    return _r2c_1d("fft.fft", input, n, dim, norm, True, False)


@functor("FftIfft")
def ifft(input: Tensor, n: int | None, dim: int, norm: str | None) -> Tensor:
    """torch.fft.ifft: the one-dimensional inverse DFT."""
    if _np_dtype(input).kind == "c":
        return _c2c_1d("fft.ifft", input, n, dim, norm, False)
    return _r2c_1d("fft.ifft", input, n, dim, norm, False, False)


@functor("FftRfft")
def rfft(input: Tensor, n: int | None, dim: int, norm: str | None) -> Tensor:
    """torch.fft.rfft: the DFT of a real signal, the ``n // 2 + 1`` non-negative frequencies."""
    return _r2c_1d("fft.rfft", input, n, dim, norm, True, True)


@functor("FftIrfft")
def irfft(input: Tensor, n: int | None, dim: int, norm: str | None) -> Tensor:
    """torch.fft.irfft: the inverse of rfft (``n`` defaults to ``2 (m - 1)``)."""
    return _c2r_1d("fft.irfft", input, n, dim, norm, False)


@functor("FftHfft")
def hfft(input: Tensor, n: int | None, dim: int, norm: str | None) -> Tensor:
    """torch.fft.hfft: the DFT of a Hermitian-symmetric signal given by its first half."""
    return _c2r_1d("fft.hfft", input, n, dim, norm, True)


@functor("FftIhfft")
def ihfft(input: Tensor, n: int | None, dim: int, norm: str | None) -> Tensor:
    """torch.fft.ihfft: the inverse of hfft (the conjugate of a onesided r2c)."""
    return _r2c_1d("fft.ihfft", input, n, dim, norm, False, True)


# -- n-dimensional transforms ----------------------------------------------------------------

def _shape_and_dims(fname: str, x: Tensor, s: Sequence[int] | None,
                    dim: Sequence[int] | None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """ATen's ``canonicalize_fft_shape_and_dim_args``: the signal sizes and wrapped dims."""
    nd = x._meta.ndim
    sizes = _shape(x)
    dims: tuple[int, ...] = ()
    if dim is not None:
        dims = tuple(_wrap_dim(fname, nd, int(d)) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{fname}: FFT dims must be unique")
    if s is not None:
        if dim is not None and len(dim) != len(s):
            raise RuntimeError(f"{fname}: When given, dim and shape arguments must have the "
                               f"same length")
        if len(s) > nd:
            raise RuntimeError(f"{fname}: Got shape with {len(s)} values but input tensor only "
                               f"has {nd} dimensions.")
        if dim is None:
            dims = tuple(range(nd - len(s), nd))
        shape = tuple(int(n) if n != -1 else sizes[d] for n, d in zip(s, dims))
    elif dim is None:
        dims = tuple(range(nd))
        shape = sizes
    else:
        shape = tuple(sizes[d] for d in dims)
    for n in shape:
        _check_points(fname, n)
    return shape, dims


def _c2c_nd(fname: str, x: Tensor, s: Any, dim: Any, norm: str | None,
            forward: bool) -> Tensor:
    mode = _norm_mode(fname, norm, forward)
    shape, dims = _shape_and_dims(fname, x, s, dim)
    x = _promote(fname, x, require_complex=True)
    x = _resize(x, dims, shape)
    if not dims:
        return x
    return _c2c(x, dim=dims, normalization=mode, forward=forward)


def _r2c_nd(fname: str, x: Tensor, s: Any, dim: Any, norm: str | None,
            forward: bool) -> Tensor:
    """rfftn (forward) / ihfftn (the conjugate of the inverse-direction rfftn)."""
    if _np_dtype(x).kind == "c":
        raise TypeError(f"{fname} expects a real-valued input tensor, but got "
                        f"{_TORCH_NAMES[_np_dtype(x).name]}")
    mode = _norm_mode(fname, norm, forward)
    shape, dims = _shape_and_dims(fname, x, s, dim)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    x = _resize(_promote(fname, x), dims, shape)
    if forward:
        return _r2c(x, dim=dims, normalization=mode, onesided=True)
    # ihfftn: conj(r2c) on the last dim, then the inverse c2c on the others
    y = _conj(_r2c(x, dim=dims[-1:], normalization=mode, onesided=True))
    if len(dims) == 1:
        return y
    return _c2c(y, dim=dims[:-1], normalization=mode, forward=False)


def _c2r_nd(fname: str, x: Tensor, s: Any, dim: Any, norm: str | None,
            forward: bool) -> Tensor:
    """irfftn (inverse) / hfftn (c2c forward on the leading dims, then c2r of the conjugate)."""
    mode = _norm_mode(fname, norm, forward)
    shape, dims = _shape_and_dims(fname, x, s, dim)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    last = 2 * (_shape(x)[dims[-1]] - 1) if s is None or s[-1] == -1 else shape[-1]
    _check_points(fname, last)
    shape = shape[:-1] + (last // 2 + 1,)
    x = _resize(_promote(fname, x, require_complex=True), dims, shape)
    if not forward:
        return _c2r(x, dim=dims, normalization=mode, last_dim_size=last)
    if len(dims) > 1:
        x = _c2c(x, dim=dims[:-1], normalization=mode, forward=True)
    return _c2r(_conj(x), dim=dims[-1:], normalization=mode, last_dim_size=last)


def _nd_functors(suffix: str) -> None:
    """Register the 2-d (``suffix`` "2": api.yaml's default dim (-2, -1)) or n-d (``"n"``)
    functors of each kind."""
    for kind, impl, forward in (("Fft", _c2c_nd, True), ("Ifft", _c2c_nd, False),
                                ("Rfft", _r2c_nd, True), ("Ihfft", _r2c_nd, False),
                                ("Irfft", _c2r_nd, False), ("Hfft", _c2r_nd, True)):
        fname = f"fft.{kind.lower()}{suffix.lower()}"

        def fn(input: Tensor, s: Sequence[int] | None, dim: Sequence[int] | None,
               norm: str | None, _impl: Any = impl, _fname: str = fname,
               _forward: bool = forward) -> Tensor:
            return _impl(_fname, input, s, dim, norm, _forward)
        fn.__name__ = fn.__qualname__ = f"{kind.lower()}{suffix.lower()}"
        fn.__doc__ = f"torch.{fname}: the {'2' if suffix == '2' else 'n'}-dimensional " \
                     f"{kind.lower()}."
        functor(f"Fft{kind}{suffix}")(fn)


_nd_functors("2")
_nd_functors("n")


# -- helpers: shifts and sample frequencies --------------------------------------------------

def _shift(fname: str, x: Tensor, dim: Sequence[int] | None, inverse: bool) -> Tensor:
    nd = x._meta.ndim
    dims = tuple(range(nd)) if dim is None else tuple(_wrap_dim(fname, nd, int(d))
                                                       for d in dim)
    if not dims:
        return x
    sizes = _shape(x)
    shifts = tuple(((sizes[d] + 1) // 2) if inverse else (sizes[d] // 2) for d in dims)
    return _roll(x, shifts=shifts, axes=dims)


@functor("FftFftshift")
def fftshift(input: Tensor, dim: Sequence[int] | None) -> Tensor:
    """torch.fft.fftshift: the zero frequency moved to the centre (a roll by ``n // 2``)."""
    return _shift("fft.fftshift", input, dim, False)


@functor("FftIfftshift")
def ifftshift(input: Tensor, dim: Sequence[int] | None) -> Tensor:
    """torch.fft.ifftshift: the inverse of fftshift (a roll by ``(n + 1) // 2``)."""
    return _shift("fft.ifftshift", input, dim, True)


def _freq(fname: str, n: int, d: float, dtype: Any, device: Any, requires_grad: bool,
          onesided: bool) -> Tensor:
    if n < 0:
        raise ValueError(f"{fname}: argument 'n' must be non-negative, got {n}")
    dt = _dt.get_default_dtype() if dtype is None else dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise TypeError(f"{fname}: dtype must be a floating or complex dtype, got {dt}")
    if onesided:
        k = np.arange(n // 2 + 1, dtype=np.float64)
    else:
        k = np.concatenate([np.arange((n + 1) // 2), np.arange(-(n // 2), 0)]).astype(np.float64)
    vals = (k * (1.0 / (n * d))) if n else k
    out = on_device(_wrap(jax.device_put(vals.astype(dt.np))), device)
    if requires_grad:
        out.requires_grad_(True)
    return out


@functor("FftFftfreq")
def fftfreq(n: int, d: float, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    """torch.fft.fftfreq: the sample frequencies of an ``n``-point fft, spacing ``d``."""
    return _freq("fft.fftfreq", n, d, dtype, device, requires_grad, False)


@functor("FftRfftfreq")
def rfftfreq(n: int, d: float, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    """torch.fft.rfftfreq: the ``n // 2 + 1`` non-negative sample frequencies of an rfft."""
    return _freq("fft.rfftfreq", n, d, dtype, device, requires_grad, True)


# -- stft / istft ----------------------------------------------------------------------------

def _int_tensor(values: np.ndarray) -> Tensor:
    # device_put of a host array compiles nothing (jnp.asarray compiles a copy per shape)
    return _wrap(jax.device_put(values.astype(np.int64)))


def _padded_window(window: Tensor | None, win_length: int, n_fft: int, like: np.dtype
                   ) -> Tensor | None:
    """The window centred in ``n_fft`` points (zeros around), as ATen pads it; ``None`` when
    no window is given and none is needed."""
    left = (n_fft - win_length) // 2
    if window is None:
        if win_length == n_fft:
            return None
        w = np.zeros(n_fft)
        w[left:left + win_length] = 1.0
        return _wrap(jax.device_put(w.astype(like)))
    if win_length < n_fft:
        window = _pad(window, pad=(left, n_fft - win_length - left), mode="constant", value=0.0)
    return window


def _check_window(fname: str, window: Tensor | None, win_length: int) -> None:
    if window is not None and (window._meta.ndim != 1 or _shape(window)[0] != win_length):
        raise RuntimeError(f"{fname}: expected a 1D window tensor of size equal to "
                           f"win_length={win_length}, but got window with size "
                           f"{list(_shape(window))}")


@functor("Stft")
def stft(input: Tensor, n_fft: int, hop_length: int | None, win_length: int | None,
         window: Tensor | None, center: bool, pad_mode: str, normalized: bool,
         onesided: bool | None, return_complex: bool | None) -> Tensor:
    """torch.stft: the DFT of each ``n_fft``-point frame (every ``hop_length`` samples, times
    the window), shape ``(B?, freq, n_frames)``; complex unless ``return_complex=False``."""
    complex_in = _np_dtype(input).kind == "c" or (window is not None
                                                  and _np_dtype(window).kind == "c")
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        return_complex = True
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    nd = input._meta.ndim
    if nd not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got a {nd}D tensor")
    x = _promote("stft", input)
    if center:
        pad = n_fft // 2
        x3 = _reshape(x, shape=(1,) * (3 - nd) + _shape(x))
        x3 = _api().pad(x3, [pad, pad], pad_mode)
        x = _reshape(x3, shape=_shape(x3)[3 - nd:])
    if nd == 1:
        x = _unsqueeze(x, dim=0)
    length = _shape(x)[1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got "
                           f"win_length={win}")
    _check_window("stft", window, win)
    n_frames = 1 + (length - n_fft) // hop
    idx = (np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1)
    frames = _reshape(_index_select(x, _int_tensor(idx), dim=1),
                      shape=(_shape(x)[0], n_frames, n_fft))  # (B, n_frames, n_fft)
    w = _padded_window(window, win, n_fft, _np_dtype(x))
    if w is not None:
        frames = _api().mul(frames, w)
    complex_fft = _np_dtype(frames).kind == "c"
    one = (not complex_fft) if onesided is None else onesided
    mode = 1 if normalized else 0
    if complex_fft:
        if one:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = _c2c(frames, dim=(2,), normalization=mode, forward=True)
    else:
        out = _r2c(frames, dim=(2,), normalization=mode, onesided=one)
    out = _transpose(out, perm=(0, 2, 1))
    if nd == 1:
        out = _squeeze(out, axes=(0,))
    return out if return_complex else _view_as_real(out)


@functor("Istft")
def istft(input: Tensor, n_fft: int, hop_length: int | None, win_length: int | None,
          window: Tensor | None, center: bool, normalized: bool, onesided: bool | None,
          length: int | None, return_complex: bool) -> Tensor:
    """torch.istft: the inverse of stft by overlap-add of the inverse DFT of each frame,
    divided by the overlap-added squared window (which must not vanish)."""
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if _np_dtype(input).kind != "c":
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    nd = input._meta.ndim
    if math.prod(_shape(input)) == 0:
        raise RuntimeError("istft input tensor cannot be empty")
    if nd not in (2, 3):
        raise RuntimeError(f"istft: expected a 2D or 3D complex tensor, but got {nd}D tensor")
    n_frames, fft_size = _shape(input)[-1], _shape(input)[-2]
    one = fft_size != n_fft if onesided is None else onesided  # ATen's default
    if one and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(f"istft expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{fft_size}")
    if not one and n_fft != fft_size:
        raise RuntimeError(f"istft expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got "
                           f"{fft_size}")
    if not 0 < win <= n_fft:
        raise RuntimeError("istft expected 0 < win_length <= n_fft")
    if not 0 < hop <= win:
        raise RuntimeError("istft expected 0 < hop_length <= win_length")
    _check_window("istft", window, win)
    real_dt = np.dtype(np.float64 if _np_dtype(input) == np.complex128 else np.float32)
    w = _padded_window(window, win, n_fft, real_dt)
    if w is None:
        w = _wrap(jax.device_put(np.ones((n_fft,), real_dt)))
    x = input if nd == 3 else _unsqueeze(input, dim=0)
    x = _transpose(x, perm=(0, 2, 1))  # (B, n_frames, freq)
    mode = 1 if normalized else 2
    if return_complex:
        if one:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = _c2c(x, dim=(2,), normalization=mode, forward=False)
    else:
        if window is not None and _np_dtype(window).kind == "c":
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not one:
            x = _narrow(x, dim=2, start=0, length=n_fft // 2 + 1)
        frames = _c2r(x, dim=(2,), normalization=mode, last_dim_size=n_fft)
    frames = _api().mul(frames, w)  # (B, n_frames, n_fft)
    total = n_fft + hop * (n_frames - 1)
    batch = _shape(frames)[0]
    positions = (np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1)
    idx = _int_tensor(positions)
    flat = _reshape(frames, shape=(batch, n_frames * n_fft))
    y = _api().index_add(_full(shape=(batch, total), value=0.0,
                               dtype=_np_dtype(flat)), 1, idx, flat)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    elif center:
        end = total - n_fft // 2
    else:
        end = total
    stop = min(end, total)
    y = _narrow(y, dim=1, start=start, length=max(stop - start, 0))
    if isinstance(w._meta, Tracer) or w.requires_grad or w._global is not None \
            or _np_dtype(w).kind == "c":
        wsq = _api().mul(w, w)
        env = _api().index_add(_full(shape=(total,), value=0.0, dtype=_np_dtype(wsq)), 0, idx,
                               _reshape(_api().expand(_unsqueeze(wsq, dim=0),
                                                      (n_frames, n_fft)),
                                        shape=(n_frames * n_fft,)))
        env = _narrow(env, dim=0, start=start, length=max(stop - start, 0))
        host_env = None if isinstance(env._meta, Tracer) else env.numpy(force=True)
        env = cast(env, _np_dtype(y))
    else:
        # A real local window off the tape: its envelope is a constant, overlap-added on the
        # host (the check reads it there anyway) instead of ~7 eager ops compiled per shape.
        wn = w.numpy(force=True)
        host_env = np.zeros((total,), wn.dtype)
        np.add.at(host_env, positions, np.tile(wn * wn, n_frames))
        host_env = host_env[start:max(stop, start)]
        env = _wrap(jax.device_put(host_env.astype(_np_dtype(y))))
    if host_env is not None:
        low = float(np.abs(host_env).min()) if stop > start else 1.0
        if low < 1e-11:
            raise RuntimeError(f"istft: window overlap add min: {low} (the squared window, "
                               f"overlap-added, must be nonzero everywhere: NOLA)")
    y = _div(y, env)
    if nd == 2:
        y = _squeeze(y, axes=(0,))
    if end > total:
        pads = (0, end - total)
        y = _pad(y, pad=pads, mode="constant", value=0.0)
    return y
