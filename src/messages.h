// Text helpers shared by error.cpp, the call paths and the file readers:
// how exceptions and values are named in ctorch's messages. Internal.
#pragma once

#include "internal.h"

#include <exception>
#include <string>

namespace ct {

// Text of an exception without LibTorch's C++ backtrace.
inline std::string exception_text(const std::exception &e) {
  if (auto *ce = dynamic_cast<const c10::Error *>(&e)) return ce->what_without_backtrace();
  return e.what();
}

// The message trimmed; a TorchScript interpreter error gets its real error
// ("RuntimeError: boom") as the first line, then the whole text (script.cpp).
std::string summarize(const std::string &msg);

// TorchScript's name of a value's type ("Tensor", "int", "List[int]",
// "NoneType"), for messages and ct_value_type_str (value.cpp).
std::string value_type_name(const c10::IValue &v);

}  // namespace ct
