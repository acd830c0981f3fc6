"""Autograd: one backward rule per op serving the eager tape, JAX's own
transformations (``jax.grad`` / ``jvp`` / ``vmap`` ...) and the tape while tracing.

* :mod:`.rule`      — ``register_backward``: an op's rule (capture what to save, apply);
  ``register_tangent``: an op's own forward-mode rule, where transposing it will not do;
* :mod:`.graph`     — the tape: one node per recorded op call;
* :mod:`.saved`     — saved values read back for a backward (version checks, freed graphs);
* :mod:`.engine`    — ``backward`` / ``grad``: runs the rules over the tape (whole graphs as
  one executable: :mod:`.compiled_graph`); attaches ``Tensor.backward`` / ``register_hook``;
* :mod:`.jax_rules` — the primitives' JVP / transpose rules, derived from the same rule;
* :mod:`.function`  — ``flow.autograd.Function``: forward/backward written by the user;
* ``rules/``        — the rules of jflow's own ops, one module per op family.
"""

from .engine import backward, grad
from .function import Function, FunctionCtx
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .rule import BackwardContext, GradientNotFoundError, register_backward, register_tangent

__all__ = ["enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled", "backward", "grad",
           "Function", "FunctionCtx", "BackwardContext", "GradientNotFoundError",
           "register_backward", "register_tangent"]
