// A torch.nn layer under construction (nn_layers.cpp and the files it
// splits into: nn_conv_norm.cpp, nn_sequence.cpp, nn_losses.cpp): the module
// being built, its bound arguments, TorchScript literals for its forward,
// and the builders each file defines. Internal.
#pragma once

#include "nn.h"

#include "locks.h"
#include "script.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace ct {
namespace nn {

using c10::IValue;

// ---- TorchScript literals ----------------------------------------------------
inline std::string lit(double v) {
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "float(\"-inf\")";
  if (std::isnan(v)) return "float(\"nan\")";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s(buf);
  if (s.find_first_of(".e") == std::string::npos) s += ".";
  return s;
}
inline std::string lit(int64_t v) { return std::to_string(v); }
inline std::string lit(bool v) { return v ? "True" : "False"; }
inline std::string lit(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
inline std::string quote(const std::string &v) {
  std::string s = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') s += '\\';
    s += c;
  }
  return s + "\"";
}

// ---- A layer under construction -----------------------------------------------
class Layer {
 public:
  Layer(const std::string &qualname, const Args &a)
      : Layer(qualname, a, a.factory()) {}
  Layer(const std::string &qualname, const Args &a, at::TensorOptions options)
      : m(c10::QualifiedName("__torch__.torch.nn.modules." + qualname)), a(a), opt(options) {
    m.register_attribute("training", c10::BoolType::get(), IValue(true));
  }
  // An uninitialized parameter of torch.nn's name and shape (requires grad).
  at::Tensor param(const char *name, std::vector<int64_t> sizes) {
    for (int64_t s : sizes)
      if (s < 0)
        fail("Trying to create tensor with negative dimension %lld: [%s] for %s", (long long)s,
             join(sizes).c_str(), name);
    at::Tensor t = at::empty(sizes, opt);
    t.set_requires_grad(true);
    m.register_parameter(name, t, /*is_buffer=*/false);
    return t;
  }
  // A parameter or buffer torch.nn sets to None (not in the state_dict).
  void none(const char *name) {
    m.register_attribute(name, c10::OptionalType::create(c10::TensorType::get()), IValue());
  }
  at::Tensor buffer(const char *name, at::Tensor t) {
    m.register_buffer(name, t);
    return t;
  }
  void attr(const char *name, const IValue &v) { m.register_attribute(name, v.type(), v); }
  void child(const std::string &name, const torch::jit::Module &c) { m.register_module(name, c); }
  void define(const std::string &source) {
    ct::RegistryRead registry_read;
    m.define(source, ct::op_resolver());
  }
  [[noreturn]] void fail(const char *fmt, ...) const __attribute__((format(printf, 2, 3))) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: %s", a.call().c_str(), buf);
  }
  static std::string join(const std::vector<int64_t> &v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s;
  }

  torch::jit::Module m;
  const Args &a;
  at::TensorOptions opt;
};


// A layer inside a layer (MultiheadAttention's out_proj, ...): built from the
// table with these arguments and the parent's dtype and device (nn_layers.cpp).
torch::jit::Module child_layer(const Layer &parent, const char *name, std::vector<IValue> args,
                               std::vector<std::pair<std::string, IValue>> kw = {});

// The builders: each reads its arguments from l.a and fills l.m.
void conv(Layer &l, size_t nd, bool transposed);   // nn_conv_norm.cpp
void batch_norm(Layer &l, int nd);
void layer_norm(Layer &l);
void group_norm(Layer &l);
void rnn(Layer &l, const std::string &kind);       // nn_sequence.cpp
void multihead_attention(Layer &l);
void transformer_encoder_layer(Layer &l);
void loss(Layer &l, const std::string &kind);      // nn_losses.cpp

}  // namespace nn
}  // namespace ct
