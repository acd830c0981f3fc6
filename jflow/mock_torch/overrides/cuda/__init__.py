"""``torch.cuda``: jflow.cuda, plus CUDA streams, events and graphs answered as a CPU-only
PyTorch build answers them (they need a CUDA device: constructing one raises when none is
available; with a GPU jflow still has no user-visible streams, so they raise too)."""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["Stream", "Event", "CUDAGraph", "graph", "stream", "current_stream",
           "default_stream", "get_device_capability", "get_device_name", "graphs", "streams",
           "StreamContext", "is_current_stream_capturing"]


def _no_cuda(what: str) -> NoReturn:
    import jflow  # noqa: PLC0415
    if not jflow.cuda.is_available():
        raise RuntimeError(f"torch.cuda.{what}: Torch not compiled with CUDA enabled "
                           f"(no CUDA device: JAX has no GPU backend here)")
    raise NotImplementedError(f"torch.cuda.{what}: jflow has no CUDA streams, events or "
                              f"graphs (XLA schedules the device work)")


class Stream:
    """A CUDA stream (see the module docstring)."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        _no_cuda("Stream")


class Event:
    """A CUDA event (see the module docstring)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        _no_cuda("Event")


class CUDAGraph:
    """A CUDA graph (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _no_cuda("CUDAGraph")


class graph:  # noqa: N801
    """Capture into a CUDA graph (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _no_cuda("graph")


def stream(stream: Any) -> Any:
    """``torch.cuda.stream(None)`` is a no-op context, as in PyTorch; a stream raises."""
    if stream is None:
        import contextlib  # noqa: PLC0415
        return contextlib.nullcontext()
    _no_cuda("stream")


def current_stream(device: Any = None) -> NoReturn:
    """Raises (see the module docstring)."""
    _no_cuda("current_stream")


def default_stream(device: Any = None) -> NoReturn:
    """Raises (see the module docstring)."""
    _no_cuda("default_stream")


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The compute capability of a CUDA device; raises with none (as PyTorch's CPU build)."""
    import jflow  # noqa: PLC0415
    if not jflow.cuda.is_available():
        _no_cuda("get_device_capability")
    import jax  # noqa: PLC0415
    cc = getattr(jax.devices("gpu")[0], "compute_capability", None)
    if cc is None:
        raise RuntimeError("torch.cuda.get_device_capability: JAX does not report it")
    major, minor = str(cc).split(".")[:2]
    return int(major), int(minor)


def get_device_name(device: Any = None) -> str:
    """The CUDA device's name; raises with none."""
    import jflow  # noqa: PLC0415
    if not jflow.cuda.is_available():
        _no_cuda("get_device_name")
    import jax  # noqa: PLC0415
    return str(jax.devices("gpu")[0].device_kind)



def is_current_stream_capturing() -> bool:
    """False: nothing is ever captured into a CUDA graph in jflow (there are no CUDA graphs:
    :class:`CUDAGraph`), as a CPU-only PyTorch answers."""
    return False

# torch.cuda.LongTensor ...: legacy types of CUDA tensors (isinstance is False for CPU tensors)
def __getattr__(name: str) -> Any:
    from jflow._legacy_types import cuda_types  # noqa: PLC0415
    if name in cuda_types:
        return cuda_types[name]
    raise AttributeError(name)


class StreamContext:
    """``with torch.cuda.StreamContext(stream)``: a ``None`` stream is a no-op (as in
    PyTorch); a real one cannot exist (see :class:`Stream`)."""

    def __init__(self, stream: Any) -> None:
        if stream is not None:
            _no_cuda("StreamContext")

    def __enter__(self) -> StreamContext:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None
