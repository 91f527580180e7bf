// The CUDA functions where LibTorch has no CUDA (CMake compiles this file
// instead of src/cuda.cpp, src/device.cpp and src/cuda_graph.cpp): each
// ct_status function returns CT_ERR_NOT_SUPPORTED with
//   "<func>: CUDA is not supported in this build of ctorch (LibTorch <ver> has no CUDA)"
// and the queries answer 0 (not compiled, no device, nothing pinned).
#include "cuda_internal.h"

#include <torch/version.h>

#include <cstring>

namespace ct {

ct_status no_cuda(const char *func) {
  const char *ver = ct_torch_version();
  if (ver == nullptr || *ver == '\0' || std::strcmp(ver, "unknown") == 0) ver = TORCH_VERSION;
  return set_error(CT_ERR_NOT_SUPPORTED,
                   "%s: CUDA is not supported in this build of ctorch (LibTorch %s has no CUDA)",
                   func, ver);
}

// Nothing to wait for unless a CUDA tensor is asked to (which cannot exist here).
ct_status cuda_make_safe_for_stream(const at::Tensor &t, int64_t stream) {
  static const char *const F = "DLPack export";
  try {
    if (stream == -1 || !t.defined() || !t.is_cuda()) return CT_OK;
  } catch (...) {
    return set_error_from_current_exception(F);
  }
  return no_cuda(F);
}

ct_status cuda_generator(const char *func, int32_t, bool, at::Generator *) {
  return no_cuda(func);
}

}  // namespace ct

using ct::no_cuda;

struct ct_cuda_event {};  // never made here
struct ct_cuda_graph {};

extern "C" {

// ---- src/device.cpp's functions
int32_t ct_cuda_is_compiled(void) { return 0; }
int32_t ct_cuda_is_available(void) { return 0; }
int32_t ct_cuda_device_count(void) { return 0; }
ct_status ct_cuda_current_device(int32_t *out) { return no_cuda(__func__); }
ct_status ct_cuda_set_device(int32_t device) { return no_cuda(__func__); }
ct_status ct_cuda_synchronize(int32_t device) { return no_cuda(__func__); }
ct_status ct_cuda_memory_allocated(size_t *out, int32_t device) { return no_cuda(__func__); }
ct_status ct_cuda_memory_reserved(size_t *out, int32_t device) { return no_cuda(__func__); }
ct_status ct_cuda_empty_cache(void) { return no_cuda(__func__); }
ct_status ct_cuda_manual_seed_all(uint64_t seed) { return no_cuda(__func__); }
ct_status ct_cuda_current_stream(void **out, int32_t device) { return no_cuda(__func__); }
ct_status ct_cuda_set_stream(void **previous, int32_t device, void *stream) {
  return no_cuda(__func__);
}
ct_status ct_cuda_stream_synchronize(int32_t device, void *stream) { return no_cuda(__func__); }
ct_status ct_cuda_stream_wait_stream(int32_t device, void *waiting, void *producer) {
  return no_cuda(__func__);
}
ct_status ct_cuda_max_memory_allocated(size_t *out, int32_t device) { return no_cuda(__func__); }
ct_status ct_cuda_max_memory_reserved(size_t *out, int32_t device) { return no_cuda(__func__); }
ct_status ct_cuda_reset_peak_memory_stats(int32_t device) { return no_cuda(__func__); }
ct_status ct_cuda_memory_stats(ct_value **out, int32_t device) { return no_cuda(__func__); }
ct_status ct_cuda_set_memory_fraction(int32_t device, double fraction) { return no_cuda(__func__); }
ct_status ct_cuda_stream_from_pool(void **out, int32_t device, int32_t high_priority) {
  return no_cuda(__func__);
}
ct_status ct_tensor_pin_memory(ct_tensor **out, const ct_tensor *t) { return no_cuda(__func__); }
int32_t ct_tensor_is_pinned(const ct_tensor *t) { return 0; }  // nothing is pinned without CUDA

// ---- src/cuda_graph.cpp's functions
ct_status ct_cuda_event_new(ct_cuda_event **out, int32_t enable_timing) {
  return no_cuda(__func__);
}
void ct_cuda_event_free(ct_cuda_event *e) { delete e; }
ct_status ct_cuda_event_record(ct_cuda_event *e, void *stream) { return no_cuda(__func__); }
ct_status ct_cuda_event_synchronize(ct_cuda_event *e) { return no_cuda(__func__); }
ct_status ct_cuda_event_query(int32_t *done, ct_cuda_event *e) { return no_cuda(__func__); }
ct_status ct_cuda_event_elapsed_ms(double *out, ct_cuda_event *start, ct_cuda_event *end) {
  return no_cuda(__func__);
}
ct_status ct_cuda_graph_new(ct_cuda_graph **out) { return no_cuda(__func__); }
void ct_cuda_graph_free(ct_cuda_graph *g) { delete g; }
ct_status ct_cuda_graph_capture_begin(ct_cuda_graph *g, int32_t device) {
  return no_cuda(__func__);
}
ct_status ct_cuda_graph_capture_end(ct_cuda_graph *g) { return no_cuda(__func__); }
ct_status ct_cuda_graph_replay(ct_cuda_graph *g) { return no_cuda(__func__); }
ct_status ct_cuda_graph_reset(ct_cuda_graph *g) { return no_cuda(__func__); }

}  // extern "C"
