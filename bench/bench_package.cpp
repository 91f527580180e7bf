// bench_package: one AOTInductor package (.pt2) run through ctorch
// (ct_package_load + ct_package_run) and through LibTorch's own
// torch::inductor::AOTIModelPackageLoader::run, in one process, interleaved
// rounds, median per call. Needs LibTorch >= 2.6 (the LibTorch 2 leg):
//
//   python3 tests/models/make_packages.py --bench DIR    # DIR/convnet.pt2
//   build/bench/bench_package DIR/convnet.pt2 1 3 64 64  # input sizes
//
// Prints one table row for bench/RESULTS.md. Target: ratio <= 1.02.
#include "ctorch.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#if (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)) && \
    __has_include(<torch/csrc/inductor/aoti_package/model_package_loader.h>)
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#define HAVE_AOTI 1
#else
#define HAVE_AOTI 0
#endif

namespace {
using Clock = std::chrono::steady_clock;

[[maybe_unused]] double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

#define CT_CHECK_OK(call)                                                             \
  do {                                                                                \
    ct_status st_ = (call);                                                           \
    if (st_ != CT_OK) {                                                               \
      std::fprintf(stderr, "%s failed (%d): %s\n", #call, (int)st_, ct_last_error()); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)
}  // namespace

int main(int argc, char **argv) {
#if !HAVE_AOTI
  (void)argc;
  (void)argv;
  std::printf("bench_package: needs LibTorch >= 2.6 (this is %s); skipped\n", TORCH_VERSION);
  return 0;
#else
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s model.pt2 input-size...\n", argv[0]);
    return 2;
  }
  std::vector<int64_t> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  at::set_num_threads(1);
  torch::manual_seed(0);

  ct_package *p = nullptr;
  CT_CHECK_OK(ct_package_load(&p, argv[1], nullptr));
  int32_t dev_type = 0, dev_index = -1;
  CT_CHECK_OK(ct_package_device(&dev_type, &dev_index, p));
  const bool cuda = dev_type == CT_DEVICE_CUDA;
  // A CUDA package (tests/gpu/run.sh) takes CUDA inputs; every timed call
  // then ends with a device synchronisation, for both variants.
  at::Tensor x = torch::randn(sizes);
  if (cuda) x = x.to(at::Device(at::kCUDA, dev_index < 0 ? 0 : dev_index));
  torch::inductor::AOTIModelPackageLoader loader(argv[1], "model");
  std::vector<at::Tensor> in{x};
  ct_tensor *cx = nullptr;
  CT_CHECK_OK(ct_tensor_from_blob(&cx, x.data_ptr(), sizes.data(), sizes.size(), nullptr,
                                  CT_FLOAT32, cuda ? CT_DEVICE_CUDA : CT_DEVICE_CPU,
                                  cuda ? x.device().index() : -1, nullptr, nullptr));
  const ct_tensor *cin[1] = {cx};
  auto sync = [&] {
    if (cuda) CT_CHECK_OK(ct_cuda_synchronize(-1));
  };

  auto run_cpp = [&] {
    auto out = loader.run(in);
    sync();
    return out[0].data_ptr();
  };
  auto run_ct = [&] {
    ct_tensor *out[4];
    size_t n = 0;
    CT_CHECK_OK(ct_package_run(out, 4, &n, p, cin, 1));
    sync();
    void *d = ct_tensor_data_ptr(out[0]);
    for (size_t i = 0; i < n; ++i) ct_tensor_free(out[i]);
    return d;
  };

  // Same results first (compared on the CPU).
  {
    at::Tensor ref = loader.run(in)[0].cpu().contiguous();
    ct_tensor *out[4], *host = nullptr;
    size_t n = 0;
    CT_CHECK_OK(ct_package_run(out, 4, &n, p, cin, 1));
    CT_CHECK_OK(ct_tensor_to(&host, out[0], CT_DEVICE_CPU, -1, CT_FLOAT32, 0, 1));
    int64_t numel = ct_tensor_numel(host);
    const float *a = static_cast<const float *>(ct_tensor_data_ptr(host));
    const float *b = ref.data_ptr<float>();
    if (numel != ref.numel()) {
      std::fprintf(stderr, "bench_package: output sizes differ\n");
      return 1;
    }
    for (int64_t i = 0; i < numel; ++i)
      if (std::abs(a[i] - b[i]) > 1e-5f + 1e-5f * std::abs(b[i])) {
        std::fprintf(stderr, "bench_package: outputs differ at %lld\n", (long long)i);
        return 1;
      }
    ct_tensor_free(host);
    for (size_t i = 0; i < n; ++i) ct_tensor_free(out[i]);
  }

  // Calibrate to ~20 ms per round, then interleave rounds.
  for (int i = 0; i < 10; ++i) run_cpp(), run_ct();
  auto t0 = Clock::now();
  int iters = 0;
  while (std::chrono::duration<double, std::milli>(Clock::now() - t0).count() < 20 || iters < 3) {
    run_cpp();
    ++iters;
  }
  // A second LibTorch loader of the same file is the control: how far two
  // loaded copies of one package differ with no ctorch in between.
  torch::inductor::AOTIModelPackageLoader loader2(argv[1], "model");
  auto run_cpp2 = [&] {
    auto out = loader2.run(in);
    sync();
    return out[0].data_ptr();
  };
  for (int i = 0; i < 3; ++i) run_cpp2();
  const int rounds = 21;
  std::vector<double> ns_of[3];  // ctorch, C++, C++ second loader
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < 3; ++k) {
      int variant = (r + k) % 3;  // each variant goes first, second and third in turn
      auto s = Clock::now();
      for (int i = 0; i < iters; ++i)
        variant == 0 ? (void)run_ct() : variant == 1 ? (void)run_cpp() : (void)run_cpp2();
      ns_of[variant].push_back(std::chrono::duration<double, std::nano>(Clock::now() - s).count() /
                               iters);
    }
  }
  double a = median(ns_of[0]), b = median(ns_of[1]), c = median(ns_of[2]);
  std::printf("| .pt2 %s (input", argv[1]);
  for (size_t i = 0; i < sizes.size(); ++i)
    std::printf("%s%lld", i ? "x" : " ", (long long)sizes[i]);
  std::printf(
      "), LibTorch %s, %s | ct_package_run + tensor_free: %.1f us | "
      "AOTIModelPackageLoader::run: %.1f us | ratio %.3f (target <= 1.02: %s; a second C++ "
      "loader of the same file: %.3f) |\n",
      TORCH_VERSION, cuda ? "CUDA" : "CPU, 1 thread", a / 1e3, b / 1e3, a / b,
      a / b <= 1.02 ? "met" : "missed", c / b);
  ct_tensor_free(cx);
  ct_package_free(p);
  return 0;
#endif
}
