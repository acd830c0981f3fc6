"""``flow.optim``: optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam,
RAdam, ASGD, Rprop, SparseAdam, Adafactor, LBFGS, Muon), ``lr_scheduler`` and ``swa_utils``
(weight averaging: SWA / EMA).

Updates run under ``flow.no_grad()`` with in-place jflow ops, so parameters stay the same
objects, updates work on global tensors, and a step traces under ``jax.jit``.
"""

from . import lr_scheduler, swa_utils
from .adafactor import Adafactor
from .adagrad import Adadelta, Adagrad
from .adam import Adam, AdamW
from .adam_variants import Adamax, NAdam, RAdam
from .asgd import ASGD, Rprop
from .lbfgs import LBFGS
from .muon import Muon
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "ASGD", "Rprop", "SparseAdam", "Adafactor", "LBFGS",
           "Muon", "lr_scheduler", "swa_utils"]
