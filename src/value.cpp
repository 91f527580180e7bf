// Values (c10::IValue behind a ct_value handle): constructors, accessors,
// containers, and printing (ct_value_*). torch.save files are in src/pickle/.
#include "messages.h"
#include "checks.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

int32_t tag_of(const c10::IValue &v) {
  if (v.isNone()) return CT_VALUE_NONE;
  if (v.isBool()) return CT_VALUE_BOOL;
  if (v.isInt()) return CT_VALUE_INT;
  if (v.isDouble()) return CT_VALUE_DOUBLE;
  if (v.isString()) return CT_VALUE_STRING;
  if (v.isTensor()) return CT_VALUE_TENSOR;
  if (v.isDevice()) return CT_VALUE_DEVICE;
  if (v.isList()) {
    if (v.isIntList()) return CT_VALUE_INT_LIST;
    if (v.isDoubleList()) return CT_VALUE_DOUBLE_LIST;
    if (v.isBoolList()) return CT_VALUE_BOOL_LIST;
    if (v.isTensorList()) return CT_VALUE_TENSOR_LIST;
    return CT_VALUE_LIST;
  }
  if (v.isTuple()) return CT_VALUE_TUPLE;
  if (v.isGenericDict()) return CT_VALUE_DICT;
  if (v.isObject()) return CT_VALUE_OBJECT;
  return CT_VALUE_OTHER;
}

const char *tag_name(int32_t tag) {
  switch (tag) {
    case CT_VALUE_NONE: return "none";
    case CT_VALUE_BOOL: return "bool";
    case CT_VALUE_INT: return "int";
    case CT_VALUE_DOUBLE: return "double";
    case CT_VALUE_STRING: return "string";
    case CT_VALUE_TENSOR: return "tensor";
    case CT_VALUE_DEVICE: return "device";
    case CT_VALUE_LIST: return "list";
    case CT_VALUE_TUPLE: return "tuple";
    case CT_VALUE_DICT: return "dict";
    case CT_VALUE_INT_LIST: return "int list";
    case CT_VALUE_DOUBLE_LIST: return "double list";
    case CT_VALUE_BOOL_LIST: return "bool list";
    case CT_VALUE_TENSOR_LIST: return "tensor list";
    case CT_VALUE_OBJECT: return "object";
    default: return "other";
  }
}

// "expected X, got <tag> (<type>)"
ct_status type_error(const char *func, const char *expected, const c10::IValue &v) {
  return ct::set_error(CT_ERR_TYPE, "%s: expected %s, got %s (%s)", func, expected,
                       tag_name(tag_of(v)), ct::value_type_name(v).c_str());
}

// `items` may be NULL only when n == 0, and no item may be NULL.
template <class H>
ct_status check_items(const char *func, const H *const *items, size_t n) {
  if (items == nullptr && n != 0)
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument 'items' is NULL with n %zu", func,
                         n);
  for (size_t i = 0; i < n; ++i)
    if (!items[i]) return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: items[%zu] is NULL", func, i);
  return CT_OK;
}

// The constructors: checks `out`, then the other arguments (check() returns
// their status), then stores a new value holding make().
template <class Check, class Make>
ct_status construct(const char *ct_fn_, ct_value **out, Check check, Make make) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    if (ct_status st = check()) return st;
    *out = ct::new_value(c10::IValue(make()));
    return CT_OK;
  });
}

// construct() for constructors whose other arguments cannot be wrong.
template <class Make>
ct_status construct(const char *ct_fn_, ct_value **out, Make make) {
  return construct(
      ct_fn_, out, [] { return CT_OK; }, make);
}

// construct() from one input handle `h`, named `name` in messages.
template <class H, class Make>
ct_status construct(const char *ct_fn_, ct_value **out, const char *name, const H *h, Make make) {
  return construct(
      ct_fn_, out,
      [&] {
        return h ? CT_OK
                 : ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument '%s' is NULL", ct_fn_,
                                 name);
      },
      [&] { return make(*h); });
}

