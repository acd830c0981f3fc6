"""Backward rules of jflow's own ops, one module per op family, named as in ``jflow/ops``
(``tests/test_families.py`` keeps the names in step)."""

from . import (  # noqa: F401
    activation,
    attention,
    complex,
    conv,
    factory,
    fft,
    fused,
    index,
    join,
    linalg,
    loss,
    math,
    matmul,
    nn,
    norm,
    pool,
    rearrange,
    reduce,
    rnn,
    slicing,
    special,
    subscript,
    upsample,
    view,
)
