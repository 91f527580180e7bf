// Checking untrusted files without risking the caller's process: the file is
// loaded (and a module inspected) in a short-lived forked child; a child that
// dies (LibTorch's own unpickler, parser or printer crashing on a malformed
// file) or hangs is reported as CT_ERR_IO with the signal. See
// docs/conventions.md ("Untrusted files") for what this protects and costs.
#include "internal.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// Seconds the child may take before it is killed (CTORCH_VERIFY_TIMEOUT).
unsigned verify_timeout() {
  const char *env = std::getenv("CTORCH_VERIFY_TIMEOUT");
  long v = env ? std::strtol(env, nullptr, 10) : 0;
  return v > 0 && v < 86400 ? static_cast<unsigned>(v) : 120;
}

// Walks everything a user would touch after loading a module.
ct_status inspect_module(ct_module *m) {
  ct_value *v = nullptr;
  for (int which = 0; which < 4; ++which) {
    ct_status s = which == 0   ? ct_module_methods(&v, m)
                  : which == 1 ? ct_module_named_attributes(&v, m, 1)
                  : which == 2 ? ct_module_named_parameters(&v, m, 1)
                               : ct_module_named_children(&v, m, 1);
    if (s) return s;
    char *repr = nullptr;
    s = ct_value_to_repr(&repr, v);
    ct_free(repr);
    ct_value_free(v);
    if (s) return s;
  }
  // Saving prints every method's code again (TorchScript's printer).
  void *buf = nullptr;
  size_t len = 0;
  ct_status s = ct_module_save_buffer(&buf, &len, m, nullptr);
  ct_free(buf);
  return s;
}

ct_status check_in_child(int what, const char *path) {
  if (what == 0) {
    ct_module *m = nullptr;
    ct_status s = ct_module_load(&m, path, CT_DEVICE_CPU, -1);
    if (s == CT_OK) s = inspect_module(m);
    ct_module_free(m);
    return s;
  }
  ct_value *v = nullptr;
  ct_status s = ct_pickle_load(&v, path);
  if (s == CT_OK) {
    char *repr = nullptr;
    s = ct_value_to_repr(&repr, v);
    ct_free(repr);
  }
  ct_value_free(v);
  return s;
}

void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    p += k;
    n -= static_cast<size_t>(k);
  }
}

ct_status verify(const char *func, int what, const char *path) {
  if (!path) return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument 'path' is NULL", func);
  if (access(path, R_OK) != 0)
    return ct::set_error(errno == ENOENT ? CT_ERR_NOT_FOUND : CT_ERR_IO, "%s: cannot read '%s': %s",
                         func, path, std::strerror(errno));
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return ct::set_error(CT_ERR_IO, "%s: pipe failed: %s", func, std::strerror(errno));
  unsigned timeout = verify_timeout();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(fds[0]);
    close(fds[1]);
    return ct::set_error(CT_ERR_IO, "%s: fork failed: %s", func, std::strerror(e));
  }
  if (pid == 0) {
    // Child: load, report status and message through the pipe, never return.
    close(fds[0]);
    // The host's crash handlers (Julia's, Python's faulthandler) must not
    // run here: a crash ends the child, the parent reports it.
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGALRM, SIGPIPE})
      signal(sig, SIG_DFL);
    alarm(timeout);
    ct_status s = check_in_child(what, path);
    std::string msg = s ? ct_last_error() : "";
    int32_t code = s;
    write_all(fds[1], reinterpret_cast<const char *>(&code), sizeof code);
    write_all(fds[1], msg.data(), msg.size());
    _exit(0);
  }
  close(fds[1]);
  std::string report;
  char buf[4096];
  for (;;) {
    ssize_t k = read(fds[0], buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    report.append(buf, static_cast<size_t>(k));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    if (sig == SIGALRM)
      return ct::set_error(CT_ERR_IO, "%s: loading '%s' did not finish within %u s (killed)",
                           func, path, timeout);
    return ct::set_error(CT_ERR_IO, "%s: loading '%s' crashed the checking process: signal %d (%s)",
                         func, path, sig, strsignal(sig));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || report.size() < sizeof(int32_t))
    return ct::set_error(CT_ERR_IO, "%s: the checking process for '%s' failed (status %d)", func,
                         path, status);
  int32_t code;
  std::memcpy(&code, report.data(), sizeof code);
  if (code == CT_OK) return CT_OK;
  return ct::set_error(code, "%s: %s", func, report.c_str() + sizeof code);
}

}  // namespace

namespace ct {

// LibTorch's TorchScript parser recurses once per bracket level and per
// operator of an expression and overflows the stack on deep sources (10,000
// nested parentheses, 1+1+... with 10,000 terms). Bounded here before parsing:
// these limits keep the parser's depth to a few hundred KB of stack.
constexpr int kMaxSourceNesting = 64;
constexpr int kMaxStatementOperators = 512;

ct_status check_source_nesting(const char *func, const char *src) noexcept {
  int depth = 0, ops = 0, line = 1, stmt_line = 1;
  char quote = 0;
  for (const char *p = src; *p; ++p) {
    char c = *p;
    if (c == '\n') ++line;
    if (quote) {
      if (c == '\\' && p[1]) ++p;
      else if (c == quote) quote = 0;
      continue;
    }
    switch (c) {
      case '"': case '\'': quote = c; break;
      case '#': while (p[1] && p[1] != '\n') ++p; break;
      case '(': case '[': case '{':
        if (++depth > kMaxSourceNesting)
          return set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: brackets nest more than %d deep (line %d)", func,
                           kMaxSourceNesting, line);
        break;
      case ')': case ']': case '}': if (depth > 0) --depth; break;
      case '\n': if (depth == 0) { ops = 0; stmt_line = line; } break;
      case ';': if (depth == 0) { ops = 0; stmt_line = line; } break;
      case '+': case '-': case '*': case '/': case '%': case '&': case '|': case '^':
      case '~': case '<': case '>': case '=': case '!': case '@':
        if (++ops > kMaxStatementOperators)
          return set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: the statement starting on line %d has more than %d operators; "
                           "split it",
                           func, stmt_line, kMaxStatementOperators);
        break;
      default:
        // Keywords that nest expressions: and, or, not.
        if ((c == 'a' || c == 'o' || c == 'n') && (p == src || !isalnum((unsigned char)p[-1]))) {
          size_t k = std::strncmp(p, "and", 3) == 0 ? 3 : std::strncmp(p, "or", 2) == 0 ? 2
                   : std::strncmp(p, "not", 3) == 0 ? 3 : 0;
          if (k && !isalnum((unsigned char)p[k]) && p[k] != '_' && ++ops > kMaxStatementOperators)
            return set_error(CT_ERR_INVALID_ARGUMENT,
                             "%s: the statement starting on line %d has more than %d "
                             "operators; split it",
                             func, stmt_line, kMaxStatementOperators);
        }
    }
  }
  return CT_OK;
}

}  // namespace ct

extern "C" {

ct_status ct_module_verify(const char *path) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] { return verify(ct_fn_, 0, path); });
}

ct_status ct_pickle_verify(const char *path) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] { return verify(ct_fn_, 1, path); });
}

}  // extern "C"
