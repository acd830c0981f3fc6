"""``flow.func``: JAX's function transforms with Tensors in and out, in ``torch.func``'s shape.

``jax.grad(f)`` of a function returning a jflow Tensor fails (a Tensor is a pytree, not a
scalar array), and reaching for ``._value`` is private. These wrappers take and return
Tensors (and pytrees of them: tuples, lists, dicts) and are built on the JAX transforms,
not on the tape: inside, every argument is a fresh Tensor holding a tracer, jflow ops bind
their primitives on it, and JAX differentiates through each op's one backward rule (its
``_lin`` primitive, :mod:`jflow.autograd.jax_rules`) or batches it (the generic batching
rule). So they compose (``grad(grad(f))``, ``vmap(grad(f))``, ``jacrev(jacfwd(f))``),
work inside ``flow.jit`` and ``jax.jit``, and leave the tape untouched: results never
require grad and no ``.grad`` is written.

Differences from ``torch.func``, chosen:

* ``vmap(randomness=)``: ``"error"`` (the default, as torch) raises on a random draw inside
  the mapped function; ``"same"`` draws once for the whole batch; ``"different"`` is not
  supported (it raises). Inside ``flow.jit`` the step's own generator handling applies.
* ``chunk_size`` of ``vmap`` / ``jacrev`` is accepted: ``None`` or ``1`` compute everything
  at once (XLA fuses the batch); larger chunks are not supported.
* Global tensors are refused (their SBP would be lost inside the transform): use
  ``flow.jit`` over global tensors instead.
* ``functionalize`` returns a wrapper that calls the function: jflow's arrays are immutable,
  so a program is already free of mutations underneath (an in-place op swaps a new array in);
  what PyTorch's functionalization preserves — results, and in-place writes to the inputs
  showing in the caller's tensors — holds as it is. With ``remove="mutations_and_views"``
  an output that is a view of an input is returned as a copy, as PyTorch's ``*_copy`` ops do.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax

from . import random as _random
from .functional import F
from .nn.modules.batchnorm import _BatchNorm, _InstanceNorm
from .nn.modules.module import Module
from .tensor import Tensor, _wrap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "functional_call", "stack_module_state", "linearize", "functionalize",
           "replace_all_batch_norm_modules_"]


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def _to_jax(tree: Any, fname: str) -> Any:
    """Tensors -> their arrays (what the JAX transform sees)."""
    def leaf(x: Any) -> Any:
        if isinstance(x, Tensor):
            if x._global is not None:
                raise TypeError(f"flow.func.{fname}: global tensors are not supported (their "
                                f"SBP would be lost inside the transform); use flow.jit")
            return x._value
        return x
    return jax.tree_util.tree_map(leaf, tree, is_leaf=_is_tensor)


def _to_flow(tree: Any) -> Any:
    """Arrays (and tracers) -> fresh Tensors that do not require grad."""
    return jax.tree_util.tree_map(lambda x: _wrap(x) if isinstance(x, jax.Array) else x, tree)


def _argnums(argnums: int | tuple[int, ...], n: int, fname: str) -> None:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums or any(not isinstance(i, int) or not -n <= i < n for i in nums):
        raise ValueError(f"flow.func.{fname}: argnums {argnums!r} out of range for {n} "
                         f"positional argument(s)")


def _lift(func: Callable[..., Any], kwargs: dict, has_aux: bool, fname: str,
          scalar: bool = False) -> Callable[..., Any]:
    """``func`` as a function of arrays: Tensors in, arrays out (aux passed through)."""
    def inner(*arrays: Any) -> Any:
        out = func(*_to_flow(arrays), **kwargs)
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise ValueError(f"flow.func.{fname}(has_aux=True): the function must return "
                                 f"a pair (output, aux)")
            out, aux = out
            return _output(out, fname, scalar), _to_jax(aux, fname)
        return _output(out, fname, scalar)
    return inner


def _output(out: Any, fname: str, scalar: bool) -> Any:
    if scalar:
        if not isinstance(out, Tensor) or out._meta.ndim != 0 or out._meta.size != 1:
            shape = list(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise RuntimeError(f"flow.func.{fname}: the function must return a scalar (0-d) "
                               f"Tensor, got {shape}")
        if out._meta.dtype.kind not in "fc" and str(out._meta.dtype) != "bfloat16":
            raise RuntimeError(f"flow.func.{fname}: the output must be a floating point "
                               f"Tensor, got {out.dtype}")
    return _to_jax(out, fname)


# -- gradients ----------------------------------------------------------------------------------

def grad_and_value(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """``(gradient, value)`` of a function returning a scalar Tensor; with ``has_aux`` the
    value is ``(value, aux)``, as ``torch.func.grad_and_value``."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _argnums(argnums, len(args), "grad_and_value")
        f = _lift(func, kwargs, has_aux, "grad_and_value", scalar=True)
        res = jax.value_and_grad(f, argnums, has_aux=has_aux)(*_to_jax(args, "grad_and_value"))
        (value, g) = res
        return _to_flow(g), _to_flow(value)
    return wrapper


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
         has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of a function returning a scalar Tensor with respect to the argument(s)
    ``argnums`` (a Tensor, or a tuple for several); with ``has_aux``, ``(gradient, aux)``."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple:
    """``(output, vjp_fn)`` (``(output, vjp_fn, aux)`` with ``has_aux``): ``vjp_fn(ct)``
    returns one cotangent per primal, as ``torch.func.vjp``."""
    f = _lift(func, {}, has_aux, "vjp")
    res = jax.vjp(f, *_to_jax(primals, "vjp"), has_aux=has_aux)
    out, pullback = res[0], res[1]

    def vjp_fn(cotangents: Any) -> tuple:
        return _to_flow(pullback(_to_jax(cotangents, "vjp")))
    return (_to_flow(out), vjp_fn, _to_flow(res[2])) if has_aux else (_to_flow(out), vjp_fn)


