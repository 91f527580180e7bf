// TorchScript modules (ct_module_*): calls of methods with positional and
// keyword arguments, introspection, attributes, state (device, dtype,
// train/eval, clone, freeze). Loading and saving are in module_files.cpp,
// building modules in module_build.cpp.
#include "checks.h"
#include "locks.h"
#include "schema.h"
#include "file_io.h"

#include <unordered_set>
#include "script.h"

#include <caffe2/serialize/file_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/csrc/jit/serialization/import.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

namespace {

using c10::IValue;
using c10::TypePtr;

// Binds tensors as the positional arguments of method `fn` of `self` and
// runs it; the result is left in *result. A schema of exactly these tensors
// takes them as they are (no value boxing).
ct_status invoke_tensors(const char *func, torch::jit::Function &fn, const IValue &self,
                         const ct_tensor *const *inputs, size_t n, IValue *result) {
  const auto &schema = fn.getSchema();
  const auto &params = schema.arguments();
  bool exact = params.size() == n + 1;
  for (size_t i = 1; exact && i < params.size(); ++i)
    exact = params[i].type()->kind() == c10::TypeKind::TensorType && !params[i].kwarg_only();
  torch::jit::Stack stack;
  stack.reserve(params.size());
  stack.push_back(self);
  if (exact) {
    for (size_t i = 0; i < n; ++i) stack.push_back(inputs[i]->t);
  } else {
    ct::TensorArgs targs(inputs, n);
    ct_status st = ct::bind_arguments(func, schema, targs.ptrs.data(), n, nullptr, nullptr, 0,
                                      /*skip_self=*/true, &stack);
    if (st != CT_OK) return st;
  }
  fn.run(stack);
  *result = stack.empty() ? IValue() : std::move(stack.back());
  return CT_OK;
}

// The method `name` of m's class; NOT_FOUND when it has none.
ct_status find_method(const char *func, const ct_module *m, const char *name,
                      torch::jit::Function **out) {
  const auto &obj = m->m._ivalue();
  *out = obj->type()->findMethod(name);
  if (!*out)
    return ct::set_error(CT_ERR_NOT_FOUND, "%s: module %s has no method '%s'", func,
                         obj->type()->repr_str().c_str(), name);
  return CT_OK;
}

// The tensors of a result that is a Tensor or a tuple or list of Tensors.
bool result_tensors(const IValue &r, std::vector<at::Tensor> *out) {
  auto take = [&](const auto &items) {
    for (const IValue &e : items) {
      if (!e.isTensor()) return false;
      out->push_back(e.toTensor());
    }
    return true;
  };
  if (r.isTensor()) {
    out->push_back(r.toTensor());
    return true;
  }
  if (r.isTuple()) return take(r.toTupleRef().elements());
  if (r.isList()) return take(r.toListRef());
  return false;
}

// What a method's schema says its tensors-only result is (CT_RESULT_*), and
// how many tensors (-1: a list's length, known only after the run).
int32_t result_kind(const c10::FunctionSchema &schema, int64_t *count) {
  *count = -1;
  if (schema.returns().size() != 1) return CT_RESULT_OTHER;
  const TypePtr &t = schema.returns()[0].type();
  if (t->kind() == c10::TypeKind::TensorType) {
    *count = 1;
    return CT_RESULT_TENSOR;
  }
  if (t->kind() == c10::TypeKind::ListType &&
      t->castRaw<c10::ListType>()->getElementType()->kind() == c10::TypeKind::TensorType)
    return CT_RESULT_LIST;
  if (t->kind() == c10::TypeKind::TupleType) {
    const auto &items = t->castRaw<c10::TupleType>()->elements();
    for (const TypePtr &e : items)
      if (e->kind() != c10::TypeKind::TensorType) return CT_RESULT_OTHER;
    *count = static_cast<int64_t>(items.size());
    return CT_RESULT_TUPLE;
  }
  return CT_RESULT_OTHER;
}

std::vector<std::string> split_dotted(const std::string &s) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t d = s.find('.', start);
    parts.push_back(s.substr(start, d == std::string::npos ? std::string::npos : d - start));
    if (d == std::string::npos) break;
    start = d + 1;
  }
  return parts;
}

