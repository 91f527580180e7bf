// Operator calls: ct_op_call, ct_op_call_tensors, ct_op_call_tensors_values,
// ct_op_call_name. Holds
// the fast paths (exact positional types; typed handles for unboxed
// kernels), the per-thread stack leases, overload resolution through the
// binder (schema.cpp), tensors-only calls, and the name cache.
//
// A specific overload called with positional arguments of exactly the
// schema's types takes a fast path: no binder, a reused thread-local stack,
// one allocation for the result value.
#include "checks.h"
#include "locks.h"
#include "op_internal.h"
#include "schema.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

using c10::IValue;
using c10::TypeKind;
using c10::TypePtr;
using torch::jit::Stack;

namespace ct {

FastKind fast_kind(const c10::Argument &a) {
  int64_t n_codes;
  if (is_scalar_type_arg(a) || enum_arg(a, &n_codes)) return FK_SLOW;
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

void setup_typed(Overload &o) {
  const auto &s = *o.schema;
  if (!o.op->isC10Op() || s.returns().size() != 1 || s.is_mutable()) return;
  if (s.returns()[0].type()->kind() != TypeKind::TensorType) return;
  // Views (read-only aliases, as select's Tensor(a)) only for the int shape.
  bool aliases = s.returns()[0].alias_info() != nullptr;
  std::string sig;
  for (const auto &a : s.arguments()) {
    if (a.alias_info()) {
      if (a.alias_info()->isWrite()) return;
      aliases = true;
    }
    auto k = a.type()->kind();
    if (k == TypeKind::TensorType)
      sig += 'T';
    else if (k == TypeKind::NumberType)
      sig += 'S';
    else if (k == TypeKind::IntType && !is_scalar_type_arg(a))
      sig += 'I';
    else
      return;
  }
  if (aliases && sig != "TII") return;
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
    } else if (sig == "TII") {
      // LibTorch 2.x declares some of these SymInt; its dispatcher takes the
      // int64_t signature for them (as at::select(t, d, i) does).
      o.h_tii = h->typed<at::Tensor(const at::Tensor &, int64_t, int64_t)>();
      o.typed = TS_TII;
    }
  } catch (...) {
    o.typed = TS_NONE;  // registered with another C++ signature: boxed path
  }
}

}  // namespace ct

namespace {

using namespace ct;

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

// The unboxed kernel of an overload with a typed shape (o.typed != TS_NONE).
// T(i), S(i), I(i) give argument i as a tensor, scalar or int: the caller's
// argument or the schema default.
template <class TF, class SF, class IF>
inline at::Tensor call_typed(const Overload &o, TF &&T, SF &&S, IF &&I) {
  switch (o.typed) {
    case TS_T: return o.h_t->call(T(0));
    case TS_TT: return o.h_tt->call(T(0), T(1));
    case TS_TTS: return o.h_tts->call(T(0), T(1), S(2));
    case TS_TS: return o.h_ts->call(T(0), S(1));
    case TS_TSS: return o.h_tss->call(T(0), S(1), S(2));
    case TS_TII: return o.h_tii->call(T(0), I(1), I(2));
    case TS_NONE: break;
  }
  return at::Tensor();  // not reached: callers check o.typed first
}

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
  ct_status checked = check_call_args(func, args, n, kwnames, kwvalues, nkw);
  if (checked != CT_OK) return checked;
  StackLease lease;
  Stack &st = *lease.s;
  if (!op->is_set) {
    const Overload &o = op->overloads[0];
    if (!o.callable)
      return ct::set_error(CT_ERR_NOT_SUPPORTED, "%s: %s: %s\n  schema: %s", func,
                           op_display_name(*o.schema).c_str(), o.not_callable_why.c_str(),
                           o.schema_str.c_str());
    ct_status rc = bind_arguments(func, *o.schema, args, n, kwnames, kwvalues, nkw, false, &st);
    if (rc != CT_OK) return rc;
    o.operation(st);
    return results_to_value(out, o, st);
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (const Overload &o : op->overloads) {
      if (!o.callable) continue;
      std::string why;
      st.clear();
      if (bind_call(*o.schema, args, n, kwnames, kwvalues, nkw, false, &st, pass == 0, &why) !=
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
    ct_status rc = bind_call(*o.schema, args, n, kwnames, kwvalues, nkw, false, &st, false, &why);
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
  // what every small op from a binding pays (bench/bench_call.cpp).
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
        auto T = [&](size_t i) __attribute__((always_inline))->const at::Tensor & {
          return i < n ? args[i]->v.toTensor() : o.defaults[i].toTensor();
        };
        auto S = [&](size_t i) __attribute__((always_inline))->c10::Scalar {
          return i < n ? args[i]->v.toScalar() : o.default_scalars[i];
        };
        auto I = [&](size_t i) -> int64_t {
          return i < n ? args[i]->v.toInt() : o.defaults[i].toInt();
        };
        *out = new ct_value{IValue(call_typed(o, T, S, I)), nullptr};
        return CT_OK;
      }
      if (fast) return call_boxed_exact(out, o, args, n);
    }
  }
  return call_op_general(func, out, op, args, n, kwnames, kwvalues, nkw);
}

