"""Process-wide configuration, as OneFlow's ``flow.config``: loading C++/CUDA op libraries,
and the Pallas interpret switch.

``flow.config.load_library("libmyrelu.so")`` defines the ops the library declares (with
``jflow/op.h``) and registers their XLA FFI kernels; it returns a
:class:`~jflow.kernels.ffi.Library` listing them (``lib.ops``, ``lib.kernels``, ``lib.<op>``).
See :mod:`jflow.kernels.ffi` and :mod:`jflow.utils.cpp_extension` (build + load in one call).

``flow.config.enable_pallas_interpret(True)`` (or ``with flow.config.pallas_interpret():``)
makes jflow's Pallas kernels (:mod:`jflow.kernels.pallas`) selectable on CPU, run by Pallas'
interpreter: slow, for checking their numerics without a GPU (see docs/kernels.md).

Memory: :func:`cache_limits` lists the bounds of jflow's own caches (:func:`set_cache_limit`
changes one); :func:`set_executable_limit` bounds the executables JAX keeps for eager code
(:mod:`jflow.executable_budget`: JAX's caches are cleared after that many compiles, at the
next op call outside a trace; the cost is a recompile of shapes seen again), and
:func:`set_release_lowerings` whether what compiles leave behind is released: the lowered
module JAX keeps beside each executable (1.1 MiB each on CPU) and, with glibc, the
compiler's freed working memory (given back to the OS after a large compile).
Default: released.

Debugging: :func:`set_codegen` ``(False)`` (or ``JFLOW_CODEGEN=0`` before import) runs the plain
Python twin of every function jflow generates at run time (op dispatch, argument parsers, tape
and lazy recorders, lazy backward templates, compiled-call fast paths): same results, easier
to step through (:mod:`jflow._codegen`; docs/architecture.md "Generated code and how to debug
it").

Optimizers: :func:`set_fused_optimizer_step` ``(False)`` makes an eager ``optimizer.step()``
run op by op every step (by default an optimizer's first step, and later a step whose new
structure repeated 3 times, runs as one executable: :mod:`jflow.lazy_mode.optimizer_step`;
float16 parameters excepted, whose fused update XLA CPU would not round op by op; and by
default, ``None``, Adam / AdamW, whose update is one op per parameter already: ``True``
fuses theirs too).
:func:`set_whole_graph_backward` ``(False)`` makes an eager ``loss.backward()`` run rule by
rule (by default a graph runs its whole backward as one executable, or, with over 32 MiB of
saved values, as a chain of them: :mod:`jflow.autograd.compiled_graph`). Both switches trade
speed for memory: the two fused programs are the eager training step's largest, and XLA CPU
holds each compiled program whole (docs/autograd.md, "Memory or speed").

Start-up: JAX's persistent compilation cache is on (a per-user directory, bounded;
:mod:`jflow.compilation_cache`): :func:`set_compilation_cache` moves or (``None``) disables
it, as ``JFLOW_COMPILATION_CACHE`` does before import.

Several processes: :func:`set_collective_check` sets when global ops are checked to be the
same on every process, and how long a check waits (:mod:`jflow.sharding.consistency`;
also ``JFLOW_COLLECTIVE_CHECK`` and ``JFLOW_COLLECTIVE_CHECK_TIMEOUT_S``).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

from . import _codegen
from . import compilation_cache as _compilation_cache
from . import dispatch as _dispatch
from . import executable_budget as _budget
from . import host_transfer as _host_transfer
from . import lazy_mode as _lazy_mode
from .autograd import engine as _engine
from .autograd import jax_rules as _jax_rules
from .functional import promotion as _promotion
from .kernels import pallas as _pallas
from .kernels.ffi import Library, LibraryError, load_library, loaded_libraries
from .lazy_mode import backward as _lazy_backward
from .lazy_mode import compile_cache as _lazy_compile_cache
from .lazy_mode import optimizer_step as _optimizer_step
from .lazy_mode import segment as _lazy_segment
from .sharding import consistency as _consistency
from .sharding import execute as _sharded
from .sharding import global_tensor as _global_tensor

# (the module: ``jflow.device`` the attribute is the device class)
_device = importlib.import_module("jflow.device")

__all__ = ["load_library", "loaded_libraries", "Library", "LibraryError",
           "enable_pallas_interpret", "pallas_interpret", "pallas_interpret_enabled",
           "cache_limits", "set_cache_limit", "set_executable_limit", "executable_limit",
           "set_release_lowerings", "set_fused_optimizer_step", "set_whole_graph_backward",
           "executable_stats", "clear_compiled", "set_collective_check", "collective_check",
           "set_lazy", "is_lazy", "set_lazy_call_sites", "set_codegen", "codegen_enabled",
           "set_compilation_cache", "compilation_cache_dir"]

#: jflow's caches: name -> (owner, attribute holding its bound, what one entry is)
_CACHES: dict[str, tuple[Any, str, str]] = {
    "op_executables": (_dispatch, "CACHE_SIZE", "eager executables per op (by attr values)"),
    "backward_rules": (_engine, "CACHE_SIZE", "compiled backward rules per op"),
    "backward_graphs": (_engine.graph_cache, "size", "whole-backward executables"),
    "linear_rules": (_jax_rules, "_CACHE_SIZE", "forward-mode executables per op"),
    "scalar_operands": (_promotion, "_SCALAR_CACHE_SIZE", "cached 0-d scalar tensors"),
    "sharded_ops": (_sharded, "_CACHE_SIZE", "shard_map executables of global ops"),
    "boxing": (_global_tensor, "_BOX_CACHE_SIZE", "SBP conversion executables"),
    "lazy_segments": (_lazy_compile_cache, "CACHE_SIZE", "compiled lazy-eager segment structures"),
    "lazy_avals": (_lazy_segment, "AVALS_SIZE", "abstract outputs of recorded calls"),
    "lazy_backward_templates": (_lazy_backward, "ROOTS", "lazy backward templates (by root)"),
    "host_transfer_shapes": (_host_transfer, "TABLE_SIZE", "shapes seen by flow.tensor(ndarray)"),
    "device_scalars": (_device, "SCALARS_SIZE", "cached 0-d device scalars"),
}


def cache_limits() -> dict[str, int]:
    """The bound of each of jflow's caches (entries; the oldest go beyond it). Compiled
    functions (``flow.jit``, ``nn.Graph``) take theirs as ``max_cache_size``."""
    return {name: getattr(owner, attr) for name, (owner, attr, _) in _CACHES.items()}


def set_cache_limit(name: str, limit: int) -> int:
    """Set the bound of one of jflow's caches (see :func:`cache_limits`); returns the old."""
    if name not in _CACHES:
        raise KeyError(f"flow.config.set_cache_limit: unknown cache {name!r}; the caches are "
                       f"{sorted(_CACHES)}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"flow.config.set_cache_limit: limit must be a positive int, got "
                         f"{limit!r}")
    owner, attr, _ = _CACHES[name]
    old = getattr(owner, attr)
    setattr(owner, attr, limit)
    return old


