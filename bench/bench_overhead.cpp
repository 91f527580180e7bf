// What the C ABI costs: every ctorch call next to the same work done directly
// in C++ LibTorch, in one process, on the very same machine state.
//
//   bench_overhead [--json FILE] [--groups call,model,scale,memory] [--quick]
//                  [--resnet PATH] [--only SUBSTRING]
//
// Groups
//   call    accessors, create/free, from_blob, DLPack, small aten::add, error paths
//   model   scripted module (from TorchScript source) and traced resnet18 forward,
//           ct_module_forward vs torch::jit::Module::forward, inference mode
//   scale   zero-copy wrap and DLPack export at 1 KiB .. 1 GiB vs memcpy / clone
//   memory  RSS before/after 10^6 create/free cycles (tensors, values, op calls,
//           from_blob, DLPack) and module calls
//
// Method: the variants of one case run interleaved, round by round (a round is
// ~round_ms of back-to-back calls of one variant); each figure is the median
// over rounds of the mean time per call in a round, so load from other
// processes hits every variant alike and ratios stay meaningful.
#include "ctorch.h"  // first: its DLPack 1.1 declarations win over ATen's (same layout)

#include <ATen/DLConvertor.h>
#include <c10/core/InferenceMode.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
bool g_quick = false;
std::string g_only;

