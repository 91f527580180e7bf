// The C++ floor for bench/bench_julia.jl, measured in the Julia process
// itself: bench_julia.jl dlopens this library and calls these functions
// between its own samples, so Julia's ratios do not depend on another
// process's figures. Each returns the mean time of one call in ns over `iters`
// calls (after one warm-up call).
#include <torch/script.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>

namespace {
template <class T>
inline void escape(const T &v) {
  asm volatile("" : : "g"(v) : "memory");
}

template <class F>
double mean_ns(int64_t iters, F &&f) {
  f();
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iters; ++i) f();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / double(iters);
}
}  // namespace

// torch::add on two 4-float tensors (the Julia `a + b` case).
extern "C" double ctb_add_ns(int64_t iters) {
  static const at::Tensor a = torch::tensor({1.f, 2.f, 3.f, 4.f});
  static const at::Tensor b = torch::tensor({5.f, 6.f, 7.f, 8.f});
  return mean_ns(iters, [] {
    at::Tensor r = torch::add(a, b);
    escape(r.unsafeGetTensorImpl());
  });
}

// Module::forward of the Julia bench's tiny module (x + 1 on 4 floats).
extern "C" double ctb_tiny_forward_ns(int64_t iters) {
  static torch::jit::Module m = [] {
    torch::jit::Module mod("BenchTiny");
    mod.define("def forward(self, x):\n    return x + 1\n");
    return mod;
  }();
  static const at::Tensor x = torch::tensor({1.f, 2.f, 3.f, 4.f});
  return mean_ns(iters, [] {
    at::Tensor r = m.forward({x}).toTensor();
    escape(r.unsafeGetTensorImpl());
  });
}

// One training step of bench_train.cpp's conv net (harness.h's kConvNetSrc, repeated
// here because this library does not link ctorch): jit forward, cross-entropy,
// backward, torch::optim::Adam; the data and initial values as bench_julia.jl makes them
// (seeded randn of the same shapes; the ratio does not depend on the values).
// The layer stack of bench_train.cpp in C++ torch::nn: forward, loss, backward.
extern "C" double ctb_layer_stack_ns(int64_t iters) {
  struct Stack : torch::nn::Module {
    torch::nn::Conv1d conv{torch::nn::Conv1dOptions(16, 32, 3).padding(1)};
    torch::nn::BatchNorm1d bn{32};
    torch::nn::LSTM lstm{torch::nn::LSTMOptions(32, 32)};
    torch::nn::MultiheadAttention attn{torch::nn::MultiheadAttentionOptions(32, 4)};
    torch::nn::Linear head{32, 10};
    Stack() {
      register_module("conv", conv);
      register_module("bn", bn);
      register_module("lstm", lstm);
      register_module("attn", attn);
      register_module("head", head);
    }
  };
  struct State {
    std::shared_ptr<Stack> m = std::make_shared<Stack>();
    at::Tensor x = at::randn({8, 16, 32}), y = at::randint(10, {8});
  };
  static State s;
  return mean_ns(iters, [] {
    Stack &m = *s.m;
    m.zero_grad();
    at::Tensor h = torch::relu(m.bn->forward(m.conv->forward(s.x))).permute({2, 0, 1});
    h = std::get<0>(m.lstm->forward(h));
    at::Tensor a = std::get<0>(m.attn->forward(h, h, h, {}, false));
    at::Tensor loss = at::cross_entropy_loss(m.head->forward(a.mean(0)), s.y);
    loss.backward();
    escape(loss.unsafeGetTensorImpl());
  });
}

extern "C" double ctb_train_step_ns(int64_t iters) {
  static const char *src =
      "def forward(self, x):\n"
      "    h = torch.relu(torch.conv2d(x, self.conv_w, self.conv_b, [1, 1], [1, 1]))\n"
      "    h = torch.flatten(torch.max_pool2d(h, [2, 2]), 1)\n"
      "    return torch.linear(h / (1 + torch.abs(h)), self.fc_w, self.fc_b)\n";
  struct State {
    torch::jit::Module m{"__torch__.BenchConvNetFloor"};
    at::Tensor x, y;
    std::unique_ptr<torch::optim::Adam> opt;
    State() {
      at::manual_seed(0);
      m.register_parameter("conv_w", (at::randn({16, 3, 3, 3}) * 0.2).requires_grad_(), false);
      m.register_parameter("conv_b", (at::randn({16}) * 0.1).requires_grad_(), false);
      m.register_parameter("fc_w", (at::randn({10, 4096}) * 0.02).requires_grad_(), false);
      m.register_parameter("fc_b", (at::zeros({10})).requires_grad_(), false);
      m.define(src);
      x = at::randn({32, 3, 32, 32});
      y = at::randint(10, {32});
      std::vector<at::Tensor> ps;
      for (const auto &p : m.parameters()) ps.push_back(p);
      opt = std::make_unique<torch::optim::Adam>(ps, torch::optim::AdamOptions(1e-3));
    }
  };
  static State s;
  return mean_ns(iters, [] {
    at::Tensor loss = at::cross_entropy_loss(s.m.forward({s.x}).toTensor(), s.y);
    s.opt->zero_grad();
    loss.backward();
    s.opt->step();
    escape(loss.unsafeGetTensorImpl());
  });
}
