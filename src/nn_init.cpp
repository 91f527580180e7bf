// torch.nn.init in C++ (ct_tensor_nn_init): each initializer with torch's
// formula, in torch's order of operations, so that the same seed gives the
// same numbers; the layers of nn_layers.cpp initialize their parameters here.
#include "nn.h"
#include "torch_version.h"

#include <cmath>
#include <algorithm>
#include <functional>

namespace ct {
namespace nn {

using Gen = c10::optional<at::Generator>;

Fans fan_in_and_fan_out(const at::Tensor &t) {
  if (t.dim() < 2)
    ct::raise(CT_ERR_INVALID_ARGUMENT,
              "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(const std::string &nl, c10::optional<double> param) {
  for (const char *linear : {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                             "conv_transpose2d", "conv_transpose3d", "sigmoid"})
    if (nl == linear) return 1;
  if (nl == "tanh") return 5.0 / 3;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") {
    double slope = param ? *param : 0.01;
    return std::sqrt(2.0 / (1 + std::pow(slope, 2)));
  }
  if (nl == "selu") return 3.0 / 4;
  ct::raise(CT_ERR_INVALID_ARGUMENT, "Unsupported nonlinearity %s", nl.c_str());
}

void uniform(at::Tensor &t, double a, double b, Gen g) {
  at::NoGradGuard no_grad;
  t.uniform_(a, b, g);
}

void normal(at::Tensor &t, double mean, double std, Gen g) {
  at::NoGradGuard no_grad;
  t.normal_(mean, std, g);
}

namespace {

int64_t correct_fan(const at::Tensor &t, std::string mode) {
  for (char &c : mode) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (mode != "fan_in" && mode != "fan_out")
    ct::raise(CT_ERR_INVALID_ARGUMENT, "Mode %s not supported, please use one of fan_in, fan_out",
              mode.c_str());
  Fans f = fan_in_and_fan_out(t);
  return mode == "fan_in" ? f.in : f.out;
}

bool has_zero_size(const at::Tensor &t) {
  for (int64_t s : t.sizes())
    if (s == 0) return true;
  return false;
}

double kaiming_std(const at::Tensor &t, double a, const std::string &mode, const std::string &nl) {
  int64_t fan = correct_fan(t, mode);
  double gain = calculate_gain(nl, a);
  return gain / std::sqrt(static_cast<double>(fan));
}

double xavier_std(const at::Tensor &t, double gain) {
  Fans f = fan_in_and_fan_out(t);
  return gain * std::sqrt(2.0 / static_cast<double>(f.in + f.out));
}

#if CT_TORCH_AT_LEAST(2, 12)
// torch.nn.init's newer trunc_normal_ (2.15 checked; 2.11 has the one below):
// rejection sampling, from a normal when the interval holds more than 30% of
// the mass, else from a uniform over [a, b] accepted by the density.
void trunc_normal(at::Tensor &t, double mean, double std, double a, double b, Gen g) {
  if (t.is_meta()) return;
  auto norm_cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  at::NoGradGuard no_grad;
  double p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std);
  if (p > 0.3) {
    auto as_dtype = at::TensorOptions().dtype(t.scalar_type());
    double lo = at::scalar_tensor(a, as_dtype).item<double>();
    double hi = at::scalar_tensor(b, as_dtype).item<double>();
    at::Tensor result = t.normal_(mean, std, g);
    while (true) {
      at::Tensor mask = at::bitwise_or(result.lt(lo), result.gt(hi));
      if (!mask.any().item<bool>()) break;
      result = at::where(mask, at::empty_like(result).normal_(mean, std, g), result);
    }
    if (!result.is_same(t)) t.copy_(result);
    return;
  }
  double mode = std::max(a, std::min(mean, b));
  double log_peak = -0.5 * std::pow((mode - mean) / std, 2);
  at::Tensor cand = at::empty_like(t), accept = at::empty_like(t);
  t.uniform_(a, b, g);
  cand.copy_(t);
  cand.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak);
  at::Tensor pending = accept.uniform_(0, 1, g).log_().gt(cand);
  if (!pending.any().item<bool>()) return;
  at::Tensor result = t;
  while (true) {
    cand.uniform_(a, b, g);
    result = at::where(pending, cand, result);
    cand.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak);
    pending = at::where(pending, accept.uniform_(0, 1, g).log_().gt(cand), pending);
    if (!pending.any().item<bool>()) break;
  }
  t.copy_(result);
}
#else
// torch.nn.init's trunc_normal_ up to 2.11: the inverse CDF of a uniform.
void trunc_normal(at::Tensor &t, double mean, double std, double a, double b, Gen g) {
  auto norm_cdf = [](double x) { return (1. + std::erf(x / std::sqrt(2.))) / 2.; };
  at::NoGradGuard no_grad;
  double l = norm_cdf((a - mean) / std), u = norm_cdf((b - mean) / std);
  t.uniform_(2 * l - 1, 2 * u - 1, g);
  t.erfinv_();
  t.mul_(std * std::sqrt(2.));
  t.add_(mean);
  t.clamp_(a, b);
}
#endif

