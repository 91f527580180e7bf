// TorchScript code: compiled scripts (ct_script_*), running a TorchScript
// function with bound arguments (also module methods), the resolver that
// lets source use `torch`, `ops` and registered operator namespaces (also
// ct_module_define), and the summary line of interpreter errors.
#include "schema.h"
#include "checks.h"
#include "locks.h"
#include "script.h"

#include <torch/csrc/jit/frontend/error_report.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <memory>
#include <string>

struct ct_script {
  std::shared_ptr<torch::jit::CompilationUnit> cu;
};

using c10::IValue;

namespace ct {

std::string summarize(const std::string &msg) {
  auto is_space = [](char c) { return c == '\n' || c == ' ' || c == '\r'; };
  size_t b = 0, e = msg.size();
  while (b < e && is_space(msg[b])) ++b;
  while (e > b && is_space(msg[e - 1])) --e;
  std::string m = msg.substr(b, e - b);
  // The interpreter's message starts with a generic line and ends with the
  // real error ("RuntimeError: boom"): put that one first.
  size_t nl = m.find('\n');
  if (nl == std::string::npos ||
      m.compare(0, nl, "The following operation failed in the TorchScript interpreter.") != 0)
    return m;
  std::string last = m.substr(m.rfind('\n') + 1);
  size_t indent = last.find_first_not_of(' ');
  if (indent != std::string::npos) last = last.substr(indent);
  return last + "\n" + m;
}

ct_status invoke(const char *func, torch::jit::Function &fn, const IValue *self, ct_value **out,
                 const ct_value *const *args, size_t n, const char *const *kwnames,
                 const ct_value *const *kwvalues, size_t nkw,
                 const std::shared_ptr<torch::jit::CompilationUnit> &unit) {
  ct_status st = check_call_args(func, args, n, kwnames, kwvalues, nkw);
  if (st != CT_OK) return st;
  const auto &schema = fn.getSchema();
  torch::jit::Stack stack;
  stack.reserve(schema.arguments().size());
  if (self) stack.push_back(*self);
  st = bind_arguments(func, schema, args, n, kwnames, kwvalues, nkw, self != nullptr, &stack);
  if (st != CT_OK) return st;
  fn.run(stack);  // errors reach the barrier, which summarizes them
  *out = new_value(stack.empty() ? IValue() : std::move(stack.back()));
  if ((*out)->v.isFuture()) {
    std::shared_ptr<void> keep =
        self ? std::shared_ptr<void>(std::make_shared<IValue>(*self)) : std::shared_ptr<void>(unit);
    (*out)->keep = keep;
    // The forked task may still run on torch's thread pool when the value is
    // freed (Python frees both at exit): the Future holds the code until it
    // completes too (a crash in InterpreterState::runAsync, 2 in 30 runs).
    (*out)->v.toFuture()->addCallback([keep](c10::ivalue::Future &) {});
  }
  return CT_OK;
}

}  // namespace ct

namespace {

using c10::TypePtr;

// ---- Resolver for TorchScript source
// ----------------------------------------- True when some registered operator
// lives in namespace `ns` ("myns::...").
bool is_op_namespace(const std::string &ns) {
  std::string prefix = ns + "::";
  ct::RegistryRead registry_read;
  for (const auto &op : torch::jit::getAllOperators())
    if (op->schema().name().compare(0, prefix.size(), prefix) == 0) return true;
  return false;
}

// `torch.ops` / `ops`: attributes are operator namespaces.
struct OpsNamespaces : torch::jit::SugaredValue {
  std::string kind() const override { return "torch.ops"; }
  std::shared_ptr<torch::jit::SugaredValue> attr(const torch::jit::SourceRange & /*loc*/,
                                                 torch::jit::GraphFunction & /*m*/,
                                                 const std::string &field) override {
    return std::make_shared<torch::jit::BuiltinModule>(field);
  }
};

// `torch`: like the native resolver's BuiltinModule("aten"), plus `torch.ops`.
struct TorchNamespace : torch::jit::BuiltinModule {
  TorchNamespace() : BuiltinModule("aten") {}
  std::shared_ptr<torch::jit::SugaredValue> attr(const torch::jit::SourceRange &loc,
                                                 torch::jit::GraphFunction &m,
                                                 const std::string &field) override {
    if (field == "ops") return std::make_shared<OpsNamespaces>();
    return BuiltinModule::attr(loc, m, field);
  }
};

// Resolves `torch`, `ops`, and bare registered operator namespaces (`myns`),
// then falls back to the native resolver.
struct OpResolver : torch::jit::Resolver {
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(
      const std::string &name, torch::jit::GraphFunction &m,
      const torch::jit::SourceRange &loc) override {
    if (name == "torch") return std::make_shared<TorchNamespace>();
    if (name == "ops") return std::make_shared<OpsNamespaces>();
    static const char *const kExceptions[] = {
        "Exception",         "RuntimeError",   "ValueError",      "TypeError",
        "KeyError",          "IndexError",     "AssertionError",  "NotImplementedError",
        "ZeroDivisionError", "AttributeError", "ArithmeticError", "OverflowError",
        "LookupError",       "StopIteration"};
    for (const char *e : kExceptions)
      if (name == e)
        return std::make_shared<torch::jit::ExceptionValue>(std::string("builtins.") + e);
    if (is_op_namespace(name)) return std::make_shared<torch::jit::BuiltinModule>(name);
    return torch::jit::nativeResolver()->resolveValue(name, m, loc);
  }
  TypePtr resolveType(const std::string & /*name*/,
                      const torch::jit::SourceRange & /*loc*/) override {
    return nullptr;
  }
};

}  // namespace

namespace ct {

std::shared_ptr<torch::jit::Resolver> op_resolver() { return std::make_shared<OpResolver>(); }

}  // namespace ct

extern "C" {

ct_status ct_script_compile(ct_script **out, const char *source) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(source);
    if (ct_status s = ct::check_source_nesting(ct_fn_, source)) return s;
    auto cu = std::make_shared<torch::jit::CompilationUnit>();
    {
      ct::RegistryRead registry_read;
      cu->define(c10::nullopt, source, ct::op_resolver(), nullptr);
    }
    *out = new ct_script{std::move(cu)};
    return CT_OK;
  });
}

void ct_script_free(ct_script *s) { delete s; }

ct_status ct_script_functions(ct_value **out, const ct_script *s) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(s);
    c10::List<std::string> names;
    for (torch::jit::Function *f : s->cu->get_functions()) names.push_back(f->name());
    *out = ct::new_value(IValue(std::move(names)));
    return CT_OK;
  });
}

ct_status ct_script_call(ct_value **out, const ct_script *s, const char *function,
                         const ct_value *const *args, size_t n, const char *const *kwnames,
                         const ct_value *const *kwvalues, size_t nkw) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(s);
    CT_CHECK_NOT_NULL(function);
    torch::jit::Function *fn = s->cu->find_function(c10::QualifiedName(function));
    if (!fn)
      return ct::set_error(CT_ERR_NOT_FOUND, "%s: no function '%s' in the script", ct_fn_,
                           function);
    return ct::invoke(ct_fn_, *fn, nullptr, out, args, n, kwnames, kwvalues, nkw, s->cu);
  });
}

}  // extern "C"
