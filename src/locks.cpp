// Fork safety (locks.h): the list of registered mutexes and ForkLocks, which
// holds all of them and the op registry across fork() without lock-order
// deadlocks, and makes them new in the child.
#include "locks.h"

#include <new>

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
    if (i == all.size())
      op_registry_mutex().lock();
    else
      all[i]->lock();
  };
  auto try_lock = [&](size_t i) {
    return i == all.size() ? op_registry_mutex().try_lock() : all[i]->try_lock();
  };
  auto unlock = [&](size_t i) {
    if (i == all.size())
      op_registry_mutex().unlock();
    else
      all[i]->unlock();
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

}  // namespace ct
