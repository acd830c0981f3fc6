"""User-defined ops from Python: the examples in examples/custom_ops/, NumPy
"python kernel" ops, flow.experimental.custom_op_module, OneFlow's user_op_builder, and the
errors of bad input. Op names are unique (``tco_``): one process defines each name once."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jflow as flow
from jflow.autograd import GradientNotFoundError
from jflow.experimental import custom_op_module
from jflow.experimental.custom_op_module import CustomOpModuleError
from jflow.functional import load_api
from jflow.kernels import register_kernel
from jflow.ops import Attr, OpDefinitionError, define_op
from jflow.ops.infer import desc
from jflow.ops.python_op import define_python_op
from jflow.user_op_builder import UserOpBuilderError, user_op_builder

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "custom_ops"
T = flow.utils.from_jax
X = np.array([-2.0, -1.0, 0.5, 1.0, 2.0], np.float32)
W = np.array([1.0, -2.0, 3.0, 0.5, -1.5], np.float32)
_ids = itertools.count()


def _name(stem: str) -> str:
    return f"tco_{stem}_{next(_ids)}"


def _relu_fwd(args):
    (x,) = args
    return (x > 0) * x


def _relu_bwd(args):
    (y, dy) = args
    return (y > 0) * dy


# ---- the examples, each run as a user would ---------------------------------------------------

@pytest.mark.parametrize("example, last", [
    ("leaky_relu_yzh", "ok  check_op('leaky_relu_yzh_grad')"),
    ("user_relu", "ok  jax.vmap(jax.grad)"),
])
def test_example_runs(example: str, last: str) -> None:
    run = subprocess.run([sys.executable, str(EXAMPLES / example / "run.py")], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().splitlines()[-1] == last, run.stdout


# ---- python-kernel ops ------------------------------------------------------------------------

def _relu_bwd_from_x(args):
    (x, dy) = args
    return (x > 0) * dy


@pytest.mark.parametrize("save", ["y", "x"])
def test_python_op_eager_jit_vmap_tape_and_jax_grad(save: str) -> None:
    """save=["y"]: the gradient's shape comes from attrs; save=["x"]: from the saved input."""
    bwd = _relu_bwd if save == "y" else _relu_bwd_from_x
    op = define_python_op(_name("relu"), _relu_fwd, bwd, save=[save])
    np.testing.assert_array_equal(op(flow.tensor(X)).numpy(), np.maximum(X, 0))
    got = jax.jit(lambda v: op(T(v))._value)(jnp.asarray(X))
    np.testing.assert_array_equal(got, np.maximum(X, 0))
    xs = np.stack([X, -X])
    np.testing.assert_array_equal(jax.vmap(lambda v: op(T(v))._value)(jnp.asarray(xs)),
                                  np.maximum(xs, 0))
    want = (X > 0) * W
    x = flow.tensor(X, requires_grad=True)
    (op(x) * flow.tensor(W)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), want)

    def loss(v):
        return (op(T(v)) * T(jnp.asarray(W))).sum()._value

    np.testing.assert_allclose(jax.grad(loss)(jnp.asarray(X)), want)
    np.testing.assert_allclose(jax.jit(jax.grad(loss))(jnp.asarray(X)), want)
    np.testing.assert_allclose(jax.vmap(jax.grad(loss))(jnp.asarray(xs)), (xs > 0) * W)
    # the grad op is a registered op of its own
    grad_op = flow.ops.get(f"{op.name}_grad")
    assert [i.name for i in grad_op.inputs] == [save, "dy"]
    assert [a.name for a in grad_op.attrs] == (["input_shapes", "input_dtypes"] if save == "y"
                                               else [])