// Container `c` with elem(items[i]) appended for each of the n items.
template <class Container, class Item, class Elem>
Container collect(Container c, const Item *items, size_t n, Elem elem) {
  c.reserve(n);
  for (size_t i = 0; i < n; ++i) c.push_back(elem(items[i]));
  return c;
}

// A List[T] value from a C array (ct_value_int_list and its siblings).
template <class T, class C>
ct_status typed_list(const char *ct_fn_, ct_value **out, const C *items, size_t n) {
  return construct(
      ct_fn_, out,
      [&] {
        return items != nullptr || n == 0
                   ? CT_OK
                   : ct::set_error(CT_ERR_INVALID_ARGUMENT,
                                   "%s: argument 'items' is NULL with n %zu", ct_fn_, n);
      },
      [&] { return collect(c10::List<T>(), items, n, [](C x) { return static_cast<T>(x); }); });
}

// The typed accessors: the value must pass `is` (a test of c10::IValue,
// `expected` in the message); *out = get(value).
template <class Out, class Is, class Get>
ct_status typed_get(const char *ct_fn_, Out *out, const ct_value *v, Is is, const char *expected,
                    Get get) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    if (!std::invoke(is, v->v)) return type_error(ct_fn_, expected, v->v);
    *out = get(v->v);
    return CT_OK;
  });
}

// The dict lookups: find(dict, &value) looks `key` up in a dict value and
// returns its status; *out = a new value holding what it found.
template <class Key, class Find>
ct_status dict_lookup(const char *ct_fn_, ct_value **out, const ct_value *v, const Key *key,
                      Find find) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    CT_CHECK_NOT_NULL(key);
    if (!v->v.isGenericDict()) return type_error(ct_fn_, "dict", v->v);
    c10::IValue found;
    if (ct_status st = find(v->v.toGenericDict(), &found)) return st;
    *out = ct::new_value(std::move(found));
    return CT_OK;
  });
}

}  // namespace

namespace ct {

std::string value_type_name(const c10::IValue &v) {
  if (v.isTensor()) return "Tensor";
  try {
    return v.type()->annotation_str();
  } catch (...) {
    return v.tagKind();
  }
}

// Element type of a list or value type of a dict built from these types:
// their unified type (tensor types without shapes). Items that do not unify
// (e.g. a tensor and a string) give Any, which TorchScript also accepts.
c10::TypePtr unify_or_any(const std::vector<c10::TypePtr> &types) {
  if (types.empty()) return c10::AnyType::get();
  // One kind of item (value_type's types are unshaped already): no walk over a
  // nested type, which made nested lists quadratic to build (issue 40).
  bool same = true;
  for (const auto &t : types) same = same && (t == types[0] || *t == *types[0]);
  if (same) return types[0];
  std::ostringstream why;
  auto t = c10::unifyTypeList(types, why);
  if (!t) return c10::AnyType::get();
  return c10::unshapedType(*t);
}

c10::TypePtr value_type(const c10::IValue &v) {
  if (v.isTensor()) return c10::TensorType::get();
  // A list carries its element type: O(1), where unshapedType(v.type()) walks
  // the whole type, which made nested lists quadratic to build (issue 40).
  if (v.isList()) return c10::ListType::create(v.toList().elementType());
  return c10::unshapedType(v.type());
}

}  // namespace ct

using ct::unify_or_any;
using ct::value_type;

extern "C" {

void ct_value_free(ct_value *v) { delete v; }

int32_t ct_value_tag(const ct_value *v) { return v ? tag_of(v->v) : -1; }

ct_status ct_value_ref(ct_value **out, const ct_value *v) {
  ct_status st = construct(__func__, out, "v", v, [](const ct_value &x) { return x.v; });
  if (st == CT_OK) (*out)->keep = v->keep;
  return st;
}

ct_status ct_value_none(ct_value **out) {
  return construct(__func__, out, [] { return c10::IValue(); });
}

ct_status ct_value_from_bool(ct_value **out, int32_t b) {
  return construct(__func__, out, [b] { return b != 0; });
}

ct_status ct_value_from_int(ct_value **out, int64_t i) {
  return construct(__func__, out, [i] { return i; });
}

ct_status ct_value_from_double(ct_value **out, double d) {
  return construct(__func__, out, [d] { return d; });
}

ct_status ct_value_from_string(ct_value **out, const char *s, size_t len) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_ARG(s != nullptr || len == 0, "%s: argument 's' is NULL with len %zu", ct_fn_, len);
    *out = ct::new_value(c10::IValue(std::string(s ? s : "", len)));
    return CT_OK;
  });
}

