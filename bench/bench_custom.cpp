// Group 7, custom operators: a kernel written in C and registered through
// ct_library_impl (values) and ct_library_impl_tensors (handles) against the same kernel in a C++
// TORCH_LIBRARY extension, both called through torch's dispatcher (the same typed handle call), on
// 4 floats (the cost of the boxed host kernel: values, handles) and on 1M floats (a loop kernel,
// where that cost should vanish). Built on bench/harness.h; run by bench/run.sh. The C++ kernel is
// in bench_custom_ext.cpp (linked).
#include "harness.h"

#include <cmath>

using namespace bench;

namespace {

// The same loop as a ct_op_fn kernel (what a C user writes against ctorch.h).
ct_status softsign_c(void *, const ct_value *const *args, size_t, ct_value **out) {
  ct_tensor *x = nullptr, *c = nullptr, *y = nullptr;
  ct_status st = ct_value_to_tensor(&x, args[0]);
  if (st == CT_OK) st = ct_tensor_contiguous(&c, x);
  if (st == CT_OK)
    st = ct_tensor_empty(&y, ct_tensor_sizes(c), (size_t)ct_tensor_ndim(c), CT_FLOAT32,
                         CT_DEVICE_CPU, -1, 0);
  if (st == CT_OK) {
    const float *a = (const float *)ct_tensor_data_ptr(c);
    float *b = (float *)ct_tensor_data_ptr(y);
    for (int64_t i = 0, n = ct_tensor_numel(c); i < n; ++i) b[i] = a[i] / (1.0f + std::fabs(a[i]));
    st = ct_value_from_tensor(out, y);
  }
  ct_tensor_free(x);
  ct_tensor_free(c);
  ct_tensor_free(y);
  return st;
}

// The same loop as a tensors-only kernel (ct_library_impl_tensors): handles
// in and out, no values.
ct_status softsign_tensors(void *, const ct_tensor *const *in, size_t, ct_tensor **out, size_t) {
  ct_tensor *c = nullptr;
  ct_status st = ct_tensor_contiguous(&c, in[0]);
  if (st == CT_OK)
    st = ct_tensor_empty(&out[0], ct_tensor_sizes(c), (size_t)ct_tensor_ndim(c), CT_FLOAT32,
                         CT_DEVICE_CPU, -1, 0);
  if (st == CT_OK) {
    const float *a = (const float *)ct_tensor_data_ptr(c);
    float *b = (float *)ct_tensor_data_ptr(out[0]);
    for (int64_t i = 0, n = ct_tensor_numel(c); i < n; ++i) b[i] = a[i] / (1.0f + std::fabs(a[i]));
  }
  ct_tensor_free(c);
  return st;
}

}  // namespace

namespace {

void group_custom() {
  header("custom operator kernels: C through ct_library vs a C++ TORCH_LIBRARY extension");
  at::set_num_threads(1);
  ct_library *lib = nullptr;
  CK(ct_library_new(&lib, "ctbench_c"));
  CK(ct_library_define(lib, "softsign(Tensor x) -> Tensor", nullptr, 0));
  CK(ct_library_impl(lib, "softsign", "CPU", softsign_c, nullptr, nullptr, 0));
  CK(ct_library_define(lib, "softsign_t(Tensor x) -> Tensor", nullptr, 0));
  CK(ct_library_impl_tensors(lib, "softsign_t", "CPU", softsign_tensors, nullptr, nullptr, 0));
  auto cpp_op = c10::Dispatcher::singleton()
                    .findSchemaOrThrow("ctbench_cpp::softsign", "")
                    .typed<at::Tensor(const at::Tensor &)>();
  auto c_op = c10::Dispatcher::singleton()
                  .findSchemaOrThrow("ctbench_c::softsign", "")
                  .typed<at::Tensor(const at::Tensor &)>();
  auto t_op = c10::Dispatcher::singleton()
                  .findSchemaOrThrow("ctbench_c::softsign_t", "")
                  .typed<at::Tensor(const at::Tensor &)>();
  for (int64_t n : {int64_t(4), int64_t(1) << 20}) {
    at::Tensor x = at::randn({n});
    if (!at::allclose(cpp_op.call(x), c_op.call(x)) || !at::allclose(cpp_op.call(x), t_op.call(x)))
      die("the kernels differ");
    const bool small = n == 4;
    compare("custom",
            small ? "custom op softsign 4 floats (dispatcher call)"
                  : "custom op softsign 1M floats (dispatcher call)",
            {"C++ TORCH_LIBRARY kernel",
             [&] {
               at::Tensor y = cpp_op.call(x);
               escape(y.unsafeGetTensorImpl());
             }},
            {{"C kernel via ct_library_impl",
              [&] {
                at::Tensor y = c_op.call(x);
                escape(y.unsafeGetTensorImpl());
              }},
             {"C tensors-only kernel via ct_library_impl_tensors",
              [&] {
                at::Tensor y = t_op.call(x);
                escape(y.unsafeGetTensorImpl());
              }}},
            g_quick ? 15 : 41, small ? 20.0 : 80.0,
            {{"ratio", small ? 1.5 : 1.2}, {"ratio", small ? 1.1 : 1.2}},
            small ? "the boxed host kernel's cost: the stack as ct_values, a handle per tensor, "
                    "the result checked against the schema"
                  : "a loop kernel over 1M floats: the boxing cost is amortized");
  }
  ct_library_free(lib);
}

}  // namespace

int main(int argc, char **argv) { return run_main(argc, argv, "custom", group_custom); }
