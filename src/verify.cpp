// Checking untrusted files without risking the caller's process: the file is
// loaded (and a module inspected) in a short-lived forked child; a child that
// dies (LibTorch's own unpickler, parser or printer crashing on a malformed
// file) or hangs is reported as CT_ERR_IO with the signal; ctorch's locks
// are held across that fork (ForkSafe, ForkLocks). See docs/conventions.md ("Untrusted files") for
// what this protects and costs.
#include "checks.h"
#include "internal.h"
#include "locks.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

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
#include <new>
#include <string>
#include <unordered_set>

namespace {

// Seconds the child may take before it is killed (CTORCH_VERIFY_TIMEOUT).
unsigned verify_timeout() {
  const char *env = std::getenv("CTORCH_VERIFY_TIMEOUT");
  long v = env ? std::strtol(env, nullptr, 10) : 0;
  return v > 0 && v < 86400 ? static_cast<unsigned>(v) : 120;
}

// repr of everything in a value except tensor data: containers are walked
// (dict values, list and tuple items), tensors are left out (the load checked
// their metadata, and printing their data costs seconds per million elements:
// 137 MB of text for resnet18, 35 s, without exercising LibTorch's parsers),
// every other value is printed.
ct_status repr_parts(const ct_value *v, int depth) {
  int32_t tag = ct_value_tag(v);
  if (tag == CT_VALUE_TENSOR || tag == CT_VALUE_TENSOR_LIST) return CT_OK;
  if (depth < 64 && (tag == CT_VALUE_DICT || tag == CT_VALUE_LIST || tag == CT_VALUE_TUPLE)) {
    size_t n = 0;
    ct_status s = ct_value_length(&n, v);
    for (size_t i = 0; s == CT_OK && i < n; ++i) {
      ct_value *k = nullptr, *x = nullptr;
      s = tag == CT_VALUE_DICT ? ct_value_dict_item(&k, &x, v, i) : ct_value_get(&x, v, i);
      if (s == CT_OK && k) s = repr_parts(k, depth + 1);
      if (s == CT_OK) s = repr_parts(x, depth + 1);
      ct_value_free(k);
      ct_value_free(x);
    }
    return s;
  }
  char *repr = nullptr;
  ct_status s = ct_value_to_repr(&repr, v);
  ct_free(repr);
  return s;
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
    s = repr_parts(v, 0);
    ct_value_free(v);
    if (s) return s;
  }
  // Saving prints every method's code again (TorchScript's printer): run for
  // its crashes only. A clean error (a corrupt debug_pkl, whose source ranges
  // only error messages and saving use) leaves a file that loads and runs.
  void *buf = nullptr;
  size_t len = 0;
  (void)ct_module_save_buffer(&buf, &len, m, nullptr);
  ct_free(buf);
  return CT_OK;
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
  if (s == CT_OK) s = repr_parts(v, 0);
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
  pid_t pid;
  {
    // No other thread may hold a ctorch lock the child needs (checks.h).
    ct::ForkLocks fork_locks;
    pid = fork();
    if (pid == 0) fork_locks.reset_in_child();
  }
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
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    if (sig == SIGALRM)
      return ct::set_error(CT_ERR_IO, "%s: loading '%s' did not finish within %u s (killed)", func,
                           path, timeout);
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