ct_status ct_value_from_tensor(ct_value **out, const ct_tensor *t) {
  return construct(__func__, out, "t", t, [](const ct_tensor &x) { return x.t; });
}

ct_status ct_value_from_device(ct_value **out, int32_t device_type, int32_t device_index) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    c10::Device d(c10::kCPU);
    ct_status st = ct::to_device(ct_fn_, device_type, device_index, &d);
    if (st != CT_OK) return st;
    *out = ct::new_value(c10::IValue(d));
    return CT_OK;
  });
}

// Element type: the unified type of the items (tensor shapes dropped; None
// with T gives Optional[T]). Items that do not unify give List[Any]. An empty
// list is List[Any], coerced to the schema's list type when passed to a
// method, function or op.
ct_status ct_value_list(ct_value **out, const ct_value *const *items, size_t n) {
  const char *const ct_fn_ = __func__;
  return construct(
      ct_fn_, out, [&] { return check_items(ct_fn_, items, n); },
      [&] {
        auto type = [](const ct_value *v) { return value_type(v->v); };
        auto value = [](const ct_value *v) { return v->v; };
        auto types = collect(std::vector<c10::TypePtr>(), items, n, type);
        return collect(c10::impl::GenericList(unify_or_any(types)), items, n, value);
      });
}

ct_status ct_value_int_list(ct_value **out, const int64_t *items, size_t n) {
  return typed_list<int64_t>(__func__, out, items, n);
}

ct_status ct_value_double_list(ct_value **out, const double *items, size_t n) {
  return typed_list<double>(__func__, out, items, n);
}

ct_status ct_value_bool_list(ct_value **out, const int32_t *items, size_t n) {
  return typed_list<bool>(__func__, out, items, n);  // nonzero is true
}

ct_status ct_value_tensor_list(ct_value **out, const ct_tensor *const *items, size_t n) {
  const char *const ct_fn_ = __func__;
  return construct(
      ct_fn_, out, [&] { return check_items(ct_fn_, items, n); },
      [&] {
        return collect(c10::List<at::Tensor>(), items, n, [](const ct_tensor *t) { return t->t; });
      });
}

ct_status ct_value_tuple(ct_value **out, const ct_value *const *items, size_t n) {
  const char *const ct_fn_ = __func__;
  return construct(
      ct_fn_, out, [&] { return check_items(ct_fn_, items, n); },
      [&] {
        auto elems =
            collect(std::vector<c10::IValue>(), items, n, [](const ct_value *v) { return v->v; });
        return c10::ivalue::Tuple::create(std::move(elems));
      });
}

