"""``BatchNorm1d``/``2d``/``3d`` and ``SyncBatchNorm`` over ``flow._C.batch_norm``
(jflow/ops/conv.py).

As PyTorch: affine weight 1 / bias 0; buffers ``running_mean`` (0), ``running_var`` (1) and
``num_batches_tracked`` (int64) when ``track_running_stats``; in training mode the batch
statistics normalise and update the running ones in place (``momentum``, or a cumulative
average when ``momentum=None``); in eval mode the running statistics normalise (batch
statistics if the module tracks none).
"""

from __future__ import annotations

from typing import Any

from jflow.functional import api_default  # absolute: ruff resolves it for B008

from ... import dtypes as _dt
from ...autograd import no_grad
from ...creation import ones, tensor, zeros
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin, lazy_class
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "InstanceNorm1d",
           "InstanceNorm2d", "InstanceNorm3d"]


class _BatchNorm(Module):
    _dims: tuple[int, ...] = ()
    #: PyTorch's: version 2 added ``num_batches_tracked``
    _version = 2

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing: list[str], unexpected: list[str],
                              errors: list[str]) -> None:
        """A checkpoint older than version 2 has no ``num_batches_tracked``: it loads as 0,
        as in PyTorch."""
        key = prefix + "num_batches_tracked"
        if (local_metadata.get("version") is None or local_metadata["version"] < 2) \
                and self.track_running_stats and key not in state_dict:
            state_dict[key] = tensor(0, dtype=_dt.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing,
                                      unexpected, errors)

    def __init__(self, num_features: int, eps: float = api_default("batch_norm", "eps"),
                 momentum: float | None = api_default("batch_norm", "momentum"),
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_features = int(num_features)
        self.eps, self.momentum = float(eps), momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(ones(self.num_features, dtype=dtype, device=device))
            self.bias = Parameter(zeros(self.num_features, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(self.num_features, dtype=dtype,
                                                       device=device))
            self.register_buffer("running_var", ones(self.num_features, dtype=dtype,
                                                     device=device))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=_dt.int64,
                                                               device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"{type(self).__name__}: expected {want} input (got {input.ndim}D "
                             f"input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else float(self.momentum)
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch_stats = self.training or (self.running_mean is None
                                            and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            use_batch_stats, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs over every axis but C."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) inputs over N, H and W per channel."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) inputs over N, D, H and W per channel."""

    _dims = (5,)


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose statistics cover the global batch, for any (N, C, *) input.

    In jflow this is ordinary ``BatchNorm``: on a global tensor whose batch is split across
    devices (``sbp=split(0)``), ``F.batch_norm``'s mean and variance are reductions over the
    global batch, so the statistics are already synchronised (the SBP machinery inserts the
    all-reduce); on a local tensor there is one process's batch, as PyTorch's ``SyncBatchNorm``
    without an initialised process group. ``process_group`` is accepted for PyTorch's signature
    and kept, but the group is the tensor's placement. jflow's DDP makes its inputs ``split(0)``
    global tensors (docs/sbp.md), so a model wrapped in it syncs BatchNorm statistics whether or
    not it was converted.
    """

    def __init__(self, num_features: int, eps: float = api_default("batch_norm", "eps"),
                 momentum: float | None = api_default("batch_norm", "momentum"),
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any = None, device: Any = None, dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every ``BatchNorm*d`` (recursively) replaced by a ``SyncBatchNorm``
        sharing its parameters and buffers (the same objects: optimizers and the running
        statistics carry over) and its training mode, as PyTorch's."""
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class _InstanceNorm(_BatchNorm):
    """Instance normalisation: each (sample, channel) over its spatial elements
    (``F.instance_norm``). PyTorch's defaults: ``affine=False``, ``track_running_stats=False``;
    with tracked statistics, eval mode normalises with the running ones."""

    _nd = 1

    def __init__(self, num_features: int, eps: float = api_default("instance_norm", "eps"),
                 momentum: float | None = api_default("instance_norm", "momentum"),
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` (N, C, *spatial) or unbatched (C, *spatial), normalised per instance."""
        nd, name = self._nd, type(self).__name__
        if input.ndim not in (nd + 1, nd + 2):
            raise ValueError(f"{name}: expected {nd + 1}D (unbatched) or {nd + 2}D input (got "
                             f"{input.ndim}D input)")
        unbatched = input.ndim == nd + 1
        x = input.unsqueeze(0) if unbatched else input
        if x.shape[1] != self.num_features and self.affine:
            raise ValueError(f"{name}: expected input's size at dim=1 to match num_features "
                             f"({self.num_features}), but got: {x.shape[1]}.")
        # (``num_batches_tracked`` is registered but never counted, as in PyTorch's
        # InstanceNorm, whose running averages always use ``momentum``)
        momentum = 0.1 if self.momentum is None else float(self.momentum)
        use_input_stats = self.training or not self.track_running_stats
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            use_input_stats, momentum, self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or unbatched (C, L)."""

    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or unbatched (C, H, W)."""

    _nd = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or unbatched (C, D, H, W)."""

    _nd = 3


# -- lazy normalisations ----------------------------------------------------------------------

class _LazyNormBase(LazyModuleMixin):
    """The lazy BatchNorm / InstanceNorm's shared part (PyTorch's ``_LazyNormBase``):
    ``num_features`` from the first input's dim 1, then the module is the ordinary one. Its
    defaults are PyTorch's for both families: ``affine=True``, ``track_running_stats=True``
    (an ``InstanceNorm``'s own defaults are False)."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        if not bias:
            raise NotImplementedError(f"{type(self).__name__}(bias=False): jflow's "
                                      f"BatchNorm / InstanceNorm have no bias=False yet")
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=_dt.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with no_grad():
                if self.affine:
                    self.weight.materialize((self.num_features,))
                    if self.bias is not None:
                        self.bias.materialize((self.num_features,))
                if self.track_running_stats:
                    self.running_mean.materialize((self.num_features,))
                    self.running_var.materialize((self.num_features,))
                self.reset_parameters()


def _lazy_norm(base: type) -> type:
    return lazy_class(base, _LazyNormBase, "``num_features`` is dim 1", __name__)


LazyBatchNorm1d = _lazy_norm(BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d)
__all__ += ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
            "LazyInstanceNorm2d", "LazyInstanceNorm3d"]