@pytest.mark.skipif(len(jax.devices()) < 4, reason="needs 4 (virtual) devices")
def test_python_op_on_global_tensors() -> None:
    """With SBP signatures (and every input saved) the NumPy functions run per shard; without,
    the op runs on the gathered (broadcast) tensor."""
    from jflow.sharding.sbp import elementwise

    split = define_python_op(_name("gsplit"), _relu_fwd, _relu_bwd_from_x, save=["x"],
                             sbp=elementwise("none"), grad_sbp=elementwise("none"))
    gathered = define_python_op(_name("gall"), _relu_fwd, _relu_bwd, save=["y"])
    plc = flow.placement("cpu", [0, 1, 2, 3])
    x4 = np.linspace(-3, 3, 16).reshape(4, 4)
    for op, sbp in ((split, flow.sbp.split(0)), (gathered, flow.sbp.broadcast)):
        x = flow.tensor(x4).to_global(placement=plc, sbp=flow.sbp.split(0))
        x.requires_grad_(True)
        y = op(x)
        assert y.sbp == (sbp,)
        np.testing.assert_array_equal(y.detach().numpy(), np.maximum(x4, 0))
        (y * y).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * np.maximum(x4, 0))
    with pytest.raises(OpDefinitionError, match=r"grad_sbp= needs every input in save= .*not "
                                                r"saved: \['x'\]"):
        define_python_op("tco_gsbp", _relu_fwd, _relu_bwd, save=["y"],
                         grad_sbp=elementwise("none"))


def test_python_op_with_attrs_two_inputs_and_two_outputs() -> None:
    """forward(args, **attrs); backward gets (saved..., dout...) and returns one grad per
    input (None = zeros); several outputs come back as a tuple."""
    calls = []

    def fwd(args, k):
        x, w = args
        calls.append(k)
        return (x * w * k).astype(x.dtype), (x + w).astype(x.dtype)

    def bwd(args, k):
        x, w, dprod, dsum = args
        return (dprod * w * k + dsum).astype(x.dtype), None

    op = define_python_op(_name("prodsum"), fwd, bwd, inputs=["x", "w"],
                          outputs=["prod", "sum"], attrs=[Attr("k", "double", 2.0)],
                          save=["x", "w"])
    prod, s = op(flow.tensor(X), flow.tensor(W), k=3.0)
    np.testing.assert_allclose(prod.numpy(), X * W * 3)
    np.testing.assert_allclose(s.numpy(), X + W)
    assert calls == [3.0]

    def loss(a, b):
        p, q = op(T(a), T(b), k=0.5)
        return (p.sum() + (q * q).sum())._value

    ga, gb = jax.grad(loss, argnums=(0, 1))(jnp.asarray(X), jnp.asarray(W))
    np.testing.assert_allclose(ga, W * 0.5 + 2 * (X + W), rtol=1e-6)
    np.testing.assert_array_equal(gb, np.zeros_like(W))  # the backward said None


def test_python_op_forward_mode_and_missing_backward_say_why() -> None:
    op = define_python_op(_name("relu"), _relu_fwd, _relu_bwd)
    with pytest.raises(GradientNotFoundError, match=rf"op '{op.name}_grad' runs the NumPy "
                                                    rf"backward of python op '{op.name}'.*jax.jvp"):
        jax.jvp(lambda v: op(T(v))._value, (jnp.asarray(X),), (jnp.ones_like(X),))
    fwd_only = define_python_op(_name("fwd_only"), _relu_fwd)
    x = flow.tensor(X, requires_grad=True)
    with pytest.raises(GradientNotFoundError, match=rf"gradient function for op "
                                                    rf"{fwd_only.name} is not found"):
        fwd_only(x).sum().backward()


