"""OneFlow parity of user ops (issue 16): the seeds' names and C++ declaration surface.

The seeds' own examples ("Extending Op with C++ / Python") run here unchanged apart from the
import: ops with inputs named ``in``, list / shape / dtype attrs, an attr check function.
The C++ library is built once per session (module-scoped fixture) and holds every op.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _shared import build_once

import jflow as flow
from jflow.autograd import register_backward
from jflow.config import load_library
from jflow.kernels import register_kernel
from jflow.ops import Attr, OpDefinitionError, define_op
from jflow.ops.python_op import define_python_op
from jflow.user_op_builder import user_op_builder
from jflow.utils import cpp_extension, from_jax, to_jax

PARITY_LIB = r"""
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>
#include "jflow/op.h"
namespace ffi = xla::ffi;

// the seed's myrelu, with its names: input "in", output "out"
JFLOW_REGISTER_OP("par_myrelu").Input("in").Output("out").SameShapeAs("in")
    .Sbp("elementwise").VmapMethod("broadcast_all");
static ffi::Error MyRelu(ffi::Buffer<ffi::F32> in, ffi::ResultBuffer<ffi::F32> out) {
  for (size_t i = 0; i < in.element_count(); ++i)
    out->typed_data()[i] = in.typed_data()[i] > 0 ? in.typed_data()[i] : 0.f;
  return ffi::Error::Success();
}
JFLOW_REGISTER_KERNEL("par_myrelu", "cpu", MyRelu);

// list, shape and dtype attrs: out = pad(in, padding_before, padding_after) * scale[0] ...
// (1-D, zero padding), the seed's .Attr<std::vector<int32_t>>("padding_before")
static void PadInfer(jflow::InferContext& ctx) {
  auto before = ctx.attr<std::vector<int32_t>>("padding_before");
  auto after = ctx.attr<std::vector<int64_t>>("padding_after");
  if (before.size() != 1 || after.size() != 1)
    throw jflow::ValueError("padding_before / padding_after need one value each");
  ctx.output(0).dtype = ctx.input(0).dtype;
  ctx.output(0).shape = {ctx.input(0).shape[0] + before[0] + after[0]};
  jflow::Shape s = ctx.attr<jflow::Shape>("info_shape");
  ctx.output(1).dtype = ctx.attr<std::string>("info_dtype");
  ctx.output(1).shape = s.dims;
}
static void PadCheck(const jflow::AttrContext& ctx) {
  for (int32_t p : ctx.attr<std::vector<int32_t>>("padding_before"))
    if (p < 0) ctx.Fail("padding_before", "must be >= 0, got " + std::to_string(p));
  if (ctx.attr<std::vector<float>>("scale").empty())
    ctx.Fail("scale", "needs at least one value");
}
JFLOW_REGISTER_OP("par_pad").Input("in").Output("out").Output("info")
    .Attr<std::vector<int32_t>>("padding_before", std::vector<int32_t>{1})
    .Attr<std::vector<int64_t>>("padding_after", std::vector<int64_t>{2})
    .Attr<std::vector<float>>("scale", std::vector<float>{1.0f, 0.5f})
    .Attr<jflow::Shape>("info_shape", jflow::Shape{2, 3})
    .Attr<ffi::DataType>("info_dtype", ffi::DataType::S32)
    .Infer(PadInfer).SetCheckAttrFn(PadCheck);
static ffi::Error Pad(ffi::Buffer<ffi::F32, 1> in, ffi::ResultBuffer<ffi::F32, 1> out,
                      ffi::Result<ffi::AnyBuffer> info, ffi::Span<const int32_t> before,
                      ffi::Span<const int64_t> after, ffi::Span<const float> scale,
                      ffi::Span<const int64_t> info_shape, ffi::DataType info_dtype) {
  size_t n = in.element_count(), k = 0;
  for (int32_t i = 0; i < before[0]; ++i) out->typed_data()[k++] = 0.f;
  for (size_t i = 0; i < n; ++i) out->typed_data()[k++] = in.typed_data()[i] * scale[0];
  for (int64_t i = 0; i < after[0]; ++i) out->typed_data()[k++] = 0.f;
  if (info_dtype != ffi::DataType::S32 && info_dtype != ffi::DataType::S64)
    return ffi::Error::InvalidArgument("info_dtype must be int32 or int64");
  int64_t total = 1;
  for (int64_t d : info_shape) total *= d;
  for (int64_t i = 0; i < total; ++i) {  // info = [ndims, scale.size(), dtype code, ...]
    int64_t v = i == 0 ? int64_t(info_shape.size()) : i == 1 ? int64_t(scale.size())
              : int64_t(static_cast<int>(info_dtype));
    if (info_dtype == ffi::DataType::S32) info->typed_data<int32_t>()[i] = int32_t(v);
    else info->typed_data<int64_t>()[i] = v;
  }
  return ffi::Error::Success();
}
JFLOW_REGISTER_KERNEL("par_pad", "cpu", Pad);