[[noreturn]] void die(const char *what) {
  std::fprintf(stderr, "bench_overhead: %s failed: %s\n", what, ct_last_error());
  std::exit(1);
}
#define CK(call)                      \
  do {                                \
    if ((call) != CT_OK) die(#call); \
  } while (0)

template <class T>
inline void escape(const T &v) {
  asm volatile("" : : "g"(v) : "memory");
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Method {
  std::string name;
  std::function<void()> body;
  long iters = 0;
  std::vector<double> ns;
  double med() const { return median(ns); }
};

// Runs methods interleaved; iterations per round are calibrated so that a
// round of each takes about round_ms.
void run_interleaved(std::vector<Method> &ms, int rounds, double round_ms, long max_iters = 1L << 22) {
  for (auto &m : ms) {
    m.body();  // warm
    long it = 1;
    for (;;) {
      auto t0 = Clock::now();
      for (long i = 0; i < it; ++i) m.body();
      double el = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (el >= round_ms / 4 || it >= max_iters) {
        m.iters = std::max(1L, std::min(max_iters, (long)(it * round_ms / std::max(el, 1e-6))));
        break;
      }
      it *= 4;
    }
  }
  if (g_quick) rounds = std::max(5, rounds / 4);
  for (int r = 0; r < rounds; ++r)
    for (auto &m : ms) {
      auto t0 = Clock::now();
      for (long i = 0; i < m.iters; ++i) m.body();
      double el = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
      m.ns.push_back(el / m.iters);
    }
}

// ---- JSON output -------------------------------------------------------------
std::string jesc(const std::string &s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

struct Row {
  std::string group, name, floor_name, ctorch_name;
  double floor_ns = 0, ctorch_ns = 0;
  std::string target_kind;  // "", "ratio", "abs_ns", "diff_ns"
  double target = 0;
  std::string note;
};
std::vector<Row> g_rows;
std::vector<std::string> g_extra_json;  // already-formatted objects (scale, memory)

void print_row(const Row &r) {
  double ratio = r.floor_ns > 0 ? r.ctorch_ns / r.floor_ns : 0;
  std::printf("  %-34s %-30s %11.1f  %-36s %11.1f  %6.3f\n", r.name.c_str(), r.floor_name.c_str(),
              r.floor_ns, r.ctorch_name.c_str(), r.ctorch_ns, ratio);
  std::fflush(stdout);
}

// One case: floor first, then one or more ctorch variants (each reported as a row
// against the floor). Variants run interleaved with the floor.
void compare(const std::string &group, const std::string &name, Method floor,
             std::vector<Method> variants, int rounds, double round_ms,
             std::vector<std::pair<std::string, double>> targets = {},  // kind,value per variant
             const std::string &note = "") {
  if (!g_only.empty() && name.find(g_only) == std::string::npos) return;
  std::vector<Method> ms;
  ms.push_back(std::move(floor));
  for (auto &v : variants) ms.push_back(std::move(v));
  run_interleaved(ms, rounds, round_ms);
  for (size_t i = 1; i < ms.size(); ++i) {
    Row r;
    r.group = group;
    r.name = name;
    r.floor_name = ms[0].name;
    r.floor_ns = ms[0].med();
    r.ctorch_name = ms[i].name;
    r.ctorch_ns = ms[i].med();
    if (i - 1 < targets.size()) {
      r.target_kind = targets[i - 1].first;
      r.target = targets[i - 1].second;
    }
    r.note = note;
    print_row(r);
    g_rows.push_back(r);
  }
}

// A ctorch-only case (no C++ counterpart), with an absolute target.
void single(const std::string &group, const std::string &name, Method m, int rounds,
            double round_ms, const std::string &kind, double target, const std::string &note = "") {
  if (!g_only.empty() && name.find(g_only) == std::string::npos) return;
  std::vector<Method> ms{std::move(m)};
  run_interleaved(ms, rounds, round_ms);
  Row r;
  r.group = group;
  r.name = name;
  r.floor_name = "-";
  r.ctorch_name = ms[0].name;
  r.ctorch_ns = ms[0].med();
  r.target_kind = kind;
  r.target = target;
  r.note = note;
  print_row(r);
  g_rows.push_back(r);
}

void header(const char *title) {
  std::printf("\n== %s\n  %-34s %-30s %11s  %-36s %11s  %6s\n", title, "case", "C++ floor", "ns",
              "ctorch", "ns", "ratio");
}

// ---- Group 1: call overhead ------------------------------------------------------
void noop_deleter(void *, void *) {}
void noop_dl_deleter(DLManagedTensor *) {}

void group_call() {
  header("call overhead: C ABI vs C++ LibTorch");
  at::set_num_threads(1);
  const float xa[4] = {1, 2, 3, 4}, xb[4] = {10, 20, 30, 40};
  const int64_t sz[1] = {4};
  ct_tensor *ta = nullptr, *tb = nullptr;
  CK(ct_tensor_from_data(&ta, xa, sz, 1, CT_FLOAT32, CT_DEVICE_CPU, -1));
  CK(ct_tensor_from_data(&tb, xb, sz, 1, CT_FLOAT32, CT_DEVICE_CPU, -1));
  at::Tensor a = torch::from_blob(const_cast<float *>(xa), {4}).clone();
  at::Tensor b = torch::from_blob(const_cast<float *>(xb), {4}).clone();
  const int R = 300;
  const double MS = 2.0;

  // Accessors: the C++ floor is the inlined member call; the ctorch side is an
  // exported call through the PLT. Target: within 2 ns.
  compare("call", "data pointer", {"t.data_ptr()", [&] { escape(a.data_ptr()); }},
          {{"ct_tensor_data_ptr", [&] { escape(ct_tensor_data_ptr(ta)); }}}, R, MS,
          {{"diff_ns", 2.0}});
  compare("call", "ndim", {"t.dim()", [&] { escape(a.dim()); }},
          {{"ct_tensor_ndim", [&] { escape(ct_tensor_ndim(ta)); }}}, R, MS, {{"diff_ns", 2.0}});
  compare("call", "sizes", {"t.sizes().data()", [&] { escape(a.sizes().data()); }},
          {{"ct_tensor_sizes", [&] { escape(ct_tensor_sizes(ta)); }}}, R, MS, {{"diff_ns", 2.0}});

  // Create and free.
  const int64_t s2[2] = {2, 3};
  compare("call", "empty 2x3 create+free",
          {"at::empty + ~Tensor",
           [&] {
             at::Tensor t = at::empty({2, 3}, at::TensorOptions().dtype(at::kFloat));
             escape(t.unsafeGetTensorImpl());
           }},
          {{"ct_tensor_empty + ct_tensor_free",
            [&] {
              ct_tensor *t = nullptr;
              ct_tensor_empty(&t, s2, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0);
              ct_tensor_free(t);
            }}},
          R, MS);
  static float blob[1024];
  compare("call", "from_blob wrap+free (no deleter)",
          {"torch::from_blob + ~Tensor",
           [&] {
             at::Tensor t = torch::from_blob(blob, {2, 3});
             escape(t.unsafeGetTensorImpl());
           }},
          {{"ct_tensor_from_blob + free",
            [&] {
              ct_tensor *t = nullptr;
              ct_tensor_from_blob(&t, blob, s2, 2, nullptr, CT_FLOAT32, CT_DEVICE_CPU, -1,
                                  nullptr, nullptr);
              ct_tensor_free(t);
            }}},
          R, MS);
  compare("call", "from_blob wrap+free (deleter)",
          {"torch::from_blob(deleter) + ~Tensor",
           [&] {
             at::Tensor t = torch::from_blob(blob, {2, 3}, [](void *p) { noop_deleter(p, nullptr); });
             escape(t.unsafeGetTensorImpl());
           }},
          {{"ct_tensor_from_blob(deleter) + free",
            [&] {
              ct_tensor *t = nullptr;
              ct_tensor_from_blob(&t, blob, s2, 2, nullptr, CT_FLOAT32, CT_DEVICE_CPU, -1,
                                  noop_deleter, nullptr);
              ct_tensor_free(t);
            }}},
          R, MS);

  // DLPack.
  compare("call", "DLPack export+free",
          {"at::toDLPack + deleter",
           [&] {
             DLManagedTensor *m = at::toDLPack(a);
             m->deleter(m);
           }},
          {{"ct_tensor_to_dlpack + deleter",
            [&] {
              DLManagedTensor *m = nullptr;
              ct_tensor_to_dlpack(&m, ta, 0, -1);
              m->deleter(m);
            }},
           {"ct_tensor_to_dlpack_versioned + deleter",
            [&] {
              DLManagedTensorVersioned *m = nullptr;
              ct_tensor_to_dlpack_versioned(&m, ta, 0, -1);
              m->deleter(m);
            }}},
          R, MS);
  // Import: a hand-made capsule over static memory with a no-op deleter, so
  // both sides pay only the import and the free.
  static int64_t dl_shape[2] = {2, 3};
  auto make_dl = [](DLManagedTensor *m) {
    std::memset(m, 0, sizeof *m);
    m->dl_tensor.data = blob;
    m->dl_tensor.device.device_type = kDLCPU;
    m->dl_tensor.ndim = 2;
    m->dl_tensor.dtype.code = kDLFloat;
    m->dl_tensor.dtype.bits = 32;
    m->dl_tensor.dtype.lanes = 1;
    m->dl_tensor.shape = dl_shape;
    m->deleter = noop_dl_deleter;
  };
  DLManagedTensor dl1, dl2;
  make_dl(&dl1);
  make_dl(&dl2);
  compare("call", "DLPack import+free",
          {"at::fromDLPack + ~Tensor",
           [&] {
             at::Tensor t = at::fromDLPack(&dl1);
             escape(t.unsafeGetTensorImpl());
           }},
          {{"ct_tensor_from_dlpack + free",
            [&] {
              ct_tensor *t = nullptr;
              ct_tensor_from_dlpack(&t, &dl2);
              ct_tensor_free(t);
            }}},
          R, MS);

  // Small op.
  ct_value *va = nullptr, *vb = nullptr;
  CK(ct_value_from_tensor(&va, ta));
  CK(ct_value_from_tensor(&vb, tb));
  const ct_value *args[2] = {va, vb};
  ct_op *op = nullptr, *opset = nullptr;
  CK(ct_op_find(&op, "aten::add", "Tensor"));
  CK(ct_op_find(&opset, "aten::add", nullptr));
  compare("call", "aten::add 4 floats",
          {"torch::add",
           [&] {
             at::Tensor r = torch::add(a, b);
             escape(r.unsafeGetTensorImpl());
           }},
          {{"ct_op_call (cached ct_op) + value_free",
            [&] {
              ct_value *out = nullptr;
              if (ct_op_call(&out, op, args, 2, nullptr, nullptr, 0) != CT_OK) die("ct_op_call");
              ct_value_free(out);
            }},
           {"ct_op_call_name + value_free",
            [&] {
              ct_value *out = nullptr;
              if (ct_op_call_name(&out, "aten::add.Tensor", args, 2, nullptr, nullptr, 0) != CT_OK)
                die("ct_op_call_name");
              ct_value_free(out);
            }},
           {"ct_op_call (overload set) + value_free",
            [&] {
              ct_value *out = nullptr;
              if (ct_op_call(&out, opset, args, 2, nullptr, nullptr, 0) != CT_OK)
                die("ct_op_call set");
              ct_value_free(out);
            }},
           {"ct_op_call_tensors (cached ct_op) + tensor_free",
            [&] {
              ct_tensor *t = nullptr;
              const ct_tensor *ins[2] = {ta, tb};
              if (ct_op_call_tensors(&t, 1, op, ins, 2) != CT_OK) die("ct_op_call_tensors");
              ct_tensor_free(t);
            }},
           {"ct_op_call + ct_value_to_tensor + frees",
            [&] {
              ct_value *out = nullptr;
              ct_tensor *t = nullptr;
              if (ct_op_call(&out, op, args, 2, nullptr, nullptr, 0) != CT_OK) die("ct_op_call");
              ct_value_to_tensor(&t, out);
              ct_value_free(out);
              ct_tensor_free(t);
            }}},
          2 * R, MS, {{"ratio", 1.05}, {"ratio", 1.05}, {"", 0}, {"ratio", 1.05}, {"", 0}},
          "tensors in, values prebuilt once");

  // Error paths. The C++ floor catches the same LibTorch failure and reads
  // what(); ctorch's process-wide empty stack-trace fetcher applies to both.
  compare("call", "error: load missing file",
          {"try torch::jit::load catch",
           [&] {
             try {
               torch::jit::load("/nonexistent/ctorch-bench.pt");
             } catch (const std::exception &e) {
               escape(e.what());
             }
           }},
          {{"ct_module_load + ct_last_error",
            [&] {
              ct_module *m = nullptr;
              if (ct_module_load(&m, "/nonexistent/ctorch-bench.pt", CT_DEVICE_KEEP, -1) == CT_OK)
                die("load should fail");
              escape(std::strlen(ct_last_error()));
            }}},
          60, 4.0, {{"abs_ns", 20000}});
  // A file that exists but is not an archive: here LibTorch itself raises.
  char junk[] = "/tmp/ctorch-bench-junk-XXXXXX";
  int fd = mkstemp(junk);
  if (fd < 0 || write(fd, "not a zip archive\n", 18) != 18) die("mkstemp");
  close(fd);
  compare("call", "error: load corrupt file",
          {"try torch::jit::load catch",
           [&] {
             try {
               torch::jit::load(junk);
             } catch (const std::exception &e) {
               escape(e.what());
             }
           }},
          {{"ct_module_load + ct_last_error",
            [&] {
              ct_module *m = nullptr;
              if (ct_module_load(&m, junk, CT_DEVICE_KEEP, -1) == CT_OK) die("load should fail");
              escape(std::strlen(ct_last_error()));
            }}},
          60, 4.0, {{"abs_ns", 20000}});
  unlink(junk);
  ct_tensor *t3 = nullptr;
  const int64_t s3[1] = {3};
  CK(ct_tensor_zeros(&t3, s3, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  at::Tensor a3 = at::zeros({3});
  compare("call", "error: copy_ shape mismatch",
          {"try t.copy_(src) catch",
           [&] {
             try {
               a3.copy_(a);
             } catch (const std::exception &e) {
               escape(e.what());
             }
           }},
          {{"ct_tensor_copy_ + ct_last_error",
            [&] {
              if (ct_tensor_copy_(t3, ta, 0) == CT_OK) die("copy_ should fail");
              escape(std::strlen(ct_last_error()));
            }}},
          60, 4.0, {{"abs_ns", 20000}});
  single("call", "error: NULL argument (validated)",
         {"ct_tensor_clone(NULL out) + ct_last_error",
          [&] {
            if (ct_tensor_clone(nullptr, ta) == CT_OK) die("clone should fail");
            escape(std::strlen(ct_last_error()));
          }},
         R, MS, "abs_ns", 1000);
  single("call", "error: NULL op handle (validated)",
         {"ct_op_call(op=NULL) + ct_last_error",
          [&] {
            ct_value *out = nullptr;
            if (ct_op_call(&out, nullptr, args, 2, nullptr, nullptr, 0) == CT_OK) die("op NULL");
            escape(std::strlen(ct_last_error()));
          }},
         R, MS, "abs_ns", 1000);
  ct_clear_error();

  ct_op_free(op);
  ct_op_free(opset);
  ct_value_free(va);
  ct_value_free(vb);
  ct_tensor_free(ta);
  ct_tensor_free(tb);
  ct_tensor_free(t3);
}

// ---- Group 2: model forward ----------------------------------------------------
const char *kSmallSrc = "def forward(self, x):\n    return x * 2 + 1\n";
const char *kMlpSrc =
    "def forward(self, x):\n"
    "    return torch.matmul(torch.relu(torch.matmul(x, self.w1)), self.w2)\n";

void group_model(const std::string &resnet_path) {
  header("model forward: ct_module_forward vs torch::jit::Module::forward (inference mode)");
  at::set_num_threads(1);
  CK(ct_inference_mode_push(1));  // the same thread-local c10 state covers both sides
  {
    // x*2+1 on 4 floats.
    torch::jit::Module cm("__torch__.BenchSmall");
    cm.define(kSmallSrc);
    ct_module *m = nullptr;
    CK(ct_module_new(&m, "BenchSmall2"));
    CK(ct_module_define(m, kSmallSrc));
    const float xs[4] = {1, 2, 3, 4};
    const int64_t s4[1] = {4};
    ct_tensor *tx = nullptr;
    ct_value *vx = nullptr, *out = nullptr;
    CK(ct_tensor_from_data(&tx, xs, s4, 1, CT_FLOAT32, CT_DEVICE_CPU, -1));
    CK(ct_value_from_tensor(&vx, tx));
    at::Tensor x = torch::from_blob(const_cast<float *>(xs), {4}).clone();
    std::vector<c10::IValue> in{x};
    compare("model", "scripted x*2+1 (4 floats)",
            {"Module::forward",
             [&] {
               c10::IValue r = cm.forward(in);
               escape(&r);
             }},
            {{"ct_module_forward + value_free",
              [&] {
                ct_value *o = nullptr;
                if (ct_module_forward(&o, m, &vx, 1) != CT_OK) die("ct_module_forward");
                ct_value_free(o);
              }}},
            500, 2.0, {{"ratio", 1.05}},
            "Module::forward takes its inputs by value (a vector copy) and inserts self at the "
            "front; ct_module_forward builds the stack once, hence < 1 on tiny models");
    (void)out;
    ct_value_free(vx);
    ct_tensor_free(tx);
    ct_module_free(m);
  }
  {
    // MLP 8x64 -> 128 -> 10 (the Julia benchmark's model).
    at::manual_seed(0);
    at::Tensor w1 = at::randn({64, 128}), w2 = at::randn({128, 10}), x = at::randn({8, 64});
    torch::jit::Module cm("__torch__.BenchMlp");
    cm.register_parameter("w1", w1, false);
    cm.register_parameter("w2", w2, false);
    cm.define(kMlpSrc);
    ct_module *m = nullptr;
    ct_tensor *tw1 = nullptr, *tw2 = nullptr, *tx = nullptr;
    const int64_t s1[2] = {64, 128}, s2[2] = {128, 10}, sx[2] = {8, 64};
    CK(ct_tensor_from_data(&tw1, w1.data_ptr(), s1, 2, CT_FLOAT32, CT_DEVICE_CPU, -1));
    CK(ct_tensor_from_data(&tw2, w2.data_ptr(), s2, 2, CT_FLOAT32, CT_DEVICE_CPU, -1));
    CK(ct_tensor_from_data(&tx, x.data_ptr(), sx, 2, CT_FLOAT32, CT_DEVICE_CPU, -1));
    CK(ct_module_new(&m, "BenchMlp2"));
    CK(ct_module_register_parameter(m, "w1", tw1, 0));
    CK(ct_module_register_parameter(m, "w2", tw2, 0));
    CK(ct_module_define(m, kMlpSrc));
    ct_value *vx = nullptr;
    CK(ct_value_from_tensor(&vx, tx));
    std::vector<c10::IValue> in{x};
    compare("model", "scripted MLP 8x64->128->10",
            {"Module::forward",
             [&] {
               c10::IValue r = cm.forward(in);
               escape(&r);
             }},
            {{"ct_module_forward + value_free",
              [&] {
                ct_value *o = nullptr;
                if (ct_module_forward(&o, m, &vx, 1) != CT_OK) die("ct_module_forward");
                ct_value_free(o);
              }}},
            300, 2.0, {{"ratio", 1.05}});
    ct_value_free(vx);
    ct_tensor_free(tw1);
    ct_tensor_free(tw2);
    ct_tensor_free(tx);
    ct_module_free(m);
  }
  if (!resnet_path.empty() && access(resnet_path.c_str(), R_OK) == 0) {
    torch::jit::Module cm = torch::jit::load(resnet_path);
    cm.eval();
    ct_module *m = nullptr;
    CK(ct_module_load(&m, resnet_path.c_str(), CT_DEVICE_KEEP, -1));
    CK(ct_module_eval(m));
    at::manual_seed(1);
    at::Tensor x = at::randn({1, 3, 224, 224});
    ct_tensor *tx = nullptr;
    const int64_t sx[4] = {1, 3, 224, 224};
    CK(ct_tensor_from_data(&tx, x.data_ptr(), sx, 4, CT_FLOAT32, CT_DEVICE_CPU, -1));
    ct_value *vx = nullptr;
    CK(ct_value_from_tensor(&vx, tx));
    std::vector<c10::IValue> in{x};
    compare("model", "traced resnet18 1x3x224x224",
            {"Module::forward",
             [&] {
               c10::IValue r = cm.forward(in);
               escape(&r);
             }},
            {{"ct_module_forward + value_free",
              [&] {
                ct_value *o = nullptr;
                if (ct_module_forward(&o, m, &vx, 1) != CT_OK) die("ct_module_forward resnet");
                ct_value_free(o);
              }}},
            g_quick ? 40 : 80, 1.0, {{"ratio", 1.02}}, "1 intra-op thread; one forward per round");
    ct_value_free(vx);
    ct_tensor_free(tx);
    ct_module_free(m);
  } else {
    std::printf("  (resnet18 skipped: %s not readable)\n", resnet_path.c_str());
  }
  CK(ct_inference_mode_pop());
}

// ---- Group 5: zero-copy scaling --------------------------------------------------
void group_scale() {
  std::printf("\n== zero-copy scaling: cost per call vs buffer size\n");
  std::printf("  %-8s %14s %14s %14s %14s %14s\n", "size", "from_blob+free", "to_dlpack+del",
              "torch::from_blob", "memcpy", "clone");
  struct Sz {
    const char *label;
    size_t bytes;
  };
  std::vector<Sz> sizes = {{"1 KiB", 1 << 10}, {"1 MiB", 1 << 20}, {"64 MiB", 64u << 20}, {"1 GiB", 1u << 30}};
  for (const auto &s : sizes) {
    if (!g_only.empty() && std::string("scale").find(g_only) == std::string::npos) return;
    size_t n = s.bytes / 4;
    float *src = static_cast<float *>(std::malloc(s.bytes));
    float *dst = static_cast<float *>(std::malloc(s.bytes));
    if (!src || !dst) die("malloc");
    std::memset(src, 1, s.bytes);
    std::memset(dst, 0, s.bytes);
    const int64_t sz[1] = {(int64_t)n};
    ct_tensor *t = nullptr;
    CK(ct_tensor_from_blob(&t, src, sz, 1, nullptr, CT_FLOAT32, CT_DEVICE_CPU, -1, nullptr, nullptr));
    at::Tensor at_src = torch::from_blob(src, {(int64_t)n});
    bool big = s.bytes >= (64u << 20);
    std::vector<Method> ms;
    ms.push_back({"ct_tensor_from_blob+free", [&] {
                    ct_tensor *w = nullptr;
                    ct_tensor_from_blob(&w, src, sz, 1, nullptr, CT_FLOAT32, CT_DEVICE_CPU, -1,
                                        nullptr, nullptr);
                    ct_tensor_free(w);
                  }});
    ms.push_back({"ct_tensor_to_dlpack+deleter", [&] {
                    DLManagedTensor *m = nullptr;
                    ct_tensor_to_dlpack(&m, t, 0, -1);
                    m->deleter(m);
                  }});
    ms.push_back({"torch::from_blob", [&] {
                    at::Tensor w = torch::from_blob(src, {(int64_t)n});
                    escape(w.unsafeGetTensorImpl());
                  }});
    ms.push_back({"memcpy", [&] {
                    std::memcpy(dst, src, s.bytes);
                    escape(dst);
                  }});
    ms.push_back({"clone", [&] {
                    at::Tensor c = at_src.clone();
                    escape(c.unsafeGetTensorImpl());
                  }});
    run_interleaved(ms, big ? (g_quick ? 20 : 9) : 60, big ? 50.0 : 2.0);
    std::printf("  %-8s %12.1f ns %12.1f ns %12.1f ns %12.1f ns %12.1f ns\n", s.label, ms[0].med(),
                ms[1].med(), ms[2].med(), ms[3].med(), ms[4].med());
    std::fflush(stdout);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "{\"kind\": \"scale\", \"size\": \"%s\", \"bytes\": %zu, \"from_blob_ns\": %.1f, "
                  "\"to_dlpack_ns\": %.1f, \"torch_from_blob_ns\": %.1f, \"memcpy_ns\": %.1f, "
                  "\"clone_ns\": %.1f}",
                  s.label, s.bytes, ms[0].med(), ms[1].med(), ms[2].med(), ms[3].med(), ms[4].med());
    g_extra_json.push_back(buf);
    ct_tensor_free(t);
    at_src = at::Tensor();
    std::free(src);
    std::free(dst);
  }
}

// ---- Group 6: memory -----------------------------------------------------------------
long rss_kib() {
  FILE *f = std::fopen("/proc/self/statm", "r");
  long size = 0, res = 0;
  if (f) {
    if (std::fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
    std::fclose(f);
  }
  return res * (sysconf(_SC_PAGESIZE) / 1024);
}

void mem_case(const char *name, long n, const std::function<void()> &body) {
  if (!g_only.empty() && std::string(name).find(g_only) == std::string::npos) return;
  for (long i = 0; i < std::min(n / 10, 20000L); ++i) body();  // warm: pools, caches
  long before = rss_kib();
  auto t0 = Clock::now();
  for (long i = 0; i < n; ++i) body();
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  long after = rss_kib();
  std::printf("  %-44s %9ld %10ld KiB %10ld KiB %+8ld KiB  %.1f s\n", name, n, before, after,
              after - before, secs);
  std::fflush(stdout);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"kind\": \"memory\", \"name\": \"%s\", \"iterations\": %ld, \"rss_before_kib\": "
                "%ld, \"rss_after_kib\": %ld, \"seconds\": %.2f}",
                name, n, before, after, secs);
  g_extra_json.push_back(buf);
}

void group_memory() {
  std::printf("\n== memory: RSS (/proc/self/statm) around repeated create/free\n");
  std::printf("  %-44s %9s %14s %14s %12s\n", "case", "count", "RSS before", "RSS after", "delta");
  const long N = g_quick ? 200000 : 1000000;
  const int64_t s2[2] = {2, 3};
  const float xs[4] = {1, 2, 3, 4};
  const int64_t s4[1] = {4};
  ct_tensor *ta = nullptr;
  CK(ct_tensor_from_data(&ta, xs, s4, 1, CT_FLOAT32, CT_DEVICE_CPU, -1));
  ct_value *va = nullptr;
  CK(ct_value_from_tensor(&va, ta));
  const ct_value *args[2] = {va, va};
  ct_op *op = nullptr;
  CK(ct_op_find(&op, "aten::add", "Tensor"));
  static float blob[16];
  mem_case("ct_tensor_empty + free", N, [&] {
    ct_tensor *t = nullptr;
    ct_tensor_empty(&t, s2, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0);
    ct_tensor_free(t);
  });
  mem_case("ct_tensor_from_blob(deleter) + free", N, [&] {
    ct_tensor *t = nullptr;
    ct_tensor_from_blob(&t, blob, s2, 2, nullptr, CT_FLOAT32, CT_DEVICE_CPU, -1, noop_deleter, nullptr);
    ct_tensor_free(t);
  });
  mem_case("ct_value_from_tensor/int/string + free", N, [&] {
    ct_value *v = nullptr, *w = nullptr, *s = nullptr;
    ct_value_from_tensor(&v, ta);
    ct_value_from_int(&w, 7);
    ct_value_from_string(&s, "hello, world, a longer string", 29);
    ct_value_free(v);
    ct_value_free(w);
    ct_value_free(s);
  });
  mem_case("ct_op_call aten::add + value_free", N, [&] {
    ct_value *out = nullptr;
    ct_op_call(&out, op, args, 2, nullptr, nullptr, 0);
    ct_value_free(out);
  });
  mem_case("DLPack export -> import -> free", N, [&] {
    DLManagedTensor *m = nullptr;
    ct_tensor *t = nullptr;
    ct_tensor_to_dlpack(&m, ta, 0, -1);
    ct_tensor_from_dlpack(&t, m);
    ct_tensor_free(t);
  });
  mem_case("failing call + message (NULL arg, copy_)", N / 10, [&] {
    ct_tensor *t = nullptr;
    ct_tensor_clone(nullptr, ta);
    ct_tensor_zeros(&t, s2, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0);
    ct_tensor_copy_(t, ta, 0);
    ct_tensor_free(t);
  });
  ct_module *m = nullptr;
  CK(ct_module_new(&m, "BenchMem"));
  CK(ct_module_define(m, kSmallSrc));
  mem_case("ct_module_forward (x*2+1) + value_free", N, [&] {
    ct_value *out = nullptr;
    ct_module_forward(&out, m, &va, 1);
    ct_value_free(out);
  });
  ct_clear_error();
  ct_module_free(m);
  ct_op_free(op);
  ct_value_free(va);
  ct_tensor_free(ta);
}

void write_json(const char *path) {
  FILE *f = std::fopen(path, "w");
  if (!f) {
    std::perror(path);
    return;
  }
  std::fprintf(f, "{\n  \"torch_version\": \"%s\",\n  \"ctorch_version\": \"%s\",\n  \"rows\": [\n",
               ct_torch_version(), ct_version());
  for (size_t i = 0; i < g_rows.size(); ++i) {
    const Row &r = g_rows[i];
    std::fprintf(f,
                 "    {\"group\": \"%s\", \"name\": \"%s\", \"floor_name\": \"%s\", \"floor_ns\": %.2f, "
                 "\"ctorch_name\": \"%s\", \"ctorch_ns\": %.2f, \"target_kind\": \"%s\", "
                 "\"target\": %g, \"note\": \"%s\"}%s\n",
                 jesc(r.group).c_str(), jesc(r.name).c_str(), jesc(r.floor_name).c_str(), r.floor_ns,
                 jesc(r.ctorch_name).c_str(), r.ctorch_ns, r.target_kind.c_str(), r.target,
                 jesc(r.note).c_str(), i + 1 < g_rows.size() ? "," : "");
  }
  std::fprintf(f, "  ],\n  \"extra\": [\n");
  for (size_t i = 0; i < g_extra_json.size(); ++i)
    std::fprintf(f, "    %s%s\n", g_extra_json[i].c_str(), i + 1 < g_extra_json.size() ? "," : "");
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
  std::printf("\nwrote %s\n", path);
}

}  // namespace

int main(int argc, char **argv) {
  const char *json = nullptr;
  std::string groups = "call,model,scale,memory";
  std::string resnet = "build-bench/models/resnet18.pt";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) json = argv[++i];
    else if (a == "--groups" && i + 1 < argc) groups = argv[++i];
    else if (a == "--resnet" && i + 1 < argc) resnet = argv[++i];
    else if (a == "--only" && i + 1 < argc) g_only = argv[++i];
    else if (a == "--quick") g_quick = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--json FILE] [--groups call,model,scale,memory] [--quick] "
                   "[--resnet PATH] [--only SUBSTRING]\n",
                   argv[0]);
      return 2;
    }
  }
  CK(ct_set_num_threads(1));
  std::printf("ctorch %s on LibTorch %s; 1 intra-op thread\n", ct_version(), ct_torch_version());
  auto has = [&](const char *g) { return ("," + groups + ",").find(std::string(",") + g + ",") != std::string::npos; };
  if (has("call")) group_call();
  if (has("model")) group_model(resnet);
  if (has("scale")) group_scale();
  if (has("memory")) group_memory();
  if (json) write_json(json);
  return 0;
}
