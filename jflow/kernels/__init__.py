"""Kernel registry and backends (DESIGN §3): xla and python now; pallas and ffi plug in."""

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