def jvp(func: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], *,
        strict: bool = False, has_aux: bool = False) -> tuple:
    """``(output, jvp_out)`` (``+ (aux,)`` with ``has_aux``): the forward-mode derivative of
    ``func`` at ``primals`` along ``tangents`` (tuples of equal structure)."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("flow.func.jvp: primals and tangents must be tuples")
    if len(primals) != len(tangents):
        raise ValueError(f"flow.func.jvp: {len(primals)} primals but {len(tangents)} tangents")
    f = _lift(func, {}, has_aux, "jvp")
    res = jax.jvp(f, tuple(_to_jax(primals, "jvp")), tuple(_to_jax(tangents, "jvp")),
                  has_aux=has_aux)
    return tuple(_to_flow(r) for r in res)


def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the forward-mode derivative of
    ``func`` at ``primals`` along ``tangents`` (one per primal, same pytree, shapes and dtypes),
    computed from one linearization (``jax.linearize``) however many times it is called, as
    ``torch.func.linearize``. The output is ``func(*primals)`` run as usual (PyTorch evaluates
    ``func`` twice as well: once for it, once to linearize)."""
    output = func(*primals)
    flat_primals, primals_spec = jax.tree_util.tree_flatten(primals, is_leaf=_is_tensor)
    shapes = [tuple(p.shape) for p in flat_primals]
    dtypes = [p.dtype for p in flat_primals]
    devices = [p.device for p in flat_primals]
    f = _lift(func, {}, False, "linearize")
    _, f_jvp = jax.linearize(f, *_to_jax(primals, "linearize"))
    f_jvp = jax.jit(f_jvp)

    def jvp_fn(*tangents: Any) -> Any:
        flat, spec = jax.tree_util.tree_flatten(tangents, is_leaf=_is_tensor)
        if spec != primals_spec:
            raise RuntimeError(f"Expected the tangents {spec} to have the same argspec as the "
                               f"primals {primals_spec}")
        for idx, t in enumerate(flat):
            for what, got, want in (("shape", tuple(t.shape), shapes[idx]),
                                    ("device", t.device, devices[idx]),
                                    ("dtype", t.dtype, dtypes[idx])):
                if got != want:
                    shown = (list(got), list(want)) if what == "shape" else (got, want)
                    raise RuntimeError(f"tangent:{idx} with {what} {shown[0]} in flattened "
                                       f"pytree doesn't match the {what} {shown[1]} of the "
                                       f"corresponding primal.")
        return _to_flow(f_jvp(*_to_jax(tangents, "linearize")))
    return output, jvp_fn


