"""The op registry: definition-time errors, queries, inputs/outputs/attrs, abstract eval and
the generic vmap rule. Every op here has a unique ``test_reg_`` name (one process defines
each name once)."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jflow as flow
from jflow.kernels import KernelNotFoundError, register_kernel
from jflow.ops import Attr, Input, OpDefinitionError, Output, define_op, get, list_ops
from jflow.ops.infer import desc

_ids = itertools.count()


def _name(stem: str) -> str:
    return f"test_reg_{stem}_{next(_ids)}"


def _same(x, **attrs):
    return desc(x.shape, x.dtype)


def _t(a) -> flow.Tensor:
    return flow.tensor(np.asarray(a))


# ---- an op used by several tests: y = x * k + bias, optional bias, float attr k ------------

def _axpb_infer(x, bias, *, k, axes, dt):
    if bias is not None and (bias.shape != x.shape or bias.dtype != x.dtype):
        raise ValueError(f"bias {bias.shape}/{bias.dtype} does not match x {x.shape}/{x.dtype}")
    return desc(x.shape, x.dtype)


def _axpb_check(*, k, axes, dt):
    if k == 0:
        raise ValueError("k must be nonzero")


AXPB = define_op("test_reg_axpb", inputs=["x", Input("bias", optional=True)],
                 attrs=[Attr("k", "double", 2.0), Attr("axes", "int32_list", (0,)),
                        Attr("dt", "dtype", None)],
                 infer=_axpb_infer, check=_axpb_check, traits=("NoSideEffect",),
                 doc="x * k (+ bias)")


@register_kernel("test_reg_axpb")
def _axpb_kernel(x, bias, *, k, axes, dt):
    assert isinstance(axes, tuple) and (dt is None or isinstance(dt, np.dtype))
    y = x * jnp.asarray(k, x.dtype)
    return y if bias is None else y + bias


# ---- definition-time errors --------------------------------------------------------------

def test_duplicate_op_name():
    name = _name("dup")
    define_op(name, inputs=["x"], infer=_same)
    with pytest.raises(OpDefinitionError, match=rf"cannot define op '{name}': an op with this "
                                                r"name is already registered"):
        define_op(name, inputs=["x"], infer=_same)


@pytest.mark.parametrize("kwargs, pattern", [
    ({"attrs": [Attr("k", "int32", 1.5)]},
     r"default 1.5 of attr 'k' is not a valid int32: expected an int, got float"),
    ({"attrs": [Attr("k", "int32", 2**40)]}, r"default 1099511627776 of attr 'k' is not a valid"),
    ({"attrs": [Attr("k", "bool", 0)]}, r"default 0 of attr 'k' is not a valid bool"),
    ({"attrs": [Attr("k", "int64_list", [1, "a"])]}, r"default \[1, 'a'\] of attr 'k'"),
    ({"attrs": [Attr("k", "dtype", "complex32")]}, r"default 'complex32' of attr 'k'"),
    ({"attrs": [Attr("k", "int128", 1)]}, r"attr 'k' has unknown type 'int128'; known types"),
    ({"traits": ("NoSideEffect", "Pure")}, r"unknown trait\(s\) \['Pure'\]; known traits are"),
    ({"traits": "NoGrad"}, r"traits= must be a list, got the string 'NoGrad'"),
    ({"inputs": ["x", "x"]}, r"duplicate input/output/attr name\(s\) \['x'\]"),
    ({"inputs": ["x"], "attrs": [Attr("x", "int64", 1)]}, r"duplicate .* \['x'\]"),
    ({"inputs": ["x"], "outputs": ["x"]}, r"duplicate .* \['x'\]"),
    ({"inputs": ["_x"]}, r"names starting with '_' are reserved: '_x'"),
    ({"inputs": ["x"], "attrs": [Attr("_vmap", "int64", 1)]}, r"reserved: '_vmap'"),
    ({"inputs": ["1x"]}, r"must be Python identifiers, got '1x'"),
    ({"inputs": ["in", "in_"]}, r"'in' is a Python keyword, so its parameter is named 'in_', "
                                r"which is also the name of another"),
    ({"inputs": ["a-b"]}, r"must be Python identifiers"),
    ({"inputs": [Input("xs", variadic=True, optional=True)]},
     r"input 'xs' cannot be both optional and variadic"),
    ({"inputs": [Input("xs", variadic=True, min=-1)]}, r"variadic minimum must be an int >= 0"),
    ({"outputs": []}, r"an op needs at least one output"),
    ({"inputs": [Input("b", optional=True), "x"]},
     r"input 'x' follows optional input 'b'; put optional inputs last"),
    ({"attrs": [Attr("ctx", "int64", 0)]}, r"attr name 'ctx' is reserved: JAX passes"),
    ({"attrs": [Attr("self", "int64", 0)]}, r"attr name 'self' is reserved"),
    ({"outputs": [Output("a", variadic=True), Output("b", variadic=True)]},
     r"at most one output can be variadic"),
    ({"inputs": [3]}, r"each input must be a name or a jflow.ops.Input, got 3"),
    ({"attrs": [("k", "int64", 1)]}, r"each attr must be a name or a jflow.ops.Attr"),
    ({"infer": None}, r"an inference function \(infer=\) is required"),
    ({"check": 3}, r"check= must be a function of the attrs"),
])
def test_definition_errors(kwargs, pattern):
    name = _name("bad")
    kw = {"inputs": ["x"], "infer": _same, **kwargs}
    with pytest.raises(OpDefinitionError, match=rf"^cannot define op '{name}': .*{pattern}"):
        define_op(name, **kw)
    with pytest.raises(KeyError):  # nothing half-registered
        get(name)


def test_attrs_may_share_names_with_jax_rule_arguments():
    """Attrs are primitive params, passed as keywords to JAX's rules and to jflow's own."""
    names = ["dims", "axis_data", "args", "params", "avals", "platform", "name", "trace"]
    op = define_op(_name("attrnames"), inputs=["x"], infer=_same,
                   attrs=[Attr(n, "int64", 0) for n in names])
    register_kernel(op.name, lambda x, **a: x + a["dims"] - a["platform"])
    x = _t(X)
    np.testing.assert_allclose(op(x, dims=5, platform=1).numpy(), X + 4)
    np.testing.assert_allclose(jax.jit(lambda t: op.apply(t, dims=2))(x).numpy(), X + 2)
    xs = np.stack([X, 2 * X])
    np.testing.assert_allclose(jax.vmap(lambda t: op.apply(t, dims=3))(_t(xs)).numpy(), xs + 3)
    assert jax.eval_shape(lambda t: op.apply(t, avals=1), x).shape == X.shape


def test_op_name_must_be_an_identifier():
    with pytest.raises(OpDefinitionError, match=r"op_type_name must be an identifier"):
        define_op("test reg", inputs=["x"], infer=_same)


# ---- queries -----------------------------------------------------------------------------

def test_get_list_ops_and_signature():
    assert get("test_reg_axpb") is AXPB
    ops = list_ops()
    assert ops == sorted(ops) and "test_reg_axpb" in ops and "add" in ops
    assert AXPB.signature() == ("test_reg_axpb(Tensor x, Tensor? bias, *, double k=2.0, "
                                "int32_list axes=(0,), dtype dt=None) -> (Tensor out)  "
                                "[NoSideEffect]")
    assert repr(AXPB) == f"<jflow op {AXPB.signature()}>"
    assert AXPB.has_trait("NoSideEffect") and not AXPB.has_trait("NoGrad")
    assert AXPB.doc == "x * k (+ bias)"
    op = define_op(_name("sig"), inputs=[Input("xs", variadic=True, min=2)],
                   outputs=[Output("ys", variadic=True), "n"], traits=(),
                   attrs=[Attr("mode", "string")],
                   infer=lambda xs, mode: ([desc(x.shape, x.dtype) for x in xs], desc((), "i8")))
    assert op.signature() == (f"{op.name}(Tensor[>=2] xs, *, string mode) -> "
                              f"(Tensor[] ys, Tensor n)")


def test_unknown_op_name_suggests_close_matches():
    with pytest.raises(KeyError, match=r"no jflow op named 'test_reg_axbp'; did you mean "
                                       r"\['test_reg_axpb'"):
        get("test_reg_axbp")
    with pytest.raises(KeyError, match=r"^\"no jflow op named 'zzzzqqq'\"$"):
        get("zzzzqqq")


# ---- inputs / outputs / attrs ------------------------------------------------------------

X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
B = np.array([[0.5, 0.5, 0.5], [1.0, 1.0, 1.0]], np.float32)


def test_optional_input_and_attr_defaults():
    np.testing.assert_allclose(AXPB(_t(X)).numpy(), X * 2)
    np.testing.assert_allclose(AXPB(_t(X), _t(B), k=3).numpy(), X * 3 + B)
    np.testing.assert_allclose(AXPB.apply(_t(X), None, k=-1.5).numpy(), X * -1.5)
    # cached executables are keyed by attrs: a new k must not reuse the old one
    np.testing.assert_allclose(AXPB(_t(X), k=5.0).numpy(), X * 5)
    np.testing.assert_allclose(AXPB(_t(X), axes=[1, 2], dt=flow.float16).numpy(), X * 2)


def test_attr_errors_name_op_and_attr():
    with pytest.raises(TypeError, match=r"^op 'test_reg_axpb': attr 'k' \(double\): expected "
                                        r"a float, got str$"):
        AXPB(_t(X), k="2")
    with pytest.raises(ValueError, match=r"^op 'test_reg_axpb': attr 'axes' \(int32_list\): "
                                         r"4294967296 does not fit in int32$"):
        AXPB(_t(X), axes=[2**32])
    with pytest.raises(TypeError, match=r"^op 'test_reg_axpb': attr 'dt' \(dtype\): "
                                        r"unsupported dtype 'complex32'"):
        AXPB(_t(X), dt="complex32")
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'kk'"):
        AXPB(_t(X), kk=1.0)
    with pytest.raises(TypeError, match=r"^op 'test_reg_axpb' has no attr\(s\) \['kk'\]; its "
                                        r"attrs are \['k', 'axes', 'dt'\]$"):
        AXPB.normalize_attrs({"kk": 1.0})


def test_required_attr():
    op = define_op(_name("req"), inputs=["x"], attrs=[Attr("n", "int64")], infer=_same)
    register_kernel(op.name, lambda x, n: x * n)
    with pytest.raises(TypeError, match=rf"^op '{op.name}': missing required attr 'n' "
                                        r"\(int64\)$"):
        op.normalize_attrs({})
    np.testing.assert_allclose(op(_t(X), n=np.int64(3)).numpy(), X * 3)


def test_check_and_infer_errors_name_the_op():
    with pytest.raises(ValueError, match=r"^op 'test_reg_axpb': k must be nonzero$"):
        AXPB(_t(X), k=0.0)
    with pytest.raises(ValueError, match=r"^op 'test_reg_axpb': bias \(3,\)/float32 does not "
                                         r"match x \(2, 3\)/float32"):
        AXPB(_t(X), _t(B[0]))


def test_index_errors_of_inference_are_prefixed_too():
    def infer(x, *, dim):
        if not -len(x.shape) <= dim < len(x.shape):
            raise IndexError(f"dim {dim} out of range for {len(x.shape)}-d input")
        return desc(x.shape, x.dtype)

    op = define_op(_name("idx"), inputs=["x"], attrs=[Attr("dim", "int64", 0)], infer=infer)
    register_kernel(op.name, lambda x, dim: x)
    with pytest.raises(IndexError, match=rf"^op '{op.name}': dim 2 out of range for 2-d input"):
        op(_t(X), dim=2)


def test_inputs_must_be_tensors():
    with pytest.raises(TypeError, match=r"^op 'test_reg_axpb': input 0 \('x'\) must be a jflow "
                                        r"Tensor, got ndarray$"):
        AXPB(X)
    with pytest.raises(TypeError, match=r"^op 'test_reg_axpb': input 1 \('bias'\) must be a "
                                        r"jflow Tensor or None, got list$"):
        AXPB(_t(X), [_t(X)])


def test_variadic_inputs_and_outputs():
    def infer(xs, scale):
        shapes = {tuple(x.shape) for x in xs}
        if len(shapes) > 1:
            raise ValueError(f"all inputs must have one shape, got {sorted(shapes)}")
        return [desc(x.shape, x.dtype) for x in xs] * 2, desc((), np.int64)

    op = define_op(_name("var"), inputs=[Input("xs", variadic=True, min=2),
                                         Input("scale", optional=True)],
                   outputs=[Output("ys", variadic=True), "count"], infer=infer)

    @register_kernel(op.name)
    def kernel(xs, scale):
        s = 1 if scale is None else scale
        return [x * s for x in xs] + [x + s for x in xs] + [jnp.asarray(len(xs), jnp.int64)]

    outs = op([_t(X), _t(B)], None)
    assert len(outs) == 5
    for got, want in zip(outs, [X, B, X + 1, B + 1, 2]):
        np.testing.assert_allclose(got.numpy(), want)
    outs = op([_t(X), _t(B), _t(X)], _t(np.float32(2)))
    assert len(outs) == 7 and int(outs[-1].numpy()) == 3
    np.testing.assert_allclose(outs[2].numpy(), X * 2)
    with pytest.raises(ValueError, match=rf"^op '{op.name}': input 'xs' needs at least 2 "
                                         r"tensors, got 1$"):
        op([_t(X)], None)
    with pytest.raises(ValueError, match=rf"^op '{op.name}': all inputs must have one shape"):
        op([_t(X), _t(X[0])], None)
    # a Tensor is not a list of tensors (iterating it would give its rows)
    with pytest.raises(TypeError, match=rf"^op '{op.name}': input 0 \('xs'\) is variadic: pass "
                                        r"a list of jflow Tensors, got Tensor$"):
        op(_t(X), None)
    with pytest.raises(TypeError, match=rf"^op '{op.name}': variadic input 'xs' must be a list "
                                        r"of tensors, got Tensor$"):
        op.apply(_t(X), None)
    with pytest.raises(TypeError, match=rf"^op '{op.name}': input 0 \('xs'\) must be a list of "
                                        r"jflow Tensors, got an item of type ndarray$"):
        op([_t(X), X], None)


def test_variadic_input_with_min_zero():
    op = define_op(_name("var0"), inputs=[Input("xs", variadic=True, min=0)],
                   infer=lambda xs: desc((), np.int64))
    register_kernel(op.name, lambda xs: jnp.asarray(len(xs), jnp.int64))
    assert int(op([]).numpy()) == 0 and int(op([_t(X)]).numpy()) == 1


@pytest.mark.parametrize("result, pattern", [
    (lambda x: (desc(x.shape, x.dtype), desc(x.shape, x.dtype)), r"returned 2 outputs, the op "
                                                                  r"declares 1"),
    (lambda x: 3, r"must return objects with \.shape and \.dtype \(e\.g\. "
                  r"jax\.ShapeDtypeStruct\), got int"),
    (lambda x: desc(x.shape, np.longdouble), r"inference function returned an output of dtype "
                                         r"float128"),
])
def test_bad_inference_results(result, pattern):
    op = define_op(_name("badinf"), inputs=["x"], infer=result)
    register_kernel(op.name, lambda x: x)
    with pytest.raises((TypeError, ValueError), match=rf"^op '{op.name}': .*{pattern}"):
        op(_t(X))


def test_variadic_output_inference_must_be_a_list():
    op = define_op(_name("badvar"), inputs=["x"], outputs=[Output("ys", variadic=True)],
                   infer=lambda x: desc(x.shape, x.dtype))
    register_kernel(op.name, lambda x: [x])
    with pytest.raises(ValueError, match=rf"^op '{op.name}': inference function must return a "
                                         r"list for the variadic output"):
        op(_t(X))


def test_op_without_kernel_fails_clearly():
    op = define_op(_name("nokernel"), inputs=["x"], infer=_same)
    with pytest.raises(KernelNotFoundError, match=rf"^op '{op.name}': no kernel for platform "
                                                  r"'cpu' and dtypes \(x: float32, out: "
                                                  r"float32\); registered kernels:\n  \(none\)"):
        op(_t(X))
    # inference alone needs no kernel
    s = jax.eval_shape(lambda v: op.primitive.bind(v)[0], jax.ShapeDtypeStruct((4,), np.int32))
    assert s.shape == (4,) and s.dtype == np.int32


# ---- abstract eval -------------------------------------------------------------------------

def test_abstract_eval_uses_inference_and_runs_no_kernel():
    calls = []

    def infer(x, *, n):
        return desc((n,) + tuple(x.shape), np.float64)

    op = define_op(_name("tile"), inputs=["x"], attrs=[Attr("n", "int64")], infer=infer)

    @register_kernel(op.name)
    def kernel(x, n):
        calls.append(n)
        return jnp.broadcast_to(x.astype(jnp.float64), (n,) + x.shape)

    spec = jax.ShapeDtypeStruct((2, 3), np.int32)
    out = jax.eval_shape(lambda v: op.primitive.bind(v, n=4)[0], spec)
    assert (out.shape, out.dtype) == ((4, 2, 3), np.float64)
    out = jax.eval_shape(lambda t: op.apply(t, n=5), flow.utils.from_jax(jnp.zeros((2, 3))))
    assert tuple(out.shape) == (5, 2, 3) and out.dtype == flow.float64
    assert calls == []
    with pytest.raises(TypeError, match=rf"op '{op.name}': attr 'n' \(int64\)"):
        jax.eval_shape(lambda t: op.apply(t, n=2.5), flow.utils.from_jax(jnp.zeros(3)))


# ---- generic vmap batching -----------------------------------------------------------------

def _axpb(x, b=None, k=2.0):
    return AXPB.apply(x, b, k=k)


def test_vmap_matches_a_loop():
    xs = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    bs = -np.arange(24, dtype=np.float32).reshape(4, 2, 3) / 7
    got = jax.vmap(_axpb)(_t(xs), _t(bs))
    np.testing.assert_allclose(got.numpy(), xs * 2 + bs)
    # only x batched, b shared (in_axes=None), and x batched along axis 1
    got = jax.vmap(_axpb, in_axes=(1, None))(_t(xs.transpose(1, 0, 2)), _t(B))
    np.testing.assert_allclose(got.numpy(), xs * 2 + B)
    got = jax.vmap(lambda b, x: _axpb(x, b), in_axes=(0, None))(_t(bs), _t(X))
    np.testing.assert_allclose(got.numpy(), X * 2 + bs)
    # under jit too
    got = jax.jit(jax.vmap(lambda x: _axpb(x, None, k=3.0)))(_t(xs))
    np.testing.assert_allclose(got.numpy(), xs * 3)


def test_nested_vmap_with_in_axes_none_mixes():
    xs = np.arange(5 * 4 * 3, dtype=np.float32).reshape(5, 4, 3)
    bs = np.linspace(-1, 1, 4 * 3, dtype=np.float32).reshape(4, 3)
    # outer over x only, inner over both (b batched only at the inner level)
    f = jax.vmap(jax.vmap(_axpb, in_axes=(0, 0)), in_axes=(0, None))
    np.testing.assert_allclose(f(_t(xs), _t(bs)).numpy(), xs * 2 + bs[None])
    # outer over both, inner over x only (b batched only at the outer level)
    bs5 = np.linspace(-2, 2, 5 * 3, dtype=np.float32).reshape(5, 3)
    f = jax.vmap(jax.vmap(_axpb, in_axes=(0, None)), in_axes=(0, 0))
    np.testing.assert_allclose(f(_t(xs), _t(bs5)).numpy(), xs * 2 + bs5[:, None, :])
    # inner batched along a different axis than the outer one
    f = jax.vmap(jax.vmap(_axpb, in_axes=(1, None)), in_axes=(2, None))
    b5 = np.arange(5, dtype=np.float32)
    got = f(_t(xs), _t(b5))
    np.testing.assert_allclose(got.numpy(), xs.transpose(2, 1, 0) * 2 + b5)


def test_vmap_of_variadic_inputs_and_outputs():
    op = define_op(_name("vsplit"), inputs=[Input("xs", variadic=True, min=1)],
                   outputs=[Output("ys", variadic=True)],
                   infer=lambda xs: [desc(x.shape, x.dtype) for x in reversed(xs)])
    register_kernel(op.name, lambda xs: [x * (i + 1) for i, x in enumerate(reversed(xs))])
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = np.arange(2, dtype=np.float32) + 10
    outs = jax.vmap(lambda a, b: op.apply([a, b]), in_axes=(0, None))(_t(a), _t(b))
    assert len(outs) == 2
    np.testing.assert_allclose(outs[0].numpy(), np.broadcast_to(b, (3, 2)))
    np.testing.assert_allclose(outs[1].numpy(), a * 2)
