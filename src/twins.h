// The twin registry (twins.cpp) as the operator files use it: which
// operators ctorch registered, and each one's TorchScript twin. Internal.
#pragma once

#include "internal.h"

#include <string>

namespace ct {
namespace twins {

// Records that ctorch registered operator "ns::name[.overload]".
void note_host_op(const std::string &qualified);
// Compiles `source` as the twin of operator `qualified` (schema `op`):
// a function named as the operator (or the only one) with as many
// arguments and returns. Raises CT_ERR_INVALID_ARGUMENT / CT_ERR_TORCH.
void set(const std::string &qualified, const c10::FunctionSchema &op, const char *source);
void forget(const std::string &qualified);

}  // namespace twins
}  // namespace ct
