"""``torch._C._nn``: the functional ops of ``torch.nn.functional`` (the same jflow ops)."""

from jflow.nn.functional import *  # noqa: F403
