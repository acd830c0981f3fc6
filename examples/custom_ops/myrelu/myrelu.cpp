// myrelu: the op of OneFlow's "Create a new operator" guide, with a leaky slope:
//   y = x if x > 0 else alpha * x
// The op declaration and the CPU kernel. myrelu.cu adds a CUDA kernel when nvcc is there.
// Build: see run.py (jflow.utils.cpp_extension.load), or by hand, then
// flow.config.load_library("./libmyrelu.so"):
//   g++ $(python -m jflow.sysconfig --cflags) -O2 myrelu.cpp -o libmyrelu.so $(python -m jflow.sysconfig --ldflags)
#include <cstdint>

#include "jflow/op.h"

namespace ffi = xla::ffi;

JFLOW_REGISTER_OP("myrelu")
    .Input("x")
    .Output("y")
    .Attr<float>("alpha", 0.1f)   // a C++ float: jflow passes it as float32
    .SameShapeAs("x")             // y has x's shape and dtype
    .Sbp("elementwise")           // split on any axis -> split on the same axis
    .VmapMethod("broadcast_all")  // elementwise: one call handles a whole vmapped batch
    .Doc("y = x if x > 0 else alpha * x (a C++ op)");

template <typename T>
static void MyReluLoop(const T* x, T* y, int64_t n, T alpha) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > T(0) ? x[i] : alpha * x[i];
}

// Parameters: the op's inputs, its outputs (Result<...>), then its attrs in declaration order.
static ffi::Error MyReluCpu(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y, float alpha) {
  const int64_t n = static_cast<int64_t>(x.element_count());
  switch (x.element_type()) {
    case ffi::DataType::F32:
      MyReluLoop(x.typed_data<float>(), y->typed_data<float>(), n, alpha);
      return ffi::Error::Success();
    case ffi::DataType::F64:
      MyReluLoop(x.typed_data<double>(), y->typed_data<double>(), n, static_cast<double>(alpha));
      return ffi::Error::Success();
    default:  // not reached: Dtypes() below keeps other dtypes away from this kernel
      return ffi::Error::InvalidArgument("myrelu: unsupported dtype");
  }
}
JFLOW_REGISTER_KERNEL("myrelu", "cpu", MyReluCpu).Dtypes("x", "float32, float64");
