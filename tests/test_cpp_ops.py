"""C++/CUDA ops: jflow/op.h, flow.config.load_library, cpp_extension, sysconfig.

The libraries are compiled once per run into a temporary build directory that pytest-xdist's
workers share (module-scoped fixtures, tests/_shared.py); the examples under
examples/custom_ops/ run as subprocesses sharing it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _shared import run_lock, shared_dir, worker_order, write_if_changed

import jflow as flow
from jflow import sysconfig
from jflow.config import LibraryError, load_library
from jflow.kernels import KernelNotFoundError, kernels_for
from jflow.ops import OpDefinitionError
from jflow.utils import cpp_extension, from_jax, to_jax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAS_NVCC = cpp_extension.find_nvcc() is not None

# ---- the test library: every attr type, C++ inference, typed buffers, a raw XLA handler -------

TEST_LIB = r"""
#include <cstdint>
#include <string>
#include "jflow/op.h"
namespace ffi = xla::ffi;

// y = x * f + d + i + l + b + len(s): every attr reaches the kernel (y is float64)
JFLOW_REGISTER_OP("cpp_t_attrs").Input("x").Output("y")
    .Attr<float>("f", 0.1f).Attr<double>("d", 0.1).Attr<int32_t>("i", 7)
    .Attr<int64_t>("l", int64_t(1) << 40).Attr<bool>("b", true).Attr<std::string>("s", "abc");
static ffi::Error Attrs(ffi::Buffer<ffi::F64> x, ffi::ResultBuffer<ffi::F64> y, float f,
                        double d, int32_t i, int64_t l, bool b, std::string_view s) {
  for (size_t k = 0; k < x.element_count(); ++k)
    y->typed_data()[k] = x.typed_data()[k] * f + d + i + double(l) + b + double(s.size());
  return ffi::Error::Success();
}
JFLOW_REGISTER_KERNEL("cpp_t_attrs", "cpu", Attrs);

// out = concatenation of `reps` copies of x (1-D): output shape from a C++ inference function
static void RepeatInfer(jflow::InferContext& ctx) {
  const jflow::TensorDesc& x = ctx.input(0);
  if (x.dtype != "float32") throw jflow::TypeError("repeat wants float32, got " + x.dtype);
  if (x.rank() < 1) throw jflow::ValueError("repeat wants an input with a dimension");
  int64_t reps = ctx.attr<int64_t>("reps");
  if (reps < 1) throw jflow::ValueError("reps must be >= 1, got " + std::to_string(reps));
  ctx.output(0).dtype = "float32";
  ctx.output(0).shape = {x.shape[0] * reps};
  ctx.output(1).dtype = "int64";
  ctx.output(1).shape = {int64_t(ctx.attr<std::string>("tag").size())};
}
JFLOW_REGISTER_OP("cpp_t_repeat").Input("x").Output("out").Output("tag_len")
    .Attr<int64_t>("reps").Attr<std::string>("tag", "").Infer(RepeatInfer);
static ffi::Error Repeat(ffi::Buffer<ffi::F32, 1> x, ffi::ResultBuffer<ffi::F32, 1> out,
                         ffi::ResultBuffer<ffi::S64, 1> tag_len, int64_t reps,
                         std::string_view tag) {
  size_t n = x.element_count(), k = 0;
  for (int64_t r = 0; r < reps; ++r)
    for (size_t j = 0; j < n; ++j) out->typed_data()[k++] = x.typed_data()[j];
  for (size_t j = 0; j < tag.size(); ++j) tag_len->typed_data()[j] = tag[j];
  return ffi::Error::Success();
}
JFLOW_REGISTER_KERNEL("cpp_t_repeat", "cpu", Repeat);

