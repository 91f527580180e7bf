// Operators by name: lookup in the JIT operator registry (which sees every
// dispatcher op plus JIT-only and foreign ops) and the C API for handles and
// schemas (ct_op_find, ct_op_schema, ct_op_argument, ..., ct_op_list).
// Calls are in op_call.cpp, registration of foreign ops in foreign_op.cpp,
// argument binding in schema.cpp.
#include "checks.h"
#include "locks.h"
#include "op_internal.h"
#include "schema.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>
#include <vector>

using c10::IValue;

namespace ct {

Overload make_overload(std::shared_ptr<torch::jit::Operator> op) {
  Overload o;
  o.op = std::move(op);
  // A copy: a dispatcher operator's schema goes when its definition does
  // (ct_library_free), while handles to it may live on.
  o.own_schema = std::make_shared<const c10::FunctionSchema>(o.op->schema());
  o.schema = o.own_schema.get();
  const auto &s = *o.schema;
  o.schema_str = schema_string(s);
  o.n_returns = s.returns().size();
  for (const auto &a : s.arguments()) {
    ArgInfo ai;
    ai.name = a.name();
    ai.type = arg_type_string(a);
    ai.has_def = a.default_value().has_value();
    if (ai.has_def) {
      std::ostringstream os;
      os << a;
      std::string full = os.str();
      std::string key = " " + a.name() + "=";
      auto pos = full.find(key);
      ai.def = pos == std::string::npos ? std::string() : full.substr(pos + key.size());
    }
    ai.kwonly = a.kwarg_only() ? 1 : 0;
    ai.kind = fast_kind(a);
    if (!a.kwarg_only()) ++o.n_positional;
    o.defaults.push_back(a.default_value() ? *a.default_value() : IValue());
    o.args.push_back(std::move(ai));
  }
  o.first_tail_default = o.args.size();
  while (o.first_tail_default > 0 && o.args[o.first_tail_default - 1].has_def)
    --o.first_tail_default;
  for (size_t i = 0; i < o.args.size(); ++i) {
    o.kinds.push_back(o.args[i].kind);
    const IValue &d = o.defaults[i];
    o.default_scalars.push_back((d.isInt() || d.isDouble() || d.isBool() || d.isComplexDouble())
                                    ? d.toScalar()
                                    : c10::Scalar());
  }
  for (const auto &r : s.returns()) {
    c10::Argument bare("", r.type(), r.real_type(), r.N(), c10::nullopt, false, c10::nullopt);
    std::ostringstream os;
    os << bare;
    o.rets.emplace_back(r.name(), os.str());
  }
  if (s.is_vararg() || s.is_varret()) {
    o.not_callable_why = "operators with variable arguments or returns cannot be called by name";
  } else if (!o.op->hasOperation()) {
    o.not_callable_why = "this operator needs a graph node and cannot be called by name";
  } else {
    o.operation = o.op->getOperation();
    o.callable = static_cast<bool>(o.operation);
    if (!o.callable) o.not_callable_why = "this operator has no operation";
    if (o.callable) setup_typed(o);
  }
  return o;
}

// Finds an op; nullptr + error set on failure. overload NULL = the set.
ct_status find_op(const char *func, std::shared_ptr<ct_op> *out, const std::string &name,
                  const char *overload) {
  if (name.find("::") == std::string::npos || name.size() < 4) {
    return ct::set_error(CT_ERR_NOT_FOUND,
                         "%s: unknown operator '%s' (expected a qualified name such as "
                         "'aten::add')",
                         func, name.c_str());
  }
  c10::Symbol sym = c10::Symbol::fromQualString(name);
  ct::RegistryRead registry_read;
  const auto &ops = torch::jit::getAllOperatorsFor(sym);
  if (ops.empty()) {
    return ct::set_error(CT_ERR_NOT_FOUND, "%s: unknown operator '%s'", func, name.c_str());
  }
  auto h = std::make_shared<ct_op>();
  h->name = name;
  if (overload == nullptr) {
    h->is_set = true;
    std::unordered_set<std::string> seen;
    for (const auto &op : ops) {
      Overload o = make_overload(op);
      if (!seen.insert(o.schema_str).second) continue;
      h->overloads.push_back(std::move(o));
    }
  } else {
    for (const auto &op : ops) {
      if (op->schema().overload_name() == overload) {
        h->overloads.push_back(make_overload(op));
        break;
      }
    }
    if (h->overloads.empty()) {
      std::string list;
      for (const auto &op : ops) {
        list += "\n  ";
        list += schema_string(op->schema());
      }
      return ct::set_error(CT_ERR_NOT_FOUND, "%s: operator '%s' has no overload '%s'; overloads:%s",
                           func, name.c_str(), overload, list.c_str());
    }
  }
  *out = std::move(h);
  return CT_OK;
}

}  // namespace ct