def jacrev(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *,
           has_aux: bool = False, chunk_size: int | None = None) -> Callable[..., Any]:
    """The Jacobian by reverse mode: output shape + argument shape, per argument."""
    _chunks(chunk_size, "jacrev")

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _argnums(argnums, len(args), "jacrev")
        f = _lift(func, kwargs, has_aux, "jacrev")
        return _to_flow(jax.jacrev(f, argnums, has_aux=has_aux)(*_to_jax(args, "jacrev")))
    return wrapper


def jacfwd(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
           has_aux: bool = False, *, randomness: str = "error") -> Callable[..., Any]:
    """The Jacobian by forward mode (``jacrev``'s result, computed column by column)."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _argnums(argnums, len(args), "jacfwd")
        f = _lift(func, kwargs, has_aux, "jacfwd")
        with _random_policy(randomness, "jacfwd"):
            return _to_flow(jax.jacfwd(f, argnums, has_aux=has_aux)(*_to_jax(args, "jacfwd")))
    return wrapper


def hessian(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """The Hessian of a scalar function (``jacfwd(jacrev(func))``, as torch.func)."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _argnums(argnums, len(args), "hessian")
        f = _lift(func, kwargs, False, "hessian")
        return _to_flow(jax.hessian(f, argnums)(*_to_jax(args, "hessian")))
    return wrapper


# -- batching -----------------------------------------------------------------------------------

def _chunks(chunk_size: int | None, fname: str) -> None:
    if chunk_size not in (None, 1):
        raise NotImplementedError(f"flow.func.{fname}: chunk_size={chunk_size} is not "
                                  f"supported; the whole batch is computed at once")


@contextlib.contextmanager
def _random_policy(randomness: str, fname: str) -> Iterator[None]:
    if randomness not in ("error", "same", "different"):
        raise ValueError(f"flow.func.{fname}: randomness must be 'error', 'same' or "
                         f"'different', got {randomness!r}")
    if randomness == "different":
        raise NotImplementedError(f"flow.func.{fname}: randomness='different' is not "
                                  f"supported; use 'same' (one draw shared by the batch) or "
                                  f"draw the batch's random numbers outside")
    if randomness == "same":
        yield
        return
    previous = _random._tracing_guard

    def refuse(gen: Any) -> None:
        raise RuntimeError(f"flow.func.{fname}: a random operation was called inside the "
                           f"transformed function with randomness='error' (the default, as "
                           f"torch.func); pass randomness='same' to share one draw across "
                           f"the batch")
    _random._tracing_guard = refuse
    try:
        yield
    finally:
        _random._tracing_guard = previous


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0,
         randomness: str = "error", *, chunk_size: int | None = None) -> Callable[..., Any]:
    """``func`` mapped over a batch dimension of its arguments (``in_dims``: an int, None,
    or a tuple with one entry per argument; ``out_dims`` likewise for the outputs)."""
    _chunks(chunk_size, "vmap")

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        f = _lift(func, kwargs, False, "vmap")
        dims = tuple(in_dims) if isinstance(in_dims, list) else in_dims
        if isinstance(dims, tuple) and len(dims) != len(args):
            raise ValueError(f"flow.func.vmap: in_dims has {len(dims)} entries for "
                             f"{len(args)} positional argument(s)")
        with _random_policy(randomness, "vmap"):
            try:
                out = jax.vmap(f, in_axes=dims, out_axes=out_dims)(*_to_jax(args, "vmap"))
            except ValueError as e:
                raise ValueError(f"flow.func.vmap: {e}") from None
        return _to_flow(out)
    return wrapper


# -- modules as functions -----------------------------------------------------------------------

def _owner(module: Module, name: str, fname: str) -> tuple[Module, str, str]:
    prefix, _, attr = name.rpartition(".")
    try:
        owner = module.get_submodule(prefix) if prefix else module
    except AttributeError:
        raise KeyError(f"flow.func.{fname}: no submodule for {name!r}") from None
    if attr in owner._parameters:
        return owner, attr, "_parameters"
    if attr in owner._buffers:
        return owner, attr, "_buffers"
    raise KeyError(f"flow.func.{fname}: {name!r} is not a parameter or buffer of "
                   f"{type(module).__name__}")


