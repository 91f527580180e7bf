// Operators in torch's dispatcher with host-language kernels (ct_library_*):
// definitions and per-dispatch-key kernels, each in a torch::Library fragment
// of its own (so a library frees its kernels before its definitions), the
// autograd kernel that records a host backward, and the tombstones that keep
// a freed operator's dispatcher entry so that old handles fail cleanly.
#include "autograd_node.h"
#include "locks.h"
#include "op_internal.h"
#include "schema.h"
#include "torch_version.h"
#include "twins.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/function.h>
#include <torch/library.h>
#include <torch/version.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using c10::IValue;
using torch::jit::Stack;

struct ct_library {
  std::string ns;
  std::mutex mu;
  std::vector<std::string> defined;                            // "ns::name[.overload]"
  std::vector<std::string> twins;                              // operators given a twin
  std::vector<std::unique_ptr<torch::Library>> defs;           // one per definition
  std::vector<std::unique_ptr<torch::Library>> impls;          // one per kernel
  std::vector<std::pair<std::string, std::string>> impl_keys;  // (operator, key)
  // The kernels' entries (KernelEntry): held here too, so that ct_library_free
  // runs their destroy callbacks after its locks are released.
  std::vector<std::shared_ptr<void>> entries;
  bool freeing = false;  // set by ct_library_free: no new definitions or kernels
};

