"""``flow.profiler``: what ran and how long, in ``torch.profiler``'s shape.

    with flow.profiler.profile(record_shapes=True) as prof:
        loss = model(x).sum(); loss.backward()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")          # open in Perfetto / chrome://tracing

Recorded while a profiler runs: every eager op call (op name, input shapes with
``record_shapes``, the kernel chosen for the call's platform and dtypes, and its time),
every compiled step (``flow.jit`` / ``nn.Graph``) and each (re)trace with its reason, op
calls staged while tracing (named ``"<op> (traced)"``: their time is tracing, e.g. a
backward rule compiled on its first use), and ``record_function`` ranges. Each op call
waits for its result while profiling, so an op's time includes its computation, not just its
dispatch (JAX dispatches asynchronously); profiling therefore removes the overlap it
measures around.

Compilation is reported apart from running: JAX's compile events (tracing to a jaxpr,
lowering, XLA's backend compile; ``jax.monitoring``'s public listener) that happen inside a
recorded call are summed into its ``compile_us``; ``cpu_time_total`` (and the table's
"Total us" / "Avg us") is the call's time without them, and the table has a "Compile us"
column, so an op's first call no longer dominates its total. ``duration_us`` stays the
call's wall time.

With ``on_trace_ready=flow.profiler.tensorboard_trace_handler(dir)`` the run is also traced
by ``jax.profiler`` (XLA's own events, viewable in TensorBoard's profile plugin or Perfetto),
with each jflow op and ``record_function`` range as a named annotation around its XLA work.

Cost when no profiler runs: none on the op dispatch path. Each op's generated ``apply`` has
a second code object that the profiler swaps in on start and out on stop
(``dispatch.set_profiled``), so the plain code is unchanged (``benchmarks/eager_dispatch.py``
measures it); a compiled step checks one module-level slot.

Differences from torch.profiler, chosen: ``schedule`` is not supported (``step()`` is a
no-op without one); ``profile_memory``, ``with_stack``, ``with_flops`` and ``with_modules``
are accepted and record nothing extra; ``ProfilerActivity.CUDA`` records the same host
events (device kernels appear in the ``jax.profiler`` trace). One profiler at a time.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import jax

from . import dispatch
from .compiler.jit import PROFILER as _STEP_PROFILER
from .kernels.registry import select_kernel
from .ops.registry import get as _get_op
from .ops.registry import list_ops
from .tensor import Tensor

__all__ = ["profile", "record_function", "ProfilerActivity", "tensorboard_trace_handler",
           "FunctionEvent", "EventList"]


class ProfilerActivity(enum.Enum):
    """What to profile (PyTorch's enum); jflow records host-side op timings either way."""

    CPU = "cpu"
    CUDA = "cuda"


class FunctionEvent:
    """One recorded call: ``name``, ``kind`` (``op``, ``compiled``, ``retrace``, ``range``),
    ``input_shapes``, ``kernel`` (ops), ``start_us`` / ``duration_us`` (from the profile's
    start), ``thread`` and the nesting ``depth``."""

    __slots__ = ("name", "kind", "input_shapes", "kernel", "start_us", "duration_us", "thread",
                 "depth", "detail", "compile_us")

    def __init__(self, name: str, kind: str, start_us: float, duration_us: float,
                 input_shapes: list | None = None, kernel: str = "", thread: int = 0,
                 depth: int = 0, detail: str = "", compile_us: float = 0.0) -> None:
        self.name, self.kind, self.kernel, self.detail = name, kind, kernel, detail
        self.start_us, self.duration_us = start_us, duration_us
        self.compile_us = min(compile_us, duration_us)
        self.input_shapes = input_shapes or []
        self.thread, self.depth = thread, depth

    @property
    def key(self) -> str:
        """The name the event is grouped under (its op name)."""
        return self.name

    @property
    def cpu_time_total(self) -> float:
        """The event's time in microseconds without the compilation inside it."""
        return self.duration_us - self.compile_us

    @property
    def compile_time_total(self) -> float:
        """The compilation (JAX tracing, lowering, XLA compile) inside the event, in us."""
        return self.compile_us

    def __repr__(self) -> str:
        return (f"<FunctionEvent {self.kind} {self.name} {self.duration_us:.1f} us"
                f"{' ' + str(self.input_shapes) if self.input_shapes else ''}>")


class _Average:
    """One row of :meth:`profile.key_averages`."""

    def __init__(self, key: str, input_shapes: Any, kernel: str) -> None:
        self.key, self.input_shapes, self.kernel = key, input_shapes, kernel
        self.count = 0
        self.cpu_time_total = 0.0
        self.compile_time_total = 0.0

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self) -> str:
        return f"<{self.key}: {self.count} calls, {self.cpu_time_total:.1f} us>"


