// Small-op overhead: aten::add on 4 floats through ctorch (cached ct_op, and
// ct_op_call_name) against torch::add called directly from C++. Methods run
// interleaved, round by round; each row is the median over rounds of the mean
// time per call within a round. Usage: bench_c [rounds] [iters_per_round]
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "ctorch.h"
#include "internal.h"  // ct_tensor layout, to compare on the very same tensors

namespace {

using Clock = std::chrono::steady_clock;

void die(const char *what) {
  std::fprintf(stderr, "bench_c: %s failed: %s\n", what, ct_last_error());
  std::exit(1);
}

struct Method {
  std::string name;
  std::function<void()> body;
  std::vector<double> ns;  // per call, one entry per round
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char **argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 300;
  int iters = argc > 2 ? std::atoi(argv[2]) : 2000;
  at::set_num_threads(1);

  const float xa[4] = {1, 2, 3, 4}, xb[4] = {10, 20, 30, 40};
  const int64_t sz[1] = {4};
  at::Tensor a = torch::from_blob(const_cast<float *>(xa), {4}).clone();
  at::Tensor b = torch::from_blob(const_cast<float *>(xb), {4}).clone();

  ct_tensor *ta = nullptr, *tb = nullptr;
  if (ct_tensor_from_data(&ta, xa, sz, 1, CT_FLOAT32, CT_DEVICE_CPU, -1) != CT_OK) die("from_data");
  if (ct_tensor_from_data(&tb, xb, sz, 1, CT_FLOAT32, CT_DEVICE_CPU, -1) != CT_OK) die("from_data");
  ct_value *va = nullptr, *vb = nullptr;
  if (ct_value_from_tensor(&va, ta) != CT_OK || ct_value_from_tensor(&vb, tb) != CT_OK)
    die("value_from_tensor");
  const ct_value *args[2] = {va, vb};
  ct_op *op = nullptr;
  if (ct_op_find(&op, "aten::add", "Tensor") != CT_OK) die("ct_op_find");
  ct_op *opset = nullptr;
  if (ct_op_find(&opset, "aten::add", nullptr) != CT_OK) die("ct_op_find (set)");
  auto handle = c10::Dispatcher::singleton().findSchemaOrThrow("aten::add", "Tensor");

  std::vector<Method> methods;
  methods.push_back({"torch::add (C++ direct)",
                     [&] {
                       at::Tensor r = torch::add(a, b);
                       asm volatile("" : : "r"(r.unsafeGetTensorImpl()) : "memory");
                     },
                     {}});
  methods.push_back({"dispatcher callBoxed (C++)",
                     [&] {
                       torch::jit::Stack st;
                       st.reserve(3);
                       st.emplace_back(a);
                       st.emplace_back(b);
                       st.emplace_back(1);
                       handle.callBoxed(st);
                     },
                     {}});
  // The same C++ tensors behind ctorch handles.
  ct_tensor wa{a}, wb{b};
  ct_value *wva = nullptr, *wvb = nullptr;
  ct_value_from_tensor(&wva, &wa);
  ct_value_from_tensor(&wvb, &wb);
  const ct_value *wargs[2] = {wva, wvb};
  auto typed =
      handle.typed<at::Tensor(const at::Tensor &, const at::Tensor &, const at::Scalar &)>();
  methods.push_back({"typed dispatcher call (C++)",
                     [&] {
                       at::Tensor r = typed.call(a, b, 1);
                       asm volatile("" : : "r"(r.unsafeGetTensorImpl()) : "memory");
                     },
                     {}});
  methods.push_back({"(ct_value_from_tensor + free only)",
                     [&] {
                       ct_value *v = nullptr;
                       ct_value_from_tensor(&v, ta);
                       ct_value_free(v);
                     },
                     {}});
  methods.push_back({"ct_op_call (cached ct_op)",
                     [&] {
                       ct_value *out = nullptr;
                       if (ct_op_call(&out, op, args, 2, nullptr, nullptr, 0) != CT_OK)
                         die("ct_op_call");
                       ct_value_free(out);
                     },
                     {}});
  methods.push_back({"ct_op_call (cached, same C++ tensors)",
                     [&] {
                       ct_value *out = nullptr;
                       if (ct_op_call(&out, op, wargs, 2, nullptr, nullptr, 0) != CT_OK)
                         die("ct_op_call");
                       ct_value_free(out);
                     },
                     {}});
  methods.push_back({"(torch::add + a 16-byte new/delete)",
                     [&] {
                       at::Tensor r = torch::add(a, b);
                       auto *p = new c10::IValue(std::move(r));
                       asm volatile("" : : "r"(p) : "memory");
                       delete p;
                     },
                     {}});
  methods.push_back({"(typed call + new/delete ct_value, C++)",
                     [&] {
                       auto *v = new ct_value{c10::IValue(typed.call(a, b, 1)), nullptr};
                       asm volatile("" : : "r"(v) : "memory");
                       delete v;
                     },
                     {}});
  methods.push_back({"torch::add on ctorch-made tensors",
                     [&] {
                       at::Tensor r = torch::add(ta->t, tb->t);
                       asm volatile("" : : "r"(r.unsafeGetTensorImpl()) : "memory");
                     },
                     {}});
  methods.push_back(
      {"ct_op_call_name aten::add.Tensor",
       [&] {
         ct_value *out = nullptr;
         if (ct_op_call_name(&out, "aten::add.Tensor", args, 2, nullptr, nullptr, 0) != CT_OK)
           die("ct_op_call_name");
         ct_value_free(out);
       },
       {}});
  methods.push_back({"ct_op_call (overload set aten::add)",
                     [&] {
                       ct_value *out = nullptr;
                       if (ct_op_call(&out, opset, args, 2, nullptr, nullptr, 0) != CT_OK)
                         die("ct_op_call set");
                       ct_value_free(out);
                     },
                     {}});

  // Optional third argument: run only the method with this index (profiling).
  if (argc > 3) {
    size_t keep = static_cast<size_t>(std::atoi(argv[3]));
    if (keep < methods.size()) {
      Method m = methods[keep];
      methods.assign(1, m);
    }
  }
  // Warm up.
  for (auto &m : methods)
    for (int i = 0; i < iters; ++i) m.body();
  for (int r = 0; r < rounds; ++r) {
    for (auto &m : methods) {
      auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i) m.body();
      auto t1 = Clock::now();
      m.ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / iters);
    }
  }

  double base = median(methods[0].ns);
  std::printf("aten::add, 4 x float32, CPU, 1 thread; median of %d rounds x %d calls\n", rounds,
              iters);
  std::printf("%-38s %10s %8s\n", "method", "ns/call", "ratio");
  for (auto &m : methods) {
    double med = median(m.ns);
    std::printf("%-38s %10.1f %8.3f\n", m.name.c_str(), med, med / base);
  }

  ct_value_free(wva);
  ct_value_free(wvb);
  ct_op_free(op);
  ct_op_free(opset);
  ct_value_free(va);
  ct_value_free(vb);
  ct_tensor_free(ta);
  ct_tensor_free(tb);
  return 0;
}
