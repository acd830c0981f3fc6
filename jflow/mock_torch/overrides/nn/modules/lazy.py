"""``torch.nn.modules.lazy``: jflow has no lazily-shaped modules; the mixin exists for
``isinstance`` probes (no jflow module is one) and refuses to be used."""

from typing import Any

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Modules whose parameters take their shape at the first call: not in jflow."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise NotImplementedError("torch.nn.modules.lazy.LazyModuleMixin: jflow has no lazy "
                                  "modules; give the input size explicitly")
