"""``flow.nn.init``: in-place initialisers, as ``torch.nn.init``.

Random ones draw from jflow's generators (the default one unless ``generator=`` is given), so
``flow.manual_seed`` makes model initialisation reproducible. All run under ``no_grad``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from .. import creation as _cr
from .. import dtypes as _dt
from ..autograd import no_grad
from ..lazy_mode import is_lazy
from ..tensor import Tensor, _wrap

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "_calculate_fan_in_and_fan_out", "sparse_",
           "_calculate_correct_fan"]


def calculate_gain(nonlinearity: str, param: Any = None) -> float:
    """The recommended gain for ``nonlinearity`` (PyTorch's table)."""
    linear = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid"]
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)``: dims 1 and 0 times the receptive field (the dims from 2 on)."""
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _fill(tensor: Tensor, value: Tensor) -> Tensor:
    with no_grad():
        return tensor.copy_(value)


def _check(tensor: Any, fname: str) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{fname}: expected a Tensor, got {type(tensor).__name__}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Any = None) -> Tensor:
    """Fill with U(a, b)."""
    _check(tensor, "uniform_")
    return _fill(tensor, _draw(tensor, _cr.rand, generator, lambda u: u * (b - a) + a))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Any = None) -> Tensor:
    """Fill with N(mean, std²)."""
    _check(tensor, "normal_")
    return _fill(tensor, _draw(tensor, _cr.randn, generator, lambda n: n * std + mean))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Any = None) -> Tensor:
    """Fill with N(mean, std²) truncated to [a, b] (inverse-CDF method, as PyTorch)."""
    _check(tensor, "trunc_normal_")

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0
    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)

    def truncate(u: Tensor) -> Tensor:
        v = u._value * (2 * hi - 2 * lo) + (2 * lo - 1)
        x = jax.scipy.special.erfinv(v) * (std * math.sqrt(2.0)) + mean
        return _wrap(jnp.clip(x, a, b))
    return _fill(tensor, _draw(tensor, _cr.rand, generator, truncate))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills ``tensor`` with ``val`` in place, outside autograd; returns it."""
    _check(tensor, "constant_")
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with 1 in place, outside autograd; returns it."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with 0 in place, outside autograd; returns it."""
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-d tensor with the identity."""
    _check(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, _cr.eye(*tensor.shape, dtype=tensor.dtype))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3/4/5-d conv weight with the Dirac delta (identity convolution)."""
    import numpy as np
    _check(tensor, "dirac_")
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    shape = tuple(tensor.shape)
    if shape[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    out_per = shape[0] // groups
    w = np.zeros(shape, dtype=np.float64)
    for g in range(groups):
        for d in range(min(out_per, shape[1])):
            idx = (g * out_per + d, d) + tuple(s // 2 for s in shape[2:])
            w[idx] = 1
    return _fill(tensor, _cr.tensor(w, dtype=tensor.dtype))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """U(-a, a), a = gain · sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio); in place."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """N(0, std²), std = gain · sqrt(2 / (fan_in + fan_out)) (Glorot & Bengio); in place."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator: Any = None) -> Tensor:
    """U(-bound, bound), bound = gain · sqrt(3 / fan) (He et al.)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator: Any = None) -> Tensor:
    """N(0, std²), std = gain / sqrt(fan) (He et al.); in place."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a normal draw."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    if tensor.is_meta:  # no values to fill, no draw (jflow.meta)
        return tensor
    flat = _cr.randn(rows, cols, generator=generator, dtype=_draw_dtype(tensor))._value
    if rows < cols:
        flat = flat.T
    q, r = jnp.linalg.qr(flat)
    q = q * jnp.sign(jnp.diagonal(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, _wrap((q * gain).reshape(tuple(tensor.shape))))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01,
            generator: Any = None) -> Tensor:
    """A 2-D matrix drawn from N(0, std²) with ``ceil(sparsity * rows)`` entries of every
    column set to zero (rows chosen at random per column), as ``torch.nn.init.sparse_``."""
    _check(tensor, "sparse_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    if tensor.is_meta:  # no values to fill, no draw (jflow.meta)
        return tensor
    n = _cr.randn(rows, cols, generator=generator, dtype=_draw_dtype(tensor))._value * std
    if num_zeros:
        keys = _cr.rand(rows, cols, generator=generator, dtype=_dt.float32)._value
        order = jnp.argsort(keys, axis=0)[:num_zeros]  # a random permutation per column
        n = n.at[order, jnp.arange(cols)[None, :]].set(0)
    return _fill(tensor, _wrap(n))


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    """``fan_in`` or ``fan_out`` of a weight (PyTorch's private helper some libraries call)."""
    return _fan(tensor, mode)


#: draws for up to this many elements are made in a bucket (see :func:`_draw`); larger
#: tensors draw their own size (a compile is small next to drawing 4M+ numbers)
BUCKET_MAX = 1 << 22
#: the smallest bucket: the biases, norm weights and small matrices of a model share it (a
#: draw of 2**16 costs ~0.4 ms more than one of 100 on CPU; a bucket's compile ~0.2 s)
BUCKET_MIN = 1 << 16


#: where the kept values are copied out of the bucket through host memory (free on CPU; an
#: accelerator slices on the device instead)
HOST_PREFIX_PLATFORMS = ("cpu",)


def _bucket(n: int) -> int:
    """The flat size a draw of ``n`` elements is made in: the next power of two (at least
    :data:`BUCKET_MIN`)."""
    return max(BUCKET_MIN, 1 << (n - 1).bit_length())


def _draw(tensor: Tensor, draw: Any, generator: Any, transform: Any) -> Tensor:
    """``transform(draw(...))`` for ``tensor``'s elements, in its shape.

    Why buckets: a model's initialisation draws once per parameter, and each new shape
    compiled its own random-number program (0.15-0.2 s for threefry on CPU) and its own
    ``transform`` ops, 2-3 s of a GPT's or ResNet's cold construction before its first step.
    Here the draw and ``transform`` run on a flat buffer of :func:`_bucket` size, shared by
    every shape of that bucket, and the first ``numel`` values are kept: the same numbers as
    drawing the shape itself, since JAX's partitionable threefry (its default) makes element
    ``i`` of a draw depend only on the key and ``i``. With that switched off, on the meta
    device, under a trace, in lazy mode and for tensors over :data:`BUCKET_MAX` elements,
    the shape is drawn as is."""
    shape = tuple(tensor.shape)
    n = math.prod(shape)
    dtype, device = _draw_dtype(tensor), _on(tensor)
    if (n == 0 or n > BUCKET_MAX or device is not None or isinstance(tensor._meta, Tracer)
            or is_lazy() or not jax.config.jax_threefry_partitionable):
        return transform(draw(*shape, generator=generator, dtype=dtype, device=device))
    flat = transform(draw(_bucket(n), generator=generator, dtype=dtype))
    value = flat._value
    dev = None if isinstance(value, Tracer) else next(iter(value.devices()))
    if dev is not None and dev.platform in HOST_PREFIX_PLATFORMS:
        # copied out through host memory: nothing compiles (placed as the draw was, on the
        # default device and not committed to it)
        return _wrap(jax.device_put(np.array(np.asarray(value)[:n]).reshape(shape)))
    return flat[:n].reshape(shape)  # (a slice and a reshape compiled per shape)


def _on(tensor: Tensor) -> Any:
    """Where an initializer draws: on the meta device for a meta tensor (nothing is drawn:
    the generator's state stays as PyTorch leaves it), else the default device."""
    return "meta" if tensor.is_meta else None


def _draw_dtype(tensor: Tensor) -> Any:
    return tensor.dtype if tensor.is_floating_point() else _dt.get_default_dtype()


def _reset_affine(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's default for Linear and Conv layers: ``kaiming_uniform_(a=sqrt(5))`` on the
    weight, ``uniform(-1/sqrt(fan_in), 1/sqrt(fan_in))`` on the bias."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)


# -- PyTorch's deprecated names without the trailing underscore -------------------------------

def _make_deprecate(meth: Any) -> Any:
    """``nn.init.<name>``: warns (``FutureWarning``, as PyTorch) and calls ``<name>_``."""
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = (f"{old_name}(...): deprecated in favor of "
                               f":func:`jflow.nn.init.{new_name}`, which it calls.")
    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