// Key type: str, int or Tensor (all keys the same kind). Value type: the
// unified type of the values, or Any when they do not unify (also for n == 0:
// an empty dict is Dict[str, Any]).
ct_status ct_value_dict(ct_value **out, const ct_value *const *keys, const ct_value *const *values,
                        size_t n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_ARG((keys != nullptr && values != nullptr) || n == 0,
                 "%s: argument 'keys' or 'values' is NULL with n %zu", ct_fn_, n);
    c10::TypePtr key_type = c10::StringType::get();
    std::vector<c10::TypePtr> vtypes;
    vtypes.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (!keys[i] || !values[i])
        return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: keys[%zu] or values[%zu] is NULL",
                             ct_fn_, i, i);
      const c10::IValue &k = keys[i]->v;
      c10::TypePtr kt;
      if (k.isString())
        kt = c10::StringType::get();
      else if (k.isInt())
        kt = c10::IntType::get();
      else if (k.isTensor())
        kt = c10::TensorType::get();
      else
        return ct::set_error(CT_ERR_TYPE,
                             "%s: dict keys must be strings, ints or tensors; "
                             "keys[%zu] is %s (%s)",
                             ct_fn_, i, tag_name(tag_of(k)), ct::value_type_name(k).c_str());
      if (i == 0)
        key_type = kt;
      else if (kt->kind() != key_type->kind())
        return ct::set_error(CT_ERR_TYPE,
                             "%s: dict keys must all have one type: keys[0] is "
                             "%s, keys[%zu] is %s",
                             ct_fn_, key_type->annotation_str().c_str(), i,
                             kt->annotation_str().c_str());
      vtypes.push_back(value_type(values[i]->v));
    }
    c10::impl::GenericDict d(key_type, unify_or_any(vtypes));
    d.reserve(n);
    for (size_t i = 0; i < n; ++i) d.insert_or_assign(keys[i]->v, values[i]->v);
    *out = ct::new_value(c10::IValue(std::move(d)));
    return CT_OK;
  });
}

ct_status ct_value_to_bool(int32_t *out, const ct_value *v) {
  return typed_get(__func__, out, v, &c10::IValue::isBool, "bool",
                   [](const c10::IValue &x) { return x.toBool() ? 1 : 0; });
}

ct_status ct_value_to_int(int64_t *out, const ct_value *v) {
  return typed_get(__func__, out, v, &c10::IValue::isInt, "int",
                   [](const c10::IValue &x) { return x.toInt(); });
}

ct_status ct_value_to_double(double *out, const ct_value *v) {
  return typed_get(
      __func__, out, v, [](const c10::IValue &x) { return x.isDouble() || x.isInt(); },
      "double (or int)",
      [](const c10::IValue &x) {
        return x.isDouble() ? x.toDouble() : static_cast<double>(x.toInt());
      });
}

ct_status ct_value_as_string(const char **out, size_t *len, const ct_value *v) {
  return typed_get(__func__, out, v, &c10::IValue::isString, "string", [len](const c10::IValue &x) {
    const std::string &s = x.toStringRef();
    if (len) *len = s.size();
    return s.c_str();
  });
}

ct_status ct_value_to_tensor(ct_tensor **out, const ct_value *v) {
  return typed_get(__func__, out, v, &c10::IValue::isTensor, "tensor",
                   [](const c10::IValue &x) { return ct::new_tensor(x.toTensor()); });
}

ct_status ct_value_to_device(int32_t *device_type, int32_t *device_index, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(device_type);
    CT_CHECK_NOT_NULL(device_index);
    CT_CHECK_NOT_NULL(v);
    if (!v->v.isDevice()) return type_error(ct_fn_, "device", v->v);
    c10::Device d = v->v.toDevice();
    int32_t code = ct::device_type_code(d.type());
    if (code == 0)
      return ct::set_error(CT_ERR_NOT_SUPPORTED, "%s: device '%s' has no ctorch device code",
                           ct_fn_, d.str().c_str());
    *device_type = code;
    *device_index = d.index();
    return CT_OK;
  });
}

ct_status ct_value_to_module(ct_module **out, const ct_value *v) {
  return typed_get(
      __func__, out, v,
      [](const c10::IValue &x) { return x.isObject() && x.toObjectRef().type()->is_module(); },
      "a module object",
      [](const c10::IValue &x) {
        return new ct_module{torch::jit::Module(x.toObject()), {}};
      });
}

ct_status ct_value_from_module(ct_value **out, const ct_module *m) {
  return construct(__func__, out, "m", m, [](const ct_module &x) { return x.m._ivalue(); });
}

ct_status ct_value_length(size_t *out, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    const c10::IValue &x = v->v;
    if (x.isList())
      *out = x.toListRef().size();
    else if (x.isTuple())
      *out = x.toTupleRef().elements().size();
    else if (x.isGenericDict())
      *out = x.toGenericDict().size();
    else if (x.isString())
      *out = x.toStringRef().size();
    else
      return type_error(ct_fn_, "list, tuple, dict or string", x);
    return CT_OK;
  });
}

