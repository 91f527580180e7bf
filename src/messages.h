// Text helpers shared by error.cpp, the call paths and the file readers:
// how exceptions and values are named in ctorch's messages, and with_code,
// which turns LibTorch's exceptions into one status with a prefix. Internal.
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

// Runs body; exceptions other than out-of-memory and ctorch's own become
// `code` with `prefix` and the summarized message (archive I/O reports
// CT_ERR_IO this way). Everything else is left to the barrier.
template <class F>
ct_status with_code(const char *func, ct_status code, const char *prefix, F &&body) {
  try {
    return body();
  } catch (const ct::Error &) {
    throw;
  } catch (const std::bad_alloc &) {
    throw;
  } catch (const c10::OutOfMemoryError &) {
    throw;
  } catch (const std::exception &e) {
    std::string s = ct::summarize(ct::exception_text(e));
    return ct::set_error(code, "%s: %s%s", func, prefix, s.c_str());
  }
}

}  // namespace ct