@pytest.mark.parametrize("bad, detail", [
    (lambda args: args[0][:3], r"returned output 0 with shape \(3,\) dtype float32; the op's "
                               r"inference says shape \(5,\) dtype float32"),
    (lambda args: args[0].astype(np.float64), r"returned output 0 with shape \(5,\) dtype "
                                              r"float64; the op's inference says shape \(5,\) "
                                              r"dtype float32"),
])
def test_python_forward_with_wrong_shape_or_dtype_names_op_and_kernel(bad, detail) -> None:
    op = define_python_op(_name("badfwd"), bad)
    pattern = rf"op '{op.name}': python kernel '[^']*<lambda>' .*{detail}"
    with pytest.raises(ValueError, match=pattern):
        op(flow.tensor(X))
    with pytest.raises(jax.errors.JaxRuntimeError, match=pattern):  # JAX's wrapper under jit
        jax.jit(lambda v: op(T(v))._value)(jnp.asarray(X))


def _bad_shape_grad(args):
    return args[1][:2]


def _bad_dtype_grad(args):
    return args[1].astype(np.float64)


def _two_grads(args):
    return args[1], args[1]


@pytest.mark.parametrize("bad, detail", [
    (_bad_shape_grad, r"returned a gradient for input 0 \('x'\) with shape \(2,\) dtype float32;"
                      r" the input has shape \(5,\) dtype float32"),
    (_bad_dtype_grad, r"returned a gradient for input 0 \('x'\) with shape \(5,\) dtype float64;"
                      r" the input has shape \(5,\) dtype float32 \(NumPy promotes dtypes: cast "
                      r"with \.astype\(np\.float32\)\)"),
    (_two_grads, r"returned 2 gradient\(s\); python op '[^']*' has 1 input\(s\) \['x'\]"),
])
def test_python_backward_with_wrong_output_names_op_and_function(bad, detail) -> None:
    op = define_python_op(_name("badbwd"), _relu_fwd, bad)
    pattern = rf"{bad.__name__}\(args\).*{detail}" if "gradient for" in detail else detail
    # the tape and jax.grad (RuntimeError: the kernel's error, or JAX's wrapper carrying it)
    x = flow.tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match=pattern):
        op(x).sum().backward()
    with pytest.raises(RuntimeError, match=pattern):
        jax.grad(lambda v: op(T(v)).sum()._value)(jnp.asarray(X))


def test_python_op_definition_errors() -> None:
    with pytest.raises(OpDefinitionError, match=r"python op 'tco_nf': forward must be a "
                                                r"function"):
        define_python_op("tco_nf", 3)
    with pytest.raises(OpDefinitionError, match=r"python op 'tco_var': input 'xs'.*no optional "
                                                r"or variadic"):
        define_python_op("tco_var", _relu_fwd, inputs=[flow.ops.Input("xs", variadic=True)])
    with pytest.raises(OpDefinitionError, match=r"python op 'tco_save': save= names 'z'"):
        define_python_op("tco_save", _relu_fwd, _relu_bwd, save=["z"])
    with pytest.raises(OpDefinitionError, match=r"attr name 'input_shapes' is reserved"):
        define_python_op("tco_res", _relu_fwd, _relu_bwd,
                         attrs=[Attr("input_shapes", "shape_list", ())])
    with pytest.raises(OpDefinitionError, match=r"python op 'tco_ng': a backward was given but "
                                                r"the op is marked NoGrad"):
        define_python_op("tco_ng", _relu_fwd, _relu_bwd, traits=["NoSideEffect", "NoGrad"])
    with pytest.raises(OpDefinitionError, match=r"grad_op_name must differ"):
        define_python_op("tco_same", _relu_fwd, _relu_bwd, grad_op_name="tco_same")
    # a grad op name that is taken fails before the forward op is registered
    with pytest.raises(OpDefinitionError, match=r"python op 'tco_gtaken': its grad op name "
                                                r"'relu' is already registered"):
        define_python_op("tco_gtaken", _relu_fwd, _relu_bwd, grad_op_name="relu")
    # nothing half-defined is left behind by any of these
    assert not [n for n in flow.ops.list_ops()
                if n in ("tco_nf", "tco_var", "tco_save", "tco_res", "tco_ng", "tco_same",
                         "tco_gtaken")]


