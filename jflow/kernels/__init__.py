"""Kernel registry and backends: xla, python (NumPy via pure_callback), ffi (C++ handlers from
a shared library, :mod:`.ffi`) and pallas (:mod:`.pallas`).

The registry sits below the ops' assembly (it only reads op declarations); the backends that
*define* ops (``ffi``) sit above it and are imported by ``jflow/__init__`` once ops exist."""

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
