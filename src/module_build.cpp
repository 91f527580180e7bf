// Building TorchScript modules from C (ct_module_new, ct_module_register_*,
// ct_module_define): valid names, no cycles, and all-or-nothing methods.
// The source goes through the resolver in script.cpp.
#include "checks.h"
#include "internal.h"
#include "locks.h"
#include "messages.h"
#include "script.h"

#include <cctype>
#include <string>
#include <unordered_set>
#include <vector>

namespace {

using c10::IValue;
using ct::with_code;

bool valid_identifier(const char *s) {
  if (!s || !*s) return false;
  if (!(std::isalpha(static_cast<unsigned char>(*s)) || *s == '_')) return false;
  for (const char *p = s; *p; ++p)
    if (!(std::isalnum(static_cast<unsigned char>(*p)) || *p == '_')) return false;
  return true;
}

ct_status check_new_name(const char *func, const torch::jit::Module &m, const char *name) {
  if (!valid_identifier(name))
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: '%s' is not a valid attribute name", func,
                         name);
  if (m.hasattr(name) || m.find_method(name))
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: name '%s' is already in use", func, name);
  return CT_OK;
}

// The register_* calls: checks m, name and the item (argument `item_name`),
// that `name` is a new name in m, then returns add().
template <class Item, class Add>
ct_status register_item(const char *ct_fn_, ct_module *m, const char *name, const char *item_name,
                        const Item *item, Add add) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(m);
    CT_CHECK_NOT_NULL(name);
    if (item == nullptr)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument '%s' is NULL", ct_fn_, item_name);
    if (ct_status st = check_new_name(ct_fn_, m->m, name)) return st;
    return add();
  });
}

}  // namespace

extern "C" {

ct_status ct_module_new(ct_module **out, const char *class_name) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(class_name);
    if (!valid_identifier(class_name))
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: '%s' is not a valid class name", ct_fn_,
                           class_name);
    torch::jit::Module mod(c10::QualifiedName(std::string("__torch__.") + class_name));
    mod.register_attribute("training", c10::BoolType::get(), IValue(true));
    *out = new ct_module{std::move(mod), {}};
    return CT_OK;
  });
}

ct_status ct_module_register_parameter(ct_module *m, const char *name, const ct_tensor *t,
                                       int32_t requires_grad) {
  const char *const ct_fn_ = __func__;
  return register_item(ct_fn_, m, name, "t", t, [&] {
    if (!t->t.defined())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: tensor is undefined", ct_fn_);
    if (requires_grad && !(t->t.is_floating_point() || t->t.is_complex()))
      return ct::set_error(CT_ERR_TYPE,
                           "%s: only floating point and complex tensors can "
                           "require grad, got %s",
                           ct_fn_, c10::toString(t->t.scalar_type()));
    // Like nn.Parameter(t): shares t's data, with its own autograd identity.
    at::Tensor p = t->t.detach();
    p.set_requires_grad(requires_grad != 0);
    m->m.register_parameter(name, p, /*is_buffer=*/false);
    return CT_OK;
  });
}

ct_status ct_module_register_buffer(ct_module *m, const char *name, const ct_tensor *t) {
  return register_item(__func__, m, name, "t", t, [&] {
    m->m.register_buffer(name, t->t);
    return CT_OK;
  });
}

ct_status ct_module_register_module(ct_module *m, const char *name, const ct_module *child) {
  const char *const ct_fn_ = __func__;
  return register_item(ct_fn_, m, name, "child", child, [&] {
    // A cycle would make every recursive walk (parameters, train, clone,
    // save) loop or overflow the stack: refuse it when it is made.
    if (child->m._ivalue().get() == m->m._ivalue().get())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: a module cannot contain itself (that would make a cycle)", ct_fn_);
    for (const torch::jit::Module &sub : child->m.modules())
      if (sub._ivalue().get() == m->m._ivalue().get())
        return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                             "%s: registering '%s' would make a cycle: the child module "
                             "already contains this module",
                             ct_fn_, name);
    m->m.register_module(name, child->m);
    return CT_OK;
  });
}

ct_status ct_module_define(ct_module *m, const char *source) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(m);
    CT_CHECK_NOT_NULL(source);
    if (ct_status s = ct::check_source_nesting(ct_fn_, source)) return s;
    return with_code(ct_fn_, CT_ERR_TORCH, "", [&] {
      // All or nothing: a failed define leaves no half-built method behind.
      auto type = m->m.type();
      std::unordered_set<std::string> before;
      for (torch::jit::Function *fn : type->methods()) before.insert(fn->name());
      ct::RegistryRead registry_read;
      try {
        m->m.define(source, ct::op_resolver());
      } catch (...) {
        std::vector<std::string> added;
        for (torch::jit::Function *fn : type->methods())
          if (!before.count(fn->name())) added.push_back(fn->name());
        for (const std::string &n : added) {
          c10::QualifiedName q = type->getMethod(n).qualname();
          type->unsafeRemoveMethod(n);
          m->m._ivalue()->compilation_unit()->unsafeRemoveMethod(q);
        }
        throw;
      }
      return CT_OK;
    });
  });
}

}  // extern "C"