// a handler written with XLA's own macro, registered as is
JFLOW_REGISTER_OP("cpp_t_scale").Input("x").Output("y").Attr<float>("k", 2.0f);
static ffi::Error ScaleImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y, float k) {
  for (size_t j = 0; j < x.element_count(); ++j) y->typed_data()[j] = k * x.typed_data()[j];
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(ScaleHandler, ScaleImpl, ffi::Ffi::Bind()
    .Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>().Attr<float>("k"));
JFLOW_REGISTER_FFI_HANDLER("cpp_t_scale", "cpu", ScaleHandler).Dtypes("x", "float32");

// one function, the kernel of two ops whose attrs have different names
JFLOW_REGISTER_OP("cpp_t_mul_a").Input("x").Output("y").Attr<float>("a");
JFLOW_REGISTER_OP("cpp_t_mul_b").Input("x").Output("y").Attr<float>("b");
JFLOW_REGISTER_KERNEL("cpp_t_mul_a", "cpu", ScaleImpl);
JFLOW_REGISTER_KERNEL("cpp_t_mul_b", "cpu", ScaleImpl);
"""

TEST_LIB_CU = r"""
#include "jflow/op.h"
namespace ffi = xla::ffi;
__global__ void ScaleKernel(const float* x, float* y, size_t n, float k) {
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = k * x[i];
}
static ffi::Error ScaleCuda(cudaStream_t stream, ffi::Buffer<ffi::F32> x,
                            ffi::ResultBuffer<ffi::F32> y, float k) {
  size_t n = x.element_count();
  if (n) ScaleKernel<<<(n + 255) / 256, 256, 0, stream>>>(x.typed_data(), y->typed_data(), n, k);
  return ffi::Error::Success();
}
JFLOW_REGISTER_KERNEL("cpp_t_scale", "cuda", ScaleCuda);
"""

# libraries that must be refused, one case each (selected with -DCASE=n)
BAD_LIB = r"""
#include "jflow/op.h"
namespace ffi = xla::ffi;
static ffi::Error Same(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y, double alpha) {
  return ffi::Error::Success();
}
#if CASE == 1  // collides with a built-in op; declares a second op that must not appear
JFLOW_REGISTER_OP("cpp_bad_first").Input("x").Output("y").Attr<double>("alpha", 1.0);
JFLOW_REGISTER_OP("relu").Input("x").Output("y").Attr<double>("alpha", 1.0);
JFLOW_REGISTER_KERNEL("relu", "cpu", Same);
#elif CASE == 2  // collides with an op of the test library
JFLOW_REGISTER_OP("cpp_t_attrs").Input("x").Output("y").Attr<double>("alpha", 1.0);
#elif CASE == 3  // the kernel takes a double for a float attr
JFLOW_REGISTER_OP("cpp_bad_attr").Input("x").Output("y").Attr<float>("alpha", 1.0f);
JFLOW_REGISTER_KERNEL("cpp_bad_attr", "cpu", Same);
#elif CASE == 4  // a kernel for an op nobody defines
JFLOW_REGISTER_KERNEL("cpp_bad_nowhere", "cpu", Same);
#endif
"""
BAD_CASES = {1: "collide_builtin", 2: "collide_library", 3: "attr_mismatch", 4: "unknown_op"}


@pytest.fixture(scope="module")
def cxx() -> str:
    """The C++ compiler; the tests that compile are skipped without one."""
    found = cpp_extension.find_cxx()
    if found is None:
        pytest.skip("no C++ compiler (g++ or $CXX): C++ op libraries cannot be built here")
    return found


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory, cxx) -> str:
    """One directory for the run, shared by pytest-xdist's workers (tests/_shared.py): the
    first worker builds the libraries, the others find them in the build cache."""
    with shared_dir(tmp_path_factory, "jflow_ext") as d:
        return str(d)


@pytest.fixture(scope="module")
def sources(tmp_path_factory, build_dir) -> dict[str, str]:
    out = {}
    with shared_dir(tmp_path_factory, "jflow_ext") as d:
        (d / "src").mkdir(exist_ok=True)
        for name, text in (("testlib.cpp", TEST_LIB), ("testlib.cu", TEST_LIB_CU),
                           ("bad.cpp", BAD_LIB)):
            write_if_changed(d / "src" / name, text)
            out[name] = str(d / "src" / name)
    return out


EXAMPLES = os.path.join(ROOT, "examples", "custom_ops")


@pytest.fixture(scope="module")
def built(tmp_path_factory, build_dir, sources) -> dict[str, str]:
    """Every library of this module: name -> path of the .so. The examples' libraries too,
    with the flags test_example_runs gives their run.py (``--cflags=-O0``, as every library
    here: the checks are the same, the build quicker than the default -O2), so that they find
    them cached. Each library under its own lock, the workers going through the list from
    its two ends (tests/_shared.py: worker_order): both workers reach this fixture at once,
    and the one that waited on a single lock for the other's builds idled ~40 s. (Never two
    compiles in one worker: parallel compiles were slower on the 2-core test machines.)"""
    fast = ["-O0"]
    jobs = {"testlib": ([sources["testlib.cpp"]] + ([sources["testlib.cu"]] if HAS_NVCC else []),
                        fast),
            "myrelu": ([os.path.join(EXAMPLES, "myrelu", "myrelu.cpp")]
                       + ([os.path.join(EXAMPLES, "myrelu", "myrelu.cu")] if HAS_NVCC else []),
                       fast),
            "myop": ([os.path.join(EXAMPLES, "myop", "myop.cpp")], fast)}
    for case, name in BAD_CASES.items():
        jobs[f"bad_{name}"] = ([sources["bad.cpp"]], [f"-DCASE={case}", *fast])
    out = {}
    for n in worker_order(list(jobs)):  # (another worker may be building one: its lock)
        srcs, fl = jobs[n]
        with run_lock(tmp_path_factory, f"jflow_ext_{n}"):
            out[n] = cpp_extension.build(n, srcs, extra_cflags=fl, extra_cuda_cflags=fl,
                                         build_directory=build_dir)
    return out


@pytest.fixture(scope="module")
def testlib(built):
    return load_library(built["testlib"])


# ---- sysconfig ---------------------------------------------------------------------------------

def _shell(cmd: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=ROOT, **kw)


def test_sysconfig_paths_and_flags():
    assert os.path.isfile(os.path.join(sysconfig.get_include(), "jflow", "op.h"))
    assert sysconfig.get_include_dirs() == [sysconfig.get_include(), jax.ffi.include_dir()]
    flags = sysconfig.get_compile_flags()
    assert "-std=c++17" in flags and "-fPIC" in flags
    assert f"-I{sysconfig.get_include()}" in flags and jax.ffi.include_dir() in flags
    assert sysconfig.get_link_flags() == ["-shared"]
    assert os.path.isfile(os.path.join(sysconfig.get_lib(), "__init__.py"))


def test_sysconfig_printed_from_the_shell_builds_a_library(tmp_path, capsys, cxx):
    """The issue's shell one-liners give flags that build a loadable library by hand."""
    py = sys.executable
    cflags = _shell(f'{py} -c "import jflow, jflow.sysconfig; '
                    f'print(\' \'.join(jflow.sysconfig.get_compile_flags()))"')
    assert cflags.returncode == 0, cflags.stderr
    assert cflags.stdout.strip() == " ".join(sysconfig.get_compile_flags())
    ldflags = _shell(f"{py} -m jflow.sysconfig --ldflags")
    assert ldflags.returncode == 0 and ldflags.stdout.strip() == "-shared"
    assert sysconfig._main(["--bogus"]) == 2 and "usage:" in capsys.readouterr().err
    src = tmp_path / "byhand.cpp"
    src.write_text('#include "jflow/op.h"\n')  # a library declaring nothing: builds fast
    so = tmp_path / "libbyhand.so"
    res = _shell(f"{cxx} {cflags.stdout.strip()} -O0 {src} -o {so} {ldflags.stdout.strip()}")
    assert res.returncode == 0, res.stderr
    lib = load_library(so)
    assert lib.ops == () and lib.kernels == ()


