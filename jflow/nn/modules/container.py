"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``,
``ParameterDict``."""

from __future__ import annotations

import operator
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ...tensor import Tensor
from ..parameter import Parameter
from .module import Module

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Container"]


def _index(i: Any, n: int, what: str) -> int:
    i = int(i)
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of range for {what} of length {n}")
    return i % n


class Sequential(Module):
    """Modules applied in order: ``Sequential(Linear(4, 8), ReLU(), Linear(8, 2))`` or
    ``Sequential(OrderedDict(fc=Linear(4, 8), act=ReLU()))``."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input: Any) -> Any:
        """``input`` passed through each module in order; the last one's output."""
        for m in self._modules.values():
            input = m(input)
        return input

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        keys = list(self._modules)
        return self._modules[keys[_index(idx, len(keys), "Sequential")]]

    def __setitem__(self, idx: int, module: Module) -> None:
        keys = list(self._modules)
        setattr(self, keys[_index(idx, len(keys), "Sequential")], module)

    def __delitem__(self, idx: Any) -> None:
        keys = list(self._modules)
        sel = keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys), "Sequential")]]
        for k in sel:
            del self._modules[k]

    def append(self, module: Module) -> Sequential:
        """Adds ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self


_CONTAINER_DEPRECATED = ("`nn.Container` is deprecated. All of its functionality is now "
                         "implemented in `nn.Module`. Subclass that instead.")


class Container(Module):
    """PyTorch's deprecated container: ``Container(name=module, ...)`` registers each keyword
    as a submodule (subclass ``Module`` instead). Making one, or a subclass, warns as
    PyTorch's (``FutureWarning``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        warnings.warn(_CONTAINER_DEPRECATED, FutureWarning, stacklevel=2)
        super().__init_subclass__(**kwargs)

    def __init__(self, **kwargs: Any) -> None:
        if type(self) is Container:
            warnings.warn(_CONTAINER_DEPRECATED, FutureWarning, stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


class ModuleList(Module):
    """A list of modules, registered as submodules ``"0"``, ``"1"``, ..."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, idx: Any) -> Any:
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(mods[idx])
        return mods[_index(idx, len(mods), "ModuleList")]

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx: Any) -> None:
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            del mods[idx]
        else:
            del mods[_index(idx, len(mods), "ModuleList")]
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def append(self, module: Module) -> ModuleList:
        """Adds ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Appends every module of an iterable; returns self."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Inserts ``module`` before ``index``; later modules are renumbered."""
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)


class ModuleDict(Module):
    """An ordered dict of named submodules."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None
                 = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Any:
        """The keys, in insertion order."""
        return self._modules.keys()

    def items(self) -> Any:
        """The ``(key, module)`` pairs, in insertion order."""
        return self._modules.items()

    def values(self) -> Any:
        """The modules, in insertion order."""
        return self._modules.values()

    def pop(self, key: str) -> Module:
        """Removes the module under ``key`` and returns it."""
        m = self._modules[key]
        del self._modules[key]
        return m

    def clear(self) -> None:
        """Removes every module."""
        self._modules.clear()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Adds or overwrites modules from a mapping or an iterable of ``(key, module)`` pairs."""
        items = modules.items() if isinstance(modules, Mapping) else modules
        for k, m in items:
            self.add_module(k, m)


