"""``flow.optim``: optimizers (SGD, Adam, AdamW, RMSprop) and ``lr_scheduler``.

Updates run under ``flow.no_grad()`` with in-place jflow ops, so parameters stay the same
objects, updates work on global tensors, and a step traces under ``jax.jit``.
"""

from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "lr_scheduler"]
