"""Kernel registry (OneFlow's ``REGISTER_USER_KERNEL`` + ``SetIsMatchedHob`` + priority).

A kernel is a JAX-traceable function ``fn(*inputs, **attrs) -> array | tuple`` registered for
an op with a match on platform, on the dtypes of named inputs/outputs, an optional extra
condition, and a priority. Each op's primitive gets one lowering per platform; at lowering
time the registry picks the highest-priority matching kernel, builds it with its *backend*
(xla: call it; python: run NumPy through ``jax.pure_callback``; pallas / ffi plug in through
:func:`register_backend`) and lowers it with ``mlir.lower_fun``. Kernel outputs are checked
against the op's inference, so a kernel that disagrees with its op fails loudly.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.interpreters import mlir

from .._jax_compat import plain_lowering_ctx
from ..dtypes import as_dtype
from ..ops.registry import get as _get_op
from ..ops.registry import strip_batch

__all__ = ["Kernel", "register_kernel", "register_backend", "kernels_for", "select_kernel",
           "PLATFORMS", "FALLBACK", "DEFAULT", "OPTIMIZED", "KernelNotFoundError",
           "runs_host_code", "is_trusted", "take_host_error"]

PLATFORMS = ("cpu", "cuda", "rocm", "tpu")
FALLBACK, DEFAULT, OPTIMIZED = 0, 10, 20
_PRIORITY_NAMES = {FALLBACK: "fallback", DEFAULT: "default", OPTIMIZED: "optimized"}


class KernelNotFoundError(RuntimeError):
    """No registered kernel matches the platform / dtypes an op is lowered for."""


@dataclass(eq=False)
class Kernel:
    """One registered kernel and the conditions under which it is chosen."""

    op_name: str
    fn: Callable[..., Any]
    backend: str
    platforms: frozenset[str]
    dtypes: dict[str, frozenset[np.dtype]]
    priority: int
    condition: Callable[..., bool] | None
    name: str

    def matches(self, platform: str, dtype_of: dict[str, list[np.dtype]],
                in_avals: Sequence[Any]) -> bool:
        """Whether this kernel can run a call on ``platform`` with these dtypes and inputs."""
        if platform not in self.platforms:
            return False
        for arg, allowed in self.dtypes.items():
            if any(d not in allowed for d in dtype_of.get(arg, ())):
                return False
        if self.condition is None:
            return True
        try:
            return bool(self.condition(*in_avals))
        except Exception as e:
            raise RuntimeError(f"op '{self.op_name}': the condition of {self.describe()} raised "
                               f"{type(e).__name__}: {e}") from e

    def describe(self) -> str:
        """One line naming the kernel, its backend, platforms, dtypes and priority."""
        dt = "; ".join(f"{k} in {{{', '.join(sorted(str(d) for d in v))}}}"
                       for k, v in self.dtypes.items())
        pr = _PRIORITY_NAMES.get(self.priority, str(self.priority))
        cond = "; with a condition" if self.condition else ""
        return (f"{self.backend} kernel '{self.name}' (platforms {','.join(sorted(self.platforms))}"
                f"{'; ' + dt if dt else ''}; priority {pr}{cond})")


_KERNELS: dict[str, list[Kernel]] = {}
#: Ops lowered at least once: JAX caches those lowerings (in every jit, the eager executables
#: included), so a kernel registered later must clear the caches to be selected.
_LOWERED: set[str] = set()
Builder = Callable[[Kernel, Any, dict, list, Any], Callable[..., Any]]
_BACKENDS: dict[str, Builder] = {}
#: backends whose kernels are XLA computations (they cannot fail while running)
_DEVICE_BACKENDS = frozenset(("xla", "pallas"))
#: names of ops with a kernel that runs host code (python, ffi, ...): such a call can fail
#: while it runs, not when it is traced (lazy mode keeps the line that recorded one). Kept by
#: :func:`register_kernel` / :func:`forget_kernels`; others read it (:func:`runs_host_code`;
#: lazy mode's recorders test it directly, on their hot path)
HOST_OPS: set[str] = set()
#: names of ops whose calls need no check when they are recorded rather than run: an
#: unrestricted jflow kernel (any dtype, no condition, every platform) and no device kernel
#: written outside jflow (:func:`is_trusted`). A call of any other op can find no kernel for
#: its dtypes, or a user's kernel can reject it when traced: lazy mode lowers such calls when
#: it records them, so the error is raised at the call, as eagerly
TRUSTED_OPS: set[str] = set()


def runs_host_code(op_name: str) -> bool:
    """Whether ``op_name`` has a kernel that runs host code (see :data:`HOST_OPS`)."""
    return op_name in HOST_OPS


def is_trusted(op_name: str) -> bool:
    """Whether every call of ``op_name`` finds a kernel that cannot reject it when traced
    (see :data:`TRUSTED_OPS`)."""
    return op_name in TRUSTED_OPS


def register_backend(name: str, builder: Builder) -> None:
    """Add a kernel backend: ``builder(kernel, op, attrs, out_avals, layout)`` returns a
    traceable ``f(*flat_inputs) -> list of outputs`` for one lowering.

    ``out_avals`` are the per-example outputs the op's inference gives; ``op.unflatten(flat,
    layout)`` regroups the flat inputs per declared input. A dynamic attr (see
    :class:`jflow.ops.Attr`) is in ``attrs`` as a traced 0-d array: the builder is then called
    while the lowering is traced, and must use it as a value (an operand), never bake it in.
    Registering a different builder
    under an existing name is an error (it would silently change every kernel of it).
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_backend: name must be a non-empty string, got {name!r}")
    if not callable(builder):
        raise TypeError(f"register_backend('{name}'): builder must be callable, "
                        f"got {type(builder).__name__}")
    old = _BACKENDS.get(name)
    if old is not None and old is not builder:
        raise ValueError(f"register_backend: a backend named '{name}' is already registered")
    _BACKENDS[name] = builder


