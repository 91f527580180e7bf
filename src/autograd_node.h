// The graph node whose backward is a host-language callback, shared by
// ct_autograd_function_apply and autograd kernels of dispatcher operators
// (autograd.cpp builds it; op_library.cpp uses it). Internal.
#pragma once

#include "internal.h"

#include <torch/csrc/autograd/variable.h>

#include <functional>
#include <memory>
#include <string>

namespace ct {

// Calls the host backward: grads (n_grads borrowed handles, NULL for a
// non-differentiable output) in, one NEW handle or NULL per input out.
using BackwardCall = std::function<ct_status(const ct_tensor *const *grads, size_t n_grads,
                                             ct_tensor **res, size_t n_res)>;

// Records a node named `name` whose backward is `call`, with edges to
// `inputs` (undefined tensors have none), and replaces each of `outs` by a
// fresh tensor with the node as grad_fn (floating and complex ones; others
// are left without history). `keep` (the callbacks' ctx) lives as long as the
// node.
void record_foreign_node(std::string name, BackwardCall call, std::shared_ptr<void> keep,
                         const torch::autograd::variable_list &inputs,
                         torch::autograd::variable_list &outs);

}  // namespace ct
