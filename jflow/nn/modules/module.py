"""``nn.Module``: parameters, buffers and submodules registered by attribute assignment."""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from ... import dtypes as _dt
from ...autograd import is_grad_enabled, no_grad
from ...autograd.function import Function, FunctionCtx
from ...creation import as_tensor, empty_like, zero_grads
from ...tensor import Tensor
from ...views import unview  # a buffer owns its values (compiled steps carry it as state)
from ..parameter import Buffer, Parameter, UninitializedBuffer, is_lazy

__all__ = ["Module"]


class _IncompatibleKeys(NamedTuple):
    """What ``load_state_dict(strict=False)`` returns."""

    missing_keys: list[str]
    unexpected_keys: list[str]


class _RemovableHandle:
    def __init__(self, hooks: dict, key: int) -> None:
        self._hooks, self._key = hooks, key

    def remove(self) -> None:
        self._hooks.pop(self._key, None)


_hook_ids = iter(range(1 << 62))


_structure_version = 0


def structure_version() -> int:
    """A counter bumped whenever any module gains or loses a parameter, buffer or submodule,
    or changes its training mode (compiled steps cache the list of state tensors under it,
    and reuse their last cache key while it holds)."""
    return _structure_version


def _bump_structure() -> None:
    global _structure_version
    _structure_version += 1


class _Store(OrderedDict):
    """A module's ``_parameters`` / ``_buffers`` / ``_modules``: an ordered dict that bumps
    :func:`structure_version` on every change, however it is made."""

    _bump = staticmethod(_bump_structure)

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        self._bump()

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self._bump()

    def pop(self, *args: Any) -> Any:
        self._bump()
        return super().pop(*args)

    def popitem(self, last: bool = True) -> Any:
        self._bump()
        return super().popitem(last)

    def clear(self) -> None:
        self._bump()
        super().clear()

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._bump()
        super().update(*args, **kwargs)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self._bump()
        return super().setdefault(key, default)


#: the state-dict key suffix PyTorch gives a module's ``get_extra_state()``; jflow's modules have
#: no extra state, so no jflow state dict has this key (libraries compare keys against it)
_EXTRA_STATE_KEY_SUFFIX = "_extra_state"

#: ``[False, assign...]``: the last is the innermost running ``load_state_dict``'s ``assign``
#: (read by ``_load_from_state_dict``, whose signature subclasses override)
_ASSIGN: list[bool] = [False]


