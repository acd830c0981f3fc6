"""``DistributedDataParallel`` over global tensors (OneFlow's ``ddp`` with PyTorch's face).

PyTorch's DDP keeps one replica per process and all-reduces gradient buckets in backward
hooks. jflow has global tensors, so the data parallelism is stated once as SBP and the
collectives follow from it (OneFlow's way):

* **parameters and buffers** become global tensors, ``broadcast`` over a placement of every
  device of every process (``flow.env.device_count()``); the values are process 0's, as
  PyTorch's initial broadcast makes them. They stay the same ``Parameter`` objects, so an
  optimizer built before or after wrapping steps them.
* **inputs**: each tensor argument of ``forward`` is this process's batch; it becomes a global
  tensor ``split(0)`` over the placement (``flow.env.global_from_process_local``), so in one
  process the batch is cut across its devices and with several the global batch is the
  processes' batches concatenated in rank order.
* **gradients**: a broadcast parameter meeting split data gets a ``partial_sum`` gradient;
  a hook on each parameter boxes it to ``broadcast`` (the all-reduce), so ``param.grad``
  is one ordinary value.
* **outputs** come back as process-local tensors holding this process's rows, with autograd
  through the conversion, so PyTorch loss code runs unchanged on local targets. The gradient
  flowing back is scaled by ``1 / world_size`` (processes): the sum over processes of the
  local losses' gradients then equals PyTorch DDP's average over ranks (in one process, the
  plain module's gradient).

Only the default process group (all processes) is supported. ``flow.distributed`` need not be
initialised (the world is ``flow.env``'s processes); a PyTorch script initialises it anyway.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

from ... import env as _env
from ...autograd import no_grad
from ...autograd.function import Function
from ...distributed import c10d as _c10d
from ...sharding.global_tensor import make_global, make_local, to_global
from ...sharding.placement import placement as Placement
from ...sharding.sbp import broadcast, split
from ...sharding.spec import named_sharding, partition_spec
from ...tensor import Tensor, _wrap
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_S0 = (split(0),)
_B = (broadcast,)


def _tracing(v: Any) -> bool:
    return isinstance(v, jax.core.Tracer)


def _one_process() -> bool:
    return jax.process_count() == 1


def _split_from_rows(t: Tensor, plc: Placement) -> Tensor:
    """The global ``split(0)`` tensor whose rows on this process's devices are ``t``'s."""
    v = t._value
    if _one_process():  # device_put also works on a tracer (flow.jit of a training step)
        return make_global(jax.device_put(v, named_sharding(plc, _S0, v.ndim)), plc, _S0)
    if _tracing(v):
        raise NotImplementedError("DistributedDataParallel: with several processes the "
                                  "forward runs eagerly only (flow.jit of a multi-process "
                                  "DDP step is not supported)")
    return _env.global_from_process_local(t, plc, split(0))


def _rows_of(t: Tensor) -> Any:
    """This process's rows of a global ``split(0)`` tensor, on one local device."""
    plc, _ = t._global
    v = t._value
    if _one_process():
        if _tracing(v):
            return _host_local(v, plc, _S0)
        # a SingleDeviceSharding (not a Device): the result's type then carries no mesh axes
        dev = jax.local_devices(backend=plc.mesh.devices.flat[0].platform)[0]
        return jax.device_put(v, jax.sharding.SingleDeviceSharding(dev))
    if _tracing(v):
        raise NotImplementedError("DistributedDataParallel: with several processes the "
                                  "forward runs eagerly only (flow.jit of a multi-process "
                                  "DDP step is not supported)")
    shards = sorted(v.addressable_shards, key=lambda s: s.index[0].start or 0)
    dev = jax.sharding.SingleDeviceSharding(shards[0].device)
    return jnp.concatenate([jax.device_put(s.data, dev) for s in shards], axis=0)


def _host_local(v: Any, plc: Placement, nd: tuple) -> Any:
    """Inside a trace (one process): the same value typed as a local array. A tracer's type
    carries its mesh, and jflow takes a tracer with the placement's mesh for a global tensor
    (autograd/saved.py); JAX's ``global_array_to_host_local_array`` is the public identity
    that drops the mesh (with one process, the host-local value is the whole value)."""
    return multihost_utils.global_array_to_host_local_array(
        v, plc.mesh, partition_spec(nd, v.ndim, plc.axis_names))


def _scaled(v: Any, world: int) -> Any:
    return v if world == 1 else v * jnp.asarray(1.0 / world, dtype=v.dtype)


