// myop: y = 3 * x^2, the C++ op of OneFlow's custom-op guide. Its gradient, 6 * x * dy, is
// written in Python from existing jflow ops (see run.py): no C++ grad op is needed.
//
// Shows shape inference by a C++ function (checks the dtype, output = input's shape) and
// kernels whose dtype is fixed by typed buffers (Buffer<F32>, Buffer<F64>): jflow selects the
// one matching the input's dtype.
#include <cstdint>
#include <string>

#include "jflow/op.h"

namespace ffi = xla::ffi;

static void MyOpInfer(jflow::InferContext& ctx) {
  const jflow::TensorDesc& x = ctx.input(0);
  if (x.dtype != "float32" && x.dtype != "float64")
    throw jflow::TypeError("myop takes a float32 or float64 input, got " + x.dtype);
  ctx.output(0) = x;  // same shape and dtype
}

JFLOW_REGISTER_OP("myop").Input("x").Output("y").Infer(MyOpInfer).Sbp("elementwise").Doc(
    "y = 3 * x^2 (a C++ op)");

template <ffi::DataType D>
static ffi::Error MyOp(ffi::Buffer<D> x, ffi::ResultBuffer<D> y) {
  const auto* in = x.typed_data();
  auto* out = y->typed_data();
  for (size_t i = 0; i < x.element_count(); ++i) out[i] = 3 * in[i] * in[i];
  return ffi::Error::Success();
}
JFLOW_REGISTER_KERNEL("myop", "cpu", MyOp<ffi::DataType::F32>);
JFLOW_REGISTER_KERNEL("myop", "cpu", MyOp<ffi::DataType::F64>);