// Walks a dotted name to the object owning the last component.
ct_status resolve_owner(const char *func, const torch::jit::Module &m, const char *name,
                        c10::intrusive_ptr<c10::ivalue::Object> *owner, std::string *last) {
  auto parts = split_dotted(name);
  auto obj = m._ivalue();
  std::string path;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const std::string &p = parts[i];
    if (p.empty() || !obj->type()->hasAttribute(p))
      return ct::set_error(CT_ERR_NOT_FOUND, "%s: module has no attribute '%s%s'", func,
                           path.c_str(), p.c_str());
    IValue next = obj->getAttr(p);
    if (!next.isObject())
      return ct::set_error(CT_ERR_NOT_FOUND, "%s: '%s%s' is not a module or object", func,
                           path.c_str(), p.c_str());
    obj = next.toObject();
    path += p + ".";
  }
  if (parts.back().empty() || !obj->type()->hasAttribute(parts.back()))
    return ct::set_error(CT_ERR_NOT_FOUND, "%s: module has no attribute '%s'", func, name);
  *owner = obj;
  *last = parts.back();
  return CT_OK;
}

// The introspection calls: *out = a new value holding what `describe` makes
// of the module.
template <class Describe>
ct_status describe_module(const char *ct_fn_, ct_value **out, const ct_module *m,
                          Describe describe) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(m);
    *out = ct::new_value(IValue(describe(*m)));
    return CT_OK;
  });
}

// Dict[str, Tensor] of named parameters or buffers.
template <class Items>
c10::Dict<std::string, at::Tensor> tensor_dict(const Items &items) {
  c10::Dict<std::string, at::Tensor> d;
  for (const auto &nv : items) d.insert(nv.name, nv.value);
  return d;
}

// clone, freeze, optimize_for_inference: *out = a new module made from m's by
// make(), with m's extra files.
template <class Make>
ct_status derive_module(const char *ct_fn_, ct_module **out, const ct_module *m, Make make) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(m);
    *out = new ct_module{make(m->m), m->extra_files};
    return CT_OK;
  });
}

}  // namespace

extern "C" {

void ct_module_free(ct_module *m) { delete m; }

ct_status ct_module_extra_files(ct_value **out, const ct_module *m) {
  return describe_module(__func__, out, m, [](const ct_module &h) {
    std::vector<const std::pair<const std::string, std::string> *> items;
    for (const auto &kv : h.extra_files) items.push_back(&kv);
    std::sort(items.begin(), items.end(), [](auto *a, auto *b) { return a->first < b->first; });
    c10::Dict<std::string, std::string> d;
    for (auto *kv : items) d.insert(kv->first, kv->second);
    return d;
  });
}

// ---- Calls -------------------------------------------------------------------

ct_status ct_module_forward(ct_value **out, ct_module *m, const ct_value *const *args, size_t n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(m);
    torch::jit::Function *fn = nullptr;
    ct_status st = find_method(ct_fn_, m, "forward", &fn);
    if (st != CT_OK) return st;
    IValue self(m->m._ivalue());
    return ct::invoke(ct_fn_, *fn, &self, out, args, n, nullptr, nullptr, 0, nullptr);
  });
}

ct_status ct_module_call(ct_value **out, ct_module *m, const char *method,
                         const ct_value *const *args, size_t n, const char *const *kwnames,
                         const ct_value *const *kwvalues, size_t nkw) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(m);
    CT_CHECK_NOT_NULL(method);
    torch::jit::Function *fn = nullptr;
    ct_status st = find_method(ct_fn_, m, method, &fn);
    if (st != CT_OK) return st;
    IValue self(m->m._ivalue());
    return ct::invoke(ct_fn_, *fn, &self, out, args, n, kwnames, kwvalues, nkw, nullptr);
  });
}

