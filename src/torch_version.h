// Compile-time LibTorch version checks: CT_TORCH_AT_LEAST(2, 3).
#pragma once

#include <torch/version.h>

#define CT_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||     \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))
