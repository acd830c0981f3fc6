// The CUDA kernel of myrelu (declared in myrelu.cpp). Compiled by nvcc when it is installed;
// it runs only where JAX sees a GPU.
#include <cstdint>

#include "jflow/op.h"

namespace ffi = xla::ffi;

template <typename T>
__global__ void MyReluKernel(const T* x, T* y, int64_t n, T alpha) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x) {
    y[i] = x[i] > T(0) ? x[i] : alpha * x[i];
  }
}

template <typename T>
static void Launch(cudaStream_t stream, const T* x, T* y, int64_t n, T alpha) {
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 4096));
  if (n > 0) MyReluKernel<T><<<blocks, threads, 0, stream>>>(x, y, n, alpha);
}

// A pointer parameter (cudaStream_t) receives the stream XLA runs the op on.
static ffi::Error MyReluCuda(cudaStream_t stream, ffi::AnyBuffer x,
                             ffi::Result<ffi::AnyBuffer> y, float alpha) {
  const int64_t n = static_cast<int64_t>(x.element_count());
  switch (x.element_type()) {
    case ffi::DataType::F32:
      Launch(stream, x.typed_data<float>(), y->typed_data<float>(), n, alpha);
      break;
    case ffi::DataType::F64:
      Launch(stream, x.typed_data<double>(), y->typed_data<double>(), n,
             static_cast<double>(alpha));
      break;
    default:
      return ffi::Error::InvalidArgument("myrelu: unsupported dtype");
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return ffi::Error::Internal(cudaGetErrorString(err));
  return ffi::Error::Success();
}
JFLOW_REGISTER_KERNEL("myrelu", "cuda", MyReluCuda).Dtypes("x", "float32, float64");
