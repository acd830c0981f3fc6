"""The user_relu ops (OneFlow's seed has them in user_relu_cpp_def.cpp).

``flow.experimental.custom_op_module("user_relu", folder)`` imports this file and calls
``define`` with the loaded ``user_relu_py_kernel`` module. As in the seed there are two ops:
``user_relu_forward`` (x -> y) and ``user_relu_backward`` ((y, dy) -> dx), the op used by
the forward op's backward rule; ``define_python_op`` declares both and wires the rule.
"""

import jax

from jflow.ops.python_op import define_python_op


def _infer(x):
    """y has x's shape and dtype (the seed's SetTensorDescInferFn)."""
    return jax.ShapeDtypeStruct(x.shape, x.dtype)


def define(py_kernel):
    return define_python_op(
        "user_relu_forward", py_kernel.forward, py_kernel.backward,
        inputs=["x"], outputs=["y"], infer=_infer,
        save=["y"],                           # backward(args) gets (y, dy)
        grad_op_name="user_relu_backward",
        doc="relu with a NumPy forward and backward")
