// ctorch's own reader of torch.save files (checkpoint.cpp).
#pragma once

#include <ATen/core/ivalue.h>

namespace ct {
// Slot names of the generic objects that stand for Python objects: the
// constructor arguments (a tuple) and the pickled state (None if none).
extern const char *const kObjectArgs;
extern const char *const kObjectState;
// Reads a torch.save file (zip or legacy) or a plain pickle without running
// any Python code. Throws std::exception with a message on failure.
c10::IValue load_checkpoint(const char *data, size_t size);
}  // namespace ct
