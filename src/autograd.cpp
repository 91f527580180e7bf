// Autograd on tensors (requires_grad, backward, grad, torch.autograd.grad) and
// custom autograd functions whose forward/backward are foreign callbacks.
//
// A foreign function is a custom torch::autograd::Node (ForeignNode): it can
// carry a per-call name, and it owns the foreign ctx, calling destroy(ctx)
// exactly once from its destructor. When no graph is recorded, or forward
// fails, destroy runs before ct_autograd_function_apply returns.
#include "autograd_node.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using torch::autograd::variable_list;

// LibTorch's owning pointer to a graph node (Edge::function): std::shared_ptr
// in 1.13 and 2.6, freed through torch::autograd::deleteNode (iterative, so a
// long chain does not overflow the stack); c10::intrusive_ptr in 2.15, where
// ~Node does that work and deleteNode is gone. Argument-dependent lookup picks
// LibTorch's deleteNode where it exists, the template below otherwise.
using NodePtr = decltype(torch::autograd::Edge::function);
template <class NodeT>
void deleteNode(NodeT *node) {
  delete node;
}
[[maybe_unused]] void delete_node(torch::autograd::Node *node) { deleteNode(node); }
template <class T, class... Args>
auto make_node(Args &&...args) {
  if constexpr (std::is_same_v<NodePtr, std::shared_ptr<torch::autograd::Node>>)
    return std::shared_ptr<T>(new T(std::forward<Args>(args)...), delete_node);
  else
    return c10::make_intrusive<T>(std::forward<Args>(args)...);
}

std::string shape_str(c10::IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

// Owns the foreign ctx until handed on; destroys it exactly once.
struct CtxOwner {
  void *ctx = nullptr;
  ct_ctx_destroy_fn destroy = nullptr;
  bool armed = false;
  CtxOwner() = default;
  CtxOwner(void *c, ct_ctx_destroy_fn d) : ctx(c), destroy(d), armed(true) {}
  CtxOwner(const CtxOwner &) = delete;
  CtxOwner &operator=(const CtxOwner &) = delete;
  CtxOwner(CtxOwner &&o) noexcept : ctx(o.ctx), destroy(o.destroy), armed(o.armed) {
    o.armed = false;
  }
  void reset() noexcept {
    if (armed && destroy) {
      armed = false;
      try {
        destroy(ctx);
      } catch (...) {}
    }
    armed = false;
  }
  ~CtxOwner() { reset(); }
};

// Frees foreign-returned handles (ctorch takes them in every case).
struct HandleArray {
  std::vector<ct_tensor *> h;
  explicit HandleArray(size_t n) : h(n, nullptr) {}
  ~HandleArray() {
    for (ct_tensor *t : h) delete t;
  }
};

struct OutputMeta {
  bool differentiable;
  std::vector<int64_t> sizes;
  at::TensorOptions options;
};

struct ForeignNode : torch::autograd::Node {
  std::string name_;
  ct::BackwardCall call_;
  std::shared_ptr<void> keep_;                     // the callbacks' ctx
  std::vector<std::vector<int64_t>> input_sizes_;  // forward inputs
  std::vector<OutputMeta> outputs_;                // forward outputs = node inputs

  ForeignNode(std::string name, ct::BackwardCall call, std::shared_ptr<void> keep,
              torch::autograd::edge_list &&edges)
      : torch::autograd::Node(std::move(edges)),
        name_(std::move(name)),
        call_(std::move(call)),
        keep_(std::move(keep)) {}

  std::string name() const override { return name_; }

  variable_list apply(variable_list &&grads) override {
    const size_t n_out = outputs_.size();
    const size_t n_in = input_sizes_.size();
    if (!call_) ct::raise(CT_ERR_CALLBACK, "%s: no backward function was given", name_.c_str());
    // Borrowed handles for the gradients of the outputs; missing ones are
    // materialized as zeros (NULL for non-differentiable outputs).
    std::vector<ct_tensor> gh(n_out);
    std::vector<const ct_tensor *> gp(n_out, nullptr);
    for (size_t i = 0; i < n_out; ++i) {
      at::Tensor g = i < grads.size() ? grads[i] : at::Tensor();
      if (!g.defined() && outputs_[i].differentiable)
        g = at::zeros(outputs_[i].sizes, outputs_[i].options);
      if (g.defined()) {
        gh[i].t = std::move(g);
        gp[i] = &gh[i];
      }
    }
    HandleArray res(n_in);
    ct_clear_error();  // a callback that fails without ct_set_error gets no stale message
    ct_status rc = call_(n_out ? gp.data() : nullptr, n_out, n_in ? res.h.data() : nullptr, n_in);
    if (rc != CT_OK) {
      const char *msg = ct_last_error();
      ct::raise(CT_ERR_CALLBACK, "%s: backward callback failed (status %d): %s", name_.c_str(),
                static_cast<int>(rc), (msg && *msg) ? msg : "(no message: the callback did not call ct_set_error)");
    }
    variable_list out(n_in);
    for (size_t i = 0; i < n_in; ++i) {
      if (res.h[i] == nullptr || !res.h[i]->t.defined()) continue;
      if (!should_compute_output(i)) continue;  // input does not need a gradient
      const at::Tensor &g = res.h[i]->t;
      if (g.sizes() != c10::IntArrayRef(input_sizes_[i]))
        ct::raise(CT_ERR_CALLBACK,
                  "%s: backward returned a gradient of shape %s for input %zu, whose shape is %s",
                  name_.c_str(), shape_str(g.sizes()).c_str(), i,
                  shape_str(input_sizes_[i]).c_str());
      out[i] = g;
    }
    return out;
  }
};

}  // namespace

