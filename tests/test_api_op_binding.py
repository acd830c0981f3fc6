"""``=> op:name`` in the functional yaml: a signature bound straight to an op's ``apply``
(jflow/functional/opbind.py), with the op's attr defaults and load-time checks."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import jflow as flow
from jflow.functional import FUNCTORS, ApiYamlError, load_api
from jflow.ops import get as get_op

X = flow.tensor(np.array([[-1.5, 0.5, 2.0], [0.25, -3.0, 1.0]], np.float32))


def _same(a, b) -> None:
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_binding_calls_the_op_eagerly_with_its_attr_default():
    api = load_api('- {name: my_elu, signature: "Tensor (Tensor x, Float alpha) => op:elu"}')
    elu = get_op("elu").apply
    _same(api.my_elu(X), elu(X))                      # alpha: the op's default (1.0)
    _same(api.my_elu(X, 0.5), elu(X, alpha=0.5))
    _same(api.my_elu(X, alpha=2), elu(X, alpha=2.0))  # the yaml type converts the int
    (sig,) = api.entries[0].signatures
    assert sig.op == "elu" and sig.functor is None
    assert sig.params[1].default == 1.0 and sig.describe() == "(Tensor x, Float alpha=1.0)"
    with pytest.raises(TypeError, match=r"^my_elu\(\): argument 'alpha' \(position 2\) must "
                                        r"be float, not str$"):
        api.my_elu(X, "a")


def test_a_yaml_default_overrides_the_ops():
    api = load_api('- {name: f, signature: "Tensor (Tensor x, *, Float alpha=0.5) => op:elu"}')
    _same(api.f(X), get_op("elu").apply(X, alpha=0.5))
    with pytest.raises(TypeError, match=r"takes 1 positional argument"):
        api.f(X, 0.5)


def test_optional_variadic_and_multi_output_ops():
    api = load_api("""
