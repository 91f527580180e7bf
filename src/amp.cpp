// Mixed precision: per-thread autocast scopes (ct_autocast_*) on each
// LibTorch version's autocast API, and the loss scaler (ct_grad_scaler_*)
// with torch.amp.GradScaler's rules.
#include "optim.h"
#include "torch_version.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

#include <cmath>
#include <mutex>
#include <unordered_map>

namespace {

// ---- autocast: the same few calls under each version's names ----

bool autocast_enabled(c10::DeviceType d) {
#if CT_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(d);
#else
  return d == c10::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

void set_autocast_enabled(c10::DeviceType d, bool on) {
#if CT_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(d, on);
#else
  if (d == c10::kCUDA)
    at::autocast::set_enabled(on);
  else
    at::autocast::set_cpu_enabled(on);
#endif
}

c10::ScalarType autocast_dtype(c10::DeviceType d) {
#if CT_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(d);
#else
  return d == c10::kCUDA ? at::autocast::get_autocast_gpu_dtype()
                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

void set_autocast_dtype(c10::DeviceType d, c10::ScalarType t) {
#if CT_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(d, t);
#else
  if (d == c10::kCUDA)
    at::autocast::set_autocast_gpu_dtype(t);
  else
    at::autocast::set_autocast_cpu_dtype(t);
#endif
}

struct AutocastSaved {
  c10::DeviceType device;
  bool enabled;
  c10::ScalarType dtype;
  bool cache_enabled;
};
thread_local std::vector<AutocastSaved> autocast_stack;

ct_status autocast_device(const char *func, int32_t device_type, c10::DeviceType *out) {
  if (device_type == CT_DEVICE_CPU)
    *out = c10::kCPU;
  else if (device_type == CT_DEVICE_CUDA)
    *out = c10::kCUDA;
  else
    return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                         "%s: autocast is for CT_DEVICE_CPU or CT_DEVICE_CUDA, not device type %d",
                         func, device_type);
  return CT_OK;
}

// ---- the loss scaler ----

enum class Stage { Ready, Unscaled, Stepped };

struct PerOptimizer {
  Stage stage = Stage::Ready;
  at::Tensor found_inf;  // float32 0-dim on the scaler's device
};

}  // namespace

struct ct_grad_scaler {
  c10::Device device{c10::kCPU};
  bool enabled = true;
  double init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  at::Tensor scale, growth_tracker;  // made lazily, as torch does
  std::unordered_map<const ct_optimizer *, PerOptimizer> per_optimizer;
  mutable std::mutex mu;
};

namespace {

void check_scaler_options(const char *func, double init_scale, double growth_factor,
                          double backoff_factor, int64_t growth_interval) {
  if (!(init_scale > 0) || !std::isfinite(init_scale))
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: init_scale must be a positive finite number, not %g",
              func, init_scale);
  if (!(growth_factor > 1.0) || !std::isfinite(growth_factor))
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: The growth factor must be > 1.0 (got %g)", func,
              growth_factor);
  if (!(backoff_factor > 0 && backoff_factor < 1.0))
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: The backoff factor must be < 1.0 and > 0 (got %g)",
              func, backoff_factor);
  if (growth_interval <= 0)
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: growth_interval must be a positive int (got %lld)",
              func, (long long)growth_interval);
}

void lazy_init(ct_grad_scaler *s) {
  if (s->scale.defined()) return;
  auto f32 = at::TensorOptions().dtype(at::kFloat).device(s->device);
  s->scale = at::full({}, s->init_scale, f32);
  s->growth_tracker = at::zeros({}, f32.dtype(at::kInt));
}