namespace ct {

void record_foreign_node(std::string name, BackwardCall call, std::shared_ptr<void> keep,
                         const variable_list &inputs, variable_list &outs) {
  auto node = make_node<ForeignNode>(std::move(name), std::move(call), std::move(keep),
                                     torch::autograd::collect_next_edges(inputs));
  node->input_sizes_.reserve(inputs.size());
  for (const auto &x : inputs)
    node->input_sizes_.emplace_back(x.defined() ? x.sizes().vec() : std::vector<int64_t>{});
  for (auto &out : outs) {
    // A fresh TensorImpl sharing the storage, with no history (also when
    // forward returned an input or a view of one).
    at::Tensor o = out.detach();
    const auto st = o.scalar_type();
    const bool diff = at::isFloatingType(st) || at::isComplexType(st);
    node->outputs_.push_back(OutputMeta{diff, o.sizes().vec(), o.options()});
    if (diff) {
      torch::autograd::create_gradient_edge(o, node);
    } else {
      node->add_input_metadata(torch::autograd::Node::undefined_input());
    }
    out = std::move(o);
  }
}

}  // namespace ct

extern "C" {

ct_status ct_tensor_set_requires_grad(ct_tensor *t, int32_t requires_grad) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(t);
    CT_CHECK_ARG(t->t.defined(), "%s: tensor is undefined", ct_fn_);
    CT_CHECK_ARG(requires_grad == 0 || requires_grad == 1,
                 "%s: requires_grad must be 0 or 1, got %d", ct_fn_, requires_grad);
    if (requires_grad &&
        !(at::isFloatingType(t->t.scalar_type()) || at::isComplexType(t->t.scalar_type())))
      return ct::set_error(CT_ERR_TYPE,
                           "%s: only floating point and complex tensors can require "
                           "gradients (dtype is %s)",
                           ct_fn_, c10::toString(t->t.scalar_type()));
    if (!t->t.is_leaf())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: requires_grad can only be changed on leaf tensors (use "
                           "ct_tensor_detach first)",
                           ct_fn_);
    t->t.set_requires_grad(requires_grad != 0);
    return CT_OK;
  });
}

ct_status ct_tensor_backward(const ct_tensor *t, const ct_tensor *grad, int32_t retain_graph,
                             int32_t create_graph) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(t);
    CT_CHECK_ARG(t->t.defined(), "%s: tensor is undefined", ct_fn_);
    if (!t->t.requires_grad())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: tensor does not require grad and has no grad_fn", ct_fn_);
    at::Tensor g;
    if (grad != nullptr) {
      g = grad->t;
      if (g.defined() && g.sizes() != t->t.sizes())
        return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                             "%s: grad has shape %s but the tensor has shape %s", ct_fn_,
                             shape_str(g.sizes()).c_str(), shape_str(t->t.sizes()).c_str());
    } else if (t->t.numel() != 1) {
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: grad can be NULL only for a tensor with one element (shape %s)",
                           ct_fn_, shape_str(t->t.sizes()).c_str());
    }
    // retain_graph defaults to create_graph, as in torch.
    t->t.backward(g, c10::optional<bool>(retain_graph != 0 || create_graph != 0),
                  create_graph != 0);
    return CT_OK;
  });
}

ct_status ct_tensor_grad(ct_tensor **out, const ct_tensor *t) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(t);
    CT_CHECK_ARG(t->t.defined(), "%s: tensor is undefined", ct_fn_);
    // TensorImpl::grad avoids torch's warning for non-leaf tensors.
    const at::Tensor &g = t->t.unsafeGetTensorImpl()->grad();
    *out = g.defined() ? ct::new_tensor(g) : nullptr;
    return CT_OK;
  });
}

