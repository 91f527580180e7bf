// Foreign ops: ct_op_register adds an operator, implemented by a C callback,
// to the JIT operator registry, where ops, scripts and modules find it.
#include "checks.h"
#include "locks.h"
#include "op_internal.h"
#include "schema.h"

#include <torch/csrc/jit/frontend/function_schema_parser.h>
#include <torch/csrc/jit/runtime/custom_operator.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

using c10::IValue;
using torch::jit::Stack;

namespace {

using namespace ct;

// ---- Foreign ops.
std::mutex g_register_mu;
ct::ForkSafe g_register_mu_fork_safe(g_register_mu);

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
  for (size_t i = stack.size() - n; i < stack.size(); ++i)
    vals.push_back(ct_value{stack[i], nullptr});
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
      if (!coerce(got[i], rets[i].type(), &c))
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

extern "C" {

ct_status ct_op_register(const char *schema, ct_op_fn fn, void *ctx) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(schema);
    CT_CHECK_NOT_NULL(fn);
    // Bound what a schema may be: LibTorch parses and prints list types
    // recursively (int[][]... 200,000 deep crashed the next ct_op_list).
    size_t len = std::strlen(schema), lists = 0;
    for (const char *p = schema; *p; ++p) lists += *p == '[';
    if (len > 4096 || lists > 64)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: schema too large (%zu characters, %zu list brackets; limits 4096 "
                           "and 64)",
                           ct_fn_, len, lists);
    c10::FunctionSchema parsed = [&] {
      try {
        return torch::jit::parseSchema(schema);
      } catch (const std::exception &e) {
        std::string m = e.what();
        auto nl = m.find('\n');
        ct::raise(CT_ERR_INVALID_ARGUMENT, "bad schema '%s': %s", schema, m.substr(0, nl).c_str());
      }
    }();
    const std::string &qname = parsed.name();
    auto sep = qname.find("::");
    if (sep == std::string::npos || sep == 0 || sep + 2 >= qname.size())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: schema '%s' needs a namespaced name such as 'myns::scale'", ct_fn_,
                           schema);
    if (parsed.is_vararg() || parsed.is_varret())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: variadic schemas are not supported: '%s'",
                           ct_fn_, schema);
    // LibTorch's parser keeps a default of the wrong type (int a="s"); the
    // op would then be called with it.
    for (const c10::Argument &a : parsed.arguments()) {
      const auto &d = a.default_value();
      if (d && !d->type()->isSubtypeOf(*a.type()))
        return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                             "%s: default value of argument '%s' has type %s, not %s: '%s'", ct_fn_,
                             a.name().c_str(), d->type()->annotation_str().c_str(),
                             a.type()->annotation_str().c_str(), schema);
    }
    std::lock_guard<std::mutex> lk(g_register_mu);
    std::unique_lock<std::shared_mutex> registry_write(ct::op_registry_mutex());
    for (const auto &op : torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(qname))) {
      if (op->schema().overload_name() == parsed.overload_name())
        return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                             "%s: operator '%s' is already registered as '%s'", ct_fn_,
                             op_display_name(parsed).c_str(), schema_string(op->schema()).c_str());
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
      static auto *registrations =
          new std::vector<std::unique_ptr<torch::jit::RegisterOperators>>();
      std::lock_guard<std::mutex> lk(reg_mu);
      registrations->emplace_back(new torch::jit::RegisterOperators(std::move(ops)));
    }
    // LibTorch queues a registration and inserts it into its operator table
    // on the next lookup: done here, under the exclusive lock, or a reader
    // (holding the lock shared) would grow the table while another reader
    // walks it (found by ThreadSanitizer, tests/tsan).
    (void)torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(qname));

    // New overloads change overload sets: forget cached lookups.
    ct::forget_cached_ops();
    return CT_OK;
  });
}

}  // extern "C"
