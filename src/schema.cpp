// The one argument binder and coercion engine (declared in schema.h), used
// by operator calls, module methods and scripts: converts Python-like values
// to schema types and binds positional/keyword arguments with defaults, with
// one set of messages; plus the names of types and schemas in messages.
//
// Arguments whose schema type is ScalarType (dtype=...) take ctorch's dtype
// codes (CT_FLOAT64, ...), as everywhere else in the C ABI; they are
// translated to torch's ScalarType (so do int arguments named dtype, see
// is_scalar_type_arg). Layout and MemoryFormat arguments take
// torch's own integer values (ctorch has no codes for them).
#include "schema.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <vector>

namespace ct {

using c10::IValue;
using c10::TypeKind;
using c10::TypePtr;
using torch::jit::Stack;

// ---- Pretty names ----------------------------------------------------------

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
static bool is_int_list_type(TypePtr t) {
  if (t->kind() == TypeKind::OptionalType) t = t->castRaw<c10::OptionalType>()->getElementType();
  return t->kind() == TypeKind::ListType &&
         t->castRaw<c10::ListType>()->getElementType()->kind() == TypeKind::IntType;
}

// A ScalarType argument, or an int one named dtype: TorchScript's prim
// overloads (aten::to.prim_dtype(Tensor self, int? dtype, ...)) take torch's
// ScalarType as a plain int and pass it on unchecked (a bad one crashed inside
// LibTorch; found by fuzz_op_call), so they take ctorch's codes too.
bool is_scalar_type_arg(const c10::Argument &a) {
  TypePtr t = a.real_type();
  if (t->kind() == TypeKind::OptionalType) t = t->castRaw<c10::OptionalType>()->getElementType();
  return t->kind() == TypeKind::ScalarTypeType ||
         (t->kind() == TypeKind::IntType && a.name() == "dtype");
}

// Layout or MemoryFormat (optional or not): name and number of valid codes
// (torch's own values, 0 .. n-1); nullptr for other arguments.
const char *enum_arg(const c10::Argument &a, int64_t *n) {
  TypePtr t = a.real_type();
  if (t->kind() == TypeKind::OptionalType) t = t->castRaw<c10::OptionalType>()->getElementType();
  if (t->kind() == TypeKind::LayoutType) {
    *n = static_cast<int64_t>(c10::Layout::NumOptions);
    return "layout";
  }
  if (t->kind() == TypeKind::MemoryFormatType) {
    *n = static_cast<int64_t>(c10::MemoryFormat::NumOptions);
    return "memory format";
  }
  return nullptr;
}

// ---- Coercion ---------------------------------------------------------------

// *out = a List[T] of the items, each converted by get(item, &x); false when
// one does not convert.
template <class T, class Get>
static bool coerce_list_elems(const std::vector<IValue> &items, Get get, IValue *out) {
  c10::List<T> l;
  l.reserve(items.size());
  for (const IValue &e : items) {
    T x;
    if (!get(e, &x)) return false;
    l.push_back(std::move(x));
  }
  *out = IValue(std::move(l));
  return true;
}

static bool coerce_list(const IValue &in, const c10::ListType &lt, IValue *out, bool strict) {
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
    case TypeKind::IntType:
      return coerce_list_elems<int64_t>(
          items,
          [](const IValue &e, int64_t *x) {
            if (!e.isInt()) return false;
            *x = e.toInt();
            return true;
          },
          out);
    case TypeKind::FloatType:
      return coerce_list_elems<double>(
          items,
          [strict](const IValue &e, double *x) {
            if (e.isDouble())
              *x = e.toDouble();
            else if (!strict && e.isInt())
              *x = static_cast<double>(e.toInt());
            else
              return false;
            return true;
          },
          out);
    case TypeKind::BoolType:
      return coerce_list_elems<bool>(
          items,
          [](const IValue &e, bool *x) {
            if (!e.isBool()) return false;
            *x = e.toBool();
            return true;
          },
          out);
    case TypeKind::TensorType:
      return coerce_list_elems<at::Tensor>(
          items,
          [](const IValue &e, at::Tensor *x) {
            if (!e.isTensor()) return false;
            *x = e.toTensor();
            return true;
          },
          out);
    default: break;
  }
  if (elem->kind() == TypeKind::OptionalType &&
      elem->castRaw<c10::OptionalType>()->getElementType()->kind() == TypeKind::TensorType) {
    return coerce_list_elems<c10::optional<at::Tensor>>(
        items,
        [](const IValue &e, c10::optional<at::Tensor> *x) {
          if (e.isNone())
            *x = c10::nullopt;
          else if (e.isTensor())
            *x = e.toTensor();
          else
            return false;
          return true;
        },
        out);
  }
  c10::impl::GenericList l(elem);
  l.reserve(items.size());
  for (const IValue &e : items) {
    IValue x;
    if (!coerce(e, elem, &x, strict)) return false;
    l.push_back(std::move(x));
  }
  *out = IValue(std::move(l));
  return true;
}

