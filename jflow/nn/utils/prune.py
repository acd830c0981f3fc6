"""``flow.nn.utils.prune``: pruning a module's tensors by a mask, as ``torch.nn.utils.prune``.

Pruning the tensor ``name`` of a module (``prune.l1_unstructured(module, "weight", 0.3)``)
moves the parameter to ``<name>_orig``, registers the mask as the buffer ``<name>_mask`` and
makes ``<name>`` a plain attribute holding ``<name>_orig * <name>_mask``, recomputed by a
forward pre-hook (the pruning method itself) before every call: the state-dict keys are
PyTorch's (``weight_orig``, ``weight_mask``), checkpoints move between the two libraries, and
the gradient reaches ``<name>_orig`` through the mask. Pruning the same tensor again combines
the methods in a :class:`PruningContainer` (each new method acts on the entries or channels
the earlier ones kept); :func:`remove` makes the pruning permanent (``<name>`` a parameter
again, holding the pruned values).

The random methods draw from jflow's generator (``flow.manual_seed`` makes them repeat), so
they prune the same number of entries as PyTorch but not the same ones. The recomputed
``<name>`` is written on the module by the pre-hook, which a ``flow.jit`` / ``nn.Graph`` step
refuses (it would leave a traced value on the module): prune, then :func:`remove`, before
compiling a step, or run the pruned model eagerly.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Any

from ... import _C
from ...creation import ones_like, rand, rand_like, zeros_like
from ...tensor import Tensor
from ..modules.module import Module
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """Base class of the pruning methods: a subclass computes a mask (:meth:`compute_mask`)
    and says which entries it may prune (``PRUNING_TYPE``: ``"unstructured"`` acts on the
    entries still kept, ``"structured"`` on the channels along ``dim`` still kept,
    ``"global"`` on the whole tensor). An instance is the forward pre-hook of the module it
    pruned, recomputing ``<name>`` from ``<name>_orig`` and ``<name>_mask``."""

    PRUNING_TYPE: str
    _tensor_name: str

    def __call__(self, module: Module, inputs: Any) -> None:
        """The forward pre-hook: ``<name>`` becomes ``<name>_orig * <name>_mask`` again."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask of ``t`` (same shape): ``default_mask`` (the mask so far) with the
        entries this method prunes set to zero."""

    def apply_mask(self, module: Module) -> Tensor:
        """``<name>_orig`` times ``<name>_mask`` (cast to its dtype): the pruned tensor."""
        name = getattr(self, "_tensor_name", None)
        if name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, name + "_mask")
        orig = getattr(module, name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any,
              importance_scores: Tensor | None = None, **kwargs: Any) -> BasePruningMethod:
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``: the first time, the tensor
        moves to ``<name>_orig`` and the mask to the buffer ``<name>_mask``; an earlier
        pruning of the same tensor is combined with this one in a :class:`PruningContainer`.
        ``importance_scores`` (``<name>``'s shape; default: ``<name>`` itself) rank the
        entries. Returns the method (or the container) now hooked on the module."""
        if not isinstance(module, Module):
            raise TypeError(f"{cls.__name__}.apply(): argument 'module' must be an nn.Module, "
                            f"got {type(module).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"{cls.__name__}.apply(): argument 'name' must be a str, got "
                            f"{type(name).__name__}")
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as "
                                     f"parameter {name} of {module}, got "
                                     f"{importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            # the parameter becomes <name>_orig; <name> is the pruned value, a plain attribute
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """``t`` times this method's mask for it (computed from ``importance_scores``,
        default ``t``), without touching any module."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError(f"importance_scores should have the same shape as tensor "
                                     f"t, got {importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``<name>`` becomes a parameter again (the
        ``<name>_orig`` object, now holding the pruned values); ``<name>_orig`` and
        ``<name>_mask`` go. The caller (:func:`remove`) takes the hook off."""
        name = getattr(self, "_tensor_name", None)
        if name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be "
                                 f"removed")
        weight = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters[name + "_orig"]
        orig.data = weight.data
        del module._parameters[name + "_orig"]
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


def _composite_method(cls: type[BasePruningMethod], module: Module, name: str, *args: Any,
                      **kwargs: Any) -> BasePruningMethod:
    """The new method, or the container of the earlier one(s) with it appended (the old hook
    is taken off the module)."""
    old_method = None
    found = 0
    hooks_to_remove = []
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            old_method = hook
            hooks_to_remove.append(k)
            found += 1
    if found > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} "
                             f"of module {module}. Use a PruningContainer.")
    for k in hooks_to_remove:
        del module._forward_pre_hooks[k]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if isinstance(old_method, PruningContainer):
        old_method.add_pruning_method(method)
        method = old_method
    elif old_method is not None:
        container = PruningContainer(old_method)
        container.add_pruning_method(method)
        method = container
    return method


