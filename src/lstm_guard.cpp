// The LSTM guard: LibTorch 2.x runs nn.LSTM on the CPU through oneDNN's RNN
// primitive (aten::mkldnn_rnn_layer). Under no_grad / inference mode it uses
// the forward_inference primitive, which gives wrong float32 results on some
// CPUs (Debian 13's LibTorch 2.6 on AVX-512: max error 0.05 against float64,
// while the forward_training primitive and LibTorch's own non-oneDNN kernel
// are right). ctorch puts a CPU kernel in front of aten::mkldnn_rnn_layer;
// the first time a float32 layer runs without grad it probes oneDNN's
// inference and training primitives against ctorch's own LSTM layer (the
// textbook recurrence on at::linear/addmm, the same math as LibTorch's
// non-oneDNN kernel). Where the inference primitive is wrong, such layers run
// through the training primitive (as fast; its workspace is dropped) where
// that one is right, else through ctorch's layer. Everything else
// (convolutions, linear, grad-mode LSTMs, other dtypes) is untouched.
// ct_lstm_guard_set_mode / CTORCH_LSTM_GUARD force either way.
#include "checks.h"
#include "internal.h"
#include "locks.h"
#include "torch_version.h"

#include <ATen/Config.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#if CT_TORCH_AT_LEAST(2, 0) && AT_MKLDNN_ENABLED() && \
    __has_include(<ATen/ops/mkldnn_rnn_layer_native.h>)
#define CT_HAS_ONEDNN_LSTM 1
#include <ATen/ops/mkldnn_rnn_layer_native.h>
#include <torch/library.h>
#else
#define CT_HAS_ONEDNN_LSTM 0
#endif

namespace {

constexpr int32_t kAuto = -1, kOff = 0, kOn = 1;

#if CT_HAS_ONEDNN_LSTM
// Results of the probe: not run yet; oneDNN's inference primitive right;
// wrong, and the training primitive right; both wrong.
constexpr int kUnprobed = 0, kOneDnnRight = 1, kUseTraining = 2, kUseCtorch = 3;
// LSTM outputs h are in (-1, 1); legitimate float32 differences between two
// correct kernels are ~1e-6, the defect ~5e-2.
constexpr double kTolerance = 1e-3;

std::atomic<int32_t> g_mode{kAuto};
std::atomic<int> g_probe{kUnprobed};
std::mutex g_mutex;  // registration and the probe
ct::ForkSafe g_mutex_fork_safe(g_mutex);

using at::Tensor;
using Layer = std::tuple<Tensor, Tensor, Tensor, Tensor>;

std::unique_ptr<torch::Library> g_library;  // our kernel is registered while it lives

// Test hooks (docs/conventions.md): CTORCH_TEST_LSTM_ONEDNN_ERROR=<x> adds x
// to every output oneDNN's inference primitive gives through the guard,
// CTORCH_TEST_LSTM_ONEDNN_TRAINING_ERROR=<x> to the training primitive's, so
// that detection and routes are tested on CPUs where oneDNN is right.
float env_float(const char *name) {
  const char *s = std::getenv(name);
  return s ? std::strtof(s, nullptr) : 0.0f;
}
float injected_error(bool training) {
  static const float inference_error = env_float("CTORCH_TEST_LSTM_ONEDNN_ERROR");
  static const float training_error = env_float("CTORCH_TEST_LSTM_ONEDNN_TRAINING_ERROR");
  return training ? training_error : inference_error;
}

// One LSTM layer over a time-major [T, N, I] input, as LibTorch's non-oneDNN
// CPU kernel computes it: gates = x W_ih^T + b_ih + h W_hh^T + b_hh, in the
// order i, f, g, o.
Layer ctorch_layer(const Tensor &input, const Tensor &w_ih, const Tensor &w_hh, const Tensor &b_ih,
                   const Tensor &b_hh, const Tensor &hx, const Tensor &cx, bool reverse,
                   bool has_biases) {
  const int64_t steps = input.size(0), batch = input.size(1), hidden = w_hh.size(1);
  Tensor x_gates = has_biases ? at::linear(input, w_ih, b_ih + b_hh) : at::linear(input, w_ih);
  Tensor w_hh_t = w_hh.t();
  Tensor h = hx.reshape({batch, hidden}).clone(), c = cx.reshape({batch, hidden}).clone();
  Tensor out = at::empty({steps, batch, hidden}, input.options());
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = reverse ? steps - 1 - s : s;
    auto g = at::addmm(x_gates[t], h, w_hh_t).chunk(4, 1);
    c = at::sigmoid(g[1]) * c + at::sigmoid(g[0]) * at::tanh(g[2]);
    h = at::sigmoid(g[3]) * at::tanh(c);
    out[t].copy_(h);
  }
  return Layer(out, h.view(hx.sizes()), c.view(cx.sizes()), Tensor());
}

