// Optimizers (ct_optimizer_*): the entry points, the algorithms' options
// (torch's names, defaults and checks) and parameter groups. The steps are in
// optim_steps.cpp, state_dict in optim_state.cpp.
#include "optim.h"
#include "torch_version.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/variable.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_set>

namespace ct::optim {

static IValue betas(double b1, double b2) {
  return c10::ivalue::Tuple::create(std::vector<IValue>{IValue(b1), IValue(b2)});
}

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

// Checks what spans options (nesterov's needs), after each is checked alone,
// and gives the group a betas tuple of its own: the caller's list (or the one
// a state_dict was loaded from) can change later, the optimizer's cannot.
void check_group(const char *func, const AlgoInfo &a, Dict &g) {
  for (const auto &s : a.specs) {
    const IValue &v = g.at(s.name);
    check_option(func, a, s, v);
    if (s.kind == Kind::Betas) {
      const std::vector<IValue> items =
          v.isTuple() ? v.toTupleRef().elements().vec() : v.toListRef().vec();
      g.insert_or_assign(s.name, betas(number(items[0]), number(items[1])));
    }
  }
  if (a.algo == Algo::SGD && get_bool(g, "nesterov") &&
      (get_number(g, "momentum") <= 0 || get_number(g, "dampening") != 0))
    ct::raise(CT_ERR_INVALID_ARGUMENT,
              "%s: Nesterov momentum requires a momentum and zero dampening", func);
}

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

template <class O>  // ct_optimizer or const ct_optimizer
auto &group_at(const char *func, O *o, size_t group) {
  if (group >= o->groups.size())
    ct::raise(CT_ERR_INDEX, "%s: group %zu out of range (the optimizer has %zu)", func, group,
              o->groups.size());
  return o->groups[group];
}

// A group's option by name (get and get_double); CT_ERR_NOT_FOUND when it lacks one.
const IValue &option_at(const char *func, const ct_optimizer *o, size_t group, const char *name) {
  const auto &options = group_at(func, o, group).options;
  auto it = options.find(std::string(name));
  if (it == options.end())
    ct::raise(CT_ERR_NOT_FOUND, "%s: group %zu has no option '%s'", func, group, name);
  return it->value();
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
}  // namespace ct::optim

using namespace ct::optim;

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
    *out = ct::new_value(c10::List<at::Tensor>(group_at(ct_fn_, opt, group).params));
    return CT_OK;
  });
}

ct_status ct_optimizer_options(ct_value **out, const ct_optimizer *opt, size_t group) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(opt);
    std::lock_guard<std::mutex> lock(opt->mu);
    *out = ct::new_value(group_at(ct_fn_, opt, group).options.copy());
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
    *out = ct::new_value(option_at(ct_fn_, opt, group, name));
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
    const IValue &v = option_at(ct_fn_, opt, group, name);
    if (!is_number(v))
      return ct::set_error(CT_ERR_TYPE, "%s: option '%s' is %s, not a number", ct_fn_, name,
                           v.tagKind().c_str());
    *out = number(v);
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
