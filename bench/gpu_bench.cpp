// GPU benchmark: ctorch's C API against LibTorch's C++ API, same process.
//
//   gpu_bench <resnet50_traced.pt> [iters=50] [warmup=10]
//
// 1. ResNet-50 forward (a traced torchvision model) at batch 1 and 64, fp32
//    and fp16: C++ torch::jit::load + forward vs ct_module_load +
//    ct_module_forward. Each iteration waits for the GPU (synchronize), so the
//    numbers are latencies per forward. Outputs of both paths are compared.
// 2. A small op (add of two 4-element float32 CUDA tensors): torch::add vs
//    ct_op_call (handle found once) vs ct_op_call_name, per call, measured
//    over many calls with one synchronize at the end (dispatch + launch cost).
//
// Prints a Markdown table and one "RESULT ..." line per measurement. Exits
// 77 when CUDA is not available (so CPU builds can run it as a skip), 1 on
// error, 0 otherwise. Links LibTorch directly and ctorch (C API only).
#include "ctorch.h"

#include <torch/cuda.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die_ct(const char *what) {
  std::fprintf(stderr, "gpu_bench: %s failed: %s\n", what, ct_last_error());
  std::exit(1);
}
#define CT(call)                        \
  do {                                  \
    if ((call) != CT_OK) die_ct(#call); \
  } while (0)

struct Stats {
  double median_ms = 0, mean_ms = 0, min_ms = 0;
};

Stats summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median_ms = v[v.size() / 2];
  s.min_ms = v.front();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean_ms = sum / static_cast<double>(v.size());
  return s;
}

template <class F>
Stats time_loop(int warmup, int iters, F &&step) {
  for (int i = 0; i < warmup; i++) step();
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(iters));
  for (int i = 0; i < iters; i++) {
    auto t0 = Clock::now();
    step();
    auto t1 = Clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return summarize(ms);
}

// A float32 CPU at::Tensor view of a ctorch tensor's CPU float32 copy.
at::Tensor ct_to_at_cpu(const ct_tensor *t, ct_tensor **keep) {
  CT(ct_tensor_to(keep, t, CT_DEVICE_CPU, -1, CT_FLOAT32, 0, 1));
  const int64_t *sizes = ct_tensor_sizes(*keep);
  std::vector<int64_t> sz(sizes, sizes + ct_tensor_ndim(*keep));
  return torch::from_blob(ct_tensor_data_ptr(*keep), sz, torch::kFloat32);
}

struct Row {
  std::string name;
  Stats direct, via_ct;
  std::string note;
};

Row bench_resnet(const std::string &path, int64_t batch, bool fp16, int warmup, int iters) {
  Row row;
  row.name = std::string("resnet50 ") + (fp16 ? "fp16" : "fp32") + " b" + std::to_string(batch);
  const auto dtype = fp16 ? torch::kHalf : torch::kFloat32;
  const int32_t ct_dtype = fp16 ? CT_FLOAT16 : CT_FLOAT32;

  // Same input for both paths: made by torch, copied into ctorch via host.
  torch::manual_seed(0);
  at::Tensor x_cpu = torch::randn({batch, 3, 224, 224}, torch::kFloat32);

  // ---- Direct C++.
  at::Tensor direct_out;
  {
    c10::InferenceMode guard;
    torch::jit::Module m = torch::jit::load(path, torch::Device(torch::kCUDA, 0));
    m.eval();
    m.to(dtype);
    at::Tensor x = x_cpu.to(torch::Device(torch::kCUDA, 0)).to(dtype);
    std::vector<c10::IValue> in{x};
    row.direct = time_loop(warmup, iters, [&] {
      direct_out = m.forward(in).toTensor();
      torch::cuda::synchronize();
    });
    direct_out = direct_out.to(torch::kCPU).to(torch::kFloat32);
  }

  // ---- Through ctorch.
  ct_module *m = nullptr;
  CT(ct_module_load(&m, path.c_str(), CT_DEVICE_CUDA, 0));
  CT(ct_module_eval(m));
  CT(ct_module_to(m, CT_DEVICE_KEEP, -1, ct_dtype, 0));
  CT(ct_inference_mode_push(1));
  ct_tensor *xh = nullptr, *x = nullptr;
  const int64_t sizes[4] = {batch, 3, 224, 224};
  CT(ct_tensor_from_data(&xh, x_cpu.data_ptr(), sizes, 4, CT_FLOAT32, CT_DEVICE_CPU, -1));
  CT(ct_tensor_to(&x, xh, CT_DEVICE_CUDA, 0, ct_dtype, 0, 0));
  ct_value *arg = nullptr;
  CT(ct_value_from_tensor(&arg, x));
  ct_value *out = nullptr;
  row.via_ct = time_loop(warmup, iters, [&] {
    ct_value_free(out);
    out = nullptr;
    CT(ct_module_forward(&out, m, &arg, 1));
    CT(ct_cuda_synchronize(0));
  });
  ct_tensor *y = nullptr, *y_cpu = nullptr;
  CT(ct_value_to_tensor(&y, out));
  at::Tensor ct_out = ct_to_at_cpu(y, &y_cpu);
  const double tol = fp16 ? 5e-2 : 1e-3;
  const bool same =
      ct_out.sizes() == direct_out.sizes() && torch::allclose(ct_out, direct_out, tol, tol);
  const double maxdiff =
      ct_out.sizes() == direct_out.sizes() ? (ct_out - direct_out).abs().max().item<double>() : -1;
  char note[96];
  std::snprintf(note, sizeof note, "outputs %s (max |diff| %.2g)", same ? "match" : "DIFFER",
                maxdiff);
  row.note = note;
  ct_tensor_free(y_cpu);
  ct_tensor_free(y);
  ct_value_free(out);
  ct_value_free(arg);
  ct_tensor_free(x);
  ct_tensor_free(xh);
  CT(ct_inference_mode_pop());
  ct_module_free(m);
  if (!same)
    std::fprintf(stderr, "gpu_bench: %s: ctorch and C++ outputs differ\n", row.name.c_str());
  return row;
}

