// Overflow-checked validation of foreign memory described by sizes/strides
// (from_blob, DLPack import). Not installed.
#pragma once

#include "internal.h"

#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

namespace ct {

// Highest address a tensor's bytes may reach: user-space addresses on x86-64
// (5-level paging) and aarch64 stay below 2^57.
constexpr uint64_t kMaxAddress = uint64_t(1) << 57;

// Checks that `ndim` sizes/strides (strides NULL = contiguous) describe memory
// starting at data + byte_offset whose extent, byte size and end address fit:
// no negative stride, no int64 overflow of the element count, the extent or
// the byte size, no address past kMaxAddress, and data + byte_offset aligned
// to the element type when `check_alignment`. Sizes must already have passed
// check_sizes. Sets the error (CT_ERR_INVALID_ARGUMENT, starting with `func`)
// and returns non-OK on failure.
ct_status check_extent(const char *func, const void *data, uint64_t byte_offset,
                       const int64_t *sizes, const int64_t *strides, size_t ndim,
                       size_t element_size, bool check_alignment) noexcept;

// After a load (verify.cpp): every tensor reachable from `roots` (object
// attributes, lists, tuples, dict keys and values, sparse components) must fit
// its storage -- no negative size, stride or offset, no overflow, extent times
// element size within storage nbytes -- and, where `records` maps a storage's
// data pointer to the byte size of the file record it was read from, the
// storage must not claim more bytes than that record. Else CT_ERR_IO
// "<func>: cannot load <what>: tensor '<path>' does not fit its storage (...)".
// The label of each root starts the path in the message.
using RecordSizes = std::unordered_map<const void *, size_t>;
ct_status check_loaded_tensors(const char *func, const char *what,
                               const std::vector<std::pair<std::string, c10::IValue>> &roots,
                               const RecordSizes *records);
// The same for a loaded module: its attributes (parameters, buffers,
// submodules, other attributes) and the tensor constants in its code.
ct_status check_loaded_module(const char *func, const char *what, const torch::jit::Module &m);

// LibTorch's operator list is not safe to read while a registration grows
// it: ct_op_register holds this exclusively, lookups and compiles (which
// resolve ops) hold it shared. RegistryRead is re-entrant per thread.
inline std::shared_mutex &op_registry_mutex() {
  static auto *m = new std::shared_mutex();  // never destroyed
  return *m;
}
struct RegistryRead {
  inline static thread_local int depth = 0;
  bool locked;
  RegistryRead() : locked(depth++ == 0) {
    if (locked) op_registry_mutex().lock_shared();
  }
  ~RegistryRead() {
    --depth;
    if (locked) op_registry_mutex().unlock_shared();
  }
  RegistryRead(const RegistryRead &) = delete;
  RegistryRead &operator=(const RegistryRead &) = delete;
};

// ---- Fork safety (verify.cpp checks files in a forked child) ---------------
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

// Name of a layout for messages ("sparse COO").
inline const char *layout_name(c10::Layout l) noexcept {
  switch (l) {
    case c10::kStrided: return "strided";
    case c10::kSparse: return "sparse COO";
    case c10::kSparseCsr: return "sparse CSR";
    case c10::kSparseCsc: return "sparse CSC";
    case c10::kSparseBsr: return "sparse BSR";
    case c10::kSparseBsc: return "sparse BSC";
    case c10::kMkldnn: return "mkldnn";
    default: return "non-strided";
  }
}

}  // namespace ct
