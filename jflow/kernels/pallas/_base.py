"""The ``pallas`` kernel backend, the CPU interpret switch and the registration helper.

A Pallas kernel of jflow is a function ``fn(*inputs, interpret: bool, **attrs)`` that calls
``pl.pallas_call`` (``interpret`` says whether to run it through Pallas' interpreter). It is
registered twice by :func:`register_pallas_kernel`:

* for ``cuda`` (and ``tpu`` when the same kernel applies) at OPTIMIZED priority, compiled,
  under its ``dtypes`` / ``condition``;
* for ``cpu`` at the same priority with ``interpret=True``, selectable only while
  :func:`set_interpret` is on (the config switch / test fixture): CI checks the kernels'
  numerics on CPU without a GPU.

Conditions that depend on attrs (e.g. softmax's ``dim`` is the last axis) cannot be told to
the registry (a condition sees the input avals only), so such a kernel runs the op's xla
kernel itself when the attrs rule it out; :data:`LAUNCHES` counts the lowerings that really
built a ``pallas_call``, so tests can tell the two apart.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import jax

from .. import registry as _reg

__all__ = ["register_pallas_kernel", "set_interpret", "interpret_enabled", "interpret",
           "LAUNCHES", "FLOAT_DTYPES", "count_launch", "xla_kernel"]

#: the dtypes every jflow Pallas kernel accepts (float64 stays on the xla kernels)
FLOAT_DTYPES = ("float32", "bfloat16", "float16")

#: kernel name -> number of lowerings that built a ``pallas_call`` (tests read it)
LAUNCHES: Counter[str] = Counter()

_lock = threading.Lock()
_state = {"interpret": False}
#: ops that have a Pallas kernel (switching interpret mode only matters for those)
_PALLAS_OPS: set[str] = set()


def interpret_enabled() -> bool:
    """Whether Pallas kernels are selectable on CPU (run with ``interpret=True``)."""
    return _state["interpret"]


def set_interpret(flag: bool) -> bool:
    """Make the Pallas kernels selectable on CPU in interpret mode (or not); returns the
    previous setting.

    JAX caches every lowering (the eager executables of each op are ``jax.jit`` functions),
    so a switch that changes the selection of an op already lowered clears JAX's caches, as
    registering a kernel does: the next call lowers again and picks the kernel anew.
    """
    flag = bool(flag)
    with _lock:
        old = _state["interpret"]
        if flag == old:
            return old
        _state["interpret"] = flag
        if _PALLAS_OPS & _reg._LOWERED:
            _reg._LOWERED.clear()
            jax.clear_caches()
    return old


@contextlib.contextmanager
def interpret(flag: bool = True) -> Iterator[None]:
    """``with interpret():`` Pallas kernels run on CPU in interpret mode inside the block."""
    old = set_interpret(flag)
    try:
        yield
    finally:
        set_interpret(old)


def count_launch(name: str) -> None:
    """Called by a kernel when it builds a ``pallas_call`` (at lowering time)."""
    LAUNCHES[name] += 1


def _build_pallas(kernel: Any, op: Any, attrs: dict, out_avals: list, layout: Any
                  ) -> Callable[..., list[Any]]:
    interp = "cpu" in kernel.platforms

    def run(*flat: Any) -> list[Any]:
        res = kernel.fn(*op.unflatten(flat, layout), interpret=interp, **attrs)
        return list(res) if isinstance(res, (list, tuple)) else [res]
    return run


_reg.register_backend("pallas", _build_pallas)


def register_pallas_kernel(op_name: str, fn: Callable[..., Any], *, name: str,
                           dtypes: dict[str, Iterable[Any]] | None = None,
                           condition: Callable[..., bool] | None = None,
                           platforms: Iterable[str] = ("cuda",)) -> None:
    """Register ``fn`` as the OPTIMIZED Pallas kernel of ``op_name`` on ``platforms`` and as
    its interpret-mode twin on CPU (``<name>_interpret``, only while interpret is on)."""
    dtypes = {k: tuple(v) for k, v in (dtypes or {}).items()}
    _reg.register_kernel(op_name, fn, backend="pallas", platforms=tuple(platforms),
                         dtypes=dtypes, priority=_reg.OPTIMIZED, condition=condition, name=name)

    def cpu_condition(*avals: Any) -> bool:
        return interpret_enabled() and (condition is None or bool(condition(*avals)))

    _reg.register_kernel(op_name, fn, backend="pallas", platforms=("cpu",), dtypes=dtypes,
                         priority=_reg.OPTIMIZED, condition=cpu_condition,
                         name=f"{name}_interpret")
    _PALLAS_OPS.add(op_name)


def xla_kernel(op_name: str) -> Callable[..., Any]:
    """The op's xla kernel (a Pallas kernel runs it when the attrs rule the kernel out)."""
    for k in _reg.kernels_for(op_name):
        if k.backend == "xla":
            return k.fn
    raise LookupError(f"op '{op_name}' has no xla kernel")
