// Library-wide calls: versions, feature queries, threads, seeds, grad and
// inference mode switches, and loading extension libraries.
#include "internal.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include <memory>
#include <thread>
#include <vector>

#include <torch/version.h>

#ifdef TORCH_VERSION
#define CTORCH_TORCH_VERSION TORCH_VERSION
#else
#define CTORCH_TORCH_VERSION "unknown"
#endif

// Exported by libtorch_cpu since 1.x (torch/csrc/jit/codegen/fuser/interface.h,
// which Debian's libtorch-dev does not install). The tensorexpr fuser asks
// canFuseOnCPU() before fusing CPU nodes; it is true only with an LLVM backend.
namespace torch {
namespace jit {
TORCH_API bool canFuseOnCPU();
TORCH_API void overrideCanFuseOnCPU(bool value);
}  // namespace jit
}  // namespace torch

namespace {
// Turns TorchScript CPU fusion off at load on LibTorch >= 2 (its LLVM code
// generator can hang; see ct_cpu_fuser_set_enabled); CTORCH_CPU_FUSER=1 turns it on,
// CTORCH_CPU_FUSER=0 off on any version.
struct CpuFuserInit {
  CpuFuserInit() {
    try {
      const char *env = std::getenv("CTORCH_CPU_FUSER");
      if (env && std::strcmp(env, "1") == 0) {
        torch::jit::overrideCanFuseOnCPU(true);  // on where LibTorch has a backend
        return;
      }
      bool force_off = env && std::strcmp(env, "0") == 0;
      if ((TORCH_VERSION_MAJOR >= 2 || force_off) && torch::jit::canFuseOnCPU())
        torch::jit::overrideCanFuseOnCPU(false);
    } catch (...) {}
  }
} cpu_fuser_init;

// Upper bound for thread counts: 4 per hardware thread, at least 8. Far more
// threads than cores only slows torch down, and huge counts hang it.
int32_t max_threads() noexcept {
  unsigned hw = std::thread::hardware_concurrency();
  return static_cast<int32_t>(std::max(8u, 4u * std::min(hw, 65536u)));
}
}  // namespace

extern "C" {

const char *ct_version(void) { return CTORCH_VERSION_STRING; }
int32_t ct_abi_version(void) { return CTORCH_ABI_VERSION; }
const char *ct_torch_version(void) { return CTORCH_TORCH_VERSION; }

int32_t ct_num_threads(void) {
  return ct::guard_value<int32_t>(-1, [] { return static_cast<int32_t>(at::get_num_threads()); });
}

ct_status ct_set_num_threads(int32_t n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_ARG(n >= 1 && n <= max_threads(),
                 "%s: n must be between 1 and %d (4 per hardware thread), got %d", ct_fn_,
                 max_threads(), n);
    at::set_num_threads(n);
    return CT_OK;
  });
}

int32_t ct_num_interop_threads(void) {
  return ct::guard_value<int32_t>(
      -1, [] { return static_cast<int32_t>(at::get_num_interop_threads()); });
}

ct_status ct_set_num_interop_threads(int32_t n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_ARG(n >= 1 && n <= max_threads(),
                 "%s: n must be between 1 and %d (4 per hardware thread), got %d", ct_fn_,
                 max_threads(), n);
    at::set_num_interop_threads(n);
    return CT_OK;
  });
}

ct_status ct_manual_seed(uint64_t seed) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    torch::manual_seed(seed);
    return CT_OK;
  });
}

ct_status ct_load_library(const char *path) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(path);
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      const char *msg = dlerror();
      return ct::set_error(CT_ERR_IO, "%s: cannot load '%s': %s", ct_fn_, path,
                           msg ? msg : "unknown error");
    }
    return CT_OK;
  });
}

ct_status ct_cpu_fuser_set_enabled(int32_t enabled) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    bool was = torch::jit::canFuseOnCPU();
    torch::jit::overrideCanFuseOnCPU(enabled != 0);
    if (enabled != 0 && !torch::jit::canFuseOnCPU()) {
      torch::jit::overrideCanFuseOnCPU(was);
      return ct::set_error(CT_ERR_NOT_SUPPORTED,
                           "ct_cpu_fuser_set_enabled: this LibTorch (%s) has no TorchScript CPU "
                           "fusion backend (NNC built without LLVM)",
                           CTORCH_TORCH_VERSION);
    }
    return CT_OK;
  });
}

int32_t ct_cpu_fuser_is_enabled(void) {
  return ct::guard_value<int32_t>(0, [] { return torch::jit::canFuseOnCPU() ? 1 : 0; });
}

ct_status ct_grad_mode_set_enabled(int32_t enabled) {
  return ct::guard(__func__, [&] {
    c10::GradMode::set_enabled(enabled != 0);
    return CT_OK;
  });
}
int32_t ct_grad_mode_is_enabled(void) { return c10::GradMode::is_enabled() ? 1 : 0; }

}  // extern "C"

namespace {
thread_local std::vector<std::unique_ptr<c10::InferenceMode>> inference_stack;
}

extern "C" {

ct_status ct_inference_mode_push(int32_t enabled) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    inference_stack.emplace_back(new c10::InferenceMode(enabled != 0));
    return CT_OK;
  });
}

ct_status ct_inference_mode_pop(void) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    if (inference_stack.empty())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: no inference mode was pushed on this thread", ct_fn_);
    inference_stack.pop_back();
    return CT_OK;
  });
}

int32_t ct_inference_mode_is_enabled(void) { return c10::InferenceMode::is_enabled() ? 1 : 0; }

}  // extern "C"
