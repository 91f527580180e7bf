// Group 5, training step: forward, cross-entropy loss, backward and an Adam step of a
// small conv net (harness.h's kConvNetSrc), through ctorch's C ABI (ct_module_forward_tensors,
// ct_op_call_tensors, ct_tensor_backward, ct_optimizer_*) vs C++ LibTorch
// (torch::jit::Module::forward, at::cross_entropy_loss, backward, torch::optim::Adam),
// 1 intra-op thread. And a layer stack (Conv1d, BatchNorm1d, LSTM, MultiheadAttention,
// Linear) built with ct_module_new_nn against the same layers in C++ torch::nn, forward and
// backward. Built on bench/harness.h; run by bench/run.sh.
#include "harness.h"

#include <torch/nn.h>

using namespace bench;

namespace {

struct Net {
  at::Tensor conv_w, conv_b, fc_w, fc_b;
};

Net initial_net() {
  at::manual_seed(0);
  return {at::randn({16, 3, 3, 3}) * 0.2, at::randn({16}) * 0.1, at::randn({10, 4096}) * 0.02,
          at::zeros({10})};
}

void group_train() {
  header("training step: ctorch C ABI vs C++ LibTorch (torch::optim::Adam)");
  at::set_num_threads(1);
  Net init = initial_net();
  at::Tensor x = at::randn({32, 3, 32, 32}), y = at::randint(10, {32});

  // C++ floor: its own copy of the parameters.
  torch::jit::Module cm("__torch__.BenchConvNet");
  cm.register_parameter("conv_w", init.conv_w.clone().requires_grad_(), false);
  cm.register_parameter("conv_b", init.conv_b.clone().requires_grad_(), false);
  cm.register_parameter("fc_w", init.fc_w.clone().requires_grad_(), false);
  cm.register_parameter("fc_b", init.fc_b.clone().requires_grad_(), false);
  cm.define(kConvNetSrc);
  std::vector<at::Tensor> cparams;
  for (const auto &p : cm.parameters()) cparams.push_back(p);
  torch::optim::Adam copt(cparams, torch::optim::AdamOptions(1e-3));
  std::vector<c10::IValue> in{x};

  // ctorch: a module of its own with the same initial values.
  ct_module *m = nullptr;
  CK(ct_module_new(&m, "BenchConvNet2"));
  const char *names[4] = {"conv_w", "conv_b", "fc_w", "fc_b"};
  const at::Tensor *vals[4] = {&init.conv_w, &init.conv_b, &init.fc_w, &init.fc_b};
  ct_tensor *params[4];
  for (int i = 0; i < 4; ++i) {
    at::Tensor c = vals[i]->clone();
    ct_tensor *t = nullptr;
    CK(ct_tensor_from_data(&t, c.data_ptr(), c.sizes().data(), (size_t)c.dim(), CT_FLOAT32,
                           CT_DEVICE_CPU, -1));
    CK(ct_module_register_parameter(m, names[i], t, 1));
    ct_tensor_free(t);
    ct_value *v = nullptr;
    CK(ct_module_get_attr(&v, m, names[i]));
    CK(ct_value_to_tensor(&params[i], v));
    ct_value_free(v);
  }
  CK(ct_module_define(m, kConvNetSrc));
  ct_optimizer *opt = nullptr;
  CK(ct_optimizer_new(&opt, "adam", params, 4, nullptr));
  ct_op *xent = nullptr;
  CK(ct_op_find(&xent, "aten::cross_entropy_loss", ""));
  ct_tensor *tx = nullptr, *ty = nullptr;
  CK(ct_tensor_from_data(&tx, x.data_ptr(), x.sizes().data(), 4, CT_FLOAT32, CT_DEVICE_CPU, -1));
  CK(ct_tensor_from_data(&ty, y.data_ptr(), y.sizes().data(), 1, CT_INT64, CT_DEVICE_CPU, -1));

  compare("train", "train step conv net 32x3x32x32 (Adam)",
          {"jit forward+loss+backward+Adam",
           [&] {
             at::Tensor logits = cm.forward(in).toTensor();
             at::Tensor loss = at::cross_entropy_loss(logits, y);
             copt.zero_grad();
             loss.backward();
             copt.step();
             escape(loss.unsafeGetTensorImpl());
           }},
          {{"ct_module_forward_tensors+...+ct_optimizer_step",
            [&] {
              ct_tensor *logits = nullptr, *loss = nullptr;
              if (ct_module_forward_tensors(&logits, 1, nullptr, m, nullptr,
                                            (const ct_tensor *const *)&tx, 1) != CT_OK)
                die("forward");
              const ct_tensor *li[2] = {logits, ty};
              if (ct_op_call_tensors(&loss, 1, xent, li, 2) != CT_OK) die("loss");
              if (ct_optimizer_zero_grad(opt, 1) != CT_OK) die("zero_grad");
              if (ct_tensor_backward(loss, nullptr, 0, 0) != CT_OK) die("backward");
              if (ct_optimizer_step(opt) != CT_OK) die("step");
              ct_tensor_free(logits);
              ct_tensor_free(loss);
            }}},
          g_quick ? 15 : 41, 60.0, {{"ratio", 1.05}},
          "forward, loss, backward, Adam step; torch::optim::Adam vs ctorch's Adam (torch.optim's "
          "single-tensor arithmetic); 1 intra-op thread");
  ct_tensor_free(tx);
  ct_tensor_free(ty);
  for (auto *p : params) ct_tensor_free(p);
  ct_op_free(xent);
  ct_optimizer_free(opt);
  ct_module_free(m);
}

// ---- layer stack: ctorch's torch.nn layers vs C++ torch::nn ------------------------
// x: (batch 8, channels 16, time 32) -> conv 16->32 k3 same, batch norm, relu -> (time,
// batch, 32) -> LSTM 32->32 -> self-attention (4 heads) -> mean over time -> linear 32->10.
const char *const kStackForward =
    "def forward(self, x: Tensor) -> Tensor:\n"
    "    h = torch.relu(self.bn.forward(self.conv.forward(x)))\n"
    "    h = h.permute(2, 0, 1)\n"
    "    h = self.lstm.forward(h)[0]\n"
    "    a = self.attn.forward(h, h, h, need_weights=False)[0]\n"
    "    return self.head.forward(a.mean(0))\n";

struct CppStack : torch::nn::Module {
  torch::nn::Conv1d conv{torch::nn::Conv1dOptions(16, 32, 3).padding(1)};
  torch::nn::BatchNorm1d bn{32};
  torch::nn::LSTM lstm{torch::nn::LSTMOptions(32, 32)};
  torch::nn::MultiheadAttention attn{torch::nn::MultiheadAttentionOptions(32, 4)};
  torch::nn::Linear head{32, 10};
  CppStack() {
    register_module("conv", conv);
    register_module("bn", bn);
    register_module("lstm", lstm);
    register_module("attn", attn);
    register_module("head", head);
  }
  at::Tensor forward(const at::Tensor &x) {
    at::Tensor h = torch::relu(bn->forward(conv->forward(x))).permute({2, 0, 1});
    h = std::get<0>(lstm->forward(h));
    at::Tensor a = std::get<0>(attn->forward(h, h, h, {}, /*need_weights=*/false));
    return head->forward(a.mean(0));
  }
};

ct_module *nn_layer(const char *name, std::vector<int64_t> args,
                    std::vector<std::pair<const char *, int64_t>> kw = {}) {
  std::vector<ct_value *> a, k;
  std::vector<const char *> kn;
  for (int64_t v : args) {
    a.push_back(nullptr);
    CK(ct_value_from_int(&a.back(), v));
  }
  for (auto &p : kw) {
    kn.push_back(p.first);
    k.push_back(nullptr);
    CK(ct_value_from_int(&k.back(), p.second));
  }
  ct_module *m = nullptr;
  CK(ct_module_new_nn(&m, name, a.data(), a.size(), kn.data(), k.data(), k.size()));
  for (auto *v : a) ct_value_free(v);
  for (auto *v : k) ct_value_free(v);
  return m;
}

void group_layer_stack() {
  header("layer stack (conv, batch norm, LSTM, attention): ctorch's nn layers vs C++ torch::nn");
  at::set_num_threads(1);
  ct_module *m = nullptr;
  CK(ct_module_new(&m, "BenchStack"));
  struct {
    const char *name;
    ct_module *layer;
  } parts[] = {{"conv", nn_layer("Conv1d", {16, 32, 3}, {{"padding", 1}})},
               {"bn", nn_layer("BatchNorm1d", {32})},
               {"lstm", nn_layer("LSTM", {32, 32})},
               {"attn", nn_layer("MultiheadAttention", {32, 4})},
               {"head", nn_layer("Linear", {32, 10})}};
  for (auto &p : parts) {
    CK(ct_module_register_module(m, p.name, p.layer));
    ct_module_free(p.layer);
  }
  CK(ct_module_define(m, kStackForward));
  // The C++ model gets ctorch's initial values (same names).
  auto cpp = std::make_shared<CppStack>();
  {
    ct_value *sd = nullptr;
    CK(ct_module_state_dict(&sd, m));
    torch::NoGradGuard no_grad;
    for (auto &item : cpp->named_parameters()) {
      ct_value *v = nullptr;
      ct_tensor *t = nullptr;
      CK(ct_value_dict_get_str(&v, sd, item.key().c_str()));
      CK(ct_value_to_tensor(&t, v));
      int64_t n = ct_tensor_numel(t);
      if (n != item.value().numel()) die(item.key().c_str());
      std::memcpy(item.value().data_ptr(), ct_tensor_data_ptr(t), n * sizeof(float));
      ct_tensor_free(t);
      ct_value_free(v);
    }
    ct_value_free(sd);
  }
  at::Tensor x = at::randn({8, 16, 32}), y = at::randint(10, {8});
  ct_tensor *tx = nullptr, *ty = nullptr;
  CK(ct_tensor_from_data(&tx, x.data_ptr(), x.sizes().data(), 3, CT_FLOAT32, CT_DEVICE_CPU, -1));
  CK(ct_tensor_from_data(&ty, y.data_ptr(), y.sizes().data(), 1, CT_INT64, CT_DEVICE_CPU, -1));
  ct_op *xent = nullptr;
  CK(ct_op_find(&xent, "aten::cross_entropy_loss", ""));
  compare("train", "layer stack forward+backward (conv, bn, LSTM, attention)",
          {"torch::nn forward+loss+backward",
           [&] {
             cpp->zero_grad();
             at::Tensor loss = at::cross_entropy_loss(cpp->forward(x), y);
             loss.backward();
             escape(loss.unsafeGetTensorImpl());
           }},
          {{"ct_module_new_nn layers: forward+loss+backward",
            [&] {
              ct_tensor *logits = nullptr, *loss = nullptr;
              if (ct_module_zero_grad(m, 1) != CT_OK) die("zero_grad");
              if (ct_module_forward_tensors(&logits, 1, nullptr, m, nullptr,
                                            (const ct_tensor *const *)&tx, 1) != CT_OK)
                die(ct_last_error());
              const ct_tensor *li[2] = {logits, ty};
              if (ct_op_call_tensors(&loss, 1, xent, li, 2) != CT_OK) die("loss");
              if (ct_tensor_backward(loss, nullptr, 0, 0) != CT_OK) die("backward");
              ct_tensor_free(logits);
              ct_tensor_free(loss);
            }}},
          g_quick ? 15 : 41, 60.0, {{"ratio", 1.05}},
          "the same layers and initial values; ctorch: TorchScript modules made by "
          "ct_module_new_nn; C++: torch::nn modules, eager; 1 intra-op thread");
  ct_tensor_free(tx);
  ct_tensor_free(ty);
  ct_op_free(xent);
  ct_module_free(m);
}

}  // namespace

int main(int argc, char **argv) {
  return run_main(argc, argv, "train", [] {
    group_train();
    group_layer_stack();
  });
}
