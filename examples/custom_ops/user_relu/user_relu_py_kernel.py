"""The NumPy kernels of user_relu (OneFlow's "Python Kernel"): NumPy arrays in and out.

``forward(args)`` gets the op's inputs ``(x,)``; ``backward(args)`` gets what the op saves
for backward followed by the output gradients, ``(y, dy)``, and returns ``dx``. jflow runs
both through ``jax.pure_callback`` with the shapes of the op's inference.
"""


def forward(args):
    (x,) = args
    return (x > 0) * x


def backward(args):
    (y, dy) = args
    return (y > 0) * dy
