"""PyTorch's ``torch.nn.modules.flatten`` path: jflow's ``Flatten`` / ``Unflatten`` (kept in
``linear``), for code that names the module file."""

from .linear import Flatten, Unflatten

__all__ = ["Flatten", "Unflatten"]
