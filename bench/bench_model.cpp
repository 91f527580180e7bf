// Group 2, model forward: a scripted x*2+1, a scripted MLP and the traced resnet18 through
// ctorch's module calls vs torch::jit::Module::forward, inference mode, 1 intra-op thread.
// Built on bench/harness.h; run by bench/run.sh. Options: see harness.h.
#include "harness.h"

using namespace bench;

namespace {

void group_model(const std::string &resnet_path) {
  header("model forward: ct_module_forward vs torch::jit::Module::forward (inference mode)");
  at::set_num_threads(1);
  CK(ct_inference_mode_push(1));  // the same thread-local c10 state covers both sides
  {
    // x*2+1 on 4 floats.
    torch::jit::Module cm("__torch__.BenchSmall");
    cm.define(kSmallSrc);
    ct_module *m = nullptr;
    CK(ct_module_new(&m, "BenchSmall2"));
    CK(ct_module_define(m, kSmallSrc));
    const float xs[4] = {1, 2, 3, 4};
    const int64_t s4[1] = {4};
    ct_tensor *tx = nullptr;
    ct_value *vx = nullptr, *out = nullptr;
    CK(ct_tensor_from_data(&tx, xs, s4, 1, CT_FLOAT32, CT_DEVICE_CPU, -1));
    CK(ct_value_from_tensor(&vx, tx));
    at::Tensor x = torch::from_blob(const_cast<float *>(xs), {4}).clone();
    std::vector<c10::IValue> in{x};
    compare("model", "scripted x*2+1 (4 floats)",
            {"Module::forward",
             [&] {
               c10::IValue r = cm.forward(in);
               escape(&r);
             }},
            {{"ct_module_forward + value_free",
              [&] {
                ct_value *o = nullptr;
                if (ct_module_forward(&o, m, &vx, 1) != CT_OK) die("ct_module_forward");
                ct_value_free(o);
              }}},
            500, 2.0, {{"ratio", 1.05}},
            "Module::forward takes its inputs by value (a vector copy) and inserts self at the "
            "front; ct_module_forward builds the stack once, hence < 1 on tiny models");
    (void)out;
    ct_value_free(vx);
    ct_tensor_free(tx);
    ct_module_free(m);
  }
  {
    // MLP 8x64 -> 128 -> 10 (the Julia benchmark's model).
    at::manual_seed(0);
    at::Tensor w1 = at::randn({64, 128}), w2 = at::randn({128, 10}), x = at::randn({8, 64});
    torch::jit::Module cm("__torch__.BenchMlp");
    cm.register_parameter("w1", w1, false);
    cm.register_parameter("w2", w2, false);
    cm.define(kMlpSrc);
    ct_module *m = nullptr;
    ct_tensor *tw1 = nullptr, *tw2 = nullptr, *tx = nullptr;
    const int64_t s1[2] = {64, 128}, s2[2] = {128, 10}, sx[2] = {8, 64};
    CK(ct_tensor_from_data(&tw1, w1.data_ptr(), s1, 2, CT_FLOAT32, CT_DEVICE_CPU, -1));
    CK(ct_tensor_from_data(&tw2, w2.data_ptr(), s2, 2, CT_FLOAT32, CT_DEVICE_CPU, -1));
    CK(ct_tensor_from_data(&tx, x.data_ptr(), sx, 2, CT_FLOAT32, CT_DEVICE_CPU, -1));
    CK(ct_module_new(&m, "BenchMlp2"));
    CK(ct_module_register_parameter(m, "w1", tw1, 0));
    CK(ct_module_register_parameter(m, "w2", tw2, 0));
    CK(ct_module_define(m, kMlpSrc));
    ct_value *vx = nullptr;
    CK(ct_value_from_tensor(&vx, tx));
    std::vector<c10::IValue> in{x};
    compare("model", "scripted MLP 8x64->128->10",
            {"Module::forward",
             [&] {
               c10::IValue r = cm.forward(in);
               escape(&r);
             }},
            {{"ct_module_forward + value_free",
              [&] {
                ct_value *o = nullptr;
                if (ct_module_forward(&o, m, &vx, 1) != CT_OK) die("ct_module_forward");
                ct_value_free(o);
              }}},
            300, 2.0, {{"ratio", 1.05}});
    ct_value_free(vx);
    ct_tensor_free(tw1);
    ct_tensor_free(tw2);
    ct_tensor_free(tx);
    ct_module_free(m);
  }
  if (!resnet_path.empty() && access(resnet_path.c_str(), R_OK) == 0) {
    torch::jit::Module cm = torch::jit::load(resnet_path);
    cm.eval();
    ct_module *m = nullptr;
    CK(ct_module_load(&m, resnet_path.c_str(), CT_DEVICE_KEEP, -1));
    CK(ct_module_eval(m));
    at::manual_seed(1);
    at::Tensor x = at::randn({1, 3, 224, 224});
    ct_tensor *tx = nullptr;
    const int64_t sx[4] = {1, 3, 224, 224};
    CK(ct_tensor_from_data(&tx, x.data_ptr(), sx, 4, CT_FLOAT32, CT_DEVICE_CPU, -1));
    ct_value *vx = nullptr;
    CK(ct_value_from_tensor(&vx, tx));
    std::vector<c10::IValue> in{x};
    compare("model", "traced resnet18 1x3x224x224",
            {"Module::forward",
             [&] {
               c10::IValue r = cm.forward(in);
               escape(&r);
             }},
            {{"ct_module_forward + value_free",
              [&] {
                ct_value *o = nullptr;
                if (ct_module_forward(&o, m, &vx, 1) != CT_OK) die("ct_module_forward resnet");
                ct_value_free(o);
              }}},
            g_quick ? 40 : 80, 1.0, {{"ratio", 1.02}}, "1 intra-op thread; one forward per round");
    ct_value_free(vx);
    ct_tensor_free(tx);
    ct_module_free(m);
  } else {
    std::printf("  (resnet18 skipped: %s not readable)\n", resnet_path.c_str());
  }
  CK(ct_inference_mode_pop());
}

}  // namespace

int main(int argc, char **argv) {
  return run_main(argc, argv, "model", [] { group_model(g_resnet); });
}
