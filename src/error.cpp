// Errors: the thread-local last-error slot, the exception-to-status mapping
// used by the barrier (ct::guard), and ct_free.
#include "messages.h"
#include "checks.h"
#include "internal.h"
#include "torch_version.h"

#include <c10/util/Backtrace.h>
#include <c10/util/Logging.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <new>

namespace {

struct LastError {
  ct_status code = CT_OK;
  std::string message;
};
thread_local LastError tls_error;

void store(ct_status code, const char *func, const std::string &what) noexcept {
  try {
    tls_error.code = code;
    tls_error.message.clear();
    if (func && *func) {
      tls_error.message += func;
      tls_error.message += ": ";
    }
    tls_error.message += what;
  } catch (...) {
    tls_error.code = code;  // message left as it was: out of memory
  }
}

std::string vformat(const char *fmt, va_list ap) {
  char buf[512];
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  std::string s;
  if (n < 0) {
    s = fmt;
  } else if (static_cast<size_t>(n) < sizeof buf) {
    s.assign(buf, static_cast<size_t>(n));
  } else {
    s.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(&s[0], s.size(), fmt, ap2);
    s.resize(static_cast<size_t>(n));
  }
  va_end(ap2);
  return s;
}

// LibTorch symbolizes a C++ backtrace for every c10::Error (~2 ms). Replace
// the fetcher with an empty one when the library loads, unless the user
// asked for backtraces (CTORCH_CPP_BACKTRACE=1). See ct_set_cpp_backtraces.
void set_backtraces(bool enabled) {
  if (enabled) {
    c10::SetStackTraceFetcher(
        std::function<std::string()>([] { return c10::get_backtrace(/*frames_to_skip=*/1); }));
  } else {
    c10::SetStackTraceFetcher(std::function<std::string()>([] { return std::string(); }));
  }
}

// An exception's message as stored: ct::summarize's (the real error first for
// TorchScript interpreter errors); empty when even that runs out of memory.
std::string summary(const char *msg) noexcept {
  try {
    return ct::summarize(msg);
  } catch (...) {
    return std::string();
  }
}

struct BacktraceInit {
  BacktraceInit() {
    try {
      const char *env = std::getenv("CTORCH_CPP_BACKTRACE");
      set_backtraces(env && std::strcmp(env, "1") == 0);
    } catch (...) {}
  }
} backtrace_init;

// ---- Warnings: kept per thread instead of printed --------------------------
constexpr size_t kMaxWarnings = 1000;
// A deque: appending keeps the other strings (and their c_str()) in place.
thread_local std::deque<std::string> tls_warnings;
thread_local bool tls_capturing = false;

void keep_warning(const std::string &msg) noexcept {
  try {
    if (tls_warnings.size() >= kMaxWarnings) tls_warnings.pop_front();
    tls_warnings.push_back(msg);
  } catch (...) {}
}

// The handler's interface changed in LibTorch 2: process(const Warning&)
// and c10::WarningUtils::set_warning_handler.
struct KeepWarnings final : c10::WarningHandler {
#if CT_TORCH_AT_LEAST(2, 0)
  void process(const c10::Warning &w) override { keep_warning(w.msg()); }
#else
  void process(const c10::SourceLocation &, const std::string &msg, bool) override {
    keep_warning(msg);
  }
#endif
};
// Never destroyed: LibTorch threads may warn during exit.
KeepWarnings &keep_warnings() {
  static auto *h = new KeepWarnings();
  return *h;
}

}  // namespace

namespace ct {

void capture_warnings() noexcept {
  if (__builtin_expect(tls_capturing, 1)) return;
  tls_capturing = true;
  // Once per thread, so a handler that the host installs later on this
  // thread (e.g. PyTorch's own, during its calls) is left alone.
#if CT_TORCH_AT_LEAST(2, 0)
  c10::WarningUtils::set_warning_handler(&keep_warnings());
#else
  c10::Warning::set_warning_handler(&keep_warnings());
#endif
}

ct_status set_error(ct_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s;
  try {
    s = vformat(fmt, ap);
  } catch (...) {}
  va_end(ap);
  store(code, nullptr, s);
  return code;
}

void raise(ct_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  throw Error(code, std::move(s));
}

ct_status set_error_from_current_exception(const char *func) noexcept {
  try {
    throw;
  } catch (const Error &e) {
    store(e.code, func, e.msg);
    return e.code;
  } catch (const c10::OutOfMemoryError &e) {
    store(CT_ERR_OUT_OF_MEMORY, func, e.what_without_backtrace());
    return CT_ERR_OUT_OF_MEMORY;
  } catch (const c10::IndexError &e) {
    store(CT_ERR_INDEX, func, e.what_without_backtrace());
    return CT_ERR_INDEX;
  } catch (const c10::TypeError &e) {
    store(CT_ERR_TYPE, func, e.what_without_backtrace());
    return CT_ERR_TYPE;
  } catch (const c10::ValueError &e) {
    store(CT_ERR_INVALID_ARGUMENT, func, e.what_without_backtrace());
    return CT_ERR_INVALID_ARGUMENT;
  } catch (const c10::Error &e) {
    // LibTorch 1.13's CPU allocator reports failure as a plain c10::Error.
    const char *msg = e.what_without_backtrace();
    // A compiled graph whose operator was removed since (ct_library_free):
    // TorchScript's alias analysis asserts when it optimizes the graph.
    if (const char *op = std::strstr(msg, "We don't have an op for ")) {
      op += std::strlen("We don't have an op for ");
      std::string name(op, std::strcspn(op, " \n"));
      store(CT_ERR_NOT_FOUND, func,
            "operator " + name + " is not registered (was removed, or never defined): the "
            "TorchScript code calling it cannot run");
      return CT_ERR_NOT_FOUND;
    }
    ct_status code = (std::strstr(msg, "can't allocate memory") ||
                      std::strstr(msg, "not enough memory") || std::strstr(msg, "out of memory"))
                         ? CT_ERR_OUT_OF_MEMORY
                         : CT_ERR_TORCH;
    store(code, func, summary(msg));
    return code;
  } catch (const std::bad_alloc &) {
    store(CT_ERR_OUT_OF_MEMORY, func, "out of memory");
    return CT_ERR_OUT_OF_MEMORY;
  } catch (const std::exception &e) {
    store(CT_ERR_TORCH, func, summary(e.what()));  // e.g. TorchScript interpreter errors
    return CT_ERR_TORCH;
  } catch (...) {
    store(CT_ERR_INTERNAL, func, "unknown C++ exception");
    return CT_ERR_INTERNAL;
  }
}

char *dup_string(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

}  // namespace ct

extern "C" {

const char *ct_last_error(void) { return tls_error.message.c_str(); }

ct_status ct_last_error_code(void) { return tls_error.code; }

ct_status ct_set_error(ct_status code, const char *message) {
  store(code, nullptr, message ? message : "");
  return code;
}

void ct_clear_error(void) {
  tls_error.code = CT_OK;
  tls_error.message.clear();
}

void ct_free(void *p) { std::free(p); }

size_t ct_warnings_count(void) { return tls_warnings.size(); }

const char *ct_warnings_get(size_t i) {
  return i < tls_warnings.size() ? tls_warnings[i].c_str() : nullptr;
}

void ct_warnings_clear(void) {
  ct::capture_warnings();
  tls_warnings.clear();
}

ct_status ct_set_cpp_backtraces(int32_t enabled) {
  return ct::guard(__func__, [&] {
    set_backtraces(enabled != 0);
    return CT_OK;
  });
}

}  // extern "C"