// a raw XLA handler for an op declared in Python with an int32_list attr
static ffi::Error SumScaled(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y,
                            ffi::Span<const int32_t> factors) {
  float f = 0;
  for (int32_t v : factors) f += v;
  for (size_t i = 0; i < x.element_count(); ++i) y->typed_data()[i] = f * x.typed_data()[i];
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(SumScaledHandler, SumScaled, ffi::Ffi::Bind()
    .Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>()
    .Attr<ffi::Span<const int32_t>>("factors"));
JFLOW_REGISTER_FFI_HANDLER("par_py_listattr", "cpu", SumScaledHandler);

// the seed's SetCheckAttrFn example: data_format must be NCHW or NHWC
static void FormatCheck(const jflow::AttrContext& ctx) {
  std::string f = ctx.attr<std::string>("data_format");
  if (f != "NCHW" && f != "NHWC") ctx.Fail("data_format", "must be NCHW or NHWC, got " + f);
}
JFLOW_REGISTER_OP("par_fmt").Input("in").Output("out")
    .Attr<std::string>("data_format", std::string("NCHW")).SetCheckAttrFn(FormatCheck);
static ffi::Error Fmt(ffi::AnyBuffer in, ffi::Result<ffi::AnyBuffer> out, std::string_view f) {
  std::memcpy(out->untyped_data(), in.untyped_data(), in.size_bytes());
  return ffi::Error::Success();
}
JFLOW_REGISTER_KERNEL("par_fmt", "cpu", Fmt);

// the seed's add_n: .InputWithMinimum("in", 2)
JFLOW_REGISTER_OP("par_add_n").InputWithMinimum("in", 2).Output("out")
    .Infer([](jflow::InferContext& ctx) {
      for (size_t i = 1; i < ctx.num_inputs(); ++i)
        if (ctx.input(i).shape != ctx.input(0).shape || ctx.input(i).dtype != ctx.input(0).dtype)
          throw jflow::ValueError("every input must have the shape and dtype of the first");
      ctx.output(0) = ctx.input(0);
    })
    .SetGetSbpFn([](jflow::SbpContext& ctx) {  // the seed's add_n SBP function
      int64_t num_axes = ctx.LogicalTensorDesc4InputArgNameAndIndex("in", 0).rank();
      for (int64_t i = 0; i < num_axes; ++i) {
        ctx.NewBuilder().Split(ctx.inputs(), i).Split(jflow::OpArg("out", 0), i).Build();
      }
      ctx.NewBuilder().PartialSum(ctx.inputs()).PartialSum(jflow::OpArg("out", 0)).Build();
    });
static ffi::Error AddN(ffi::RemainingArgs ins, ffi::ResultBuffer<ffi::F32> out,
                       jflow::InputCounts counts) {
  if (counts.size() != 1 || counts[0] != int64_t(ins.size()))
    return ffi::Error::InvalidArgument("bad counts");
  float* o = out->typed_data();
  for (size_t j = 0; j < out->element_count(); ++j) o[j] = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    auto b = ins.get<ffi::Buffer<ffi::F32>>(i);
    if (b.has_error()) return b.error();
    for (size_t j = 0; j < out->element_count(); ++j) o[j] += b->typed_data()[j];
  }
  return ffi::Error::Success();
}
JFLOW_REGISTER_KERNEL("par_add_n", "cpu", AddN);

