"""``torch.ops``: PyTorch's operator registry, answered as a PyTorch build without the
requested kernels: ``torch.ops.<namespace>.<op>`` raises AttributeError (a library checking
for an optional compiled op sees it missing), and ``load_library`` refuses PyTorch C++
extension binaries with ``OSError`` (they link against libtorch, which jflow is not). jflow's
own C++ ops load with ``flow.config.load_library``. ``torch.ops.aten.<op>`` is jflow's op of
that name where it has one; ``torch.ops.<ns>.<op>`` of a ``torch.library.custom_op`` is it."""

from __future__ import annotations

import os
from typing import Any

__mock_fallback__ = False
__all__ = ["load_library", "loaded_libraries", "import_module"]

#: libraries loaded with :func:`load_library` (never any: see the module docstring)
loaded_libraries: set[str] = set()


class _OpNamespace:
    """``torch.ops.<namespace>``: no op is registered in any namespace."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, op: str) -> Any:
        if op.startswith("__"):
            raise AttributeError(op)
        from .library import REGISTRY  # noqa: PLC0415
        if f"{self.name}::{op}" in REGISTRY:  # made with torch.library.custom_op
            return REGISTRY[f"{self.name}::{op}"]
        if self.name == "aten":
            import jflow  # noqa: PLC0415
            fn = getattr(jflow, op, None)
            if callable(fn):
                return fn
        raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op}' "
                             f"(jflow has no torch.ops.{self.name}.{op}: PyTorch operator "
                             f"libraries do not load into jflow)")


def load_library(path: str) -> None:
    """Refuses: a PyTorch operator library links against libtorch (``OSError``, as PyTorch
    raises for a library it cannot load)."""
    if not os.path.exists(path):
        raise OSError(f"torch.ops.load_library: {path}: cannot open shared object file: "
                      f"No such file or directory")
    raise OSError(f"torch.ops.load_library({path!r}): PyTorch C++ operator libraries link "
                  f"against libtorch and cannot be loaded into jflow; jflow's own C++ ops "
                  f"load with flow.config.load_library")


def import_module(module: str) -> None:
    """Import a Python module that registers ops: imported, as in PyTorch."""
    import importlib  # noqa: PLC0415
    importlib.import_module(module)


def __getattr__(name: str) -> _OpNamespace:
    if name.startswith("__"):
        raise AttributeError(name)
    return _OpNamespace(name)
