// Internal definitions shared by every src/*.cpp file. Not installed.
#pragma once

#include "ctorch.h"

#include <torch/script.h>

#include <cstdarg>
#include <string>
#include <utility>
#include <vector>

// ---- Handle structs: an opaque C handle is a heap object holding one C++ value.
struct ct_tensor {
  at::Tensor t;
};
struct ct_value {
  c10::IValue v;
  // What v needs alive besides itself: the module or script a Future came
  // from (its pending or finished continuation points into their code).
  std::shared_ptr<void> keep;
};
struct ct_module {
  torch::jit::Module m;
  std::unordered_map<std::string, std::string> extra_files;
};

namespace ct {

// ---- Errors (error.cpp) ------------------------------------------------
// Sets this thread's last error; returns code. `fmt` is printf-style.
ct_status set_error(ct_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Sets the error from the exception in flight (call only inside catch).
ct_status set_error_from_current_exception(const char *func) noexcept;

// A ctorch error raised deep inside C++ code (for example in a callback
// trampoline) that must reach the barrier with its own code.
struct Error : std::exception {
  ct_status code;
  std::string msg;
  Error(ct_status c, std::string m) : code(c), msg(std::move(m)) {}
  const char *what() const noexcept override { return msg.c_str(); }
};
[[noreturn]] void raise(ct_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// The one exception barrier. Every exported function that can fail is
//
//   const char *const ct_fn_ = __func__;
//   return ct::guard(ct_fn_, [&] { ...; return CT_OK; });
//
// ct_fn_ names the exported function in messages (inside the lambda __func__
// would be "operator()"); CT_CHECK_NOT_NULL uses it. Validation failures
// return set_error(...) directly (no throw: cheap); anything thrown below is
// caught here and turned into a status and a message.
void capture_warnings() noexcept;  // error.cpp: LibTorch warnings -> ct_warnings_*
template <class F>
inline ct_status guard(const char *func, F &&body) noexcept {
  capture_warnings();
  try {
    return body();
  } catch (...) {
    return set_error_from_current_exception(func);
  }
}

// Barrier for void/value-returning functions that must never fail loudly.
template <class R, class F>
inline R guard_value(R fallback, F &&body) noexcept {
  try {
    return body();
  } catch (...) {
    return fallback;
  }
}

// ---- Argument checks (return from the enclosing guard lambda) ----------
#define CT_CHECK_NOT_NULL(ptr)                                                                    \
  do {                                                                                            \
    if (__builtin_expect((ptr) == nullptr, 0))                                                    \
      return ::ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument '%s' is NULL", ct_fn_, #ptr); \
  } while (0)

#define CT_CHECK_ARG(cond, ...)                                                \
  do {                                                                         \
    if (!(cond)) return ::ct::set_error(CT_ERR_INVALID_ARGUMENT, __VA_ARGS__); \
  } while (0)

// ---- Dtypes, devices and layouts (codes.cpp) ------------------------------
// Returns false for unknown codes.
bool to_scalar_type(int32_t dtype, c10::ScalarType *out) noexcept;
// 0 for scalar types without a ctorch code.
int32_t from_scalar_type(c10::ScalarType st) noexcept;
// Validates and converts (type, index); sets the error and returns non-OK.
ct_status to_device(const char *func, int32_t device_type, int32_t device_index,
                    c10::Device *out) noexcept;
int32_t device_type_code(c10::DeviceType t) noexcept;
// to_device, or no device for CT_DEVICE_KEEP (map_location / module.to).
ct_status to_optional_device(const char *func, int32_t device_type, int32_t device_index,
                             c10::optional<c10::Device> *out);
// Any dtype this LibTorch has, quantized included; else sets the error
// (CT_ERR_TYPE unknown code, CT_ERR_NOT_SUPPORTED code of a newer LibTorch).
ct_status known_dtype(const char *func, int32_t dtype, c10::ScalarType *out) noexcept;
// known_dtype, minus quantized dtypes (CT_ERR_TYPE: no plain factories for them).
ct_status check_dtype(const char *func, int32_t dtype, c10::ScalarType *out) noexcept;
// Name of a layout for messages ("sparse COO").
const char *layout_name(c10::Layout l) noexcept;

// ---- Handle helpers --------------------------------------------------------
inline ct_tensor *new_tensor(at::Tensor t) { return new ct_tensor{std::move(t)}; }
inline ct_value *new_value(c10::IValue v) { return new ct_value{std::move(v), nullptr}; }
// Caller-owned copy of a string, freed with ct_free (malloc'ed).
char *dup_string(const std::string &s);

// ---- Values (value.cpp) ---------------------------------------------------
// Element type of a list or value type of a dict built from these types:
// their unified type (tensor types without shapes); Any when they do not unify.
c10::TypePtr unify_or_any(const std::vector<c10::TypePtr> &types);
// Type of a value as a container element (tensor types without shapes).
c10::TypePtr value_type(const c10::IValue &v);

}  // namespace ct

namespace ct {
// CUDA stream rule for DLPack export (device.cpp; cuda_unavailable.cpp without CUDA):
// make `t`'s data safe on the consumer's `stream` (event on torch's current stream +
// wait, no device sync). CT_ERR_NOT_SUPPORTED in builds without CUDA.
ct_status cuda_make_safe_for_stream(const at::Tensor &t, int64_t stream);
}  // namespace ct