// Small op: per-call cost, averaged over `calls` (one synchronize at the end).
std::vector<Row> bench_small_op(int reps) {
  const int calls = 2000;
  std::vector<Row> rows;
  auto per_call_us = [&](auto &&fn) {
    std::vector<double> v;
    for (int r = 0; r < reps; r++) {
      auto t0 = Clock::now();
      for (int i = 0; i < calls; i++) fn();
      torch::cuda::synchronize();
      auto t1 = Clock::now();
      v.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
    }
    return summarize(v);  // fields are in microseconds here
  };

  c10::InferenceMode guard;
  at::Tensor a = torch::ones({4}, torch::Device(torch::kCUDA, 0));
  at::Tensor b = torch::ones({4}, torch::Device(torch::kCUDA, 0));
  Stats direct = per_call_us([&] { (void)torch::add(a, b); });

  CT(ct_inference_mode_push(1));
  const int64_t sz[1] = {4};
  ct_tensor *ca = nullptr, *cb = nullptr;
  CT(ct_tensor_ones(&ca, sz, 1, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0));
  CT(ct_tensor_ones(&cb, sz, 1, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0));
  ct_value *args[2] = {nullptr, nullptr};
  CT(ct_value_from_tensor(&args[0], ca));
  CT(ct_value_from_tensor(&args[1], cb));
  ct_op *op = nullptr;
  CT(ct_op_find(&op, "aten::add", "Tensor"));
  Stats via_op = per_call_us([&] {
    ct_value *r = nullptr;
    CT(ct_op_call(&r, op, args, 2, nullptr, nullptr, 0));
    ct_value_free(r);
  });
  Stats via_name = per_call_us([&] {
    ct_value *r = nullptr;
    CT(ct_op_call_name(&r, "aten::add.Tensor", args, 2, nullptr, nullptr, 0));
    ct_value_free(r);
  });
  ct_op_free(op);
  ct_value_free(args[0]);
  ct_value_free(args[1]);
  ct_tensor_free(ca);
  ct_tensor_free(cb);
  CT(ct_inference_mode_pop());

  rows.push_back({"add 4xf32 cuda (us/call): ct_op_call", direct, via_op, "handle found once"});
  rows.push_back({"add 4xf32 cuda (us/call): ct_op_call_name", direct, via_name, "lookup cached"});
  return rows;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <resnet50_traced.pt> [iters=50] [warmup=10]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const int iters = argc > 2 ? std::max(1, std::atoi(argv[2])) : 50;
  const int warmup = argc > 3 ? std::max(0, std::atoi(argv[3])) : 10;
  if (!torch::cuda::is_available() || !ct_cuda_is_available()) {
    std::printf("gpu_bench: CUDA not available (torch %d, ctorch %d): skipping\n",
                (int)torch::cuda::is_available(), (int)ct_cuda_is_available());
    return 77;
  }
  std::printf(
      "gpu_bench: ctorch %s, LibTorch %s, %d CUDA device(s), %d iterations after %d "
      "warm-up\n",
      ct_version(), ct_torch_version(), ct_cuda_device_count(), iters, warmup);
  std::fflush(stdout);

  std::vector<Row> rows;
  int status = 0;
  try {
    for (bool fp16 : {false, true})
      for (int64_t batch : {int64_t{1}, int64_t{64}}) {
        rows.push_back(bench_resnet(path, batch, fp16, warmup, iters));
        if (rows.back().note.find("DIFFER") != std::string::npos) status = 1;
        std::fflush(stdout);
      }
    for (Row &r : bench_small_op(5)) rows.push_back(r);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "gpu_bench: C++ exception: %s\n", e.what());
    status = 1;
  }

  std::printf(
      "\n| benchmark | C++ median | ctorch median | ctorch/C++ | C++ mean | ctorch mean | note "
      "|\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (const Row &r : rows) {
    const bool us = r.name.find("us/call") != std::string::npos;
    const char *unit = us ? " us" : " ms";
    const double ratio = r.direct.median_ms > 0 ? r.via_ct.median_ms / r.direct.median_ms : 0;
    std::printf("| %s | %.3f%s | %.3f%s | %.3f | %.3f%s | %.3f%s | %s |\n", r.name.c_str(),
                r.direct.median_ms, unit, r.via_ct.median_ms, unit, ratio, r.direct.mean_ms, unit,
                r.via_ct.mean_ms, unit, r.note.c_str());
  }
  for (const Row &r : rows)
    std::printf("RESULT %s | cxx_median=%.4f ctorch_median=%.4f\n", r.name.c_str(),
                r.direct.median_ms, r.via_ct.median_ms);
  return status;
}
