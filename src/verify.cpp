// Checking untrusted files without risking the caller's process: the file is
// loaded (and a module inspected) in a short-lived forked child; a child that
// dies (LibTorch's own unpickler, parser or printer crashing on a malformed
// file) or hangs is reported as CT_ERR_IO with the signal; ctorch's locks
// are held across that fork (ForkSafe, ForkLocks). See docs/conventions.md ("Untrusted files") for what this protects and costs.
#include "checks.h"
#include "internal.h"

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
    ct_status s = ct_value_len(&n, v);
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

namespace ct {

namespace {
std::mutex &fork_safe_mutex() {  // guards the list; held by ForkLocks too
  static auto *m = new std::mutex();
  return *m;
}
std::vector<std::mutex *> &fork_safe_list() {
  static auto *v = new std::vector<std::mutex *>();  // never destroyed
  return *v;
}
}  // namespace

ForkSafe::ForkSafe(std::mutex &m) {
  std::lock_guard<std::mutex> lock(fork_safe_mutex());
  fork_safe_list().push_back(&m);
}

// std::lock's algorithm over a list: block on one, try the others; on a busy
// one release everything and block on that one next. No order is imposed on
// other threads, so none can deadlock with this.
ForkLocks::ForkLocks() {
  fork_safe_mutex().lock();
  registry_ = RegistryRead::depth == 0;
  std::vector<std::mutex *> all = fork_safe_list();
  size_t n = all.size() + (registry_ ? 1 : 0);  // index all.size(): the registry
  auto lock = [&](size_t i) {
    if (i == all.size()) op_registry_mutex().lock();
    else all[i]->lock();
  };
  auto try_lock = [&](size_t i) {
    return i == all.size() ? op_registry_mutex().try_lock() : all[i]->try_lock();
  };
  auto unlock = [&](size_t i) {
    if (i == all.size()) op_registry_mutex().unlock();
    else all[i]->unlock();
  };
  for (size_t first = 0; n > 0;) {
    lock(first);
    size_t busy = n;
    for (size_t i = 0; i < n && busy == n; ++i)
      if (i != first && !try_lock(i)) busy = i;
    if (busy == n) break;
    for (size_t i = 0; i < busy; ++i)
      if (i != first) unlock(i);
    unlock(first);
    first = busy;
  }
  held_ = std::move(all);
}

ForkLocks::~ForkLocks() {
  if (released_) return;
  if (registry_) op_registry_mutex().unlock();
  for (std::mutex *m : held_) m->unlock();
  fork_safe_mutex().unlock();
}

void ForkLocks::reset_in_child() {
  // The old objects are abandoned, not destroyed: only this thread exists.
  if (registry_) new (&op_registry_mutex()) std::shared_mutex();
  for (std::mutex *m : held_) new (m) std::mutex();
  new (&fork_safe_mutex()) std::mutex();
  released_ = true;
}

// ---- Loaded tensors against their storages (defect #10) ---------------------
// LibTorch's unpickler sets a loaded tensor's sizes, strides and offset from
// the file without comparing them with its storage, so a malformed file
// loads and then reads (or writes) past the storage on first use. Every
// tensor reached from a loaded value is checked here: one pass over the
// value graph, a few integer operations per tensor, no data read.

namespace {

std::string int_list(c10::IntArrayRef v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

}  // namespace

std::string storage_misfit(c10::IntArrayRef sizes, c10::IntArrayRef strides, int64_t offset,
                           uint64_t item, uint64_t nbytes) {
  if (sizes.size() != strides.size()) return "sizes and strides differ in length";
  auto describe = [&] {
    return "sizes " + int_list(sizes) + ", strides " + int_list(strides) + ", offset " +
           std::to_string(offset) + ", " + std::to_string(item) + "-byte elements";
  };
  if (offset < 0) return describe() + ": negative storage offset";
  bool empty = false;
  for (int64_t s : sizes) {
    if (s < 0) return describe() + ": negative size";
    empty = empty || s == 0;
  }
  if (empty) return std::string();                // no element is ever read
  uint64_t last = static_cast<uint64_t>(offset);  // index of the last element
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (strides[i] < 0) return describe() + ": negative stride";
    uint64_t step;
    if (__builtin_mul_overflow(static_cast<uint64_t>(sizes[i] - 1),
                               static_cast<uint64_t>(strides[i]), &step) ||
        __builtin_add_overflow(last, step, &last))
      return describe() + ": extent overflows";
  }
  uint64_t need;
  if (__builtin_add_overflow(last, 1, &need) || __builtin_mul_overflow(need, item, &need))
    return describe() + ": extent overflows";
  if (need > nbytes)
    return describe() + " needs " + std::to_string(need) + " bytes but its storage has " +
           std::to_string(nbytes);
  return std::string();
}

namespace {

// Empty string when `t` fits its storage (and the storage its file record);
// else why not.
std::string tensor_misfit(const at::Tensor &t, const RecordSizes *records) {
  if (!t.has_storage()) return std::string();
  const c10::Storage &st = t.storage();
  const uint64_t nbytes = st.nbytes();
  if (records && st.data() != nullptr) {
    auto it = records->find(st.data());
    if (it != records->end() && nbytes > it->second)
      return "its storage claims " + std::to_string(nbytes) + " bytes but the file holds " +
             std::to_string(it->second);
  }
  return storage_misfit(t.sizes(), t.strides(), t.storage_offset(), t.dtype().itemsize(), nbytes);
}

}  // namespace

ct_status check_loaded_tensors(const char *func, const char *what,
                               const std::vector<std::pair<std::string, c10::IValue>> &roots,
                               const RecordSizes *records) {
  // Each value to visit remembers its parent's entry, the container it sits
  // in and where; the path ("[3]['w'].weight") is put together only for the
  // message, so the walk stays linear however deep the value nests.
  struct Step {
    size_t parent;      // index in steps, or npos for a root
    c10::IValue owner;  // the container, object or sparse tensor; None for a root
    int64_t at;         // item / attribute / dict entry (-1 - i: its key); root: index
  };
  constexpr size_t npos = static_cast<size_t>(-1);
  std::vector<Step> steps;
  std::vector<std::pair<size_t, c10::IValue>> todo;
  for (size_t i = roots.size(); i-- > 0;) {
    steps.push_back({npos, c10::IValue(), static_cast<int64_t>(i)});
    todo.emplace_back(steps.size() - 1, roots[i].second);
  }
  auto name = [&](const Step &s) -> std::string {
    const c10::IValue &o = s.owner;
    if (s.parent == npos) return roots[static_cast<size_t>(s.at)].first;
    if (o.isTuple() || o.isList()) return "[" + std::to_string(s.at) + "]";
    if (o.isObject()) return "." + o.toObjectRef().type()->getAttributeName(s.at);
    if (o.isTensor()) return s.at == 0 ? "._indices()" : "._values()";
    if (o.isGenericDict()) {
      if (s.at < 0) return "[<key>]";
      auto d = o.toGenericDict();
      auto it = d.begin();
      for (int64_t i = 0; i < s.at; ++i) ++it;
      const c10::IValue &k = it->key();
      return "[" +
             (k.isString() ? "'" + k.toStringRef() + "'"
              : k.isInt()  ? std::to_string(k.toInt())
                           : std::string("<key>")) +
             "]";
    }
    return "[?]";
  };
  auto path_of = [&](size_t i) {
    std::vector<std::string> names;
    for (; i != npos; i = steps[i].parent) names.push_back(name(steps[i]));
    std::string path;
    for (auto n = names.rbegin(); n != names.rend(); ++n) path += *n;
    if (!path.empty() && path[0] == '.') path.erase(0, 1);  // an attribute of the root
    return path;
  };
  std::unordered_set<const void *> seen;
  auto bad = [&](size_t at, const std::string &why) {
    std::string path = path_of(at);
    return set_error(CT_ERR_IO, "%s: cannot load %s: tensor '%s' does not fit its storage (%s)",
                     func, what, path.empty() ? "<root>" : path.c_str(), why.c_str());
  };
  // Only what can hold a tensor is visited.
  auto add = [&](size_t parent, const c10::IValue &owner, int64_t at, const c10::IValue &v) {
    if (!(v.isTensor() || v.isList() || v.isTuple() || v.isGenericDict() || v.isObject())) return;
    steps.push_back({parent, owner, at});
    todo.emplace_back(steps.size() - 1, v);
  };
  while (!todo.empty()) {
    const size_t at = todo.back().first;
    c10::IValue v = std::move(todo.back().second);
    todo.pop_back();
    if (!seen.insert(v.internalToPointer()).second) continue;
    if (v.isTensor()) {
      const at::Tensor &t = v.toTensor();
      if (!t.defined()) continue;
      if (t.is_sparse()) {
        add(at, v, 0, t._indices());
        add(at, v, 1, t._values());
        continue;
      }
      if (t.layout() != c10::kStrided || t.is_nested()) continue;
      std::string why = tensor_misfit(t, records);
      if (!why.empty()) return bad(at, why);
    } else if (v.isObject()) {
      const auto &obj = v.toObjectRef();
      size_t n = std::min(obj.slots().size(), obj.type()->numAttributes());
      for (size_t i = 0; i < n; ++i) add(at, v, static_cast<int64_t>(i), obj.getSlot(i));
    } else if (v.isTuple()) {
      const auto &el = v.toTupleRef().elements();
      for (size_t i = 0; i < el.size(); ++i) add(at, v, static_cast<int64_t>(i), el[i]);
    } else if (v.isList()) {
      if (v.isIntList() || v.isDoubleList() || v.isBoolList()) continue;
      auto l = v.toListRef();
      for (size_t i = 0; i < l.size(); ++i) add(at, v, static_cast<int64_t>(i), l[i]);
    } else if (v.isGenericDict()) {
      int64_t i = 0;
      for (const auto &kv : v.toGenericDict()) {
        add(at, v, i, kv.value());
        if (kv.key().isTensor()) add(at, v, -1 - i, kv.key());
        ++i;
      }
    }
  }
  return CT_OK;
}

ct_status check_loaded_module(const char *func, const char *what, const torch::jit::Module &m) {
  std::vector<std::pair<std::string, c10::IValue>> roots;
  roots.emplace_back(std::string(), c10::IValue(m._ivalue()));
  // Tensor constants of the code (constants.pkl) live in the graphs.
  std::vector<torch::jit::Block *> blocks;
  for (torch::jit::Function *fn : m._ivalue()->compilation_unit()->get_functions()) {
    if (!fn->isGraphFunction()) continue;
    std::shared_ptr<torch::jit::Graph> g = torch::jit::toGraphFunction(*fn).graph();
    if (!g) continue;
    blocks.assign(1, g->block());
    while (!blocks.empty()) {
      torch::jit::Block *b = blocks.back();
      blocks.pop_back();
      for (torch::jit::Node *n : b->nodes()) {
        for (torch::jit::Block *inner : n->blocks()) blocks.push_back(inner);
        if (n->kind() != c10::prim::Constant || n->outputs().size() != 1 ||
            n->output()->type()->kind() != c10::TypeKind::TensorType)
          continue;
        if (auto c = torch::jit::toIValue(n->output()))
          roots.emplace_back("constant in " + fn->qualname().qualifiedName(), std::move(*c));
      }
    }
  }
  return check_loaded_tensors(func, what, roots, nullptr);
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
