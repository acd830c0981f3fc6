"""``flow.distributions`` (``torch.distributions``): probability distributions over jflow
ops (differentiable through ``rsample`` / ``log_prob``), with PyTorch's API and formulas:
:class:`Normal`, :class:`Categorical`, :class:`Bernoulli`, :class:`Uniform`, and
``constraints`` for argument validation. Samples use jflow's generator (``flow.manual_seed``),
so they are not PyTorch's numbers."""

from . import constraints, kl
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .kl import kl_divergence
from .normal import Normal
from .uniform import Uniform

__all__ = ["Distribution", "Normal", "Categorical", "Bernoulli", "Uniform", "constraints",
           "kl_divergence", "kl"]
