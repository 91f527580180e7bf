// Optimizers (ct_optimizer_*): torch.optim's SGD, Adam, AdamW, RMSprop and
// Adagrad written with the same ATen calls as torch.optim's single-tensor
// code, so that steps, options and the state_dict layout are torch's own.
#include "optim.h"
#include "torch_version.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/variable.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_set>

namespace {

enum class Algo { SGD, Adam, AdamW, RMSprop, Adagrad };

// How an option's value is checked.
enum class Kind {
  NonNegative,   // a number >= 0 (torch: "Invalid ... value")
  Number,        // any finite or infinite number
  Bool,          // True / False
  OptionalBool,  // None / True / False (foreach)
  FalseOnly,     // False (differentiable, capturable); True is not supported
  NoneOrFalse,   // None / False (fused)
  Betas,         // a pair of numbers in [0, 1)
};

struct OptionSpec {
  const char *name;
  Kind kind;
  const char *what;  // torch's word in "Invalid <what>: <value>"
};

using c10::IValue;
using Dict = c10::impl::GenericDict;

Dict new_dict() { return Dict(c10::StringType::get(), c10::AnyType::get()); }

IValue betas(double b1, double b2) {
  return c10::ivalue::Tuple::create(std::vector<IValue>{IValue(b1), IValue(b2)});
}

// The options each algorithm has, in torch's order, with torch's defaults.
struct AlgoInfo {
  Algo algo;
  const char *name;
  std::vector<OptionSpec> specs;
  std::vector<IValue> defaults;  // parallel to specs
};

const std::vector<AlgoInfo> &algorithms() {
  static const std::vector<AlgoInfo> all = [] {
    const OptionSpec lr{"lr", Kind::NonNegative, "learning rate"};
    const OptionSpec eps{"eps", Kind::NonNegative, "epsilon value"};
    const OptionSpec wd{"weight_decay", Kind::NonNegative, "weight_decay value"};
    const OptionSpec momentum{"momentum", Kind::NonNegative, "momentum value"};
    const OptionSpec maximize{"maximize", Kind::Bool, nullptr};
    const OptionSpec foreach{"foreach", Kind::OptionalBool, nullptr};
    const OptionSpec differentiable{"differentiable", Kind::FalseOnly, nullptr};
    const OptionSpec capturable{"capturable", Kind::FalseOnly, nullptr};
    const OptionSpec fused{"fused", Kind::NoneOrFalse, nullptr};
    const IValue none, no(false);
    std::vector<OptionSpec> adam_specs{lr,
                                       eps,
                                       {"betas", Kind::Betas, nullptr},
                                       wd,
                                       {"amsgrad", Kind::Bool, nullptr},
                                       maximize,
                                       foreach,
                                       capturable,
                                       differentiable,
                                       fused,
                                       {"decoupled_weight_decay", Kind::Bool, nullptr}};
    auto adam_defaults = [&](double weight_decay, bool decoupled) {
#if CT_TORCH_AT_LEAST(2, 0)
      const IValue fused_default = none;
#else
      const IValue fused_default = no;  // torch 1.13's Adam says fused=False
#endif
      return std::vector<IValue>{
          IValue(1e-3), IValue(1e-8), betas(0.9, 0.999), IValue(weight_decay), no, no, none,
          no,           no,           fused_default,     IValue(decoupled)};
    };
    return std::vector<AlgoInfo>{
        {Algo::SGD,
         "sgd",
         {lr,
          momentum,
          {"dampening", Kind::Number, nullptr},
          wd,
          {"nesterov", Kind::Bool, nullptr},
          maximize,
          foreach,
          differentiable,
          fused},
         {IValue(1e-3), IValue(0.0), IValue(0.0), IValue(0.0), no, no, none, no, none}},
        {Algo::Adam, "adam", adam_specs, adam_defaults(0.0, false)},
        {Algo::AdamW, "adamw", adam_specs, adam_defaults(1e-2, true)},
        {Algo::RMSprop,
         "rmsprop",
         {lr,
          momentum,
          {"alpha", Kind::NonNegative, "alpha value"},
          eps,
          {"centered", Kind::Bool, nullptr},
          wd,
          capturable,
          foreach,
          maximize,
          differentiable},
         {IValue(1e-2), IValue(0.0), IValue(0.99), IValue(1e-8), no, IValue(0.0), no, none, no,
          no}},
        {Algo::Adagrad,
         "adagrad",
         {lr,
          {"lr_decay", Kind::NonNegative, "lr_decay value"},
          eps,
          wd,
          {"initial_accumulator_value", Kind::NonNegative, "initial_accumulator_value value"},
          foreach,
          maximize,
          differentiable,
          fused},
         {IValue(1e-2), IValue(0.0), IValue(1e-10), IValue(0.0), IValue(0.0), none, no, no, none}},
    };
  }();
  return all;
}

const OptionSpec *find_spec(const AlgoInfo &a, const std::string &name) {
  for (const auto &s : a.specs)
    if (name == s.name) return &s;
  return nullptr;
}

bool is_number(const IValue &v) { return v.isDouble() || v.isInt(); }
double number(const IValue &v) { return v.isDouble() ? v.toDouble() : double(v.toInt()); }

std::string known_names(const AlgoInfo &a) {
  std::string s;
  for (const auto &spec : a.specs) s += (s.empty() ? "" : ", ") + std::string(spec.name);
  return s;
}

// Checks one option's value; throws ct::Error naming it.
void check_option(const char *func, const AlgoInfo &a, const OptionSpec &s, const IValue &v) {
  auto bad_type = [&](const char *want) {
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: %s option '%s' must be %s, not %s", func, a.name,
              s.name, want, v.tagKind().c_str());
  };
  switch (s.kind) {
    case Kind::NonNegative:
    case Kind::Number:
      if (!is_number(v)) bad_type("a number");
      if (s.kind == Kind::NonNegative && !(number(v) >= 0.0))
        ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: Invalid %s: %g", func, s.what, number(v));
      return;
    case Kind::Bool:
      if (!v.isBool()) bad_type("a bool");
      return;
    case Kind::OptionalBool:
      if (!v.isNone() && !v.isBool()) bad_type("None or a bool");
      return;
    case Kind::FalseOnly:
    case Kind::NoneOrFalse:
      if (s.kind == Kind::NoneOrFalse && v.isNone()) return;
      if (!v.isBool()) bad_type(s.kind == Kind::FalseOnly ? "a bool" : "None or a bool");
      if (v.toBool())
        ct::raise(CT_ERR_NOT_SUPPORTED,
                  "%s: %s=True is not supported (ctorch's %s is the plain one)", func, s.name,
                  a.name);
      return;
    case Kind::Betas: {
      std::vector<IValue> items;
      if (v.isTuple())
        items = v.toTupleRef().elements().vec();
      else if (v.isList())
        items = v.toListRef().vec();
      else
        bad_type("a pair of numbers");
      if (items.size() != 2 || !is_number(items[0]) || !is_number(items[1]))
        bad_type("a pair of numbers");
      for (int i = 0; i < 2; i++) {
        double b = number(items[i]);
        if (!(b >= 0.0 && b < 1.0))
          ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: Invalid beta parameter at index %d: %g", func, i,
                    b);
      }
      return;
    }
  }
}

