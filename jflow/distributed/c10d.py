"""The default process group and its collectives (PyTorch's ``distributed_c10d``).

Choices, where jflow differs from a c10d backend:

* **One process** (``WORLD_SIZE`` unset or 1): ``init_process_group`` records a world of one
  process and starts nothing. ``jax.distributed`` is *not* initialised: it must run before
  JAX's backend starts, and PyTorch scripts call ``init_process_group`` at any time (after
  tensors exist, in a test process, several times after ``destroy_process_group``). Every
  collective is then the identity, as a gloo group of one is.
* **Several processes**: ``init_process_group`` calls :func:`jflow.env.init_distributed`
  (so it must come before the first tensor, and that function's errors say so). If
  ``flow.env.init_distributed`` already ran, the group adopts its processes.
  ``destroy_process_group`` forgets the group but cannot stop ``jax.distributed`` (JAX's
  backend does not restart); a later ``init_process_group`` adopts it again.
* Collectives run on JAX's public multi-process utilities
  (``jax.experimental.multihost_utils``: ``process_allgather``, ``broadcast_one_to_all``,
  ``sync_global_devices``), which move the data through the devices of every process. They
  are synchronous: ``async_op=True`` returns a :class:`Work` that is already complete.
* Tensors are process-local (a PyTorch tensor is). A global tensor is refused: its value is
  already one logical value over the processes (use ``to_global``/``to_local``).
* As in ``torch.distributed``, collectives are not differentiable: they write the tensor's
  data in place, outside autograd, also for tensors that require grad.
"""

from __future__ import annotations

import datetime
import enum
import os
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils

from .. import _jax_compat
from .. import env as _env
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor, _wrap

__all__ = ["Backend", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "all_gather",
           "all_reduce", "barrier", "broadcast", "destroy_process_group", "get_backend",
           "get_rank", "get_world_size", "group", "init_process_group", "is_available",
           "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
           "new_group", "reduce"]

_NOT_INIT = ("Default process group has not been initialized, please make sure to call "
             "init_process_group.")

#: backend name -> JAX's CPU collectives implementation (how CPU devices of processes talk)
_CPU_COLLECTIVES = {"gloo": "gloo", "mpi": "mpi", "nccl": "gloo", "ucc": "gloo"}

_DEFAULT_TIMEOUT_S = 300


class Backend(str):
    """A backend name (``Backend.GLOO == "gloo"``), as ``torch.distributed.Backend``."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    UCC = "ucc"

    def __new__(cls, name: str) -> Backend:
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name!r}")
        return str.__new__(cls, name.lower())


class ReduceOp(enum.Enum):
    """How :func:`all_reduce` and :func:`reduce` combine the processes' tensors."""

    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    AVG = "avg"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"

    def __repr__(self) -> str:
        return f"<ReduceOp.{self.name}>"


class ProcessGroup:
    """A group of processes. Only the default group (all processes) exists: see
    :func:`new_group`."""

    def __init__(self, rank: int, size: int, backend: str) -> None:
        self._rank, self._size, self._backend = rank, size, backend

    def rank(self) -> int:
        """This process's rank in the group."""
        return self._rank

    def size(self) -> int:
        """The number of processes in the group."""
        return self._size

    def name(self) -> str:
        """The backend's name."""
        return self._backend

    def __repr__(self) -> str:
        return (f"<flow.distributed.ProcessGroup (default) rank={self._rank} "
                f"size={self._size} backend={self._backend!r}>")


class GroupMember:
    """``GroupMember.WORLD``: the default group once initialised (``None`` before)."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = -100


class group:  # noqa: N801  (torch.distributed.group, a namespace)
    """``flow.distributed.group.WORLD``: the default group once initialised."""

    WORLD: ProcessGroup | None = None


class Work:
    """What a collective with ``async_op=True`` returns. jflow's collectives finish before
    they return, so the work is complete at once; ``wait()`` is there for PyTorch code."""

    def __init__(self, result: list[Tensor]) -> None:
        self._result = result

    def wait(self, timeout: Any = None) -> bool:
        """True at once: the collective finished before it returned (``timeout`` is ignored)."""
        return True

    def is_completed(self) -> bool:
        """Always True: jflow's collectives finish before they return."""
        return True

    def is_success(self) -> bool:
        """Always True: a failed collective raises instead of returning a ``Work``."""
        return True

    def exception(self) -> None:
        """Always None (see ``is_success``)."""
        return None

    def result(self) -> list[Tensor]:
        """The collective's output tensors."""
        return self._result


def _set_world(pg: ProcessGroup | None) -> None:
    GroupMember.WORLD = pg
    group.WORLD = pg


# -- setup -------------------------------------------------------------------------------------

