// Random generators (ct_generator_*): a handle on one at::Generator, the
// device's default or one of its own; seeds, and the state bytes
// torch.Generator.get_state() / set_state() exchange.
#include "cuda_internal.h"

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>

struct ct_generator {
  mutable at::Generator g;  // const handles still lock it (mutex())
};

namespace {

// The generator for (device_type, device_index); `fresh`: a new one, else the
// device's default. CUDA needs a usable device (CT_ERR_NOT_SUPPORTED).
ct_status find_generator(const char *func, int32_t device_type, int32_t device_index, bool fresh,
                         at::Generator *out) {
  if (device_type == CT_DEVICE_CPU) {
    if (device_index != -1 && device_index != 0)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: the CPU has one generator (device_index -1 or 0, not %d)", func,
                           device_index);
    *out = fresh ? at::detail::createCPUGenerator() : at::detail::getDefaultCPUGenerator();
    return CT_OK;
  }
  if (device_type != CT_DEVICE_CUDA)
    return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                         "%s: generators are for CT_DEVICE_CPU or CT_DEVICE_CUDA, not device "
                         "type %d",
                         func, device_type);
  return ct::cuda_generator(func, device_index, fresh, out);
}

ct_status new_handle(const char *ct_fn_, ct_generator **out, int32_t device_type,
                     int32_t device_index, bool fresh) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    at::Generator g;
    ct_status st = find_generator(ct_fn_, device_type, device_index, fresh, &g);
    if (st != CT_OK) return st;
    *out = new ct_generator{std::move(g)};
    return CT_OK;
  });
}

}  // namespace

extern "C" {

ct_status ct_generator_default(ct_generator **out, int32_t device_type, int32_t device_index) {
  return new_handle(__func__, out, device_type, device_index, false);
}

ct_status ct_generator_new(ct_generator **out, int32_t device_type, int32_t device_index) {
  return new_handle(__func__, out, device_type, device_index, true);
}

void ct_generator_free(ct_generator *g) { delete g; }

ct_status ct_generator_manual_seed(ct_generator *g, uint64_t seed) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(g);
    std::lock_guard<std::mutex> lock(g->g.mutex());
    g->g.set_current_seed(seed);
    return CT_OK;
  });
}

ct_status ct_generator_seed(uint64_t *out, ct_generator *g) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(g);
    std::lock_guard<std::mutex> lock(g->g.mutex());
    *out = g->g.seed();
    return CT_OK;
  });
}

ct_status ct_generator_initial_seed(uint64_t *out, const ct_generator *g) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(g);
    std::lock_guard<std::mutex> lock(g->g.mutex());
    *out = g->g.current_seed();
    return CT_OK;
  });
}

ct_status ct_generator_state(ct_tensor **out, const ct_generator *g) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(g);
    at::Tensor state;
    {
      std::lock_guard<std::mutex> lock(g->g.mutex());
      state = g->g.get_state();
    }
    *out = ct::new_tensor(std::move(state));
    return CT_OK;
  });
}

ct_status ct_generator_set_state(ct_generator *g, const ct_tensor *state) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(g);
    CT_CHECK_NOT_NULL(state);
    const at::Tensor &s = state->t;
    if (!s.defined())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: state is an undefined tensor", ct_fn_);
    if (s.scalar_type() != at::kByte)
      return ct::set_error(CT_ERR_TYPE, "%s: a generator state is a uint8 tensor, not %s", ct_fn_,
                           c10::toString(s.scalar_type()));
    if (!s.device().is_cpu() || s.layout() != at::kStrided)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: a generator state is a dense CPU tensor (this one is on %s)",
                           ct_fn_, s.device().str().c_str());
    std::lock_guard<std::mutex> lock(g->g.mutex());
    // LibTorch checks the size and contents and leaves the generator as it
    // was when it refuses (c10::Error -> CT_ERR_INVALID_ARGUMENT below).
    try {
      g->g.set_state(s.contiguous());
    } catch (const c10::Error &e) {
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: %s", ct_fn_, e.what_without_backtrace());
    }
    return CT_OK;
  });
}

ct_status ct_generator_device(int32_t *device_type, int32_t *device_index, const ct_generator *g) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(device_type);
    CT_CHECK_NOT_NULL(device_index);
    CT_CHECK_NOT_NULL(g);
    const c10::Device d = g->g.device();
    *device_type = ct::device_type_code(d.type());
    *device_index = d.has_index() ? d.index() : -1;
    return CT_OK;
  });
}

ct_status ct_value_from_generator(ct_value **out, const ct_generator *g) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(g);
    *out = ct::new_value(c10::IValue(g->g));
    return CT_OK;
  });
}

}  // extern "C"
