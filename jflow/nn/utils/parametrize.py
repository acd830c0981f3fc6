"""``flow.nn.utils.parametrize``: a module tensor computed from other tensors on every read,
as ``torch.nn.utils.parametrize`` (weight norm, constrained weights such as symmetric or
orthogonal matrices).

:func:`register_parametrization` moves the parameter (or buffer) ``name`` of a module into
``module.parametrizations[name]``, a :class:`ParametrizationList` that holds the original
tensor(s) (``original``, or ``original0``, ``original1``... when the parametrization's
``right_inverse`` returns several) and the parametrizations in order. The module's class is
replaced by a subclass of its own (``Parametrized<Class>``, one per module) with a property
``name``: reading it runs the list, assigning it runs the ``right_inverse`` chain into the
originals. The state-dict keys are therefore PyTorch's
(``parametrizations.weight.original0``), and checkpoints move between the two libraries.

Eager, ``flow.jit`` and ``nn.Graph`` all read the property inside the step, so the
parametrization is part of the traced computation and its gradient reaches the originals.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ...autograd import no_grad
from ...tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization",
           "remove_parametrizations", "transfer_parametrizations_and_params",
           "type_before_parametrizations"]

_cache_depth = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Inside the block, each parametrized tensor is computed once at its first read and
    reused (PyTorch's ``parametrize.cached()``: one weight for a recurrent step's many
    reads); the values are dropped when the outermost block ends."""
    global _cache_depth
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache.clear()


