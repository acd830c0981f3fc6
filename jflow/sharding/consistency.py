"""Checking that the processes of a multi-process program run the same global ops.

Every op on global tensors is a collective: all processes must call it, in the same order,
with the same logical shapes, dtypes, SBP and attributes. When they do not (a rank-dependent
branch, a batch of another shape on one process), the compiled programs no longer match and
the processes block in a collective until gloo's or JAX's timeouts, with a message that names
neither op. This module turns that into an error naming the op on both sides:

    RuntimeError: flow.distributed consistency check failed at global op call #12: this
    process (0) runs 'matmul' with inputs [(64, 64) float32 S(0), (64, 10) float32 B] ...,
    but process 1 runs 'add' with inputs [...]

How: before a global op runs (``jflow.sharding.execute.global_apply`` calls :func:`_hook`),
each process writes a fingerprint of the call (op name, attributes, placement, input shapes,
dtypes and SBP, and its global-op call number) into the ``jax.distributed`` coordinator's
key-value store and reads every other process's fingerprint of the same check, waiting at most
the timeout. A process that does not arrive in time is reported by name ("process 1 did not
reach ... within 60 s").

When (``mode``):

* ``"new"`` (the default with several processes): only the first time this process meets
  each distinct call (op, attributes, placement, input SBP, shapes, dtypes). That is where a
  disagreement first shows — an op or shape the other processes are not running is new
  to someone — and a training loop repeats calls, so after the first step no check costs
  anything but a set lookup. The set of calls seen depends only on the sequence of global ops,
  so every process that runs the same program checks at the same points. The call number in
  the fingerprint also catches a process that ran extra (already seen) ops in between.
* ``"all"``: every global op call (one key-value round trip each: for debugging).
* ``"off"``: no checks.

Configure with :func:`set_check` (also ``flow.config.set_collective_check``) or the
environment: ``JFLOW_COLLECTIVE_CHECK`` (``new``/``all``/``off``) and
``JFLOW_COLLECTIVE_CHECK_TIMEOUT_S`` (seconds, default 300: a process may legitimately lag
behind the others by a long compile or rank-0-only work such as evaluation or saving).
With one process nothing is installed and nothing is checked.

Scope: ops on global tensors through ``global_apply`` (eager, and traced inside ``flow.jit``
/ ``nn.Graph``). SBP conversions (``to_global``), ``numpy()`` and ``flow.distributed``'s
collectives are not fingerprinted.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from typing import Any

from .. import _jax_compat
from . import execute as _execute
from .sbp import Signature

__all__ = ["set_check", "get_check", "install", "uninstall", "installed", "stats", "MODES",
           "ENV_MODE", "ENV_TIMEOUT"]

MODES = ("new", "all", "off")
ENV_MODE = "JFLOW_COLLECTIVE_CHECK"
ENV_TIMEOUT = "JFLOW_COLLECTIVE_CHECK_TIMEOUT_S"
_DEFAULT_TIMEOUT_S = 300.0
#: distinct calls remembered in "new" mode before the set restarts (the restart point depends
#: only on the op sequence, so it is the same on every process)
_SEEN_LIMIT = 65536
_KEY = "jflow/collective_check/{seq}/{process}"
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # object addresses differ between processes


class _State:
    __slots__ = ("mode", "timeout_s", "calls", "checks", "seen", "seconds", "agreed")

    def __init__(self) -> None:
        self.mode = _mode_from_env()
        self.timeout_s = _timeout_from_env()
        self.calls = 0  # global op calls of this process
        self.checks = 0  # fingerprints exchanged
        self.seen: set[Any] = set()
        self.seconds = 0.0  # spent exchanging
        self.agreed = ""  # the last fingerprint every process agreed on


def _mode_from_env() -> str:
    mode = os.environ.get(ENV_MODE, "new").strip().lower() or "new"
    if mode not in MODES:
        raise ValueError(f"flow.distributed consistency check: environment variable {ENV_MODE}"
                         f" must be one of {MODES}, got {mode!r}")
    return mode


def _timeout_from_env() -> float:
    v = os.environ.get(ENV_TIMEOUT, "")
    if not v.strip():
        return _DEFAULT_TIMEOUT_S
    try:
        t = float(v)
    except ValueError:
        raise ValueError(f"flow.distributed consistency check: environment variable "
                         f"{ENV_TIMEOUT} must be a number of seconds, got {v!r}") from None
    if not t > 0:
        raise ValueError(f"flow.distributed consistency check: {ENV_TIMEOUT} must be > 0, "
                         f"got {v!r}")
    return t


_STATE = _State()


def set_check(mode: str | None = None, timeout_s: float | None = None) -> tuple[str, float]:
    """Set when global ops are checked across processes (``"new"``, ``"all"``, ``"off"``; see
    the module docstring) and how long a check waits for the other processes; ``None`` keeps
    the current value. Returns the previous ``(mode, timeout_s)``. Every process must set the
    same mode at the same point of the program (the checks are exchanges)."""
    fname = "flow.config.set_collective_check"
    old = (_STATE.mode, _STATE.timeout_s)
    if mode is not None:
        if mode not in MODES:
            raise ValueError(f"{fname}: mode must be one of {MODES}, got {mode!r}")
        _STATE.mode = mode
    if timeout_s is not None:
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) \
                or not timeout_s > 0:
            raise ValueError(f"{fname}: timeout_s must be a positive number of seconds, got "
                             f"{timeout_s!r}")
        _STATE.timeout_s = float(timeout_s)
    return old


def get_check() -> tuple[str, float]:
    """The current ``(mode, timeout_s)``."""
    return _STATE.mode, _STATE.timeout_s


def stats() -> dict[str, Any]:
    """Global op calls seen, fingerprints exchanged and the seconds spent on them (this
    process), and whether the check is installed."""
    return {"installed": installed(), "mode": _STATE.mode, "calls": _STATE.calls,
            "checks": _STATE.checks, "seconds": _STATE.seconds}


def installed() -> bool:
    """Whether global ops are being checked (``init_distributed`` with several processes)."""
    return _execute.CONSISTENCY_HOOK[0] is _hook


def install() -> None:
    """Check global ops from now on (called by ``flow.env.init_distributed`` when there are
    several processes)."""
    _execute.CONSISTENCY_HOOK[0] = _hook


def uninstall() -> None:
    """Stop checking (the counters are kept)."""
    if installed():
        _execute.CONSISTENCY_HOOK[0] = None


# -- the coordinator's key-value store --------------------------------------------------------
def _client_and_world() -> tuple[Any, int, int]:
    """``jax.distributed``'s client, this process's index and the process count."""
    return _jax_compat.distributed_client()


def _is_timeout(e: Exception) -> bool:
    return "DEADLINE_EXCEEDED" in str(e) or "timed out" in str(e).lower()


def _is_lost_contact(e: Exception) -> bool:
    """The coordination service went away (its process exited): gRPC's UNAVAILABLE."""
    return "UNAVAILABLE" in str(e) or "connection reset" in str(e).lower()


