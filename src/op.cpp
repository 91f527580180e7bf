// Operators by name: lookup in the JIT operator registry (which sees every
// dispatcher op plus JIT-only and foreign ops), schema accessors, calls with
// positional/keyword arguments and defaults, foreign op registration, and the
// argument binder shared with module method calls (ct::bind_arguments).
//
// Notes on choices made here:
//  - Arguments whose schema type is ScalarType (dtype=...) take ctorch's dtype
//    codes (CT_FLOAT64, ...), as everywhere else in the C ABI; they are
//    translated to torch's ScalarType. Layout and MemoryFormat arguments take
//    torch's own integer values (ctorch has no codes for them).
//  - A specific overload called with positional arguments of exactly the
//    schema's types takes a fast path: no binder, a reused thread-local stack,
//    one allocation for the result value.
#include "internal.h"


#include <torch/csrc/jit/frontend/function_schema_parser.h>
#include <torch/csrc/jit/runtime/custom_operator.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

using c10::IValue;
using c10::TypeKind;
using c10::TypePtr;
using torch::jit::Stack;

// ---- Pretty names ----------------------------------------------------------

std::string value_type_name(const IValue &v) {
  if (v.isNone()) return "None";
  if (v.isTensor()) return "Tensor";
  if (v.isDouble()) return "float";
  if (v.isInt()) return "int";
  if (v.isBool()) return "bool";
  if (v.isString()) return "str";
  if (v.isDevice()) return "Device";
  try {
    return v.type()->annotation_str();
  } catch (...) {
    return v.tagKind();
  }
}

std::string op_display_name(const c10::FunctionSchema &s) {
  if (s.overload_name().empty()) return s.name();
  return s.name() + "." + s.overload_name();
}