def register_kernel(
    op_name: str,
    fn: Callable[..., Any] | None = None,
    *,
    backend: str = "xla",
    platforms: Iterable[str] = PLATFORMS,
    dtypes: dict[str, Iterable[Any]] | None = None,
    priority: int = DEFAULT,
    condition: Callable[..., bool] | None = None,
    name: str | None = None,
) -> Any:
    """Register ``fn`` as a kernel of ``op_name``; usable as a decorator.

    ``dtypes`` maps input/output names to the dtypes the kernel accepts; ``condition``
    receives the per-example input avals and may refuse (e.g. shape alignment).
    """
    if fn is None:
        return lambda f: register_kernel(op_name, f, backend=backend, platforms=platforms,
                                         dtypes=dtypes, priority=priority,
                                         condition=condition, name=name)
    try:
        op = _get_op(op_name)
    except KeyError as e:
        raise KeyError(f"cannot register a kernel for unknown op '{op_name}': "
                       f"{e.args[0]}") from None
    if not callable(fn):
        raise TypeError(f"kernel for op '{op_name}': fn must be callable, got {type(fn).__name__}")
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise TypeError(f"kernel for op '{op_name}': priority must be an int, got {priority!r}")
    if condition is not None and not callable(condition):
        raise TypeError(f"kernel for op '{op_name}': condition must be callable, "
                        f"got {type(condition).__name__}")
    if isinstance(platforms, str):
        platforms = (platforms,)
    if backend not in _BACKENDS:
        raise ValueError(f"kernel for op '{op_name}': unknown backend '{backend}'; "
                         f"known backends are {sorted(_BACKENDS)}")
    plats = frozenset(platforms)
    bad = plats - set(PLATFORMS)
    if bad:
        raise ValueError(f"kernel for op '{op_name}': unknown platform(s) {sorted(bad)}; "
                         f"known platforms are {list(PLATFORMS)}")
    if not plats:
        raise ValueError(f"kernel for op '{op_name}': platforms is empty")
    if op.has_trait("CpuOnly"):
        if "cpu" not in plats:
            raise ValueError(f"kernel for op '{op_name}': the op is CpuOnly but the kernel's "
                             f"platforms {sorted(plats)} do not include 'cpu'")
        plats = frozenset({"cpu"})
    names = {x.name for x in (*op.inputs, *op.outputs)}
    dt: dict[str, frozenset[np.dtype]] = {}
    for arg, allowed in (dtypes or {}).items():
        if arg not in names:
            raise ValueError(f"kernel for op '{op_name}': dtypes names '{arg}', which is not an "
                             f"input or output of the op ({sorted(names)})")
        if isinstance(allowed, str) or not hasattr(allowed, "__iter__"):
            allowed = (allowed,)
        try:
            dt[arg] = frozenset(as_dtype(d).np for d in allowed)
        except TypeError as e:
            raise TypeError(f"kernel for op '{op_name}': dtypes of '{arg}': {e}") from None
    k = Kernel(op_name, fn, backend, plats, dt, priority, condition,
               name or getattr(fn, "__name__", op_name))
    _KERNELS.setdefault(op_name, []).append(k)
    if backend not in _DEVICE_BACKENDS:
        HOST_OPS.add(op_name)
    # (an op whose every kernel is restricted — dtypes, a condition, platforms — can find no
    # kernel for a call, and a kernel written outside jflow may reject a call when it is
    # traced: lazy mode lowers such an op's calls when it records them, see TRUSTED_OPS)
    ks = _KERNELS[op_name]
    if not any(_from_user(x) for x in ks) and any(
            not (x.dtypes or x.condition) and x.platforms == frozenset(PLATFORMS) for x in ks):
        TRUSTED_OPS.add(op_name)
    else:
        TRUSTED_OPS.discard(op_name)
    if op_name in _LOWERED:
        _LOWERED.clear()
        jax.clear_caches()
    return fn


