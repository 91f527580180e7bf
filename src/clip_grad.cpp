// Gradient clipping (ct_clip_grad_norm, ct_clip_grad_value): torch.nn.utils'
// clip_grad_norm_ and clip_grad_value_ over a list of parameters.
#include "internal.h"

#include <ATen/ATen.h>

#include <cmath>

namespace {

// The defined gradients of params; throws on NULL.
std::vector<at::Tensor> gradients(const char *func, const ct_tensor *const *params, size_t n) {
  if (n > 0 && !params) ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: argument 'params' is NULL", func);
  std::vector<at::Tensor> grads;
  for (size_t i = 0; i < n; i++) {
    if (!params[i]) ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: params[%zu] is NULL", func, i);
    const at::Tensor &g = params[i]->t.grad();
    if (g.defined()) grads.push_back(g);
  }
  return grads;
}

}  // namespace

extern "C" {

ct_status ct_clip_grad_norm(ct_tensor **out, const ct_tensor *const *params, size_t n,
                            double max_norm, double norm_type, int32_t error_if_nonfinite) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    if (out) *out = nullptr;
    std::vector<at::Tensor> grads = gradients(ct_fn_, params, n);
    at::NoGradGuard no_grad;
    at::Tensor total;
    if (grads.empty()) {
      total = at::zeros({});
    } else {
      std::vector<at::Tensor> norms;
      norms.reserve(grads.size());
      c10::Device first = grads[0].device();
      for (const auto &g : grads) norms.push_back(at::linalg_vector_norm(g, norm_type).to(first));
      total = at::linalg_vector_norm(at::stack(norms), norm_type);
      if (error_if_nonfinite && !std::isfinite(total.item<double>()))
        return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                             "%s: The total norm of order %g for gradients from `parameters` is "
                             "non-finite, so it cannot be clipped. To disable this error and scale "
                             "the gradients by the non-finite norm anyway, set "
                             "`error_if_nonfinite=False`",
                             ct_fn_, norm_type);
      // max_norm / tensor in Python is tensor.reciprocal() * max_norm.
      at::Tensor coef = at::clamp((total + 1e-6).reciprocal() * max_norm, c10::nullopt, 1.0);
      for (auto &g : grads) g.mul_(coef.to(g.device()));
    }
    if (out) *out = ct::new_tensor(std::move(total));
    return CT_OK;
  });
}

ct_status ct_clip_grad_value(const ct_tensor *const *params, size_t n, double clip_value) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    std::vector<at::Tensor> grads = gradients(ct_fn_, params, n);
    at::NoGradGuard no_grad;
    for (auto &g : grads) g.clamp_(-clip_value, clip_value);
    return CT_OK;
  });
}

}  // extern "C"
