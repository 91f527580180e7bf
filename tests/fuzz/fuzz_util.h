// Shared by the libFuzzer targets in tests/fuzz: a byte reader and the
// check that a failing ctorch call left a clean error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ctorch.h"

// Reads fixed-size values from the fuzz input; zeros once it is used up.
struct Bytes {
  const uint8_t *p;
  size_t n;
  template <class T>
  T get() {
    T v{};
    size_t k = n < sizeof v ? n : sizeof v;
    std::memcpy(&v, p, k);
    p += k;
    n -= k;
    return v;
  }
  std::string str(size_t max) {
    size_t len = get<uint8_t>();
    if (len > max) len = max;
    if (len > n) len = n;
    std::string s(reinterpret_cast<const char *>(p), len);
    p += len;
    n -= len;
    return s;
  }
};

// A failed call must leave its code and a message naming a ct_ function.
inline void check_clean(ct_status s) {
  if (s == CT_OK) return;
  if (ct_last_error_code() != s || std::strstr(ct_last_error(), "ct_") == nullptr) __builtin_trap();
}