namespace {

// Serializes definitions, kernels, frees and tombstones of every library.
std::mutex g_lib_mu;
ct::ForkSafe g_lib_mu_fork_safe(g_lib_mu);
// (operator, key) pairs that have a kernel from a live ctorch library.
std::set<std::pair<std::string, std::string>> &g_impl_keys =
    *new std::set<std::pair<std::string, std::string>>();
// Freed operators: a kernel that says so keeps the dispatcher's entry (and
// so every OperatorHandle to it) valid until the name is defined again.
std::map<std::string, std::unique_ptr<torch::Library>> &g_tombstones =
    *new std::map<std::string, std::unique_ptr<torch::Library>>();

// Set by an atexit handler registered with the first library: exit has begun.
std::atomic<bool> g_exiting{false};
void on_exit() { g_exiting.store(true); }

// A kernel's callbacks and ctx; destroy(ctx) runs when the last holder (the
// dispatcher's kernel, autograd nodes) lets go.
struct KernelEntry {
  std::string name;  // "myns::scale (CPU kernel)"
  ct_op_fn fn = nullptr;
  ct_tensor_kernel_fn tensor_fn = nullptr;
  ct_op_backward_fn backward = nullptr;
  void *ctx = nullptr;
  ct_ctx_destroy_fn destroy = nullptr;
  bool same_thread = false;
  std::thread::id thread = std::this_thread::get_id();
  ~KernelEntry() {
    // At exit LibTorch's dispatcher destroys the kernels still registered,
    // after the host runtime (Python, Julia) has shut down: not called then.
    if (destroy && !g_exiting.load()) try {
        destroy(ctx);
      } catch (...) {}
  }
  void check_thread() const {
    if (same_thread && std::this_thread::get_id() != thread)
      ct::raise(CT_ERR_NOT_SUPPORTED,
                "%s: this kernel runs only on the thread that registered it "
                "(CT_KERNEL_SAME_THREAD) but was called from another thread (TorchScript's "
                "fork, an autograd device thread or a thread of the caller's)",
                name.c_str());
  }
};
using EntryPtr = std::shared_ptr<KernelEntry>;

// Takes ctx at once, so that destroy(ctx) runs exactly once whatever fails.
EntryPtr make_entry(void *ctx, ct_ctx_destroy_fn destroy, int32_t flags) {
  auto e = std::make_shared<KernelEntry>();
  e->ctx = ctx;
  e->destroy = destroy;
  e->same_thread = (flags & CT_KERNEL_SAME_THREAD) != 0;
  return e;
}

struct ValueKernel final : c10::OperatorKernel {
  EntryPtr e;
  bool below_autograd;  // a device or CompositeExplicitAutograd kernel
  ValueKernel(EntryPtr entry, bool below) : e(std::move(entry)), below_autograd(below) {}
  void operator()(const c10::OperatorHandle &op, c10::DispatchKeySet, Stack *stack) {
    EntryPtr hold = e;  // the kernel may free its own library
    hold->check_thread();
    if (below_autograd) {
      // The autograd kernel (if any) records the graph; the kernel sees data
      // only, so numpy/Julia views of a requires-grad input work.
      const size_t n = op.schema().arguments().size();
      for (size_t i = stack->size() - std::min(n, stack->size()); i < stack->size(); ++i) {
        IValue &v = (*stack)[i];
        if (v.isTensor() && v.toTensor().requires_grad()) v = v.toTensor().detach();
      }
    }
    ct::call_value_kernel(hold->name, hold->fn, hold->ctx, op.schema(), *stack);
  }
};

// A tensors-only kernel (ct_library_impl_tensors): the schema's arguments and
// returns are all Tensor, checked at registration; the arguments are passed as
// handles built on this frame (no allocation, no values), the results are
// handles the kernel made, moved onto the stack.
struct TensorKernel final : c10::OperatorKernel {
  EntryPtr e;
  bool below_autograd;
  TensorKernel(EntryPtr entry, bool below) : e(std::move(entry)), below_autograd(below) {}
  void operator()(const c10::OperatorHandle &op, c10::DispatchKeySet, Stack *stack) {
    EntryPtr hold = e;
    hold->check_thread();
    const auto &schema = op.schema();
    const size_t n = schema.arguments().size(), m = schema.returns().size();
    if (stack->size() < n)
      ct::raise(CT_ERR_INTERNAL, "%s: stack has %zu values, expected %zu", hold->name.c_str(),
                stack->size(), n);
    const size_t base = stack->size() - n;
    c10::SmallVector<ct_tensor, 4> ins;
    ins.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      at::Tensor t = std::move((*stack)[base + i]).toTensor();
      if (below_autograd && t.requires_grad()) t = t.detach();
      ins.push_back(ct_tensor{std::move(t)});
    }
    c10::SmallVector<const ct_tensor *, 4> in_ptrs;
    for (const ct_tensor &t : ins) in_ptrs.push_back(&t);
    c10::SmallVector<ct_tensor *, 4> outs(m, nullptr);
    struct FreeOuts {
      c10::SmallVector<ct_tensor *, 4> &o;
      ~FreeOuts() {
        for (ct_tensor *t : o) delete t;
      }
    } free_outs{outs};
    ct_clear_error();  // a kernel that fails without ct_set_error gets no stale message
    ct_status rc =
        hold->tensor_fn(hold->ctx, n ? in_ptrs.data() : nullptr, n, m ? outs.data() : nullptr, m);
    // A handle stored twice, or an input handle stored as an output, would be
    // freed twice (or freed though ctorch owns it): drop those slots first.
    std::string misuse;
    for (size_t i = 0; i < m; ++i) {
      if (outs[i] == nullptr) continue;
      for (size_t j = 0; j < n && outs[i] != nullptr; ++j)
        if (outs[i] == in_ptrs[j]) {
          outs[i] = nullptr;
          if (misuse.empty())
            misuse = "outputs[" + std::to_string(i) + "] is the input handle inputs[" +
                     std::to_string(j) + "] (store a new handle: ct_tensor_ref)";
        }
      for (size_t j = 0; j < i && outs[i] != nullptr; ++j)
        if (outs[i] == outs[j]) {
          outs[i] = nullptr;
          if (misuse.empty())
            misuse = "outputs[" + std::to_string(j) + "] and outputs[" + std::to_string(i) +
                     "] are the same handle (each slot needs a handle of its own: ct_tensor_ref)";
        }
    }
    if (rc == CT_OK && !misuse.empty())
      ct::raise(CT_ERR_CALLBACK, "%s: %s", hold->name.c_str(), misuse.c_str());
    if (rc != CT_OK) {
      const char *msg = ct_last_error();
      ct::raise(CT_ERR_CALLBACK, "%s: kernel failed (status %d): %s", hold->name.c_str(),
                static_cast<int>(rc), (msg && *msg) ? msg : "(no message: the callback did not call ct_set_error)");
    }
    for (size_t i = 0; i < m; ++i)
      if (outs[i] == nullptr || !outs[i]->t.defined())
        ct::raise(CT_ERR_CALLBACK, "%s: the kernel stored no tensor in outputs[%zu]",
                  hold->name.c_str(), i);
    torch::jit::drop(*stack, n);
    for (size_t i = 0; i < m; ++i) stack->push_back(std::move(outs[i]->t));
  }
};

