// The operator handle (ct_op) and what op.cpp (lookup, schemas),
// op_call.cpp (calls) and foreign_op.cpp (registration) share. Internal.
#pragma once

#include "internal.h"

#include <torch/csrc/jit/runtime/operator.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ct {

// How a fast call checks one argument's value (op_call.cpp).
enum FastKind : uint8_t {
  FK_SLOW = 0,  // needs the binder
  FK_TENSOR,
  FK_OPT_TENSOR,
  FK_INT,
  FK_OPT_INT,
  FK_FLOAT,
  FK_OPT_FLOAT,
  FK_BOOL,
  FK_OPT_BOOL,
  FK_SCALAR,
  FK_OPT_SCALAR,
  FK_STR,
  FK_INT_LIST,
  FK_TENSOR_LIST,
};

// Unboxed kernel shapes (T = Tensor, S = Scalar, I = int) with typed handles.
enum TypedShape : uint8_t { TS_NONE = 0, TS_T, TS_TT, TS_TTS, TS_TS, TS_TSS, TS_TII };

struct ArgInfo {
  std::string name, type, def;
  bool has_def;
  int32_t kwonly;
  FastKind kind;
};

struct Overload {
  std::shared_ptr<torch::jit::Operator> op;
  mutable torch::jit::Operation operation{nullptr};
  std::shared_ptr<const c10::FunctionSchema> own_schema;
  const c10::FunctionSchema *schema = nullptr;  // own_schema
  std::string schema_str;
  std::vector<ArgInfo> args;
  std::vector<std::pair<std::string, std::string>> rets;
  std::vector<c10::IValue> defaults;         // per argument; None where there is none
  size_t n_positional = 0;                   // arguments that may be given positionally
  size_t first_tail_default = 0;             // every argument from this index on has a default
  std::vector<FastKind> kinds;               // per argument, contiguous (the fast path scans it)
  std::vector<c10::Scalar> default_scalars;  // per argument; defaults of Scalar arguments
  size_t n_returns = 0;
  bool callable = false;  // has an operation; not vararg/varret
  std::string not_callable_why;
  // Unboxed fast path for dispatcher ops of a few common non-aliasing shapes
  // returning one Tensor: (Tensor), (Tensor, Tensor), (Tensor, Tensor,
  // Scalar), (Tensor, Scalar), (Tensor, Scalar, Scalar); and (Tensor, int,
  // int), non-aliasing or a view (select.int: x[i]).
  TypedShape typed = TS_NONE;
  c10::optional<c10::TypedOperatorHandle<at::Tensor(const at::Tensor &)>> h_t;
  c10::optional<c10::TypedOperatorHandle<at::Tensor(const at::Tensor &, const at::Tensor &)>> h_tt;
  c10::optional<c10::TypedOperatorHandle<at::Tensor(const at::Tensor &, const at::Tensor &,
                                                    const at::Scalar &)>>
      h_tts;
  c10::optional<c10::TypedOperatorHandle<at::Tensor(const at::Tensor &, const at::Scalar &)>> h_ts;
  c10::optional<c10::TypedOperatorHandle<at::Tensor(const at::Tensor &, const at::Scalar &,
                                                    const at::Scalar &)>>
      h_tss;
  c10::optional<c10::TypedOperatorHandle<at::Tensor(const at::Tensor &, int64_t, int64_t)>> h_tii;
};

// Fast-path kind of one schema argument (op_call.cpp).
FastKind fast_kind(const c10::Argument &a);
// Sets up the typed handle of an overload when its shape has one (op_call.cpp).
void setup_typed(Overload &o);
// Builds the cached description of one overload (op.cpp).
Overload make_overload(std::shared_ptr<torch::jit::Operator> op);

// ---- Host-language kernels (foreign_op.cpp; used by op_library.cpp).
// Parses a schema for registration, with ctorch's limits (size, list depth,
// no varargs, defaults of the right type); raises CT_ERR_INVALID_ARGUMENT.
c10::FunctionSchema parse_op_schema(const char *schema);
// Raises CT_ERR_INVALID_ARGUMENT when the JIT registry already has this
// name and overload (call under op_registry_mutex held exclusively).
void check_not_in_jit_registry(const c10::FunctionSchema &s);
// Runs a ct_op_fn kernel on the schema's arguments at the top of the stack
// and replaces them with its results, checked against the schema; raises
// CT_ERR_CALLBACK with the kernel's message when it fails.
void call_value_kernel(const std::string &name, ct_op_fn fn, void *ctx,
                       const c10::FunctionSchema &schema, torch::jit::Stack &stack);
// Pushes a kernel's result (NULL, one value, or a tuple) as the schema's
// returns, coerced to their types.
void push_kernel_results(const std::string &name, const c10::FunctionSchema &schema,
                         const ct_value *res, torch::jit::Stack &stack);
}  // namespace ct

struct ct_op {
  std::string name;
  bool is_set = false;  // an overload set (resolved per call)
  std::vector<ct::Overload> overloads;
};

namespace ct {
// Finds an op; error set on failure. overload NULL = the set (op.cpp).
ct_status find_op(const char *func, std::shared_ptr<ct_op> *out, const std::string &name,
                  const char *overload);
// Forgets every cached name lookup of ct_op_call_name: new overloads change
// overload sets (op_call.cpp; called by ct_op_register).
void forget_cached_ops();
}  // namespace ct
