"""Autograd: one backward rule per op serving the eager tape, JAX's own
transformations (``jax.grad`` / ``jvp`` / ``vmap`` ...) and the tape while tracing.

* :mod:`.rule`      — ``register_backward``: an op's rule (capture what to save, apply);
  ``register_tangent``: an op's own forward-mode rule, where transposing it will not do;
* :mod:`.graph`     — the tape: one node per recorded op call;
* :mod:`.saved`     — saved values read back for a backward (version checks, freed graphs);
* :mod:`.engine`    — ``backward`` / ``grad``: runs the rules over the tape (whole graphs as
  one executable: :mod:`.compiled_graph`); attaches ``Tensor.backward`` / ``register_hook``;
* :mod:`.jax_rules` — the primitives' JVP / transpose rules, derived from the same rule;
* :mod:`.function`  — ``flow.autograd.Function``: forward/backward written by the user;
* :mod:`.anomaly_mode` — ``detect_anomaly`` / ``set_detect_anomaly``: NaN checks per node;
* :mod:`.gradcheck` — ``gradcheck`` / ``gradgradcheck``: finite differences against the tape;
* :mod:`.variable`  — ``Variable``, PyTorch's pre-0.4 name for a tensor;
* ``rules/``        — the rules of jflow's own ops, one module per op family.
"""

import functools
import threading
from typing import Any

from ..amp.inference_mode import inference_mode
from . import functional as functional  # (torch.autograd.functional: jacobian, hessian ...)
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .anomaly_mode import is_anomaly_check_nan_enabled as is_anomaly_check_nan_enabled
from .anomaly_mode import is_anomaly_enabled as is_anomaly_enabled
from .anomaly_mode import set_anomaly_enabled as set_anomaly_enabled
from .engine import backward, grad
from .function import Function, FunctionCtx
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError as GradcheckError
from .gradcheck import gradcheck, gradgradcheck
from .rule import BackwardContext, GradientNotFoundError, register_backward, register_tangent
from .variable import Variable

__all__ = ["enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled", "backward", "grad",
           "Function", "FunctionCtx", "BackwardContext", "GradientNotFoundError",
           "register_backward", "register_tangent", "Variable", "variable", "detect_anomaly",
           "set_detect_anomaly", "gradcheck", "gradgradcheck", "inference_mode",
           "set_multithreading_enabled", "is_multithreading_enabled", "is_view_replay_enabled"]
# (not in __all__, as in PyTorch: GradcheckError, set_anomaly_enabled, is_anomaly_enabled,
# is_anomaly_check_nan_enabled — torch has the last three at top level)


def variable(*args: Any, **kwargs: Any) -> None:
    """``torch.autograd.variable(...)``: removed in PyTorch, raises as there."""
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) "
                       "instead")


class _Multithreading(threading.local):
    enabled = True


_multithreading = _Multithreading()


def is_multithreading_enabled() -> bool:
    """PyTorch's switch for running a backward on per-device worker threads (True by
    default; per thread). jflow's engine always runs the backward on the calling thread and
    XLA schedules the devices, so the flag is kept and reported but changes nothing."""
    return _multithreading.enabled


class set_multithreading_enabled:
    """Set :func:`is_multithreading_enabled`'s flag: as a function, a context manager (the
    previous value back on exit) or a decorator, as PyTorch's. Nothing else changes (jflow's
    backward runs on the calling thread either way)."""

    def __init__(self, mode: bool) -> None:
        self.prev = _multithreading.enabled
        _multithreading.enabled = bool(mode)
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _multithreading.enabled = self.prev

    def __call__(self, fn: Any) -> Any:
        # (as PyTorch's: building the decorator already set the flag, and each call of the
        # decorated function sets it again and restores what it found)
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self) -> "set_multithreading_enabled":
        """A new one with the same mode (PyTorch's decorator form enters one per call)."""
        return self.__class__(self.mode)


def is_view_replay_enabled() -> bool:
    """True: a jflow view always refreshes by replaying its own view steps on its base after
    an in-place write (``jflow.views.alias``), never by ``as_strided`` — the behaviour PyTorch
    switches on with view replay (off by default there)."""
    return True
