"""``RecompileWarning``: the one warning every compiling layer emits when it compiles again
(``flow.jit`` / ``nn.Graph`` tracing anew, a lazy segment compiling: jflow.lazy_mode). A
bottom-layer module of its own, so both can raise it without importing each other."""

from __future__ import annotations

__all__ = ["RecompileWarning"]


class RecompileWarning(UserWarning):
    """Something compiled again; the message says why."""