def _from_user(k: Kernel) -> bool:
    """Whether ``k`` is a device kernel written outside jflow (its trace may raise: on an
    attr value, on shapes its op's inference accepts); jflow's own kernels check their calls
    in the op's inference and functor instead."""
    return k.backend in _DEVICE_BACKENDS and not (getattr(k.fn, "__module__", None) or "") \
        .startswith("jflow.")


def forget_kernels(op_names: Sequence[str]) -> None:
    """Drop the kernels of ``op_names`` (ops being replaced) and every compiled lowering that
    may hold them: JAX's caches (the eager executables, ``jax.jit``, ``flow.jit``) must
    retrace, as when a kernel is registered after an op was lowered."""
    for n in op_names:
        _KERNELS.pop(n, None)
        HOST_OPS.discard(n)
        TRUSTED_OPS.discard(n)
    _LOWERED.clear()
    jax.clear_caches()


def kernels_for(op_name: str) -> list[Kernel]:
    """The kernels registered for an op, in registration order."""
    return list(_KERNELS.get(op_name, ()))


def select_kernel(op: Any, platform: str, in_avals: Sequence[Any], out_avals: Sequence[Any],
                  layout: Any) -> Kernel:
    """The highest-priority kernel matching ``platform`` and the dtypes (later wins ties)."""
    dtype_of: dict[str, list[np.dtype]] = {}
    for spec, x in zip(op.inputs, op.unflatten(in_avals, layout)):
        items = x if isinstance(x, list) else ([] if x is None else [x])
        dtype_of[spec.name] = [a.dtype for a in items]
    outs = list(out_avals)
    n_variadic = len(outs) - sum(not o.variadic for o in op.outputs)  # at most one is variadic
    i = 0
    for spec in op.outputs:
        n = n_variadic if spec.variadic else 1
        dtype_of[spec.name] = [a.dtype for a in outs[i:i + n]]
        i += n
    per_input = op.unflatten(in_avals, layout)
    best: Kernel | None = None
    for k in _KERNELS.get(op.name, ()):
        if k.matches(platform, dtype_of, per_input) and (best is None
                                                          or k.priority >= best.priority):
            best = k
    if best is None:
        got = ", ".join(f"{n}: {'/'.join(str(d) for d in ds)}" for n, ds in dtype_of.items() if ds)
        regs = "\n  ".join(k.describe() for k in _KERNELS.get(op.name, ())) or "(none)"
        raise KernelNotFoundError(
            f"op '{op.name}': no kernel for platform '{platform}' and dtypes ({got}); "
            f"registered kernels:\n  {regs}")
    return best