- {name: lin, signature: "Tensor (Tensor x, Tensor weight) => op:linear"}
- {name: lin_b, signature: "Tensor (Tensor x, Tensor weight, Tensor bias=None) => op:linear"}
- {name: join, signature: "Tensor (TensorTuple xs, Int64 dim) => op:cat"}
- {name: srt, signature: "TensorTuple[values, indices] (Tensor x, Int64 dim, Bool descending)
                          => op:sort"}
""")
    w, b = flow.ones(4, 3), flow.ones(4)
    _same(api.lin(X, w), get_op("linear").apply(X, w, None))  # the left-out input is None
    _same(api.lin_b(X, w, b), get_op("linear").apply(X, w, b))
    _same(api.lin_b(X, w), api.lin(X, w))
    _same(api.join([X, X], 1), get_op("cat").apply([X, X], dim=1))
    out = api.srt(X, descending=True)                         # dim: the op's -1
    values, indices = get_op("sort").apply(X, dim=-1, descending=True)
    _same(out.values, values)
    _same(out.indices, indices)


def test_op_arguments_can_be_paired_with_differently_named_parameters():
    """PyTorch's ``input`` (the flow._C keyword) carries OneFlow's op input ``x`` (the name
    user_op_builder uses): both stay public."""
    api = load_api('- {name: r, signature: "Tensor (Tensor input, *, Float a) => '
                   'op:leaky_relu(x=input, alpha=a)"}')
    _same(api.r(input=X), get_op("leaky_relu").apply(X))      # alpha: the op's 0.01
    _same(api.r(X, a=0.5), get_op("leaky_relu").apply(X, alpha=0.5))
    (sig,) = api.entries[0].signatures
    assert sig.op_names == (("x", "input"), ("alpha", "a"))
    assert sig.describe() == "(Tensor input, *, Float a=0.01)"
    _same(flow.relu(input=X), get_op("relu").apply(X))


def test_op_bindings_mix_with_functor_overloads():
    api = load_api('- {name: f, signature: ["Tensor (Tensor x, Float alpha) => op:elu", '
                   '"Tensor (Scalar x) => Rec"]}', functors={"Rec": lambda x: ("rec", x)})
    _same(api.f(X), get_op("elu").apply(X))                   # the positional fast path
    _same(api.f(X, alpha=0.5), get_op("elu").apply(X, alpha=0.5))
    assert api.f(3) == ("rec", 3)


def test_builtin_pass_throughs_are_op_bindings():
    """relu, elu, ... had functors that only called their op; now the yaml binds the op."""
    bound = {"abs", "neg", "logical_not", "clone", "relu", "elu", "gelu", "softplus",
             "hardtanh"}  # (linear has a functor: autocast casts its operands)
    for name in bound:
        (sig,) = getattr(flow._C, name)._entry.signatures
        assert sig.op == name, name
    assert not {"Abs", "Neg", "LogicalNot", "Clone", "Relu", "Elu", "Gelu", "Softplus",
                "Hardtanh"} & set(FUNCTORS)
    _same(flow._C.softplus(X), get_op("softplus").apply(X, beta=1.0, threshold=20.0))
    _same(flow.nn.functional.hardtanh(X), get_op("hardtanh").apply(X))
    x = flow.tensor(np.array([-1.0, 2.0], np.float32), requires_grad=True)
    flow._C.elu(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [np.exp(-1.0), 1.0], rtol=1e-6)


def test_defaults_are_written_once():
    """The op attr's default is what flow._C and nn.functional show."""
    assert get_op("elu").attrs[0].default == 1.0
    assert inspect.signature(flow.nn.functional.elu).parameters["alpha"].default == 1.0
    assert inspect.signature(flow.nn.functional.softplus).parameters["threshold"].default == 20.0
    assert "elu(Tensor x, Float alpha=1.0) -> Tensor" in flow._C.elu.__doc__


@pytest.mark.parametrize("signature, pattern", [
    ("Tensor (Tensor x) => op:no_such_op", r"binds unknown op 'no_such_op'"),
    ("Tensor (Tensor x, Float beta) => op:elu",
     r"parameter 'beta' of .* is neither an input nor an attr of op 'elu' \(inputs \['x'\], "
     r"attrs \['alpha'\]\)"),
    ("Tensor (Float x) => op:elu", r"parameter 'x' .* is input 'x' of op 'elu', so its type "
                                   r"must be Tensor, not Float"),
    ("Tensor (Tensor xs, Int64 dim) => op:cat", r"must be TensorTuple, not Tensor"),
    ("Tensor (Tensor x, String alpha=\\\"a\\\") => op:elu",
     r"attr 'alpha' \(float\) of op 'elu', which a String cannot carry"),
    ("Tensor (Tensor x, Int64 dim) => op:narrow",
     r"leaves out \['start', 'length'\], which op 'narrow' requires"),
    ("Tensor (Tensor x) => op:sort", r"returns Tensor, but op 'sort' returns"),
    ("TensorTuple[a, b, c] (Tensor x) => op:sort", r"returns TensorTuple\['a', 'b', 'c'\]"),
    ("Tensor (Float alpha, Tensor x) => op:elu",
     r"parameter 'x' without a default follows one with a default"),
    ("Tensor (Tensor input) => op:relu(x=inp)",
     r"op argument 'x=inp' of .* names no parameter of the signature"),
    ("Tensor (Tensor x, Tensor input) => op:relu(x=input)",
     r"op argument 'x' is given by two parameters"),
    ("Tensor (Tensor input) => op:relu(y=input)",
     r"parameter 'input' \(as 'y'\) of .* is neither an input nor an attr of op 'relu'"),
    ("Tensor (Tensor input) => op:relu(x=input, x=input)", r"'x' is named twice"),
    ("Tensor (Tensor input) => op:relu(x)", r"cannot parse op argument 'x'"),
    ("Tensor (Tensor input) => Rec(x=input)", r"only an op binding .* takes argument names"),
])
def test_bad_op_binding_is_an_api_yaml_error_naming_the_entry(signature, pattern):
    text = f'- {{name: my_entry, signature: "{signature}"}}'
    with pytest.raises(ApiYamlError, match=r"^my\.yaml entry 'my_entry': .*" + pattern):
        load_api(text, name="my.yaml")
