"""The checker's sample registry: inputs, attrs and an independent NumPy reference per op."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from ..ops import get as get_op
from ..tensor import _wrap

__all__ = ["Sample", "ErrorSample", "OpSamples", "register_samples", "get_samples",
           "samples_registered", "rerun"]


@dataclass
class Sample:
    """One call of an op: NumPy ``inputs`` (``None`` for an absent optional input, a list for
    a variadic one) and ``attrs``.

    ``batch``: optional second set of inputs for the vmap check (default: floats scaled by
    0.5, other dtypes repeated). The vmap check runs on one sample per kernel the op's
    samples select (one that can be batched: the batching rule is generic, see
    :mod:`jflow.testing.checker`; the first whose float64 inputs the gradient check also
    runs, else the first); ``vmap=True`` runs it on this sample too, ``vmap=False`` never
    on this one.
    ``grad``: for a differentiable op the gradient check runs on the sample's floating inputs
    (made float64): tape and ``jax.grad`` against central finite differences, and ``jax.jvp``
    against ``jax.vjp``.
    """

    inputs: Sequence[Any]
    attrs: dict[str, Any] = field(default_factory=dict)
    rtol: float | None = None
    atol: float | None = None
    batch: Sequence[Any] | None = None
    vmap: bool | None = None
    name: str = ""
    #: False skips the gradient check for this sample (say why in a comment: e.g. inputs at a
    #: kink or jump on purpose, where finite differences are meaningless).
    grad: bool = True
    #: False skips the SBP check for this sample (say why in a comment).
    sbp: bool = True


@dataclass
class ErrorSample:
    """A bad call that must raise ``exc`` with ``match`` (a regex) in its message."""

    inputs: Sequence[Any]
    attrs: dict[str, Any]
    exc: type[BaseException]
    match: str


@dataclass
class OpSamples:
    op: str
    samples: list[Sample]
    reference: Callable[..., Any] | None
    verify: Callable[..., None] | None
    errors: list[ErrorSample]
    #: The module that registered the samples (tests/test_families.py checks that it is the
    #: op family's ``jflow/testing/op_samples/<family>.py``).
    module: str = ""
    #: For an op PyTorch gives no derivative while its outputs still require grad (geqrf):
    #: a call whose backward must raise ``exc`` matching ``match`` and naming the op; the
    #: gradient check is then this (its rule raises: no finite differences to compare).
    grad_error: ErrorSample | None = None


_SAMPLES: dict[str, OpSamples] = {}


def register_samples(op: str, samples: Sequence[Sample],
                     reference: Callable[..., Any] | None = None, *,
                     verify: Callable[..., None] | None = None,
                     errors: Sequence[ErrorSample] = (),
                     grad_error: ErrorSample | None = None) -> None:
    """Register checker samples for ``op``.

    ``reference(*numpy_inputs, **attrs)`` returns the expected output(s), computed
    independently (NumPy). Ops whose values cannot be predicted (random draws) give instead
    ``verify(outputs, *numpy_inputs, **attrs)``, which asserts properties of the outputs.
    ``grad_error``: an op without a derivative whose rule raises (see :class:`OpSamples`).
    """
    if (reference is None) == (verify is None):
        raise ValueError(f"register_samples('{op}'): give exactly one of reference= or verify=")
    if not samples:
        raise ValueError(f"register_samples('{op}'): at least one sample is needed")
    module = sys._getframe(1).f_globals.get("__name__", "")
    _SAMPLES[op] = OpSamples(op, list(samples), reference, verify, list(errors), module,
                             grad_error)


def get_samples(op: str) -> OpSamples:
    """The checker samples registered for ``op`` (KeyError naming the op otherwise)."""
    try:
        return _SAMPLES[op]
    except KeyError:
        raise KeyError(f"op '{op}' has no checker samples; register them with "
                       f"jflow.testing.register_samples") from None


def samples_registered() -> list[str]:
    """The names of the ops that have checker samples, sorted."""
    return sorted(_SAMPLES)


#: while the op checker runs a sample's ``verify``: (op name, the sample's attrs, its inputs'
#: shapes and dtypes, a function running the op on other such inputs by the path whose
#: outputs are being verified); see :func:`rerun`
_RERUN: list[tuple[str, dict[str, Any], list[Any], Callable[[Sequence[Any]], list[Any]]]] = []


def _signature(inputs: Sequence[Any]) -> list[Any]:
    """Shapes and dtypes of a sample's inputs (lists for variadic ones, None for absent)."""
    def sig(x: Any) -> Any:
        if isinstance(x, list):
            return [sig(e) for e in x]
        return None if x is None else (np.shape(x), np.asarray(x).dtype)
    return [sig(x) for x in inputs]


def rerun(op: str, inputs: Sequence[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    """The outputs of ``op`` on other ``inputs`` with ``attrs``, for a ``verify`` that calls
    the op again (random draws: the same key and counter give the same numbers, another key
    or counter other numbers). While the op checker runs a sample's ``verify``, on inputs of
    the sample's shapes and dtypes with the sample's attrs: by the path whose outputs are
    being verified, with its executable (the eager one, or the op's staged ``jax.jit``, see
    ``checker._check_forward``: no executable of its own); eagerly otherwise."""
    if _RERUN:
        name, want_attrs, want_sig, run = _RERUN[-1]
        try:  # the same attrs once defaults are filled in
            same = (name == op and _signature(inputs) == want_sig
                    and bool(get_op(op).normalize_attrs(dict(attrs))
                             == get_op(op).normalize_attrs(dict(want_attrs))))
        except (TypeError, ValueError):  # bad attrs, or an array attr: run eagerly
            same = False
        if same:
            return run(inputs)

    def wrap(x: Any) -> Any:  # (jax.device_put: jnp.asarray stages a copy per shape)
        if isinstance(x, list):
            return [wrap(e) for e in x]
        return None if x is None else _wrap(jax.device_put(np.asarray(x)))
    res = get_op(op)(*[wrap(x) for x in inputs], **attrs)
    return [np.asarray(t._value) for t in (res if isinstance(res, (tuple, list)) else (res,))]