def functional_call(module: Module, parameter_and_buffer_dicts: Any, args: Any = None,
                    kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """Call ``module`` with some (or all) of its parameters and buffers replaced by the given
    tensors, as ``torch.func.functional_call``: the module is left as it was afterwards.
    With ``tie_weights``, a parameter shared under several names (weight tying) is replaced
    under all of them; ``strict`` requires every parameter and buffer to be given."""
    fname = "functional_call"
    dicts = parameter_and_buffer_dicts
    dicts = [dicts] if isinstance(dicts, dict) else list(dicts)
    given: dict[str, Any] = {}
    for d in dicts:
        for k, v in d.items():
            if k in given:
                raise ValueError(f"flow.func.{fname}: {k!r} appears in more than one dict")
            given[k] = v if isinstance(v, Tensor) else _wrap(jax.numpy.asarray(v))
    if tie_weights:
        names: dict[int, list[str]] = {}
        for n, t in [*module.named_parameters(remove_duplicate=False),
                     *module.named_buffers(remove_duplicate=False)]:
            names.setdefault(id(t), []).append(n)
        for group in names.values():
            hit = [n for n in group if n in given]
            for n in group:
                if hit and n not in given:
                    given[n] = given[hit[0]]
    if strict:
        want = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        want |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(want - set(given))
        if missing:
            raise RuntimeError(f"flow.func.{fname}(strict=True): missing {missing}")
    slots = [(*_owner(module, n, fname), v) for n, v in given.items()]
    saved = [(getattr(o, store), attr, getattr(o, store)[attr]) for o, attr, store, _ in slots]
    try:
        for o, attr, store, v in slots:
            getattr(o, store)[attr] = v
        args = () if args is None else (args if isinstance(args, tuple) else (args,))
        return module(*args, **(kwargs or {}))
    finally:
        for store, attr, old in saved:
            store[attr] = old


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """``(params, buffers)`` of same-structured ``models`` stacked along a new leading dim,
    for ``vmap(functional_call ...)`` over an ensemble (``torch.func.stack_module_state``)."""
    models = list(models)
    if not models:
        raise RuntimeError("flow.func.stack_module_state: expected at least one model")
    def stack(items: list[tuple[str, Tensor]], kind: str) -> dict[str, Tensor]:
        out = {}
        for name, _ in items:
            ts = []
            for m in models:
                t = dict(getattr(m, f"named_{kind}")()).get(name)
                if t is None:
                    raise RuntimeError(f"flow.func.stack_module_state: the models differ: "
                                       f"{name!r} is missing from one")
                ts.append(t.detach())
            out[name] = F.stack(ts)
        return out
    return stack(list(models[0].named_parameters()), "parameters"), \
        stack(list(models[0].named_buffers()), "buffers")


# -- functionalization and batch norm ------------------------------------------------------------

def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    """``torch.func.functionalize``: see the module docstring (a wrapper calling ``func``;
    with ``remove="mutations_and_views"``, outputs that are views come back as copies)."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for "
            f"remove={remove}. Valid options are:\n     remove='mutations': all inplace and out= "
            f"operators will be removed from the program, and replaced with their out-of-place "
            f"equivalents.\n     remove='mutations_and_views': In addition to the above, all "
            f"aliasing operators {{view}} will be replaced with their non-aliasing counterparts, "
            f"{{view}}_copy.\n")
    copy_views = remove == "mutations_and_views"

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        out = func(*args, **kwargs)
        if not copy_views:
            return out
        return jax.tree_util.tree_map(
            lambda t: t.clone() if isinstance(t, Tensor) and t._aliases else t, out,
            is_leaf=_is_tensor)
    return wrapped


def replace_all_batch_norm_modules_(root: Module) -> Module:
    """In place, every BatchNorm in ``root`` (``BatchNorm1d/2d/3d``, ``SyncBatchNorm``; not
    ``InstanceNorm``, as in PyTorch) stops tracking running statistics: ``running_mean``,
    ``running_var`` and ``num_batches_tracked`` become None and ``track_running_stats``
    False (what ``vmap`` over a model with BatchNorm needs). Returns ``root``."""
    for m in root.modules():
        if isinstance(m, _BatchNorm) and not isinstance(m, _InstanceNorm) \
                and m.track_running_stats:
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root