// Backward of the autograd kernel: saved arguments and result in, one
// gradient per tensor argument out.
ct::BackwardCall backward_call(EntryPtr e, std::vector<IValue> args, IValue result,
                               std::vector<size_t> tensor_args) {
  return [e = std::move(e), args = std::move(args), result = std::move(result),
          tensor_args = std::move(tensor_args)](const ct_tensor *const *grads, size_t n_grads,
                                                ct_tensor **res, size_t n_res) -> ct_status {
    e->check_thread();
    std::vector<ct_value> vals;
    vals.reserve(args.size());
    for (const auto &a : args) vals.push_back(ct_value{a, nullptr});
    std::vector<const ct_value *> ptrs(vals.size());
    for (size_t i = 0; i < vals.size(); ++i) ptrs[i] = &vals[i];
    ct_value res_val{result, nullptr};
    std::vector<ct_tensor *> slots(args.size(), nullptr);
    ct_status rc = e->backward(e->ctx, ptrs.empty() ? nullptr : ptrs.data(), ptrs.size(), &res_val,
                               grads, n_grads, slots.empty() ? nullptr : slots.data());
    // Hand on the tensor arguments' gradients; free what else was stored.
    for (size_t k = 0; k < n_res && k < tensor_args.size(); ++k) {
      res[k] = slots[tensor_args[k]];
      slots[tensor_args[k]] = nullptr;
    }
    for (ct_tensor *t : slots) delete t;
    return rc;
  };
}

struct AutogradKernel final : c10::OperatorKernel {
  EntryPtr e;
  explicit AutogradKernel(EntryPtr entry) : e(std::move(entry)) {}
  void operator()(const c10::OperatorHandle &op, c10::DispatchKeySet ks, Stack *stack) {
    EntryPtr hold = e;
    const auto &schema = op.schema();
    const size_t n = schema.arguments().size();
    if (stack->size() < n)
      ct::raise(CT_ERR_INTERNAL, "%s: stack has %zu values, expected %zu", hold->name.c_str(),
                stack->size(), n);
    const size_t base = stack->size() - n;
    torch::autograd::variable_list ins;
    std::vector<size_t> tensor_args;
    for (size_t i = 0; i < n; ++i) {
      const IValue &v = (*stack)[base + i];
      if (v.isTensor()) {
        ins.push_back(v.toTensor());
        tensor_args.push_back(i);
      }
    }
    const bool record =
        at::GradMode::is_enabled() && torch::autograd::any_variable_requires_grad(ins);
    std::vector<IValue> saved;
    if (record) {
      hold->check_thread();  // the backward will run here too
      saved.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        const IValue &v = (*stack)[base + i];
        saved.push_back(v.isTensor() ? IValue(v.toTensor().detach()) : v);
      }
    }
    {
      at::AutoDispatchBelowADInplaceOrView below;
      op.redispatchBoxed(ks & c10::after_autograd_keyset, stack);
    }
    if (!record) return;
    const size_t n_out = schema.returns().size();
    const size_t out_base = stack->size() - n_out;
    torch::autograd::variable_list outs;
    std::vector<IValue> saved_outs;
    for (size_t i = 0; i < n_out; ++i) {
      outs.push_back((*stack)[out_base + i].toTensor());
      saved_outs.push_back(outs.back().detach());
    }
    IValue result =
        n_out == 1 ? saved_outs[0] : IValue(c10::ivalue::Tuple::create(std::move(saved_outs)));
    ct::record_foreign_node(
        schema.name() +
            (schema.overload_name().empty() ? std::string() : "." + schema.overload_name()),
        backward_call(hold, std::move(saved), std::move(result), std::move(tensor_args)), hold, ins,
        outs);
    for (size_t i = 0; i < n_out; ++i) (*stack)[out_base + i] = std::move(outs[i]);
  }
};