// exact count, optional input, and a variadic output sized by the inference function:
// outs[k] = pair[0] * pair[1] (+ bias) + k, for k < copies
JFLOW_REGISTER_OP("par_fma").Input("pair", 2).OptionalInput("bias")
    .OutputWithMinimum("outs", 1).Attr<int64_t>("copies", 2)
    .Infer([](jflow::InferContext& ctx) {
      ctx.set_num_outputs("outs", size_t(ctx.attr<int64_t>("copies")));
      for (size_t k = 0; k < ctx.num_outputs(); ++k) ctx.output(k) = ctx.input(0);
    });
static ffi::Error Fma(ffi::Buffer<ffi::F32> a, ffi::Buffer<ffi::F32> b, ffi::RemainingArgs rest,
                      ffi::RemainingRets outs, jflow::InputCounts ic, jflow::OutputCounts oc,
                      int64_t copies) {
  const float* bias = nullptr;
  if (ic.present(1)) bias = rest.get<ffi::Buffer<ffi::F32>>(0)->typed_data();
  if (oc[0] != copies || int64_t(outs.size()) != copies)
    return ffi::Error::InvalidArgument("bad output count");
  for (int64_t k = 0; k < copies; ++k) {
    auto r = outs.get<ffi::Buffer<ffi::F32>>(k);
    if (r.has_error()) return r.error();
    for (size_t j = 0; j < a.element_count(); ++j)
      (*r)->typed_data()[j] = a.typed_data()[j] * b.typed_data()[j] + (bias ? bias[j] : 0.f) + k;
  }
  return ffi::Error::Success();
}
JFLOW_REGISTER_KERNEL("par_fma", "cpu", Fma);

// reverse cumulative sum along the last axis, staged in a tmp buffer (SetInferTmpSizeFn):
// out[..., i] = sum_{j >= i} in[..., j]
JFLOW_REGISTER_OP("par_revcumsum").Input("in").Output("out").SameShapeAs("in");
static size_t RevCumsumTmp(const jflow::InferContext& ctx) {
  const auto& s = ctx.input(0).shape;
  return sizeof(float) * size_t(s.empty() ? 1 : s.back());  // one row
}
static ffi::Error RevCumsum(ffi::Buffer<ffi::F32> in, ffi::ResultBuffer<ffi::F32> out,
                           ffi::Result<ffi::AnyBuffer> tmp) {
  auto dims = in.dimensions();
  size_t n = dims.size() == 0 ? 1 : size_t(dims.back());
  size_t rows = n ? in.element_count() / n : 0;
  if (tmp->size_bytes() != n * sizeof(float)) return ffi::Error::Internal("bad tmp size");
  float* t = static_cast<float*>(tmp->untyped_data());  // a uint8 buffer: use its bytes
  for (size_t r = 0; r < rows; ++r) {
    const float* x = in.typed_data() + r * n;
    float acc = 0;
    for (size_t i = n; i-- > 0;) t[i] = acc += x[i];   // staged in tmp
    std::memcpy(out->typed_data() + r * n, t, n * sizeof(float));
  }
  return ffi::Error::Success();
}
JFLOW_REGISTER_KERNEL("par_revcumsum", "cpu", RevCumsum).SetInferTmpSizeFn(RevCumsumTmp);

// out = x * w (x: (m, n), w: (n,)), with several explicit SBP signatures
JFLOW_REGISTER_OP("par_colscale").Input("x").Input("w").Output("out")
    .SetGetSbpFn([](jflow::SbpContext& ctx) {
      if (ctx.input("x").rank() != 2) return;
      ctx.NewBuilder().Split("x", 0).Broadcast("w").Split("out", 0).Build();
      ctx.NewBuilder().Split("x", 1).Split("w", 0).Split("out", 1).Build();
      ctx.NewBuilder().PartialSum("x").Broadcast("w").PartialSum("out").Build();
      ctx.NewBuilder().Broadcast("x").PartialSum("w").PartialSum("out").Build();
    });
static ffi::Error ColScale(ffi::Buffer<ffi::F64, 2> x, ffi::Buffer<ffi::F64, 1> w,
                           ffi::ResultBuffer<ffi::F64, 2> out) {
  size_t m = x.dimensions()[0], n = x.dimensions()[1];
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j)
      out->typed_data()[i * n + j] = x.typed_data()[i * n + j] * w.typed_data()[j];
  return ffi::Error::Success();
}
JFLOW_REGISTER_KERNEL("par_colscale", "cpu", ColScale);

