"""Process-wide configuration, as OneFlow's ``flow.config``: loading C++/CUDA op libraries,
and the Pallas interpret switch.

``flow.config.load_library("libmyrelu.so")`` defines the ops the library declares (with
``jflow/op.h``) and registers their XLA FFI kernels; it returns a
:class:`~jflow.kernels.ffi.Library` listing them (``lib.ops``, ``lib.kernels``, ``lib.<op>``).
See :mod:`jflow.kernels.ffi` and :mod:`jflow.utils.cpp_extension` (build + load in one call).

``flow.config.enable_pallas_interpret(True)`` (or ``with flow.config.pallas_interpret():``)
makes jflow's Pallas kernels (:mod:`jflow.kernels.pallas`) selectable on CPU, run by Pallas'
interpreter: slow, for checking their numerics without a GPU (see docs/kernels.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .kernels import pallas as _pallas
from .kernels.ffi import Library, LibraryError, load_library, loaded_libraries

__all__ = ["load_library", "loaded_libraries", "Library", "LibraryError",
           "enable_pallas_interpret", "pallas_interpret", "pallas_interpret_enabled"]


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