# ---- the examples ------------------------------------------------------------------------------

@pytest.mark.parametrize("example", ["myrelu", "myop"])
def test_example_runs(example, build_dir, built):
    env = dict(os.environ, JFLOW_EXTENSIONS_DIR=build_dir)
    res = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "custom_ops", example,
                                                       "run.py"), "--cflags=-O0"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{example}: all checks passed" in res.stdout


# ---- loading: ops, kernels, attrs, inference ---------------------------------------------------

def test_library_handle_lists_ops_and_kernels(testlib, built):
    assert testlib.ops == ("cpp_t_attrs", "cpp_t_repeat", "cpp_t_scale", "cpp_t_mul_a",
                           "cpp_t_mul_b")
    assert {(k.op_name, k.platform) for k in testlib.kernels} >= {
        ("cpp_t_attrs", "cpu"), ("cpp_t_repeat", "cpu"), ("cpp_t_scale", "cpu")}
    assert load_library(built["testlib"]) is testlib  # loading again: the same handle
    assert flow.config.load_library is load_library
    assert testlib.cpp_t_scale is flow.ops.get("cpp_t_scale")
    assert not flow.ops.get("cpp_t_scale").builtin
    assert "cpp_t_scale" in dir(testlib) and "libtestlib.so" in repr(testlib)
    with pytest.raises(AttributeError, match=r"defines no op 'nope'; its ops are"):
        _ = testlib.nope
    sig = flow.ops.get("cpp_t_attrs").signature()
    assert sig == ("cpp_t_attrs(Tensor x, *, float f=0.1, double d=0.1, int32 i=7, "
                   "int64 l=1099511627776, bool b=True, string s='abc') -> (Tensor y)  "
                   "[NoSideEffect]")
    ks = kernels_for("cpp_t_attrs")
    assert [(k.backend, sorted(k.platforms)) for k in ks] == [("ffi", ["cpu"])]