void orthogonal(at::Tensor &t, double gain, Gen g) {
  if (t.dim() < 2)
    ct::raise(CT_ERR_INVALID_ARGUMENT, "Only tensors with 2 or more dimensions are supported");
  if (t.numel() == 0) return;
  at::NoGradGuard no_grad;
  int64_t rows = t.size(0), cols = t.numel() / rows;
  at::Tensor flat = at::empty({rows, cols}, t.options()).normal_(0, 1, g);
  if (rows < cols) flat.t_();
  auto qr = at::linalg_qr(flat);
  at::Tensor q = std::get<0>(qr), r = std::get<1>(qr);
  at::Tensor ph = at::diag(r, 0).sign();
  q.mul_(ph);
  if (rows < cols) q.t_();
  t.view_as(q).copy_(q);
  t.mul_(gain);
}

void eye(at::Tensor &t) {
  if (t.dim() != 2) ct::raise(CT_ERR_INVALID_ARGUMENT, "Only tensors with 2 dimensions are supported");
  at::NoGradGuard no_grad;
  at::eye_out(t, t.size(0), t.size(1));
}

void dirac(at::Tensor &t, int64_t groups) {
  const int64_t dims = t.dim();
  if (dims < 3 || dims > 5)
    ct::raise(CT_ERR_INVALID_ARGUMENT, "Only tensors with 3, 4, or 5 dimensions are supported");
  if (groups <= 0 || t.size(0) % groups != 0)
    ct::raise(CT_ERR_INVALID_ARGUMENT, "dim 0 must be divisible by groups");
  at::NoGradGuard no_grad;
  int64_t per_group = t.size(0) / groups, min_dim = std::min(per_group, t.size(1));
  t.zero_();
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t d = 0; d < min_dim; ++d) {
      std::vector<at::indexing::TensorIndex> at_{g * per_group + d, d};
      for (int64_t k = 2; k < dims; ++k) at_.emplace_back(t.size(k) / 2);
      t.index_put_(at_, 1);
    }
}

// One initializer: its signature and what it does with the bound arguments.
struct Method {
  const char *signature;
  std::function<void(at::Tensor &, const Args &)> run;
};