bool coerce(const IValue &in, const TypePtr &type, IValue *out, bool strict) {
  switch (type->kind()) {
    case TypeKind::AnyType: *out = in; return true;
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
      return coerce(in, type->castRaw<c10::OptionalType>()->getElementType(), out, strict);
    case TypeKind::ListType: return coerce_list(in, *type->castRaw<c10::ListType>(), out, strict);
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
        if (!coerce(items[i], tt.elements()[i], &conv[i], strict)) return false;
      *out = c10::ivalue::Tuple::create(std::move(conv));
      return true;
    }
    case TypeKind::DictType: {
      // Already the right type: pass through (same dict object); else
      // re-type element by element (a Dict[str, Any] for Dict[str, Tensor]).
      if (!in.isGenericDict()) return false;
      if (in.type()->isSubtypeOf(*type)) {
        *out = in;
        return true;
      }
      const auto &dt = *type->castRaw<c10::DictType>();
      c10::impl::GenericDict d(dt.getKeyType(), dt.getValueType());
      for (const auto &e : in.toGenericDict()) {
        IValue k, v;
        if (!coerce(e.key(), dt.getKeyType(), &k, strict) ||
            !coerce(e.value(), dt.getValueType(), &v, strict))
          return false;
        d.insert_or_assign(std::move(k), std::move(v));
      }
      *out = IValue(std::move(d));
      return true;
    }
    default: break;
  }
  // Objects, unions, futures...: accept what the type system accepts.
  try {
    if (in.type()->isSubtypeOf(*type)) {
      *out = in;
      return true;
    }
  } catch (...) {}
  return false;
}

// ---- Binding -----------------------------------------------------------------

ct_status check_call_args(const char *func, const ct_value *const *args, size_t n,
                          const char *const *kwnames, const ct_value *const *kwvalues, size_t nkw) {
  if (n > 0 && args == nullptr)
    return set_error(CT_ERR_INVALID_ARGUMENT, "%s: 'args' is NULL but n is %zu", func, n);
  if (nkw > 0 && (kwnames == nullptr || kwvalues == nullptr))
    return set_error(CT_ERR_INVALID_ARGUMENT, "%s: 'kwnames' or 'kwvalues' is NULL but nkw is %zu",
                     func, nkw);
  for (size_t i = 0; i < n; ++i)
    if (args[i] == nullptr)
      return set_error(CT_ERR_INVALID_ARGUMENT, "%s: args[%zu] is NULL", func, i);
  for (size_t k = 0; k < nkw; ++k)
    if (kwnames[k] == nullptr || kwvalues[k] == nullptr)
      return set_error(CT_ERR_INVALID_ARGUMENT, "%s: kwnames[%zu] or kwvalues[%zu] is NULL", func,
                       k, k);
  return CT_OK;
}