def _attrs_ref(x, f=0.1, d=0.1, i=7, l=2**40, b=True, s="abc"):
    return x * np.float64(np.float32(f)) + d + i + float(l) + b + len(s.encode())


@pytest.mark.parametrize("attrs", [
    {},
    {"f": 2, "d": 1e-300, "i": -5, "l": -(2**62), "b": False, "s": "héllo"},  # int for a float
    {"f": 1.5e38, "i": 2**31 - 1, "s": ""},
])
def test_every_attr_type_reaches_the_kernel_exactly(testlib, attrs):
    x = np.array([0.5, -1.25, 3.0])
    op = testlib.cpp_t_attrs
    out = op(flow.tensor(x), **attrs).numpy()
    np.testing.assert_array_equal(out, _attrs_ref(x, **attrs))
    jitted = jax.jit(lambda a: to_jax(op(from_jax(a), **attrs)))(jnp.asarray(x))
    np.testing.assert_array_equal(jitted, _attrs_ref(x, **attrs))


@pytest.mark.parametrize("attrs, exc, pattern", [
    ({"f": 1e39}, ValueError, r"attr 'f' \(float\): 1e\+39 does not fit in the C\+\+ float"),
    ({"l": 2**70}, ValueError, r"attr 'l' \(int64\): \d+ does not fit in the C\+\+ int64_t"),
    ({"i": 2**31}, ValueError, r"attr 'i' \(int32\): 2147483648 does not fit in int32"),
    ({"f": "abc"}, TypeError, r"attr 'f' \(float\): expected a float, got str"),
    ({"b": 1}, TypeError, r"attr 'b' \(bool\): expected a bool, got int"),
    ({"s": 3}, TypeError, r"attr 's' \(string\): expected a str, got int"),
    ({"alpha": 1.0}, TypeError, r"apply\(\) got an unexpected keyword argument 'alpha'"),
])
def test_attr_that_cannot_be_converted_names_op_and_attr(testlib, attrs, exc, pattern):
    x = flow.tensor([1.0, 2.0], dtype=flow.float64)
    with pytest.raises(exc, match=r"cpp_t_attrs.*" + pattern):
        testlib.cpp_t_attrs(x, **attrs)
    with pytest.raises(exc, match=r"cpp_t_attrs.*" + pattern):  # same under jit
        jax.jit(lambda a: to_jax(testlib.cpp_t_attrs(from_jax(a), **attrs)))(jnp.ones(2, "f8"))


