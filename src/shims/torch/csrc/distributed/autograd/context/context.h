// Stand-in for a header Debian's libtorch-dev (1.13) leaves out but its
// c10d/reducer.hpp includes. The Reducer only holds a shared_ptr to a
// distributed-autograd context (RPC; ctorch never makes one) and checks its
// GradCallback type, so these declarations give the same class layout.
// CMakeLists.txt adds src/shims only when LibTorch lacks the real header.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>

namespace torch {
namespace distributed {
namespace autograd {

class DistAutogradContext {
 public:
  using GradCallback = std::function<bool(at::Tensor &)>;
};
using ContextPtr = std::shared_ptr<DistAutogradContext>;

}  // namespace autograd
}  // namespace distributed
}  // namespace torch