ct_status bind_call(const c10::FunctionSchema &schema, const ct_value *const *args, size_t n,
                    const char *const *kwnames, const ct_value *const *kwvalues, size_t nkw,
                    bool skip_self, Stack *stack, bool strict, std::string *why) {
  const auto &params = schema.arguments();
  const size_t start = (skip_self && !params.empty()) ? 1 : 0;
  const size_t np = params.size() - start;
  size_t npos = 0;
  for (size_t i = start; i < params.size() && !params[i].kwarg_only(); ++i) ++npos;
  auto name = [&] { return op_display_name(schema); };

  if (n > npos) {
    *why = name() + ": too many positional arguments: expected at most " + std::to_string(npos) +
           ", got " + std::to_string(n);
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
  for (size_t i = 0; i < n; ++i) slot[i] = &args[i]->v;
  for (size_t k = 0; k < nkw; ++k) {
    size_t j = np;
    for (size_t i = 0; i < np; ++i)
      if (params[start + i].name() == kwnames[k]) {
        j = i;
        break;
      }
    // numpy's names for dim and keepdim, which torch's Python accepts too
    const char *alias = !std::strcmp(kwnames[k], "axis")       ? "dim"
                        : !std::strcmp(kwnames[k], "keepdims") ? "keepdim"
                                                               : nullptr;
    for (size_t i = 0; j == np && alias && i < np; ++i)
      if (params[start + i].name() == alias) j = i;
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
  c10::TypeEnv type_env;  // bindings of the schema's type variables
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
    int64_t n_codes = 0;
    const char *enum_name = nullptr;
    if (v.isInt() && is_scalar_type_arg(p)) {
      c10::ScalarType st;
      if (v.toInt() < INT32_MIN || v.toInt() > INT32_MAX ||
          !ct::to_scalar_type(static_cast<int32_t>(v.toInt()), &st)) {
        stack->resize(base);
        *why = name() + ": argument '" + p.name() + "': unknown dtype code " +
               std::to_string(v.toInt());
        return CT_ERR_TYPE;
      }
      c = IValue(static_cast<int64_t>(st));
      ok = true;
    } else if (v.isInt() && (enum_name = enum_arg(p, &n_codes)) != nullptr) {
      // A code LibTorch does not have would reach its kernels unchecked.
      if (v.toInt() < 0 || v.toInt() >= n_codes) {
        stack->resize(base);
        *why = name() + ": argument '" + p.name() + "': unknown " + enum_name + " code " +
               std::to_string(v.toInt()) + " (valid: 0 to " + std::to_string(n_codes - 1) + ")";
        return CT_ERR_INVALID_ARGUMENT;
      }
      c = v;
      ok = true;
    } else if (!strict && v.isInt() && p.N() && is_int_list_type(p.type())) {
      // int[N] accepts one int, as in Python (kernel_size=3 -> [3, 3]).
      c = IValue(c10::List<int64_t>(std::vector<int64_t>(*p.N(), v.toInt())));
      ok = true;
    } else if (p.type()->hasFreeVariables()) {
      // Type variables (t, t[], Dict(t, tVal)) bind to the value's own type,
      // the same one for every argument, as TorchScript's schema matcher does.
      c10::MatchTypeReturn m = c10::matchTypeVariables(p.type(), v.type(), type_env);
      if (!m.success()) {
        stack->resize(base);
        *why = name() + ": argument '" + p.name() + "' expected " + arg_type_string(p) +
               " but got " + value_type_name(v) + " (" + m.reason() + ")";
        return CT_ERR_TYPE;
      }
      c = v;
      ok = true;
    } else {
      ok = coerce(v, p.type(), &c, strict);
    }
    if (!ok) {
      stack->resize(base);
      *why = name() + ": argument '" + p.name() + "' expected " + arg_type_string(p) + " but got " +
             value_type_name(v);
      return CT_ERR_TYPE;
    }
    stack->push_back(std::move(c));
  }
  return CT_OK;
}

ct_status bind_arguments(const char *func, const c10::FunctionSchema &schema,
                         const ct_value *const *args, size_t n, const char *const *kwnames,
                         const ct_value *const *kwvalues, size_t nkw, bool skip_self,
                         torch::jit::Stack *stack) {
  std::string why;
  ct_status rc = bind_call(schema, args, n, kwnames, kwvalues, nkw, skip_self, stack, false, &why);
  if (rc != CT_OK)
    set_error(rc, "%s: %s\n  schema: %s", func, why.c_str(), schema_string(schema).c_str());
  return rc;
}

bool binds_tensors(const c10::FunctionSchema &schema, size_t n) {
  const auto &params = schema.arguments();
  if (n > params.size()) return false;
  // A defined tensor, so that type checks see a real Tensor type.
  static const IValue *const probe = new IValue(at::zeros({}));
  for (size_t i = 0; i < params.size(); ++i) {
    const c10::Argument &p = params[i];
    if (i >= n) {
      if (!p.default_value()) return false;
      continue;
    }
    IValue c;
    if (p.kwarg_only() || !coerce(*probe, p.type(), &c, false)) return false;
  }
  return true;
}

}  // namespace ct