using ct::ArgInfo;
using ct::find_op;
using ct::op_display_name;
using ct::Overload;

// ---- C API --------------------------------------------------------------------

extern "C" {

ct_status ct_op_find(ct_op **out, const char *name, const char *overload) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(name);
    std::shared_ptr<ct_op> h;
    ct_status rc = find_op(ct_fn_, &h, name, overload);
    if (rc != CT_OK) return rc;
    *out = new ct_op(std::move(*h));
    return CT_OK;
  });
}

void ct_op_free(ct_op *op) { delete op; }

size_t ct_op_num_overloads(const ct_op *op) { return op ? op->overloads.size() : 0; }

#define CT_CHECK_OVERLOAD(op, ov)                                                             \
  do {                                                                                        \
    CT_CHECK_NOT_NULL(op);                                                                    \
    if ((ov) >= (op)->overloads.size())                                                       \
      return ct::set_error(CT_ERR_INDEX, "%s: overload index %zu out of range (%s has %zu)",  \
                           ct_fn_, (size_t)(ov), (op)->name.c_str(), (op)->overloads.size()); \
  } while (0)

ct_status ct_op_schema(const char **out, const ct_op *op, size_t overload) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_OVERLOAD(op, overload);
    *out = op->overloads[overload].schema_str.c_str();
    return CT_OK;
  });
}

ct_status ct_op_num_arguments(size_t *out, const ct_op *op, size_t overload) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_OVERLOAD(op, overload);
    *out = op->overloads[overload].args.size();
    return CT_OK;
  });
}

ct_status ct_op_argument(const char **name, const char **type, const char **default_value,
                         int32_t *kwarg_only, const ct_op *op, size_t overload, size_t i) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_OVERLOAD(op, overload);
    const Overload &o = op->overloads[overload];
    if (i >= o.args.size())
      return ct::set_error(CT_ERR_INDEX, "%s: argument index %zu out of range (%s has %zu)", ct_fn_,
                           i, o.schema_str.c_str(), o.args.size());
    const ArgInfo &a = o.args[i];
    if (name) *name = a.name.c_str();
    if (type) *type = a.type.c_str();
    if (default_value) *default_value = a.has_def ? a.def.c_str() : nullptr;
    if (kwarg_only) *kwarg_only = a.kwonly;
    return CT_OK;
  });
}

ct_status ct_op_num_returns(size_t *out, const ct_op *op, size_t overload) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_OVERLOAD(op, overload);
    *out = op->overloads[overload].rets.size();
    return CT_OK;
  });
}

ct_status ct_op_return(const char **name, const char **type, const ct_op *op, size_t overload,
                       size_t i) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_OVERLOAD(op, overload);
    const Overload &o = op->overloads[overload];
    if (i >= o.rets.size())
      return ct::set_error(CT_ERR_INDEX, "%s: return index %zu out of range (%s has %zu)", ct_fn_,
                           i, o.schema_str.c_str(), o.rets.size());
    if (name) *name = o.rets[i].first.c_str();
    if (type) *type = o.rets[i].second.c_str();
    return CT_OK;
  });
}

ct_status ct_op_list(ct_value **out) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    std::vector<std::string> names;
    std::unordered_set<std::string> seen;
    ct::RegistryRead registry_read;
    for (const auto &op : torch::jit::getAllOperators()) {
      const auto &s = op->schema();
      std::string nm = op_display_name(s);
      if (seen.insert(nm).second) names.push_back(std::move(nm));
    }
    std::sort(names.begin(), names.end());
    c10::List<std::string> l;
    l.reserve(names.size());
    for (auto &s : names) l.push_back(std::move(s));
    *out = ct::new_value(IValue(std::move(l)));
    return CT_OK;
  });
}

}  // extern "C"