# -- fingerprints -----------------------------------------------------------------------------
def _nd(nd: Sequence[Any]) -> str:
    s = [Signature._short(x) for x in nd]
    return s[0] if len(s) == 1 else "(" + ", ".join(s) + ")"


def _fingerprint(op: Any, params: dict[str, Any], plc: Any, in_nds: Sequence[Any],
                 ins: Sequence[Any]) -> str:
    """What identifies the call, readably: the op name, attributes, placement and each
    input's logical shape, dtype and SBP."""
    inputs = ", ".join(f"{tuple(t._meta.shape)} {t._meta.dtype} {_nd(nd)}"
                       for t, nd in zip(ins, in_nds))
    attrs = {k: v for k, v in params.items() if k != "_layout"}
    attr_s = _ADDRESS.sub("", repr(attrs))
    if len(attr_s) > 300:
        attr_s = attr_s[:300] + "...}"
    ranks = list(plc.ranks)
    where = f"ranks {ranks}" if plc.hierarchy == (len(ranks),) else \
        f"ranks {ranks} hierarchy {tuple(plc.hierarchy)}"
    text = f"'{op.name}' with inputs [{inputs}] on {plc.type} {where}"
    if attrs:
        text += f", attrs {attr_s}"
    return text


def _hook(op: Any, params: dict[str, Any], plc: Any, in_nds: Sequence[Any], ins: Sequence[Any],
          key: Any) -> None:
    """Called by ``global_apply`` before each global op (``key``: its executable cache key,
    ``None`` when unhashable)."""
    st = _STATE
    st.calls += 1
    if st.mode == "off":
        return
    if st.mode == "new" and key is not None:
        if key in st.seen:
            return
        if len(st.seen) >= _SEEN_LIMIT:
            st.seen.clear()
        st.seen.add(key)
    client, me, n = _client_and_world()
    if client is None or n <= 1:
        return
    t0 = time.perf_counter()
    try:
        _exchange(client, me, n, _fingerprint(op, params, plc, in_nds, ins))
    finally:
        st.seconds += time.perf_counter() - t0