def _make_scaled(k: float):
    """A notebook cell defining the kernels: each run makes new function objects with the
    same code (and the same closure value ``k`` when the cell is unchanged)."""
    def fwd(args):
        (x,) = args
        return (k * x).astype(x.dtype)

    def bwd(args):
        (y, dy) = args
        return (k * dy).astype(dy.dtype)
    return fwd, bwd


def test_python_op_redefinition_in_one_process() -> None:
    """A notebook re-running its cells: identical -> the same op; different -> an error
    naming replace=True; replace=True -> the new kernels, eagerly and in cached jits."""
    name = _name("redef")
    op1 = define_python_op(name, *_make_scaled(2.0))
    assert define_python_op(name, *_make_scaled(2.0)) is op1  # re-run cell: same op
    with pytest.raises(OpDefinitionError, match=rf"python op '{name}': an op with this name is "
                                                rf"already defined differently \(differs in: "
                                                rf"forward, backward\); pass replace=True"):
        define_python_op(name, *_make_scaled(3.0))
    with pytest.raises(OpDefinitionError, match=r"differs in: save"):
        define_python_op(name, *_make_scaled(2.0), save=["x"])
    assert flow.ops.get(name) is op1  # the failed definitions changed nothing

    by_name_jax = jax.jit(lambda v: flow.ops.get(name)(T(v))._value)
    by_name_flow = flow.jit(lambda t: flow.ops.get(name)(t))
    t = flow.tensor(X)
    np.testing.assert_allclose(op1(t).numpy(), 2 * X)
    np.testing.assert_allclose(by_name_jax(jnp.asarray(X)), 2 * X)
    np.testing.assert_allclose(by_name_flow(t).numpy(), 2 * X)

    op2 = define_python_op(name, *_make_scaled(3.0), replace=True)
    assert op2 is not op1 and flow.ops.get(name) is op2
    assert flow.ops.get(f"{name}_grad") is not None
    np.testing.assert_allclose(op2(t).numpy(), 3 * X)  # eager: no stale executable
    np.testing.assert_allclose(by_name_jax(jnp.asarray(X)), 3 * X)  # same jit, same shapes
    np.testing.assert_allclose(by_name_flow(t).numpy(), 3 * X)
    x = flow.tensor(X, requires_grad=True)
    (op2(x) * flow.tensor(W)).sum().backward()  # the new backward (3 * dy) and grad op
    np.testing.assert_allclose(x.grad.numpy(), 3 * W)
    y = (user_op_builder("redef").Op(name).Input("x", [t]).Output("y").Build()
         .InferAndTryRun().SoleOutputBlob())
    np.testing.assert_allclose(y.numpy(), 3 * X)
    with pytest.raises(RuntimeError, match=rf"op '{name}' was redefined by "
                                           rf"define_python_op\(\.\.\., replace=True\)"):
        op1(t)
    # an op not made by define_python_op is never replaced
    with pytest.raises(OpDefinitionError, match=r"cannot define op 'relu': .*built-in"):
        define_python_op("relu", _relu_fwd, replace=True)


def test_python_op_grad_name_hint_is_true() -> None:
    """A grad op name taken by another op: the error says grad_op_name=, and following it
    defines the op with a working gradient."""
    name = _name("ghint")
    define_python_op(f"{name}_grad", _relu_fwd)  # an unrelated op holds the default name
    with pytest.raises(OpDefinitionError, match=rf"its grad op name '{name}_grad' is already "
                                                rf"registered by another op \(pass grad_op_name="):
        define_python_op(name, _relu_fwd, _relu_bwd)
    op = define_python_op(name, _relu_fwd, _relu_bwd, grad_op_name=f"{name}_backward")
    x = flow.tensor(X, requires_grad=True)
    (op(x) * flow.tensor(W)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (X > 0) * W)
    assert flow.ops.get(f"{name}_backward").inputs[0].name == "y"


