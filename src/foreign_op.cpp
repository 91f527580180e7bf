// Foreign ops: ct_op_register adds an operator, implemented by a C callback,
// to the JIT operator registry, where ops, scripts and modules find it.
#include "checks.h"
#include "locks.h"
#include "op_internal.h"
#include "twins.h"
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

}  // namespace

namespace ct {

void call_value_kernel(const std::string &name, ct_op_fn fn, void *ctx,
                       const c10::FunctionSchema &schema, Stack &stack) {
  const size_t n = schema.arguments().size();
  if (stack.size() < n)
    ct::raise(CT_ERR_INTERNAL, "%s: stack has %zu values, expected %zu", name.c_str(), stack.size(),
              n);
  std::vector<ct_value> vals;
  vals.reserve(n);
  for (size_t i = stack.size() - n; i < stack.size(); ++i)
    vals.push_back(ct_value{stack[i], nullptr});
  std::vector<const ct_value *> ptrs(n);
  for (size_t i = 0; i < n; ++i) ptrs[i] = &vals[i];
  ct_value *res = nullptr;
  ct_clear_error();  // a kernel that fails without ct_set_error gets no stale message
  ct_status rc = fn(ctx, n ? ptrs.data() : nullptr, n, &res);
  std::unique_ptr<ct_value> owned(res);
  if (rc != CT_OK) {
    const char *msg = ct_last_error();
    ct::raise(CT_ERR_CALLBACK, "%s: kernel failed (status %d): %s", name.c_str(),
              static_cast<int>(rc), (msg && *msg) ? msg : "(no message: the callback did not call ct_set_error)");
  }
  vals.clear();
  torch::jit::drop(stack, n);
  push_kernel_results(name, schema, owned.get(), stack);
}

void push_kernel_results(const std::string &name, const c10::FunctionSchema &schema,
                         const ct_value *res, Stack &stack) {
  const auto &rets = schema.returns();
  std::vector<IValue> outs;
  if (rets.empty()) {
    if (res && !res->v.isNone())
      ct::raise(CT_ERR_CALLBACK, "%s: the operator returns nothing but the kernel stored %s",
                name.c_str(), value_type_name(res->v).c_str());
  } else {
    if (!res) ct::raise(CT_ERR_CALLBACK, "%s: the kernel stored no result", name.c_str());
    std::vector<IValue> got;
    if (rets.size() == 1) {
      got.push_back(res->v);
    } else {
      if (!res->v.isTuple() || res->v.toTupleRef().elements().size() != rets.size())
        ct::raise(CT_ERR_CALLBACK, "%s: the kernel must return a tuple of %zu values, got %s",
                  name.c_str(), rets.size(), value_type_name(res->v).c_str());
      const auto &el = res->v.toTupleRef().elements();
      got.assign(el.begin(), el.end());
    }
    for (size_t i = 0; i < rets.size(); ++i) {
      IValue c;
      if (!coerce(got[i], rets[i].type(), &c))
        ct::raise(CT_ERR_CALLBACK, "%s: result %zu expected %s but the kernel returned %s",
                  name.c_str(), i, arg_type_string(rets[i]).c_str(),
                  value_type_name(got[i]).c_str());
      outs.push_back(std::move(c));
    }
  }
  for (auto &o : outs) stack.push_back(std::move(o));
}

c10::FunctionSchema parse_op_schema(const char *schema) {
  // Bound what a schema may be: LibTorch parses and prints list types
  // recursively (int[][]... 200,000 deep crashed the next ct_op_list).
  size_t len = std::strlen(schema), lists = 0;
  for (const char *p = schema; *p; ++p) lists += *p == '[';
  if (len > 4096 || lists > 64)
    ct::raise(CT_ERR_INVALID_ARGUMENT,
              "schema too large (%zu characters, %zu list brackets; limits 4096 and 64)", len,
              lists);
  c10::FunctionSchema parsed = [&] {
    try {
      return torch::jit::parseSchema(schema);
    } catch (const std::exception &e) {
      std::string m = e.what();
      auto nl = m.find('\n');
      ct::raise(CT_ERR_INVALID_ARGUMENT, "bad schema '%s': %s", schema, m.substr(0, nl).c_str());
    }
  }();
  if (parsed.is_vararg() || parsed.is_varret())
    ct::raise(CT_ERR_INVALID_ARGUMENT, "variadic schemas are not supported: '%s'", schema);
  // LibTorch's parser keeps a default of the wrong type (int a="s"); the op
  // would then be called with it.
  for (const c10::Argument &a : parsed.arguments()) {
    const auto &d = a.default_value();
    if (d && !d->type()->isSubtypeOf(*a.type()))
      ct::raise(CT_ERR_INVALID_ARGUMENT, "default value of argument '%s' has type %s, not %s: '%s'",
                a.name().c_str(), d->type()->annotation_str().c_str(),
                a.type()->annotation_str().c_str(), schema);
  }
  return parsed;
}

void check_not_in_jit_registry(const c10::FunctionSchema &s) {
  for (const auto &op : torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(s.name()))) {
    if (op->schema().overload_name() == s.overload_name())
      ct::raise(CT_ERR_INVALID_ARGUMENT, "operator '%s' is already registered as '%s'",
                op_display_name(s).c_str(), schema_string(op->schema()).c_str());
  }
}

}  // namespace ct

namespace {

void run_foreign(const ForeignOp &f, Stack &stack) {
  ct::call_value_kernel(f.name, f.fn, f.ctx, *f.schema, stack);
}

}  // namespace

extern "C" {

ct_status ct_op_register(const char *schema, ct_op_fn fn, void *ctx) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(schema);
    CT_CHECK_NOT_NULL(fn);
    c10::FunctionSchema parsed = ct::parse_op_schema(schema);
    const std::string &qname = parsed.name();
    auto sep = qname.find("::");
    if (sep == std::string::npos || sep == 0 || sep + 2 >= qname.size())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: schema '%s' needs a namespaced name such as 'myns::scale'", ct_fn_,
                           schema);
    CT_CHECK_ARG(!ct::reading_registry(),
                 "%s: cannot register an operator from code that runs while TorchScript "
                 "compiles or resolves operators on this thread (a kernel run by constant "
                 "folding?); register it before or after",
                 ct_fn_);
    std::lock_guard<std::mutex> lk(g_register_mu);
    std::unique_lock<std::shared_mutex> registry_write(ct::op_registry_mutex());
    ct::check_not_in_jit_registry(parsed);
    auto f = std::make_shared<ForeignOp>();
    f->fn = fn;
    f->ctx = ctx;
    f->schema = std::make_shared<c10::FunctionSchema>(parsed);
    f->name = op_display_name(parsed);
    ct::twins::note_host_op(f->name);
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