ct_status ct_module_forward_tensors(ct_tensor **outputs, size_t n_outputs, size_t *n_returned,
                                    ct_module *m, const char *method,
                                    const ct_tensor *const *inputs, size_t n_inputs) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(m);
    if (n_outputs > 0) CT_CHECK_NOT_NULL(outputs);
    if (n_inputs > 0) CT_CHECK_NOT_NULL(inputs);
    for (size_t i = 0; i < n_inputs; ++i)
      if (!inputs[i])
        return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: inputs[%zu] is NULL", ct_fn_, i);
    const char *name = method ? method : "forward";
    torch::jit::Function *fn = nullptr;
    ct_status st = find_method(ct_fn_, m, name, &fn);
    if (st != CT_OK) return st;
    // Decided from the schema before running: a model with side effects
    // (a counter, an RNG, BatchNorm statistics) must not run for nothing.
    int64_t count;
    const c10::FunctionSchema &schema = fn->getSchema();
    if (result_kind(schema, &count) == CT_RESULT_OTHER)
      return ct::set_error(CT_ERR_TYPE,
                           "%s: %s returns %s, not a Tensor or a tuple or list of Tensors (not "
                           "run; use ct_module_call)",
                           ct_fn_, name,
                           schema.returns().size() == 1
                               ? schema.returns()[0].type()->annotation_str().c_str()
                               : "several values");
    if (count > static_cast<int64_t>(n_outputs)) {
      if (n_returned) *n_returned = static_cast<size_t>(count);
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: %s returns %lld tensors, n_outputs is %zu (not run)", ct_fn_, name,
                           static_cast<long long>(count), n_outputs);
    }
    IValue result;
    st = invoke_tensors(ct_fn_, *fn, IValue(m->m._ivalue()), inputs, n_inputs, &result);
    if (st != CT_OK) return st;
    std::vector<at::Tensor> ts;
    if (!result_tensors(result, &ts))
      return ct::set_error(CT_ERR_TYPE,
                           "%s: %s returned %s, not a Tensor or a tuple or list of Tensors", ct_fn_,
                           name, ct::value_type_name(result).c_str());
    if (n_returned) *n_returned = ts.size();
    if (ts.size() > n_outputs)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: %s returned %zu tensors, n_outputs is %zu",
                           ct_fn_, name, ts.size(), n_outputs);
    for (size_t i = 0; i < n_outputs; ++i)
      outputs[i] = i < ts.size() ? ct::new_tensor(std::move(ts[i])) : nullptr;
    return CT_OK;
  });
}

ct_status ct_module_method_results(int32_t *kind, int64_t *count, const ct_module *m,
                                   const char *method) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(kind);
    CT_CHECK_NOT_NULL(m);
    torch::jit::Function *fn = nullptr;
    ct_status st = find_method(ct_fn_, m, method ? method : "forward", &fn);
    if (st != CT_OK) return st;
    int64_t n;
    *kind = result_kind(fn->getSchema(), &n);
    if (count) *count = n;
    return CT_OK;
  });
}

// ---- Introspection -----------------------------------------------------------

ct_status ct_module_methods(ct_value **out, const ct_module *m) {
  return describe_module(__func__, out, m, [](const ct_module &h) {
    c10::Dict<std::string, std::string> d;
    for (const auto &meth : h.m.get_methods())
      d.insert(meth.name(), ct::schema_string(meth.function().getSchema()));
    return d;
  });
}

ct_status ct_module_named_parameters(ct_value **out, const ct_module *m, int32_t recurse) {
  return describe_module(__func__, out, m, [&](const ct_module &h) {
    return tensor_dict(h.m.named_parameters(recurse != 0));
  });
}

ct_status ct_module_named_buffers(ct_value **out, const ct_module *m, int32_t recurse) {
  return describe_module(__func__, out, m, [&](const ct_module &h) {
    return tensor_dict(h.m.named_buffers(recurse != 0));
  });
}

ct_status ct_module_named_attributes(ct_value **out, const ct_module *m, int32_t recurse) {
  return describe_module(__func__, out, m, [&](const ct_module &h) {
    c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
    for (const auto &nv : h.m.named_attributes(recurse != 0)) d.insert(IValue(nv.name), nv.value);
    return d;
  });
}

ct_status ct_module_named_children(ct_value **out, const ct_module *m, int32_t recurse) {
  return describe_module(__func__, out, m, [&](const ct_module &h) {
    c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
    if (recurse) {
      for (const auto &nv : h.m.named_modules())
        if (!nv.name.empty()) d.insert(IValue(nv.name), IValue(nv.value._ivalue()));
    } else {
      for (const auto &nv : h.m.named_children())
        d.insert(IValue(nv.name), IValue(nv.value._ivalue()));
    }
    return d;
  });
}