ct_status ct_tensor_set_grad(ct_tensor *t, const ct_tensor *grad) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(t);
    CT_CHECK_ARG(t->t.defined(), "%s: tensor is undefined", ct_fn_);
    if (grad == nullptr || !grad->t.defined()) {
      t->t.mutable_grad() = at::Tensor();
      return CT_OK;
    }
    const at::Tensor &g = grad->t;
    if (g.sizes() != t->t.sizes())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: grad has shape %s but the tensor has shape %s", ct_fn_,
                           shape_str(g.sizes()).c_str(), shape_str(t->t.sizes()).c_str());
    if (g.scalar_type() != t->t.scalar_type())
      return ct::set_error(CT_ERR_TYPE, "%s: grad has dtype %s but the tensor has dtype %s", ct_fn_,
                           c10::toString(g.scalar_type()), c10::toString(t->t.scalar_type()));
    if (g.device() != t->t.device())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: grad is on %s but the tensor is on %s",
                           ct_fn_, g.device().str().c_str(), t->t.device().str().c_str());
    t->t.mutable_grad() = g;
    return CT_OK;
  });
}

ct_status ct_tensor_zero_grad(ct_tensor *t) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(t);
    CT_CHECK_ARG(t->t.defined(), "%s: tensor is undefined", ct_fn_);
    at::Tensor &g = t->t.mutable_grad();
    if (g.defined()) {
      at::NoGradGuard no_grad;
      if (g.grad_fn()) {
        g = g.detach();
      } else if (g.requires_grad()) {
        g.set_requires_grad(false);
      }
      g.zero_();
    }
    return CT_OK;
  });
}

int32_t ct_tensor_is_leaf(const ct_tensor *t) {
  return ct::guard_value<int32_t>(0,
                                  [&] { return (t && t->t.defined() && t->t.is_leaf()) ? 1 : 0; });
}

ct_status ct_tensor_grad_fn_name(char **out, const ct_tensor *t) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(t);
    CT_CHECK_ARG(t->t.defined(), "%s: tensor is undefined", ct_fn_);
    const auto &fn = t->t.grad_fn();
    *out = fn ? ct::dup_string(fn->name()) : nullptr;
    return CT_OK;
  });
}

ct_status ct_autograd_grad(ct_tensor **grads, const ct_tensor *const *outputs, size_t n_outputs,
                           const ct_tensor *const *inputs, size_t n_inputs,
                           const ct_tensor *const *grad_outputs, int32_t retain_graph,
                           int32_t create_graph, int32_t allow_unused) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(grads);
    CT_CHECK_NOT_NULL(outputs);
    CT_CHECK_NOT_NULL(inputs);
    CT_CHECK_ARG(n_outputs > 0, "%s: n_outputs must be > 0", ct_fn_);
    CT_CHECK_ARG(n_inputs > 0, "%s: n_inputs must be > 0", ct_fn_);
    variable_list outs, ins, gouts;
    outs.reserve(n_outputs);
    for (size_t i = 0; i < n_outputs; ++i) {
      CT_CHECK_ARG(outputs[i] != nullptr && outputs[i]->t.defined(),
                   "%s: outputs[%zu] is NULL or undefined", ct_fn_, i);
      CT_CHECK_ARG(outputs[i]->t.requires_grad(),
                   "%s: outputs[%zu] does not require grad and has no grad_fn", ct_fn_, i);
      outs.push_back(outputs[i]->t);
    }
    for (size_t i = 0; i < n_inputs; ++i) {
      CT_CHECK_ARG(inputs[i] != nullptr && inputs[i]->t.defined(),
                   "%s: inputs[%zu] is NULL or undefined", ct_fn_, i);
      CT_CHECK_ARG(inputs[i]->t.requires_grad(), "%s: inputs[%zu] does not require grad", ct_fn_,
                   i);
      ins.push_back(inputs[i]->t);
    }
    if (grad_outputs) {
      for (size_t i = 0; i < n_outputs; ++i) {
        at::Tensor g = grad_outputs[i] ? grad_outputs[i]->t : at::Tensor();
        if (g.defined() && g.sizes() != outs[i].sizes())
          return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                               "%s: grad_outputs[%zu] has shape %s but outputs[%zu] has shape %s",
                               ct_fn_, i, shape_str(g.sizes()).c_str(), i,
                               shape_str(outs[i].sizes()).c_str());
        if (!g.defined() && outs[i].numel() != 1)
          return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                               "%s: grad_outputs[%zu] can be NULL only for an output with one "
                               "element (shape %s)",
                               ct_fn_, i, shape_str(outs[i].sizes()).c_str());
        gouts.push_back(g);
      }
    } else {
      for (size_t i = 0; i < n_outputs; ++i)
        if (outs[i].numel() != 1)
          return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                               "%s: grad_outputs is NULL but outputs[%zu] has shape %s (only "
                               "one-element outputs get an implicit gradient of 1)",
                               ct_fn_, i, shape_str(outs[i].sizes()).c_str());
    }
    variable_list res = torch::autograd::grad(
        outs, ins, gouts, c10::optional<bool>(retain_graph != 0 || create_graph != 0),
        create_graph != 0, allow_unused != 0);
    std::vector<std::unique_ptr<ct_tensor>> hs(n_inputs);
    for (size_t i = 0; i < n_inputs && i < res.size(); ++i)
      if (res[i].defined()) hs[i].reset(ct::new_tensor(res[i]));
    for (size_t i = 0; i < n_inputs; ++i) grads[i] = hs[i].release();
    return CT_OK;
  });
}

