"""``flow.backends.mps``: Apple's Metal backend is not a JAX platform jflow uses."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """Always False."""
    return False


def is_built() -> bool:
    """Always False."""
    return False
