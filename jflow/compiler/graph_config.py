"""``nn.Graph.config``: OneFlow's ``GraphConfig``, for what jflow can honour.

Every ``nn.Graph`` has a ``config`` (set by ``Graph.__init__``); its methods are called in the
subclass's ``__init__``, after ``super().__init__()``, as in OneFlow::

    class TrainStep(flow.nn.Graph):
        def __init__(self, model, opt):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)
            self.config.enable_amp(True, dtype=flow.bfloat16)
            self.config.set_gradient_accumulation_steps(4)

Honoured (each one changes what the step computes, tested against its eager equivalent in
``tests/test_graph_config.py``): :meth:`GraphConfig.enable_amp`,
:meth:`GraphConfig.set_gradient_accumulation_steps`, :meth:`GraphConfig.enable_zero` (stages 1
and 2). OneFlow's scheduling, fusion and memory-planning hints have no effect on any value in
OneFlow either; XLA makes those decisions itself, so jflow records them and does nothing else
(:data:`PERFORMANCE_HINTS`). Options that would change results or that name machinery jflow
does not have (XRT backends, auto-parallel search, ZeRO stage 3) raise ``NotImplementedError``
naming the option: never a silent no-op that changes what a user gets.

A config change after the graph has been called recompiles the step at the next call (OneFlow
fixes the config when it first builds the graph).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from .. import dtypes as _dt

__all__ = ["GraphConfig", "PERFORMANCE_HINTS", "UNSUPPORTED"]

#: OneFlow options that only steer how its runtime schedules, fuses or lays out memory (no
#: effect on any value): accepted and recorded, nothing else (XLA decides these itself)
PERFORMANCE_HINTS = {
    "allow_fuse_model_update_ops": "fuses the optimizer's cast/scale/update kernels",
    "allow_fuse_add_to_output": "fuses an elementwise add into its producer's kernel",
    "allow_fuse_cast_scale": "fuses a cast with a multiplication",
    "enable_cudnn_conv_heuristic_search_algo": "how cuDNN picks a convolution algorithm",
    "set_outputs_buffer_size": "how many calls' outputs OneFlow's runtime buffers ahead",
    "enable_straighten_algorithm": "the order OneFlow's task graph runs its nodes in",
    "enable_compress_memory": "OneFlow's memory-allocation search",
    "enable_choose_best_memory_allocation": "OneFlow's memory-allocation search",
    "enable_multi_tensor_update": "merges small optimizer kernels into one launch",
    "enable_fused_model_update_cast": "fuses the AMP weight cast into the optimizer kernel",
}

#: OneFlow options jflow cannot honour, with what to use instead
UNSUPPORTED = {
    "enable_xla_jit": "jflow always compiles a Graph with XLA (through jax.jit); there is no "
                      "XRT layer to switch",
    "enable_tensorrt": "jflow has no TensorRT backend",
    "enable_openvino": "jflow has no OpenVINO backend",
    "enable_auto_parallel": "jflow chooses the SBP signatures of the ops of a step whose "
                            "tensors are global (sharding/plan.py) but never changes the "
                            "placement or SBP you gave the parameters and inputs; place "
                            "them with to_global()",
    "enable_auto_parallel_ignore_user_sbp_config": "jflow never overrides the SBP you gave "
                                                   "(see enable_auto_parallel)",
    "set_auto_parallel_computation_cost_ratio": "jflow's SBP planner has no auto-parallel "
                                                "search to tune",
    "set_auto_parallel_wait_time": "jflow's SBP planner has no auto-parallel search to tune",
    "enable_auto_parallel_trunk_algo": "jflow's SBP planner has no auto-parallel search",
    "enable_auto_parallel_sbp_collector": "jflow's SBP planner has no auto-parallel search",
    "enable_auto_memory": "jflow's SBP planner has no auto-parallel search",
    "set_zero_redundancy_optimizer_mode": "OneFlow renamed it: use enable_zero(True)",
    "set_zero_redundancy_optimizer_min_size_after_split": "use enable_zero(True, "
                                                          "shard_min_size=...)",
}


def _hint(name: str, what: str) -> Callable[..., None]:
    def hint(self: GraphConfig, *args: Any, **kwargs: Any) -> None:
        self.hints[name] = (args, kwargs)
    hint.__name__ = hint.__qualname__ = name
    hint.__doc__ = (f"OneFlow's ``{name}`` ({what}): a performance hint with no effect on "
                    f"any value; accepted and recorded (``config.hints``), XLA decides this "
                    f"itself.")
    return hint


def _refuse(name: str, why: str) -> Callable[..., NoReturn]:
    def refuse(self: GraphConfig, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(f"{self._graph_name}.config.{name}() is not supported by "
                                  f"jflow: {why}")
    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"OneFlow's ``{name}``: not supported ({why}); raises NotImplementedError."
    return refuse


class GraphConfig:
    """The configuration of one ``nn.Graph`` (``graph.config``; see the module docstring).

    ``amp_dtype``: None or the autocast dtype; ``grad_acc_steps``: micro-batches per call;
    ``zero_stage``: 0 (off), 1 or 2; ``zero_shard_min_size``; ``hints``: the performance
    hints given (recorded only).
    """

    def __init__(self, graph_name: str = "Graph",
                 on_change: Callable[[], None] | None = None) -> None:
        self._graph_name = graph_name
        self._on_change = on_change
        self.amp_dtype: _dt.dtype | None = None
        self.grad_acc_steps = 1
        self.zero_stage = 0
        self.zero_shard_min_size = 1024
        self.hints: dict[str, tuple] = {}

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()

    def _bool(self, method: str, arg: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise TypeError(f"{self._graph_name}.config.{method}(): {arg} must be a bool, got "
                            f"{type(value).__name__}")
        return value

    def enable_amp(self, mode: bool = True, *, dtype: Any = None) -> None:
        """Run the step's forward under ``flow.autocast(dtype=dtype)``: the same ops autocast
        lowers in eager code (matrix products, convolutions) compute in ``dtype``, the rest
        in float32, gradients reach the float32 parameters in float32. ``dtype`` defaults to
        float16, as in OneFlow (bfloat16 needs no loss scaling; with float16 give the graph a
        ``flow.amp.GradScaler`` with ``graph.set_grad_scaler``)."""
        mode = self._bool("enable_amp", "mode", mode)
        d = _dt.float16 if dtype is None else _dt.as_dtype(dtype)
        if d not in (_dt.float16, _dt.bfloat16):
            raise ValueError(f"{self._graph_name}.config.enable_amp(): dtype must be "
                             f"flow.float16 or flow.bfloat16, got {d}")
        self.amp_dtype = d if mode else None
        self._changed()

    def set_gradient_accumulation_steps(self, value: int) -> None:
        """Each call of the graph consumes ``value`` micro-batches, inside one executable:
        every tensor argument is split along dim 0 into ``value`` equal parts, ``build`` runs
        on each, each micro-batch's ``loss.backward()`` adds the gradient of
        ``loss / value`` (OneFlow scales the loss by the step count), and the optimizers
        step once after the last. Outputs are packed as OneFlow packs them: a 0-d output
        becomes a tensor of ``value`` elements (one per micro-batch), others are
        concatenated along dim 0."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{self._graph_name}.config.set_gradient_accumulation_steps(): "
                             f"value must be a positive int, got {value!r}")
        self.grad_acc_steps = value
        self._changed()

    def enable_zero(self, mode: bool = True, *, stage: int = 2, shard_min_size: int = 1024,
                    shard_restore_level: int = 1) -> None:
        """ZeRO by SBP for a data-parallel step (global parameters broadcast over a 1-D
        placement): stage 1 keeps each optimizer state split(0) over the placement's ranks,
        so each rank updates its shard (the gradient reaches it by whatever the whole-step
        SBP planner finds cheapest: a reduce-scatter, or a slice of the all-reduced
        gradient) and the new parameters are all-gathered back to broadcast; stage 2 also
        makes every gradient split(0) right after the backward (a reduce-scatter of the
        partial sums). A tensor whose dim 0 the ranks don't divide, or whose shard would
        hold fewer than ``shard_min_size`` elements, stays broadcast. Stage 3 (sharded
        parameters) and ``shard_restore_level`` other than 1 are not supported."""
        mode = self._bool("enable_zero", "mode", mode)
        if not mode:
            self.zero_stage = 0
            self._changed()
            return
        if isinstance(stage, bool) or not isinstance(stage, int) or stage not in (1, 2, 3):
            raise ValueError(f"{self._graph_name}.config.enable_zero(): stage must be 1, 2 or "
                             f"3, got {stage!r}")
        if stage == 3:
            raise NotImplementedError(
                f"{self._graph_name}.config.enable_zero(): stage=3 (parameters sharded "
                f"between uses) is not supported by jflow; use stage=1 or stage=2")
        if isinstance(shard_min_size, bool) or not isinstance(shard_min_size, int) \
                or shard_min_size < 1:
            raise ValueError(f"{self._graph_name}.config.enable_zero(): shard_min_size must "
                             f"be a positive int, got {shard_min_size!r}")
        if shard_restore_level != 1:
            raise NotImplementedError(
                f"{self._graph_name}.config.enable_zero(): shard_restore_level="
                f"{shard_restore_level!r} is not supported by jflow (parameters are always "
                f"restored to their full layout right after the update: level 1)")
        self.zero_stage = stage
        self.zero_shard_min_size = shard_min_size
        self._changed()

    @property
    def training(self) -> bool:
        """Whether the graph trains (has optimizers), as OneFlow's ``config.training``."""
        return bool(getattr(self, "_training", False))

    def __repr__(self) -> str:
        amp = "off" if self.amp_dtype is None else str(self.amp_dtype)
        return (f"(CONFIG:config:GraphConfig(training={self.training}, amp={amp}, "
                f"grad_acc_steps={self.grad_acc_steps}, zero_stage={self.zero_stage}))")


for _name, _what in PERFORMANCE_HINTS.items():
    setattr(GraphConfig, _name, _hint(_name, _what))
for _name, _why in UNSUPPORTED.items():
    setattr(GraphConfig, _name, _refuse(_name, _why))
del _name, _what, _why