double get_number(const Dict &g, const char *name) { return number(g.at(name)); }
bool get_bool(const Dict &g, const char *name) { return g.at(name).toBool(); }

// Checks what spans options (nesterov's needs), after each is checked alone.
void check_group(const char *func, const AlgoInfo &a, const Dict &g) {
  for (const auto &s : a.specs) check_option(func, a, s, g.at(s.name));
  if (a.algo == Algo::SGD && get_bool(g, "nesterov") &&
      (get_number(g, "momentum") <= 0 || get_number(g, "dampening") != 0))
    ct::raise(CT_ERR_INVALID_ARGUMENT,
              "%s: Nesterov momentum requires a momentum and zero dampening", func);
}

}  // namespace

struct ct_optimizer {
  const AlgoInfo *info;
  Dict defaults = new_dict();  // every option: torch's defaults overridden by ct_optimizer_new's
  struct Group {
    std::vector<at::Tensor> params;
    Dict options = new_dict();
    std::vector<Dict> state;  // per parameter; empty until its first step
  };
  std::vector<Group> groups;
  mutable std::mutex mu;
};

namespace {

const char *algo_name(const ct_optimizer *o) { return o->info->name; }

// A complete option dict: `base` with `options` (a Dict[str, Any] value, may
// be null) applied; unknown names refused.
Dict merged_options(const char *func, const AlgoInfo &a, const Dict &base,
                    const ct_value *options) {
  Dict g = base.copy();
  if (!options) return g;
  if (!options->v.isGenericDict())
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: options must be a dict of names to values, not %s",
              func, options->v.tagKind().c_str());
  for (const auto &e : options->v.toGenericDict()) {
    if (!e.key().isString())
      ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: option names must be strings, not %s", func,
                e.key().tagKind().c_str());
    const std::string &name = e.key().toStringRef();
    if (name == "params")
      ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: pass parameters as params, not as an option", func);
    if (!find_spec(a, name))
      ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: %s has no option '%s' (it has: %s)", func, a.name,
                name.c_str(), known_names(a).c_str());
    g.insert_or_assign(name, e.value());
  }
  check_group(func, a, g);
  return g;
}

