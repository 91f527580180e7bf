// h(x, y): a hand-written CUDA kernel that works in place on torch's memory.
//
//   y[i] = x[i] * x[i] + 1
//
// The kernel knows nothing about torch: it receives raw device pointers that
// the host program got from ctorch (ct_tensor_data_ptr) and the cudaStream_t
// that torch is using (ct_cuda_current_stream), so the launch is ordered with
// the torch work before and after it, with no synchronisation.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void h_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)blockDim.x * gridDim.x) {
    y[i] = x[i] * x[i] + 1.0f;
  }
}

// C entry point for the host program (main.c). Returns a cudaError_t value
// (0 = success) from the launch; errors inside the kernel surface later, at
// the next synchronising call.
extern "C" int h_launch(const float *x, float *y, int64_t n, void *stream) {
  if (n <= 0) return 0;
  const int threads = 256;
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks > 65535) blocks = 65535;  // grid-stride loop covers the rest
  h_kernel<<<(unsigned)blocks, threads, 0, (cudaStream_t)stream>>>(x, y, n);
  return (int)cudaGetLastError();
}
