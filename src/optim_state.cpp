// The optimizers' state_dict() and load_state_dict() in torch.optim's layout:
// {"state": {index: {...}}, "param_groups": [{options..., "params": [...]}]}.
#include "optim.h"

#include <ATen/ATen.h>

#include <unordered_map>

namespace ct::optim {

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
          if (t.numel() != 1 || c10::isComplexType(t.scalar_type()) || t.scalar_type() == at::kBool)
            ct::raise(CT_ERR_INVALID_ARGUMENT,
                      "%s: 'step' of parameter %lld is a tensor of %lld elements of %s; it must "
                      "be a singleton real tensor (torch.optim: `state_steps` argument must "
                      "contain a list of singleton tensors)",
                      func, (long long)e.key().toInt(), (long long)t.numel(),
                      c10::toString(t.scalar_type()));
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
      } else if (key == "step" && !v.isInt() && !v.isDouble())
        ct::raise(CT_ERR_INVALID_ARGUMENT,
                  "%s: 'step' of parameter %lld is a %s; it must be a singleton tensor or a "
                  "number (torch.optim: `state_steps` argument must contain a list of singleton "
                  "tensors)",
                  func, (long long)e.key().toInt(), v.tagKind().c_str());
      dst.insert_or_assign(key, v);
    }
    // Every state of these algorithms has a step (torch.optim reads
    // state['step'] at the next step: KeyError).
    if (o->info->algo != Algo::SGD && dst.size() > 0 && dst.find("step") == dst.end())
      ct::raise(CT_ERR_INVALID_ARGUMENT,
                "%s: the state of parameter %lld has no 'step' (torch.optim's %s keeps one for "
                "every parameter it has state for; loading this would fail at the next step "
                "with KeyError: 'step')",
                func, (long long)e.key().toInt(), o->info->name);
  }
  for (size_t gi = 0; gi < o->groups.size(); gi++) {
    o->groups[gi].options = std::move(options[gi]);
    o->groups[gi].state = std::move(state[gi]);
  }
}

}  // namespace ct::optim