// ---- Tensors in, tensors out (ct_op_call_tensors).

// Moves the result value's tensors into outputs[0..n_outputs).
ct_status unpack_tensors(const char *func, ct_tensor **outputs, size_t n_outputs, const ct_op *op,
                         IValue &&result) {
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

ct_status call_op_tensors(const char *func, ct_tensor **outputs, size_t n_outputs, const ct_op *op,
                          const ct_tensor *const *inputs, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!inputs[i])
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: inputs[%zu] is NULL", func, i);
  if (!op->is_set && n_outputs == 1) {
    const Overload &o = op->overloads[0];
    bool tensors = o.callable && n <= o.n_positional && n >= o.first_tail_default;
    for (size_t i = 0; tensors && i < n; ++i) tensors = o.kinds[i] == FK_TENSOR;
    if (tensors && o.typed != TS_NONE) {
      auto T = [&](size_t i) __attribute__((always_inline))->const at::Tensor & {
        return i < n ? inputs[i]->t : o.defaults[i].toTensor();
      };
      auto S = [&](size_t i) __attribute__((always_inline))->const c10::Scalar & {
        return o.default_scalars[i];  // Scalars here always come from defaults
      };
      auto I = [&](size_t i) -> int64_t { return o.defaults[i].toInt(); };
      outputs[0] = new ct_tensor{call_typed(o, T, S, I)};
      return CT_OK;
    }
  }
  // General path: the same binding and overload resolution as ct_op_call.
  TensorArgs targs(inputs, n);
  ct_value *res = nullptr;
  ct_status rc = call_op(func, &res, op, targs.ptrs.data(), n, nullptr, nullptr, 0);
  if (rc != CT_OK) return rc;
  std::unique_ptr<ct_value> owned(res);
  return unpack_tensors(func, outputs, n_outputs, op, std::move(owned->v));
}

// ---- Tensors then values in, tensors out (ct_op_call_tensors_values).

