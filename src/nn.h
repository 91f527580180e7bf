// What the torch.nn files share: arguments bound to a signature (a schema
// such as "nn::Linear(int in_features, ...) -> ()") and read back by name,
// and torch.nn.init's initializers (nn_init.cpp), which the layers
// (nn_layers.cpp) call in torch.nn's order. Internal; not installed.
#pragma once

#include "internal.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ct {
namespace nn {

// Arguments bound to a schema (defaults filled), read by parameter name.
// The readers throw ct::Error naming the call ("Conv2d"; the exception
// barrier adds the C function's name).
class Args {
 public:
  Args(std::string call, const c10::FunctionSchema &schema, torch::jit::Stack stack);
  const c10::IValue &operator[](const char *name) const;
  bool none(const char *name) const { return (*this)[name].isNone(); }
  bool has(const char *name) const { return values_.count(name) != 0; }
  int64_t i(const char *name) const;
  double d(const char *name) const;
  bool b(const char *name) const;
  std::string s(const char *name) const;
  // An int or a list of ints as n ints (torch.nn's _single/_pair/_triple);
  // a list of another length is an error naming the argument.
  std::vector<int64_t> ints(const char *name, size_t n) const;
  c10::optional<at::Generator> generator() const;  // "generator", if any
  // "dtype" and "device" (None: the defaults) as tensor options.
  at::TensorOptions factory() const;
  const std::string &call() const { return call_; }

 private:
  std::string call_;
  std::map<std::string, c10::IValue> values_;
};

// Parses a signature once (its text must be a valid schema).
c10::FunctionSchema parse_signature(const char *text);

// Binds a C call's arguments to `schema` (ct::bind_arguments' messages).
ct_status bind(const char *func, const c10::FunctionSchema &schema, const ct_value *const *args,
               size_t n, const char *const *kwnames, const ct_value *const *kwvalues, size_t nkw,
               std::unique_ptr<Args> *out);

// ---- torch.nn.init (nn_init.cpp), each as torch's, without autograd ------
struct Fans {
  int64_t in, out;
};
Fans fan_in_and_fan_out(const at::Tensor &t);  // < 2 dims: CT_ERR_INVALID_ARGUMENT
double calculate_gain(const std::string &nonlinearity, c10::optional<double> param);
void uniform(at::Tensor &t, double a, double b, c10::optional<at::Generator> g = c10::nullopt);
void normal(at::Tensor &t, double mean, double std, c10::optional<at::Generator> g = c10::nullopt);
void kaiming_uniform(at::Tensor &t, double a, const std::string &mode = "fan_in",
                     const std::string &nonlinearity = "leaky_relu",
                     c10::optional<at::Generator> g = c10::nullopt);
void xavier_uniform(at::Tensor &t, double gain = 1.0,
                    c10::optional<at::Generator> g = c10::nullopt);
// torch.nn's Linear/Conv reset_parameters: weight kaiming_uniform(a=sqrt(5)),
// bias uniform(+-1/sqrt(fan_in)) (bias may be undefined).
void linear_reset(at::Tensor &weight, at::Tensor &bias);

}  // namespace nn
}  // namespace ct