def test_builder_takes_the_seeds_in_out_for_default_python_op_names() -> None:
    """user_relu's wrapper writes .Input("in", [x]).Output("out"); define_python_op's
    default names are x / y: the builder maps one onto the other (only for those defaults)."""
    op = define_python_op(_name("seednames"), _relu_fwd, _relu_bwd)
    t = flow.tensor(X)
    run = (user_op_builder("user_relu").Op(op.name).Input("in", [t]).Output("out").Build()
           .InferAndTryRun())
    np.testing.assert_array_equal(run.SoleOutputBlob().numpy(), np.maximum(X, 0))
    np.testing.assert_array_equal(run.OutputBlobs("out")[0].numpy(), np.maximum(X, 0))
    named = define_python_op(_name("seednamed"), _relu_fwd, inputs=["a"], outputs=["b"])
    with pytest.raises(UserOpBuilderError, match=r"unknown input 'in'; the op's inputs are "
                                                 r"\['a'\]"):
        user_op_builder("u").Op(named.name).Input("in", [t])


# ---- bad input named by its culprit -------------------------------------------------------------

def test_op_name_colliding_with_a_builtin() -> None:
    with pytest.raises(OpDefinitionError, match=r"cannot define op 'relu': an op with this name "
                                                r"is already registered"):
        define_op("relu", inputs=["x"], infer=lambda x: desc(x.shape, x.dtype))
    with pytest.raises(OpDefinitionError, match=r"cannot define op 'leaky_relu': an op with this "
                                                r"name is already registered"):
        define_python_op("leaky_relu", _relu_fwd)
    assert flow.ops.get("relu").builtin  # the built-in is untouched
    np.testing.assert_array_equal(flow.relu(flow.tensor(X)).numpy(), np.maximum(X, 0))


def test_kernel_for_an_unknown_op() -> None:
    with pytest.raises(KeyError, match=r"cannot register a kernel for unknown op 'tco_nope': "
                                       r"no jflow op named 'tco_nope'"):
        register_kernel("tco_nope", lambda x: x)
    with pytest.raises(KeyError, match=r"unknown op 'leaky_relu_yzhh'.*did you mean "
                                       r"\['leaky_relu'\]"):
        register_kernel("leaky_relu_yzhh", lambda x: x, backend="python")


def test_yaml_signature_with_an_unknown_functor() -> None:
    yaml_text = ('- name: "my_op"\n'
                 '  signature: "Tensor (Tensor x, Float alpha=0.1) => MyOpFunctor"\n'
                 '  bind_python: True\n')
    with pytest.raises(KeyError, match=r"entry 'my_op': signature 'Tensor \(Tensor x, Float "
                                       r"alpha=0.1\) => MyOpFunctor' refers to unknown functor "
                                       r"'MyOpFunctor'"):
        load_api(yaml_text, functors={"MyOtherFunctor": lambda x, alpha: x})


# ---- custom_op_module ---------------------------------------------------------------------------