def _normalize_outputs(res: Any) -> list[Any]:
    return list(res) if isinstance(res, (list, tuple)) else [res]


def _check_outputs(op: Any, kernel: Kernel, outs: Sequence[Any], expected: Sequence[Any]) -> None:
    if len(outs) != len(expected):
        raise ValueError(f"op '{op.name}': {kernel.describe()} returned {len(outs)} outputs, "
                         f"the op's inference gives {len(expected)}")
    for i, (o, e) in enumerate(zip(outs, expected)):
        shape, dtype = tuple(np.shape(o)), np.dtype(o.dtype)
        if shape != tuple(e.shape) or dtype != e.dtype:
            raise ValueError(f"op '{op.name}': {kernel.describe()} returned output {i} with "
                             f"shape {shape} dtype {dtype}; the op's inference says shape "
                             f"{tuple(e.shape)} dtype {e.dtype}")


def _build_xla(kernel: Kernel, op: Any, attrs: dict, out_avals: list, layout: Any):
    def run(*flat: Any) -> list[Any]:
        return _normalize_outputs(kernel.fn(*op.unflatten(flat, layout), **attrs))
    return run


def _build_python(kernel: Kernel, op: Any, attrs: dict, out_avals: list, layout: Any):
    """OneFlow's "python kernel": NumPy in, NumPy out, through ``jax.pure_callback``.

    Dynamic attrs (traced scalars here) travel as extra operands of the callback and reach
    the NumPy function as Python numbers, exactly the values a static attr would have."""
    shapes = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in out_avals]
    traced = [k for k, v in attrs.items() if isinstance(v, jax.Array)]
    fixed = {k: v for k, v in attrs.items() if k not in traced}
    kinds = {a.name: (float if a.type in ("float", "double") else int) for a in op.attrs}
    n_dyn = len(traced)

    def host(*flat: np.ndarray) -> list[np.ndarray]:
        # JAX re-raises an exception from a callback as a JaxRuntimeError (its text ends with
        # this message, which names the op and the kernel); the error itself is also kept
        # for eager dispatch to raise instead (see take_host_error).
        try:
            try:
                kw = fixed
                if n_dyn:
                    kw = dict(fixed)
                    kw.update((k, kinds[k](v)) for k, v in zip(traced, flat[-n_dyn:]))
                    flat = flat[:-n_dyn]
                res = kernel.fn(*op.unflatten([np.asarray(a) for a in flat], layout), **kw)
            except Exception as e:
                raise RuntimeError(f"op '{op.name}': {kernel.describe()} raised "
                                   f"{type(e).__name__}: {e}") from e
            res = [np.asarray(r) for r in _normalize_outputs(res)]
            _check_outputs(op, kernel, res, out_avals)
        except Exception as e:
            _host_error.value = e
            try:  # reported by jflow (with the op and kernel): JAX's logger stays quiet
                e._jflow_reported = True  # type: ignore[attr-defined]
            except AttributeError:
                pass
            raise
        return res

    def run(*flat: Any) -> list[Any]:
        return list(jax.pure_callback(host, shapes, *flat, *(attrs[k] for k in traced),
                                      vmap_method="sequential"))
    return run


register_backend("xla", _build_xla)
register_backend("python", _build_python)

_host_error = threading.local()