std::vector<at::Tensor> checked_params(const char *func, const ct_optimizer *o,
                                       const ct_tensor *const *params, size_t n) {
  if (n == 0) ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: optimizer got an empty parameter list", func);
  if (!params) ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: argument 'params' is NULL", func);
  std::unordered_set<const void *> seen;
  if (o)
    for (const auto &g : o->groups)
      for (const auto &p : g.params) seen.insert(p.unsafeGetTensorImpl());
  std::vector<at::Tensor> out;
  out.reserve(n);
  for (size_t i = 0; i < n; i++) {
    if (!params[i]) ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: params[%zu] is NULL", func, i);
    const at::Tensor &t = params[i]->t;
    if (!t.defined())
      ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: params[%zu] is an undefined tensor", func, i);
    if (!t.is_leaf())
      ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: can't optimize a non-leaf Tensor (params[%zu])", func,
                i);
    if (!seen.insert(t.unsafeGetTensorImpl()).second)
      ct::raise(CT_ERR_INVALID_ARGUMENT,
                "%s: params[%zu] appears twice (some parameters appear in more than one parameter "
                "group, or twice in one)",
                func, i);
    out.push_back(t);
  }
  return out;
}

at::Tensor new_step() { return at::zeros({}, at::TensorOptions().dtype(at::kFloat)); }

// Adagrad's state exists from the start, as in torch.
void init_state(const ct_optimizer *o, ct_optimizer::Group &g) {
  g.state.clear();  // c10::Dict copies share their entries: one new dict each
  for (size_t i = 0; i < g.params.size(); i++) g.state.push_back(new_dict());
  if (o->info->algo != Algo::Adagrad) return;
  double init = get_number(g.options, "initial_accumulator_value");
  for (size_t i = 0; i < g.params.size(); i++) {
    const at::Tensor &p = g.params[i];
    at::Tensor sum = p.is_complex()
                         ? at::full_like(p, c10::Scalar(c10::complex<double>(init, init)),
                                         at::MemoryFormat::Preserve)
                         : at::full_like(p, init, at::MemoryFormat::Preserve);
    g.state[i].insert_or_assign("step", new_step());
    g.state[i].insert_or_assign("sum", sum.detach());
  }
}

void add_group(const char *func, ct_optimizer *o, const ct_tensor *const *params, size_t n,
               const ct_value *options) {
  ct_optimizer::Group g;
  g.params = checked_params(func, o, params, n);
  g.options = merged_options(func, *o->info, o->defaults, options);
  {
    at::NoGradGuard no_grad;
    init_state(o, g);
  }
  o->groups.push_back(std::move(g));
}

// ---- the algorithms: torch.optim's _single_tensor_* step for one parameter ----

