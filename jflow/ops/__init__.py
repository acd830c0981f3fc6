"""Op definitions (DESIGN §2): the registry and the built-in op families.

``jflow.ops.get(name)`` looks an op up, ``jflow.ops.list_ops()`` lists them, and
``op.signature()`` shows one. Each family module defines its ops, their xla kernels and
SBP signatures together.
"""

from .registry import (
    TRAITS,
    Attr,
    Input,
    OpDef,
    OpDefinitionError,
    Output,
    define_op,
    get,
    list_ops,
)
from .registry import builtin_definitions as _builtin_definitions

with _builtin_definitions():
    # importing the family modules registers the built-in ops
    from . import (  # noqa: F401
        activation,
        attention,
        conv,
        factory,
        fused,
        index,
        loss,
        math,
        matmul,
        nn,
        norm,
        optim,
        reduce,
        shape,
        upsample,
    )

from .python_op import define_python_op  # noqa: E402  (user ops with NumPy kernels)

__all__ = ["Attr", "Input", "Output", "OpDef", "OpDefinitionError", "TRAITS", "define_op", "get",
           "list_ops", "define_python_op"]