std::string schema_string(const c10::FunctionSchema &s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

// Type as written in a schema ("Tensor", "int[1]", "ScalarType?"), without
// alias annotations.
std::string arg_type_string(const c10::Argument &a) {
  c10::Argument bare("", a.type(), a.real_type(), a.N(), c10::nullopt, false, c10::nullopt);
  std::ostringstream os;
  os << bare;
  return os.str();
}

// int[] or int[]?
bool is_int_list_type(TypePtr t) {
  if (t->kind() == TypeKind::OptionalType) t = t->castRaw<c10::OptionalType>()->getElementType();
  return t->kind() == TypeKind::ListType &&
         t->castRaw<c10::ListType>()->getElementType()->kind() == TypeKind::IntType;
}

bool is_scalar_type_arg(const c10::Argument &a) {
  TypePtr t = a.real_type();
  if (t->kind() == TypeKind::OptionalType) t = t->castRaw<c10::OptionalType>()->getElementType();
  return t->kind() == TypeKind::ScalarTypeType;
}

// ---- Coercion ---------------------------------------------------------------

bool coerce_impl(const IValue &in, const TypePtr &type, IValue *out, bool strict);

template <class T, class Get>
bool coerce_list_elems(const std::vector<IValue> &items, Get get, c10::List<T> *out) {
  out->reserve(items.size());
  for (const IValue &e : items) {
    T x;
    if (!get(e, &x)) return false;
    out->push_back(std::move(x));
  }
  return true;
}

bool coerce_list(const IValue &in, const c10::ListType &lt, IValue *out, bool strict) {
  // Already the right type: pass through (same list object).
  const TypePtr &elem = lt.getElementType();
  std::vector<IValue> items;
  if (in.isList()) {
    if (in.type()->isSubtypeOf(lt)) {
      *out = in;
      return true;
    }
    auto l = in.toListRef();
    items.assign(l.begin(), l.end());
  } else if (in.isTuple()) {
    const auto &el = in.toTupleRef().elements();
    items.assign(el.begin(), el.end());
  } else {
    return false;
  }
  switch (elem->kind()) {
    case TypeKind::IntType: {
      c10::List<int64_t> l;
      if (!coerce_list_elems<int64_t>(items, [](const IValue &e, int64_t *x) {
            if (!e.isInt()) return false;
            *x = e.toInt();
            return true;
          }, &l))
        return false;
      *out = IValue(std::move(l));
      return true;
    }
    case TypeKind::FloatType: {
      c10::List<double> l;
      if (!coerce_list_elems<double>(items, [strict](const IValue &e, double *x) {
            if (e.isDouble()) *x = e.toDouble();
            else if (!strict && e.isInt()) *x = static_cast<double>(e.toInt());
            else return false;
            return true;
          }, &l))
        return false;
      *out = IValue(std::move(l));
      return true;
    }
    case TypeKind::BoolType: {
      c10::List<bool> l;
      if (!coerce_list_elems<bool>(items, [](const IValue &e, bool *x) {
            if (!e.isBool()) return false;
            *x = e.toBool();
            return true;
          }, &l))
        return false;
      *out = IValue(std::move(l));
      return true;
    }
    case TypeKind::TensorType: {
      c10::List<at::Tensor> l;
      if (!coerce_list_elems<at::Tensor>(items, [](const IValue &e, at::Tensor *x) {
            if (!e.isTensor()) return false;
            *x = e.toTensor();
            return true;
          }, &l))
        return false;
      *out = IValue(std::move(l));
      return true;
    }
    default:
      break;
  }
  if (elem->kind() == TypeKind::OptionalType &&
      elem->castRaw<c10::OptionalType>()->getElementType()->kind() == TypeKind::TensorType) {
    c10::List<c10::optional<at::Tensor>> l;
    if (!coerce_list_elems<c10::optional<at::Tensor>>(
            items, [](const IValue &e, c10::optional<at::Tensor> *x) {
              if (e.isNone()) *x = c10::nullopt;
              else if (e.isTensor()) *x = e.toTensor();
              else return false;
              return true;
            }, &l))
      return false;
    *out = IValue(std::move(l));
    return true;
  }
  c10::impl::GenericList l(elem);
  l.reserve(items.size());
  for (const IValue &e : items) {
    IValue x;
    if (!coerce_impl(e, elem, &x, strict)) return false;
    l.push_back(std::move(x));
  }
  *out = IValue(std::move(l));
  return true;
}

bool coerce_impl(const IValue &in, const TypePtr &type, IValue *out, bool strict) {
  switch (type->kind()) {
    case TypeKind::AnyType:
      *out = in;
      return true;
    case TypeKind::TensorType:
      if (!in.isTensor()) return false;
      *out = in;
      return true;
    case TypeKind::FloatType:
      if (in.isDouble()) {
        *out = in;
        return true;
      }
      if (!strict && in.isInt()) {
        *out = IValue(static_cast<double>(in.toInt()));
        return true;
      }
      return false;
    case TypeKind::IntType:
      if (!in.isInt()) return false;
      *out = in;
      return true;
    case TypeKind::BoolType:
      if (!in.isBool()) return false;
      *out = in;
      return true;
    case TypeKind::NumberType:  // Scalar
      if (in.isInt() || in.isDouble() || in.isBool() || in.isComplexDouble()) {
        *out = in;
        return true;
      }
      return false;
    case TypeKind::StringType:
      if (!in.isString()) return false;
      *out = in;
      return true;
    case TypeKind::DeviceObjType:
      if (in.isDevice()) {
        *out = in;
        return true;
      }
      if (!strict && in.isString()) {
        try {
          *out = IValue(c10::Device(in.toStringRef()));
          return true;
        } catch (...) {
          return false;
        }
      }
      return false;
    case TypeKind::OptionalType:
      if (in.isNone()) {
        *out = in;
        return true;
      }
      return coerce_impl(in, type->castRaw<c10::OptionalType>()->getElementType(), out, strict);
    case TypeKind::ListType:
      return coerce_list(in, *type->castRaw<c10::ListType>(), out, strict);
    case TypeKind::TupleType: {
      const auto &tt = *type->castRaw<c10::TupleType>();
      std::vector<IValue> items;
      if (in.isTuple()) {
        const auto &el = in.toTupleRef().elements();
        items.assign(el.begin(), el.end());
      } else if (in.isList()) {
        auto l = in.toListRef();
        items.assign(l.begin(), l.end());
      } else {
        return false;
      }
      if (items.size() != tt.elements().size()) return false;
      std::vector<IValue> conv(items.size());
      for (size_t i = 0; i < items.size(); ++i)
        if (!coerce_impl(items[i], tt.elements()[i], &conv[i], strict)) return false;
      *out = c10::ivalue::Tuple::create(std::move(conv));
      return true;
    }
    default:
      break;
  }
  // Dicts, objects, unions, futures...: accept what the type system accepts.
  try {
    if (in.type()->isSubtypeOf(*type)) {
      *out = in;
      return true;
    }
  } catch (...) {
  }
  return false;
}

// Binds arguments; on failure returns a status and writes a reason (naming
// the op) into *why. `strict` forbids lossy coercions (overload resolution).
ct_status bind_impl(const c10::FunctionSchema &schema, const ct_value *const *args, size_t n,
                    const char *const *kwnames, const ct_value *const *kwvalues, size_t nkw,
                    bool skip_self, Stack *stack, bool strict, std::string *why) {
  const auto &params = schema.arguments();
  const size_t start = (skip_self && !params.empty()) ? 1 : 0;
  const size_t np = params.size() - start;
  size_t npos = 0;
  for (size_t i = start; i < params.size() && !params[i].kwarg_only(); ++i) ++npos;
  auto name = [&] { return op_display_name(schema); };

  if (n > 0 && args == nullptr) {
    *why = name() + ": 'args' is NULL but n > 0";
    return CT_ERR_INVALID_ARGUMENT;
  }
  if (nkw > 0 && (kwnames == nullptr || kwvalues == nullptr)) {
    *why = name() + ": 'kwnames' or 'kwvalues' is NULL but nkw > 0";
    return CT_ERR_INVALID_ARGUMENT;
  }
  if (n > npos) {
    *why = name() + ": too many positional arguments: expected at most " +
           std::to_string(npos) + ", got " + std::to_string(n);
    return CT_ERR_INVALID_ARGUMENT;
  }
  // Slots for every parameter after `start`.
  const IValue *small[16];
  std::vector<const IValue *> big;
  const IValue **slot = small;
  if (np > 16) {
    big.assign(np, nullptr);
    slot = big.data();
  } else {
    std::fill(small, small + np, nullptr);
  }
  for (size_t i = 0; i < n; ++i) {
    if (args[i] == nullptr) {
      *why = name() + ": positional argument " + std::to_string(i) + " ('" +
             params[start + i].name() + "') is NULL";
      return CT_ERR_INVALID_ARGUMENT;
    }
    slot[i] = &args[i]->v;
  }
  for (size_t k = 0; k < nkw; ++k) {
    if (kwnames[k] == nullptr || kwvalues[k] == nullptr) {
      *why = name() + ": keyword argument " + std::to_string(k) + " has a NULL name or value";
      return CT_ERR_INVALID_ARGUMENT;
    }
    size_t j = np;
    for (size_t i = 0; i < np; ++i)
      if (params[start + i].name() == kwnames[k]) {
        j = i;
        break;
      }
    if (j == np) {
      *why = name() + ": unknown keyword argument '" + kwnames[k] + "'";
      return CT_ERR_INVALID_ARGUMENT;
    }
    if (slot[j] != nullptr) {
      *why = name() + ": got multiple values for argument '" + kwnames[k] + "'";
      return CT_ERR_INVALID_ARGUMENT;
    }
    slot[j] = &kwvalues[k]->v;
  }
  const size_t base = stack->size();
  stack->reserve(base + np);
  for (size_t i = 0; i < np; ++i) {
    const c10::Argument &p = params[start + i];
    if (slot[i] == nullptr) {
      if (p.default_value()) {
        stack->push_back(*p.default_value());
        continue;
      }
      stack->resize(base);
      *why = name() + ": missing argument '" + p.name() + "'";
      return CT_ERR_INVALID_ARGUMENT;
    }
    const IValue &v = *slot[i];
    IValue c;
    bool ok;
    if (v.isInt() && is_scalar_type_arg(p)) {
      c10::ScalarType st;
      if (!ct::to_scalar_type(static_cast<int32_t>(v.toInt()), &st)) {
        stack->resize(base);
        *why = name() + ": argument '" + p.name() + "': unknown dtype code " +
               std::to_string(v.toInt());
        return CT_ERR_TYPE;
      }
      c = IValue(static_cast<int64_t>(st));
      ok = true;
    } else if (!strict && v.isInt() && p.N() && is_int_list_type(p.type())) {
      // int[N] accepts one int, as in Python (kernel_size=3 -> [3, 3]).
      c = IValue(c10::List<int64_t>(std::vector<int64_t>(*p.N(), v.toInt())));
      ok = true;
    } else {
      ok = coerce_impl(v, p.type(), &c, strict);
    }
    if (!ok) {
      stack->resize(base);
      *why = name() + ": argument '" + p.name() + "' expected " + arg_type_string(p) +
             " but got " + value_type_name(v);
      return CT_ERR_TYPE;
    }
    stack->push_back(std::move(c));
  }
  return CT_OK;
}

// ---- Operator handles -------------------------------------------------------

enum FastKind : uint8_t {
  FK_SLOW = 0,  // needs the binder
  FK_TENSOR,
  FK_OPT_TENSOR,
  FK_INT,
  FK_OPT_INT,
  FK_FLOAT,
  FK_OPT_FLOAT,
  FK_BOOL,
  FK_OPT_BOOL,
  FK_SCALAR,
  FK_OPT_SCALAR,
  FK_STR,
  FK_INT_LIST,
  FK_TENSOR_LIST,
};

FastKind fast_kind(const c10::Argument &a) {
  if (is_scalar_type_arg(a)) return FK_SLOW;
  TypePtr t = a.type();
  bool opt = false;
  if (t->kind() == TypeKind::OptionalType) {
    opt = true;
    t = t->castRaw<c10::OptionalType>()->getElementType();
  }
  switch (t->kind()) {
    case TypeKind::TensorType: return opt ? FK_OPT_TENSOR : FK_TENSOR;
    case TypeKind::IntType: return opt ? FK_OPT_INT : FK_INT;
    case TypeKind::FloatType: return opt ? FK_OPT_FLOAT : FK_FLOAT;
    case TypeKind::BoolType: return opt ? FK_OPT_BOOL : FK_BOOL;
    case TypeKind::NumberType: return opt ? FK_OPT_SCALAR : FK_SCALAR;
    case TypeKind::StringType: return opt ? FK_SLOW : FK_STR;
    case TypeKind::ListType: {
      if (opt) return FK_SLOW;
      auto e = t->castRaw<c10::ListType>()->getElementType()->kind();
      if (e == TypeKind::IntType) return FK_INT_LIST;
      if (e == TypeKind::TensorType) return FK_TENSOR_LIST;
      return FK_SLOW;
    }
    default: return FK_SLOW;
  }
}

inline __attribute__((always_inline)) bool fast_match(FastKind k, const IValue &v) {
  switch (k) {
    case FK_TENSOR: return v.isTensor();
    case FK_OPT_TENSOR: return v.isTensor() || v.isNone();
    case FK_INT: return v.isInt();
    case FK_OPT_INT: return v.isInt() || v.isNone();
    case FK_FLOAT: return v.isDouble();
    case FK_OPT_FLOAT: return v.isDouble() || v.isNone();
    case FK_BOOL: return v.isBool();
    case FK_OPT_BOOL: return v.isBool() || v.isNone();
    case FK_SCALAR: return v.isInt() || v.isDouble() || v.isBool() || v.isComplexDouble();
    case FK_OPT_SCALAR:
      return v.isInt() || v.isDouble() || v.isBool() || v.isComplexDouble() || v.isNone();
    case FK_STR: return v.isString();
    case FK_INT_LIST: return v.isIntList();
    case FK_TENSOR_LIST: return v.isTensorList();
    default: return false;
  }
}

enum TypedShape : uint8_t { TS_NONE = 0, TS_T, TS_TT, TS_TTS, TS_TS, TS_TSS };

struct ArgInfo {
  std::string name, type, def;
  bool has_def;
  int32_t kwonly;
  FastKind kind;
};

struct Overload {
  std::shared_ptr<torch::jit::Operator> op;
  mutable torch::jit::Operation operation{nullptr};
  const c10::FunctionSchema *schema = nullptr;  // owned by *op
  std::string schema_str;
  std::vector<ArgInfo> args;
  std::vector<std::pair<std::string, std::string>> rets;
  std::vector<IValue> defaults;  // per argument; None where there is none
  size_t n_positional = 0;       // arguments that may be given positionally
  size_t first_tail_default = 0; // every argument from this index on has a default
  std::vector<FastKind> kinds;   // per argument, contiguous (the fast path scans it)
  std::vector<c10::Scalar> default_scalars;  // per argument; defaults of Scalar arguments
  size_t n_returns = 0;
  bool callable = false;  // has an operation; not vararg/varret
  std::string not_callable_why;
  // Unboxed fast path for dispatcher ops of a few common non-aliasing shapes
  // returning one Tensor: (Tensor), (Tensor, Tensor), (Tensor, Tensor,
  // Scalar), (Tensor, Scalar), (Tensor, Scalar, Scalar).
  TypedShape typed = TS_NONE;
  c10::optional<c10::TypedOperatorHandle<at::Tensor(const at::Tensor &)>> h_t;
  c10::optional<c10::TypedOperatorHandle<at::Tensor(const at::Tensor &, const at::Tensor &)>> h_tt;
  c10::optional<c10::TypedOperatorHandle<at::Tensor(const at::Tensor &, const at::Tensor &,
                                                    const at::Scalar &)>>
      h_tts;
  c10::optional<c10::TypedOperatorHandle<at::Tensor(const at::Tensor &, const at::Scalar &)>> h_ts;
  c10::optional<c10::TypedOperatorHandle<at::Tensor(const at::Tensor &, const at::Scalar &,
                                                    const at::Scalar &)>>
      h_tss;
};

void setup_typed(Overload &o) {
  const auto &s = *o.schema;
  if (!o.op->isC10Op() || s.returns().size() != 1 || s.is_mutable()) return;
  if (s.returns()[0].type()->kind() != TypeKind::TensorType || s.returns()[0].alias_info()) return;
  std::string sig;
  for (const auto &a : s.arguments()) {
    if (a.alias_info()) return;
    auto k = a.type()->kind();
    if (k == TypeKind::TensorType) sig += 'T';
    else if (k == TypeKind::NumberType) sig += 'S';
    else return;
  }
  auto h = c10::Dispatcher::singleton().findSchema(s.operator_name());
  if (!h) return;
  try {
    if (sig == "T") {
      o.h_t = h->typed<at::Tensor(const at::Tensor &)>();
      o.typed = TS_T;
    } else if (sig == "TT") {
      o.h_tt = h->typed<at::Tensor(const at::Tensor &, const at::Tensor &)>();
      o.typed = TS_TT;
    } else if (sig == "TTS") {
      o.h_tts = h->typed<at::Tensor(const at::Tensor &, const at::Tensor &, const at::Scalar &)>();
      o.typed = TS_TTS;
    } else if (sig == "TS") {
      o.h_ts = h->typed<at::Tensor(const at::Tensor &, const at::Scalar &)>();
      o.typed = TS_TS;
    } else if (sig == "TSS") {
      o.h_tss = h->typed<at::Tensor(const at::Tensor &, const at::Scalar &, const at::Scalar &)>();
      o.typed = TS_TSS;
    }
  } catch (...) {
    o.typed = TS_NONE;  // registered with another C++ signature: boxed path
  }
}

Overload make_overload(std::shared_ptr<torch::jit::Operator> op) {
  Overload o;
  o.op = std::move(op);
  o.schema = &o.op->schema();
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
  while (o.first_tail_default > 0 && o.args[o.first_tail_default - 1].has_def) --o.first_tail_default;
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

}  // namespace

struct ct_op {
  std::string name;
  bool is_set = false;  // an overload set (resolved per call)
  std::vector<Overload> overloads;
};

namespace {

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

// RAII: the per-thread reusable stack, or a local one when re-entered (a
// foreign op calling ops).
struct StackLease {
  static thread_local Stack tls_stack;
  static thread_local bool tls_busy;
  Stack local;
  Stack *s;
  bool owns_tls;
  StackLease() {
    if (!tls_busy) {
      tls_busy = true;
      owns_tls = true;
      s = &tls_stack;
    } else {
      owns_tls = false;
      s = &local;
    }
  }
  ~StackLease() {
    s->clear();
    if (owns_tls) tls_busy = false;
  }
};
thread_local Stack StackLease::tls_stack;
thread_local bool StackLease::tls_busy = false;

ct_status results_to_value(ct_value **out, const Overload &o, Stack &st) {
  if (o.n_returns == 0) {
    *out = ct::new_value(IValue());
  } else if (o.n_returns == 1) {
    if (st.size() != 1)
      return ct::set_error(CT_ERR_INTERNAL, "%s: operator left %zu values, expected 1",
                           o.schema_str.c_str(), st.size());
    *out = ct::new_value(std::move(st[0]));
  } else {
    if (st.size() != o.n_returns)
      return ct::set_error(CT_ERR_INTERNAL, "%s: operator left %zu values, expected %zu",
                           o.schema_str.c_str(), st.size(), o.n_returns);
    *out = ct::new_value(c10::ivalue::Tuple::create(std::vector<IValue>(
        std::make_move_iterator(st.begin()), std::make_move_iterator(st.end()))));
  }
  return CT_OK;
}

// The call path is split so that what a small op runs stays compact: the
// profile (callgrind --cache-sim, bench_c) showed the cost of ctorch's layer
// on a ~0.5 us op is mostly instruction-cache misses (torch's own path nearly
// fills L1i), not instructions, so the exact-types path below must not share
// its cache lines with the binder and the error formatting.

// Exact positional types, no unboxed kernel: a reused stack, boxed call.
__attribute__((noinline)) ct_status call_boxed_exact(ct_value **out, const Overload &o,
                                                     const ct_value *const *args, size_t n) {
  const size_t na = o.kinds.size();
  StackLease lease;
  Stack &st = *lease.s;
  st.reserve(na);
  for (size_t i = 0; i < n; ++i) st.push_back(args[i]->v);
  for (size_t i = n; i < na; ++i) st.push_back(o.defaults[i]);
  o.operation(st);
  return results_to_value(out, o, st);
}

// Keywords, coercions, overload sets, errors.
__attribute__((noinline)) ct_status call_op_general(const char *func, ct_value **out,
                                                    const ct_op *op, const ct_value *const *args,
                                                    size_t n, const char *const *kwnames,
                                                    const ct_value *const *kwvalues, size_t nkw) {
  StackLease lease;
  Stack &st = *lease.s;
  if (!op->is_set) {
    const Overload &o = op->overloads[0];
    if (!o.callable)
      return ct::set_error(CT_ERR_NOT_SUPPORTED, "%s: %s: %s\n  schema: %s", func,
                           op_display_name(*o.schema).c_str(), o.not_callable_why.c_str(),
                           o.schema_str.c_str());
    std::string why;
    ct_status rc = bind_impl(*o.schema, args, n, kwnames, kwvalues, nkw, false, &st, false, &why);
    if (rc != CT_OK)
      return ct::set_error(rc, "%s: %s\n  schema: %s", func, why.c_str(), o.schema_str.c_str());
    o.operation(st);
    return results_to_value(out, o, st);
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (const Overload &o : op->overloads) {
      if (!o.callable) continue;
      std::string why;
      st.clear();
      if (bind_impl(*o.schema, args, n, kwnames, kwvalues, nkw, false, &st, pass == 0, &why) !=
          CT_OK)
        continue;
      o.operation(st);
      return results_to_value(out, o, st);
    }
  }
  // Nothing matched: explain every candidate.
  std::string detail;
  ct_status code = CT_ERR_TYPE;
  bool any_type = false;
  for (const Overload &o : op->overloads) {
    detail += "\n  ";
    detail += o.schema_str;
    if (!o.callable) {
      detail += "\n      (" + o.not_callable_why + ")";
      continue;
    }
    std::string why;
    st.clear();
    ct_status rc = bind_impl(*o.schema, args, n, kwnames, kwvalues, nkw, false, &st, false, &why);
    if (rc == CT_ERR_TYPE) any_type = true;
    detail += "\n      (" + why + ")";
  }
  if (!any_type) code = CT_ERR_INVALID_ARGUMENT;
  return ct::set_error(code, "%s: no overload of %s accepts these arguments; candidates:%s", func,
                       op->name.c_str(), detail.c_str());
}


inline ct_status call_op(const char *func, ct_value **out, const ct_op *op,
                         const ct_value *const *args, size_t n, const char *const *kwnames,
                         const ct_value *const *kwvalues, size_t nkw) {
  // ---- Fast path: one overload, positional, exact types. Kept lean: it is
  // what every small op from a binding pays (bench/bench_overhead.cpp).
  if (!op->is_set && nkw == 0) {
    const Overload &o = op->overloads[0];
    if (__builtin_expect(o.callable && n <= o.n_positional && n >= o.first_tail_default &&
                             (n == 0 || args != nullptr),
                         1)) {
      const FastKind *kinds = o.kinds.data();
      bool fast = true;
      for (size_t i = 0; i < n; ++i) {
        if (args[i] == nullptr || !fast_match(kinds[i], args[i]->v)) {
          fast = false;
          break;
        }
      }
      if (fast && o.typed != TS_NONE) {
        // Arguments are checked above; take them (or defaults) unboxed.
        auto T = [&](size_t i) __attribute__((always_inline)) -> const at::Tensor & {
          return i < n ? args[i]->v.toTensor() : o.defaults[i].toTensor();
        };
        auto S = [&](size_t i) __attribute__((always_inline)) -> c10::Scalar {
          return i < n ? args[i]->v.toScalar() : o.default_scalars[i];
        };
        switch (o.typed) {
          case TS_T: *out = new ct_value{IValue(o.h_t->call(T(0)))}; return CT_OK;
          case TS_TT: *out = new ct_value{IValue(o.h_tt->call(T(0), T(1)))}; return CT_OK;
          case TS_TTS:
            *out = new ct_value{IValue(o.h_tts->call(T(0), T(1), S(2)))};
            return CT_OK;
          case TS_TS: *out = new ct_value{IValue(o.h_ts->call(T(0), S(1)))}; return CT_OK;
          case TS_TSS:
            *out = new ct_value{IValue(o.h_tss->call(T(0), S(1), S(2)))};
            return CT_OK;
          default: break;
        }
      }
      if (fast) return call_boxed_exact(out, o, args, n);
    }
  }
  return call_op_general(func, out, op, args, n, kwnames, kwvalues, nkw);
}

// ---- Tensors in, tensors out (ct_op_call_tensors).

// Moves the result value's tensors into outputs[0..n_outputs).
ct_status unpack_tensors(const char *func, ct_tensor **outputs, size_t n_outputs,
                         const ct_op *op, IValue &&result) {
  std::vector<IValue> items;
  if (result.isTuple()) {
    const auto &el = result.toTupleRef().elements();
    items.assign(el.begin(), el.end());
  } else if (!result.isNone()) {
    items.push_back(std::move(result));
  }
  if (items.size() != n_outputs)
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: %s returns %zu values, n_outputs is %zu",
                         func, op->name.c_str(), items.size(), n_outputs);
  for (size_t i = 0; i < items.size(); ++i)
    if (!items[i].isTensor())
      return ct::set_error(CT_ERR_TYPE, "%s: result %zu of %s is %s, not a Tensor", func, i,
                           op->name.c_str(), items[i].tagKind().c_str());
  for (size_t i = 0; i < items.size(); ++i)
    outputs[i] = ct::new_tensor(std::move(items[i]).toTensor());
  return CT_OK;
}

ct_status call_op_tensors(const char *func, ct_tensor **outputs, size_t n_outputs,
                          const ct_op *op, const ct_tensor *const *inputs, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!inputs[i])
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: inputs[%zu] is NULL", func, i);
  if (!op->is_set && n_outputs == 1) {
    const Overload &o = op->overloads[0];
    bool tensors = o.callable && n <= o.n_positional && n >= o.first_tail_default;
    for (size_t i = 0; tensors && i < n; ++i) tensors = o.kinds[i] == FK_TENSOR;
    if (tensors && o.typed != TS_NONE) {
      auto T = [&](size_t i) __attribute__((always_inline)) -> const at::Tensor & {
        return i < n ? inputs[i]->t : o.defaults[i].toTensor();
      };
      auto S = [&](size_t i) __attribute__((always_inline)) -> const c10::Scalar & {
        return o.default_scalars[i];  // Scalars here always come from defaults
      };
      switch (o.typed) {
        case TS_T: outputs[0] = new ct_tensor{o.h_t->call(T(0))}; return CT_OK;
        case TS_TT: outputs[0] = new ct_tensor{o.h_tt->call(T(0), T(1))}; return CT_OK;
        case TS_TTS: outputs[0] = new ct_tensor{o.h_tts->call(T(0), T(1), S(2))}; return CT_OK;
        case TS_TS: outputs[0] = new ct_tensor{o.h_ts->call(T(0), S(1))}; return CT_OK;
        case TS_TSS: outputs[0] = new ct_tensor{o.h_tss->call(T(0), S(1), S(2))}; return CT_OK;
        default: break;
      }
    }
  }
  // General path: the same binding and overload resolution as ct_op_call.
  std::vector<ct_value> vals;
  vals.reserve(n);
  std::vector<const ct_value *> ptrs(n);
  for (size_t i = 0; i < n; ++i) {
    vals.push_back(ct_value{IValue(inputs[i]->t)});
    ptrs[i] = &vals.back();
  }
  ct_value *res = nullptr;
  ct_status rc = call_op(func, &res, op, ptrs.data(), n, nullptr, nullptr, 0);
  if (rc != CT_OK) return rc;
  std::unique_ptr<ct_value> owned(res);
  return unpack_tensors(func, outputs, n_outputs, op, std::move(owned->v));
}