// "step" is a 0-dim tensor (torch >= 1.12) or, in older checkpoints, a number.
double advance_step(Dict &st) {
  IValue s = st.at("step");
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

// ---- state_dict ----

const char *const kPerParamState[] = {
    "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer", "square_avg", "grad_avg", "sum"};

bool is_per_param_state(const std::string &key) {
  for (const char *k : kPerParamState)
    if (key == k) return true;
  return false;
}

IValue state_dict(const ct_optimizer *o) {
  Dict state(c10::IntType::get(),
             c10::DictType::create(c10::StringType::get(), c10::AnyType::get()));
  c10::impl::GenericList groups(c10::DictType::create(c10::StringType::get(), c10::AnyType::get()));
  int64_t index = 0;
  for (const auto &g : o->groups) {
    Dict packed = g.options.copy();
    c10::List<int64_t> ids;
    for (size_t i = 0; i < g.params.size(); i++, index++) {
      ids.push_back(index);
      if (g.state[i].size() > 0) state.insert(IValue(index), g.state[i].copy());
    }
    packed.insert_or_assign("params", ids);
    groups.push_back(packed);
  }
  Dict out = new_dict();
  out.insert("state", state);
  out.insert("param_groups", groups);
  return out;
}

IValue dict_get(const char *func, const Dict &d, const char *key) {
  auto it = d.find(key);
  if (it == d.end())
    ct::raise(CT_ERR_INVALID_ARGUMENT,
              "%s: the state_dict has no '%s' (not an optimizer's state_dict)", func, key);
  return it->value();
}

void load_state_dict(const char *func, ct_optimizer *o, const IValue &sd) {
  if (!sd.isGenericDict())
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: the state_dict must be a dict, not %s", func,
              sd.tagKind().c_str());
  Dict top = sd.toGenericDict();
  for (const auto &e : top)
    if (!e.key().isString())
      ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: the state_dict's keys must be strings", func);
  IValue saved_groups = dict_get(func, top, "param_groups");
  IValue saved_state = dict_get(func, top, "state");
  if (!saved_groups.isList())
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: 'param_groups' must be a list, not %s", func,
              saved_groups.tagKind().c_str());
  if (!saved_state.isGenericDict())
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: 'state' must be a dict, not %s", func,
              saved_state.tagKind().c_str());
  auto glist = saved_groups.toListRef();
  if (glist.size() != o->groups.size())
    ct::raise(CT_ERR_INVALID_ARGUMENT,
              "%s: loaded state dict has a different number of parameter groups (%zu, this "
              "optimizer has %zu)",
              func, glist.size(), o->groups.size());
  // Saved index -> (group, position); new options per group.
  std::unordered_map<int64_t, std::pair<size_t, size_t>> where;
  std::vector<Dict> options;
  for (size_t gi = 0; gi < glist.size(); gi++) {
    if (!glist[gi].isGenericDict())
      ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: param_groups[%zu] must be a dict", func, gi);
    Dict saved = glist[gi].toGenericDict();
    IValue ids = dict_get(func, saved, "params");
    std::vector<IValue> idv;
    if (ids.isList()) idv = ids.toListRef().vec();
    if (!ids.isList() || idv.size() != o->groups[gi].params.size())
      ct::raise(CT_ERR_INVALID_ARGUMENT,
                "%s: loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group (group %zu: %zu saved, %zu here)",
                func, gi, idv.size(), o->groups[gi].params.size());
    for (size_t i = 0; i < idv.size(); i++) {
      if (!idv[i].isInt())
        ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: param_groups[%zu]['params'] must hold ints", func,
                  gi);
      if (!where.emplace(idv[i].toInt(), std::make_pair(gi, i)).second)
        ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: parameter index %lld is listed twice", func,
                  (long long)idv[i].toInt());
    }
    Dict g = o->defaults.copy();
    for (const auto &e : saved) {
      if (!e.key().isString())
        ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: param_groups[%zu] has a key that is not a string",
                  func, gi);
      if (e.key().toStringRef() != "params") g.insert_or_assign(e.key(), e.value());
    }
    check_group(func, *o->info, g);
    options.push_back(std::move(g));
  }
  std::vector<std::vector<Dict>> state;
  for (const auto &g : o->groups) {
    state.emplace_back();
    for (size_t i = 0; i < g.params.size(); i++) state.back().push_back(new_dict());
  }
  for (const auto &e : saved_state.toGenericDict()) {
    if (!e.key().isInt())
      ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: 'state' keys must be parameter indices (ints)", func);
    auto at = where.find(e.key().toInt());
    if (at == where.end())
      ct::raise(CT_ERR_INVALID_ARGUMENT,
                "%s: 'state' has an entry for parameter %lld, which no "
                "group lists",
                func, (long long)e.key().toInt());
    if (!e.value().isGenericDict())
      ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: the state of parameter %lld must be a dict", func,
                (long long)e.key().toInt());
    const at::Tensor &p = o->groups[at->second.first].params[at->second.second];
    Dict &dst = state[at->second.first][at->second.second];
    for (const auto &kv : e.value().toGenericDict()) {
      if (!kv.key().isString())
        ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: state keys must be strings", func);
      const std::string &key = kv.key().toStringRef();
      IValue v = kv.value();
      if (v.isTensor()) {
        at::Tensor t = v.toTensor().detach();
        if (key == "step") {
          if (t.numel() != 1)
            ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: 'step' of parameter %lld has %lld elements",
                      func, (long long)e.key().toInt(), (long long)t.numel());
          t = t.clone();
        } else {
          if (is_per_param_state(key) && t.sizes() != p.sizes())
            ct::raise(CT_ERR_INVALID_ARGUMENT,
                      "%s: state '%s' of parameter %lld has shape %s, the parameter %s", func,
                      key.c_str(), (long long)e.key().toInt(), c10::str(t.sizes()).c_str(),
                      c10::str(p.sizes()).c_str());
          t = p.is_floating_point() || p.is_complex()
                  ? t.to(p.device(), p.scalar_type(), false, true)
                  : t.to(p.device(), t.scalar_type(), false, true);
        }
        v = t;
      }
      dst.insert_or_assign(key, v);
    }
  }
  for (size_t gi = 0; gi < o->groups.size(); gi++) {
    o->groups[gi].options = std::move(options[gi]);
    o->groups[gi].state = std::move(state[gi]);
  }
}

