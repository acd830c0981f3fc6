"""Autograd (DESIGN §4): one backward rule per op serving the eager tape and JAX's own
transformations. The foundation provides grad mode; the tape and the rules build on it."""

from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled

__all__ = ["enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled"]