// one kernel template instantiated per dtype (OneFlow's REGISTER_..._KERNEL(float/double))
JFLOW_REGISTER_OP("par_twice").Input("in").Output("out").SameShapeAs("in");
template <ffi::DataType T>
static ffi::Error Twice(ffi::Buffer<T> in, ffi::ResultBuffer<T> out) {
  for (size_t i = 0; i < in.element_count(); ++i)
    out->typed_data()[i] = in.typed_data()[i] + in.typed_data()[i];
  return ffi::Error::Success();
}
#define PAR_REGISTER_TWICE(dtype) JFLOW_REGISTER_KERNEL("par_twice", "cpu", Twice<dtype>);
PAR_REGISTER_TWICE(ffi::F32)
PAR_REGISTER_TWICE(ffi::F64)

// the seed's myop: out = 3 * in * in, shapes from an inference function on "in" / "out"
JFLOW_REGISTER_OP("par_myop").Input("in").Output("out").Sbp("elementwise")
    .Infer([](jflow::InferContext& ctx) { ctx.output(0) = ctx.input(0); });
static ffi::Error MyOp(ffi::Buffer<ffi::F64> in, ffi::ResultBuffer<ffi::F64> out) {
  for (size_t i = 0; i < in.element_count(); ++i)
    out->typed_data()[i] = 3 * in.typed_data()[i] * in.typed_data()[i];
  return ffi::Error::Success();
}
JFLOW_REGISTER_KERNEL("par_myop", "cpu", MyOp);

// a broken SBP function: a signature that leaves an output unset
JFLOW_REGISTER_OP("par_badsbp").Input("x").Output("y")
    .SetGetSbpFn([](jflow::SbpContext& ctx) { ctx.NewBuilder().Split("x", 0).Build(); });
JFLOW_REGISTER_KERNEL("par_badsbp", "cpu", MyRelu);
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    """The parity library, built once (the Python op its raw handler serves is defined
    first: a handler's op must exist when the library loads)."""
    if cpp_extension.find_cxx() is None:
        pytest.skip("no C++ compiler: C++ op libraries cannot be built here")
    define_op("par_py_listattr", inputs=["x"], outputs=["y"],
              attrs=[Attr("factors", "int32_list", (1, 2))],
              infer=lambda x, factors: jax.ShapeDtypeStruct(x.shape, x.dtype))
    return load_library(build_once(tmp_path_factory, "parity", PARITY_LIB))  # once per run


def _x(*vals):
    return flow.tensor(np.array(vals, np.float32))


# ---- part 1: the seeds' names, clear errors -----------------------------------------------------

def test_python_op_with_input_named_in():
    """define_op(inputs=["in"]): the parameter is in_ (or positional), the op keeps 'in'."""
    op = define_op("par_py_in", inputs=["in"], outputs=["out"],
                   infer=lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype))
    register_kernel("par_py_in", lambda x: jnp.maximum(x, 0))

    @register_backward("par_py_in", save=["in"])
    def _bw(ctx, dy):
        (x,) = ctx.saved_tensors
        return dy * (x > 0).to(flow.float32)

    assert op.signature().startswith("par_py_in(Tensor in) -> (Tensor out)")
    x = _x(-1.0, 2.0)
    for y in (op(x), op.apply(x), op.apply(in_=x),
              jax.jit(lambda a: op.apply(a))(x),
              user_op_builder("op_par").Op("par_py_in").Input("in", [x]).Output("out")
              .Build().InferAndTryRun().SoleOutputBlob()):
        np.testing.assert_array_equal(y.numpy(), [0.0, 2.0])
    x.requires_grad_(True)
    op(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0])
    g = jax.grad(lambda a: to_jax(op.apply(from_jax(a)).sum()))
    np.testing.assert_array_equal(g(jnp.array([-1.0, 2.0], jnp.float32)), [0.0, 1.0])
    with pytest.raises(TypeError, match=r"op 'par_py_in': input 0 \('in'\) must be a jflow "
                                        r"Tensor, got ArrayImpl"):
        op(jnp.ones(2))


def test_keyword_names_rules():
    with pytest.raises(OpDefinitionError, match=r"'in' is a Python keyword, so its parameter "
                                                r"is named 'in_'"):
        define_op("par_clash", inputs=["in", "in_"], infer=lambda a, b: a)
    with pytest.raises(OpDefinitionError, match=r"attr names must not be Python keywords"):
        define_op("par_kwattr", inputs=["x"], attrs=[Attr("for", "int32", 1)],
                  infer=lambda a, **k: a)


