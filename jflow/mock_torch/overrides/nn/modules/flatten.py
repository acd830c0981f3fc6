"""``torch.nn.modules.flatten``."""

from jflow.nn import Flatten, Unflatten

__all__ = ["Flatten", "Unflatten"]
