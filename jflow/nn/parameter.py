"""``nn.Parameter``: a :class:`~jflow.Tensor` that a :class:`~jflow.nn.Module` registers.

``Parameter`` is a real ``Tensor`` subclass (no extra slots), so every op, operator and
method accepts it, ``isinstance(p, flow.Tensor)`` holds, and it is a JAX pytree like a
``Tensor``: flattening gives its value, unflattening gives a ``Parameter`` back.
"""

from __future__ import annotations

import copy
import weakref
from typing import Any

import jax

from ..creation import empty
from ..lazy_values import register_lazy_class
from ..tensor import Tensor, _flatten, _start, _wrap, new_tensor

__all__ = ["Parameter", "Buffer", "is_parameter", "UninitializedParameter", "UninitializedBuffer",
           "UninitializedTensorMixin", "is_lazy"]



def _adopt(t: Tensor, data: Tensor | None, fname: str) -> None:
    """``t`` takes ``data``'s value (no copy) as a fresh leaf: no grad, no history."""
    if data is None:
        data = empty(0)
    if not isinstance(data, Tensor):
        raise TypeError(f"{fname}(): data must be a Tensor, got {type(data).__name__}")
    _start(t, data._value)
    t._global = data._global


class Parameter(Tensor):
    """A leaf tensor that is a module parameter: ``nn.Parameter(flow.randn(3, 4))``.

    It shares the value (and placement/SBP) of ``data`` (an immutable array, so nothing is
    copied) and requires grad unless ``requires_grad=False``. Ops on a parameter give plain
    tensors; in-place updates (under ``flow.no_grad()``) keep the same ``Parameter`` object.
    ``p.data`` is a detached view (``p.data.mul_(0.9)`` updates ``p``, untracked).
    """

    # no __slots__: a parameter takes attributes of its own (``p._is_hf_initialized = True``,
    # ``p.sequence_parallel``), as PyTorch's does; pickling and deepcopy of a tensor subclass
    # keep its ``__dict__`` (tensor.py)

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        _adopt(self, data, "nn.Parameter")
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        out = Parameter(self.detach(), requires_grad=self._requires_grad)
        if self.grad is not None:
            out.grad = copy.deepcopy(self.grad, memo)
        memo[id(self)] = out
        return out


def _unflatten_parameter(aux: Any, children: Any) -> Parameter:
    p = new_tensor(Parameter, children[0])
    if aux.__class__ is tuple:
        p._requires_grad, p._global = aux
    else:
        p._requires_grad, p._global = aux, None
    return p


jax.tree_util.register_pytree_node(Parameter, _flatten, _unflatten_parameter)
# (lazy mode: an optimizer's in-place update of a parameter records; the parameter is pending
# until read, and stays an ``nn.Parameter`` throughout)
register_lazy_class(Parameter, _unflatten_parameter)


class Buffer(Tensor):
    """A tensor to register as a buffer by attribute assignment (PyTorch >= 2.5):
    ``self.running = nn.Buffer(flow.zeros(3), persistent=False)`` is
    ``self.register_buffer("running", flow.zeros(3), persistent=False)``.

    Only a marker: the module stores a plain ``Tensor`` with the same value (ops, compiled
    steps and checkpoints never see a ``Buffer``), as PyTorch's ``Buffer`` is a plain tensor
    with a flag. Like PyTorch, the data is detached and keeps its ``requires_grad``.
    """

    __slots__ = ("persistent",)

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        _adopt(self, data, "nn.Buffer")
        self.persistent = bool(persistent)
        if data.requires_grad:
            self.requires_grad_(True)

    def _as_tensor(self) -> Tensor:
        """The plain tensor a module stores for this buffer."""
        t = _wrap(self._value)
        t._global = self._global
        t._requires_grad = self._requires_grad
        return t


def is_parameter(x: object) -> bool:
    """Whether ``x`` is a ``Parameter``."""
    return isinstance(x, Parameter)


# -- lazy modules' parameters and buffers ------------------------------------------------------

_USE_MESSAGE = ("Attempted to use an uninitialized parameter. This error happens when you are "
                "using a `LazyModule` or explicitly manipulating `torch.nn.parameter.{}` "
                "objects. When using LazyModules Call `forward` with a dummy batch to "
                "initialize the parameters before calling torch functions")


def _raw_tensor(t: Tensor) -> Tensor:
    """A plain tensor holding ``t``'s (empty) value: what the allowed methods work on."""
    return _wrap(t._meta)