def test_redefining_a_builtin_says_so():
    with pytest.raises(OpDefinitionError, match=r"cannot define op 'relu': an op with this "
                                                r"name is already registered \(it is a jflow "
                                                r"built-in op"):
        define_op("relu", inputs=["x"], infer=lambda x: x)


def test_apply_on_a_raw_array_gives_the_checked_error():
    relu = flow.ops.get("relu")
    with pytest.raises(TypeError, match=r"op 'relu': input 0 \('x'\) must be a jflow Tensor, "
                                        r"got ArrayImpl"):
        relu.apply(jnp.ones(3))
    with pytest.raises(TypeError, match=r"must be a jflow Tensor, got ndarray"):
        relu.apply(np.ones(3))


def test_numpy_kernel_wrong_dtype_keeps_stderr_clean(capfd):
    """The seed's user_relu (Python kernel on 'in'/'out'), with a forward that promotes."""
    op = define_python_op("par_user_relu_bad",
                          lambda args: ((args[0] > 0) * args[0]).astype(np.float64),
                          lambda args: args[1], inputs=["in"], outputs=["out"], save=["in"])
    capfd.readouterr()
    with pytest.raises(ValueError, match=r"op 'par_user_relu_bad': .*returned output 0 with "
                                         r"shape \(2,\) dtype float64"):
        op(flow.tensor(np.array([1.0, -1.0], np.float32))).numpy()
    out, err = capfd.readouterr()
    assert "pure_callback failed" not in err and "Traceback" not in err, err


def test_seed_python_user_relu_with_in_out():
    """The seed's Python example: Input("in")/Output("out"), NumPy forward and backward."""
    def forward(args):
        (x,) = args
        return (x > 0) * x

    def backward(args):
        (y, dy) = args
        return (y > 0) * dy

    define_python_op("par_user_relu_forward", forward, backward, inputs=["in"],
                     outputs=["out"], save=["out"], grad_op_name="par_user_relu_backward")
    x = _x(-1.0, 3.0)
    x.requires_grad_(True)
    y = (user_op_builder("op_user_relu").Op("par_user_relu_forward").Input("in", [x])
         .Output("out").Build().InferAndTryRun().SoleOutputBlob())
    np.testing.assert_array_equal(y.detach().numpy(), [0.0, 3.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0])


def test_cpp_myrelu_with_in_and_out(lib):
    op = lib.par_myrelu
    assert [i.name for i in op.inputs] == ["in"] and [o.name for o in op.outputs] == ["out"]
    x = _x(-1.0, 2.0, -3.0, 4.0)
    y = (user_op_builder("op_myrelu").Op("par_myrelu").Input("in", [x]).Output("out")
         .Build().InferAndTryRun().SoleOutputBlob())
    np.testing.assert_array_equal(y.numpy(), [0, 2, 0, 4])
    np.testing.assert_array_equal(jax.jit(lambda a: op.apply(a))(x).numpy(), [0, 2, 0, 4])
    np.testing.assert_array_equal(op.apply(in_=x).numpy(), [0, 2, 0, 4])


@pytest.mark.skipif(len(jax.devices()) < 4, reason="needs 4 (virtual) devices")
def test_cpp_myrelu_on_global_tensors(lib):
    plc = flow.placement("cpu", [0, 1, 2, 3])
    x4 = np.linspace(-3, 3, 16, dtype=np.float32).reshape(4, 4)
    x = flow.tensor(x4).to_global(placement=plc, sbp=flow.sbp.split(0))
    y = lib.par_myrelu(x)
    assert y.sbp == (flow.sbp.split(0),)
    np.testing.assert_array_equal(y.numpy(), np.maximum(x4, 0))


def _myop_backward():
    if flow.ops.get("par_myop").grad_rule is None:
        @register_backward("par_myop", save=["in"])
        def _bw(ctx, dy):  # the seed's gradient, 6 * x * dy, from existing ops
            (x,) = ctx.saved_tensors
            return flow.mul(x, dy) * 6.0