class _ToGlobalBatch(Function):
    """This process's batch -> global ``split(0)``. Backward: the input's rows of the global
    gradient, times ``world_size`` (undoing the output's ``1/world_size``: an input's gradient
    is its own process's loss's gradient, as in PyTorch)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, plc: Placement, world: int) -> Tensor:
        ctx.world = world
        return _split_from_rows(x, plc)

    @staticmethod
    def backward(ctx: Any, dy: Tensor) -> tuple[Any, None, None]:
        dy = to_global(dy, sbp=_S0) if dy._global[1] != _S0 else dy
        v = _rows_of(dy)
        return _wrap(v if ctx.world == 1 else v * ctx.world), None, None


class _ToLocalRows(Function):
    """Global output -> process-local tensor: this process's rows of a ``split(0)`` output,
    the whole value of any other. Backward: the local gradient, over ``world_size``, back to
    the output's layout."""

    @staticmethod
    def forward(ctx: Any, y: Tensor, world: int) -> Tensor:
        ctx.world, ctx.src = world, y._global
        ctx.rows = y._global[1] == _S0
        if ctx.rows:
            return _wrap(_rows_of(y))
        if not _tracing(y._value):
            return make_local(y)
        b = (broadcast,) * len(ctx.src[1])
        if not _one_process():
            raise NotImplementedError("DistributedDataParallel: with several processes the "
                                      "forward runs eagerly only (flow.jit of a "
                                      "multi-process DDP step is not supported)")
        return _wrap(_host_local(to_global(y, sbp=b)._value, ctx.src[0], b))

    @staticmethod
    def backward(ctx: Any, dy: Tensor) -> tuple[Any, None]:
        plc, nd = ctx.src
        v = _scaled(dy._value, ctx.world)
        if ctx.rows:
            return to_global(_split_from_rows(_wrap(v), plc), plc, nd), None
        if ctx.world > 1:  # each process's loss used the whole value: the sum of their grads
            v = np.asarray(multihost_utils.process_allgather(np.asarray(v))).sum(axis=0)
            v = jnp.asarray(v)
        g = to_global(_wrap(v), plc, (broadcast,) * len(nd))
        return to_global(g, plc, nd), None


class _SyncState:
    """What the gradient hooks read (not the module: a hook kept alive by the engine's
    registry must not keep the module and its parameters alive)."""

    __slots__ = ("require_sync",)

    def __init__(self) -> None:
        self.require_sync = True


def _reduce_hook(state: _SyncState) -> Any:
    def hook(g: Tensor) -> Tensor | None:
        if state.require_sync and g._global is not None and any(
                x is not broadcast for x in g._global[1]):
            return to_global(g, sbp=(broadcast,) * len(g._global[1]))
        return None
    return hook