def test_cpp_inference_function(testlib):
    x = np.array([1.0, 2.0, 3.0], np.float32)
    out, tag = testlib.cpp_t_repeat(flow.tensor(x), reps=3, tag="a b\n")  # odd chars survive
    np.testing.assert_array_equal(out.numpy(), np.tile(x, 3))
    np.testing.assert_array_equal(tag.numpy(), [ord(c) for c in "a b\n"])
    shapes = jax.eval_shape(lambda a: [to_jax(t) for t in testlib.cpp_t_repeat(
        from_jax(a), reps=2)], jax.ShapeDtypeStruct((5,), jnp.float32))
    assert [(s.shape, s.dtype) for s in shapes] == [((10,), jnp.float32), ((0,), jnp.int64)]
    with pytest.raises(TypeError, match=r"^op 'cpp_t_repeat': repeat wants float32, got float64"):
        testlib.cpp_t_repeat(flow.tensor([1.0], dtype=flow.float64), reps=1)
    with pytest.raises(ValueError, match=r"^op 'cpp_t_repeat': reps must be >= 1, got 0"):
        testlib.cpp_t_repeat(flow.tensor(x), reps=0)
    with pytest.raises(ValueError, match=r"^op 'cpp_t_repeat': repeat wants an input with a "):
        testlib.cpp_t_repeat(flow.tensor(np.float32(1.0)), reps=1)
    with pytest.raises(TypeError, match=r"cpp_t_repeat.apply\(\) missing 1 required "
                                        r"keyword-only argument: 'reps'"):
        testlib.cpp_t_repeat(flow.tensor(x))


def test_typed_buffers_restrict_dtype_and_rank(testlib):
    with pytest.raises(KernelNotFoundError, match=r"op 'cpp_t_attrs': no kernel for platform "
                                                  r"'cpu' and dtypes \(x: float32"):
        testlib.cpp_t_attrs(flow.tensor([1.0], dtype=flow.float32))
    # Buffer<F32, 1>: a 2-D input is refused by the kernel's rank condition (not by XLA)
    with pytest.raises(KernelNotFoundError, match=r"op 'cpp_t_repeat': no kernel"):
        testlib.cpp_t_repeat(flow.tensor(np.ones((2, 2), np.float32)), reps=1)


def test_raw_xla_handler_and_direct_kernel_call(testlib):
    x = np.array([1.0, -2.0], np.float32)
    np.testing.assert_array_equal(testlib.cpp_t_scale(flow.tensor(x), k=0.5).numpy(), x * 0.5)
    np.testing.assert_array_equal(testlib.cpp_t_scale(flow.tensor(x)).numpy(), x * 2)
    batch = np.stack([x, 3 * x])
    got = jax.vmap(lambda a: to_jax(testlib.cpp_t_scale(from_jax(a), k=3.0)))(jnp.asarray(batch))
    np.testing.assert_array_equal(got, batch * 3)
    with pytest.raises(KernelNotFoundError, match=r"cpp_t_scale.*x: int32"):  # Dtypes("x", ..)
        testlib.cpp_t_scale(flow.tensor([1, 2], dtype=flow.int32))
    np.testing.assert_array_equal(testlib.cpp_t_mul_a(flow.tensor(x), a=3.0).numpy(), x * 3)
    np.testing.assert_array_equal(testlib.cpp_t_mul_b(flow.tensor(x), b=5.0).numpy(), x * 5)
    cpu = next(k for k in testlib.kernels if k.op_name == "cpp_t_scale" and k.platform == "cpu")
    np.testing.assert_array_equal(cpu(jnp.asarray(x), k=4.0), x * 4)
    assert "ScaleHandler" in repr(cpu)