def test_cpp_myop_with_in_out_and_gradient_from_existing_ops(lib):
    _myop_backward()
    op = lib.par_myop
    x = flow.tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    y = op(x)
    np.testing.assert_allclose(y.detach().numpy(), [3, 12, 27])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6, -12, 18])
    g = jax.jit(jax.grad(lambda a: to_jax(op.apply(from_jax(a)).sum())))
    np.testing.assert_allclose(g(jnp.array([1.0, 2.0])), [6, 12])
    if len(jax.devices()) >= 4:
        plc = flow.placement("cpu", [0, 1, 2, 3])
        gx = flow.tensor(np.arange(8.0)).to_global(placement=plc, sbp=flow.sbp.split(0))
        gx.requires_grad_(True)
        gy = op(gx)
        assert gy.sbp == (flow.sbp.split(0),)
        gy.sum().backward()
        np.testing.assert_allclose(gx.grad.numpy(), 6 * np.arange(8.0))

# ---- part 2: list, shape and dtype attrs --------------------------------------------------------

def test_cpp_list_shape_dtype_attrs_reach_kernel_and_inference(lib):
    op = lib.par_pad
    assert [a.type for a in op.attrs] == ["int32_list", "int64_list", "float_list", "shape",
                                          "dtype"]
    x = _x(1.0, 2.0)
    out, info = op(x)
    np.testing.assert_array_equal(out.numpy(), [0, 1, 2, 0, 0])
    assert info.shape == (2, 3) and info.dtype == flow.int32
    np.testing.assert_array_equal(info.numpy().ravel(), [2, 2, 4, 4, 4, 4])
    out, info = op(x, padding_before=[2], padding_after=[0], scale=[3.0],
                   info_shape=(4,), info_dtype=flow.int64)
    np.testing.assert_array_equal(out.numpy(), [0, 0, 3, 6])
    assert info.dtype == flow.int64
    np.testing.assert_array_equal(info.numpy(), [1, 1, 5, 5])
    f = jax.jit(lambda a: op.apply(a, padding_before=[3], scale=[2.0])[0])
    np.testing.assert_array_equal(f(x).numpy(), [0, 0, 0, 2, 4, 0, 0])
    y = (user_op_builder("op_pad").Op("par_pad").Input("in", [x]).Output("out").Output("info")
         .Attr("padding_before", [0]).Attr("padding_after", [1]).Build().InferAndTryRun()
         .RemoteBlobList())
    np.testing.assert_array_equal(y[0].numpy(), [1, 2, 0])


def test_python_declared_list_attr_with_raw_handler(lib):
    op = flow.ops.get("par_py_listattr")
    x = _x(1.0, 2.0)
    np.testing.assert_array_equal(op(x).numpy(), [3, 6])
    np.testing.assert_array_equal(op(x, factors=[4, 5, 1]).numpy(), [10, 20])
    np.testing.assert_array_equal(jax.jit(lambda a: op.apply(a, factors=[2]))(x).numpy(),
                                  [2, 4])


def test_list_attr_value_out_of_range(lib):
    with pytest.raises(ValueError, match=r"op 'par_pad': attr 'padding_before' "
                                         r"\(int32_list\): .*does not fit"):
        lib.par_pad(_x(1.0), padding_before=[2**40])


# ---- part 3: attr check functions ---------------------------------------------------------------

def test_cpp_check_attr_fn(lib):
    x = _x(1.0, 2.0)
    np.testing.assert_array_equal(lib.par_fmt(x, data_format="NHWC").numpy(), [1, 2])
    with pytest.raises(ValueError, match=r"^op 'par_fmt': attr 'data_format': must be NCHW "
                                         r"or NHWC, got NWC$"):
        lib.par_fmt(x, data_format="NWC")
    with pytest.raises(ValueError, match=r"^op 'par_pad': attr 'padding_before': must be >= 0, "
                                         r"got -1"):
        jax.jit(lambda a: lib.par_pad.apply(a, padding_before=[-1])[0])(x)
    with pytest.raises(ValueError, match=r"op 'par_pad': attr 'scale': needs at least one"):
        user_op_builder("b").Op("par_pad").Input("in", [x]).Output("out").Output("info") \
            .Attr("scale", []).Build().InferAndTryRun()


# ---- part 4: optional and variadic inputs / outputs ---------------------------------------------

