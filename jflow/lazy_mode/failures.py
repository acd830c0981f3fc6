"""What a failed lazy run raises: the op's own error, with the user's line that recorded it.

A recorded call runs later, so its error surfaces far from the code that made it. Lazy mode
keeps the user's line for calls that can fail while running — ops with host kernels
(``kernels.registry.runs_host_code``) and deferred value checks — and a failure raises the
kernel's own error (not JAX's runtime-error wrapper) with a note naming the op and that line.
"""

from __future__ import annotations

import contextlib
import sys

import jax

from .._jax_compat import drop_traceback_note
from ..kernels.registry import take_host_error

__all__ = ["CALL_SITES", "call_site", "annotated"]

#: ``[bool]``: whether a recorded op keeps the user's call site (file, line) — what a failure
#: at run time is attributed to (``flow.config.set_lazy_call_sites``)
CALL_SITES = [True]
#: frames that are not the user's: jflow's own, its generated code, ``with`` machinery
_INTERNAL = (__file__.rsplit("/", 2)[0] + "/", "<jflow", contextlib.__file__)


def call_site() -> tuple[str, int] | None:
    """The innermost frame outside jflow (the user's line that called the op)."""
    f = sys._getframe(1)
    while f is not None:
        if not f.f_code.co_filename.startswith(_INTERNAL):
            return f.f_code.co_filename, f.f_lineno
        f = f.f_back
    return None


def annotated(cause: BaseException, node: int, nodes: list, sites: list, checks: list
              ) -> BaseException:
    """``cause`` (a python kernel's own error for JAX's wrapper of it) with a note naming the
    failing node ``node`` and the user's line that recorded it."""
    if isinstance(cause, jax.errors.JaxRuntimeError):
        cause = take_host_error() or cause  # (a python kernel's own error)
    drop_traceback_note(cause)  # (JAX's footer announces an exception that never follows)
    if node < len(nodes):
        site = sites[node]
        what = "value check" if any(n == node for n, _, _ in checks) else \
            f"op '{getattr(nodes[node][0], '__name__', '?')}'"
        cause.add_note(f"(lazy mode: raised when the pending ops ran; the failing {what} "
                       + (f"was recorded at {site[0]}:{site[1]})" if site else
                          "has no recorded line)"))
    return cause