class EventList(list):
    """Events (or averages) with torch's ``table()``."""

    def table(self, sort_by: str | None = "cpu_time_total", row_limit: int = 100,
              header: str | None = None, **_: Any) -> str:
        """A text table of the rows, sorted by ``sort_by``, cut to ``row_limit``, with a total."""
        rows = list(self)
        if sort_by:
            key = sort_by.replace("self_", "").replace("cuda_", "cpu_").replace("device_",
                                                                                 "cpu_")
            if key not in ("cpu_time_total", "cpu_time", "count", "compile_time_total"):
                raise ValueError(f"table(): sort_by must be 'cpu_time_total', 'cpu_time', "
                                 f"'compile_time_total' or 'count', got {sort_by!r}")
            rows.sort(key=lambda r: getattr(r, key), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        total = sum(r.cpu_time_total for r in self) or 1.0
        shapes = any(getattr(r, "input_shapes", None) for r in rows)
        head = (f"{'Name':<36}{'Kernel':>16}{'Calls':>8}{'Total us':>12}{'Avg us':>10}{'%':>7}"
                f"{'Compile us':>12}")
        if shapes:
            head += "  Input shapes"
        lines = ([header] if header else []) + [head, "-" * len(head)]
        for r in rows:
            line = (f"{r.key[:35]:<36}{(r.kernel or '')[:15]:>16}{r.count:>8}"
                    f"{r.cpu_time_total:>12.1f}{r.cpu_time:>10.1f}"
                    f"{100 * r.cpu_time_total / total:>7.1f}"
                    f"{getattr(r, 'compile_time_total', 0.0):>12.1f}")
            if shapes:
                line += f"  {r.input_shapes}"
            lines.append(line)
        compiled = sum(getattr(r, "compile_time_total", 0.0) for r in self)
        lines.append(f"Total: {sum(r.cpu_time_total for r in self):.1f} us in "
                     f"{sum(r.count for r in self)} calls, and {compiled:.1f} us compiling")
        return "\n".join(lines)


_ACTIVE: list[Any] = [None]
#: JAX's compile-time events (jax.monitoring): jaxpr tracing, lowering, the backend compile
_COMPILE_EVENTS = ("/jax/core/compile/",)
_KERNELS: dict[Any, str] = {}


def _kernel_of(op: Any, ins: list, outs: list) -> str:
    """The name of the kernel the call's platform and dtypes select (cached)."""
    try:
        key = (op.name, tuple((v.shape, v.dtype) for v in ins),
               tuple((v.shape, v.dtype) for v in outs))
        hit = _KERNELS.get(key)
        if hit is None:
            platform = next(iter(ins[0].devices())).platform if ins else "cpu"
            in_avals = [jax.core.ShapedArray(v.shape, v.dtype) for v in ins]
            out_avals = [jax.core.ShapedArray(v.shape, v.dtype) for v in outs]
            hit = select_kernel(op, platform, in_avals, out_avals, None).name
            if len(_KERNELS) > 4096:
                _KERNELS.clear()
            _KERNELS[key] = hit
        return hit
    except Exception:  # noqa: BLE001  (structured / variadic layouts: no single answer)
        return "?"


def _tensors(tree: Any) -> list[Tensor]:
    return [x for x in jax.tree_util.tree_leaves(tree, is_leaf=lambda v: isinstance(v, Tensor))
            if isinstance(x, Tensor)]


class profile:  # noqa: N801  (torch.profiler.profile)
    """A profiling context (see the module docstring)."""

    def __init__(self, activities: Any = None, schedule: Any = None,
                 on_trace_ready: Callable[[profile], None] | None = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None, acc_events: bool = False,
                 use_cuda: bool | None = None) -> None:
        if schedule is not None:
            raise NotImplementedError("flow.profiler.profile: schedule= is not supported; "
                                      "profile the steps you want inside the context")
        for a in activities or ():
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"flow.profiler.profile: activities must be "
                                f"ProfilerActivity members, got {a!r}")
        self.record_shapes = record_shapes
        self.on_trace_ready = on_trace_ready
        self._events: list[FunctionEvent] = []
        self._t0 = 0.0
        self._depth = threading.local()
        self._compiling = threading.local()  # .us: compile time seen on this thread
        self._jax_trace: str | None = None
        self._running = False

    # -- start / stop ---------------------------------------------------------------------
    def start(self) -> None:
        """Starts recording op timings (what entering the ``with`` block does)."""
        if _ACTIVE[0] is not None:
            raise RuntimeError("flow.profiler.profile: another profiler is already running")
        _ACTIVE[0] = self
        self._events = []
        self._t0 = time.perf_counter()
        if isinstance(self.on_trace_ready, _TensorBoardHandler):
            self._jax_trace = self.on_trace_ready.dir_name
            os.makedirs(self._jax_trace, exist_ok=True)
            jax.profiler.start_trace(self._jax_trace)
        jax.monitoring.register_event_duration_secs_listener(self._on_jax_event)
        dispatch.PROFILER[0] = self._on_op
        _STEP_PROFILER[0] = self._on_step
        for name in list_ops():
            dispatch.set_profiled(_get_op(name), True)
        self._running = True

    def stop(self) -> None:
        """Stops recording and calls ``on_trace_ready`` (what leaving the ``with`` block does)."""
        if not self._running:
            return
        self._running = False
        for name in list_ops():
            dispatch.set_profiled(_get_op(name), False)
        dispatch.PROFILER[0] = None
        _STEP_PROFILER[0] = None
        jax.monitoring.unregister_event_duration_listener(self._on_jax_event)
        _ACTIVE[0] = None
        if self._jax_trace is not None:
            jax.profiler.stop_trace()
        if self.on_trace_ready is not None and not isinstance(self.on_trace_ready,
                                                              _TensorBoardHandler):
            self.on_trace_ready(self)

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def step(self) -> None:
        """torch's step(): a no-op without a schedule."""

    # -- recording ------------------------------------------------------------------------
    def _now_us(self) -> float:
        return (time.perf_counter() - self._t0) * 1e6

    def _on_jax_event(self, event: str, duration_secs: float, **_: Any) -> None:
        """JAX's compile events (reported on the compiling thread): summed per thread."""
        if event.startswith(_COMPILE_EVENTS):
            self._compiling.us = getattr(self._compiling, "us", 0.0) + duration_secs * 1e6

    @contextlib.contextmanager
    def _range(self, name: str, kind: str, shapes: list | None = None) -> Iterator[list]:
        """Time a block; the caller may append ``[kernel, detail]`` to the yielded list."""
        depth = getattr(self._depth, "n", 0)
        self._depth.n = depth + 1
        extra: list = []
        compiled_before = getattr(self._compiling, "us", 0.0)
        start = self._now_us()
        try:
            if self._jax_trace is not None:
                with jax.profiler.TraceAnnotation(name):
                    yield extra
            else:
                yield extra
        finally:
            self._depth.n = depth
            kernel, detail = (extra + ["", ""])[:2]
            self._events.append(FunctionEvent(
                name, kind, start, self._now_us() - start, shapes, kernel,
                threading.get_ident(), depth, detail,
                getattr(self._compiling, "us", 0.0) - compiled_before))

    def _on_op(self, op: Any, body: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        ins = [t._value for t in _tensors((args, kwargs))]
        shapes = [list(v.shape) for v in ins] if self.record_shapes else None
        if any(isinstance(v, jax.core.Tracer) for v in ins):
            # staged into a compiled step or a backward rule's executable: its time is
            # tracing, not running; kept apart under its own name
            with self._range(f"{op.name} (traced)", "traced", shapes):
                return body(*args, **kwargs)
        with self._range(op.name, "op", shapes) as extra:
            out = body(*args, **kwargs)
            outs = [t._value for t in _tensors(out)]
            if outs and not any(isinstance(v, jax.core.Tracer) for v in outs):
                jax.block_until_ready(outs)
                extra.append(_kernel_of(op, ins, outs))
        return out

    def _on_step(self, compiled: Any, args: tuple, kwargs: dict) -> Any:
        traces = compiled.trace_count
        name = f"compiled {compiled.name}"
        with self._range(name, "compiled") as extra:
            out = compiled._call(*args, **kwargs)
            jax.block_until_ready([t._value for t in _tensors(out)])
            if compiled.trace_count > traces:
                reasons = compiled.recompile_reasons
                extra += ["", "traced" if traces == 0 or not reasons
                          else f"retraced: {reasons[-1]}"]
        if compiled.trace_count > traces:
            last = self._events[-1]
            self._events.append(FunctionEvent(f"trace {compiled.name}", "retrace",
                                              last.start_us, last.duration_us,
                                              detail=last.detail,
                                              compile_us=last.compile_us))
        return out

    # -- results --------------------------------------------------------------------------
    def events(self) -> EventList:
        """Every recorded call, in the order they finished."""
        return EventList(self._events)

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        """One row per name (and input shapes with ``group_by_input_shape``): calls, total
        and average time, the kernel."""
        rows: dict[Any, _Average] = {}
        for e in self._events:
            key = (e.name, str(e.input_shapes)) if group_by_input_shape else e.name
            row = rows.get(key)
            if row is None:
                row = rows[key] = _Average(e.name, e.input_shapes if group_by_input_shape
                                           else "", e.kernel)
            row.count += 1
            row.cpu_time_total += e.cpu_time_total
            row.compile_time_total += e.compile_us
        return EventList(rows.values())

    def export_chrome_trace(self, path: str) -> None:
        """The events as a Chrome trace (JSON), which Perfetto and chrome://tracing open."""
        trace = [{"name": e.name, "cat": e.kind, "ph": "X", "ts": round(e.start_us, 3),
                  "dur": round(e.duration_us, 3), "pid": os.getpid(), "tid": e.thread,
                  "args": {k: v for k, v in (("input_shapes", e.input_shapes),
                                             ("kernel", e.kernel), ("detail", e.detail)) if v}}
                 for e in self._events]
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)


@contextlib.contextmanager
def record_function(name: str, args: str | None = None) -> Iterator[None]:
    """A named range in the profile (and in the ``jax.profiler`` trace); free when no
    profiler runs."""
    prof = _ACTIVE[0]
    if prof is None:
        yield
        return
    with prof._range(name, "range"):
        yield


class _TensorBoardHandler:
    def __init__(self, dir_name: str) -> None:
        self.dir_name = dir_name

    def __call__(self, prof: profile) -> None:  # the jax trace was written on stop
        pass


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> _TensorBoardHandler:
    """``on_trace_ready`` that traces the run with ``jax.profiler`` into ``dir_name``
    (TensorBoard's profile plugin and Perfetto read it)."""
    return _TensorBoardHandler(dir_name)
