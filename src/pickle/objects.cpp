// The generic objects that stand for Python objects in a loaded torch.save
// file (an argparse.Namespace, a whole nn.Module, any class ctorch does not
// rebuild): one TorchScript class per Python class name holding the
// constructor arguments and the pickled state, and the ct_value_object_*
// accessors of the header.
#include "pickle/reader.h"

#include "checks.h"
#include "internal.h"
#include "locks.h"

#include <torch/csrc/jit/api/compilation_unit.h>

#include <mutex>
#include <unordered_map>

namespace ct {
namespace pickle {

const char *const kObjectArgs = "__args__";
const char *const kObjectState = "__state__";

namespace {

// The compilation unit of every generic object class.
const std::shared_ptr<torch::jit::CompilationUnit> &object_unit() {
  static auto *cu = new std::shared_ptr<torch::jit::CompilationUnit>(
      std::make_shared<torch::jit::CompilationUnit>());
  return *cu;
}

// One class type per Python class name, with the slots "__args__" and "__state__".
std::mutex object_class_mutex;
ct::ForkSafe object_class_fork_safe(object_class_mutex);
c10::ClassTypePtr object_class(const std::string &name) {
  static std::mutex &mu = object_class_mutex;
  static auto *types = new std::unordered_map<std::string, c10::ClassTypePtr>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = types->find(name);
  if (it != types->end()) return it->second;
  auto cls = c10::ClassType::create(c10::QualifiedName(name), object_unit(), false);
  cls->addAttribute(kObjectArgs, c10::AnyType::get());
  cls->addAttribute(kObjectState, c10::AnyType::get());
  types->emplace(name, cls);
  return cls;
}

}  // namespace

c10::IValue make_object(const std::string &cls, c10::IValue args) {
  auto obj = c10::ivalue::Object::create(c10::StrongTypePtr(object_unit(), object_class(cls)), 2);
  obj->setSlot(0, std::move(args));
  obj->setSlot(1, c10::IValue());
  return obj;
}

}  // namespace pickle
}  // namespace ct

namespace {

using ct::pickle::kObjectArgs;
using ct::pickle::object_unit;

// The object's class when it stands for a Python object (see make_object).
bool is_python_object(const c10::intrusive_ptr<c10::ivalue::Object> &obj) {
  const auto &cls = obj->type();
  return cls->compilation_unit() == object_unit() && cls->numAttributes() == 2 &&
         cls->getAttributeName(0) == kObjectArgs;
}

// The object accessors: *out = get(the object), for a value that is one.
template <class Out, class Get>
ct_status object_part(const char *ct_fn_, Out *out, const ct_value *v, Get get) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    if (!v->v.isObject())
      return ct::set_error(CT_ERR_TYPE, "%s: the value is a %s, not an object", ct_fn_,
                           v->v.tagKind().c_str());
    *out = get(v->v.toObject());
    return CT_OK;
  });
}

using ObjectPtr = c10::intrusive_ptr<c10::ivalue::Object>;

}  // namespace

extern "C" {

ct_status ct_value_object_class(const char **out, const ct_value *v) {
  return object_part(__func__, out, v, [](const ObjectPtr &obj) {
    return obj->type()->name()->qualifiedName().c_str();
  });
}

ct_status ct_value_object_state(ct_value **out, const ct_value *v) {
  return object_part(__func__, out, v, [](const ObjectPtr &obj) {
    if (is_python_object(obj)) return ct::new_value(obj->getSlot(1));
    c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
    const auto &cls = obj->type();
    for (size_t i = 0; i < cls->numAttributes(); ++i)
      d.insert(cls->getAttributeName(i), obj->getSlot(i));
    return ct::new_value(std::move(d));
  });
}

ct_status ct_value_object_args(ct_value **out, const ct_value *v) {
  return object_part(__func__, out, v, [](const ObjectPtr &obj) {
    return ct::new_value(is_python_object(obj)
                             ? obj->getSlot(0)
                             : c10::ivalue::Tuple::create(std::vector<c10::IValue>{}));
  });
}

}  // extern "C"
