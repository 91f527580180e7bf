// Declarations-only stand-in for Gloo's gloo/context.h, for builds against a
// PyPI torch wheel (Gloo is linked into its libtorch_cpu.so, its headers are
// not shipped). c10d's ProcessGroupGloo.hpp holds gloo::Context only through
// shared_ptr and calls setTimeout() in an inline member ctorch never calls
// directly. No data members and nothing defined here: ctorch never makes,
// copies or reads a Context, so its layout is never needed (CMakeLists.txt,
// CTORCH_GLOO_SHIMS; README, "Building against another LibTorch").
#pragma once

#include <chrono>
#include <memory>

#include "gloo/transport/device.h"

namespace gloo {

class Context {
 public:
  Context(int rank, int size, int base = 2);
  virtual ~Context();
  void setTimeout(std::chrono::milliseconds timeout);
  std::chrono::milliseconds getTimeout() const;
};

}  // namespace gloo