// Answers every call of a freed operator.
struct RemovedKernel final : c10::OperatorKernel {
  std::string name;
  explicit RemovedKernel(std::string n) : name(std::move(n)) {}
  void operator()(const c10::OperatorHandle &, c10::DispatchKeySet, Stack *) {
    ct::raise(CT_ERR_NOT_FOUND, "operator %s was removed (its ct_library was freed)", name.c_str());
  }
};

bool valid_ns(const char *ns) {
  if (!*ns || std::strlen(ns) > 200) return false;
  for (const char *p = ns; *p; ++p)
    if (!(std::isalnum(static_cast<unsigned char>(*p)) || *p == '_')) return false;
  return !std::isdigit(static_cast<unsigned char>(ns[0]));
}

// Torch's tag names this LibTorch has.
bool parse_tag(const std::string &s, at::Tag *out) {
  static const std::pair<const char *, at::Tag> table[] = {
    {"data_dependent_output", at::Tag::data_dependent_output},
    {"dynamic_output_shape", at::Tag::dynamic_output_shape},
    {"generated", at::Tag::generated},
    {"inplace_view", at::Tag::inplace_view},
    {"nondeterministic_bitwise", at::Tag::nondeterministic_bitwise},
    {"nondeterministic_seeded", at::Tag::nondeterministic_seeded},
    {"view_copy", at::Tag::view_copy},
#if CT_TORCH_AT_LEAST(2, 6)
    {"core", at::Tag::core},
    {"pointwise", at::Tag::pointwise},
    {"pt2_compliant_tag", at::Tag::pt2_compliant_tag},
    {"needs_fixed_stride_order", at::Tag::needs_fixed_stride_order},
    {"flexible_layout", at::Tag::flexible_layout},
#endif
  };
  for (const auto &t : table)
    if (s == t.first) {
      *out = t.second;
      return true;
    }
  return false;
}

// Keys a host kernel may be given.
const char *const kKeys[] = {"CPU", "CUDA", "Meta", "CompositeExplicitAutograd",
                             "CompositeImplicitAutograd"};

// "scale", "scale.out" or "ns::scale" -> "ns::scale[.out]"; raises on a
// foreign namespace.
std::string qualify(const char *func, const ct_library *lib, const char *name) {
  std::string s = name;
  auto sep = s.find("::");
  if (sep == std::string::npos) return lib->ns + "::" + s;
  if (s.substr(0, sep) != lib->ns)
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: operator '%s' is not in this library's namespace '%s'",
              func, name, lib->ns.c_str());
  return s;
}

c10::OperatorName operator_name(const std::string &q) {
  auto dot = q.find('.', q.find("::") + 2);
  if (dot == std::string::npos) return c10::OperatorName(q, "");
  return c10::OperatorName(q.substr(0, dot), q.substr(dot + 1));
}

std::unique_ptr<torch::Library> fragment(const std::string &ns) {
  return std::make_unique<torch::Library>(torch::Library::FRAGMENT, ns, c10::nullopt, __FILE__,
                                          static_cast<uint32_t>(__LINE__));
}

