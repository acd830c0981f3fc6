"""Quiet the C++ logs of the libraries under multi-process jflow, keep jflow's own errors.

With several processes, ``jax.distributed`` runs a gRPC coordination service. When one
process fails (a :mod:`jflow.sharding.consistency` error, any uncaught exception), the
others lose the coordinator and print gRPC / absl log lines to stderr (``E1202 ...
coordination_service_agent.cc] Polled an error from coordination service``, ``F... client.h]
Terminating process because the JAX distributed service detected fatal errors``, ``Additional
GRPC error information ...``, ``*** Check failure stack trace: ***``) around jflow's one
readable error. Those processes end either way (the launcher stops them and names the process
that failed first), so the lines only bury the error.

The one knob that silences them is ``GRPC_VERBOSITY``: gRPC sets the process-wide absl log
threshold from it when it starts (inside ``jax.distributed.initialize``), overriding
``TF_CPP_MIN_LOG_LEVEL`` (checked with jaxlib 0.10: ``GRPC_VERBOSITY=ERROR`` with
``TF_CPP_MIN_LOG_LEVEL=3`` still prints the ``E`` and ``F`` lines). So
:func:`jflow.env.init_distributed` sets ``GRPC_VERBOSITY=NONE`` before it starts
``jax.distributed`` — only when the variable is unset: a user who sets it (``ERROR``,
``INFO``, ``DEBUG``) gets the C++ logs back, e.g. to debug a hang. The cost: the other C++
log lines of XLA in a multi-process run (warnings, errors that also surface as Python
exceptions) are hidden too. Single-process jflow changes nothing. The processes a run starts
inherit the setting through the environment.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

__all__ = ["QUIET_ENV", "quiet"]

#: variables set (when unset) before ``jax.distributed`` starts, and their values
QUIET_ENV: dict[str, str] = {"GRPC_VERBOSITY": "NONE"}


def quiet(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set each :data:`QUIET_ENV` variable the user has not set (``os.environ`` by default);
    returns those it set. Must run before gRPC starts (``jax.distributed.initialize``)."""
    env = os.environ if environ is None else environ
    done = {k: v for k, v in QUIET_ENV.items() if env.get(k) in (None, "")}
    env.update(done)
    return done