class _QuietCallbackErrors(logging.Filter):
    """Drops JAX's "jax.pure_callback failed" log record (with its traceback, printed to
    stderr) for an error a python kernel raised: jflow raises it itself, naming the op."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not getattr(exc, "_jflow_reported", False)


logging.getLogger("jax._src.callback").addFilter(_QuietCallbackErrors())


def reraise_host_error(op: Any = None, values: Sequence[Any] = ()) -> None:
    """Inside ``except JaxRuntimeError``: raise the python kernel's error if it caused it.

    Otherwise, given the op whose eager call failed and its input arrays, the error names the
    op and the kernel its executable was lowered with, as jflow/op.h's wrapper does for a
    kernel registered with ``JFLOW_REGISTER_KERNEL`` (``INVALID_ARGUMENT: op 'x': ffi kernel
    'K' (cpu): ...``): a raw FFI handler's error reaches here as XLA's bare text. Same type."""
    err = take_host_error()
    if err is not None:
        raise err.with_traceback(None) from None
    exc = sys.exc_info()[1]
    kernel = lowered_kernel(op, values) if op is not None else None
    text = str(exc)
    if kernel is None or exc is None or f"op '{op.name}'" in text:
        raise  # noqa: PLE0704  (re-raises the JaxRuntimeError being handled)
    where = (f"op '{op.name}': {kernel.backend} kernel '{kernel.name}' "
             f"({','.join(sorted(kernel.platforms))})")
    code = re.match(r"([A-Z][A-Z_]+): (.*)", text, re.DOTALL)  # XLA's status code first
    raise type(exc)(f"{code[1]}: {where}: {code[2]}" if code else f"{where}: {text}") from None


#: ``(op name, input shapes and dtypes) -> Kernel`` chosen at the op's lowerings (bounded):
#: which kernel an eager call's executable runs, to name it when the call fails at run time
_LOWERED_WITH: dict[tuple[str, tuple], Kernel] = {}
_LOWERED_WITH_MAX = 4096


def _signature(values: Sequence[Any]) -> tuple:
    return tuple((tuple(v.shape), str(v.dtype)) for v in values if v is not None)


def lowered_kernel(op: Any, values: Sequence[Any]) -> Kernel | None:
    """The kernel the op was lowered with for inputs shaped like ``values`` (the op's inputs
    first; extra trailing values, dynamic attrs, are ignored), or None if it never was."""
    try:
        sig = _signature([v for v in values if hasattr(v, "shape") and hasattr(v, "dtype")])
    except TypeError:
        return None
    for n in range(len(sig), -1, -1):
        k = _LOWERED_WITH.get((op.name, sig[:n]))
        if k is not None:
            return k
    return None


def take_host_error() -> BaseException | None:
    """The error a python kernel raised in this thread since the last call (then cleared).

    Eager dispatch raises it in place of JAX's ``JaxRuntimeError`` wrapper, so the user sees
    the kernel's own error type and message.
    """
    e = getattr(_host_error, "value", None)
    _host_error.value = None
    return e



def _make_lowering(op: Any, platform: str) -> Callable[..., Any]:
    def lowering(ctx: Any, /, *args: Any, **params: Any) -> Any:  # any attr name, even 'ctx'
        attrs, layout, vmap = op.split_params(params)
        per_in, _ = strip_batch(ctx.avals_in, vmap)
        per_in, _ = op.split_dynamic(per_in, attrs)
        per_out = op.infer_descs(per_in, layout, attrs)
        _LOWERED.add(op.name)
        kernel = select_kernel(op, platform, per_in, per_out, layout)
        if len(_LOWERED_WITH) >= _LOWERED_WITH_MAX:
            del _LOWERED_WITH[next(iter(_LOWERED_WITH))]
        _LOWERED_WITH[op.name, _signature(per_in)] = kernel
        build = _BACKENDS[kernel.backend]
        n_in = len(per_in)
        if len(per_in) == len(args):
            body = build(kernel, op, attrs, per_out, layout)
        else:
            body = None  # dynamic attrs: the kernel is built on their traced values

        def checked(*flat: Any) -> list[Any]:
            if body is None:
                run = build(kernel, op, op.with_dynamic(attrs, flat[n_in:]), per_out, layout)
                outs = run(*flat[:n_in])
            else:
                outs = body(*flat)
            _check_outputs(op, kernel, outs, per_out)
            return outs

        f = checked
        for axes in reversed(vmap):
            f = jax.vmap(f, in_axes=axes)
        return mlir.lower_fun(f, multiple_results=True)(plain_lowering_ctx(ctx), *args)

    return lowering


def install_lowerings(op: Any) -> None:
    """Register one lowering per platform for ``op``'s primitive (kernel chosen at lowering)."""
    for p in PLATFORMS:
        mlir.register_lowering(op.primitive, _make_lowering(op, p), platform=p)