class PruningContainer(BasePruningMethod):
    """The pruning methods applied one after the other to one tensor (iterative pruning):
    its mask is the last method's, computed on the entries (or channels) the earlier masks
    kept. Made by pruning a tensor a second time; iterable and indexable like a tuple."""

    def __init__(self, *args: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod | None, ...] = ()
        if args:
            # (PyTorch reads the name from a single method only; with several it raises an
            # AttributeError: jflow takes the first method's name)
            self._tensor_name = args[0]._tensor_name
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod | None) -> None:
        """Append ``method`` (a pruning method of the same tensor)."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and getattr(self, "_tensor_name", None) != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named "
                             f"'{getattr(self, '_tensor_name', None)}' to PruningContainer "
                             f"{self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Iterator[BasePruningMethod | None]:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: Any) -> Any:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The last method's mask, computed on the part of ``t`` that ``default_mask`` keeps
        (the kept entries for an unstructured method, the kept channels along its ``dim`` for
        a structured one, all of ``t`` for a global one) and written back into it."""
        if not self._pruning_methods:
            raise IndexError("PruningContainer.compute_mask(): the container holds no pruning "
                             "method")
        method = self._pruning_methods[-1]
        mask = default_mask
        new_mask = mask.to(dtype=t.dtype).clone()
        kind = getattr(method, "PRUNING_TYPE", None)
        slc: Any
        if kind == "unstructured":
            slc = mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to '
                                     'have the attribute `dim` defined.')
            n_dims = t.dim()
            dim = method.dim
            if dim < 0:
                dim = n_dims + dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            parts: list[Any] = [slice(None)] * n_dims
            parts[dim] = keep_channel
            slc = tuple(parts)
        elif kind == "global":
            slc = tuple([slice(None)] * t.dim())
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial_mask = method.compute_mask(t[slc], default_mask=mask[slc])
        new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (a tensor "pruned" with it gets the
    ``_orig`` / ``_mask`` form, e.g. to be pruned later by another method)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` unchanged."""
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:  # type: ignore[override]
        """Hook the identity pruning on ``module.<name>``."""
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Prunes ``amount`` entries (an int) or that fraction of them (a float in [0, 1],
    rounded): the ``amount`` entries of smallest :meth:`_scores`."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: int | float) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def _scores(self, t: Tensor) -> Tensor:
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with the ``amount`` entries of smallest score zeroed."""
        tensor_size = t.numel()
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        mask = default_mask.clone()
        if nparams_toprune != 0:
            topk = _C.topk(self._scores(t).reshape(-1), k=nparams_toprune, largest=False)
            mask = _zero_flat(mask, topk.indices)
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes ``amount`` entries (an int) or that fraction of them (a float in [0, 1],
    rounded), chosen at random among the kept ones (jflow's generator)."""

    def _scores(self, t: Tensor) -> Tensor:
        return rand_like(t)

    @classmethod
    def apply(cls, module: Module, name: str,  # type: ignore[override]
              amount: int | float) -> BasePruningMethod:
        """Hook random unstructured pruning of ``amount`` entries on ``module.<name>``."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the ``amount`` entries (an int, or a fraction of them) of smallest absolute
    value."""

    def _scores(self, t: Tensor) -> Tensor:
        return t.abs()

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              importance_scores: Tensor | None = None) -> BasePruningMethod:
        """Hook L1 unstructured pruning of ``amount`` entries on ``module.<name>``."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(BasePruningMethod):
    """Prunes ``amount`` whole channels (an int, or a fraction of them) along ``dim``: the
    channels :meth:`_kept` does not keep."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def _kept(self, t: Tensor, size: int, n_prune: int) -> Tensor:
        """The channels to keep: a boolean mask over the ``size`` channels, or their indices."""
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` times a mask zeroing ``amount`` channels along ``dim``."""
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        tensor_size = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        if nparams_toprune == 0:
            return default_mask
        mask = _channel_mask(t, self.dim, self._kept(t, tensor_size, nparams_toprune))
        return mask * default_mask.to(dtype=mask.dtype)


class RandomStructured(_Structured):
    """Prunes ``amount`` whole channels (an int, or a fraction of them) along ``dim``, chosen
    at random (jflow's generator)."""

    def _kept(self, t: Tensor, size: int, n_prune: int) -> Tensor:
        prob = rand(size)
        return prob > _C.kthvalue(prob, k=n_prune).values

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              dim: int = -1) -> BasePruningMethod:
        """Hook random structured pruning of ``amount`` channels along ``dim`` on
        ``module.<name>``."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Prunes the ``amount`` channels (an int, or a fraction of them) along ``dim`` of smallest
    ``n``-norm (``n``: any order ``flow.norm`` takes: an int, a float, ``inf``, ``-inf``,
    ``"fro"``, ``"nuc"``)."""

    def __init__(self, amount: int | float, n: Any, dim: int = -1) -> None:
        super().__init__(amount, dim)
        self.n = n

    def _kept(self, t: Tensor, size: int, n_prune: int) -> Tensor:
        norm = _compute_norm(t, self.n, self.dim)
        return _C.topk(norm, k=size - n_prune, largest=True).indices

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              n: Any, dim: int, importance_scores: Tensor | None = None) -> BasePruningMethod:
        """Hook Ln structured pruning of ``amount`` channels along ``dim`` on
        ``module.<name>``."""
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes by a given ``mask`` (the tensor's shape; zeros prune)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        if not isinstance(mask, Tensor):
            raise TypeError(f"CustomFromMask(): argument 'mask' must be a Tensor, got "
                            f"{type(mask).__name__}")
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` times ``mask``."""
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match "
                                 f"self.mask shape {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str,  # type: ignore[override]
              mask: Tensor) -> BasePruningMethod:
        """Hook pruning by ``mask`` on ``module.<name>``."""
        return super().apply(module, name, mask=mask)


# -- the functions -----------------------------------------------------------------------------

def identity(module: Module, name: str) -> Module:
    """Give ``module.<name>`` the pruned form with an all-ones mask; returns ``module``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: int | float) -> Module:
    """Prune ``amount`` random entries (an int, or a fraction) of ``module.<name>``;
    returns ``module``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: int | float,
                    importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` entries (an int, or a fraction) of ``module.<name>`` of smallest
    absolute value (of ``importance_scores`` if given); returns ``module``."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: int | float, dim: int) -> Module:
    """Prune ``amount`` random channels (an int, or a fraction) of ``module.<name>`` along
    ``dim``; returns ``module``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: int | float, n: Any, dim: int,
                  importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` channels (an int, or a fraction) of ``module.<name>`` along
    ``dim`` of smallest ``n``-norm (of ``importance_scores`` if given); returns
    ``module``."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters: Iterable[tuple[Module, str]], pruning_method: type,
                        importance_scores: dict[tuple[Module, str], Tensor] | None = None,
                        **kwargs: Any) -> None:
    """Prune the ``(module, name)`` tensors of ``parameters`` together: ``pruning_method``
    (an unstructured method class, built with ``kwargs``: e.g. ``amount``) ranks the entries
    of all of them at once (``importance_scores``: a dict ``(module, name) -> tensor`` of
    scores to rank by instead), and each tensor is then pruned by its part of the mask
    (:class:`CustomFromMask`)."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)  # (read three times: a generator would run out)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    relevant_importance_scores = parameters_to_vector(
        [importance_scores.get((module, name), getattr(module, name))
         for (module, name) in parameters])
    default_mask = parameters_to_vector(
        [_mask_or_ones(module, name) for (module, name) in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the '
                        f"`pruning_method`. Found method {pruning_method} of type "
                        f"{method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(relevant_importance_scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num_param = param.numel()
        param_mask = final_mask[pointer:pointer + num_param].reshape(param.shape)
        custom_from_mask(module, name, mask=param_mask)
        pointer += num_param


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.<name>`` by ``mask`` (zeros prune); returns ``module``."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent: ``<name>`` is a parameter again,
    holding the pruned values, and the hook, ``<name>_orig`` and ``<name>_mask`` go; returns
    ``module``."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     f"can be removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or any submodule has a pruning hook."""
    for _, submodule in module.named_modules():
        for hook in submodule._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False


# -- helpers -----------------------------------------------------------------------------------

def _mask_or_ones(module: Module, name: str) -> Tensor:
    """``module.<name>_mask`` if ``<name>`` is pruned already, else ones of its shape."""
    mask = getattr(module, name + "_mask", None)
    return ones_like(getattr(module, name)) if mask is None else mask


def _zero_flat(mask: Tensor, indices: Tensor) -> Tensor:
    """``mask`` with the entries at flat ``indices`` set to zero."""
    flat = mask.reshape(-1).clone()
    flat[indices] = 0
    return flat.reshape(mask.shape)


def _channel_mask(t: Tensor, dim: int, channels: Tensor) -> Tensor:
    """Zeros of ``t``'s shape with ones in the ``channels`` (a bool mask or indices) along
    ``dim``."""
    mask = zeros_like(t)
    slc: list[Any] = [slice(None)] * t.dim()
    slc[dim] = channels
    mask[tuple(slc)] = 1
    return mask


def _validate_pruning_amount_init(amount: Any) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral)
            and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         f"non-negative integer")


def _validate_pruning_amount(amount: Any, tensor_size: int) -> None:
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={tensor_size}")


def _validate_structured_pruning(t: Tensor) -> None:
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount: int | float, tensor_size: int) -> int:
    if isinstance(amount, numbers.Integral):
        return int(amount)
    return round(amount * tensor_size)


def _validate_pruning_dim(t: Tensor, dim: int) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t: Tensor, n: Any, dim: int) -> Tensor:
    dims = list(range(t.dim()))
    if dim < 0:
        dim = dims[dim]
    dims.remove(dim)
    return _C.norm(t, p=n, dim=dims)
