"""``flow.signal``: PyTorch's ``torch.signal`` (its ``windows`` submodule)."""

from . import windows

__all__ = ["windows"]
