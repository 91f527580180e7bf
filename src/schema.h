// The coercion engine and argument binder: Python-like values to the types
// of a TorchScript schema (int -> float, generic list -> typed list, dtype
// codes -> ScalarType, ...), and how schemas and values are named in
// messages. Internal; not installed.
#pragma once

#include "internal.h"

#include <string>

namespace ct {

// ---- Names for messages ---------------------------------------------------
// Python-like type name of a value ("Tensor", "int", "List[int]", ...).
std::string value_type_name(const c10::IValue &v);
// "ns::op" or "ns::op.overload".
std::string op_display_name(const c10::FunctionSchema &s);
// The whole schema as TorchScript prints it.
std::string schema_string(const c10::FunctionSchema &s);
// Type as written in a schema ("Tensor", "int[1]", "ScalarType?"), without
// alias annotations.
std::string arg_type_string(const c10::Argument &a);

// ---- Schema argument kinds ------------------------------------------------
// int[] or int[]?
bool is_int_list_type(c10::TypePtr t);
// ScalarType or ScalarType? (takes ctorch dtype codes).
bool is_scalar_type_arg(const c10::Argument &a);

// ---- Coercion and binding --------------------------------------------------
// Converts `in` to `type` where Python would; false if not convertible.
// `strict` forbids lossy coercions (for overload resolution).
bool coerce_impl(const c10::IValue &in, const c10::TypePtr &type, c10::IValue *out, bool strict);

// Binds positional and keyword arguments to `schema` (skipping self when
// `skip_self`), fills defaults and pushes the coerced values on *stack. On
// failure returns a status and writes a reason (naming the op) into *why.
ct_status bind_impl(const c10::FunctionSchema &schema, const ct_value *const *args, size_t n,
                    const char *const *kwnames, const ct_value *const *kwvalues, size_t nkw,
                    bool skip_self, torch::jit::Stack *stack, bool strict, std::string *why);

// Builds a full argument stack for `schema` from positional and keyword
// arguments: fills defaults, coerces Python-like values (int->float,
// generic list->typed list, ...). On mismatch, sets the error (naming the
// schema) and returns non-OK.
ct_status bind_arguments(const char *func, const c10::FunctionSchema &schema,
                         const ct_value *const *args, size_t n, const char *const *kwnames,
                         const ct_value *const *kwvalues, size_t nkw, bool skip_self,
                         torch::jit::Stack *stack, bool set_errors = true);
// True when binding n tensors as the first positional arguments of `schema`
// succeeds: they accept a Tensor and every other argument has a default.
bool binds_tensors(const c10::FunctionSchema &schema, size_t n);
// Converts a value to a schema type where Python would (returns false if not).
bool coerce(const c10::IValue &in, const c10::TypePtr &type, c10::IValue *out);

}  // namespace ct
