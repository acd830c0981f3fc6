"""``flow.cuda.amp``: ``torch.cuda.amp``'s names for :mod:`jflow.amp`."""

from __future__ import annotations

from typing import Any

from ..amp import GradScaler as _GradScaler
from ..amp import autocast as _autocast
from ..amp import custom_bwd, custom_fwd

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_autocast):
    """``torch.cuda.amp.autocast(enabled=True, dtype=None, cache_enabled=None)``: the
    ``"cuda"`` form of :class:`jflow.amp.autocast` (default dtype bfloat16; see there)."""

    def __init__(self, enabled: bool = True, dtype: Any = None,
                 cache_enabled: bool | None = None) -> None:
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    def __call__(self, fn: Any) -> Any:
        return _autocast("cuda", self.fast_dtype, self._enabled, self._cache_enabled)(fn)


class GradScaler(_GradScaler):
    """``torch.cuda.amp.GradScaler(init_scale, growth_factor, backoff_factor,
    growth_interval, enabled)``: :class:`jflow.amp.GradScaler` for device "cuda"."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)
