// The C++ floor of the custom-operator benchmarks: softsign as a plain loop in
// a TORCH_LIBRARY extension (ctbench_cpp::softsign), the way C++ users write
// one. A shared library: bench_custom links it, bench_python.py loads it into
// PyTorch (torch.ops.load_library) next to the same kernel written in Python.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cmath>

namespace {

at::Tensor softsign_cpp(const at::Tensor &x) {
  at::Tensor c = x.contiguous();
  at::Tensor y = at::empty_like(c);
  const float *a = c.data_ptr<float>();
  float *b = y.data_ptr<float>();
  for (int64_t i = 0, n = c.numel(); i < n; ++i) b[i] = a[i] / (1.0f + std::fabs(a[i]));
  return y;
}

}  // namespace

TORCH_LIBRARY(ctbench_cpp, m) { m.def("softsign(Tensor x) -> Tensor"); }
TORCH_LIBRARY_IMPL(ctbench_cpp, CPU, m) { m.impl("softsign", softsign_cpp); }
