// TorchScript code shared by module.cpp and script.cpp: running a
// TorchScript function with bound arguments, and the resolver for
// TorchScript source. Internal; not installed.
#pragma once

#include "internal.h"

#include <torch/csrc/jit/frontend/resolver.h>

#include <memory>
#include <string>

namespace ct {

// Checks and binds the arguments (self first when given), runs `fn` and
// stores its result in *out (script.cpp). A Future result keeps what its
// code lives in alive with it: the module object `self`, else `unit`.
ct_status invoke(const char *func, torch::jit::Function &fn, const c10::IValue *self,
                 ct_value **out, const ct_value *const *args, size_t n, const char *const *kwnames,
                 const ct_value *const *kwvalues, size_t nkw,
                 const std::shared_ptr<torch::jit::CompilationUnit> &unit);

// Resolves `torch`, `ops`, and registered operator namespaces in TorchScript
// source (script.cpp).
std::shared_ptr<torch::jit::Resolver> op_resolver();

}  // namespace ct
