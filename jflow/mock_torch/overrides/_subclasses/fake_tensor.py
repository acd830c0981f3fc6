"""``torch._subclasses.fake_tensor``: see :mod:`torch._subclasses` (no fake tensors in jflow)."""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["FakeTensor", "FakeTensorMode"]


def _no_fake(what: str) -> NoReturn:
    raise NotImplementedError(f"torch._subclasses.{what}: jflow has no fake tensors (it "
                              f"traces with JAX: flow.compile)")


class FakeTensor:
    """A PyTorch fake tensor: no jflow value is one (``isinstance`` is False); constructing
    raises."""

    def __new__(cls, *args: Any, **kwargs: Any) -> NoReturn:
        _no_fake("FakeTensor")


class FakeTensorMode:
    """PyTorch's fake-tensor mode: constructing raises."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _no_fake("FakeTensorMode")