@pytest.mark.skipif(not HAS_NVCC, reason="nvcc not found: the .cu source is not built")
def test_cuda_kernel_is_registered_and_lowered_for_cuda(testlib):
    """The CUDA kernel of the .cu source is a jflow kernel for platform cuda and its FFI target
    is what a CUDA lowering calls (lowered here, not run: there may be no GPU)."""
    cuda = [k for k in kernels_for("cpp_t_scale") if "cuda" in k.platforms]
    assert len(cuda) == 1 and cuda[0].backend == "ffi" and cuda[0].name == "ScaleCuda"
    assert cuda[0].fn.target.endswith(".cuda." + cuda[0].fn.target.split(".")[-1])

    def f(a):
        return to_jax(testlib.cpp_t_scale(from_jax(a), k=3.0))

    spec = jax.ShapeDtypeStruct((4,), jnp.float32)
    for platform, target in (("cuda", cuda[0].fn.target),
                             ("cpu", next(k.fn.target for k in kernels_for("cpp_t_scale")
                                          if "cpu" in k.platforms))):
        text = jax.jit(f).trace(spec).lower(lowering_platforms=(platform,)).as_text()
        assert f"stablehlo.custom_call @{target}(" in text, text
        assert "k = 3.000000e+00 : f32" in text  # the attr as the handler's float


# ---- bad input ---------------------------------------------------------------------------------

def test_missing_library_file():
    with pytest.raises(FileNotFoundError, match=r"load_library: no such file: '.*nope\.so'"):
        load_library("/definitely/not/here/nope.so")
    with pytest.raises(TypeError, match=r"load_library: expected a path, got int"):
        load_library(3)


def test_not_a_shared_library(tmp_path):
    p = tmp_path / "libtext.so"
    p.write_text("not an ELF file")
    with pytest.raises(OSError, match=r"load_library\('.*libtext\.so'\): cannot load it as a "
                                      r"shared library"):
        load_library(p)


def test_shared_library_without_the_entry_point(tmp_path, cxx):
    src = tmp_path / "plain.cpp"
    src.write_text('extern "C" int plain_function() { return 1; }\n')
    so = tmp_path / "libplain.so"
    subprocess.run([cxx, "-shared", "-fPIC", str(src), "-o", str(so)], check=True)
    with pytest.raises(LibraryError, match=r"load_library\('.*libplain\.so'\): not a jflow op "
                                           r"library: it does not export "
                                           r"'jflow_library_describe'"):
        load_library(so)


def test_op_name_colliding_with_a_builtin_registers_nothing(built):
    with pytest.raises(OpDefinitionError, match=r"libbad_collide_builtin\.so'\): cannot define "
                                                 r"op 'relu': it is a jflow built-in op"):
        load_library(built["bad_collide_builtin"])
    assert "cpp_bad_first" not in flow.ops.list_ops()  # all or nothing
    assert all(k.backend != "ffi" for k in kernels_for("relu"))
    np.testing.assert_array_equal(flow.relu(flow.tensor([-1.0, 2.0])).numpy(), [0.0, 2.0])


def test_op_name_colliding_with_another_library(testlib, built):
    with pytest.raises(OpDefinitionError, match=r"cannot define op 'cpp_t_attrs': library "
                                                 r"'.*libtestlib\.so' already defines it"):
        load_library(built["bad_collide_library"])


def test_kernel_attr_type_mismatch_is_refused_at_load(built):
    with pytest.raises(LibraryError, match=r"kernel 'Same' \(cpu\) of op 'cpp_bad_attr': attr "
                                           r"'alpha' is declared float but the function takes "
                                           r"it as double"):
        load_library(built["bad_attr_mismatch"])
    assert "cpp_bad_attr" not in flow.ops.list_ops()


def test_kernel_for_an_unknown_op(built):
    with pytest.raises(LibraryError, match=r"kernel 'Same' \(cpu\) of op 'cpp_bad_nowhere': the "
                                           r"op is unknown"):
        load_library(built["bad_unknown_op"])


