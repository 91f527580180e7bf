// TorchScript source: the resolver that lets source use `torch`, `ops` and
// registered operator namespaces (also used by ct_module_define), error
// summaries, and compiled scripts (ct_script_*).
#include "script.h"

#include <torch/csrc/jit/frontend/error_report.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <memory>
#include <string>

struct ct_script {
  std::shared_ptr<torch::jit::CompilationUnit> cu;
};

namespace ct {

std::string message_of(const std::exception &e) {
  if (auto *ce = dynamic_cast<const c10::Error *>(&e))
    return ce->what_without_backtrace();
  return e.what();
}

// A short first line for a TorchScript error: the interpreter's message
// starts with a generic line and ends with the real error ("RuntimeError:
// boom"); use that one, then the whole text.
std::string summarize(const std::string &msg) {
  auto trim_end = [](std::string s) {
    while (!s.empty() &&
           (s.back() == '\n' || s.back() == ' ' || s.back() == '\r'))
      s.pop_back();
    return s;
  };
  std::string m = trim_end(msg);
  size_t lead = m.find_first_not_of(" \n\r");
  m = lead == std::string::npos ? std::string() : m.substr(lead);
  size_t nl = m.find('\n');
  std::string first = m.substr(0, nl);
  if (nl != std::string::npos &&
      first.find(
          "The following operation failed in the TorchScript interpreter") !=
          std::string::npos) {
    size_t last = m.rfind('\n');
    first = m.substr(last + 1);
    // Skip indentation.
    size_t s = first.find_first_not_of(' ');
    if (s != std::string::npos)
      first = first.substr(s);
  }
  if (nl == std::string::npos)
    return first;
  return first + "\n" + m;
}

}  // namespace ct

namespace {

using c10::IValue;
using c10::TypePtr;
using ct::invoke;
using ct::with_code;

// ---- Resolver for TorchScript source
// ----------------------------------------- True when some registered operator
// lives in namespace `ns` ("myns::...").
bool is_op_namespace(const std::string &ns) {
  std::string prefix = ns + "::";
  for (const auto &op : torch::jit::getAllOperators())
    if (op->schema().name().compare(0, prefix.size(), prefix) == 0)
      return true;
  return false;
}

// `torch.ops` / `ops`: attributes are operator namespaces.
struct OpsNamespaces : torch::jit::SugaredValue {
  std::string kind() const override { return "torch.ops"; }
  std::shared_ptr<torch::jit::SugaredValue>
  attr(const torch::jit::SourceRange &loc, torch::jit::GraphFunction &m,
       const std::string &field) override {
    return std::make_shared<torch::jit::BuiltinModule>(field);
  }
};

// `torch`: like the native resolver's BuiltinModule("aten"), plus `torch.ops`.
struct TorchNamespace : torch::jit::BuiltinModule {
  TorchNamespace() : BuiltinModule("aten") {}
  std::shared_ptr<torch::jit::SugaredValue>
  attr(const torch::jit::SourceRange &loc, torch::jit::GraphFunction &m,
       const std::string &field) override {
    if (field == "ops")
      return std::make_shared<OpsNamespaces>();
    return BuiltinModule::attr(loc, m, field);
  }
};

// Resolves `torch`, `ops`, and bare registered operator namespaces (`myns`),
// then falls back to the native resolver.
struct OpResolver : torch::jit::Resolver {
  std::shared_ptr<torch::jit::SugaredValue>
  resolveValue(const std::string &name, torch::jit::GraphFunction &m,
               const torch::jit::SourceRange &loc) override {
    if (name == "torch")
      return std::make_shared<TorchNamespace>();
    if (name == "ops")
      return std::make_shared<OpsNamespaces>();
    static const char *const kExceptions[] = {
        "Exception",      "RuntimeError",   "ValueError",          "TypeError",
        "KeyError",       "IndexError",     "AssertionError",      "NotImplementedError",
        "ZeroDivisionError", "AttributeError", "ArithmeticError", "OverflowError",
        "LookupError",    "StopIteration"};
    for (const char *e : kExceptions)
      if (name == e)
        return std::make_shared<torch::jit::ExceptionValue>(std::string("builtins.") + e);
    if (is_op_namespace(name))
      return std::make_shared<torch::jit::BuiltinModule>(name);
    return torch::jit::nativeResolver()->resolveValue(name, m, loc);
  }
  TypePtr resolveType(const std::string &name,
                      const torch::jit::SourceRange &loc) override {
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
    auto cu = std::make_shared<torch::jit::CompilationUnit>();
    ct_status st = with_code(ct_fn_, CT_ERR_TORCH, "", [&] {
      cu->define(c10::nullopt, source, ct::op_resolver(), nullptr);
      return CT_OK;
    });
    if (st != CT_OK)
      return st;
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
    for (torch::jit::Function *f : s->cu->get_functions())
      names.push_back(f->name());
    *out = ct::new_value(IValue(std::move(names)));
    return CT_OK;
  });
}

ct_status ct_script_call(ct_value **out, const ct_script *s,
                         const char *function, const ct_value *const *args,
                         size_t n, const char *const *kwnames,
                         const ct_value *const *kwvalues, size_t nkw) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(s);
    CT_CHECK_NOT_NULL(function);
    torch::jit::Function *fn =
        s->cu->find_function(c10::QualifiedName(function));
    if (!fn)
      return ct::set_error(CT_ERR_NOT_FOUND,
                           "%s: no function '%s' in the script", ct_fn_,
                           function);
    return invoke(ct_fn_, *fn, nullptr, out, args, n, kwnames, kwvalues, nkw);
  });
}

} // extern "C"
