"""``flow.env``: several processes as one jflow program (OneFlow's ``oneflow.env``), on
``jax.distributed``.

Every process runs the same script (SPMD, as OneFlow and multi-controller JAX both do):

    import jflow as flow
    flow.env.init_distributed("host0:1234", num_processes=2, process_id=i, local_device_count=4)
    plc = flow.placement("cpu", range(flow.env.device_count()))   # ranks 0..7, both processes

*Ranks* (what ``flow.placement`` takes) number the devices of all processes ``0..N-1`` in
process order, then device id within a process (:func:`devices_by_rank`). They are not JAX's
``Device.id``: with several processes jaxlib 0.10 numbers CPU devices
``process_index * 2048 + i`` (ids 0..3 and 2048..2051 for two processes of four devices). In
one process the two agree, so single-process placements are unchanged.

Ops on global tensors, ``numpy()`` included, are collectives: every process must make the same
calls in the same order. ``to_global`` of a local tensor takes it as the *logical* value and
JAX checks that it is equal on all processes; :func:`global_from_process_local` instead builds a
global tensor from each process's own piece of the data.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from typing import Any

import jax
import numpy as np

from . import _jax_compat, foreign_logs
from .sharding import consistency
from .sharding.global_tensor import make_global
from .sharding.placement import _platform, devices_by_rank
from .sharding.sbp import _PartialSum
from .sharding.spec import named_sharding, normalize_nd_sbp
from .tensor import Tensor

__all__ = ["init_distributed", "is_distributed", "get_rank", "get_world_size", "get_local_rank",
           "device_count", "devices_by_rank", "local_ranks", "global_from_process_local"]

#: this process's index among the processes on its host, found at init (see get_local_rank)
_LOCAL_RANK: list[int] = [0]


def _backend_started() -> bool:
    return _jax_compat.backends_initialized()


def env_int(name: str, caller: str = "flow.env.init_distributed") -> int | None:
    """The integer environment variable ``name`` (None when unset or empty); a value that is
    not an integer raises, naming ``caller`` (the launcher's ``WORLD_SIZE``/``RANK`` are read
    here and by ``flow.distributed.init_process_group``)."""
    v = os.environ.get(name)
    if v in (None, ""):
        return None
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"{caller}: environment variable {name} must be an integer, got "
                         f"{v!r}") from None


def init_distributed(coordinator_address: str | None = None, num_processes: int | None = None,
                     process_id: int | None = None, local_device_count: int | None = None,
                     *, cpu_collectives: str | None = "gloo", timeout_s: int = 300) -> None:
    """Join this process to a multi-process jflow program (``jax.distributed.initialize``).

    Must run before JAX starts a backend, i.e. before the first tensor is made (importing
    jflow is fine): the device list, CPU device count and collectives are fixed then.

    Arguments left ``None`` come from OneFlow/PyTorch launcher variables when set
    (``MASTER_ADDR``/``MASTER_PORT``, ``WORLD_SIZE``, ``RANK``, and jflow's
    ``JFLOW_LOCAL_DEVICE_COUNT``; ``python -m jflow.distributed.launch`` sets them all), else
    from JAX's cluster detection (SLURM, Open MPI, ...). ``coordinator_address`` is
    ``"host:port"`` of process 0, which serves it. ``local_device_count`` sets how many CPU
    devices each process has (``jax_num_cpu_devices``; JAX's default is 1).
    ``cpu_collectives`` is how CPU devices of different processes talk: ``"gloo"`` (TCP,
    built into jaxlib), ``"mpi"``, or ``None`` (then no CPU computation can span processes).
    ``timeout_s`` bounds the wait for all processes.

    With several processes, two more things are switched on: every op on global tensors is
    checked to be the same on all processes when first met
    (:mod:`jflow.sharding.consistency`: a mismatch or a process that does not arrive
    raises an error naming the op instead of hanging), and an uncaught exception ends the
    process at once (see :func:`_exit_at_once_on_uncaught_exception`). gRPC's C++ logs are
    quieted (``GRPC_VERBOSITY=NONE`` unless set: :mod:`jflow.foreign_logs`).
    """
    if jax.distributed.is_initialized():
        raise RuntimeError("flow.env.init_distributed: already initialized (call it once per "
                           "process)")
    if _backend_started():
        raise RuntimeError("flow.env.init_distributed must be called before JAX starts its "
                           "backend, i.e. before any tensor is created or any JAX computation "
                           "or jax.devices() call; call it right after `import jflow` at the top "
                           "of the script (in a fresh process)")
    if coordinator_address is None and os.environ.get("MASTER_ADDR"):
        coordinator_address = f"{os.environ['MASTER_ADDR']}:{os.environ.get('MASTER_PORT', 1234)}"
    if num_processes is None:
        num_processes = env_int("WORLD_SIZE")
    if process_id is None:
        process_id = env_int("RANK")
    if local_device_count is None:
        local_device_count = env_int("JFLOW_LOCAL_DEVICE_COUNT")
    if local_device_count is not None:
        if local_device_count < 1:
            raise ValueError(f"flow.env.init_distributed: local_device_count must be >= 1, got "
                             f"{local_device_count}")
        jax.config.update("jax_num_cpu_devices", int(local_device_count))
    jax.config.update("jax_cpu_collectives_implementation", cpu_collectives)
    foreign_logs.quiet()  # before gRPC starts: its logs would bury jflow's errors
    jax.distributed.initialize(coordinator_address, num_processes, process_id,
                               initialization_timeout=timeout_s)
    _LOCAL_RANK[0] = _find_local_rank()
    if jax.process_count() > 1:
        consistency.install()
        _exit_at_once_on_uncaught_exception()


def _exit_at_once_on_uncaught_exception() -> None:
    """With several processes, an uncaught exception prints its traceback and ends the
    process at once (exit code 1), skipping interpreter shutdown.

    Why: a normal exit runs ``jax.distributed.shutdown``, whose barrier waits (up to 5 min)
    for every other process to exit too, while they may be blocked in a collective with this
    one or waiting for it. Exiting at once lets the launcher (``jflow.distributed.launch``)
    see the failure and stop the others, and JAX's coordinator tells the others this process
    is gone. ``atexit`` handlers do not run after an uncaught exception then; stdout and
    stderr are flushed."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        try:
            previous(kind, value, tb)
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(1)

    sys.excepthook = hook


def _find_local_rank() -> int:
    """``LOCAL_RANK`` if the launcher set it, else this process's position among those that
    share its host name (exchanged through the coordinator's key-value store)."""
    env = env_int("LOCAL_RANK")
    if env is not None:
        return env
    client, me, n = _jax_compat.distributed_client()
    if client is None or n == 1:
        return 0
    host = socket.gethostname()
    client.key_value_set(f"jflow/env/host/{me}", host)
    hosts = [client.blocking_key_value_get(f"jflow/env/host/{p}", 60_000) for p in range(n)]
    return sum(h == host for h in hosts[:me])


def is_distributed() -> bool:
    """Whether :func:`init_distributed` (``jax.distributed.initialize``) has run."""
    return jax.distributed.is_initialized()


def get_rank() -> int:
    """This process's index (0 without ``init_distributed``, starting no backend)."""
    return jax.process_index() if is_distributed() else 0


def get_world_size() -> int:
    """The number of processes (1 without ``init_distributed``)."""
    return jax.process_count() if is_distributed() else 1


def get_local_rank() -> int:
    """This process's index among the processes on the same host."""
    return _LOCAL_RANK[0]


def device_count(type: str = "cpu") -> int:  # noqa: A002
    """The number of ``type`` devices over all processes: valid ranks are ``0..n-1``."""
    return len(jax.devices(_platform(type)))


def local_ranks(type: str = "cpu") -> list[int]:  # noqa: A002
    """The ranks whose devices this process holds."""
    me = jax.process_index()
    return [r for r, d in enumerate(devices_by_rank(type)) if d.process_index == me]


def global_from_process_local(data: Any, placement: Any, sbp: Any) -> Any:
    """A global tensor from each process's own piece (``jax.make_array_from_process_local_data``).

    ``data`` (array-like or local tensor) is what this process holds: along a split dimension,
    its ranks' shards concatenated in rank order; along other dimensions, the full extent (so
    the global shape is inferred). A broadcast tensor's pieces must agree across processes (not
    checked). ``partial_sum`` is refused: build it split or broadcast, then
    ``to_global(sbp=partial_sum)``.
    """
    fname = "flow.env.global_from_process_local"
    local = np.asarray(data._value if isinstance(data, Tensor) else data)
    nd = normalize_nd_sbp(sbp, placement, local.ndim, fname)
    if any(isinstance(x, _PartialSum) for x in nd):
        raise ValueError(f"{fname}: partial_sum pieces are not supported; build the tensor "
                         f"split or broadcast, then .to_global(sbp=partial_sum)")
    value = jax.make_array_from_process_local_data(named_sharding(placement, nd, local.ndim),
                                                   local)
    return make_global(value, placement, nd)
