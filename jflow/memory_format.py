"""Memory formats and layouts: ``flow.contiguous_format``, ``flow.channels_last`` ...,
``flow.strided``, as PyTorch's ``torch.memory_format`` / ``torch.layout`` objects.

A memory format in PyTorch picks the physical order of a tensor's elements (its strides),
never its values. jflow's arrays are JAX arrays with no physical strides of their own: every
non-view tensor is dense and row-major (views report their base's strides, ``jflow.views``).
So the formats are accepted wherever PyTorch accepts ``memory_format=`` (``.to``,
``.contiguous``, ``.clone``, the cast methods, the ``*_like`` factories), checked as PyTorch
checks them (``channels_last`` needs a 4-d tensor, ``channels_last_3d`` a 5-d one), and the
values come out the same; ``stride()`` stays row-major and ``is_contiguous(memory_format=
channels_last)`` answers from those row-major strides (docs/porting.md, "What differs").
"""

from __future__ import annotations

from typing import Any

__all__ = ["memory_format", "contiguous_format", "preserve_format", "channels_last",
           "channels_last_3d", "layout", "strided", "check_memory_format", "check_layout",
           "is_contiguous_as"]


class memory_format:  # noqa: N801  (PyTorch's name)
    """A memory format (``flow.channels_last`` ...): singletons compared by identity."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"flow.{self.name}"

    def __reduce__(self) -> str:  # pickles as the module attribute (stays a singleton)
        return self.name


class layout:  # noqa: N801  (PyTorch's name)
    """A tensor layout: jflow has PyTorch's dense one, ``flow.strided``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"flow.{self.name}"

    def __reduce__(self) -> str:
        return self.name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
strided = layout("strided")

#: the rank a format needs (PyTorch: "required rank 4 tensor to use channels_last format")
_RANK = {"channels_last": 4, "channels_last_3d": 5}


def check_memory_format(fname: str, fmt: Any, ndim: int | None = None) -> None:
    """Raise as PyTorch does for a ``memory_format`` argument that is not a memory format, or
    a channels-last format on a tensor of the wrong rank (``ndim``: the tensor's, if any)."""
    if fmt is None:
        return
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{fname}(): argument 'memory_format' must be flow.memory_format, not "
                        f"{type(fmt).__name__}")
    rank = _RANK.get(fmt.name)
    if rank is not None and ndim is not None and ndim != rank:
        raise RuntimeError(f"{fname}(): required rank {rank} tensor to use {fmt.name} format, "
                           f"got a {ndim}-d tensor")


def check_layout(fname: str, lay: Any) -> None:
    """Only ``flow.strided`` (PyTorch's default, dense layout) exists in jflow."""
    if lay is None or lay is strided:
        return
    if isinstance(lay, layout):
        raise ValueError(f"{fname}(): layout {lay!r} is not supported (jflow tensors are "
                         f"dense: flow.strided)")
    raise TypeError(f"{fname}(): argument 'layout' must be flow.layout, not "
                    f"{type(lay).__name__}")


def is_contiguous_as(sizes: tuple[int, ...], strides: tuple[int, ...], fmt: Any) -> bool | None:
    """PyTorch's channels-last contiguity rule over ``strides`` (dims of size 1 do not count);
    None for the default format (the caller's row-major rule answers)."""
    if fmt is None or fmt.name in ("contiguous_format", "preserve_format"):
        return None
    order = {"channels_last": (1, 3, 2, 0), "channels_last_3d": (1, 4, 3, 2, 0)}[fmt.name]
    if len(sizes) != len(order):
        return False
    if any(s == 0 for s in sizes):
        return True
    expected = 1
    for d in order:
        if sizes[d] != 1:
            if strides[d] != expected:
                return False
            expected *= sizes[d]
    return True