const std::vector<std::pair<std::string, Method>> &methods() {
  static const std::vector<std::pair<std::string, Method>> table = {
      {"uniform_",
       {"init::uniform_(float a=0., float b=1., *, Generator? generator=None) -> ()",
        [](at::Tensor &t, const Args &a) { uniform(t, a.d("a"), a.d("b"), a.generator()); }}},
      {"normal_",
       {"init::normal_(float mean=0., float std=1., *, Generator? generator=None) -> ()",
        [](at::Tensor &t, const Args &a) {
          normal(t, a.d("mean"), a.d("std"), a.generator());
        }}},
      {"trunc_normal_",
       {"init::trunc_normal_(float mean=0., float std=1., float a=-2., float b=2., *, "
        "Generator? generator=None) -> ()",
        [](at::Tensor &t, const Args &a) {
          trunc_normal(t, a.d("mean"), a.d("std"), a.d("a"), a.d("b"), a.generator());
        }}},
      {"constant_",
       {"init::constant_(float val) -> ()",
        [](at::Tensor &t, const Args &a) {
          at::NoGradGuard no_grad;
          t.fill_(a.d("val"));
        }}},
      {"ones_",
       {"init::ones_() -> ()",
        [](at::Tensor &t, const Args &) {
          at::NoGradGuard no_grad;
          t.fill_(1);
        }}},
      {"zeros_",
       {"init::zeros_() -> ()",
        [](at::Tensor &t, const Args &) {
          at::NoGradGuard no_grad;
          t.zero_();
        }}},
      {"eye_", {"init::eye_() -> ()", [](at::Tensor &t, const Args &) { eye(t); }}},
      {"dirac_",
       {"init::dirac_(int groups=1) -> ()",
        [](at::Tensor &t, const Args &a) { dirac(t, a.i("groups")); }}},
      {"xavier_uniform_",
       {"init::xavier_uniform_(float gain=1., *, Generator? generator=None) -> ()",
        [](at::Tensor &t, const Args &a) { xavier_uniform(t, a.d("gain"), a.generator()); }}},
      {"xavier_normal_",
       {"init::xavier_normal_(float gain=1., *, Generator? generator=None) -> ()",
        [](at::Tensor &t, const Args &a) {
          normal(t, 0., xavier_std(t, a.d("gain")), a.generator());
        }}},
      {"kaiming_uniform_",
       {"init::kaiming_uniform_(float a=0., str mode=\"fan_in\", str nonlinearity=\"leaky_relu\", "
        "*, Generator? generator=None) -> ()",
        [](at::Tensor &t, const Args &a) {
          kaiming_uniform(t, a.d("a"), a.s("mode"), a.s("nonlinearity"), a.generator());
        }}},
      {"kaiming_normal_",
       {"init::kaiming_normal_(float a=0., str mode=\"fan_in\", str nonlinearity=\"leaky_relu\", "
        "*, Generator? generator=None) -> ()",
        [](at::Tensor &t, const Args &a) {
          if (has_zero_size(t)) return;
          normal(t, 0., kaiming_std(t, a.d("a"), a.s("mode"), a.s("nonlinearity")),
                 a.generator());
        }}},
      {"orthogonal_",
       {"init::orthogonal_(float gain=1., *, Generator? generator=None) -> ()",
        [](at::Tensor &t, const Args &a) { orthogonal(t, a.d("gain"), a.generator()); }}},
  };
  return table;
}

// Parsed signatures, made once (parsing is not free; the table is constant).
const c10::FunctionSchema &signature(size_t i) {
  static const std::vector<c10::FunctionSchema> parsed = [] {
    std::vector<c10::FunctionSchema> v;
    for (const auto &m : methods()) v.push_back(parse_signature(m.second.signature));
    return v;
  }();
  return parsed[i];
}

}  // namespace

void kaiming_uniform(at::Tensor &t, double a, const std::string &mode, const std::string &nl,
                     Gen g) {
  if (has_zero_size(t)) return;
  double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nl);
  uniform(t, -bound, bound, g);
}

void xavier_uniform(at::Tensor &t, double gain, Gen g) {
  double a = std::sqrt(3.0) * xavier_std(t, gain);
  uniform(t, -a, a, g);
}

void linear_reset(at::Tensor &weight, at::Tensor &bias) {
  kaiming_uniform(weight, std::sqrt(5.0));
  if (bias.defined()) {
    int64_t fan_in = fan_in_and_fan_out(weight).in;
    double bound = fan_in > 0 ? 1 / std::sqrt(static_cast<double>(fan_in)) : 0;
    uniform(bias, -bound, bound);
  }
}

}  // namespace nn
}  // namespace ct

extern "C" {

ct_status ct_tensor_nn_init(ct_tensor *t, const char *method, const ct_value *const *args,
                            size_t n, const char *const *kwnames, const ct_value *const *kwvalues,
                            size_t nkw) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(t);
    CT_CHECK_NOT_NULL(method);
    CT_CHECK_ARG(t->t.defined(), "%s: tensor is undefined", ct_fn_);
    const auto &table = ct::nn::methods();
    for (size_t i = 0; i < table.size(); ++i) {
      if (table[i].first != method) continue;
      std::unique_ptr<ct::nn::Args> a;
      if (ct_status st = ct::nn::bind(ct_fn_, ct::nn::signature(i), args, n, kwnames, kwvalues,
                                      nkw, &a))
        return st;
      table[i].second.run(t->t, *a);
      return CT_OK;
    }
    std::string known;
    for (const auto &m : table) known += (known.empty() ? "" : ", ") + m.first;
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: unknown initializer '%s' (known: %s)",
                         ct_fn_, method, known.c_str());
  });
}

ct_status ct_tensor_nn_init_methods(ct_value **out) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    c10::impl::GenericDict d(c10::StringType::get(), c10::StringType::get());
    const auto &table = ct::nn::methods();
    for (size_t i = 0; i < table.size(); ++i) d.insert(table[i].first, table[i].second.signature);
    *out = ct::new_value(d);
    return CT_OK;
  });
}

}  // extern "C"