// ---- Name cache for ct_op_call_name.
// Entries are never freed (a registration retires the whole map into
// g_retired), so a raw pointer taken under the lock stays valid. Keys are
// views of the names stored in the entries: lookups do not allocate.
struct CachedOp {
  std::string qualified_name;
  std::shared_ptr<ct_op> op;
};
std::mutex g_cache_mu;
// Process-lifetime cache: never destroyed (ops may be called during exit), and
// reachable from this reference, so leak checkers do not report its entries.
std::unordered_map<std::string_view, CachedOp *> &g_cache =
    *new std::unordered_map<std::string_view, CachedOp *>();
std::vector<std::unordered_map<std::string_view, CachedOp *>> *g_retired =
    new std::vector<std::unordered_map<std::string_view, CachedOp *>>();
// Bumped (under g_cache_mu) whenever the cache is retired by a registration.
std::atomic<uint64_t> g_cache_gen{0};
// Per-thread memo of the last name looked up: a binding calling the same op
// in a loop skips the mutex and the hash (the profile's cost over ct_op_call).
// Entries are never freed, so the pointer stays valid; a registration makes
// it stale through g_cache_gen. Trivially destructible: no TLS wrapper.
struct LastLookup {
  const CachedOp *entry;
  uint64_t gen;
};
thread_local LastLookup tls_last_lookup{nullptr, 0};

