// The ct_package_* functions where LibTorch has no AOTInductor package loader
// (before 2.6, or without model_package_loader.h; CMake compiles this file
// instead of src/package.cpp): the arguments are checked as there, then each
// returns CT_ERR_NOT_SUPPORTED saying which LibTorch it needs.
#include "internal.h"

#include <torch/version.h>

struct ct_package {};  // never made here

namespace {

ct_status not_supported(const char *func) {
  return ct::set_error(CT_ERR_NOT_SUPPORTED,
                       "%s: AOTInductor packages need LibTorch >= 2.6 "
                       "(AOTIModelPackageLoader); this ctorch was built against LibTorch %s",
                       func, TORCH_VERSION);
}

// ct_package_run and ct_package_run_on_stream.
ct_status run_package(const char *ct_fn_, ct_tensor **outputs, size_t n_outputs, ct_package *p,
                      const ct_tensor *const *inputs, size_t n_inputs) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(p);
    CT_CHECK_ARG(outputs != nullptr || n_outputs == 0, "%s: argument 'outputs' is NULL", ct_fn_);
    CT_CHECK_ARG(inputs != nullptr || n_inputs == 0, "%s: argument 'inputs' is NULL", ct_fn_);
    return not_supported(ct_fn_);
  });
}

// The accessors that return one new value made from the package.
ct_status package_value(const char *ct_fn_, ct_value **out, const ct_package *p) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(p);
    return not_supported(ct_fn_);
  });
}

}  // namespace

extern "C" {

ct_status ct_package_load(ct_package **out, const char *path, const char *model_name) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(path);
    return not_supported(ct_fn_);
  });
}

ct_status ct_package_load_buffer(ct_package **out, const void *data, size_t len,
                                 const char *model_name) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_ARG(data != nullptr || len == 0, "%s: argument 'data' is NULL", ct_fn_);
    return not_supported(ct_fn_);
  });
}

void ct_package_free(ct_package *p) { delete p; }

ct_status ct_package_run(ct_tensor **outputs, size_t n_outputs, size_t *n_returned, ct_package *p,
                         const ct_tensor *const *inputs, size_t n_inputs) {
  return run_package(__func__, outputs, n_outputs, p, inputs, n_inputs);
}

ct_status ct_package_run_on_stream(ct_tensor **outputs, size_t n_outputs, size_t *n_returned,
                                   ct_package *p, const ct_tensor *const *inputs, size_t n_inputs,
                                   void *stream) {
  return run_package(__func__, outputs, n_outputs, p, inputs, n_inputs);
}

ct_status ct_package_load_ext(ct_package **out, const char *path, const char *model_name,
                               size_t num_runners, int32_t device_index) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(path);
    CT_CHECK_ARG(num_runners >= 1 && num_runners <= 1024,
                 "%s: num_runners must be between 1 and 1024, not %zu", ct_fn_, num_runners);
    CT_CHECK_ARG(device_index >= -1, "%s: device_index must be -1 or a device, not %d", ct_fn_,
                 device_index);
    return not_supported(ct_fn_);
  });
}

ct_status ct_package_num_runners(size_t *out, const ct_package *p) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(p);
    return not_supported(ct_fn_);
  });
}

ct_status ct_package_metadata(ct_value **out, const ct_package *p) {
  return package_value(__func__, out, p);
}

ct_status ct_package_call_spec(ct_value **out, const ct_package *p) {
  return package_value(__func__, out, p);
}

ct_status ct_package_constant_names(ct_value **out, const ct_package *p) {
  return package_value(__func__, out, p);
}

ct_status ct_package_update_constants(ct_package *p, const char *const *names,
                                      const ct_tensor *const *tensors, size_t n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(p);
    CT_CHECK_ARG((names != nullptr && tensors != nullptr) || n == 0,
                 "%s: 'names' and 'tensors' must not be NULL when n > 0", ct_fn_);
    return not_supported(ct_fn_);
  });
}

ct_status ct_package_device(int32_t *device_type, int32_t *device_index, const ct_package *p) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(device_type);
    CT_CHECK_NOT_NULL(device_index);
    CT_CHECK_NOT_NULL(p);
    return not_supported(ct_fn_);
  });
}

}  // extern "C"
