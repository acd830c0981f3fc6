"""PyTorch's API for the ``torch.<path>`` names where jflow's module of the same name has
another API (``torch.compiler``, ``torch._C``, ``torch.ops``, ``torch.autograd.graph``) or
that only PyTorch programs reach for (``torch.jit``, ``torch._dynamo``, ``torch.fx``,
``torch.nn.attention`` ...). :mod:`jflow.mock_torch` reads ``torch.<path>`` from
``overrides.<path>`` first, then from ``jflow.<path>`` unless the override sets
``__mock_fallback__ = False`` (it replaces jflow's module). Nothing here imports ``torch``;
docs/porting.md ("Libraries") lists what each name does.
"""

__mock_fallback__ = True


def _assert(condition: object, message: str) -> None:
    """``torch._assert``: Python's ``assert`` as a function (PyTorch's, for FX tracing). A
    tensor condition is read with ``bool()``: inside ``flow.compile`` that is a graph
    break, as under ``torch.compile``."""
    if not condition:
        raise AssertionError(message)
