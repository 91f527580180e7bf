// Locks shared by several files (locks.cpp): the op registry's reader/writer
// lock, and fork safety -- every ctorch mutex a forked child may take is
// registered (ForkSafe) and held across fork() (ForkLocks). Internal.
#pragma once

#include <functional>
#include <mutex>
#include <shared_mutex>
#include <utility>
#include <vector>

namespace ct {

// ---- The op registry ---------------------------------------------------------
// LibTorch's operator list is not safe to read while a registration grows
// it: ct_op_register holds this exclusively, lookups and compiles (which
// resolve ops) hold it shared. RegistryRead is re-entrant per thread.
inline std::shared_mutex &op_registry_mutex() {
  static auto *m = new std::shared_mutex();  // never destroyed
  return *m;
}
struct RegistryRead {
  inline static thread_local int depth = 0;
  // Work that needs the registry exclusively, asked for while this thread
  // reads it (a kernel that constant folding runs during a compile frees a
  // library): run once the outermost reader is gone.
  inline static thread_local std::vector<std::function<void()>> deferred;
  bool locked;
  RegistryRead() : locked(depth++ == 0) {
    if (locked) op_registry_mutex().lock_shared();
  }
  ~RegistryRead() {
    --depth;
    if (!locked) return;
    op_registry_mutex().unlock_shared();
    while (!deferred.empty()) {
      auto work = std::move(deferred.back());
      deferred.pop_back();
      work();
    }
  }
  RegistryRead(const RegistryRead &) = delete;
  RegistryRead &operator=(const RegistryRead &) = delete;
};
// True while this thread reads the registry: taking it exclusively now
// would wait for ever (registrations refuse, frees are deferred).
inline bool reading_registry() { return RegistryRead::depth > 0; }

// ---- Fork safety (verify.cpp checks files in a forked child) ----------------
// A forked child has one thread and a copy of every mutex: one that another
// thread held at fork() stays locked there forever. Every ctorch mutex a
// child's load or inspection may take is registered here once (ForkSafe
// next to the mutex); verify() holds all of them, and the op registry
// exclusively, across fork(). None of them is held while host code runs.
struct ForkSafe {
  explicit ForkSafe(std::mutex &m);
};
// Holds every registered mutex and the op registry (unless this thread
// already reads it) for its lifetime; taken without lock-order deadlocks
// (try, back off, wait on the busy one). Constructed just before fork().
class ForkLocks {
 public:
  ForkLocks();
  ~ForkLocks();
  // In the child: makes every lock new and unlocked instead of unlocking
  // (glibc's rwlock knows its writer by thread id, which fork changed).
  void reset_in_child();
  ForkLocks(const ForkLocks &) = delete;
  ForkLocks &operator=(const ForkLocks &) = delete;

 private:
  std::vector<std::mutex *> held_;
  bool registry_ = false;
  bool released_ = false;
};

}  // namespace ct
