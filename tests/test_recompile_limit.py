"""The recompile limit: a compiled function that keeps meeting new signatures (a Python number
argument that changes every call) warns once past ``recompile_limit`` traces; ``flow.compile``
then runs new signatures eagerly (as torch.compile past ``torch._dynamo.config.
recompile_limit``), ``flow.jit`` keeps compiling them. Results are the eager ones either way."""

import warnings

import numpy as np
import pytest

import jflow as flow
from jflow.compiler import RecompileWarning

X = np.arange(4.0, dtype=np.float32)


def _f(x, i):
    return x * i + 1.0


def _calls(fn, values):
    return [fn(flow.tensor(X), i).numpy() for i in values]


def test_flow_compile_runs_new_signatures_eagerly_past_the_limit():
    fn = flow.compile(_f)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecompileWarning)
        _calls(fn, range(8))                     # 8 signatures: no warning
    assert fn.trace_count == 8
    with pytest.warns(RecompileWarning, match=r"8 signatures traced .*argument leaf 1 changed: "
                                              r"7 -> 8.*run eagerly.*pass it as a tensor"):
        (got,) = _calls(fn, [8])
    np.testing.assert_array_equal(got, X * 8 + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecompileWarning)   # (once per function)
        outs = _calls(fn, [9, 10, 3])
    for i, got in zip([9, 10, 3], outs):
        np.testing.assert_array_equal(got, X * i + 1)
    assert fn.trace_count == 8 and fn.cache_size == 8      # 3 still ran compiled


def test_flow_jit_keeps_compiling_past_the_limit_and_none_lifts_it():
    fn = flow.jit(_f, recompile_limit=3)
    _calls(fn, range(3))
    with pytest.warns(RecompileWarning, match="3 signatures traced.*traced and compiled again"):
        _calls(fn, [3])
    _calls(fn, [4])
    assert fn.trace_count == 5
    free = flow.jit(_f, recompile_limit=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecompileWarning)
        _calls(free, range(10))
    with pytest.raises(ValueError, match="recompile_limit must be a positive int or None"):
        flow.jit(_f, recompile_limit=0)


def test_dynamo_config_sets_flow_compile_limit_under_mock_torch():
    import importlib

    import jflow.mock_torch as mock
    limit = importlib.import_module("jflow.compiler.jit").RECOMPILE_LIMIT
    with mock.enable():
        import torch
        assert torch._dynamo.config.recompile_limit == 8
        torch._dynamo.config.cache_size_limit = 2     # (the old name, as PyTorch's alias)
        try:
            assert limit == [2] and torch._dynamo.config.recompile_limit == 2
            fn = torch.compile(_f)
            _calls(fn, [1, 2])
            with pytest.warns(RecompileWarning, match="2 signatures traced"):
                _calls(fn, [3])
            assert fn.trace_count == 2
        finally:
            torch._dynamo.config.recompile_limit = 8
    assert limit == [8]