def _add_n_backward():
    op = flow.ops.get("par_add_n")
    if op.grad_rule is None:
        @register_backward("par_add_n")
        def _bw(ctx, dy):
            return [dy] * len(ctx.input_shapes)


def test_cpp_add_n_variadic_input(lib):
    _add_n_backward()
    op = lib.par_add_n
    assert op.signature().startswith("par_add_n(Tensor[>=2] in)")
    xs = [_x(1.0, 2.0), _x(10.0, 20.0), _x(100.0, 200.0)]
    np.testing.assert_array_equal(op(xs).numpy(), [111, 222])
    np.testing.assert_array_equal(op(xs[:2]).numpy(), [11, 22])
    np.testing.assert_array_equal(jax.jit(lambda a, b: op.apply([a, b, a]))(*xs[:2]).numpy(),
                                  [12, 24])
    y = (user_op_builder("op_add_n").Op("par_add_n").Input("in", xs).Output("out").Build()
         .InferAndTryRun().SoleOutputBlob())
    np.testing.assert_array_equal(y.numpy(), [111, 222])
    vm = jax.vmap(lambda a, b: to_jax(op.apply([from_jax(a), from_jax(b)])))
    np.testing.assert_array_equal(vm(jnp.ones((3, 2), jnp.float32), jnp.ones((3, 2), jnp.float32)),
                                  2 * np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"op 'par_add_n': input 'in' needs at least 2"):
        op([xs[0]])
    for x in xs:
        x.requires_grad_(True)
    (op(xs) * _x(1.0, 3.0)).sum().backward()
    for x in xs:
        np.testing.assert_array_equal(x.grad.numpy(), [1, 3])
    g = jax.grad(lambda a, b: to_jax(op.apply([from_jax(a), from_jax(b)]).sum()), argnums=1)
    np.testing.assert_array_equal(g(jnp.ones(2, jnp.float32), jnp.ones(2, jnp.float32)), [1, 1])


@pytest.mark.skipif(len(jax.devices()) < 4, reason="needs 4 (virtual) devices")
def test_cpp_add_n_on_global_tensors(lib):
    plc = flow.placement("cpu", [0, 1, 2, 3])
    x4 = np.arange(16, dtype=np.float32).reshape(4, 4)
    a = flow.tensor(x4).to_global(placement=plc, sbp=flow.sbp.split(0))
    b = flow.tensor(2 * x4).to_global(placement=plc, sbp=flow.sbp.split(0))
    y = lib.par_add_n([a, b])
    assert y.sbp == (flow.sbp.split(0),)
    np.testing.assert_array_equal(y.numpy(), 3 * x4)


def test_cpp_exact_count_optional_input_and_variadic_output(lib):
    op = lib.par_fma
    assert op.signature().startswith("par_fma(Tensor[>=2] pair, Tensor? bias, *, int64 copies=2)"
                                     " -> (Tensor[] outs)")
    a, b, c = _x(1.0, 2.0), _x(3.0, 4.0), _x(0.5, 0.5)
    outs = op([a, b])
    assert len(outs) == 2
    np.testing.assert_array_equal(outs[1].numpy(), [4, 9])
    outs = op([a, b], c, copies=3)
    assert len(outs) == 3
    np.testing.assert_array_equal(outs[2].numpy(), [5.5, 10.5])
    outs = jax.jit(lambda x, y, z: op.apply([x, y], z, copies=1))(a, b, c)
    np.testing.assert_array_equal(outs[0].numpy(), [3.5, 8.5])
    with pytest.raises(ValueError, match=r"op 'par_fma': input 'pair' takes exactly 2 tensors, "
                                         r"got 3"):
        op([a, b, c])
    ys = (user_op_builder("op_fma").Op("par_fma").Input("pair", [a, b]).Output("outs", 3)
          .Attr("copies", 3).Build().InferAndTryRun().RemoteBlobList())
    np.testing.assert_array_equal(ys[0].numpy(), [3, 8])


# ---- part 5: temp buffers -----------------------------------------------------------------------

