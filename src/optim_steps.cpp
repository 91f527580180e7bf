// The optimizers' algorithms: torch.optim's _single_tensor_* steps of SGD,
// Adam/AdamW, RMSprop and Adagrad for one parameter, in the same ATen calls
// (per LibTorch version where torch.optim's own code changed).
#include "optim.h"
#include "torch_version.h"

#include <ATen/ATen.h>

#include <cmath>

namespace ct::optim {

namespace {
const char *algo_name(const ct_optimizer *o) { return o->info->name; }
}  // namespace

// ---- the algorithms: torch.optim's _single_tensor_* step for one parameter ----

// "step" is a 0-dim tensor (torch >= 1.12) or, in older checkpoints, a number.
double advance_step(Dict &st) {
  auto it = st.find("step");  // load_state_dict refuses states without a valid one
  if (it == st.end() || !(it->value().isTensor() || it->value().isInt() || it->value().isDouble()))
    ct::raise(CT_ERR_INVALID_ARGUMENT, "the state has no valid 'step' (KeyError: 'step')");
  IValue s = it->value();
  if (s.isTensor()) {
    at::Tensor t = s.toTensor();
    t.add_(1);
    return t.item<double>();
  }
  double next = number(s) + 1;
  st.insert_or_assign("step", s.isInt() ? IValue(int64_t(next)) : IValue(next));
  return next;
}

at::Tensor state_tensor(const char *func, const ct_optimizer *o, const Dict &st, const char *key,
                        size_t index) {
  auto it = st.find(key);
  if (it == st.end() || !it->value().isTensor())
    ct::raise(CT_ERR_INVALID_ARGUMENT,
              "%s: %s's state of parameter %zu has no tensor '%s' (its options changed after "
              "the state was made?)",
              func, algo_name(o), index, key);
  return it->value().toTensor();
}

at::Tensor real_view(const at::Tensor &t) { return t.is_complex() ? at::view_as_real(t) : t; }

void sgd_step(const Dict &opt, const at::Tensor &p, at::Tensor grad, Dict &st) {
  double lr = get_number(opt, "lr"), momentum = get_number(opt, "momentum");
  double dampening = get_number(opt, "dampening"), wd = get_number(opt, "weight_decay");
  if (wd != 0) grad = grad.add(p, wd);
  if (momentum != 0) {
    auto it = st.find("momentum_buffer");
    at::Tensor buf;
    if (it == st.end() || !it->value().isTensor()) {
      buf = grad.detach().clone();
      st.insert_or_assign("momentum_buffer", buf);
    } else {
      buf = it->value().toTensor();
      buf.mul_(momentum).add_(grad, 1 - dampening);
    }
    grad = get_bool(opt, "nesterov") ? grad.add(buf, momentum) : buf;
  }
#if !CT_TORCH_AT_LEAST(2, 0)
  else {
    st.insert_or_assign("momentum_buffer", IValue());  // torch 1.x keeps a None buffer
  }
#endif
  p.add_(grad, -lr);
}

void adam_step(const char *func, const ct_optimizer *o, const Dict &opt, at::Tensor p,
               at::Tensor grad, Dict &st, size_t index) {
  double lr = get_number(opt, "lr"), eps = get_number(opt, "eps");
  double wd = get_number(opt, "weight_decay");
  auto b = opt.at("betas");
  std::vector<IValue> bv = b.isTuple() ? b.toTupleRef().elements().vec() : b.toListRef().vec();
  double beta1 = number(bv[0]), beta2 = number(bv[1]);
  bool amsgrad = get_bool(opt, "amsgrad");
  bool decoupled = o->info->algo == Algo::AdamW || get_bool(opt, "decoupled_weight_decay");
  if (st.size() == 0) {
    st.insert_or_assign("step", new_step());
    st.insert_or_assign("exp_avg", at::zeros_like(p, at::MemoryFormat::Preserve));
    st.insert_or_assign("exp_avg_sq", at::zeros_like(p, at::MemoryFormat::Preserve));
    if (amsgrad)
      st.insert_or_assign("max_exp_avg_sq", at::zeros_like(p, at::MemoryFormat::Preserve));
  }
  at::Tensor exp_avg = state_tensor(func, o, st, "exp_avg", index);
  at::Tensor exp_avg_sq = state_tensor(func, o, st, "exp_avg_sq", index);
  at::Tensor max_sq = amsgrad ? state_tensor(func, o, st, "max_exp_avg_sq", index) : at::Tensor();
  double step = advance_step(st);
  if (wd != 0) {
    if (decoupled)
      p.mul_(1 - lr * wd);
    else
      grad = grad.add(p, wd);
  }
  grad = real_view(grad), exp_avg = real_view(exp_avg), exp_avg_sq = real_view(exp_avg_sq);
  p = real_view(p);
  if (amsgrad) max_sq = real_view(max_sq);
#if CT_TORCH_AT_LEAST(2, 0)
  exp_avg.lerp_(grad, 1 - beta1);
#else
  exp_avg.mul_(beta1).add_(grad, 1 - beta1);
#endif
  exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
  double bias_correction1 = 1 - std::pow(beta1, step);
  double bias_correction2 = 1 - std::pow(beta2, step);
  double step_size = lr / bias_correction1;
#if CT_TORCH_AT_LEAST(2, 0)
  double bias_correction2_sqrt = std::pow(bias_correction2, 0.5);
#else
  double bias_correction2_sqrt = std::sqrt(bias_correction2);
#endif
  at::Tensor denom;
  if (amsgrad) {
    at::maximum_out(max_sq, max_sq, exp_avg_sq);
    denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps);
  } else {
    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps);
  }
  p.addcdiv_(exp_avg, denom, -step_size);
}

