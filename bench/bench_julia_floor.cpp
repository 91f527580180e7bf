// The C++ floor for bench/bench_julia.jl, measured in the Julia process
// itself: bench_julia.jl dlopens this library and calls these functions
// between its own samples, so Julia's ratios do not depend on another
// process's figures. Each returns the mean time of one call in ns over `iters`
// calls (after one warm-up call).
#include <torch/script.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdint>

namespace {
template <class T>
inline void escape(const T &v) {
  asm volatile("" : : "g"(v) : "memory");
}

template <class F>
double mean_ns(int64_t iters, F &&f) {
  f();
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iters; ++i) f();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / double(iters);
}
}  // namespace

// torch::add on two 4-float tensors (the Julia `a + b` case).
extern "C" double ctb_add_ns(int64_t iters) {
  static const at::Tensor a = torch::tensor({1.f, 2.f, 3.f, 4.f});
  static const at::Tensor b = torch::tensor({5.f, 6.f, 7.f, 8.f});
  return mean_ns(iters, [] {
    at::Tensor r = torch::add(a, b);
    escape(r.unsafeGetTensorImpl());
  });
}

// Module::forward of the Julia bench's tiny module (x + 1 on 4 floats).
extern "C" double ctb_tiny_forward_ns(int64_t iters) {
  static torch::jit::Module m = [] {
    torch::jit::Module mod("BenchTiny");
    mod.define("def forward(self, x):\n    return x + 1\n");
    return mod;
  }();
  static const at::Tensor x = torch::tensor({1.f, 2.f, 3.f, 4.f});
  return mean_ns(iters, [] {
    at::Tensor r = m.forward({x}).toTensor();
    escape(r.unsafeGetTensorImpl());
  });
}