def _folder(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    d = tmp_path / name
    d.mkdir()
    for suffix, text in files.items():
        (d / f"{name}{suffix}").write_text(textwrap.dedent(text))
    return d


KERNEL = """
    def forward(args):
        (x,) = args
        return (x > 0) * x


    def backward(args):
        (y, dy) = args
        return (y > 0) * dy
"""
OP_DEFINE = """
    from jflow.ops.python_op import define_python_op


    def define(py_kernel):
        define_python_op("{op}", py_kernel.forward, py_kernel.backward, save=["y"])
"""
API = """
    from jflow.user_op_builder import user_op_builder


    def {op}(x):
        return (user_op_builder("my_{op}").Op("{op}").Input("x", [x]).Output("y").Build()
                .InferAndTryRun().SoleOutputBlob())
"""


def test_custom_op_module_loads_the_three_parts(tmp_path: Path) -> None:
    op = _name("mod")
    d = _folder(tmp_path, op, {"_py_kernel.py": KERNEL, "_op.py": OP_DEFINE.format(op=op),
                               "_py_api.py": API.format(op=op)})
    m = custom_op_module(op, str(d))
    assert m.ops == [op, f"{op}_grad"]
    assert m.py_api().cpp_def().py_kernel().build_load() is m  # OneFlow's chain
    assert custom_op_module(op, d) is m  # loaded once
    np.testing.assert_array_equal(getattr(m.api, op)(flow.tensor(X)).numpy(), np.maximum(X, 0))
    x = flow.tensor(X, requires_grad=True)
    (getattr(m.api, op)(x) * flow.tensor(W)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (X > 0) * W)
    got = jax.jit(jax.grad(lambda v: getattr(m.api, op)(T(v)).sum()._value))(jnp.asarray(X))
    np.testing.assert_allclose(got, (X > 0).astype(np.float32))
    # kernels are named after the user's functions
    from jflow.kernels import kernels_for
    assert kernels_for(op)[0].name == f"{op}_py_kernel.forward"


def test_custom_op_module_whose_op_file_defines_its_op_itself(tmp_path: Path) -> None:
    """No define(): the op file registers an xla kernel when imported; no kernel file."""
    op = _name("self")
    d = _folder(tmp_path, op, {"_op.py": f"""
        import jax.numpy as jnp
        from jflow.kernels import register_kernel
        from jflow.ops import define_op
        from jflow.ops.infer import desc

        define_op("{op}", inputs=["x"], outputs=["y"], infer=lambda x: desc(x.shape, x.dtype))
        register_kernel("{op}", lambda x: 3 * x * x)
    """})
    m = custom_op_module(op, d)
    assert m.ops == [op] and m.kernel_module is None
    np.testing.assert_allclose(flow.ops.get(op)(flow.tensor(X)).numpy(), 3 * X * X)
    with pytest.raises(FileNotFoundError, match=rf"\.api needs {op}_py_api\.py, which is not in "
                                                r"the folder"):
        m.api  # noqa: B018
    with pytest.raises(FileNotFoundError, match=rf"\.py_kernel\(\) needs {op}_py_kernel\.py"):
        m.py_kernel()


def test_custom_op_module_missing_folder_and_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"custom_op_module\('x'\): no such folder "
                                                r"'.*nowhere'"):
        custom_op_module("x", tmp_path / "nowhere")
    f = tmp_path / "afile.py"
    f.write_text("")
    with pytest.raises(NotADirectoryError, match=r"is not a folder"):
        custom_op_module("afile", f)
    d = _folder(tmp_path, "tco_empty", {"_py_api.py": "pass\n"})
    with pytest.raises(FileNotFoundError, match=r"the op definition needs tco_empty_op\.py, "
                                                r"which is not in the folder \(expected files: "
                                                r"tco_empty_op\.py, tco_empty_py_kernel\.py, "
                                                r"tco_empty_py_api\.py\)"):
        custom_op_module("tco_empty", d)
    op = _name("nokernel")
    d = _folder(tmp_path, op, {"_op.py": OP_DEFINE.format(op=op)})
    with pytest.raises(FileNotFoundError, match=rf"define\(py_kernel\) in {op}_op\.py needs "
                                                rf"{op}_py_kernel\.py"):
        custom_op_module(op, d)
    with pytest.raises(ValueError, match=r"op_type_name must be an identifier"):
        custom_op_module("my-op", d)


