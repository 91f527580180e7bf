// torch.nn constructor and initializer arguments: a C call's values bound to
// a signature written as a schema (the operator binder, its coercions and
// messages), then read back by parameter name.
#include "nn.h"

#include "schema.h"

#include <torch/csrc/jit/frontend/function_schema_parser.h>

namespace ct {
namespace nn {

Args::Args(std::string call, const c10::FunctionSchema &schema, torch::jit::Stack stack)
    : call_(std::move(call)) {
  const auto &params = schema.arguments();
  for (size_t i = 0; i < params.size() && i < stack.size(); ++i)
    values_[params[i].name()] = std::move(stack[i]);
}

const c10::IValue &Args::operator[](const char *name) const {
  auto it = values_.find(name);
  if (it == values_.end()) ct::raise(CT_ERR_INTERNAL, "%s: no argument '%s'", call_.c_str(), name);
  return it->second;
}

int64_t Args::i(const char *name) const { return (*this)[name].toInt(); }
double Args::d(const char *name) const {
  const c10::IValue &v = (*this)[name];
  return v.isInt() ? static_cast<double>(v.toInt()) : v.toDouble();
}
bool Args::b(const char *name) const { return (*this)[name].toBool(); }
std::string Args::s(const char *name) const { return (*this)[name].toStringRef(); }

std::vector<int64_t> Args::ints(const char *name, size_t n) const {
  const c10::IValue &v = (*this)[name];
  if (v.isInt()) return std::vector<int64_t>(n, v.toInt());
  std::vector<int64_t> out;
  if (v.isIntList()) {
    out = v.toIntVector();
  } else if (v.isTuple() || v.isList()) {
    std::vector<c10::IValue> items =
        v.isTuple() ? v.toTupleRef().elements().vec() : v.toListRef().vec();
    for (const c10::IValue &e : items)
      if (e.isInt()) out.push_back(e.toInt());
      else ct::raise(CT_ERR_TYPE, "%s: %s must be an int or ints, got an element of type %s",
                     call_.c_str(), name, e.type()->str().c_str());
  } else {
    ct::raise(CT_ERR_TYPE, "%s: %s must be an int or a tuple of %zu ints, got %s", call_.c_str(),
              name, n, v.type()->str().c_str());
  }
  if (out.size() == 1 && n > 1) out.assign(n, out[0]);
  if (out.size() != n)
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: %s must be an int or %zu ints, got %zu", call_.c_str(),
              name, n, out.size());
  return out;
}

c10::optional<at::Generator> Args::generator() const {
  auto it = values_.find("generator");
  if (it == values_.end() || it->second.isNone()) return c10::nullopt;
  return it->second.toGenerator();
}

at::TensorOptions Args::factory() const {
  at::TensorOptions o = at::TensorOptions().dtype(at::get_default_dtype());
  auto dt = values_.find("dtype");
  if (dt != values_.end() && !dt->second.isNone()) {
    auto st = static_cast<c10::ScalarType>(dt->second.toInt());
    if (!c10::isFloatingType(st) && !c10::isComplexType(st))
      ct::raise(CT_ERR_TYPE, "%s: parameters must be floating point or complex, not %s",
                call_.c_str(), c10::toString(st));
    o = o.dtype(st);
  }
  auto dev = values_.find("device");
  if (dev != values_.end() && !dev->second.isNone()) o = o.device(dev->second.toDevice());
  return o;
}

c10::FunctionSchema parse_signature(const char *text) {
  return torch::jit::parseSchema(text);
}

ct_status bind(const char *func, const c10::FunctionSchema &schema, const ct_value *const *args,
               size_t n, const char *const *kwnames, const ct_value *const *kwvalues, size_t nkw,
               std::unique_ptr<Args> *out) {
  if (ct_status st = check_call_args(func, args, n, kwnames, kwvalues, nkw)) return st;
  torch::jit::Stack stack;
  if (ct_status st = bind_arguments(func, schema, args, n, kwnames, kwvalues, nkw, false, &stack))
    return st;
  out->reset(new Args(schema.name().substr(schema.name().find("::") + 2),
                  schema, std::move(stack)));
  return CT_OK;
}

}  // namespace nn
}  // namespace ct
