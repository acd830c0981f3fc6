"""Kernel registry and backends (DESIGN §3): xla, python (NumPy via pure_callback) and ffi
(C++ handlers from a shared library, :mod:`.ffi`); pallas plugs in the same way."""

from .registry import (
                       DEFAULT,
                       FALLBACK,
                       OPTIMIZED,
                       PLATFORMS,
                       Kernel,
                       KernelNotFoundError,
                       kernels_for,
                       register_backend,
                       register_kernel,
                       select_kernel,
)

__all__ = ["DEFAULT", "FALLBACK", "OPTIMIZED", "PLATFORMS", "Kernel", "KernelNotFoundError",
           "kernels_for", "register_backend", "register_kernel", "select_kernel"]

from . import ffi  # noqa: E402,F401  (registers the "ffi" backend)