// Registers `kernel` for `key` on operator `q` in a fragment of its own.
ct_status add_kernel(const char *func, ct_library *lib, const char *name, const std::string &key,
                     c10::DispatchKey dk, const EntryPtr &e, bool autograd) {
  const bool tensors_only = e->tensor_fn != nullptr;
  std::lock_guard<std::mutex> lk(lib->mu);
  std::lock_guard<std::mutex> glk(g_lib_mu);
  if (lib->freeing)
    return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                         "%s: library '%s' is being freed (a destroy callback?)", func,
                         lib->ns.c_str());
  const std::string q = qualify(func, lib, name);
  auto handle = c10::Dispatcher::singleton().findSchema(operator_name(q));
  if (!handle)
    return ct::set_error(CT_ERR_NOT_FOUND, "%s: operator '%s' is not defined", func, q.c_str());
  if (g_impl_keys.count({q, key}))
    return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                         "%s: operator '%s' already has a ctorch kernel for %s", func, q.c_str(),
                         key.c_str());
  if (autograd) {
    for (const auto &r : handle->schema().returns())
      if (r.type()->kind() != c10::TypeKind::TensorType)
        return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                             "%s: an autograd kernel needs every return of '%s' to be a Tensor "
                             "(return '%s' is %s)",
                             func, q.c_str(), r.name().c_str(), ct::arg_type_string(r).c_str());
  }
  if (tensors_only) {
    const auto &sc = handle->schema();
    for (const auto *list : {&sc.arguments(), &sc.returns()})
      for (const auto &a : *list)
        if (a.type()->kind() != c10::TypeKind::TensorType)
          return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                               "%s: a tensors-only kernel needs every argument and return of '%s' "
                               "to be a Tensor ('%s' is %s): use ct_library_impl",
                               func, q.c_str(), a.name().c_str(), ct::arg_type_string(a).c_str());
  }
  e->name = q + " (" + key + " kernel)";
  auto frag = fragment(lib->ns);
  const bool below = key != "CompositeImplicitAutograd";
  auto fn = autograd ? torch::CppFunction::makeFromBoxedFunctor(std::make_unique<AutogradKernel>(e))
            : tensors_only
                ? torch::CppFunction::makeFromBoxedFunctor(std::make_unique<TensorKernel>(e, below))
                : torch::CppFunction::makeFromBoxedFunctor(std::make_unique<ValueKernel>(e, below));
  frag->impl(q.substr(q.find("::") + 2).c_str(), torch::dispatch(dk, std::move(fn)));
  lib->impls.push_back(std::move(frag));
  lib->entries.push_back(e);
  lib->impl_keys.emplace_back(q, key);
  g_impl_keys.insert({q, key});
  return CT_OK;
}

}  // namespace

extern "C" {

ct_status ct_library_new(ct_library **out, const char *ns) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = nullptr;
    CT_CHECK_NOT_NULL(ns);
    CT_CHECK_ARG(valid_ns(ns), "%s: namespace '%.200s' must be letters, digits and '_'", ct_fn_,
                 ns);
    CT_CHECK_ARG(std::strcmp(ns, "aten") != 0 && std::strcmp(ns, "prim") != 0,
                 "%s: namespace '%s' belongs to torch", ct_fn_, ns);
    static const bool exit_hook = std::atexit(on_exit) == 0;
    (void)exit_hook;
    auto lib = std::make_unique<ct_library>();
    lib->ns = ns;
    *out = lib.release();
    return CT_OK;
  });
}