// ---- Foreign ops.
std::mutex g_register_mu;

struct ForeignOp {
  ct_op_fn fn;
  void *ctx;
  std::shared_ptr<c10::FunctionSchema> schema;
  std::string name;
};

void run_foreign(const ForeignOp &f, Stack &stack) {
  const auto &schema = *f.schema;
  const size_t n = schema.arguments().size();
  if (stack.size() < n)
    ct::raise(CT_ERR_INTERNAL, "%s: stack has %zu values, expected %zu", f.name.c_str(),
              stack.size(), n);
  std::vector<ct_value> vals;
  vals.reserve(n);
  for (size_t i = stack.size() - n; i < stack.size(); ++i) vals.push_back(ct_value{stack[i]});
  std::vector<const ct_value *> ptrs(n);
  for (size_t i = 0; i < n; ++i) ptrs[i] = &vals[i];
  ct_value *res = nullptr;
  ct_status rc = f.fn(f.ctx, n ? ptrs.data() : nullptr, n, &res);
  std::unique_ptr<ct_value> owned(res);
  if (rc != CT_OK) {
    const char *msg = ct_last_error();
    ct::raise(CT_ERR_CALLBACK, "%s: foreign op callback failed (status %d): %s", f.name.c_str(),
              static_cast<int>(rc), (msg && *msg) ? msg : "(no message)");
  }
  vals.clear();
  const auto &rets = schema.returns();
  std::vector<IValue> outs;
  if (rets.empty()) {
    if (owned && !owned->v.isNone())
      ct::raise(CT_ERR_CALLBACK, "%s: foreign op returns nothing but the callback stored %s",
                f.name.c_str(), value_type_name(owned->v).c_str());
  } else {
    if (!owned)
      ct::raise(CT_ERR_CALLBACK, "%s: foreign op callback stored no result", f.name.c_str());
    std::vector<IValue> got;
    if (rets.size() == 1) {
      got.push_back(owned->v);
    } else {
      if (!owned->v.isTuple() || owned->v.toTupleRef().elements().size() != rets.size())
        ct::raise(CT_ERR_CALLBACK, "%s: callback must return a tuple of %zu values, got %s",
                  f.name.c_str(), rets.size(), value_type_name(owned->v).c_str());
      const auto &el = owned->v.toTupleRef().elements();
      got.assign(el.begin(), el.end());
    }
    for (size_t i = 0; i < rets.size(); ++i) {
      IValue c;
      if (!coerce_impl(got[i], rets[i].type(), &c, false))
        ct::raise(CT_ERR_CALLBACK, "%s: result %zu expected %s but the callback returned %s",
                  f.name.c_str(), i, arg_type_string(rets[i]).c_str(),
                  value_type_name(got[i]).c_str());
      outs.push_back(std::move(c));
    }
  }
  torch::jit::drop(stack, n);
  for (auto &o : outs) stack.push_back(std::move(o));
}

}  // namespace