ct_optimizer::Group &group_at(const char *func, ct_optimizer *o, size_t group) {
  if (group >= o->groups.size())
    ct::raise(CT_ERR_INDEX, "%s: group %zu out of range (the optimizer has %zu)", func, group,
              o->groups.size());
  return o->groups[group];
}

void set_option(const char *func, ct_optimizer *o, size_t group, const char *name, IValue v) {
  auto &g = group_at(func, o, group);
  if (!std::strcmp(name, "params"))
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: 'params' is not an option", func);
  Dict next = g.options.copy();
  next.insert_or_assign(std::string(name), std::move(v));
  check_group(func, *o->info, next);
  g.options = std::move(next);
}

}  // namespace

std::vector<at::Tensor> ct::optimizer_params(ct_optimizer *o) {
  std::lock_guard<std::mutex> lock(o->mu);
  std::vector<at::Tensor> all;
  for (const auto &g : o->groups) all.insert(all.end(), g.params.begin(), g.params.end());
  return all;
}

void ct::optimizer_step(const char *func, ct_optimizer *o) {
  std::lock_guard<std::mutex> lock(o->mu);
  step_all(func, o);
}

extern "C" {

ct_status ct_optimizer_new(ct_optimizer **out, const char *algorithm,
                           const ct_tensor *const *params, size_t n, const ct_value *options) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = nullptr;
    CT_CHECK_NOT_NULL(algorithm);
    const AlgoInfo *info = nullptr;
    for (const auto &a : algorithms())
      if (!strcasecmp(algorithm, a.name)) info = &a;
    if (!info)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: unknown algorithm '%s' (sgd, adam, adamw, rmsprop, adagrad)",
                           ct_fn_, algorithm);
    auto o = std::make_unique<ct_optimizer>();
    o->info = info;
    Dict defaults = new_dict();
    for (size_t i = 0; i < info->specs.size(); i++)
      defaults.insert(info->specs[i].name, info->defaults[i]);
    o->defaults = merged_options(ct_fn_, *info, defaults, options);
    add_group(ct_fn_, o.get(), params, n, nullptr);
    *out = o.release();
    return CT_OK;
  });
}

void ct_optimizer_free(ct_optimizer *opt) { delete opt; }

ct_status ct_optimizer_add_param_group(ct_optimizer *opt, const ct_tensor *const *params, size_t n,
                                       const ct_value *options) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(opt);
    std::lock_guard<std::mutex> lock(opt->mu);
    add_group(ct_fn_, opt, params, n, options);
    return CT_OK;
  });
}

ct_status ct_optimizer_algorithm(const char **out, const ct_optimizer *opt) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(opt);
    *out = opt->info->name;
    return CT_OK;
  });
}

ct_status ct_optimizer_step(ct_optimizer *opt) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(opt);
    ct::optimizer_step(ct_fn_, opt);
    return CT_OK;
  });
}