def test_compiler_errors_are_shown(tmp_path, cxx):
    # (no jflow/op.h: the failing compile is what is checked; parsing the header took ~1.5 s)
    src = tmp_path / "broken.cpp"
    src.write_text("int broken() { return undeclared_name; }\n")
    with pytest.raises(cpp_extension.BuildError) as info:
        cpp_extension.load("broken", [src], build_directory=tmp_path / "b")
    msg = str(info.value)
    assert "cpp_extension.load('broken'): compiling broken.cpp failed" in msg
    assert "undeclared_name" in msg and "error" in msg  # the compiler's own diagnostic
    assert "$ " in msg and "broken.cpp" in msg  # and the command


def test_build_arguments_are_checked(tmp_path, monkeypatch):
    cu = tmp_path / "k.cu"
    cu.write_text("")
    with monkeypatch.context() as m:
        m.setattr(cpp_extension, "find_cxx", lambda: "c++")
        m.setattr(cpp_extension, "find_nvcc", lambda: None)
        with pytest.raises(cpp_extension.BuildError, match=r"k\.cu is a CUDA source but nvcc "
                                                           r"was not found"):
            cpp_extension.load("k", [cu], build_directory=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"no such source file: '.*missing\.cpp'"):
        cpp_extension.load("k", [tmp_path / "missing.cpp"], build_directory=tmp_path)
    txt = tmp_path / "k.txt"
    txt.write_text("")
    with pytest.raises(ValueError, match=r"'.*k\.txt' is neither C\+\+"):
        cpp_extension.load("k", [txt], build_directory=tmp_path)
    with pytest.raises(ValueError, match=r"name must be an identifier"):
        cpp_extension.load("not a name", [txt])
    with pytest.raises(TypeError, match=r"sources must be a non-empty list"):
        cpp_extension.load("k", str(txt))
    with pytest.raises(TypeError, match=r"extra_cflags must be a list of strings"):
        cpp_extension.load("k", [txt], extra_cflags="-O3")
    monkeypatch.setenv("CXX", "no-such-compiler-xyz")
    with pytest.raises(cpp_extension.BuildError, match=r"no C\+\+ compiler found"):
        cpp_extension.load("k", [tmp_path / "k.cu"], build_directory=tmp_path)


def test_build_cache_is_keyed_by_source_and_flags(tmp_path, cxx):
    src = tmp_path / "cached.cpp"
    src.write_text("int cached() { return 1; }\n")
    a = cpp_extension.build("cached", [src], build_directory=tmp_path)
    mtime = os.path.getmtime(a)
    assert cpp_extension.build("cached", [src], build_directory=tmp_path) == a
    assert os.path.getmtime(a) == mtime  # not rebuilt
    b = cpp_extension.build("cached", [src], extra_cflags=["-DX=1"], build_directory=tmp_path)
    (tmp_path / "helper.h").write_text("// a header next to the sources counts too\n")
    c = cpp_extension.build("cached", [src], build_directory=tmp_path)
    src.write_text("int cached() { return 2; }\n")
    d = cpp_extension.build("cached", [src], build_directory=tmp_path)
    assert len({a, b, c, d}) == 4 and all(os.path.isfile(p) for p in (a, b, c, d))
    assert not [e for e in os.listdir(os.path.dirname(a)) if e.startswith("build_")]
    with pytest.raises(LibraryError, match="not a jflow op library"):
        load_library(d)


# ---- every check of a library's description (no compiler needed) -------------------------------

def _desc(op: dict | None = None, kernel: dict | None = None, extra_ops: tuple = ()) -> dict:
    """A description as jflow_library_describe writes it, with some fields replaced."""
    o = {"name": "cpp_v_op", "inputs": ["x"], "outputs": ["y"],
         "attrs": [{"name": "a", "type": "float", "default": 1.0}], "same_as": None,
         "infer_fn": False, "traits": [], "sbp": None, "vmap_method": "sequential", "doc": ""}
    k = {"op": "cpp_v_op", "platform": "cpu", "name": "K", "dtypes": {}, "priority": 10,
         "params": [{"kind": "in", "dtype": None, "rank": None},
                    {"kind": "out", "dtype": None, "rank": None},
                    {"kind": "attr", "type": "float"}]}
    o.update(op or {})
    k.update(kernel or {})
    return {"abi": 1, "ops": [o, *extra_ops], "kernels": [k]}