set_lazy = _lazy_mode.set_lazy
is_lazy = _lazy_mode.is_lazy
set_lazy_call_sites = _lazy_mode.set_call_sites
set_collective_check = _consistency.set_check
collective_check = _consistency.get_check
set_compilation_cache = _compilation_cache.set_compilation_cache
compilation_cache_dir = _compilation_cache.compilation_cache_dir
set_executable_limit = _budget.set_limit
executable_limit = _budget.get_limit
executable_stats = _budget.stats
clear_compiled = _budget.clear
set_release_lowerings = _budget.set_release_lowerings
set_fused_optimizer_step = _optimizer_step.set_fused_eager
set_whole_graph_backward = _engine.set_whole_graph


def enable_pallas_interpret(flag: bool = True) -> bool:
    """Make the Pallas kernels selectable on CPU in interpret mode (``False``: the xla
    kernels again); returns the previous setting. Clears JAX's caches when that changes the
    kernel of an op already compiled."""
    return _pallas.set_interpret(flag)


def pallas_interpret_enabled() -> bool:
    """Whether Pallas kernels run on CPU (interpret mode)."""
    return _pallas.interpret_enabled()


@contextlib.contextmanager
def pallas_interpret(flag: bool = True) -> Iterator[None]:
    """``with flow.config.pallas_interpret():`` Pallas kernels on CPU inside the block."""
    with _pallas.interpret(flag):
        yield


def set_codegen(flag: bool) -> bool:
    """Run jflow's generated code (True, the default) or its plain Python twins (False: one
    function per generator, stepped through by pdb like any code); returns the previous
    setting. Takes effect at the next call of every op and parser (the functions switch code
    in place), and drops the per-graph generated caches (lazy backward templates, fast paths
    of compiled calls). ``JFLOW_CODEGEN=0`` sets it at import."""
    return _codegen.set_enabled(flag)


def codegen_enabled() -> bool:
    """Whether jflow's generated code runs (see :func:`set_codegen`)."""
    return _codegen.enabled()