def _exchange(client: Any, me: int, n: int, text: str) -> None:
    """Publish this process's fingerprint of the current check, compare every other's."""
    st = _STATE
    seq, call = st.checks, st.calls
    st.checks += 1
    mine = f"{call}\n{text}"
    client.key_value_set(_KEY.format(seq=seq, process=me), mine)
    deadline = time.monotonic() + st.timeout_s
    here = f"global op call #{call} ({text})"
    last = (f" The last global op all processes were checked at is call #"
            f"{st.agreed.replace(chr(10), ': ', 1)}." if st.agreed else "")
    for p in range(n):
        if p == me:
            continue
        left_ms = max(1, int((deadline - time.monotonic()) * 1000))
        try:
            theirs = client.blocking_key_value_get(_KEY.format(seq=seq, process=p), left_ms)
        except Exception as e:  # jaxlib's runtime error type is not public
            if _is_timeout(e):
                raise RuntimeError(
                    f"flow.distributed consistency check: process {p} did not reach this "
                    f"process's ({me}) {here} within {st.timeout_s:g} s (check #{seq}): it "
                    f"is running other ops, is stuck, or has failed. Every process must run "
                    f"the same global ops in the same order.{last} (Timeout: "
                    f"flow.config.set_collective_check(timeout_s=...) or {ENV_TIMEOUT}.)"
                ) from None
            if _is_lost_contact(e):  # the coordinator (process 0) exited, likely on its own error
                raise RuntimeError(
                    f"flow.distributed consistency check: this process ({me}) lost contact "
                    f"with the coordination service while reading process {p}'s fingerprint "
                    f"for {here} (check #{seq}); process 0 hosts it and has probably stopped "
                    f"with its own error, which its output names.{last}") from None
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise RuntimeError(f"flow.distributed consistency check: reading process {p}'s "
                               f"fingerprint for {here} failed: {first}") from None
        their_call, _, their_ident = theirs.partition("\n")
        if theirs != mine:
            raise RuntimeError(
                f"flow.distributed consistency check failed (check #{seq}): this process "
                f"({me}) runs {text} as global op call #{call}, but process {p} runs "
                f"{their_ident} as its call #{their_call}. Every process must run the same "
                f"global ops in the same order, on tensors of the same logical shapes, dtypes "
                f"and SBP.{last}")
    st.agreed = mine
    if seq > 0:  # every process has passed check seq-1 (each wrote seq): drop this one's key
        client.key_value_delete(_KEY.format(seq=seq - 1, process=me))