@pytest.mark.parametrize("desc, exc, pattern", [
    (_desc({"same_as": "z"}), LibraryError, r"op 'cpp_v_op': SameShapeAs\('z'\) names no input"),
    (_desc({"same_as": "x", "infer_fn": True}), LibraryError, r"declares both SameShapeAs"),
    (_desc({"inputs": []}, {"params": None}), LibraryError, r"has no inputs.*declare \.Infer"),
    (_desc({"sbp": "diagonal"}), LibraryError, r"unknown SBP family 'diagonal'"),
    (_desc({"vmap_method": "parallel"}), LibraryError, r"unknown vmap method 'parallel'"),
    (_desc({"attrs": [{"name": "a", "type": "half", "default": None}]}), LibraryError,
     r"attr 'a' has unsupported type 'half'"),
    (_desc({"traits": ["Fast"]}), OpDefinitionError, r"cannot define op 'cpp_v_op': unknown "
                                                     r"trait"),
    (_desc({"inputs": ["in", "in_"]}), OpDefinitionError, r"'in' is a Python keyword, so its "
                                                           r"parameter is named 'in_'"),
    (_desc(extra_ops=(_desc()["ops"][0],)), LibraryError, r"op 'cpp_v_op' is declared twice"),
    (_desc(kernel={"platform": "tpu"}), LibraryError, r"kernel 'K' \(tpu\) of op 'cpp_v_op': "
                                                      r"unknown platform 'tpu'"),
    (_desc(kernel={"params": [{"kind": "in", "dtype": None, "rank": None}] * 2
                   + [{"kind": "out", "dtype": None, "rank": None}]}), LibraryError,
     r"takes 2 input buffer\(s\) and 1 Result\(s\); the op has inputs \['x'\]"),
    (_desc(kernel={"params": [{"kind": "in", "dtype": None, "rank": None},
                              {"kind": "out", "dtype": None, "rank": None}]}), LibraryError,
     r"takes 0 attr parameter\(s\) \(none\); the op declares 1: float a"),
    (_desc(kernel={"dtypes": {"z": ["float32"]}}), LibraryError,
     r"Dtypes\('z', \.\.\.\) names no input or output"),
    (_desc(kernel={"dtypes": {"x": ["float13"]}}), LibraryError, r"unknown dtype 'float13'"),
    (_desc(kernel={"op": "cpp_v_nowhere", "params": None}), LibraryError, r"the op is unknown"),
    (_desc(kernel={"op": "relu"}), LibraryError,
     r"kernel 'K' \(cpu\) of op 'relu': a kernel written as a plain function takes its attr "
     r"names from an op declared in the same library"),
    ({"abi": 1, "ops": [{"name": "cpp_v_op"}], "kernels": []}, LibraryError,
     r"malformed op description \(KeyError"),
])
def test_bad_descriptions_are_refused_before_registering(desc, exc, pattern):
    from jflow.kernels import ffi
    with pytest.raises(exc, match=r"^load_library\('lib\.so'\): .*" + pattern):
        ffi._register(None, desc, "lib.so", "load_library('lib.so')")
    assert "cpp_v_op" not in flow.ops.list_ops()


def test_abi_version_mismatch():
    from jflow.kernels import ffi

    class Describe:  # stands for the C entry point of a library built with another header
        restype = argtypes = None

        def __call__(self) -> bytes:
            return b'{"abi": 99, "ops": [], "kernels": []}'

    lib = type("Lib", (), {"jflow_library_describe": Describe()})()
    with pytest.raises(LibraryError, match=r"built with jflow/op.h ABI version 99, this jflow "
                                           r"reads version 1; rebuild"):
        ffi._describe(lib, "load_library('x')")
