// Group 5, zero-copy scaling: from_blob wrap and DLPack export at 1 KiB .. 1 GiB next to
// memcpy and at::clone of the same buffer (cost should not grow with size).
// Built on bench/harness.h; run by bench/run.sh. Options: see harness.h.
#include "harness.h"

using namespace bench;

namespace {

void group_scale() {
  std::printf("\n== zero-copy scaling: cost per call vs buffer size\n");
  std::printf("  %-8s %14s %14s %14s %14s %14s\n", "size", "from_blob+free", "to_dlpack+del",
              "torch::from_blob", "memcpy", "clone");
  struct Sz {
    const char *label;
    size_t bytes;
  };
  std::vector<Sz> sizes = {
      {"1 KiB", 1 << 10}, {"1 MiB", 1 << 20}, {"64 MiB", 64u << 20}, {"1 GiB", 1u << 30}};
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
    CK(ct_tensor_from_blob(&t, src, sz, 1, nullptr, CT_FLOAT32, CT_DEVICE_CPU, -1, nullptr,
                           nullptr));
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
                  s.label, s.bytes, ms[0].med(), ms[1].med(), ms[2].med(), ms[3].med(),
                  ms[4].med());
    g_extra_json.push_back(buf);
    ct_tensor_free(t);
    at_src = at::Tensor();
    std::free(src);
    std::free(dst);
  }
}

}  // namespace

int main(int argc, char **argv) {
  return run_main(argc, argv, "scale", [] { group_scale(); });
}
