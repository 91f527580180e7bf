// What the loss scaler (amp.cpp) needs of an optimizer (optim.cpp).
#pragma once

#include "internal.h"

namespace ct {
// The parameters of every group, in order (locks the optimizer).
std::vector<at::Tensor> optimizer_params(ct_optimizer *o);
// One step as ct_optimizer_step takes it (locks; throws ct::Error).
void optimizer_step(const char *func, ct_optimizer *o);
}  // namespace ct
