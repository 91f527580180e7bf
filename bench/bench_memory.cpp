// Group 6, memory: RSS (/proc/self/statm) before and after 10^6 create/free cycles of
// tensors, from_blob tensors, values, op calls, DLPack round trips, failing calls, forwards.
// Built on bench/harness.h; run by bench/run.sh. Options: see harness.h.
#include "harness.h"

using namespace bench;

namespace {

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
    ct_tensor_from_blob(&t, blob, s2, 2, nullptr, CT_FLOAT32, CT_DEVICE_CPU, -1, noop_deleter,
                        nullptr);
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

}  // namespace

int main(int argc, char **argv) {
  return run_main(argc, argv, "memory", [] { group_memory(); });
}
