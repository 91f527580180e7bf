// The one argument binder and coercion engine, used by operator calls,
// module methods and scripts alike: Python-like values to the types of a
// TorchScript schema (int -> float, generic list -> typed list, dtype codes
// -> ScalarType, ...), with one set of messages. Also how schemas and values
// are named in messages. Internal; not installed.
#pragma once

#include "messages.h"

#include <string>
#include <vector>

namespace ct {

// ---- Names for messages ---------------------------------------------------
// "ns::op" or "ns::op.overload" ("forward" for a method).
std::string op_display_name(const c10::FunctionSchema &s);
// The whole schema as TorchScript prints it.
std::string schema_string(const c10::FunctionSchema &s);
// Type as written in a schema ("Tensor", "int[1]", "ScalarType?"), without
// alias annotations.
std::string arg_type_string(const c10::Argument &a);

// ScalarType or ScalarType? (takes ctorch dtype codes).
bool is_scalar_type_arg(const c10::Argument &a);
// Layout or MemoryFormat argument: its name for messages and, in *n, the
// number of valid codes (torch's values 0 .. n-1); nullptr for others.
const char *enum_arg(const c10::Argument &a, int64_t *n);

// ---- Coercion ----------------------------------------------------------------
// Converts `in` to `type` where Python would; false if not convertible.
// `strict` forbids lossy conversions (int -> float, str -> Device), for the
// first pass of overload resolution.
bool coerce(const c10::IValue &in, const c10::TypePtr &type, c10::IValue *out, bool strict = false);

// ---- Binding -----------------------------------------------------------------
// Checks the argument arrays of a call: `args` may be NULL only when n == 0,
// kwnames/kwvalues only when nkw == 0, and no entry is NULL. Sets the error
// ("<func>: args[1] is NULL", ...) and returns non-OK otherwise.
ct_status check_call_args(const char *func, const ct_value *const *args, size_t n,
                          const char *const *kwnames, const ct_value *const *kwvalues, size_t nkw);

// Binds checked positional and keyword arguments to `schema` (after self
// when `skip_self`), fills defaults and pushes the coerced values on *stack.
// On failure leaves *stack as it was, returns CT_ERR_INVALID_ARGUMENT or
// CT_ERR_TYPE and writes the reason, naming the op, into *why.
ct_status bind_call(const c10::FunctionSchema &schema, const ct_value *const *args, size_t n,
                    const char *const *kwnames, const ct_value *const *kwvalues, size_t nkw,
                    bool skip_self, torch::jit::Stack *stack, bool strict, std::string *why);

// bind_call() that sets the error: "<func>: <why>\n  schema: <schema>".
ct_status bind_arguments(const char *func, const c10::FunctionSchema &schema,
                         const ct_value *const *args, size_t n, const char *const *kwnames,
                         const ct_value *const *kwvalues, size_t nkw, bool skip_self,
                         torch::jit::Stack *stack);

// True when binding n tensors as the first positional arguments of `schema`
// succeeds: they accept a Tensor and every other argument has a default.
bool binds_tensors(const c10::FunctionSchema &schema, size_t n);

// Borrowed tensors as argument values for bind_call() (no copy of their data).
struct TensorArgs {
  std::vector<ct_value> values;
  std::vector<const ct_value *> ptrs;
  TensorArgs(const ct_tensor *const *inputs, size_t n) : values(n), ptrs(n) {
    for (size_t i = 0; i < n; ++i) {
      values[i].v = inputs[i]->t;
      ptrs[i] = &values[i];
    }
  }
};

}  // namespace ct
