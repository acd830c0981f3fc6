"""Op definitions: the registry and the built-in op families (docs/architecture.md).

``jflow.ops.get(name)`` looks an op up, ``jflow.ops.list_ops()`` lists them, and
``op.signature()`` shows one. Each family module defines its ops, their xla kernels and
SBP signatures together.
"""

from .primitive import define_op
from .registry import (
    TRAITS,
    Attr,
    Input,
    OpDef,
    OpDefinitionError,
    Output,
    get,
    list_ops,
)
from .registry import builtin_definitions as _builtin_definitions

with _builtin_definitions():
    # importing the family modules registers the built-in ops
    from . import (  # noqa: F401
        activation,
        attention,
        complex,
        conv,
        factory,
        fft,
        fused,
        histogram,
        index,
        join,
        linalg,
        loss,
        math,
        matmul,
        nn,
        norm,
        optim,
        pool,
        rearrange,
        reduce,
        rnn,
        search,
        slicing,
        special,
        subscript,
        unique,
        upsample,
        view,
    )

from .python_op import define_python_op  # noqa: E402  (user ops with NumPy kernels)

__all__ = ["Attr", "Input", "Output", "OpDef", "OpDefinitionError", "TRAITS", "define_op", "get",
           "list_ops", "define_python_op"]
