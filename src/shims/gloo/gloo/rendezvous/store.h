// Declarations-only stand-in for Gloo's gloo/rendezvous/store.h and
// gloo/common/store.h (see ../context.h). c10d's GlooStore derives from
// gloo::rendezvous::Store and overrides these; the virtual functions are
// declared in the order of the Gloo built into torch 2.11-2.15's wheels (their
// GlooStore vtable: ~, set, get, wait_get, wait(keys, timeout), has_v2_support,
// multi_get, multi_set, append, add, then Store's wait(keys)). Nothing is
// defined: a GlooStore made, copied or destroyed in ctorch would need these
// definitions and fail to link (-Wl,--no-undefined), so one cannot slip in.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

// c10d's GlooStore overrides the multi-key calls only when this is defined.
#define GLOO_STORE_HAS_STORE_V2 1

namespace gloo {

class IStore {
 public:
  virtual ~IStore();
  virtual void set(const std::string& key, const std::vector<char>& data) = 0;
  virtual std::vector<char> get(const std::string& key) = 0;
  virtual std::vector<char> wait_get(const std::string& key,
                                     const std::chrono::milliseconds& timeout);
  virtual void wait(const std::vector<std::string>& keys,
                    const std::chrono::milliseconds& timeout) = 0;
  virtual bool has_v2_support() = 0;
  virtual std::vector<std::vector<char>> multi_get(const std::vector<std::string>& keys) = 0;
  virtual void multi_set(const std::vector<std::string>& keys,
                         const std::vector<std::vector<char>>& values) = 0;
  virtual void append(const std::string& key, const std::vector<char>& value) = 0;
  virtual int64_t add(const std::string& key, int64_t value) = 0;
};

namespace rendezvous {

class Store : public IStore {
 public:
  ~Store() override;
  virtual void wait(const std::vector<std::string>& keys) = 0;
  using IStore::wait;
};

}  // namespace rendezvous
}  // namespace gloo