// LibTorch's own kernel: oneDNN's forward_inference primitive without grad,
// forward_training with grad. training=true runs the training primitive
// whatever the grad mode (no autograd graph; its workspace is dropped).
Layer onednn_layer(const Tensor &input, const Tensor &w0, const Tensor &w1, const Tensor &w2,
                   const Tensor &w3, const Tensor &hx, const Tensor &cx, bool reverse,
                   at::IntArrayRef batch_sizes, int64_t mode, int64_t hidden_size,
                   int64_t num_layers, bool has_biases, bool bidirectional, bool batch_first,
                   bool train, bool training = false) {
  if (training) {
    at::AutoDispatchBelowAutograd no_graph;
    c10::AutoGradMode grad(true);
    Layer r = at::native::mkldnn_rnn_layer(input, w0, w1, w2, w3, hx, cx, reverse, batch_sizes,
                                           mode, hidden_size, num_layers, has_biases, bidirectional,
                                           batch_first, train);
    if (float e = injected_error(true)) std::get<0>(r).add_(e);
    return Layer(std::get<0>(r), std::get<1>(r), std::get<2>(r), Tensor());
  }
  Layer r = at::native::mkldnn_rnn_layer(input, w0, w1, w2, w3, hx, cx, reverse, batch_sizes, mode,
                                         hidden_size, num_layers, has_biases, bidirectional,
                                         batch_first, train);
  if (float e = injected_error(false))
    if (!c10::GradMode::is_enabled()) std::get<0>(r).add_(e);
  return r;
}

double max_diff(const Tensor &a, const Tensor &b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

Tensor probe_values(at::IntArrayRef sizes, double phase) {
  // Deterministic (the user's random generator is left alone), in [-0.6, 0.6].
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return (at::arange(n, at::kDouble).mul(0.7373).add(phase).sin() * 0.6)
      .to(at::kFloat)
      .reshape(sizes);
}

struct ProbeErrors {
  double inference = 0, training = 0;  // max |oneDNN - ctorch's layer|
};

// oneDNN's two primitives against ctorch's layer on small LSTMs (the
// reported 8->3, the test model's 5->7 reversed, and a wider one).
ProbeErrors probe_errors() {
  c10::AutoGradMode no_grad(false);
  struct Shape {
    int64_t steps, batch, in, hidden;
    bool reverse;
  };
  const Shape shapes[] = {{5, 2, 8, 3, false}, {6, 3, 5, 7, true}, {4, 2, 16, 20, false}};
  ProbeErrors worst;
  double phase = 0.1;
  for (const Shape &s : shapes) {
    Tensor x = probe_values({s.steps, s.batch, s.in}, phase += 1);
    Tensor w_ih = probe_values({4 * s.hidden, s.in}, phase += 1);
    Tensor w_hh = probe_values({4 * s.hidden, s.hidden}, phase += 1);
    Tensor b_ih = probe_values({4 * s.hidden}, phase += 1);
    Tensor b_hh = probe_values({4 * s.hidden}, phase += 1);
    Tensor hx = probe_values({s.batch, s.hidden}, phase += 1);
    Tensor cx = probe_values({s.batch, s.hidden}, phase += 1);
    Layer want = ctorch_layer(x, w_ih, w_hh, b_ih, b_hh, hx, cx, s.reverse, true);
    for (bool training : {false, true}) {
      Layer got = onednn_layer(x, w_ih, w_hh, b_ih, b_hh, hx, cx, s.reverse, {}, /*LSTM*/ 2,
                               s.hidden, 1, true, false, false, false, training);
      double &w = training ? worst.training : worst.inference;
      for (double d : {max_diff(std::get<0>(got), std::get<0>(want)),
                       max_diff(std::get<1>(got), std::get<1>(want)),
                       max_diff(std::get<2>(got), std::get<2>(want))})
        if (!(d <= w)) w = d;  // NaN sticks
    }
  }
  return worst;
}

void record_probe(const ProbeErrors &err) {
  bool inference_right = err.inference <= kTolerance;  // NaN counts as wrong
  bool training_right = err.training <= kTolerance;
  int result = inference_right ? kOneDnnRight : training_right ? kUseTraining : kUseCtorch;
  g_probe.store(result);
  if (result != kOneDnnRight)
    TORCH_WARN(
        "ctorch: oneDNN's LSTM kernel gives wrong results on this CPU without grad (max "
        "error ",
        err.inference, " on a probe); float32 LSTM layers without grad now run through ",
        result == kUseTraining ? "oneDNN's training kernel (right here)"
                               : "ctorch's own LSTM layer",
        ". CTORCH_LSTM_GUARD=0 or ct_lstm_guard_set_mode(0) uses oneDNN's inference kernel "
        "anyway.");
}

// Which route a float32 no-grad LSTM layer takes now (probing first if due).
int route() {
  int32_t mode = g_mode.load();
  if (mode == kOn) return kUseCtorch;
  if (mode == kOff) return kOneDnnRight;
  if (g_probe.load() == kUnprobed) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_probe.load() == kUnprobed) record_probe(probe_errors());
  }
  return g_probe.load();
}