// torch's _unscale_grads_: grads *= inv_scale; found_inf = 1 if any is not finite.
void unscale(const char *func, ct_grad_scaler *s, ct_optimizer *opt, PerOptimizer &st) {
  at::NoGradGuard no_grad;
  lazy_init(s);
  at::Tensor inv_scale = s->scale.to(at::kDouble).reciprocal().to(at::kFloat);
  at::Tensor found_inf = at::zeros({}, s->scale.options());
  std::vector<at::Tensor> cuda_grads;
  for (const at::Tensor &p : ct::optimizer_params(opt)) {
    at::Tensor g = p.grad();
    if (!g.defined()) continue;
    if (g.scalar_type() == at::kHalf)
      ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: Attempting to unscale FP16 gradients.", func);
    // The values themselves, coalesced or not (scaling is linear, as torch's
    // _unscale_grads_ does): a coalesced copy would leave the gradient scaled.
    if (g.is_sparse()) g = g._values();
    if (g.is_cuda()) {
      cuda_grads.push_back(g);
    } else {
      found_inf.logical_or_((~at::isfinite(g)).any().to(found_inf.device()));
      g.mul_(inv_scale.to(g.device()));
    }
  }
  if (!cuda_grads.empty()) {
    // The fused CUDA kernel torch uses (one per device in torch; grads here
    // share the scaler's device or the op refuses them).
    at::Tensor f = at::zeros({}, inv_scale.options().device(cuda_grads[0].device()));
    at::_amp_foreach_non_finite_check_and_unscale_(cuda_grads, f,
                                                   inv_scale.to(cuda_grads[0].device()));
    found_inf.logical_or_(f.to(found_inf.device()));
  }
  st.found_inf = found_inf.to(at::kFloat);
  st.stage = Stage::Unscaled;
}

// torch's _amp_update_scale_ (CPU kernels only exist in newer LibTorch).
void update_scale(ct_grad_scaler *s, const at::Tensor &found_inf) {
  if (s->scale.is_cuda()) {
    at::_amp_update_scale_(s->scale, s->growth_tracker, found_inf, s->growth_factor,
                           s->backoff_factor, s->growth_interval);
    return;
  }
  if (found_inf.item<float>() != 0) {
    s->scale.mul_(s->backoff_factor);
    s->growth_tracker.zero_();
    return;
  }
  int64_t successful = s->growth_tracker.item<int>() + 1;
  if (successful == s->growth_interval) {
    at::Tensor grown = s->scale * s->growth_factor;
    if (std::isfinite(grown.item<float>())) s->scale.copy_(grown);
    s->growth_tracker.zero_();
  } else {
    s->growth_tracker.fill_(successful);
  }
}

double number_entry(const char *func, const c10::impl::GenericDict &d, const char *key) {
  auto it = d.find(key);
  if (it == d.end())
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: the state_dict has no '%s'", func, key);
  const c10::IValue &v = it->value();
  if (v.isDouble()) return v.toDouble();
  if (v.isInt()) return double(v.toInt());
  ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: '%s' must be a number, not %s", func, key,
            v.tagKind().c_str());
}

}  // namespace

extern "C" {

ct_status ct_autocast_push(int32_t device_type, int32_t dtype, int32_t enabled,
                           int32_t cache_enabled) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    c10::DeviceType d = c10::kCPU;
    if (ct_status st = autocast_device(ct_fn_, device_type, &d)) return st;
    c10::ScalarType t = d == c10::kCUDA ? at::kHalf : at::kBFloat16;
    if (dtype != 0) {
      if (dtype != CT_FLOAT16 && dtype != CT_BFLOAT16)
        return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                             "%s: autocast's dtype is CT_FLOAT16 or CT_BFLOAT16 (or 0), not %d",
                             ct_fn_, dtype);
      t = dtype == CT_FLOAT16 ? at::kHalf : at::kBFloat16;
    }
#if !CT_TORCH_AT_LEAST(2, 0)
    if (d == c10::kCPU && t != at::kBFloat16)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: LibTorch %s's CPU autocast supports CT_BFLOAT16 only", ct_fn_,
                           TORCH_VERSION);