def is_available() -> bool:
    """Always true: jflow's distributed package needs nothing beyond JAX."""
    return True


def is_gloo_available() -> bool:
    """Whether this jaxlib has gloo CPU collectives (processes' CPU devices can talk)."""
    return _jax_compat.jaxlib_has("make_gloo_tcp_collectives")


def is_mpi_available() -> bool:
    """Whether this jaxlib was built with MPI collectives."""
    return _jax_compat.jaxlib_has("make_mpi_collectives")


def is_nccl_available() -> bool:
    """Whether GPU devices are present (JAX's GPU collectives are NCCL); starts JAX's
    backend."""
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


def is_initialized() -> bool:
    """Whether the default process group exists (``init_process_group`` ran, and no
    ``destroy_process_group`` since)."""
    return GroupMember.WORLD is not None


_INIT = "flow.distributed.init_process_group"


def _cpu_collectives(backend: str) -> str:
    fname = "flow.distributed.init_process_group"
    parts = [p.strip() for p in backend.split(",")]
    names = []
    for p in parts:
        dev, _, name = p.rpartition(":")
        names.append((dev or None, name))
    cpu = [n for d, n in names if d in (None, "cpu")] or [n for _, n in names]
    for _, n in names:
        if n not in _CPU_COLLECTIVES:
            raise ValueError(f"{fname}: unknown backend {n!r} in backend={backend!r}; "
                             f"supported: {sorted(_CPU_COLLECTIVES)} (or 'cpu:gloo,cuda:nccl')")
    return _CPU_COLLECTIVES[cpu[0]]


def _timeout_s(timeout: Any) -> int:
    if timeout is None:
        return _DEFAULT_TIMEOUT_S
    if isinstance(timeout, datetime.timedelta):
        return max(1, int(timeout.total_seconds()))
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return max(1, int(timeout))
    raise TypeError(f"flow.distributed.init_process_group: timeout must be a "
                    f"datetime.timedelta (or seconds), got {type(timeout).__name__}")