ct_status ct_value_get(ct_value **out, const ct_value *v, size_t i) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    const c10::IValue &x = v->v;
    if (x.isList()) {
      auto ref = x.toListRef();
      if (i >= ref.size())
        return ct::set_error(CT_ERR_INDEX, "%s: index %zu out of range for list of length %zu",
                             ct_fn_, i, ref.size());
      *out = ct::new_value(ref[i]);
    } else if (x.isTuple()) {
      const auto &el = x.toTupleRef().elements();
      if (i >= el.size())
        return ct::set_error(CT_ERR_INDEX, "%s: index %zu out of range for tuple of length %zu",
                             ct_fn_, i, el.size());
      *out = ct::new_value(el[i]);
    } else {
      return type_error(ct_fn_, "list or tuple", x);
    }
    return CT_OK;
  });
}

ct_status ct_value_dict_item(ct_value **key, ct_value **value, const ct_value *v, size_t i) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(v);
    if (!v->v.isGenericDict()) return type_error(ct_fn_, "dict", v->v);
    auto d = v->v.toGenericDict();
    if (i >= d.size())
      return ct::set_error(CT_ERR_INDEX, "%s: index %zu out of range for dict of length %zu",
                           ct_fn_, i, d.size());
    auto it = d.begin();
    for (size_t k = 0; k < i; ++k) ++it;
    std::unique_ptr<ct_value> kv(key ? ct::new_value(it->key()) : nullptr);
    std::unique_ptr<ct_value> vv(value ? ct::new_value(it->value()) : nullptr);
    if (key) *key = kv.release();
    if (value) *value = vv.release();
    return CT_OK;
  });
}

ct_status ct_value_dict_get(ct_value **out, const ct_value *v, const ct_value *key) {
  const char *const ct_fn_ = __func__;
  return dict_lookup(ct_fn_, out, v, key, [&](const c10::impl::GenericDict &d, c10::IValue *found) {
    const c10::IValue &k = key->v;
    if (!(k.isString() || k.isInt() || k.isTensor() || k.isDouble() || k.isBool()))
      return type_error(ct_fn_, "a string, int or tensor key", k);
    auto it = d.find(k);
    if (it == d.end()) {
      std::ostringstream os;
      if (k.isTensor())
        os << "<tensor>";
      else
        os << k;
      return ct::set_error(CT_ERR_NOT_FOUND, "%s: key %s not found", ct_fn_, os.str().c_str());
    }
    *found = it->value();
    return CT_OK;
  });
}

ct_status ct_value_dict_get_str(ct_value **out, const ct_value *v, const char *key) {
  const char *const ct_fn_ = __func__;
  return dict_lookup(ct_fn_, out, v, key, [&](const c10::impl::GenericDict &d, c10::IValue *found) {
    if (d.keyType()->kind() != c10::StringType::Kind && d.keyType()->kind() != c10::AnyType::Kind &&
        d.size() > 0)
      return ct::set_error(CT_ERR_TYPE, "%s: dict has %s keys, not str", ct_fn_,
                           d.keyType()->annotation_str().c_str());
    auto it = d.find(c10::IValue(std::string(key)));
    if (it == d.end())
      return ct::set_error(CT_ERR_NOT_FOUND, "%s: key '%s' not found", ct_fn_, key);
    *found = it->value();
    return CT_OK;
  });
}

ct_status ct_value_to_repr(char **out, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    // LibTorch's printer recurses: a list that contains itself, or one nested
    // deeper than ctorch's limit, would overflow the stack.
    const std::string why = ct::loaded_nesting_problem(v->v);
    if (!why.empty()) return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: %s", ct_fn_, why.c_str());
    std::ostringstream os;
    os << v->v;
    *out = ct::dup_string(os.str());
    return CT_OK;
  });
}

ct_status ct_value_type_str(char **out, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    *out = ct::dup_string(ct::value_type_name(v->v));
    return CT_OK;
  });
}

}  // extern "C"