def _register_tensor(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_in_place(dest: Tensor, src: Tensor) -> None:
    """``dest`` takes ``src``'s value (and shape) and stays the same object, so an optimizer
    that holds it keeps working (PyTorch's ``set_``)."""
    with no_grad():
        dest.data = src.detach()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in order, and its original tensor(s).

    ``original`` (or ``original0``...) holds what the first parametrization's
    ``right_inverse`` made of the module's tensor when the list was created (the tensor
    itself without one, or when it raises ``NotImplementedError``: PyTorch's rule);
    calling the list computes the parametrized tensor."""

    def __init__(self, modules: Sequence[Module], original: Tensor,
                 unsafe: bool = False) -> None:
        if not modules:
            raise ValueError("ParametrizationList requires one or more modules")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = tuple(original.shape), original.dtype
        with no_grad():
            new: Any = original
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    try:
                        new = m.right_inverse(new)
                    except NotImplementedError:
                        pass   # no inverse for this one: the identity, as PyTorch
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError(f"register_parametrization(): 'right_inverse' must return a Tensor "
                             f"or a sequence of tensors, got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new.dtype != original.dtype:
                raise ValueError(f"register_parametrization(): when 'right_inverse' returns "
                                 f"one tensor it must keep the dtype {original.dtype}, got "
                                 f"{new.dtype}")
            _set_in_place(original, new)
            _register_tensor(self, "original", original)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, Tensor):
                    raise ValueError(f"register_parametrization(): 'right_inverse' must return "
                                     f"tensors, element {i} is a {type(t).__name__}")
                t = t.detach()
                if isinstance(original, Parameter):
                    t = Parameter(t, original.requires_grad)
                t.requires_grad_(original.requires_grad)
                _register_tensor(self, f"original{i}", t)
        if not unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"register_parametrization(): a parametrization must return a "
                                 f"Tensor, got {type(z).__name__}")
            if z.dtype != dtype or tuple(z.shape) != shape:
                raise ValueError(f"register_parametrization(): the parametrization changes the "
                                 f"tensor from {dtype} {shape} to {z.dtype} {tuple(z.shape)}; "
                                 f"pass unsafe=True to allow it")

    def originals(self) -> tuple[Tensor, ...]:
        if self.is_tensor:
            return (self.original,)
        return tuple(getattr(self, f"original{i}") for i in range(self.ntensors))

    def right_inverse(self, value: Tensor) -> None:
        """Assignment to the parametrized tensor: ``value`` through each parametrization's
        ``right_inverse`` (last first), stored in the originals in place."""
        with no_grad():
            for m in reversed(list(self)):
                if not hasattr(m, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement "
                                       f"right_inverse, so the tensor cannot be assigned")
                value = m.right_inverse(value)
            targets = self.originals()
            values = (value,) if self.is_tensor else value
            if not self.is_tensor and (not isinstance(value, Sequence)
                                       or len(value) != self.ntensors):
                raise ValueError(f"'right_inverse' must return a sequence of "
                                 f"{self.ntensors} tensors, got {value!r:.80}")
            for i, (dest, src) in enumerate(zip(targets, values)):
                if not isinstance(src, Tensor) or src.dtype != dest.dtype:
                    got = src.dtype if isinstance(src, Tensor) else type(src).__name__
                    raise ValueError(f"'right_inverse' must return a {dest.dtype} tensor for "
                                     f"original{'' if self.is_tensor else i}, got {got}")
                _set_in_place(dest, src)

    def forward(self) -> Tensor:
        mods = list(self)
        x = mods[0](*self.originals())
        for m in mods[1:]:
            x = m(x)
        return x


def _deepcopy(self: Module, memo: dict) -> Module:
    if id(self) in memo:
        return memo[id(self)]
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__.update(copy.deepcopy(self.__dict__, memo))
    return replica


def _getstate(self: Module) -> Any:
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict() (a parametrized module's class is made at run time)")


def _inject_class(module: Module) -> None:
    cls = module.__class__
    attrs: dict[str, Any] = {"__getstate__": _getstate}
    if not hasattr(cls, "__deepcopy__"):
        attrs["__deepcopy__"] = _deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), attrs)


def _inject_property(module: Module, name: str) -> None:
    def get(self: Module) -> Tensor:
        plist = self.parametrizations[name]
        if not _cache_depth:
            return plist()
        key = (id(self), name)
        out = _cache.get(key)
        if out is None:
            out = _cache[key] = plist()
        return out

    def put(self: Module, value: Tensor) -> None:
        self.parametrizations[name].right_inverse(value)

    setattr(module.__class__, name, property(get, put))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, when given)."""
    plists = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(plists, ModuleDict):
        return False
    return len(plists) > 0 if tensor_name is None else tensor_name in plists


def type_before_parametrizations(module: Module) -> type:
    """The module's class before :func:`register_parametrization` replaced it."""
    cls = type(module)
    return cls.__bases__[0] if is_parametrized(module) else cls


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` applied to its
    original value (see the module docstring). A second call on the same name chains the
    new parametrization after the first. ``unsafe=True`` skips the check that the
    parametrization keeps the tensor's shape and dtype. Returns ``module``."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            z = getattr(module, tensor_name)
            y = parametrization(z)
            if not isinstance(y, Tensor) or y.dtype != z.dtype or y.shape != z.shape:
                raise ValueError(f"register_parametrization(): the new parametrization of "
                                 f"'{tensor_name}' must keep its dtype {z.dtype} and shape "
                                 f"{tuple(z.shape)}; pass unsafe=True to allow it")
        plist.append(parametrization)
        plist.unsafe = plist.unsafe or unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"register_parametrization(): module {type(module).__name__} has no "
                         f"parameter, buffer or parametrized tensor named '{tensor_name}'")
    original = getattr(module, tensor_name)
    if original is None:
        raise ValueError(f"register_parametrization(): '{tensor_name}' of "
                         f"{type(module).__name__} is None")
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _inject_class(module)
        module.parametrizations = ModuleDict()
    _inject_property(module, tensor_name)
    module.parametrizations[tensor_name] = plist
    return module


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo :func:`register_parametrization` for ``tensor_name``: the tensor becomes a plain
    parameter (or buffer) again, holding its current parametrized value
    (``leave_parametrized=True``) or the original one. A single original keeps its
    identity (an optimizer that holds it keeps working). Returns ``module``."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"remove_parametrizations(): module {type(module).__name__} has no "
                         f"parametrization on '{tensor_name}'")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
            _set_in_place(original, t)
    elif leave_parametrized:
        t = getattr(module, tensor_name)
        original = Parameter(t.detach()) if t.requires_grad else t.detach()
    else:
        raise ValueError("remove_parametrizations(): leave_parametrized=False needs a "
                         "parametrization of one original tensor; this one has "
                         f"{plist.ntensors}")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_tensor(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register ``from_module``'s parametrizations (all, or ``tensor_name``'s) on
    ``to_module`` and make its originals the very same parameters (shared, as PyTorch's
    helper does); a module without parametrizations transfers nothing."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not is_parametrized(from_module, name):
            raise ValueError(f"transfer_parametrizations_and_params(): "
                             f"{type(from_module).__name__} has no parametrization on '{name}'")
        src = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for p in src:
            register_parametrization(to_module, name, p)
        dest = to_module.parametrizations[name]
        names_i = ["original"] if src.is_tensor else [f"original{i}" for i in range(src.ntensors)]
        for n in names_i:
            setattr(dest, n, getattr(src, n))
    return to_module
