"""The user's Python wrapper of user_relu (OneFlow's user_relu_py_api.py): the builder."""

from jflow.user_op_builder import user_op_builder


def user_relu_forward(x):
    op = (
        user_op_builder("myrelu")
        .Op("user_relu_forward")
        .Input("x", [x])
        .Output("y")
        .Build()
    )
    return op.InferAndTryRun().SoleOutputBlob()