def _coordinator(init_method: str | None) -> str | None:
    fname = "flow.distributed.init_process_group"
    if init_method is None or init_method.startswith("env://"):
        addr = os.environ.get("MASTER_ADDR")
        if not addr:
            return None
        return f"{addr}:{os.environ.get('MASTER_PORT', '29500')}"
    if init_method.startswith("tcp://"):
        return init_method[len("tcp://"):].split("?", 1)[0].rstrip("/")
    raise ValueError(f"{fname}: init_method {init_method!r} is not supported; use 'env://' "
                     f"(MASTER_ADDR/MASTER_PORT) or 'tcp://host:port'")


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: Any = None, world_size: int = -1, rank: int = -1,
                       store: Any = None, group_name: str = "", pg_options: Any = None,
                       device_id: Any = None) -> None:
    """Create the default process group, as ``torch.distributed.init_process_group``.

    ``world_size``/``rank`` default to ``WORLD_SIZE``/``RANK`` (torchrun), else 1 and 0.
    A world of one process starts nothing (see the module docstring for why). A larger world
    joins the processes through :func:`jflow.env.init_distributed` (``jax.distributed``),
    coordinated at ``MASTER_ADDR:MASTER_PORT`` or ``init_method="tcp://host:port"``; that
    must happen before any tensor is made. ``backend`` picks the CPU collectives (``"gloo"``,
    default, or ``"mpi"``; ``"nccl"`` names GPU collectives, which JAX brings itself).
    ``store``, ``group_name``, ``pg_options`` and ``device_id`` have no counterpart
    (``store`` is refused; the others are accepted and ignored).
    """
    fname = "flow.distributed.init_process_group"
    if is_initialized():
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None:
        raise NotImplementedError(f"{fname}: store= is not supported; processes meet at "
                                  f"jax.distributed's coordinator (init_method='env://' or "
                                  f"'tcp://host:port')")
    if backend is not None and not isinstance(backend, str):
        raise TypeError(f"{fname}: backend must be a string such as 'gloo', got "
                        f"{type(backend).__name__}")
    name = Backend(backend or Backend.GLOO)
    collectives = _cpu_collectives(name)
    timeout_s = _timeout_s(timeout)
    for arg, v in (("world_size", world_size), ("rank", rank)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"{fname}: {arg} must be an int, got {type(v).__name__}")
    ws = world_size if world_size != -1 else _env.env_int("WORLD_SIZE", _INIT)
    rk = rank if rank != -1 else _env.env_int("RANK", _INIT)
    if _env.is_distributed():  # flow.env.init_distributed ran: adopt its processes
        n, me = jax.process_count(), jax.process_index()
        if (ws is not None and ws != n) or (rk is not None and rk != me):
            raise ValueError(f"{fname}: world_size={ws}, rank={rk} disagree with the running "
                             f"jax.distributed ({n} processes, this one {me})")
        ws, rk = n, me
    ws = 1 if ws is None else ws
    rk = 0 if rk is None else rk
    if ws < 1:
        raise ValueError(f"{fname}: world_size must be >= 1, got {ws}")
    if not 0 <= rk < ws:
        raise ValueError(f"{fname}: rank {rk} is out of range for world_size {ws} (valid: "
                         f"0..{ws - 1})")
    if ws > 1 and not _env.is_distributed():
        addr = _coordinator(init_method)
        if addr is None:
            raise ValueError(f"{fname}: world_size={ws} needs the coordinator's address: set "
                             f"MASTER_ADDR and MASTER_PORT (as torchrun does) or pass "
                             f"init_method='tcp://host:port'")
        _env.init_distributed(addr, num_processes=ws, process_id=rk,
                              cpu_collectives=collectives, timeout_s=timeout_s)
    _set_world(ProcessGroup(rk, ws, str(name)))


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Forget the default group. ``jax.distributed`` (several processes) keeps running: JAX
    cannot restart it in this process; ``init_process_group`` adopts it again."""
    _check_group(group, "destroy_process_group")
    _set_world(None)


def new_group(ranks: Sequence[int] | None = None, timeout: Any = None, backend: Any = None,
              pg_options: Any = None, **kwargs: Any) -> ProcessGroup:
    """Only the group of all processes is supported: ``new_group()`` or
    ``new_group(range(world_size))`` return the default group; any other subset raises."""
    pg = _world("new_group")
    if ranks is None or sorted(int(r) for r in ranks) == list(range(pg.size())):
        return pg
    raise NotImplementedError(f"flow.distributed.new_group: subgroups are not supported, only "
                              f"the group of all {pg.size()} processes (ranks=None or "
                              f"range({pg.size()})); got ranks={list(ranks)}")


def _world(fname: str) -> ProcessGroup:
    pg = GroupMember.WORLD
    if pg is None:
        raise ValueError(f"flow.distributed.{fname}: {_NOT_INIT}")
    return pg


def _check_group(group: Any, fname: str) -> ProcessGroup:
    pg = _world(fname)
    if group is not None and group is not pg:
        raise ValueError(f"flow.distributed.{fname}: group must be None or the default group "
                         f"(flow.distributed.group.WORLD); got {group!r}")
    return pg


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in the group (``0..world_size-1``)."""
    return _check_group(group, "get_rank").rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of processes in the group."""
    return _check_group(group, "get_world_size").size()


def get_backend(group: ProcessGroup | None = None) -> str:
    """The backend name given to ``init_process_group`` (``"gloo"`` by default)."""
    return _check_group(group, "get_backend").name()


# -- collectives -------------------------------------------------------------------------------

def _check_tensor(t: Any, fname: str, arg: str = "tensor") -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"flow.distributed.{fname}: expected parameter `{arg}` of type "
                        f"jflow.Tensor, but got {type(t).__name__} instead")
    if t._global is not None:
        raise ValueError(f"flow.distributed.{fname}: `{arg}` is a global tensor (placement="
                         f"{t._global[0]!r}); collectives take process-local tensors (a rank "
                         f"is a process). A global tensor is already one value over the "
                         f"processes: use to_global()/to_local() to move it")
    return t


def _check_op(op: Any, t: Tensor, fname: str) -> ReduceOp:
    if not isinstance(op, ReduceOp):
        raise TypeError(f"flow.distributed.{fname}: op must be a flow.distributed.ReduceOp "
                        f"({', '.join(o.name for o in ReduceOp)}), got {op!r}")
    kind = np.dtype(t._meta.dtype).kind
    if op is ReduceOp.AVG and kind not in "fc" and t._meta.dtype.name != "bfloat16":
        raise TypeError(f"flow.distributed.{fname}: ReduceOp.AVG needs a floating point "
                        f"tensor, got {t.dtype}")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and kind not in "biu":
        raise TypeError(f"flow.distributed.{fname}: ReduceOp.{op.name} needs an integer or "
                        f"bool tensor, got {t.dtype}")
    return op


def _check_rank(r: Any, pg: ProcessGroup, fname: str, arg: str) -> int:
    if not isinstance(r, (int, np.integer)) or isinstance(r, bool):
        raise TypeError(f"flow.distributed.{fname}: {arg} must be an int rank, got "
                        f"{type(r).__name__}")
    if not 0 <= int(r) < pg.size():
        raise ValueError(f"flow.distributed.{fname}: {arg}={r} is out of range for a group of "
                         f"{pg.size()} processes (valid: 0..{pg.size() - 1})")
    return int(r)


def _host(t: Tensor) -> np.ndarray:
    return np.asarray(t._value)


def _write(t: Tensor, value: np.ndarray) -> None:
    """Store ``value`` in ``t`` in place, outside autograd (as c10d writes the storage)."""
    dev = next(iter(t._value.devices()))
    new = _wrap(jax.device_put(np.asarray(value, dtype=t._meta.dtype), dev))
    with no_grad():
        t.data.copy_(new)


def _gather(value: np.ndarray) -> np.ndarray:
    """Every process's ``value``, stacked in rank order (a collective)."""
    return np.asarray(multihost_utils.process_allgather(value))