class UninitializedTensorMixin:
    """A parameter or buffer whose shape is not known yet (a lazy module's, until its first
    call): PyTorch's. It holds an empty value of its dtype and device; ``materialize(shape)``
    gives it a value of that shape (zeros: jflow has no uninitialised memory) and turns it
    into the class it stands for (``cls_to_become``), the same object — so modules and
    optimizers holding it keep it.

    Until then, reading ``shape`` raises PyTorch's ``RuntimeError``, and any op on it raises
    PyTorch's ``ValueError`` ("Attempted to use an uninitialized parameter ..."; jflow cannot
    name the op), except what PyTorch allows: ``size()``, ``dtype``, ``device``,
    ``is_floating_point``, ``is_complex``, ``requires_grad``, and the conversions ``to``,
    ``float``, ``double``, ``half``, ``cpu``, ``cuda`` (which keep it uninitialized when a
    module applies them: ``module.double()`` before the first call)."""

    __slots__ = ()
    cls_to_become: type = Tensor

    @property
    def _value(self) -> Any:
        raise ValueError(_USE_MESSAGE.format(type(self).__name__))

    @_value.setter
    def _value(self, value: Any) -> None:
        self._meta = value

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Give this tensor a value of ``shape`` (zeros, of its dtype and device unless given)
        and make it a ``cls_to_become`` (``Parameter`` / ``Tensor``) in place."""
        raw = _raw_tensor(self)
        out = empty(*shape, dtype=raw.dtype if dtype is None else dtype,
                    device=raw.device if device is None else device)
        self._meta = out._meta
        self._version += 1
        self.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error "
            "usually happens in `load_state_dict` when trying to load an uninitialized "
            "parameter into an initialized one. Call `forward` to initialize the parameters "
            "before accessing their attributes.")

    def share_memory_(self) -> Any:
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call "
                           "`forward` to initialize the parameters before calling "
                           "`module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (type(self), (self._requires_grad,))

    # (the methods PyTorch lets through, on the empty value)
    def size(self, dim: int | None = None) -> Any:
        return _raw_tensor(self).size(dim)

    @property
    def dtype(self) -> Any:
        return _raw_tensor(self).dtype

    @property
    def device(self) -> Any:
        return _raw_tensor(self).device

    @property
    def is_meta(self) -> bool:
        return _raw_tensor(self).is_meta

    def is_floating_point(self) -> bool:
        return _raw_tensor(self).is_floating_point()

    def is_complex(self) -> bool:
        return _raw_tensor(self).is_complex()

    def get_device(self) -> int:
        return _raw_tensor(self).get_device()

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        return _raw_tensor(self).to(*args, **kwargs)

    def float(self) -> Tensor:
        return _raw_tensor(self).float()

    def double(self) -> Tensor:
        return _raw_tensor(self).double()

    def half(self) -> Tensor:
        return _raw_tensor(self).half()

    def cpu(self) -> Tensor:
        return _raw_tensor(self).cpu()

    def cuda(self, *args: Any, **kwargs: Any) -> Tensor:
        return _raw_tensor(self).cuda(*args, **kwargs)

    def __hash__(self) -> int:
        return id(self)


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an ``UninitializedParameter`` or ``UninitializedBuffer``."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (PyTorch's): see
    :class:`UninitializedTensorMixin`. ``materialize`` makes it a ``Parameter``."""

    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        _start(self, empty(0, dtype=dtype, device=device)._meta)
        if requires_grad:
            self._requires_grad = True

    def __deepcopy__(self, memo: dict) -> UninitializedParameter:
        if id(self) in memo:
            return memo[id(self)]
        raw = _raw_tensor(self)
        out = type(self)(self._requires_grad, raw.device, raw.dtype)
        memo[id(self)] = out
        return out


#: ``persistent`` of each UninitializedBuffer, by id (its class must keep Tensor's layout, no
#: ``__dict__``, so that ``materialize`` can make it a plain Tensor in place)
_PERSISTENT: dict[int, bool] = {}


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (PyTorch's): see
    :class:`UninitializedTensorMixin`. ``materialize`` makes it a plain ``Tensor``."""

    __slots__ = ()
    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                 persistent: bool = True) -> None:
        _start(self, empty(0, dtype=dtype, device=device)._meta)
        self._requires_grad = bool(requires_grad)
        _PERSISTENT[id(self)] = bool(persistent)
        weakref.finalize(self, _PERSISTENT.pop, id(self), None)

    @property
    def persistent(self) -> bool:
        return _PERSISTENT.get(id(self), True)

    def __deepcopy__(self, memo: dict) -> UninitializedBuffer:
        if id(self) in memo:
            return memo[id(self)]
        raw = _raw_tensor(self)
        out = type(self)(self._requires_grad, raw.device, raw.dtype, self.persistent)
        memo[id(self)] = out
        return out
