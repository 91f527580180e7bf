// TorchScript code shared by module.cpp and script.cpp: turning LibTorch
// errors into a status with a short first line, calling a TorchScript
// function with bound arguments, and the resolver for TorchScript source.
// Internal; not installed.
#pragma once

#include "internal.h"

#include <torch/csrc/jit/frontend/resolver.h>

#include <memory>
#include <string>

namespace ct {

// Text of an exception without the C++ backtrace (script.cpp).
std::string message_of(const std::exception &e);

// A short first line for a TorchScript error, then the whole text (script.cpp).
std::string summarize(const std::string &msg);

// Runs body; exceptions other than out-of-memory and ctorch's own become
// `code` with a short first line.
template <class F>
ct_status with_code(const char *func, ct_status code, const char *prefix,
                    F &&body) {
  try {
    return body();
  } catch (const ct::Error &) {
    throw;
  } catch (const std::bad_alloc &) {
    throw;
  } catch (const c10::OutOfMemoryError &) {
    throw;
  } catch (const std::exception &e) {
    std::string s = summarize(message_of(e));
    return ct::set_error(code, "%s: %s%s", func, prefix, s.c_str());
  }
}

// Binds the arguments and runs `fn`; stores the result in *out (module.cpp).
ct_status invoke(const char *func, torch::jit::Function &fn, const c10::IValue *self,
                 ct_value **out, const ct_value *const *args, size_t n,
                 const char *const *kwnames, const ct_value *const *kwvalues, size_t nkw);

// Binds tensors as the positional arguments of method `fn` of `self` and runs
// it; the result is left in *result (module.cpp).
ct_status invoke_tensors(const char *func, torch::jit::Function &fn, const c10::IValue &self,
                         const ct_tensor *const *inputs, size_t n, c10::IValue *result);

// Resolves `torch`, `ops`, and registered operator namespaces in TorchScript
// source (script.cpp).
std::shared_ptr<torch::jit::Resolver> op_resolver();

}  // namespace ct