def test_cpp_kernel_with_tmp_buffer(lib):
    op = lib.par_revcumsum
    if op.grad_rule is None:
        @register_backward("par_revcumsum")
        def _bw(ctx, dy):  # d/dx of a reverse cumsum: a forward cumsum of dy
            return flow.cumsum(dy, dim=-1)

    x2 = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    want = np.flip(np.cumsum(np.flip(x2, -1), -1), -1)
    x = flow.tensor(x2)
    out = op(x)
    assert out.shape == (2, 3)
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(jax.jit(lambda a: op.apply(a))(x).numpy(), want)
    np.testing.assert_array_equal(op(flow.tensor(np.ones(5, np.float32))).numpy(),
                                  [5, 4, 3, 2, 1])
    x.requires_grad_(True)
    (op(x) * flow.tensor(np.array([1.0, 2.0, 3.0], np.float32))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 3, 6], [1, 3, 6]])
    batched = jax.vmap(lambda a: to_jax(op.apply(from_jax(a))))(jnp.asarray(x2))
    np.testing.assert_array_equal(batched, want)
    (kernel,) = [k for k in lib.kernels if k.op_name == "par_revcumsum"]
    assert kernel.tmp_size is not None


# ---- part 6: explicit SBP signatures ------------------------------------------------------------

def test_cpp_sbp_functions_give_signatures(lib):
    from jflow.sharding.sbp import B, P, S, Signature, signatures_of
    sigs = signatures_of(lib.par_add_n, [(4, 2)] * 3, 1, {})
    assert sigs[:3] == [Signature((S(0),) * 3, (S(0),)), Signature((S(1),) * 3, (S(1),)),
                        Signature((P,) * 3, (P,))]
    sigs = signatures_of(lib.par_colscale, [(4, 2), (2,)], 1, {})
    assert sigs == [Signature((S(0), B), (S(0),)), Signature((S(1), S(0)), (S(1),)),
                    Signature((P, B), (P,)), Signature((B, P), (P,)), Signature((B, B), (B,))]
    with pytest.raises(ValueError, match=r"op 'par_badsbp': SBP function: SBP signature "
                                         r"leaves output 'y' 0 unset"):
        signatures_of(lib.par_badsbp, [(4,)], 1, {})


@pytest.mark.skipif(len(jax.devices()) < 4, reason="needs 4 (virtual) devices")
def test_cpp_sbp_signatures_pass_the_op_checker(lib):
    from jflow.testing import Sample, register_samples
    from jflow.testing.sbp_check import sbp_coverage
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(4, 4)), rng.normal(size=(4,))
    register_samples("par_colscale", [Sample([x, w])], lambda x, w: x * w)
    cov = sbp_coverage("par_colscale")
    assert len(cov.exercised) == 5 and not cov.missing, cov
    _add_n_backward()
    a = rng.normal(size=(4, 4)).astype(np.float32)
    register_samples("par_add_n", [Sample([[a, 2 * a, 3 * a]])], lambda xs: sum(xs))
    cov = sbp_coverage("par_add_n")
    assert len(cov.exercised) == 4 and not cov.missing, cov


# ---- part 7: one kernel template, several dtypes ------------------------------------------------

def test_cpp_kernel_template_per_dtype(lib):
    from jflow.kernels import KernelNotFoundError, kernels_for, select_kernel
    ks = kernels_for("par_twice")
    assert [k.name for k in ks] == ["Twice<ffi::F32>", "Twice<ffi::F64>"]
    assert [k.dtypes for k in ks] == [
        {"in": frozenset({np.dtype(t)}), "out": frozenset({np.dtype(t)})}
        for t in ("float32", "float64")]
    assert "in in {float64}" in ks[1].describe()
    op = lib.par_twice
    for dt, k in ((np.float32, ks[0]), (np.float64, ks[1])):
        aval = jax.core.ShapedArray((3,), dt)
        assert select_kernel(op, "cpu", [aval], [aval], None) is k
        x = flow.tensor(np.array([1, 2, 3], dt))
        y = op(x)
        assert y.dtype == x.dtype
        np.testing.assert_array_equal(y.numpy(), [2, 4, 6])
        np.testing.assert_array_equal(jax.jit(lambda a: op.apply(a))(x).numpy(), [2, 4, 6])
    with pytest.raises(KernelNotFoundError, match=r"(?s)op 'par_twice': no kernel for platform "
                                                  r"'cpu' and dtypes \(in: int32.*Twice<ffi::F32>"
                                                  r".*Twice<ffi::F64>"):
        op(flow.tensor(np.array([1, 2], np.int32)))