class Module:
    """Base class of every layer and model, as ``torch.nn.Module`` / ``oneflow.nn.Module``.

    Assigning a :class:`Parameter` registers a parameter, a ``Module`` a submodule;
    :meth:`register_buffer` registers a buffer (a tensor that is state but not trained).
    Subclasses implement :meth:`forward`; calling the module runs it (with hooks).
    """

    #: the state-dict format version, written to ``state_dict()._metadata`` as PyTorch does
    #: (a subclass that changes its keys raises it; its ``_load_from_state_dict`` reads it)
    _version: int = 1
    training: bool
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Tensor | None]
    _modules: dict[str, Module | None]

    def __init__(self) -> None:
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = _Store()
        d["_buffers"] = _Store()
        d["_non_persistent_buffers"] = set()
        d["_modules"] = _Store()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()

    @property
    def _non_persistent_buffers_set(self) -> set[str]:
        """PyTorch's name for the set of non-persistent buffer names (the same set object)."""
        return self._non_persistent_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation of a call; subclasses define it (``module(x)`` runs hooks around it)."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__
        # (a missing store, a module whose __init__ did not run, takes the hooked path,
        # which raises the AttributeError)
        if not (d.get("_forward_pre_hooks", 1) or d.get("_forward_hooks", 1)
                or d.get("_backward_hooks") or d.get("_backward_pre_hooks")):
            return self.forward(*args, **kwargs)  # (no hooks: the common call, no tuples)
        return self._call_hooked(args, kwargs)

    def _call_hooked(self, args: tuple, kwargs: dict) -> Any:
        for hook in tuple(self._forward_pre_hooks.values()):
            res = hook(self, args)
            if res is not None:
                args = res if isinstance(res, tuple) else (res,)
        bw = None
        if (self.__dict__.get("_backward_hooks") or self.__dict__.get("_backward_pre_hooks")) \
                and is_grad_enabled():
            bw = _BackwardHookState(self)
            args = bw.setup_input(args)
        out = self.forward(*args, **kwargs)
        for hook in tuple(self._forward_hooks.values()):
            res = hook(self, args, out)
            if res is not None:
                out = res
        if bw is not None:
            out = bw.setup_output(out)
        return out

    def register_forward_hook(self, hook: Callable) -> _RemovableHandle:
        """``hook(module, args, output) -> output or None`` runs after ``forward``."""
        k = next(_hook_ids)
        self._forward_hooks[k] = hook
        return _RemovableHandle(self._forward_hooks, k)

    def register_forward_pre_hook(self, hook: Callable) -> _RemovableHandle:
        """``hook(module, args) -> args or None`` runs before ``forward``."""
        k = next(_hook_ids)
        self._forward_pre_hooks[k] = hook
        return _RemovableHandle(self._forward_pre_hooks, k)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> _RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` runs before this module's entries are loaded; it may
        edit the state dict (a copy of the caller's), as PyTorch's."""
        return self._add_hook("_load_state_dict_pre_hooks", functools.partial(hook, self),
                              False)

    def _register_load_state_dict_pre_hook(self, hook: Callable,
                                           with_module: bool = False) -> _RemovableHandle:
        """PyTorch's private form (libraries call it): ``hook(state_dict, prefix, ...)``, or
        with the module first when ``with_module``."""
        return self._add_hook("_load_state_dict_pre_hooks",
                              functools.partial(hook, self) if with_module else hook, False)

    def _add_hook(self, store: str, hook: Callable, prepend: bool) -> _RemovableHandle:
        hooks = self.__dict__.setdefault(store, OrderedDict())
        k = next(_hook_ids)
        hooks[k] = hook
        if prepend:
            hooks.move_to_end(k, last=False)
        return _RemovableHandle(hooks, k)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False
                                    ) -> _RemovableHandle:
        """``hook(module, grad_input, grad_output) -> new grad_input or None``, run when the
        gradients with respect to the module's positional tensor inputs are computed (as
        PyTorch: ``grad_input`` has one entry per tensor argument, ``None`` where it needs no
        gradient; if no input needs one, the hook runs once the output gradients are known,
        with all-``None`` ``grad_input``). Done with identity tape ``Function``s around the
        inputs and outputs (``_BackwardHookState``), as PyTorch's ``BackwardHook``."""
        return self._add_hook("_backward_hooks", hook, prepend)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False
                                        ) -> _RemovableHandle:
        """``hook(module, grad_output) -> new grad_output or None``, run when the gradients
        with respect to the module's outputs are known, before the module's backward."""
        return self._add_hook("_backward_pre_hooks", hook, prepend)

    # -- registration ---------------------------------------------------------------------
    def _check_name(self, name: Any, kind: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if name == "" or "." in name:
            raise KeyError(f'{kind} name can\'t be empty or contain ".", got {name!r}')

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or ``None``, a declared but absent parameter such as a bias)."""
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state saved in ``state_dict`` (unless ``persistent=False``) and moved
        by :meth:`to`, but not a parameter."""
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            f"(Tensor or None required)")
        if isinstance(tensor, Buffer):
            tensor = tensor._as_tensor()
        self._buffers[name] = None if tensor is None else unview(tensor)
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a submodule (``None`` allowed), as attribute assignment does."""
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._drop(name)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(nn.Parameter or None expected)")
            params[name] = None
            return
        if isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._drop(name)
            self._modules[name] = value
            return
        mods = d.get("_modules")
        if mods is not None and name in mods:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (nn.Module or None expected)")
            mods[name] = None
            return
        bufs = d.get("_buffers")
        if isinstance(value, UninitializedBuffer) and bufs is not None and name not in bufs:
            self.register_buffer(name, value, value.persistent)  # (a Buffer in PyTorch)
            return
        if isinstance(value, Buffer):
            if bufs is None:
                raise AttributeError("cannot assign buffers before Module.__init__() call")
            self.register_buffer(name, value._as_tensor(), value.persistent)
            return
        if bufs is not None and name in bufs:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(Tensor or None expected)")
            bufs[name] = None if value is None else unview(value)
            return
        if name == "training":
            _bump_structure()
        object.__setattr__(self, name, value)

    def _drop(self, name: str) -> None:
        self.__dict__.pop(name, None)
        for k in ("_parameters", "_buffers", "_modules"):
            self.__dict__[k].pop(name, None)
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for k in ("_parameters", "_buffers", "_modules"):
            store = d.get(k)
            if store is not None and name in store:
                return store[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for k in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[k]:
                del self.__dict__[k][name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    # -- traversal --------------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """``(qualified name, module)`` for this module and every descendant (each once)."""
        if memo is None:
            memo = set()
        if self in memo:   # modules, as PyTorch's memo (a caller may pass its own set)
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            sub = f"{prefix}.{name}" if prefix else name
            yield from m.named_modules(memo, sub, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """This module and every submodule (depth-first, each once)."""
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, child)`` for each direct submodule; a child registered twice appears once."""
        seen: set[Module] = set()
        for name, m in self._modules.items():
            if m is not None and m not in seen:
                seen.add(m)
                yield name, m

    def children(self) -> Iterator[Module]:
        """The direct submodules, each once."""
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Any]]:
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        seen: set[int] = set()
        for mp, m in mods:
            for k, v in getattr(m, store).items():
                if v is None:
                    continue
                if remove_duplicate:
                    if id(v) in seen:
                        continue
                    seen.add(id(v))
                yield (f"{mp}.{k}" if mp else k), v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(qualified name, parameter)``; a shared parameter appears once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module (and of its submodules if ``recurse``), each once."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """``(qualified name, buffer)`` pairs; a shared buffer appears once."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers of this module (and of its submodules if ``recurse``), each once."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``""`` is this module)."""
        m: Module = self
        if target == "":
            return m
        for part in target.split("."):
            sub = m._modules.get(part)
            if sub is None:
                raise AttributeError(f"{type(m).__name__} has no submodule '{part}' "
                                     f"(looking up '{target}')")
            m = sub
        return m

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Replace (or, unless ``strict``, add) the submodule at dotted path ``target``, as
        PyTorch: the parent must exist; an existing attribute there must be a module."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target`` (``AttributeError`` if there is none)."""
        mod, _, name = target.rpartition(".")
        m = self.get_submodule(mod)
        p = m._parameters.get(name)
        if p is None:
            raise AttributeError(f"{type(m).__name__} has no parameter '{name}'")
        return p

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target`` (PyTorch's errors: no such attribute, or an
        attribute that is not a buffer)."""
        mod, _, name = target.rpartition(".")
        m = self.get_submodule(mod)
        if not hasattr(m, name):
            raise AttributeError(f"{m._get_name()} has no attribute `{name}`")
        if name not in m._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return m._buffers[name]

    # -- modes, apply, grads ----------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (``Dropout``, ``BatchNorm`` behave differently) recursively."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            m.__dict__["training"] = mode
        _bump_structure()
        return self

    def eval(self) -> Module:
        """Sets evaluation mode (``train(False)``: e.g. dropout off); returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Sets ``requires_grad`` on every parameter; returns self (e.g. to freeze a model)."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn(module)`` on every submodule (children first) and on this module."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to ``None`` (default) or to zeros."""
        zero_grads(self.parameters(), set_to_none)

    # -- dtype / device ---------------------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        """Replace the value of every parameter, its grad and every buffer by ``fn`` of it;
        parameters stay the same objects (optimizers keep working)."""
        with no_grad():
            for m in self.modules():
                for _k, p in m._parameters.items():
                    if p is None:
                        continue
                    new = fn(p)
                    if new is not p:
                        p._value, p._global = new._value, new._global
                        p._version += 1
                    if p.grad is not None:
                        p.grad = fn(p.grad)
                for k, b in m._buffers.items():
                    if b is not None and is_lazy(b):  # (stays uninitialized: PyTorch's)
                        b._value = fn(b)._meta
                    elif b is not None:
                        m._buffers[k] = fn(b)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)``: floating parameters and
        buffers take ``dtype`` (integer ones keep theirs); all move to ``device``."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"Module.to() got unexpected keyword argument(s) {sorted(kwargs)}")
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
                continue
            try:
                dtype = _dt.as_dtype(a)
            except TypeError:
                device = a
        if dtype is not None:
            dtype = _dt.as_dtype(dtype)
            if not dtype.is_floating_point:
                raise TypeError(f"nn.Module.to only accepts floating point dtypes, got {dtype}")

        def convert(t: Tensor) -> Tensor:
            out = t
            if dtype is not None and t.is_floating_point():
                out = out.to(dtype)
            if device is not None:
                out = out.to(device)
            return out
        return self._apply(convert)

    def to_empty(self, *, device: Any, recurse: bool = True) -> Module:
        """Give every parameter and buffer new storage on ``device`` without copying values,
        as PyTorch's ``to_empty``: the way out of a model built on the meta device (jflow.meta),
        whose tensors have no values to copy. The new values are zeros (JAX arrays have no
        uninitialised memory), to be overwritten by loading or initialising; parameters stay
        the same objects. ``recurse=False``: this module's own tensors only."""
        if recurse:
            return self._apply(lambda t: empty_like(t, device=device))
        with no_grad():
            for _k, p in self._parameters.items():
                if p is not None:
                    p._value, p._global = empty_like(p, device=device)._value, None
                    p._version += 1
            for k, b in self._buffers.items():
                if b is not None:
                    self._buffers[k] = empty_like(b, device=device)
        return self

    def to_global(self, placement: Any = None, sbp: Any = None) -> Module:
        """Make every parameter and buffer global with ``placement`` and ``sbp`` (or re-box
        global ones), in place: parameters stay the same objects (as OneFlow)."""
        return self._apply(lambda t: t.to_global(placement, sbp))

    def float(self) -> Module:
        """Casts floating-point parameters and buffers to ``float32``, in place; returns self."""
        return self.to(_dt.float32)

    def double(self) -> Module:
        """Casts floating-point parameters and buffers to ``float64``, in place; returns self."""
        return self.to(_dt.float64)

    def half(self) -> Module:
        """Casts floating-point parameters and buffers to ``float16``, in place; returns self."""
        return self.to(_dt.float16)

    def bfloat16(self) -> Module:
        """Casts floating-point parameters and buffers to ``bfloat16``, in place; returns self."""
        return self.to(_dt.bfloat16)

    def cpu(self) -> Module:
        """Moves every parameter and buffer to the CPU, in place; returns self."""
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Module:
        """Moves every parameter and buffer to a CUDA device (``cuda:<device>``), in place;
        returns self. Without a GPU it raises, as ``Tensor.cuda`` does."""
        index = device.index if hasattr(device, "index") else device
        return self.to("cuda" if index is None else f"cuda:{int(index)}")

    # -- state dict -------------------------------------------------------------------------
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for k, p in self._parameters.items():
            if p is not None:
                destination[prefix + k] = p if keep_vars else p.detach()
        for k, b in self._buffers.items():
            if b is not None and k not in self._non_persistent_buffers:
                destination[prefix + k] = b if keep_vars else b.detach()

    def state_dict(self, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Tensor]:
        """An ``OrderedDict`` of qualified name → tensor for every parameter and persistent
        buffer (detached snapshots unless ``keep_vars=True``); its ``_metadata`` holds each
        module's ``{"version": _version}`` by qualified name, as PyTorch's does."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()  # type: ignore[attr-defined]
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:
            metadata[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing: list[str], unexpected: list[str],
                              errors: list[str]) -> None:
        """Copy this module's own entries of ``state_dict`` (keys ``prefix + name``) in:
        PyTorch's signature, so a library's override (reading ``local_metadata["version"]``
        to convert an older format, then calling this) works unchanged."""
        local = [(k, p) for k, p in self._parameters.items() if p is not None]
        local += [(k, b) for k, b in self._buffers.items()
                  if b is not None and k not in self._non_persistent_buffers]
        for k, t in local:
            key = prefix + k
            if key not in state_dict:
                missing.append(key)
                continue
            v = state_dict[key]
            if is_lazy(t):  # (a lazy module's: its load hook materialized it unless v is lazy)
                continue
            if not isinstance(v, Tensor):
                try:
                    v = as_tensor(v)
                except Exception:  # noqa: BLE001
                    errors.append(f"While copying the parameter named \"{key}\", expected a "
                                  f"Tensor, got {type(v).__name__}")
                    continue
            if tuple(v.shape) != tuple(t.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape "
                              f"{list(v.shape)} from checkpoint, the shape in current model "
                              f"is {list(t.shape)}.")
                continue
            try:
                if _ASSIGN[-1]:  # load_state_dict(assign=True): the checkpoint's tensor itself
                    self._assign(k, t, v)
                    continue
                if t.is_meta and not v.is_meta:
                    warnings.warn(f"for {key}: copying from a non-meta parameter in the "
                                  f"checkpoint to a meta parameter in the current model, which "
                                  f"is a no-op. (Did you mean to pass `assign=True` to assign "
                                  f"items in the state dictionary to their corresponding key in "
                                  f"the module instead of copying them in place?)", stacklevel=3)
                with no_grad():
                    t.copy_(v)
            except Exception as e:  # noqa: BLE001
                errors.append(f"While copying the parameter named \"{key}\", whose dimensions "
                              f"in the model are {list(t.shape)} and whose dimensions in the "
                              f"checkpoint are {list(v.shape)}, an exception occurred: {e}")

    def _assign(self, name: str, old: Tensor, new: Tensor) -> None:
        """``load_state_dict(assign=True)``: ``new`` replaces parameter or buffer ``name``
        (a parameter stays a ``Parameter`` with the old one's ``requires_grad``), as PyTorch."""
        if name in self._parameters:
            if not isinstance(new, Parameter):
                new = Parameter(new, requires_grad=old.requires_grad)
            else:
                new.requires_grad_(old.requires_grad)
            self._parameters[name] = new
        else:
            self._buffers[name] = new

    def load_state_dict(self, state_dict: dict, strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy ``state_dict``'s tensors into this module's parameters and buffers in place.

        With ``strict=True`` (default) missing and unexpected keys are an error; a shape
        mismatch is always an error. Returns ``(missing_keys, unexpected_keys)``.
        ``assign=True`` puts the state dict's tensors themselves in the module instead of
        copying into the existing ones, as PyTorch: how a model built on the meta device
        (jflow.meta), whose tensors cannot hold values, gets its weights.
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got "
                            f"{type(state_dict).__name__}.")
        _ASSIGN.append(bool(assign))
        try:
            return self._load_state_dict(state_dict, strict)
        finally:
            _ASSIGN.pop()

    def _load_state_dict(self, state_dict: dict, strict: bool) -> _IncompatibleKeys:
        missing: list[str] = []
        errors: list[str] = []
        expected: set[str] = set()
        metadata = getattr(state_dict, "_metadata", None) or {}
        state_dict = OrderedDict(state_dict)  # modules may edit it (a format upgrade)
        for mp, m in self.named_modules(remove_duplicate=False):
            prefix = mp + "." if mp else ""
            local = metadata.get(mp, {})
            for hook in m.__dict__.get("_load_state_dict_pre_hooks", {}).values():
                hook(state_dict, prefix, local, strict, missing, [], errors)
            m._load_from_state_dict(state_dict, prefix, local, strict, missing, [], errors)
            for k, t in m._parameters.items():
                if t is not None:
                    expected.add(prefix + k)
            for k, t in m._buffers.items():
                if t is not None and k not in m._non_persistent_buffers:
                    expected.add(prefix + k)
        missing = list(dict.fromkeys(missing))
        unexpected = [k for k in state_dict if k not in expected]
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # -- repr -------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside ``Name(...)``; layers override it."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + repr(m).replace("\n", "\n  ")
                       for name, m in self._modules.items()]
        lines = extra_lines + child_lines
        if not lines:
            return f"{self._get_name()}()"
        if len(extra_lines) == 1 and not child_lines:  # PyTorch's one-line form
            return f"{self._get_name()}({extra_lines[0]})"
        inner = "\n  ".join(lines)
        return f"{self._get_name()}(\n  {inner}\n)"


# -- full backward hooks ---------------------------------------------------------------------------

class _BackwardHookState:
    """One call's full backward hooks, as PyTorch's ``torch.utils.hooks.BackwardHook``: the
    module's positional tensor inputs and its tensor outputs pass through identity tape
    ``Function``s. The outputs' node runs first in backward: it records ``grad_output`` and
    runs the pre-hooks (which may replace it); the inputs' node receives the gradients with
    respect to the inputs and runs the hooks (which may replace them). Everything else the
    tape does (accumulation, higher order, ``flow.jit``) is untouched."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.n_inputs = 0
        self.input_index: list[int] | None = None
        self.grad_output: tuple[Any, ...] | None = None

    def _hooks(self, store: str) -> tuple[Callable, ...]:
        """The module's hooks now (a module unpickled from before hooks existed has none)."""
        return tuple(self.module.__dict__.get(store, {}).values())

    def setup_input(self, args: tuple) -> tuple:
        idx = [k for k, a in enumerate(args) if isinstance(a, Tensor)]
        self.n_inputs = len(idx)
        if not any(args[k].requires_grad for k in idx) or not self._hooks("_backward_hooks"):
            return args
        self.input_index = idx
        new = _HookInputs.apply(self, *[args[k] for k in idx])
        new = new if isinstance(new, tuple) else (new,)
        out = list(args)
        for k, t in zip(idx, new):
            out[k] = t
        return tuple(out)

    def setup_output(self, out: Any) -> Any:
        single = isinstance(out, Tensor)
        items = (out,) if single else out if isinstance(out, tuple) else None
        if items is None:
            return out
        idx = [k for k, a in enumerate(items) if isinstance(a, Tensor)]
        if not any(items[k].requires_grad for k in idx):
            return out
        new = _HookOutputs.apply(self, *[items[k] for k in idx])
        new = new if isinstance(new, tuple) else (new,)
        res = list(items)
        for k, t in zip(idx, new):
            res[k] = t
        return res[0] if single else tuple(res)

    def on_grad_output(self, grads: tuple[Any, ...]) -> tuple[Any, ...]:
        m = self.module
        grads = self._chain("_backward_pre_hooks", lambda hook, g: hook(m, g), grads,
                            "Backward pre hook returned an invalid number of grad_output")
        self.grad_output = grads
        if self.input_index is None and self._hooks("_backward_hooks"):
            none = (None,) * self.n_inputs
            for hook in self._hooks("_backward_hooks"):
                res = hook(m, none, grads)
                if res is not None and not all(r is None for r in
                                               (res if isinstance(res, tuple) else (res,))):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
        return grads

    def on_grad_input(self, grads: tuple[Any, ...]) -> tuple[Any, ...]:
        m = self.module
        grad_output = self.grad_output if self.grad_output is not None else ()
        return self._chain("_backward_hooks", lambda hook, g: hook(m, g, grad_output), grads,
                           "Backward hook returned an invalid number of grad_input")

    def _chain(self, store: str, call: Callable, grads: tuple[Any, ...], what: str
               ) -> tuple[Any, ...]:
        """Run the hooks in ``store`` in order; a hook's non-None result replaces ``grads``
        (it must have as many entries: PyTorch's check and message)."""
        for hook in self._hooks(store):
            res = call(hook, grads)
            if res is None:
                continue
            res = res if isinstance(res, tuple) else (res,)
            if len(res) != len(grads):
                raise RuntimeError(f"{what}, got {len(res)}, but expected {len(grads)}")
            grads = res
        return grads


class _HookOutputs(Function):
    @staticmethod
    def forward(ctx: FunctionCtx, state: _BackwardHookState, *xs: Tensor) -> Any:
        ctx.state = state
        ctx.set_materialize_grads(False)
        ctx.mark_non_differentiable(*[x for x in xs if not x.requires_grad])
        return xs[0] if len(xs) == 1 else xs

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        return (None, *ctx.state.on_grad_output(grads))


class _HookInputs(Function):
    @staticmethod
    def forward(ctx: FunctionCtx, state: _BackwardHookState, *xs: Tensor) -> Any:
        ctx.state = state
        ctx.needs = [x.requires_grad for x in xs]
        ctx.set_materialize_grads(False)
        ctx.mark_non_differentiable(*[x for x in xs if not x.requires_grad])
        return xs[0] if len(xs) == 1 else xs

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        grads = tuple(g if n else None for g, n in zip(grads, ctx.needs))
        return (None, *ctx.state.on_grad_input(grads))
