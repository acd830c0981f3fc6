"""Reparametrizations in their hook form (``weight_norm``, pruning: a forward pre-hook sets
``module.weight`` every call) under compilation: ``flow.jit`` refuses them with an error that
names the hook and the form that compiles; ``flow.compile`` (``torch.compile``) runs such a call
eagerly (a graph break), with eager's values and gradients; the parametrization form
compiles."""

import warnings

import jax
import numpy as np
import pytest

import jflow as flow
import jflow.nn as nn
from jflow.nn.utils import parametrizations, prune

X = np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(2, 4)


def _linear(seed):
    flow.manual_seed(seed)
    return nn.Linear(4, 3)


@pytest.mark.parametrize("form", ["weight_norm", "prune"])
def test_flow_jit_names_the_hook(form):
    m = _linear(0)
    if form == "weight_norm":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            nn.utils.weight_norm(m)
    else:
        prune.l1_unstructured(m, "weight", amount=0.5)
    f = flow.jit(lambda x: m(x).sum())
    with pytest.raises(RuntimeError, match=r"forward pre-hook \((WeightNorm|L1Unstructured) on "
                                           r"Linear.weight\).*parametrization form"):
        f(flow.tensor(X))
    assert not isinstance(m.weight._value, jax.core.Tracer)   # (put back after the trace)
    m(flow.tensor(X))


def test_flow_compile_runs_the_hook_form_eagerly():
    m = _linear(1)
    prune.l1_unstructured(m, "weight", amount=0.5)
    f = flow.compile(lambda x: (m(x) ** 2).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = f(flow.tensor(X))
    got.backward()
    g_compiled = m.weight_orig.grad.numpy().copy()
    m.weight_orig.grad = None
    want = (m(flow.tensor(X)) ** 2).sum()
    want.backward()
    np.testing.assert_allclose(float(got), float(want), rtol=1e-6)
    np.testing.assert_allclose(g_compiled, m.weight_orig.grad.numpy(), rtol=1e-6)
    assert "graph break: a forward pre-hook (L1Unstructured" in f.recompile_reasons[0]


def test_parametrization_form_compiles():
    m = parametrizations.weight_norm(_linear(2))
    f = flow.jit(lambda x: m(x).sum())
    np.testing.assert_allclose(float(f(flow.tensor(X))), float(m(flow.tensor(X)).sum()),
                               rtol=1e-6)
    assert f.trace_count == 1