// ---- Internal helpers shared with module.cpp ----------------------------------

namespace ct {

ct_status bind_arguments(const char *func, const c10::FunctionSchema &schema,
                         const ct_value *const *args, size_t n, const char *const *kwnames,
                         const ct_value *const *kwvalues, size_t nkw, bool skip_self,
                         torch::jit::Stack *stack, bool set_errors) {
  std::string why;
  ct_status rc = bind_impl(schema, args, n, kwnames, kwvalues, nkw, skip_self, stack, false, &why);
  if (rc != CT_OK && set_errors)
    ct::set_error(rc, "%s: %s\n  schema: %s", func ? func : "ctorch", why.c_str(),
                  schema_string(schema).c_str());
  return rc;
}

bool coerce(const c10::IValue &in, const c10::TypePtr &type, c10::IValue *out) {
  try {
    return coerce_impl(in, type, out, false);
  } catch (...) {
    return false;
  }
}

}  // namespace ct

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

#define CT_CHECK_OVERLOAD(op, ov)                                                          \
  do {                                                                                     \
    CT_CHECK_NOT_NULL(op);                                                                 \
    if ((ov) >= (op)->overloads.size())                                                    \
      return ct::set_error(CT_ERR_INDEX, "%s: overload index %zu out of range (%s has %zu)", \
                           ct_fn_, (size_t)(ov), (op)->name.c_str(),                      \
                           (op)->overloads.size());                                        \
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
      return ct::set_error(CT_ERR_INDEX, "%s: argument index %zu out of range (%s has %zu)",
                           ct_fn_, i, o.schema_str.c_str(), o.args.size());
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
      return ct::set_error(CT_ERR_INDEX, "%s: return index %zu out of range (%s has %zu)",
                           ct_fn_, i, o.schema_str.c_str(), o.rets.size());
    if (name) *name = o.rets[i].first.c_str();
    if (type) *type = o.rets[i].second.c_str();
    return CT_OK;
  });
}

