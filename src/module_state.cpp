// A module's state (ct_module_state_dict, ct_module_load_state_dict) and its
// gradients (ct_module_zero_grad), as torch.nn.Module's methods.
#include "checks.h"
#include "internal.h"

#include <map>
#include <string>
#include <vector>

namespace {

std::string shape_string(at::IntArrayRef s) {
  std::string out = "torch.Size([";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "])";
}

std::string quoted_list(const std::vector<std::string> &v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", \"" : "\"") + v[i] + "\"";
  return out;
}

void state_dict_into(c10::impl::GenericDict &d, const torch::jit::Module &m,
                     const std::string &prefix) {
  for (const auto &nv : m.named_parameters(false)) d.insert(prefix + nv.name, nv.value);
  for (const auto &nv : m.named_buffers(false)) d.insert(prefix + nv.name, nv.value);
  for (const auto &nv : m.named_children()) state_dict_into(d, nv.value, prefix + nv.name + ".");
}

}  // namespace

extern "C" {

ct_status ct_module_state_dict(ct_value **out, const ct_module *m) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(m);
    c10::impl::GenericDict d(c10::StringType::get(), c10::TensorType::get());
    state_dict_into(d, m->m, "");
    *out = ct::new_value(d);
    return CT_OK;
  });
}

ct_status ct_module_load_state_dict(ct_value **incompatible, ct_module *m,
                                    const ct_value *state_dict, int32_t strict) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(m);
    CT_CHECK_NOT_NULL(state_dict);
    if (!state_dict->v.isGenericDict())
      return ct::set_error(CT_ERR_TYPE, "%s: state_dict must be a dict of str to Tensor, got %s",
                           ct_fn_, state_dict->v.type()->str().c_str());
    c10::impl::GenericDict ordered(c10::StringType::get(), c10::TensorType::get());
    state_dict_into(ordered, m->m, "");
    std::map<std::string, at::Tensor> own;
    std::vector<std::string> order;
    for (const auto &e : ordered) {
      own[e.key().toStringRef()] = e.value().toTensor();
      order.push_back(e.key().toStringRef());
    }
    std::vector<std::pair<at::Tensor, at::Tensor>> copies;
    std::vector<std::string> unexpected, missing;
    std::map<std::string, bool> seen;
    for (const auto &e : state_dict->v.toGenericDict()) {
      if (!e.key().isString())
        return ct::set_error(CT_ERR_TYPE, "%s: state_dict keys must be str, got %s", ct_fn_,
                             e.key().type()->str().c_str());
      const std::string &k = e.key().toStringRef();
      auto it = own.find(k);
      if (it == own.end()) {
        unexpected.push_back(k);
        continue;
      }
      seen[k] = true;
      if (!e.value().isTensor())
        return ct::set_error(CT_ERR_TYPE, "%s: state_dict['%s'] is %s, not a Tensor", ct_fn_,
                             k.c_str(), e.value().type()->str().c_str());
      const at::Tensor &src = e.value().toTensor();
      if (src.sizes() != it->second.sizes())
        return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                             "%s: size mismatch for %s: copying a param with shape %s from "
                             "checkpoint, the shape in current model is %s.",
                             ct_fn_, k.c_str(), shape_string(src.sizes()).c_str(),
                             shape_string(it->second.sizes()).c_str());
      copies.emplace_back(it->second, src);
    }
    for (const std::string &k : order)
      if (!seen.count(k)) missing.push_back(k);
    if (strict && (!missing.empty() || !unexpected.empty())) {
      std::string msg;
      if (!missing.empty()) msg += "\n\tMissing key(s) in state_dict: " + quoted_list(missing) + ".";
      if (!unexpected.empty())
        msg += "\n\tUnexpected key(s) in state_dict: " + quoted_list(unexpected) + ".";
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: Error(s) in loading state_dict for %s:%s",
                           ct_fn_, m->m.type()->name()->name().c_str(), msg.c_str());
    }
    {
      at::NoGradGuard no_grad;
      for (auto &c : copies) c.first.copy_(c.second);
    }
    if (incompatible) {
      c10::List<std::string> mk(missing), uk(unexpected);
      *incompatible = ct::new_value(c10::ivalue::Tuple::create({mk, uk}));
    }
    return CT_OK;
  });
}

ct_status ct_module_zero_grad(ct_module *m, int32_t set_to_none) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(m);
    for (const auto &nv : m->m.named_parameters(true)) {
      at::Tensor p = nv.value;
      at::Tensor &g = p.mutable_grad();
      if (!g.defined()) continue;
      if (set_to_none) {
        g.reset();
      } else {
        if (g.grad_fn()) g = g.detach();
        else g.requires_grad_(false);
        g.zero_();
      }
    }
    return CT_OK;
  });
}

}  // extern "C"