def test_custom_op_module_errors_from_the_users_files(tmp_path: Path) -> None:
    # the op file defines an op that collides with a built-in: the error names file and op
    d = _folder(tmp_path, "tco_clash", {"_py_kernel.py": KERNEL,
                                        "_op.py": OP_DEFINE.format(op="relu")})
    with pytest.raises(OpDefinitionError, match=r"custom_op_module\('tco_clash', .*\): "
                                                r"tco_clash_op\.py: define\(\): cannot define "
                                                r"op 'relu': an op with this name is already "
                                                r"registered"):
        custom_op_module("tco_clash", d)
    # an error raised while importing a file keeps its type and names the file
    d = _folder(tmp_path, "tco_syntax", {"_op.py": "def broken(:\n"})
    with pytest.raises(SyntaxError):
        custom_op_module("tco_syntax", d)
    d = _folder(tmp_path, "tco_raise", {"_op.py": "raise KeyError('no such thing')\n"})
    with pytest.raises(KeyError, match=r"loading tco_raise_op\.py: no such thing"):
        custom_op_module("tco_raise", d)
    # a kernel file without forward(args), an op file that defines nothing
    d = _folder(tmp_path, "tco_nofwd", {"_py_kernel.py": "def backward(args):\n    pass\n",
                                        "_op.py": "pass\n"})
    with pytest.raises(CustomOpModuleError, match=r"tco_nofwd_py_kernel\.py must define "
                                                  r"forward\(args\)"):
        custom_op_module("tco_nofwd", d)
    d = _folder(tmp_path, "tco_noop", {"_op.py": "pass\n"})
    with pytest.raises(CustomOpModuleError, match=r"tco_noop_op\.py defined no op"):
        custom_op_module("tco_noop", d)


# ---- user_op_builder ----------------------------------------------------------------------------

def test_builder_runs_builtin_ops_with_attrs() -> None:
    x = flow.tensor(X)
    y = (user_op_builder("op_relu").Op("relu").Input("x", [x]).Output("y").Build()
         .InferAndTryRun().SoleOutputBlob())
    np.testing.assert_array_equal(y.numpy(), np.maximum(X, 0))
    y = (user_op_builder("op_leaky").Op("leaky_relu").Input("x", [x]).Output("y")
         .Attr("alpha", 0.1, "AttrTypeFloat").Build().InferAndTryRun().SoleOutputBlob())
    np.testing.assert_allclose(y.numpy(), np.where(X > 0, X, 0.1 * X))
    # a variadic input takes a list; the python op from above works the same way
    y = (user_op_builder("op_cat").Op("cat").Input("xs", [x, x, x]).Output("y").Attr("dim", 0)
         .Build().InferAndTryRun().SoleOutputBlob())
    np.testing.assert_array_equal(y.numpy(), np.concatenate([X, X, X]))
    py = define_python_op(_name("b_relu"), _relu_fwd, _relu_bwd)
    y = (user_op_builder("op_py").Op(py.name).Input("x", [x]).Output("y").Build()
         .InferAndTryRun().SoleOutputBlob())
    np.testing.assert_array_equal(y.numpy(), np.maximum(X, 0))


def test_builder_several_outputs_remote_blob_list() -> None:
    x = flow.tensor(np.array([3.0, 1.0, 4.0, 1.5, 5.0]))
    op = (user_op_builder("op_topk").Op("topk").Input("x", [x]).Output("values")
          .Output("indices").Attr("k", 2).Build().InferAndTryRun())
    values, indices = op.RemoteBlobList()
    np.testing.assert_array_equal(values.numpy(), [5.0, 4.0])
    np.testing.assert_array_equal(indices.numpy(), [4, 2])
    with pytest.raises(UserOpBuilderError, match=r"user_op_builder\('op_topk'\) \(op 'topk'\): "
                                                 r"SoleOutputBlob\(\) needs exactly one output, "
                                                 r"the builder requested 2"):
        op.SoleOutputBlob()
    # only the outputs asked for come back
    only = (user_op_builder("op_topk1").Op("topk").Input("x", [x]).Output("indices")
            .Attr("k", 1).Build().InferAndTryRun().SoleOutputBlob())
    np.testing.assert_array_equal(only.numpy(), [4])
    # a variadic output: num= gives the count, checked when it runs
    parts = (user_op_builder("op_split").Op("split").Input("x", [x]).Output("outs", num=2)
             .Attr("dim", 0).Attr("sizes", [2, 3]).Build().InferAndTryRun().RemoteBlobList())
    assert [p.numpy().tolist() for p in parts] == [[3.0, 1.0], [4.0, 1.5, 5.0]]
    with pytest.raises(UserOpBuilderError, match=r"output 'outs' has 2 tensors, the builder "
                                                 r"asked for num=3"):
        (user_op_builder("op_split3").Op("split").Input("x", [x]).Output("outs", num=3)
         .Attr("dim", 0).Attr("sizes", [2, 3]).Build().InferAndTryRun())


