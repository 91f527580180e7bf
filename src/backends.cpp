// Backend flags and float32 matmul precision (ct_backend_flag_*,
// ct_float32_matmul_precision_*): torch.backends.* switches on
// at::globalContext(), by number, with the LibTorch version each needs.
#include "internal.h"
#include "torch_version.h"

#include <ATen/Context.h>

#include <cstring>
#include <type_traits>

namespace {

// allow_{fp16,bf16}_reduced_precision_reduction: a bool up to 2.6, an enum
// (at::CuBLASReductionOption, with split-K) in newer LibTorch.
template <class R>
bool reduction_allowed(R r) {
  if constexpr (std::is_same_v<R, bool>)
    return r;
  else
    return r == R::AllowReducedPrecisionWithSplitK;
}

[[maybe_unused]] ct_status too_old(const char *func, int32_t flag, const char *needs) {
  return ct::set_error(CT_ERR_NOT_SUPPORTED, "%s: flag %d needs LibTorch >= %s (this is %s)", func,
                       flag, needs, TORCH_VERSION);
}

// Reads (set == nullptr) or sets one flag.
ct_status flag_access(const char *func, int32_t flag, int32_t *get, const bool *set) {
  at::Context &c = at::globalContext();
  bool v = false;
  switch (flag) {
#define CT_FLAG_CASE(code, getter, setter) \
  case code:                               \
    if (set)                               \
      c.setter(*set);                      \
    else                                   \
      v = c.getter();                      \
    break;
    CT_FLAG_CASE(CT_FLAG_CUDNN_ENABLED, userEnabledCuDNN, setUserEnabledCuDNN)
    CT_FLAG_CASE(CT_FLAG_CUDNN_BENCHMARK, benchmarkCuDNN, setBenchmarkCuDNN)
    CT_FLAG_CASE(CT_FLAG_CUDNN_DETERMINISTIC, deterministicCuDNN, setDeterministicCuDNN)
    CT_FLAG_CASE(CT_FLAG_CUDNN_ALLOW_TF32, allowTF32CuDNN, setAllowTF32CuDNN)
    CT_FLAG_CASE(CT_FLAG_MATMUL_ALLOW_TF32, allowTF32CuBLAS, setAllowTF32CuBLAS)
    CT_FLAG_CASE(CT_FLAG_MKLDNN_ENABLED, userEnabledMkldnn, setUserEnabledMkldnn)
    CT_FLAG_CASE(CT_FLAG_SDPA_FLASH, userEnabledFlashSDP, setSDPUseFlash)
    CT_FLAG_CASE(CT_FLAG_SDPA_MATH, userEnabledMathSDP, setSDPUseMath)
#if CT_TORCH_AT_LEAST(2, 0)
    CT_FLAG_CASE(CT_FLAG_SDPA_MEM_EFFICIENT, userEnabledMemEfficientSDP, setSDPUseMemEfficient)
#else
    case CT_FLAG_SDPA_MEM_EFFICIENT: return too_old(func, flag, "2.0");
#endif
#if CT_TORCH_AT_LEAST(2, 5)
    CT_FLAG_CASE(CT_FLAG_SDPA_CUDNN, userEnabledCuDNNSDP, setSDPUseCuDNN)
#else
    case CT_FLAG_SDPA_CUDNN: return too_old(func, flag, "2.5");
#endif
#undef CT_FLAG_CASE
    case CT_FLAG_MATMUL_ALLOW_FP16_REDUCTION:
      if (set)
        c.setAllowFP16ReductionCuBLAS(*set);
      else
        v = reduction_allowed(c.allowFP16ReductionCuBLAS());
      break;
    case CT_FLAG_MATMUL_ALLOW_BF16_REDUCTION:
#if CT_TORCH_AT_LEAST(2, 0)
      if (set)
        c.setAllowBF16ReductionCuBLAS(*set);
      else
        v = reduction_allowed(c.allowBF16ReductionCuBLAS());
      break;
#else
      return too_old(func, flag, "2.0");
#endif
    case CT_FLAG_DETERMINISTIC_ALGORITHMS:
      if (set)
        c.setDeterministicAlgorithms(*set, c.deterministicAlgorithmsWarnOnly());
      else
        v = c.deterministicAlgorithms();
      break;
    case CT_FLAG_DETERMINISTIC_WARN_ONLY:
      if (set)
        c.setDeterministicAlgorithms(c.deterministicAlgorithms(), *set);
      else
        v = c.deterministicAlgorithmsWarnOnly();
      break;
    default:
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: unknown flag %d (CT_FLAG_CUDNN_ENABLED 0 ... CT_FLAG_SDPA_CUDNN "
                           "13)",
                           func, flag);
  }
  if (get) *get = v ? 1 : 0;
  return CT_OK;
}

}  // namespace

extern "C" {

ct_status ct_backend_flag(int32_t *out, int32_t flag) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    return flag_access(ct_fn_, flag, out, nullptr);
  });
}

ct_status ct_set_backend_flag(int32_t flag, int32_t value) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    if (value != 0 && value != 1)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: value must be 0 or 1, not %d", ct_fn_,
                           value);
    const bool b = value == 1;
    return flag_access(ct_fn_, flag, nullptr, &b);
  });
}

ct_status ct_float32_matmul_precision(const char **out) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    switch (at::globalContext().float32MatmulPrecision()) {
      case at::Float32MatmulPrecision::HIGHEST: *out = "highest"; break;
      case at::Float32MatmulPrecision::HIGH: *out = "high"; break;
      default: *out = "medium"; break;
    }
    return CT_OK;
  });
}

ct_status ct_set_float32_matmul_precision(const char *precision) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(precision);
    if (std::strcmp(precision, "highest") != 0 && std::strcmp(precision, "high") != 0 &&
        std::strcmp(precision, "medium") != 0)
      return ct::set_error(
          CT_ERR_INVALID_ARGUMENT,
          "%s: precision must be \"highest\", \"high\" or \"medium\", not \"%.64s\"", ct_fn_,
          precision);
    at::globalContext().setFloat32MatmulPrecision(precision);
    return CT_OK;
  });
}

}  // extern "C"