// Positional arguments: nt tensors, then nv values. A specific overload whose
// argument kinds match exactly runs on a reused stack (or its unboxed kernel)
// without wrapping the tensors or the result in values: what a binding's
// x[1] (aten::select.int) or x + 1 (aten::add.Scalar) pays.
ct_status call_op_tensors_values(const char *func, ct_tensor **outputs, size_t n_outputs,
                                 const ct_op *op, const ct_tensor *const *tensors, size_t nt,
                                 const ct_value *const *values, size_t nv) {
  for (size_t i = 0; i < nt; ++i)
    if (!tensors[i])
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: tensors[%zu] is NULL", func, i);
  for (size_t i = 0; i < nv; ++i)
    if (!values[i])
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: values[%zu] is NULL", func, i);
  const size_t n = nt + nv;
  if (!op->is_set && n_outputs == 1) {
    const Overload &o = op->overloads[0];
    bool exact = o.callable && n <= o.n_positional && n >= o.first_tail_default;
    for (size_t i = 0; exact && i < nt; ++i) exact = o.kinds[i] == FK_TENSOR;
    for (size_t i = 0; exact && i < nv; ++i) exact = fast_match(o.kinds[nt + i], values[i]->v);
    if (exact) {
      if (o.typed != TS_NONE) {
        auto T = [&](size_t i) __attribute__((always_inline))->const at::Tensor & {
          return i < nt  ? tensors[i]->t
                 : i < n ? values[i - nt]->v.toTensor()
                         : o.defaults[i].toTensor();
        };
        auto S = [&](size_t i) __attribute__((always_inline))->c10::Scalar {
          return i >= nt && i < n ? values[i - nt]->v.toScalar() : o.default_scalars[i];
        };
        auto I = [&](size_t i) -> int64_t {
          return i >= nt && i < n ? values[i - nt]->v.toInt() : o.defaults[i].toInt();
        };
        outputs[0] = new ct_tensor{call_typed(o, T, S, I)};
        return CT_OK;
      }
      const size_t na = o.kinds.size();
      StackLease lease;
      Stack &st = *lease.s;
      st.reserve(na);
      for (size_t i = 0; i < nt; ++i) st.emplace_back(tensors[i]->t);
      for (size_t i = 0; i < nv; ++i) st.push_back(values[i]->v);
      for (size_t i = n; i < na; ++i) st.push_back(o.defaults[i]);
      o.operation(st);
      if (st.size() == 1 && st[0].isTensor()) {
        outputs[0] = ct::new_tensor(std::move(st[0]).toTensor());
        return CT_OK;
      }
      IValue res =
          st.size() == 1 ? std::move(st[0])
          : st.empty()
              ? IValue()
              : IValue(c10::ivalue::Tuple::create(std::vector<IValue>(
                    std::make_move_iterator(st.begin()), std::make_move_iterator(st.end()))));
      return unpack_tensors(func, outputs, n_outputs, op, std::move(res));
    }
  }
  // General path: the same binding and overload resolution as ct_op_call.
  TensorArgs targs(tensors, nt);
  targs.ptrs.insert(targs.ptrs.end(), values, values + nv);
  ct_value *res = nullptr;
  ct_status rc = call_op(func, &res, op, targs.ptrs.data(), n, nullptr, nullptr, 0);
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
ct::ForkSafe g_cache_mu_fork_safe(g_cache_mu);
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

}  // namespace

namespace ct {

void forget_cached_ops() {
  std::lock_guard<std::mutex> lk(g_cache_mu);
  g_retired->push_back(std::move(g_cache));
  g_cache.clear();
  g_cache_gen.fetch_add(1, std::memory_order_release);
}

}  // namespace ct

extern "C" {

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

ct_status ct_op_call_tensors_values(ct_tensor **outputs, size_t n_outputs, const ct_op *op,
                                    const ct_tensor *const *tensors, size_t n_tensors,
                                    const ct_value *const *values, size_t n_values) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(op);
    if (n_outputs > 0) CT_CHECK_NOT_NULL(outputs);
    if (n_tensors > 0) CT_CHECK_NOT_NULL(tensors);
    if (n_values > 0) CT_CHECK_NOT_NULL(values);
    return call_op_tensors_values(ct_fn_, outputs, n_outputs, op, tensors, n_tensors, values,
                                  n_values);
  });
}

ct_status ct_op_tensors_only(int32_t *out, const ct_op *op, size_t n_inputs) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(op);
    // The overload ct_op_call_tensors would bind (tensors bind alike in both
    // passes of the resolution), then its results.
    const Overload *chosen = nullptr;
    for (const Overload &o : op->overloads) {
      if (o.callable && ct::binds_tensors(*o.schema, n_inputs)) {
        chosen = &o;
        break;
      }
    }
    bool tensors = chosen && chosen->n_returns > 0;
    for (size_t i = 0; tensors && i < chosen->n_returns; ++i)
      tensors = chosen->schema->returns()[i].type()->kind() == TypeKind::TensorType;
    *out = tensors ? 1 : 0;
    return CT_OK;
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

}  // extern "C"