_REDUCERS = {
    ReduceOp.SUM: lambda a: a.sum(axis=0),
    ReduceOp.PRODUCT: lambda a: a.prod(axis=0),
    ReduceOp.MIN: lambda a: a.min(axis=0),
    ReduceOp.MAX: lambda a: a.max(axis=0),
    ReduceOp.AVG: lambda a: a.mean(axis=0),
    ReduceOp.BAND: lambda a: np.bitwise_and.reduce(a, axis=0),
    ReduceOp.BOR: lambda a: np.bitwise_or.reduce(a, axis=0),
    ReduceOp.BXOR: lambda a: np.bitwise_xor.reduce(a, axis=0),
}


def _done(async_op: bool, tensors: list[Tensor]) -> Work | None:
    return Work(tensors) if async_op else None


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over all processes with ``op``; every process gets the result, in
    place. One process: the identity."""
    fname = "all_reduce"
    pg = _check_group(group, fname)
    t = _check_tensor(tensor, fname)
    op = _check_op(op, t, fname)
    if pg.size() > 1:
        _write(t, _REDUCERS[op](_gather(_host(t))))
    return _done(async_op, [t])


def reduce(tensor: Tensor, dst: int, op: ReduceOp = ReduceOp.SUM,
           group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over all processes with ``op`` into process ``dst``'s tensor; the
    others' tensors are left unchanged."""
    fname = "reduce"
    pg = _check_group(group, fname)
    t = _check_tensor(tensor, fname)
    dst = _check_rank(dst, pg, fname, "dst")
    op = _check_op(op, t, fname)
    if pg.size() > 1:
        out = _REDUCERS[op](_gather(_host(t)))  # every process takes part in the gather
        if pg.rank() == dst:
            _write(t, out)
    return _done(async_op, [t])


def broadcast(tensor: Tensor, src: int, group: ProcessGroup | None = None,
              async_op: bool = False) -> Work | None:
    """Copy process ``src``'s ``tensor`` into every process's ``tensor`` (same shape and
    dtype on all), in place."""
    fname = "broadcast"
    pg = _check_group(group, fname)
    t = _check_tensor(tensor, fname)
    src = _check_rank(src, pg, fname, "src")
    if pg.size() > 1:
        _write(t, multihost_utils.broadcast_one_to_all(_host(t), is_source=pg.rank() == src))
    return _done(async_op, [t])


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """``tensor_list[r]`` becomes process ``r``'s ``tensor`` (written in place; the list
    holds ``world_size`` tensors of ``tensor``'s shape)."""
    fname = "all_gather"
    pg = _check_group(group, fname)
    t = _check_tensor(tensor, fname)
    if not isinstance(tensor_list, list):
        raise TypeError(f"flow.distributed.{fname}: tensor_list must be a list of "
                        f"{pg.size()} tensors, got {type(tensor_list).__name__}")
    if len(tensor_list) != pg.size():
        raise ValueError(f"flow.distributed.{fname}: tensor_list must hold world_size "
                         f"({pg.size()}) tensors, got {len(tensor_list)}")
    for k, o in enumerate(tensor_list):
        _check_tensor(o, fname, f"tensor_list[{k}]")
        if tuple(o.shape) != tuple(t.shape):
            raise ValueError(f"flow.distributed.{fname}: tensor_list[{k}] has shape "
                             f"{list(o.shape)}, but tensor has shape {list(t.shape)}")
    rows = _gather(_host(t)) if pg.size() > 1 else _host(t)[None]
    for o, row in zip(tensor_list, rows):
        _write(o, row)
    return _done(async_op, list(tensor_list))


def barrier(group: ProcessGroup | None = None, async_op: bool = False,
            device_ids: Any = None) -> Work | None:
    """Wait until every process reaches this call (one process: returns at once)."""
    pg = _check_group(group, "barrier")
    if pg.size() > 1:
        multihost_utils.sync_global_devices("flow.distributed.barrier")
    return _done(async_op, [])