void rmsprop_step(const char *func, const ct_optimizer *o, const Dict &opt, at::Tensor p,
                  at::Tensor grad, Dict &st, size_t index) {
  double lr = get_number(opt, "lr"), alpha = get_number(opt, "alpha");
  double eps = get_number(opt, "eps"), wd = get_number(opt, "weight_decay");
  double momentum = get_number(opt, "momentum");
  bool centered = get_bool(opt, "centered");
  if (st.size() == 0) {
#if CT_TORCH_AT_LEAST(2, 0)
    st.insert_or_assign("step", new_step());
#else
    st.insert_or_assign("step", IValue(int64_t(0)));
#endif
    st.insert_or_assign("square_avg", at::zeros_like(p, at::MemoryFormat::Preserve));
    if (momentum > 0)
      st.insert_or_assign("momentum_buffer", at::zeros_like(p, at::MemoryFormat::Preserve));
    if (centered) st.insert_or_assign("grad_avg", at::zeros_like(p, at::MemoryFormat::Preserve));
  }
  at::Tensor square_avg = state_tensor(func, o, st, "square_avg", index);
  at::Tensor grad_avg = centered ? state_tensor(func, o, st, "grad_avg", index) : at::Tensor();
  at::Tensor buf =
      momentum > 0 ? state_tensor(func, o, st, "momentum_buffer", index) : at::Tensor();
  advance_step(st);
  if (wd != 0) grad = grad.add(p, wd);
  p = real_view(p), grad = real_view(grad), square_avg = real_view(square_avg);
  square_avg.mul_(alpha).addcmul_(grad, grad, 1 - alpha);
  at::Tensor avg;
  if (centered) {
    grad_avg = real_view(grad_avg);
#if CT_TORCH_AT_LEAST(2, 0)
    grad_avg.lerp_(grad, 1 - alpha);
#else
    grad_avg.mul_(alpha).add_(grad, 1 - alpha);
#endif
    avg = square_avg.addcmul(grad_avg, grad_avg, -1).sqrt_();
  } else {
    avg = square_avg.sqrt();
  }
  avg = avg.add_(eps);
  if (momentum > 0) {
    buf = real_view(buf);
    buf.mul_(momentum).addcdiv_(grad, avg);
    p.add_(buf, -lr);
  } else {
    p.addcdiv_(grad, avg, -lr);
  }
}

void adagrad_step(const char *func, const ct_optimizer *o, const Dict &opt, at::Tensor p,
                  at::Tensor grad, Dict &st, size_t index) {
  double lr = get_number(opt, "lr"), lr_decay = get_number(opt, "lr_decay");
  double eps = get_number(opt, "eps"), wd = get_number(opt, "weight_decay");
  at::Tensor sum = state_tensor(func, o, st, "sum", index);
  if (st.find("step") == st.end())
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: adagrad's state of parameter %zu has no 'step'", func,
              index);
  double step = advance_step(st);
  if (wd != 0) grad = grad.add(p, wd);
  double clr = lr / (1 + (step - 1) * lr_decay);
  p = real_view(p), grad = real_view(grad), sum = real_view(sum);
  sum.addcmul_(grad, grad, 1);
  at::Tensor std_ = sum.sqrt().add_(eps);
  p.addcdiv_(grad, std_, -clr);
}

void step_all(const char *func, ct_optimizer *o) {
  at::NoGradGuard no_grad;
  size_t index = 0;
  for (auto &g : o->groups) {
    bool maximize = get_bool(g.options, "maximize");
    for (size_t i = 0; i < g.params.size(); i++, index++) {
      const at::Tensor &p = g.params[i];
      const at::Tensor &pg = p.grad();
      if (!pg.defined()) continue;
      if (pg.is_sparse())
        ct::raise(CT_ERR_NOT_SUPPORTED, "%s: %s does not support sparse gradients (parameter %zu)",
                  func, algo_name(o), index);
      at::Tensor grad = maximize ? -pg : pg;
      Dict &st = g.state[i];
      switch (o->info->algo) {
        case Algo::SGD: sgd_step(g.options, p, grad, st); break;
        case Algo::Adam:
        case Algo::AdamW: adam_step(func, o, g.options, p, grad, st, index); break;
        case Algo::RMSprop: rmsprop_step(func, o, g.options, p, grad, st, index); break;
        case Algo::Adagrad: adagrad_step(func, o, g.options, p, grad, st, index); break;
      }
    }
  }
}

}  // namespace ct::optim
