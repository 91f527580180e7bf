// Models that travel to PyTorch: the TorchScript twins of host-language
// operators (ct_library_set_twin's registry), the record of which operators
// ctorch registered (ct_op_register, ct_library_define), and
// ct_module_to_pytorch, which copies a module and replaces each call of a
// host operator by its twin's code, so torch.jit.load needs neither ctorch
// nor the host language.
#include "checks.h"
#include "internal.h"
#include "locks.h"
#include "twins.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace ct {
namespace twins {
namespace {

struct Twin {
  std::shared_ptr<torch::jit::CompilationUnit> cu;
  std::string function;  // its name in cu
  std::string source;
};

std::mutex &mu() {
  static std::mutex *m = new std::mutex();
  return *m;
}
// "ns::name[.overload]" -> twin; never destroyed (lookups at exit stay valid).
std::map<std::string, Twin> &registry() {
  static auto *r = new std::map<std::string, Twin>();
  return *r;
}
std::set<std::string> &host_ops() {
  static auto *s = new std::set<std::string>();
  return *s;
}

// The twin for a call node, by "ns::name.overload" then "ns::name".
const Twin *find_for(const torch::jit::Node *n, const std::map<std::string, Twin> &r) {
  std::string name = n->kind().toQualString();
  if (const c10::FunctionSchema *s = n->maybeSchema()) {
    if (!s->overload_name().empty()) {
      auto it = r.find(name + "." + s->overload_name());
      if (it != r.end()) return &it->second;
    }
  }
  auto it = r.find(name);
  return it == r.end() ? nullptr : &it->second;
}

bool is_host_op(const torch::jit::Node *n, const std::set<std::string> &ops) {
  std::string name = n->kind().toQualString();
  if (ops.count(name)) return true;
  if (const c10::FunctionSchema *s = n->maybeSchema())
    if (!s->overload_name().empty() && ops.count(name + "." + s->overload_name())) return true;
  return false;
}

// Replaces host-operator calls in `block` (and nested blocks) by their twins;
// names the calls without one in *missing.
void rewrite(torch::jit::Block *block, const std::map<std::string, Twin> &r,
             const std::set<std::string> &ops, std::set<std::string> *missing) {
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    torch::jit::Node *n = *it;
    ++it;
    for (torch::jit::Block *b : n->blocks()) rewrite(b, r, ops, missing);
    if (!is_host_op(n, ops)) continue;
    const Twin *twin = find_for(n, r);
    if (!twin) {
      missing->insert(n->kind().toQualString());
      continue;
    }
    auto &fn = torch::jit::toGraphFunction(twin->cu->get_function(twin->function));
    std::shared_ptr<torch::jit::Graph> body = fn.graph()->copy();
    torch::jit::Inline(*body);
    torch::jit::Graph *g = n->owningGraph();
    torch::jit::WithInsertPoint guard(n);
    std::vector<torch::jit::Value *> outs =
        torch::jit::insertGraph(*g, *body, n->inputs().vec());
    if (n->outputs().size() > 1 && outs.size() == 1) {
      torch::jit::Node *unpack = g->insertNode(g->createTupleUnpack(outs[0]));
      outs = unpack->outputs().vec();
    }
    if (outs.size() != n->outputs().size())
      ct::raise(CT_ERR_INVALID_ARGUMENT, "the twin of %s returns %zu values, the operator %zu",
                n->kind().toQualString(), outs.size(), n->outputs().size());
    for (size_t i = 0; i < outs.size(); ++i) n->outputs()[i]->replaceAllUsesWith(outs[i]);
    n->destroy();
  }
}

}  // namespace

void note_host_op(const std::string &qualified) {
  std::lock_guard<std::mutex> lk(mu());
  host_ops().insert(qualified);
}

void set(const std::string &qualified, const c10::FunctionSchema &op, const char *source) {
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  {
    ct::RegistryRead registry_read;
    cu->define(c10::nullopt, source, torch::jit::nativeResolver(), nullptr);
  }
  std::string base = op.name().substr(op.name().find("::") + 2);
  torch::jit::Function *fn = cu->find_function(c10::QualifiedName(base));
  if (!fn) {
    std::vector<torch::jit::Function *> all = cu->get_functions();
    if (all.size() != 1)
      ct::raise(CT_ERR_INVALID_ARGUMENT,
                "the twin source must define a function named '%s' (or exactly one function)",
                base.c_str());
    fn = all[0];
  }
  const c10::FunctionSchema &ts = fn->getSchema();
  if (ts.arguments().size() != op.arguments().size())
    ct::raise(CT_ERR_INVALID_ARGUMENT, "the twin %s takes %zu arguments, the operator %s %zu",
              fn->name().c_str(), ts.arguments().size(), qualified.c_str(),
              op.arguments().size());
  size_t twin_returns = ts.returns().size() == 1 && ts.returns()[0].type()->kind() == c10::TypeKind::TupleType
                            ? ts.returns()[0].type()->containedTypes().size()
                            : ts.returns().size();
  if (twin_returns != op.returns().size() && !(op.returns().size() == 1 && ts.returns().size() == 1))
    ct::raise(CT_ERR_INVALID_ARGUMENT, "the twin %s returns %zu values, the operator %s %zu",
              fn->name().c_str(), twin_returns, qualified.c_str(), op.returns().size());
  std::lock_guard<std::mutex> lk(mu());
  registry()[qualified] = Twin{cu, fn->name(), source};
}

void forget(const std::string &qualified) {
  std::lock_guard<std::mutex> lk(mu());
  registry().erase(qualified);
}

}  // namespace twins
}  // namespace ct

extern "C" {

ct_status ct_module_to_pytorch(ct_module **out, const ct_module *m) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(m);
    std::map<std::string, ct::twins::Twin> r;
    std::set<std::string> ops;
    {
      std::lock_guard<std::mutex> lk(ct::twins::mu());
      r = ct::twins::registry();
      ops = ct::twins::host_ops();
    }
    torch::jit::Module copy = m->m.clone();
    std::set<std::string> missing;
    std::set<const c10::ClassType *> done;
    for (const torch::jit::Module &sub : copy.modules()) {
      if (!done.insert(sub.type().get()).second) continue;
      for (torch::jit::Function *f : sub.type()->methods()) {
        auto &gf = torch::jit::toGraphFunction(*f);
        ct::twins::rewrite(gf.graph()->block(), r, ops, &missing);
      }
    }
    if (!missing.empty()) {
      std::string names;
      for (const std::string &n : missing) names += (names.empty() ? "" : ", ") + n;
      return ct::set_error(CT_ERR_NOT_SUPPORTED,
                           "%s: the model calls host-language operators that have no TorchScript "
                           "twin, so PyTorch could not load it: %s (give each a twin with "
                           "ct_library_set_twin)",
                           ct_fn_, names.c_str());
    }
    *out = new ct_module{std::move(copy), m->extra_files};
    return CT_OK;
  });
}

}  // extern "C"