ct_status ct_module_get_attr(ct_value **out, const ct_module *m, const char *name) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(m);
    CT_CHECK_NOT_NULL(name);
    c10::intrusive_ptr<c10::ivalue::Object> owner;
    std::string last;
    ct_status st = resolve_owner(ct_fn_, m->m, name, &owner, &last);
    if (st != CT_OK) return st;
    *out = ct::new_value(owner->getAttr(last));
    return CT_OK;
  });
}

ct_status ct_module_set_attr(ct_module *m, const char *name, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(m);
    CT_CHECK_NOT_NULL(name);
    CT_CHECK_NOT_NULL(v);
    c10::intrusive_ptr<c10::ivalue::Object> owner;
    std::string last;
    ct_status st = resolve_owner(ct_fn_, m->m, name, &owner, &last);
    if (st != CT_OK) return st;
    const TypePtr &t = owner->type()->getAttribute(last);
    IValue c;
    if (!ct::coerce(v->v, t, &c)) {
      const std::string want = t->annotation_str(), got = ct::value_type_name(v->v);
      return ct::set_error(CT_ERR_TYPE, "%s: attribute '%s' has type %s, got %s%s", ct_fn_, name,
                           want.c_str(), got.c_str(),
                           want == got ? " (another class of the same name: TorchScript compares "
                                         "classes, and each ct_module_new and ct_module_clone "
                                         "makes a new one)"
                                       : "");
    }
    owner->setAttr(last, std::move(c));
    return CT_OK;
  });
}

// ---- State -------------------------------------------------------------------

ct_status ct_module_to(ct_module *m, int32_t device_type, int32_t device_index, int32_t dtype,
                       int32_t non_blocking) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(m);
    c10::optional<c10::Device> dev;
    ct_status st = ct::to_optional_device(ct_fn_, device_type, device_index, &dev);
    if (st != CT_OK) return st;
    c10::optional<c10::ScalarType> st_dtype;
    if (dtype != CT_DTYPE_KEEP) {
      c10::ScalarType s;
      st = ct::check_dtype(ct_fn_, dtype, &s);
      if (st != CT_OK) return st;
      if (!c10::isFloatingType(s))
        return ct::set_error(CT_ERR_TYPE, "%s: dtype must be floating, got %s", ct_fn_,
                             c10::toString(s));
      st_dtype = s;
    }
    if (!dev && !st_dtype) return CT_OK;
    auto move = [&](const at::Tensor &t) {
      c10::ScalarType target = (st_dtype && t.is_floating_point()) ? *st_dtype : t.scalar_type();
      at::Tensor nt = t.to(dev.value_or(t.device()), target, non_blocking != 0);
      if (!nt.is_same(t)) {
        torch::autograd::Variable var = t;
        var.set_data(nt);
      }
    };
    for (const at::Tensor &p : m->m.parameters(true)) move(p);
    for (const at::Tensor &b : m->m.buffers(true)) move(b);
    return CT_OK;
  });
}

ct_status ct_module_train(ct_module *m, int32_t on) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(m);
    for (torch::jit::Module sub : m->m.modules()) {
      if (auto slot = sub._ivalue()->type()->findAttributeSlot("training"))
        sub._ivalue()->setSlot(*slot, IValue(on != 0));
    }
    return CT_OK;
  });
}

ct_status ct_module_eval(ct_module *m) {
  if (!m) return ct::set_error(CT_ERR_INVALID_ARGUMENT, "ct_module_eval: argument 'm' is NULL");
  return ct_module_train(m, 0);
}

int32_t ct_module_is_training(const ct_module *m) {
  if (!m) return -1;
  return ct::guard_value<int32_t>(-1, [&] { return m->m.is_training() ? 1 : 0; });
}

ct_status ct_module_clone(ct_module **out, const ct_module *m) {
  return derive_module(__func__, out, m, [](const torch::jit::Module &x) { return x.clone(); });
}

ct_status ct_module_freeze(ct_module **out, const ct_module *m) {
  return derive_module(__func__, out, m, [](const torch::jit::Module &x) {
    torch::jit::Module c = x.clone();
    c.eval();
    return torch::jit::freeze(c);
  });
}

ct_status ct_module_optimize_for_inference(ct_module **out, const ct_module *m) {
  return derive_module(__func__, out, m, [](const torch::jit::Module &x) {
    torch::jit::Module c = x.clone();
    if (c._ivalue()->type()->hasAttribute("training")) c.eval();
    return torch::jit::optimize_for_inference(c);
  });
}

}  // extern "C"