void ct_library_free(ct_library *lib) {
  if (lib == nullptr) return;
  if (ct::reading_registry()) {  // from a kernel that a compile runs: freed when it ends
    ct::guard_value(0, [&] {
      ct::RegistryRead::deferred.push_back([lib] { ct_library_free(lib); });
      return 0;
    });
    return;
  }
  // The kernels' destroy callbacks run when this goes, after the locks below
  // are released: one that calls back into ctorch (ct_library_impl of another
  // library, ct_op_find) does not wait for them forever.
  std::vector<std::shared_ptr<void>> entries;
  ct::guard_value(0, [&] {
    std::lock_guard<std::mutex> lk(lib->mu);
    std::unique_lock<std::shared_mutex> registry_write(ct::op_registry_mutex());
    std::lock_guard<std::mutex> glk(g_lib_mu);
    lib->freeing = true;
    entries = std::move(lib->entries);
    // Kernels first: the definitions keep each entry alive meanwhile.
    lib->impls.clear();
    for (const auto &k : lib->impl_keys) g_impl_keys.erase(k);
    // A tombstone for each operator, then the definitions go.
    for (const std::string &q : lib->defined) {
      if (g_tombstones.count(q)) continue;
      auto frag = fragment(lib->ns);
      frag->impl(q.substr(q.find("::") + 2).c_str(),
                 torch::dispatch(
                     c10::DispatchKey::CompositeExplicitAutograd,
                     torch::CppFunction::makeFromBoxedFunctor(std::make_unique<RemovedKernel>(q))));
      g_tombstones.emplace(q, std::move(frag));
    }
    lib->defs.clear();
    for (const std::string &q : lib->twins) ct::twins::forget(q);
    for (const std::string &q : lib->defined)
      (void)torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(operator_name(q).name));
    ct::forget_cached_ops();
    return 0;
  });
  entries.clear();
  delete lib;
}

ct_status ct_library_define(ct_library *lib, const char *schema, const char *const *tags,
                            size_t n_tags) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(lib);
    CT_CHECK_NOT_NULL(schema);
    CT_CHECK_ARG(n_tags == 0 || tags != nullptr, "%s: argument 'tags' is NULL", ct_fn_);
    std::vector<at::Tag> tag_list;
    for (size_t i = 0; i < n_tags; ++i) {
      at::Tag t;
      CT_CHECK_ARG(tags[i] != nullptr, "%s: tags[%zu] is NULL", ct_fn_, i);
      CT_CHECK_ARG(parse_tag(tags[i], &t), "%s: unknown tag '%.100s' (LibTorch %s)", ct_fn_,
                   tags[i], TORCH_VERSION);
      tag_list.push_back(t);
    }
    // The namespace goes in front of an unqualified name.
    std::string full = schema;
    const auto paren = full.find('(');
    if (full.substr(0, paren).find("::") == std::string::npos) full = lib->ns + "::" + full;
    c10::FunctionSchema parsed = ct::parse_op_schema(full.c_str());
    const std::string &qname = parsed.name();
    CT_CHECK_ARG(qname.substr(0, qname.find("::")) == lib->ns,
                 "%s: operator '%s' is not in this library's namespace '%s'", ct_fn_, qname.c_str(),
                 lib->ns.c_str());
    CT_CHECK_ARG(!ct::reading_registry(),
                 "%s: cannot define an operator from code that runs while TorchScript compiles "
                 "or resolves operators on this thread (a kernel run by constant folding?); "
                 "define it before or after",
                 ct_fn_);
    std::lock_guard<std::mutex> lk(lib->mu);
    CT_CHECK_ARG(!lib->freeing, "%s: library '%s' is being freed (a destroy callback?)", ct_fn_,
                 lib->ns.c_str());
    std::unique_lock<std::shared_mutex> registry_write(ct::op_registry_mutex());
    std::lock_guard<std::mutex> glk(g_lib_mu);
    const std::string q = ct::op_display_name(parsed);
    if (c10::Dispatcher::singleton().findSchema(
            c10::OperatorName(parsed.name(), parsed.overload_name())))
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: operator '%s' is already defined", ct_fn_,
                           q.c_str());
    ct::check_not_in_jit_registry(parsed);
    auto frag = fragment(lib->ns);
    const std::vector<at::Tag> &tag_ref = tag_list;
    frag->def(torch::schema(full.c_str(), c10::AliasAnalysisKind::FROM_SCHEMA), tag_ref);
    lib->defs.push_back(std::move(frag));
    lib->defined.push_back(q);
    ct::twins::note_host_op(q);
    g_tombstones.erase(q);  // the new definition keeps the entry now
    // LibTorch queues the JIT registration until the next lookup: done here,
    // under the exclusive lock (see ct_op_register).
    (void)torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(parsed.name()));
    ct::forget_cached_ops();
    return CT_OK;
  });
}