ct_status ct_optimizer_zero_grad(ct_optimizer *opt, int32_t set_to_none) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(opt);
    std::lock_guard<std::mutex> lock(opt->mu);
    for (auto &g : opt->groups)
      for (auto &p : g.params) {
        at::Tensor &grad = p.mutable_grad();
        if (!grad.defined()) continue;
        if (set_to_none) {
          grad = at::Tensor();
        } else {
          if (grad.grad_fn())
            grad = grad.detach();
          else
            grad.requires_grad_(false);
          grad.zero_();
        }
      }
    return CT_OK;
  });
}

ct_status ct_optimizer_num_groups(size_t *out, const ct_optimizer *opt) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(opt);
    std::lock_guard<std::mutex> lock(opt->mu);
    *out = opt->groups.size();
    return CT_OK;
  });
}

ct_status ct_optimizer_params(ct_value **out, const ct_optimizer *opt, size_t group) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(opt);
    std::lock_guard<std::mutex> lock(opt->mu);
    const auto &g = group_at(ct_fn_, const_cast<ct_optimizer *>(opt), group);
    *out = ct::new_value(c10::List<at::Tensor>(g.params));
    return CT_OK;
  });
}

ct_status ct_optimizer_options(ct_value **out, const ct_optimizer *opt, size_t group) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(opt);
    std::lock_guard<std::mutex> lock(opt->mu);
    *out = ct::new_value(group_at(ct_fn_, const_cast<ct_optimizer *>(opt), group).options.copy());
    return CT_OK;
  });
}

ct_status ct_optimizer_get(ct_value **out, const ct_optimizer *opt, size_t group,
                           const char *name) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(opt);
    CT_CHECK_NOT_NULL(name);
    std::lock_guard<std::mutex> lock(opt->mu);
    const auto &g = group_at(ct_fn_, const_cast<ct_optimizer *>(opt), group);
    auto it = g.options.find(std::string(name));
    if (it == g.options.end())
      return ct::set_error(CT_ERR_NOT_FOUND, "%s: group %zu has no option '%s'", ct_fn_, group,
                           name);
    *out = ct::new_value(it->value());
    return CT_OK;
  });
}

ct_status ct_optimizer_set(ct_optimizer *opt, size_t group, const char *name,
                           const ct_value *value) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(opt);
    CT_CHECK_NOT_NULL(name);
    CT_CHECK_NOT_NULL(value);
    std::lock_guard<std::mutex> lock(opt->mu);
    set_option(ct_fn_, opt, group, name, value->v);
    return CT_OK;
  });
}

ct_status ct_optimizer_get_double(double *out, const ct_optimizer *opt, size_t group,
                                  const char *name) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(opt);
    CT_CHECK_NOT_NULL(name);
    std::lock_guard<std::mutex> lock(opt->mu);
    const auto &g = group_at(ct_fn_, const_cast<ct_optimizer *>(opt), group);
    auto it = g.options.find(std::string(name));
    if (it == g.options.end())
      return ct::set_error(CT_ERR_NOT_FOUND, "%s: group %zu has no option '%s'", ct_fn_, group,
                           name);
    if (!is_number(it->value()))
      return ct::set_error(CT_ERR_TYPE, "%s: option '%s' is %s, not a number", ct_fn_, name,
                           it->value().tagKind().c_str());
    *out = number(it->value());
    return CT_OK;
  });
}

ct_status ct_optimizer_set_double(ct_optimizer *opt, size_t group, const char *name, double value) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(opt);
    CT_CHECK_NOT_NULL(name);
    std::lock_guard<std::mutex> lock(opt->mu);
    set_option(ct_fn_, opt, group, name, IValue(value));
    return CT_OK;
  });
}

ct_status ct_optimizer_state_dict(ct_value **out, const ct_optimizer *opt) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(opt);
    std::lock_guard<std::mutex> lock(opt->mu);
    *out = ct::new_value(state_dict(opt));
    return CT_OK;
  });
}

ct_status ct_optimizer_load_state_dict(ct_optimizer *opt, const ct_value *state_dict) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(opt);
    CT_CHECK_NOT_NULL(state_dict);
    std::lock_guard<std::mutex> lock(opt->mu);
    at::NoGradGuard no_grad;
    load_state_dict(ct_fn_, opt, state_dict->v);
    return CT_OK;
  });
}

}  // extern "C"