ct_status ct_op_call(ct_value **out, const ct_op *op, const ct_value *const *args, size_t n,
                     const char *const *kwnames, const ct_value *const *kwvalues, size_t nkw) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(op);
    return call_op(ct_fn_, out, op, args, n, kwnames, kwvalues, nkw);
  });
}

ct_status ct_op_call_tensors(ct_tensor **outputs, size_t n_outputs, const ct_op *op,
                             const ct_tensor *const *inputs, size_t n_inputs) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(op);
    if (n_outputs > 0) CT_CHECK_NOT_NULL(outputs);
    if (n_inputs > 0) CT_CHECK_NOT_NULL(inputs);
    return call_op_tensors(ct_fn_, outputs, n_outputs, op, inputs, n_inputs);
  });
}

ct_status ct_op_call_name(ct_value **out, const char *qualified_name, const ct_value *const *args,
                          size_t n, const char *const *kwnames, const ct_value *const *kwvalues,
                          size_t nkw) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(qualified_name);
    const ct_op *cached = nullptr;
    LastLookup &last = tls_last_lookup;
    if (last.entry && last.gen == g_cache_gen.load(std::memory_order_acquire) &&
        std::strcmp(last.entry->qualified_name.c_str(), qualified_name) == 0) {
      cached = last.entry->op.get();
    } else {
      std::lock_guard<std::mutex> lk(g_cache_mu);
      auto it = g_cache.find(std::string_view(qualified_name));
      if (it != g_cache.end()) {
        cached = it->second->op.get();
        last.entry = it->second;
        last.gen = g_cache_gen.load(std::memory_order_relaxed);
      }
    }
    if (cached) return call_op(ct_fn_, out, cached, args, n, kwnames, kwvalues, nkw);
    std::shared_ptr<ct_op> h;
    {
      std::string q = qualified_name;
      std::string name = q, ov;
      bool has_ov = false;
      auto sep = q.find("::");
      if (sep != std::string::npos) {
        auto dot = q.find('.', sep + 2);
        if (dot != std::string::npos) {
          name = q.substr(0, dot);
          ov = q.substr(dot + 1);
          has_ov = true;
        }
      }
      ct_status rc = find_op(ct_fn_, &h, name, has_ov ? ov.c_str() : nullptr);
      if (rc != CT_OK) return rc;
      std::lock_guard<std::mutex> lk(g_cache_mu);
      if (g_cache.find(std::string_view(q)) == g_cache.end()) {
        auto *e = new CachedOp{q, h};
        g_cache.emplace(std::string_view(e->qualified_name), e);
      }
    }
    return call_op(ct_fn_, out, h.get(), args, n, kwnames, kwvalues, nkw);
  });
}