class DistributedDataParallel(Module):
    """Data parallel training of ``module`` over every device of every process.

    ``DistributedDataParallel(model)`` makes ``model``'s parameters and buffers global
    (broadcast, process 0's values), runs each forward on this process's batch split over the
    devices (the batch size must be divisible by this process's device count) and returns
    process-local outputs; ``param.grad`` after ``backward`` equals PyTorch DDP's gradient
    averaged over processes. See the module docstring for how.

    ``process_group`` may be ``None`` or the default group. ``init_sync=False`` skips the
    initial broadcast (the processes' values must already agree). ``dim`` must be 0.
    ``device_ids``, ``output_device``, ``broadcast_buffers``, ``bucket_cap_mb``,
    ``find_unused_parameters``, ``check_reduction``, ``gradient_as_bucket_view``,
    ``static_graph``, ``delay_all_reduce_named_params``, ``param_to_hook_all_reduce`` and
    ``skip_all_reduce_unused_params`` are accepted and ignored: the placement is all devices,
    buffers are global (one value, nothing to re-broadcast), gradients are reduced by SBP as
    the backward produces them (no buckets), and an unused parameter simply gets no gradient.
    ``mixed_precision`` and ``device_mesh`` are refused.

    Differences from PyTorch that follow from one global program: a layer computing batch
    statistics (``BatchNorm`` in training) sees the *global* batch, as ``SyncBatchNorm`` does;
    ``no_sync()`` skips the reducing hook, but SBP still reduces when the gradient is used.
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0, broadcast_buffers: bool = True, init_sync: bool = True,
                 process_group: Any = None, bucket_cap_mb: Any = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params: Any = None, param_to_hook_all_reduce: Any = None,
                 mixed_precision: Any = None, device_mesh: Any = None,
                 skip_all_reduce_unused_params: bool = False) -> None:
        super().__init__()
        fname = "DistributedDataParallel"
        if not isinstance(module, Module):
            raise TypeError(f"{fname}: module must be a flow.nn.Module, got "
                            f"{type(module).__name__}")
        if isinstance(module, DistributedDataParallel):
            raise ValueError(f"{fname}: the module is already wrapped in "
                             f"DistributedDataParallel")
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        if dim != 0:
            raise NotImplementedError(f"{fname}: only dim=0 (batch in dimension 0) is "
                                      f"supported, got dim={dim}")
        if mixed_precision is not None:
            raise NotImplementedError(f"{fname}: mixed_precision is not supported; use "
                                      f"flow.autocast in the forward")
        if device_mesh is not None:
            raise NotImplementedError(f"{fname}: device_mesh is not supported; the placement "
                                      f"is every device of every process")
        if process_group is not None and process_group is not _c10d.GroupMember.WORLD:
            raise ValueError(f"{fname}: process_group must be None or the default group "
                             f"(flow.distributed.group.WORLD); subgroups are not supported")
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        self.broadcast_buffers, self.find_unused_parameters = broadcast_buffers, \
            find_unused_parameters
        self.gradient_as_bucket_view, self.static_graph = gradient_as_bucket_view, static_graph
        first = next(iter(module.parameters()))
        kind = first._global[0].type if first._global is not None else first.device.type
        self.world_size = _env.get_world_size()
        self.placement = Placement(kind, list(range(_env.device_count(kind))))
        self._local_devices = sum(d.process_index == jax.process_index()
                                  for d in self.placement.mesh.devices.flat)
        self._state = _SyncState()
        self._replicate(init_sync)
        hook = _reduce_hook(self._state)
        for p in module.parameters():
            if p.requires_grad:
                p.register_hook(hook)

    def _replicate(self, init_sync: bool) -> None:
        plc, world = self.placement, self.world_size

        def to_replica(t: Tensor) -> Tensor:
            if t._global is None and world > 1 and init_sync:  # process 0's values
                v = multihost_utils.broadcast_one_to_all(np.asarray(t._value))
                t = _wrap(jnp.asarray(v, dtype=t._meta.dtype))
            return to_global(t, plc, _B)

        with no_grad():
            self.module._apply(to_replica)

    # -- forward ---------------------------------------------------------------------------
    def _input(self, x: Any, where: str) -> Any:
        if isinstance(x, Tensor):
            if x._global is not None:  # already global: the caller chose its layout
                return x
            if x.ndim == 0:  # a scalar cannot be split: every process must pass the same
                return to_global(x, self.placement, _B)
            n = x.shape[0]
            if n % self._local_devices:
                raise ValueError(f"DistributedDataParallel: the batch size of {where} "
                                 f"({n}, dimension 0 of shape {list(x.shape)}) must be "
                                 f"divisible by this process's {self._local_devices} devices, "
                                 f"over which it is split")
            return _ToGlobalBatch.apply(x, self.placement, self.world_size)
        if isinstance(x, (list, tuple)):
            out = [self._input(v, f"{where}[{k}]") for k, v in enumerate(x)]
            return type(x)(*out) if hasattr(x, "_fields") else type(x)(out)
        if isinstance(x, dict):
            return type(x)((k, self._input(v, f"{where}[{k!r}]")) for k, v in x.items())
        return x

    def _output(self, y: Any) -> Any:
        if isinstance(y, Tensor):
            return _ToLocalRows.apply(y, self.world_size) if y._global is not None else y
        if isinstance(y, (list, tuple)):
            out = [self._output(v) for v in y]
            return type(y)(*out) if hasattr(y, "_fields") else type(y)(out)
        if isinstance(y, dict):
            return type(y)((k, self._output(v)) for k, v in y.items())
        return y

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Run the module on the global batch; outputs are this process's (local)."""
        args = [self._input(x, f"input {k}") for k, x in enumerate(inputs)]
        kw = {k: self._input(v, f"input {k!r}") for k, v in kwargs.items()}
        return self._output(self.module(*args, **kw))

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Gradient accumulation without the reducing step, as PyTorch's ``no_sync``.

        Inside, the hook that boxes each gradient to ``broadcast`` (the all-reduce) is off:
        gradients stay ``partial_sum`` (each device's unreduced share) and accumulate so.
        Their *values* are the same as with synchronisation (``numpy()`` or any op that
        needs the sum reduces them), so results equal PyTorch's after the next synced
        backward; what is saved is the reduction at every micro-step."""
        old = self._state.require_sync
        self._state.require_sync = False
        try:
            yield
        finally:
            self._state.require_sync = old

    def extra_repr(self) -> str:
        return f"placement={self.placement!r}, world_size={self.world_size}"
