"""PyTorch's ``torch.distributed.tensor.parallel`` (``parallelize_module`` with
``ColwiseParallel`` / ``RowwiseParallel``) on jflow's global tensors.

A style places a module's parameters (``nn.Linear``: ``ColwiseParallel`` splits the
``[out, in]`` weight and the bias on dim 0, ``RowwiseParallel`` the weight on dim 1 and
replicates the bias; ``nn.Embedding``: column-wise splits the embedding dim, row-wise the
vocabulary) with :func:`~jflow.distributed.tensor.distribute_tensor` and wraps its forward:
inputs are laid out as ``input_layouts`` then redistributed to what the style computes with,
the output redistributed to ``output_layouts`` — PyTorch's defaults, so the collectives are
Megatron's.

One process holds every device, so a local tensor is one value, not a rank's piece: a local
input is the logical value laid out as ``input_layouts`` says (``distribute_tensor``,
differentiable), and ``use_local_output=True`` cannot return "this rank's" piece — the output
stays global (its logical value is what the next code computes with; combine it with local
tensors inside ``implicit_replication()``). ``parallelize_module`` takes a 1-d mesh, as
PyTorch's; other module types and styles raise ``NotImplementedError`` naming them.
"""

from __future__ import annotations

import fnmatch
import warnings
from collections.abc import Sequence
from typing import Any

from .tensor import (
    DeviceMesh,
    Placement,
    Replicate,
    Shard,
    distribute_tensor,
    to_nd_sbp,
    unsupported,
)

__all__ = ["ParallelStyle", "ColwiseParallel", "RowwiseParallel", "parallelize_module"]


def _lay_out(x: Any, mesh: DeviceMesh, given: Placement, wanted: Placement) -> Any:
    """A tensor argument as the style wants it: a local one is the logical value laid out as
    ``given`` (differentiable ``to_global``), then redistributed to ``wanted``."""
    if not hasattr(x, "to_global"):  # not a tensor: passed through
        return x
    if not x.is_global:
        x = x.to_global(mesh.placement, to_nd_sbp([given], 1, x.dim(), "parallelize_module"))
    return x.to_global(mesh.placement, to_nd_sbp([wanted], 1, x.dim(), "parallelize_module"))


class ParallelStyle:
    """How one module is parallelized (base of the styles)."""

    _param_layouts: dict[str, dict[str, Placement]] = {}
    _compute_input: Placement = Replicate()
    _compute_output: Placement = Replicate()

    def __init__(self, *, input_layouts: Placement | None = None,
                 output_layouts: Placement | None = None, use_local_output: bool = True
                 ) -> None:
        self.input_layouts = input_layouts or self._default_input
        self.output_layouts = output_layouts or self._default_output
        self.use_local_output = use_local_output
        self.src_data_rank: int | None = 0

    _default_input: Placement = Replicate()
    _default_output: Placement = Replicate()

    def _apply(self, module: Any, mesh: DeviceMesh) -> Any:
        kind = type(module).__name__
        layouts = None
        for cls in type(module).__mro__:
            layouts = self._param_layouts.get(cls.__name__)
            if layouts is not None:
                break
        if layouts is None:
            raise unsupported(f"parallel.{type(self).__name__}",
                              f"module type {kind} (jflow maps nn.Linear and nn.Embedding)")
        for name, placement in layouts.items():
            p = getattr(module, name, None)
            if p is None:
                continue
            dt = distribute_tensor(p.detach(), mesh, [placement])
            module.register_parameter(name, type(p)(dt, requires_grad=p.requires_grad))
        wanted_in = self._compute_input_for(module)

        def pre(mod: Any, args: tuple) -> tuple:
            return tuple(_lay_out(a, mesh, self.input_layouts, wanted_in) for a in args)

        def post(mod: Any, args: tuple, out: Any) -> Any:
            return _lay_out(out, mesh, self._compute_output_for(module), self.output_layouts)

        module.register_forward_pre_hook(pre)
        module.register_forward_hook(post)
        return module

    def _compute_input_for(self, module: Any) -> Placement:
        return self._compute_input

    def _compute_output_for(self, module: Any) -> Placement:
        return self._compute_output

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(input_layouts={self.input_layouts}, "
                f"output_layouts={self.output_layouts}, "
                f"use_local_output={self.use_local_output})")


class ColwiseParallel(ParallelStyle):
    """Column-wise: ``nn.Linear`` weight/bias ``Shard(0)`` (output features split), input
    replicated, output ``Shard(-1)`` by default; ``nn.Embedding`` weight ``Shard(1)``."""

    _param_layouts = {"Linear": {"weight": Shard(0), "bias": Shard(0)},
                      "Embedding": {"weight": Shard(1)}}
    _default_input = Replicate()
    _default_output = Shard(-1)
    _compute_input = Replicate()
    _compute_output = Shard(-1)


class RowwiseParallel(ParallelStyle):
    """Row-wise: ``nn.Linear`` weight ``Shard(1)`` (input features split), bias replicated,
    input ``Shard(-1)``, output replicated by default (the partial sums all-reduced);
    ``nn.Embedding`` weight ``Shard(0)`` (the vocabulary split), input replicated."""

    _param_layouts = {"Linear": {"weight": Shard(1), "bias": Replicate()},
                      "Embedding": {"weight": Shard(0)}}
    _default_input = Shard(-1)
    _default_output = Replicate()
    _compute_output = Replicate()

    def _compute_input_for(self, module: Any) -> Placement:
        is_embedding = any(c.__name__ == "Embedding" for c in type(module).__mro__)
        return Replicate() if is_embedding else Shard(-1)


def parallelize_module(module: Any, device_mesh: DeviceMesh | None = None,
                       parallelize_plan: ParallelStyle | dict[str, ParallelStyle] | None = None,
                       *, src_data_rank: int | None = 0) -> Any:
    """Apply ``parallelize_plan`` (a style, or module-path patterns -> styles, ``fnmatch``
    per path component as PyTorch) to ``module`` on a 1-d ``device_mesh``."""
    fname = "torch.distributed.tensor.parallel.parallelize_module"
    if not isinstance(device_mesh, DeviceMesh):
        raise TypeError(f"{fname}: device_mesh must be a DeviceMesh (jflow has no current "
                        f"mesh), got {type(device_mesh).__name__}")
    if device_mesh.ndim != 1:
        raise ValueError(f"{fname}: takes a 1-d mesh, as PyTorch's (slice an n-d one: "
                         f"mesh['tp']), got a {device_mesh.ndim}-d mesh")
    if parallelize_plan is None:
        return module
    if isinstance(parallelize_plan, ParallelStyle):
        return parallelize_plan._apply(module, device_mesh)
    if not isinstance(parallelize_plan, dict):
        raise TypeError(f"{fname}: parallelize_plan must be a ParallelStyle or a dict of them, "
                        f"got {type(parallelize_plan).__name__}")
    for path, style in parallelize_plan.items():
        _apply_path(module, path.split(".") if path else [], style, device_mesh, fname)
    return module


def _apply_path(module: Any, parts: Sequence[str], style: ParallelStyle, mesh: DeviceMesh,
                fname: str) -> None:
    if not parts:
        parallelize_module(module, mesh, style)
        return
    matched = [m for n, m in module.named_children() if fnmatch.fnmatch(n, parts[0])]
    if not matched:  # as PyTorch: a warning, and the entry is skipped
        warnings.warn(f"{fname}: plan key component {parts[0]!r} matches no submodule of "
                      f"{type(module).__name__}; skipping it", stacklevel=3)
    for m in matched:
        _apply_path(m, parts[1:], style, mesh, fname)