ct_status ct_autograd_function_apply(ct_tensor **outputs, size_t n_outputs,
                                     const ct_tensor *const *inputs, size_t n_inputs,
                                     const char *name, ct_autograd_forward_fn forward,
                                     ct_autograd_backward_fn backward, void *ctx,
                                     ct_ctx_destroy_fn destroy) {
  // The ctx belongs to ctorch from here on, whatever happens.
  CtxOwner owner(ctx, destroy);
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(outputs);
    CT_CHECK_NOT_NULL(forward);
    CT_CHECK_ARG(n_outputs > 0, "%s: n_outputs must be > 0", ct_fn_);
    CT_CHECK_ARG(n_inputs == 0 || inputs != nullptr, "%s: argument 'inputs' is NULL", ct_fn_);
    const std::string node_name = name ? name : "CTorchFunction";
    variable_list ins;
    ins.reserve(n_inputs);
    for (size_t i = 0; i < n_inputs; ++i) {
      CT_CHECK_ARG(inputs[i] != nullptr && inputs[i]->t.defined(),
                   "%s: inputs[%zu] is NULL or undefined", ct_fn_, i);
      ins.push_back(inputs[i]->t);
    }
    const bool record =
        at::GradMode::is_enabled() && torch::autograd::any_variable_requires_grad(ins);
    if (record && backward == nullptr)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: an input requires grad but 'backward' is NULL", ct_fn_);

    // ---- forward, with grad mode off.
    HandleArray res(n_outputs);
    {
      at::AutoGradMode no_grad(false);
      ct_clear_error();
      ct_status rc = forward(ctx, n_inputs ? inputs : nullptr, n_inputs, res.h.data(), n_outputs);
      if (rc != CT_OK) {
        const char *msg = ct_last_error();
        return ct::set_error(CT_ERR_CALLBACK, "%s: %s: forward callback failed (status %d): %s",
                             ct_fn_, node_name.c_str(), static_cast<int>(rc),
                             (msg && *msg) ? msg : "(no message: the callback did not call ct_set_error)");
      }
    }
    variable_list outs(n_outputs);
    for (size_t i = 0; i < n_outputs; ++i) {
      if (res.h[i] == nullptr || !res.h[i]->t.defined())
        return ct::set_error(CT_ERR_CALLBACK, "%s: %s: forward stored no tensor in outputs[%zu]",
                             ct_fn_, node_name.c_str(), i);
      outs[i] = res.h[i]->t;
    }

    // ---- graph: the node owns the ctx from here on.
    if (record) {
      owner.armed = false;
      std::shared_ptr<void> keep(ctx, [destroy](void *c) {
        if (destroy) destroy(c);
      });
      ct::record_foreign_node(
          node_name,
          [backward, ctx](const ct_tensor *const *g, size_t n_g, ct_tensor **r, size_t n_r) {
            return backward(ctx, g, n_g, r, n_r);
          },
          std::move(keep), ins, outs);
    } else {
      owner.reset();  // no graph: the ctx is done with
    }
    std::vector<std::unique_ptr<ct_tensor>> hs(n_outputs);
    for (size_t i = 0; i < n_outputs; ++i) hs[i].reset(ct::new_tensor(std::move(outs[i])));
    for (size_t i = 0; i < n_outputs; ++i) outputs[i] = hs[i].release();
    return CT_OK;
  });
}

}  // extern "C"
