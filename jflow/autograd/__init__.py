"""Autograd (DESIGN §4): one backward rule per op serving the eager tape and JAX's own
transformations. The foundation stores ``requires_grad`` on tensors; the tape and the rules
arrive with the autograd milestone."""
