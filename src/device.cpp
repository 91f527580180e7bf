// The exported CUDA functions: feature queries, devices, caching-allocator
// statistics, streams, pinned memory, and the DLPack export stream helper.
// Each wraps ct::cudaimpl (src/cuda.cpp) in the exception barrier. CMake
// compiles this file in CUDA builds (CTORCH_WITH_CUDA) and
// src/cuda_unavailable.cpp, with the same functions, in the others.
#include "cuda_internal.h"

extern "C" {

int32_t ct_cuda_is_compiled(void) { return 1; }

int32_t ct_cuda_is_available(void) { return ct::cudaimpl::is_available() ? 1 : 0; }

int32_t ct_cuda_device_count(void) { return ct::cudaimpl::device_count(); }

ct_status ct_cuda_current_device(int32_t *out) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(out);
    *out = ct::cudaimpl::current_device();
    return CT_OK;
  });
}

ct_status ct_cuda_set_device(int32_t device) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    ct::cudaimpl::set_device(device);
    return CT_OK;
  });
}

ct_status ct_cuda_synchronize(int32_t device) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    ct::cudaimpl::synchronize(device);
    return CT_OK;
  });
}

ct_status ct_cuda_memory_allocated(size_t *out, int32_t device) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(out);
    *out = ct::cudaimpl::memory_allocated(device);
    return CT_OK;
  });
}

ct_status ct_cuda_memory_reserved(size_t *out, int32_t device) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(out);
    *out = ct::cudaimpl::memory_reserved(device);
    return CT_OK;
  });
}

ct_status ct_cuda_empty_cache(void) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    ct::cudaimpl::empty_cache();
    return CT_OK;
  });
}

ct_status ct_cuda_manual_seed_all(uint64_t seed) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    ct::cudaimpl::manual_seed_all(seed);
    return CT_OK;
  });
}

ct_status ct_cuda_current_stream(void **out, int32_t device) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(out);
    *out = ct::cudaimpl::current_stream(device);
    return CT_OK;
  });
}

ct_status ct_cuda_set_stream(void **previous, int32_t device, void *stream) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    void *prev = ct::cudaimpl::set_stream(device, stream);
    if (previous) *previous = prev;
    return CT_OK;
  });
}

ct_status ct_cuda_stream_synchronize(int32_t device, void *stream) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    ct::cudaimpl::stream_synchronize(stream, device);
    return CT_OK;
  });
}

ct_status ct_cuda_stream_wait_stream(int32_t device, void *waiting, void *producer) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    ct::cudaimpl::stream_wait_stream(waiting, producer, device);
    return CT_OK;
  });
}

ct_status ct_cuda_max_memory_allocated(size_t *out, int32_t device) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(out);
    *out = ct::cudaimpl::max_memory_allocated(device);
    return CT_OK;
  });
}

ct_status ct_cuda_max_memory_reserved(size_t *out, int32_t device) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(out);
    *out = ct::cudaimpl::max_memory_reserved(device);
    return CT_OK;
  });
}

ct_status ct_cuda_reset_peak_memory_stats(int32_t device) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    ct::cudaimpl::reset_peak_memory_stats(device);
    return CT_OK;
  });
}

ct_status ct_cuda_memory_stats(ct_value **out, int32_t device) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(out);
    *out = ct::new_value(ct::cudaimpl::memory_stats(device));
    return CT_OK;
  });
}

ct_status ct_cuda_set_memory_fraction(int32_t device, double fraction) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    ct::cudaimpl::set_memory_fraction(fraction, device);
    return CT_OK;
  });
}

ct_status ct_cuda_stream_from_pool(void **out, int32_t device, int32_t high_priority) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(out);
    *out = ct::cudaimpl::stream_from_pool(device, high_priority != 0);
    return CT_OK;
  });
}

ct_status ct_tensor_pin_memory(ct_tensor **out, const ct_tensor *t) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(t);
    at::Tensor pinned = ct::cudaimpl::pin_memory(t->t);
    *out = ct::new_tensor(std::move(pinned));
    return CT_OK;
  });
}

int32_t ct_tensor_is_pinned(const ct_tensor *t) {
  if (t == nullptr) return 0;
  return ct::guard_value<int32_t>(0, [&] { return ct::cudaimpl::is_pinned(t->t) ? 1 : 0; });
}

}  // extern "C"

// ---- DLPack export stream helper (declared in cuda_internal.h / internal.h) ------
namespace ct {

ct_status cuda_make_safe_for_stream(const at::Tensor &t, int64_t stream) {
  static const char *const F = "DLPack export";
  try {
    if (stream == -1 || !t.defined() || !t.is_cuda()) return CT_OK;
  } catch (...) {
    return set_error_from_current_exception(F);
  }
  return guard(F, [&]() -> ct_status {
    cudaimpl::make_safe_for_stream(t, stream);
    return CT_OK;
  });
}

ct_status cuda_generator(const char *, int32_t device, bool fresh, at::Generator *out) {
  *out = fresh ? cudaimpl::new_generator(device) : cudaimpl::default_generator(device);
  return CT_OK;
}

}  // namespace ct