def test_builder_under_jit_grad_and_on_the_tape() -> None:
    def leaky(t):
        return (user_op_builder("op").Op("leaky_relu").Input("x", [t]).Output("y")
                .Attr("alpha", 0.2).Build().InferAndTryRun().SoleOutputBlob())

    want = np.where(X > 0, 1.0, 0.2).astype(np.float32)
    got = jax.jit(jax.grad(lambda v: leaky(T(v)).sum()._value))(jnp.asarray(X))
    np.testing.assert_allclose(got, want)
    x = flow.tensor(X, requires_grad=True)
    leaky(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), want)


def test_builder_errors_name_the_op_and_the_culprit() -> None:
    x = flow.tensor(X)
    with pytest.raises(UserOpBuilderError, match=r"user_op_builder\('b'\)\.Op: no jflow op named "
                                                 r"'lekay_relu'; did you mean \['leaky_relu'"):
        user_op_builder("b").Op("lekay_relu")
    with pytest.raises(UserOpBuilderError, match=r"\.Input: call \.Op\(op_type_name\) first"):
        user_op_builder("b").Input("x", [x])
    b = user_op_builder("b").Op("leaky_relu")
    with pytest.raises(UserOpBuilderError, match=r"user_op_builder\('b'\) \(op 'leaky_relu'\): "
                                                 r"unknown input 'in'; the op's inputs are "
                                                 r"\['x'\]"):
        b.Input("in", [x])
    with pytest.raises(UserOpBuilderError, match=r"unknown output 'out'; the op's outputs are "
                                                 r"\['y'\]"):
        b.Output("out")
    with pytest.raises(UserOpBuilderError, match=r"\(op 'leaky_relu'\): unknown attr 'slope'; "
                                                 r"the op's attrs are \['alpha'\]"):
        b.Attr("slope", 0.1)
    with pytest.raises(UserOpBuilderError, match=r"attr 'alpha' is declared float, the builder "
                                                 r"says AttrTypeInt32"):
        b.Attr("alpha", 1, "AttrTypeInt32")
    with pytest.raises(TypeError, match=r"\.Input\('x', \.\.\.\) takes a list of tensors"):
        b.Input("x", x)
    with pytest.raises(UserOpBuilderError, match=r"input 'x' takes exactly one tensor, got 2"):
        b.Input("x", [x, x])
    with pytest.raises(UserOpBuilderError, match=r"missing input\(s\) \['x'\]"):
        b.Output("y").Build()
    with pytest.raises(UserOpBuilderError, match=r"no output requested"):
        user_op_builder("b").Op("relu").Input("x", [x]).Build()
    with pytest.raises(TypeError, match=r"\(op 'leaky_relu'\): attr 'alpha' \(float\): expected "
                                        r"a float, got str"):
        b.Attr("alpha", "big")
    # the op's check fn runs at Build(), its message names the op
    g = user_op_builder("g").Op("gelu").Input("x", [x]).Output("y").Attr("approximate", "fast")
    with pytest.raises(ValueError, match=r"op 'gelu': approximate must be 'none' or 'tanh'"):
        g.Build()