namespace {

// ct_library_impl and ct_library_impl_tensors: checks, then one of the kernels.
ct_status impl_device_kernel(const char *ct_fn_, ct_library *lib, const char *name,
                             const char *dispatch_key, bool has_kernel, const EntryPtr &e,
                             int32_t flags) {
  CT_CHECK_NOT_NULL(lib);
  CT_CHECK_NOT_NULL(name);
  CT_CHECK_NOT_NULL(dispatch_key);
  CT_CHECK_ARG(has_kernel, "%s: argument 'kernel' is NULL", ct_fn_);
  CT_CHECK_ARG((flags & ~CT_KERNEL_SAME_THREAD) == 0, "%s: unknown flags 0x%x", ct_fn_,
               static_cast<unsigned>(flags));
  const std::string key = dispatch_key;
  bool known = false;
  for (const char *k : kKeys) known = known || key == k;
  CT_CHECK_ARG(known,
               "%s: dispatch key '%.100s' is not one of CPU, CUDA, Meta, "
               "CompositeExplicitAutograd, CompositeImplicitAutograd (autograd: "
               "ct_library_impl_autograd)",
               ct_fn_, dispatch_key);
  return add_kernel(ct_fn_, lib, name, key, c10::parseDispatchKey(key), e, false);
}

}  // namespace

ct_status ct_library_impl(ct_library *lib, const char *name, const char *dispatch_key,
                          ct_op_fn kernel, void *ctx, ct_ctx_destroy_fn destroy, int32_t flags) {
  EntryPtr e = make_entry(ctx, destroy, flags);
  e->fn = kernel;
  return ct::guard(__func__, [&] {
    return impl_device_kernel("ct_library_impl", lib, name, dispatch_key, kernel != nullptr, e,
                              flags);
  });
}

ct_status ct_library_impl_tensors(ct_library *lib, const char *name, const char *dispatch_key,
                                  ct_tensor_kernel_fn kernel, void *ctx, ct_ctx_destroy_fn destroy,
                                  int32_t flags) {
  EntryPtr e = make_entry(ctx, destroy, flags);
  e->tensor_fn = kernel;
  return ct::guard(__func__, [&] {
    return impl_device_kernel("ct_library_impl_tensors", lib, name, dispatch_key, kernel != nullptr,
                              e, flags);
  });
}

ct_status ct_library_impl_autograd(ct_library *lib, const char *name, ct_op_backward_fn backward,
                                   void *ctx, ct_ctx_destroy_fn destroy, int32_t flags) {
  EntryPtr e = make_entry(ctx, destroy, flags);
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(lib);
    CT_CHECK_NOT_NULL(name);
    CT_CHECK_NOT_NULL(backward);
    CT_CHECK_ARG((flags & ~CT_KERNEL_SAME_THREAD) == 0, "%s: unknown flags 0x%x", ct_fn_,
                 static_cast<unsigned>(flags));
    e->backward = backward;
    return add_kernel(ct_fn_, lib, name, "Autograd", c10::DispatchKey::Autograd, e, true);
  });
}

ct_status ct_library_set_twin(ct_library *lib, const char *name, const char *source) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(lib);
    CT_CHECK_NOT_NULL(name);
    CT_CHECK_NOT_NULL(source);
    const std::string q = qualify(ct_fn_, lib, name);
    std::lock_guard<std::mutex> lk(lib->mu);
    CT_CHECK_ARG(std::find(lib->defined.begin(), lib->defined.end(), q) != lib->defined.end(),
                 "%s: operator '%s' is not defined by this library", ct_fn_, q.c_str());
    c10::OperatorName on = operator_name(q);
    auto handle = c10::Dispatcher::singleton().findSchema(on);
    CT_CHECK_ARG(handle.has_value(), "%s: operator '%s' is not defined", ct_fn_, q.c_str());
    ct::twins::set(q, handle->schema(), source);
    if (std::find(lib->twins.begin(), lib->twins.end(), q) == lib->twins.end())
      lib->twins.push_back(q);
    return CT_OK;
  });
}

}  // extern "C"
