"""A unary function declared once (``ops.math.unary_function``) gets every other part derived:
the functor, the api entry (``F.<name>``, and ``flow._C.<name>`` for the built-in ones), the
Tensor method and its in-place form, and ``torch.<name>_`` where PyTorch has one
(docs/ops.md "Adding an op")."""

from __future__ import annotations

import inspect
import re

import jax.numpy as jnp
import numpy as np
import pytest

import jflow as flow
from jflow.functional import FUNCTORS, F, api_yaml_path
from jflow.ops.math import (
    UNARY_FUNCTIONS,
    forget_unary_function,
    unary_function,
)
from jflow.ops.registry import is_registered
from jflow.tensor_methods import INPLACE_FUNCTIONS

NAME = "derivedtest_cbrt"  # a throwaway op, forgotten after each test


@pytest.fixture
def declared():
    """Declare the throwaway function once; undo every derived part afterwards."""
    def declare(**how):
        return unary_function(NAME, jnp.cbrt, **how)
    yield declare
    if NAME in UNARY_FUNCTIONS:
        forget_unary_function(NAME)
    # nothing of it is left for the tests that follow
    assert not is_registered(NAME)
    assert "DerivedtestCbrt" not in FUNCTORS
    assert not hasattr(F, NAME) and NAME not in F.public
    assert all(e.name != NAME for e in F.entries)
    assert not hasattr(flow.Tensor, NAME) and not hasattr(flow.Tensor, NAME + "_")
    assert NAME + "_" not in INPLACE_FUNCTIONS


def test_declared_once_gets_functor_entry_methods(declared):
    declared()
    x = np.array([-8.0, -0.5, 0.0, 1.0, 27.0, 3.3], np.float32)
    want = np.cbrt(x)

    assert FUNCTORS["DerivedtestCbrt"].__name__ == "DerivedtestCbrt"
    # the same signature as a built-in one (expm1's), on the function and the method
    assert inspect.signature(getattr(F, NAME)) == inspect.signature(F.expm1)
    np.testing.assert_allclose(getattr(F, NAME)(flow.tensor(x)).numpy(), want, rtol=1e-6)

    t = flow.tensor(x)
    out = getattr(t, NAME)()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    assert inspect.signature(getattr(flow.Tensor, NAME)) == inspect.signature(flow.Tensor.expm1)

    # in-place method: writes into the tensor, returns it
    t2 = flow.tensor(x)
    r = getattr(t2, NAME + "_")()
    assert r is t2
    np.testing.assert_allclose(t2.numpy(), want, rtol=1e-6)

    # torch.<name>_ (PyTorch has one unless the declaration says otherwise)
    t3 = flow.tensor(x)
    INPLACE_FUNCTIONS[NAME + "_"](t3)
    np.testing.assert_allclose(t3.numpy(), want, rtol=1e-6)

    # the functor's integer rule: computed in the default float dtype, as PyTorch's
    i = getattr(F, NAME)(flow.tensor([8, -27], dtype=flow.int64))
    assert i.dtype == flow.float32
    np.testing.assert_allclose(i.numpy(), [2.0, -3.0], rtol=1e-6)

    # the generated parser's errors, as every entry's
    with pytest.raises(TypeError, match=NAME):
        getattr(F, NAME)("not a tensor")


def test_declaration_flags(declared):
    declared(integers="identity", inplace_function=False)
    i = flow.tensor([8, -27], dtype=flow.int32)
    out = getattr(i, NAME)()
    assert out.dtype == flow.int32 and out is not i
    np.testing.assert_array_equal(out.numpy(), [8, -27])
    assert hasattr(flow.Tensor, NAME + "_")  # the method's in-place form is always there
    assert NAME + "_" not in INPLACE_FUNCTIONS


def test_declaration_refused(declared):
    with pytest.raises(ValueError, match="'integers' must be"):
        unary_function("derivedtest_bad", jnp.cbrt, integers="int")
    assert not is_registered("derivedtest_bad")
    declared()
    with pytest.raises(ValueError, match="already declared"):
        unary_function(NAME, jnp.cbrt)
    with pytest.raises(KeyError, match="not a declared unary function"):
        forget_unary_function("derivedtest_never")


def test_a_taken_name_is_refused_and_rolled_back():
    """``ndimension`` is no op, functor or entry but is a Tensor method: the declaration is
    refused, nothing of it stays, and the existing method is untouched."""
    before = flow.Tensor.ndimension
    with pytest.raises(ValueError, match="Tensor.ndimension already exists"):
        unary_function("ndimension", jnp.cbrt)
    assert flow.Tensor.ndimension is before
    assert "ndimension" not in UNARY_FUNCTIONS and not is_registered("ndimension")
    assert "Ndimension" not in FUNCTORS and not hasattr(F, "ndimension")
    assert flow.tensor(np.zeros((2, 3))).ndimension() == 2


def test_builtin_unary_functions_are_derived():
    """Every declared built-in has all of its parts, and none is also written by hand in
    api.yaml (a second entry would be refused at load; this names the file)."""
    text = api_yaml_path().read_text(encoding="utf-8")
    written = set(re.findall(r'name: "(\w+)"', text))
    problems = []
    for u in UNARY_FUNCTIONS.values():
        if u.api_entry == (u.name in written):
            problems.append(f"{u.name}: api_entry={u.api_entry} but api.yaml "
                            f"{'has' if u.name in written else 'lacks'} an entry")
        for part in (getattr(flow._C, u.name, None), getattr(flow.Tensor, u.name, None),
                     getattr(flow.Tensor, u.name + "_", None), FUNCTORS.get(u.functor)):
            if part is None:
                problems.append(f"{u.name}: a derived part is missing")
        if (u.name + "_" in dir(flow)) != u.inplace_function:
            problems.append(f"{u.name}: flow.{u.name}_ does not follow inplace_function")
    assert not problems, problems
    assert len(UNARY_FUNCTIONS) >= 36


def test_inplace_function_flag_matches_pytorch():
    torch = pytest.importorskip("torch")
    wrong = [u.name for u in UNARY_FUNCTIONS.values()
             if hasattr(torch, u.name + "_") != u.inplace_function]
    assert not wrong, f"inplace_function disagrees with torch.<name>_ for {wrong}"