ct_status ct_op_list(ct_value **out) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    std::vector<std::string> names;
    std::unordered_set<std::string> seen;
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

ct_status ct_op_register(const char *schema, ct_op_fn fn, void *ctx) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(schema);
    CT_CHECK_NOT_NULL(fn);
    c10::FunctionSchema parsed = [&] {
      try {
        return torch::jit::parseSchema(schema);
      } catch (const std::exception &e) {
        std::string m = e.what();
        auto nl = m.find('\n');
        ct::raise(CT_ERR_INVALID_ARGUMENT, "bad schema '%s': %s", schema,
                  m.substr(0, nl).c_str());
      }
    }();
    const std::string &qname = parsed.name();
    auto sep = qname.find("::");
    if (sep == std::string::npos || sep == 0 || sep + 2 >= qname.size())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: schema '%s' needs a namespaced name such as 'myns::scale'",
                           ct_fn_, schema);
    if (parsed.is_vararg() || parsed.is_varret())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: variadic schemas are not supported: '%s'",
                           ct_fn_, schema);
    std::lock_guard<std::mutex> lk(g_register_mu);
    for (const auto &op : torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(qname))) {
      if (op->schema().overload_name() == parsed.overload_name())
        return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                             "%s: operator '%s' is already registered as '%s'", ct_fn_,
                             op_display_name(parsed).c_str(),
                             schema_string(op->schema()).c_str());
    }
    auto f = std::make_shared<ForeignOp>();
    f->fn = fn;
    f->ctx = ctx;
    f->schema = std::make_shared<c10::FunctionSchema>(parsed);
    f->name = op_display_name(parsed);
    auto kind = parsed.hasAnyAliasInfo() ? c10::AliasAnalysisKind::FROM_SCHEMA
                                         : c10::AliasAnalysisKind::CONSERVATIVE;
    std::vector<c10::optional<torch::jit::Operator>> ops;
    ops.emplace_back(torch::jit::Operator(
        schema, [f](Stack &stack) { run_foreign(*f, stack); }, kind));
    // Kept alive for the life of the process (registrations are never undone),
    // in a never-destroyed list so leak checkers see them as reachable.
    {
      static std::mutex reg_mu;
      static auto *registrations = new std::vector<std::unique_ptr<torch::jit::RegisterOperators>>();
      std::lock_guard<std::mutex> lk(reg_mu);
      registrations->emplace_back(new torch::jit::RegisterOperators(std::move(ops)));
    }
    {
      // New overloads change overload sets: forget cached lookups.
      std::lock_guard<std::mutex> lk2(g_cache_mu);
      g_retired->push_back(std::move(g_cache));
      g_cache.clear();
      g_cache_gen.fetch_add(1, std::memory_order_release);
    }
    return CT_OK;
  });
}

}  // extern "C"