// The kernel in front of aten::mkldnn_rnn_layer (CPU).
Layer guarded_layer(const Tensor &input, const Tensor &w0, const Tensor &w1, const Tensor &w2,
                    const Tensor &w3, const Tensor &hx, const Tensor &cx, bool reverse,
                    at::IntArrayRef batch_sizes, int64_t mode, int64_t hidden_size,
                    int64_t num_layers, bool has_biases, bool bidirectional, bool batch_first,
                    bool train) {
  // Only what the defect touches: float32 LSTM layers without grad (with grad
  // oneDNN runs forward_training, which is right), unpacked and strided.
  bool eligible =
      !c10::GradMode::is_enabled() && input.scalar_type() == at::kFloat && input.dim() == 3 &&
      input.size(0) > 0 && batch_sizes.empty() && input.layout() == at::kStrided && w0.dim() == 2 &&
      w1.dim() == 2 && w0.size(0) == 4 * hidden_size && w1.size(0) == 4 * hidden_size &&
      w1.size(1) == hidden_size && w0.size(1) == input.size(2) && w0.scalar_type() == at::kFloat &&
      w1.scalar_type() == at::kFloat && hx.scalar_type() == at::kFloat &&
      cx.scalar_type() == at::kFloat && hx.numel() == input.size(1) * hidden_size &&
      cx.numel() == hx.numel() &&
      (!has_biases || (w2.numel() == 4 * hidden_size && w3.numel() == 4 * hidden_size &&
                       w2.scalar_type() == at::kFloat && w3.scalar_type() == at::kFloat));
  int r = eligible ? route() : kOneDnnRight;
  if (r == kUseCtorch) return ctorch_layer(input, w0, w1, w2, w3, hx, cx, reverse, has_biases);
  return onednn_layer(input, w0, w1, w2, w3, hx, cx, reverse, batch_sizes, mode, hidden_size,
                      num_layers, has_biases, bidirectional, batch_first, train, r == kUseTraining);
}

// Swallows the one warning LibTorch gives when a kernel is registered over
// its own ("Overriding a previously registered kernel").
struct DropWarnings final : c10::WarningHandler {
  void process(const c10::Warning &) override {}
};

// Puts our kernel in front of LibTorch's (on) or removes it, which restores
// LibTorch's (off). Call with g_mutex held.
void set_registered(bool on) {
  if (!on) {
    g_library.reset();
    return;
  }
  if (g_library) return;
  DropWarnings drop;
  c10::WarningUtils::WarningHandlerGuard quiet(&drop);
  auto lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::CPU,
                                              __FILE__, __LINE__);
  lib->impl("mkldnn_rnn_layer", TORCH_FN(guarded_layer));
  g_library = std::move(lib);
}

// CTORCH_LSTM_GUARD=0 (oneDNN as LibTorch does), =1 (always ctorch's
// layer), unset or anything else: probe.
struct LstmGuardInit {
  LstmGuardInit() {
    try {
      const char *env = std::getenv("CTORCH_LSTM_GUARD");
      int32_t mode = kAuto;
      if (env && std::strcmp(env, "0") == 0) mode = kOff;
      if (env && std::strcmp(env, "1") == 0) mode = kOn;
      std::lock_guard<std::mutex> lock(g_mutex);
      g_mode.store(mode);
      set_registered(mode != kOff);
    } catch (...) {
      g_library.reset();  // LibTorch's kernel stays; ct_lstm_guard_route() says -1
    }
  }
} lstm_guard_init;
#endif  // CT_HAS_ONEDNN_LSTM

}  // namespace

extern "C" {

ct_status ct_lstm_guard_set_mode(int32_t mode) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_ARG(mode == kAuto || mode == kOff || mode == kOn,
                 "%s: mode must be -1 (probe), 0 (oneDNN) or 1 (ctorch's LSTM layer), got %d",
                 ct_fn_, (int)mode);
#if CT_HAS_ONEDNN_LSTM
    std::lock_guard<std::mutex> lock(g_mutex);
    set_registered(mode != kOff);
    g_mode.store(mode);
    return CT_OK;
#else
    if (mode == kOn)
      return ct::set_error(CT_ERR_NOT_SUPPORTED,
                           "%s: this LibTorch (%s) has no oneDNN LSTM kernel to route around",
                           ct_fn_, TORCH_VERSION);
    return CT_OK;
#endif
  });
}

int32_t ct_lstm_guard_route(void) {
#if CT_HAS_ONEDNN_LSTM
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_library) return g_mode.load() == kOff ? 0 : -1;
  if (g_mode.load() == kOn) return 1;
  int probe = g_probe.load();
  return probe == kUnprobed ? 2 : probe == kOneDnnRight ? 0 : 1;
#else
  return -1;
#endif
}

ct_status ct_lstm_guard_check(double *max_error) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(max_error);
#if CT_HAS_ONEDNN_LSTM
    std::lock_guard<std::mutex> lock(g_mutex);
    ProbeErrors err = probe_errors();
    if (g_probe.load() == kUnprobed) record_probe(err);
    *max_error = err.inference;
    return CT_OK;
#else
    return ct::set_error(CT_ERR_NOT_SUPPORTED,
                         "%s: this LibTorch (%s) has no oneDNN LSTM kernel to check", ct_fn_,
                         TORCH_VERSION);
#endif
  });
}

}  // extern "C"