#endif
    autocast_stack.push_back(AutocastSaved{d, autocast_enabled(d), autocast_dtype(d),
                                           at::autocast::is_autocast_cache_enabled()});
    set_autocast_enabled(d, enabled != 0);
    set_autocast_dtype(d, t);
    at::autocast::increment_nesting();
    at::autocast::set_autocast_cache_enabled(cache_enabled != 0);
    return CT_OK;
  });
}

ct_status ct_autocast_pop(void) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    if (autocast_stack.empty())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: no autocast was pushed on this thread",
                           ct_fn_);
    AutocastSaved s = autocast_stack.back();
    autocast_stack.pop_back();
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    set_autocast_enabled(s.device, s.enabled);
    set_autocast_dtype(s.device, s.dtype);
    at::autocast::set_autocast_cache_enabled(s.cache_enabled);
    return CT_OK;
  });
}

ct_status ct_autocast_is_enabled(int32_t *out, int32_t device_type) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    c10::DeviceType d = c10::kCPU;
    if (ct_status st = autocast_device(ct_fn_, device_type, &d)) return st;
    *out = autocast_enabled(d) ? 1 : 0;
    return CT_OK;
  });
}

ct_status ct_autocast_dtype(int32_t *out, int32_t device_type) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    c10::DeviceType d = c10::kCPU;
    if (ct_status st = autocast_device(ct_fn_, device_type, &d)) return st;
    *out = ct::from_scalar_type(autocast_dtype(d));
    return CT_OK;
  });
}

ct_status ct_grad_scaler_new(ct_grad_scaler **out, int32_t device_type, double init_scale,
                             double growth_factor, double backoff_factor, int64_t growth_interval,
                             int32_t enabled) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = nullptr;
    c10::DeviceType d = c10::kCPU;
    if (ct_status st = autocast_device(ct_fn_, device_type, &d)) return st;
    check_scaler_options(ct_fn_, init_scale, growth_factor, backoff_factor, growth_interval);
    auto s = std::make_unique<ct_grad_scaler>();
    s->device = c10::Device(d);
    s->enabled = enabled != 0;
    s->init_scale = init_scale;
    s->growth_factor = growth_factor;
    s->backoff_factor = backoff_factor;
    s->growth_interval = growth_interval;
    *out = s.release();
    return CT_OK;
  });
}

void ct_grad_scaler_free(ct_grad_scaler *s) { delete s; }

ct_status ct_grad_scaler_scale(ct_tensor **out, ct_grad_scaler *s, const ct_tensor *t) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = nullptr;
    CT_CHECK_NOT_NULL(s);
    CT_CHECK_NOT_NULL(t);
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->enabled) {
      *out = ct::new_tensor(t->t);
      return CT_OK;
    }
    lazy_init(s);
    *out = ct::new_tensor(t->t * s->scale.to(t->t.device()));
    return CT_OK;
  });
}

ct_status ct_grad_scaler_unscale(ct_grad_scaler *s, ct_optimizer *opt) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(s);
    CT_CHECK_NOT_NULL(opt);
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->enabled) return CT_OK;
    PerOptimizer &st = s->per_optimizer[opt];
    if (st.stage == Stage::Unscaled)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: unscale_() has already been called on this optimizer since the "
                           "last update().",
                           ct_fn_);
    if (st.stage == Stage::Stepped)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: unscale_() is being called after step().",
                           ct_fn_);
    unscale(ct_fn_, s, opt, st);
    return CT_OK;
  });
}