def _as_parameter(value: Any) -> Any:
    """A plain tensor put in a parameter container becomes a ``Parameter`` (as PyTorch); a
    ``Parameter`` stays the same object (optimizers holding it keep working) and any other
    object is stored as a plain attribute, not state."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _param_line(key: Any, p: Any) -> str:
    """One line of ``ParameterList``/``ParameterDict``'s repr, in PyTorch's words."""
    if isinstance(p, Tensor):
        size = "x".join(str(s) for s in p.shape)
        dev = p.device
        dev_str = f" ({dev})" if getattr(dev, "type", "cpu") != "cpu" else ""
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        return f"  ({key}): {kind} containing: [{p.dtype} of size {size}{dev_str}]"
    return f"  ({key}): Object of type: {type(p).__name__}"


class ParameterList(Module):
    """A list of parameters registered as ``"0"``, ``"1"``, ... (PyTorch's names, so a
    PyTorch ``state_dict`` loads). Tensors put in it become ``Parameter``s; other objects
    are kept as plain attributes, as PyTorch does. PyTorch's API: indexing (negative too),
    slicing (a new ``ParameterList`` holding the same parameters), ``append``, ``extend``,
    ``+=`` and item assignment; jflow adds ``insert`` (renumbering, as ``ModuleList``)."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _slot(self, idx: Any) -> str:
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return str(idx + len(self) if idx < 0 else idx)

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, self._slot(idx))

    def __setitem__(self, idx: Any, param: Any) -> None:
        setattr(self, self._slot(idx), _as_parameter(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter([self[i] for i in range(len(self))])

    def __iadd__(self, parameters: Iterable[Any]) -> ParameterList:
        return self.extend(parameters)

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value: Any) -> ParameterList:
        """Add ``value`` at the end (a tensor becomes a ``Parameter``)."""
        new_idx = len(self)
        self._size += 1
        self[new_idx] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Append every item of an iterable (a tensor is refused: iterating it would append
        its rows, which is never what was meant; PyTorch refuses it too)."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def insert(self, index: int, value: Any) -> None:
        """Insert before ``index`` (Python list semantics); later items are renumbered, so
        their ``state_dict`` keys shift (not in PyTorch's ``ParameterList``)."""
        items = list(self)
        items.insert(operator.index(index), _as_parameter(value))
        for i in range(len(self)):
            delattr(self, str(i))
        self._size = 0
        for v in items:
            self.append(v)

    def extra_repr(self) -> str:
        return "\n".join(_param_line(k, p) for k, p in enumerate(self))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters registered under their keys (PyTorch's names and
    API: ``keys``/``items``/``values``, ``update`` (a plain ``dict`` is merged in sorted key
    order, an ``OrderedDict``/``ParameterDict``/pair list in its own order, as PyTorch),
    ``pop``/``popitem``/``get``/``setdefault``/``clear``/``copy``/``fromkeys`` and ``|``).
    Tensors become ``Parameter``s; other objects are kept as plain attributes."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def _attr_of(self, key: Any) -> str:
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not "
                            f"a string (type is '{type(key).__name__}'). Open an issue on "
                            "github if you need non-string keys.")
        return key

    def __getitem__(self, key: str) -> Any:
        attr = self._attr_of(key)
        if attr not in self._keys:
            raise KeyError(key)
        return getattr(self, attr)

    def __setitem__(self, key: str, value: Any) -> None:
        attr = self._attr_of(key)
        setattr(self, attr, _as_parameter(value))
        self._keys[key] = None   # after setattr: a refused name leaves no phantom key

    def __delitem__(self, key: str) -> None:
        attr = self._attr_of(key)
        del self._keys[key]
        delattr(self, attr)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        """A new ``ParameterDict`` holding the same parameters (not copies of them)."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, first setting it to ``default`` if absent."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Removes every entry."""
        for k in list(self._keys):
            del self[k]

    def pop(self, key: str) -> Any:
        """Removes the entry under ``key`` and returns its value."""
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple[str, Any]:
        """Remove and return the last inserted ``(key, value)``."""
        if not self._keys:
            raise KeyError("popitem(): ParameterDict is empty")
        k = next(reversed(self._keys))
        return k, self.pop(k)

    def get(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, or ``default`` if absent."""
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        """A new ``ParameterDict`` mapping each of ``keys`` to ``default``."""
        return ParameterDict((k, default) for k in keys)

    def keys(self) -> Any:
        """The keys, in insertion order."""
        return self._keys.keys()

    def items(self) -> Iterator[tuple[str, Any]]:
        """The ``(key, value)`` pairs, in insertion order."""
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterator[Any]:
        """The values, in insertion order."""
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        """Add or overwrite entries from a mapping or an iterable of ``(key, value)`` pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of "
                            "key/value pairs, but got " + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, value in parameters.items():
                self[key] = value
        elif isinstance(parameters, Mapping):
            for key, value in sorted(parameters.items()):
                self[key] = value
        else:
            for j, p in enumerate(parameters):
                if not isinstance(p, Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be "
                                    f"Iterable; is {type(p).__name__}")
                p = tuple(p)
                if len(p) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length "
                                     f"{len(p)}; 2 is required")
                self[p[0]] = p[1]

    def extra_repr(self) -> str:
        return "\n".join(_param_line(k, p) for k, p in self.items())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: ParameterDict) -> ParameterDict:
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self