ct_status ct_grad_scaler_step(int32_t *stepped, ct_grad_scaler *s, ct_optimizer *opt) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    if (stepped) *stepped = 0;
    CT_CHECK_NOT_NULL(s);
    CT_CHECK_NOT_NULL(opt);
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->enabled) {
      ct::optimizer_step(ct_fn_, opt);
      if (stepped) *stepped = 1;
      return CT_OK;
    }
    PerOptimizer &st = s->per_optimizer[opt];
    if (st.stage == Stage::Stepped)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: step() has already been called since the last update().", ct_fn_);
    if (st.stage == Stage::Ready) unscale(ct_fn_, s, opt, st);
    bool ok = st.found_inf.item<float>() == 0;
    if (ok) ct::optimizer_step(ct_fn_, opt);
    st.stage = Stage::Stepped;
    if (stepped) *stepped = ok ? 1 : 0;
    return CT_OK;
  });
}

ct_status ct_grad_scaler_update(ct_grad_scaler *s) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(s);
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->enabled) return CT_OK;
    at::Tensor found;
    for (const auto &kv : s->per_optimizer)
      if (kv.second.found_inf.defined())
        found = found.defined() ? found + kv.second.found_inf : kv.second.found_inf;
    if (!found.defined())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: No inf checks were recorded prior to update.", ct_fn_);
    at::NoGradGuard no_grad;
    update_scale(s, found.to(s->scale.device()));
    s->per_optimizer.clear();
    return CT_OK;
  });
}

ct_status ct_grad_scaler_current_scale(double *out, const ct_grad_scaler *s) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(s);
    std::lock_guard<std::mutex> lock(s->mu);
    *out = !s->enabled ? 1.0 : s->scale.defined() ? s->scale.item<double>() : s->init_scale;
    return CT_OK;
  });
}

ct_status ct_grad_scaler_state_dict(ct_value **out, const ct_grad_scaler *s) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = nullptr;
    CT_CHECK_NOT_NULL(s);
    std::lock_guard<std::mutex> lock(s->mu);
    c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
    if (s->enabled) {
      d.insert("scale", s->scale.defined() ? s->scale.item<double>() : s->init_scale);
      d.insert("growth_factor", s->growth_factor);
      d.insert("backoff_factor", s->backoff_factor);
      d.insert("growth_interval", s->growth_interval);
      d.insert("_growth_tracker",
               int64_t(s->growth_tracker.defined() ? s->growth_tracker.item<int>() : 0));
    }
    *out = ct::new_value(d);
    return CT_OK;
  });
}

ct_status ct_grad_scaler_load_state_dict(ct_grad_scaler *s, const ct_value *state_dict) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(s);
    CT_CHECK_NOT_NULL(state_dict);
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->enabled) return CT_OK;
    if (!state_dict->v.isGenericDict())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: the state_dict must be a dict", ct_fn_);
    auto d = state_dict->v.toGenericDict();
    if (d.size() == 0)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: The source state dict is empty, possibly because it was saved "
                           "from a disabled instance of GradScaler.",
                           ct_fn_);
    double scale = number_entry(ct_fn_, d, "scale");
    double growth = number_entry(ct_fn_, d, "growth_factor");
    double backoff = number_entry(ct_fn_, d, "backoff_factor");
    double interval = number_entry(ct_fn_, d, "growth_interval");
    double tracker = number_entry(ct_fn_, d, "_growth_tracker");
    if (interval != std::floor(interval) || tracker != std::floor(tracker) || tracker < 0)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: growth_interval and _growth_tracker must be whole numbers", ct_fn_);
    // Both are int32 in torch's kernels; checked before anything changes.
    if (tracker > 2147483647.0 || !(interval <= 2147483647.0))
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: growth_interval and _growth_tracker must fit in int32 (got %g, %g)",
                           ct_fn_, interval, tracker);
    check_scaler_options(ct_fn_, scale, growth, backoff, int64_t(interval));
    at::NoGradGuard no_grad;
    lazy_init(s);  // before anything changes: it allocates
    s->init_scale = scale;
    s->growth_factor = growth;
    s->backoff_factor = backoff;
    s->growth_interval = int64_t(interval);
    s->scale.fill_(scale);
    s->growth_tracker.fill_(int64_t(tracker));
    return CT_OK;
  });
}

}  // extern "C"
