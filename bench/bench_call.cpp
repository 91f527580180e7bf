// Group 1, call overhead: accessors, create/free, from_blob, DLPack, a small aten::add and
// error paths, each ctorch call next to the same work written directly in C++ LibTorch.
// Built on bench/harness.h; run by bench/run.sh. Options: see harness.h.
#include "harness.h"

using namespace bench;

namespace {

void group_call() {
  header("call overhead: C ABI vs C++ LibTorch");
  at::set_num_threads(1);
  const float xa[4] = {1, 2, 3, 4}, xb[4] = {10, 20, 30, 40};
  const int64_t sz[1] = {4};
  ct_tensor *ta = nullptr, *tb = nullptr;
  CK(ct_tensor_from_data(&ta, xa, sz, 1, CT_FLOAT32, CT_DEVICE_CPU, -1));
  CK(ct_tensor_from_data(&tb, xb, sz, 1, CT_FLOAT32, CT_DEVICE_CPU, -1));
  at::Tensor a = torch::from_blob(const_cast<float *>(xa), {4}).clone();
  at::Tensor b = torch::from_blob(const_cast<float *>(xb), {4}).clone();
  const int R = 300;
  const double MS = 2.0;

  // Accessors: the C++ floor is the inlined member call; the ctorch side is an
  // exported call through the PLT. Target: within 2 ns.
  compare("call", "data pointer", {"t.data_ptr()", [&] { escape(a.data_ptr()); }},
          {{"ct_tensor_data_ptr", [&] { escape(ct_tensor_data_ptr(ta)); }}}, R, MS,
          {{"diff_ns", 2.0}});
  compare("call", "ndim", {"t.dim()", [&] { escape(a.dim()); }},
          {{"ct_tensor_ndim", [&] { escape(ct_tensor_ndim(ta)); }}}, R, MS, {{"diff_ns", 2.0}});
  compare("call", "sizes", {"t.sizes().data()", [&] { escape(a.sizes().data()); }},
          {{"ct_tensor_sizes", [&] { escape(ct_tensor_sizes(ta)); }}}, R, MS, {{"diff_ns", 2.0}});

  // Create and free.
  const int64_t s2[2] = {2, 3};
  compare("call", "empty 2x3 create+free",
          {"at::empty + ~Tensor",
           [&] {
             at::Tensor t = at::empty({2, 3}, at::TensorOptions().dtype(at::kFloat));
             escape(t.unsafeGetTensorImpl());
           }},
          {{"ct_tensor_empty + ct_tensor_free",
            [&] {
              ct_tensor *t = nullptr;
              ct_tensor_empty(&t, s2, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0);
              ct_tensor_free(t);
            }}},
          R, MS);
  static float blob[1024];
  compare("call", "from_blob wrap+free (no deleter)",
          {"torch::from_blob + ~Tensor",
           [&] {
             at::Tensor t = torch::from_blob(blob, {2, 3});
             escape(t.unsafeGetTensorImpl());
           }},
          {{"ct_tensor_from_blob + free",
            [&] {
              ct_tensor *t = nullptr;
              ct_tensor_from_blob(&t, blob, s2, 2, nullptr, CT_FLOAT32, CT_DEVICE_CPU, -1, nullptr,
                                  nullptr);
              ct_tensor_free(t);
            }}},
          R, MS);
  compare(
      "call", "from_blob wrap+free (deleter)",
      {"torch::from_blob(deleter) + ~Tensor",
       [&] {
         at::Tensor t = torch::from_blob(blob, {2, 3}, [](void *p) { noop_deleter(p, nullptr); });
         escape(t.unsafeGetTensorImpl());
       }},
      {{"ct_tensor_from_blob(deleter) + free",
        [&] {
          ct_tensor *t = nullptr;
          ct_tensor_from_blob(&t, blob, s2, 2, nullptr, CT_FLOAT32, CT_DEVICE_CPU, -1, noop_deleter,
                              nullptr);
          ct_tensor_free(t);
        }}},
      R, MS);

  // DLPack.
  compare("call", "DLPack export+free",
          {"at::toDLPack + deleter",
           [&] {
             DLManagedTensor *m = at::toDLPack(a);
             m->deleter(m);
           }},
          {{"ct_tensor_to_dlpack + deleter",
            [&] {
              DLManagedTensor *m = nullptr;
              ct_tensor_to_dlpack(&m, ta, 0, -1);
              m->deleter(m);
            }},
           {"ct_tensor_to_dlpack_versioned + deleter",
            [&] {
              DLManagedTensorVersioned *m = nullptr;
              ct_tensor_to_dlpack_versioned(&m, ta, 0, -1);
              m->deleter(m);
            }}},
          R, MS);
  // Import: a hand-made capsule over static memory with a no-op deleter, so
  // both sides pay only the import and the free.
  static int64_t dl_shape[2] = {2, 3};
  auto make_dl = [](DLManagedTensor *m) {
    std::memset(m, 0, sizeof *m);
    m->dl_tensor.data = blob;
    m->dl_tensor.device.device_type = kDLCPU;
    m->dl_tensor.ndim = 2;
    m->dl_tensor.dtype.code = kDLFloat;
    m->dl_tensor.dtype.bits = 32;
    m->dl_tensor.dtype.lanes = 1;
    m->dl_tensor.shape = dl_shape;
    m->deleter = noop_dl_deleter;
  };
  DLManagedTensor dl1, dl2;
  make_dl(&dl1);
  make_dl(&dl2);
  compare("call", "DLPack import+free",
          {"at::fromDLPack + ~Tensor",
           [&] {
             at::Tensor t = at::fromDLPack(&dl1);
             escape(t.unsafeGetTensorImpl());
           }},
          {{"ct_tensor_from_dlpack + free",
            [&] {
              ct_tensor *t = nullptr;
              ct_tensor_from_dlpack(&t, &dl2);
              ct_tensor_free(t);
            }}},
          R, MS);

  // Small op.
  ct_value *va = nullptr, *vb = nullptr;
  CK(ct_value_from_tensor(&va, ta));
  CK(ct_value_from_tensor(&vb, tb));
  const ct_value *args[2] = {va, vb};
  ct_op *op = nullptr, *opset = nullptr;
  CK(ct_op_find(&op, "aten::add", "Tensor"));
  CK(ct_op_find(&opset, "aten::add", nullptr));
  compare("call", "aten::add 4 floats",
          {"torch::add",
           [&] {
             at::Tensor r = torch::add(a, b);
             escape(r.unsafeGetTensorImpl());
           }},
          {{"ct_op_call (cached ct_op) + value_free",
            [&] {
              ct_value *out = nullptr;
              if (ct_op_call(&out, op, args, 2, nullptr, nullptr, 0) != CT_OK) die("ct_op_call");
              ct_value_free(out);
            }},
           {"ct_op_call_name + value_free",
            [&] {
              ct_value *out = nullptr;
              if (ct_op_call_name(&out, "aten::add.Tensor", args, 2, nullptr, nullptr, 0) != CT_OK)
                die("ct_op_call_name");
              ct_value_free(out);
            }},
           {"ct_op_call (overload set) + value_free",
            [&] {
              ct_value *out = nullptr;
              if (ct_op_call(&out, opset, args, 2, nullptr, nullptr, 0) != CT_OK)
                die("ct_op_call set");
              ct_value_free(out);
            }},
           {"ct_op_call_tensors (cached ct_op) + tensor_free",
            [&] {
              ct_tensor *t = nullptr;
              const ct_tensor *ins[2] = {ta, tb};
              if (ct_op_call_tensors(&t, 1, op, ins, 2) != CT_OK) die("ct_op_call_tensors");
              ct_tensor_free(t);
            }},
           {"ct_op_call + ct_value_to_tensor + frees",
            [&] {
              ct_value *out = nullptr;
              ct_tensor *t = nullptr;
              if (ct_op_call(&out, op, args, 2, nullptr, nullptr, 0) != CT_OK) die("ct_op_call");
              ct_value_to_tensor(&t, out);
              ct_value_free(out);
              ct_tensor_free(t);
            }}},
          2 * R, MS, {{"ratio", 1.05}, {"ratio", 1.05}, {"", 0}, {"ratio", 1.05}, {"", 0}},
          "tensors in, values prebuilt once");

  // Error paths. The C++ floor catches the same LibTorch failure and reads
  // what(); ctorch's process-wide empty stack-trace fetcher applies to both.
  compare("call", "error: load missing file",
          {"try torch::jit::load catch",
           [&] {
             try {
               torch::jit::load("/nonexistent/ctorch-bench.pt");
             } catch (const std::exception &e) {
               escape(e.what());
             }
           }},
          {{"ct_module_load + ct_last_error",
            [&] {
              ct_module *m = nullptr;
              if (ct_module_load(&m, "/nonexistent/ctorch-bench.pt", CT_DEVICE_KEEP, -1) == CT_OK)
                die("load should fail");
              escape(std::strlen(ct_last_error()));
            }}},
          60, 4.0, {{"abs_ns", 20000}});
  // A file that exists but is not an archive: here LibTorch itself raises.
  char junk[] = "/tmp/ctorch-bench-junk-XXXXXX";
  int fd = mkstemp(junk);
  if (fd < 0 || write(fd, "not a zip archive\n", 18) != 18) die("mkstemp");
  close(fd);
  compare("call", "error: load corrupt file",
          {"try torch::jit::load catch",
           [&] {
             try {
               torch::jit::load(junk);
             } catch (const std::exception &e) {
               escape(e.what());
             }
           }},
          {{"ct_module_load + ct_last_error",
            [&] {
              ct_module *m = nullptr;
              if (ct_module_load(&m, junk, CT_DEVICE_KEEP, -1) == CT_OK) die("load should fail");
              escape(std::strlen(ct_last_error()));
            }}},
          60, 4.0, {{"abs_ns", 20000}});
  unlink(junk);
  ct_tensor *t3 = nullptr;
  const int64_t s3[1] = {3};
  CK(ct_tensor_zeros(&t3, s3, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  at::Tensor a3 = at::zeros({3});
  compare("call", "error: copy_ shape mismatch",
          {"try t.copy_(src) catch",
           [&] {
             try {
               a3.copy_(a);
             } catch (const std::exception &e) {
               escape(e.what());
             }
           }},
          {{"ct_tensor_copy_ + ct_last_error",
            [&] {
              if (ct_tensor_copy_(t3, ta, 0) == CT_OK) die("copy_ should fail");
              escape(std::strlen(ct_last_error()));
            }}},
          60, 4.0, {{"abs_ns", 20000}});
  single("call", "error: NULL argument (validated)",
         {"ct_tensor_clone(NULL out) + ct_last_error",
          [&] {
            if (ct_tensor_clone(nullptr, ta) == CT_OK) die("clone should fail");
            escape(std::strlen(ct_last_error()));
          }},
         R, MS, "abs_ns", 1000);
  single("call", "error: NULL op handle (validated)",
         {"ct_op_call(op=NULL) + ct_last_error",
          [&] {
            ct_value *out = nullptr;
            if (ct_op_call(&out, nullptr, args, 2, nullptr, nullptr, 0) == CT_OK) die("op NULL");
            escape(std::strlen(ct_last_error()));
          }},
         R, MS, "abs_ns", 1000);
  ct_clear_error();

  ct_op_free(op);
  ct_op_free(opset);
  ct_value_free(va);
  ct_value_free(vb);
  ct_tensor_free(ta);
  ct_tensor_free(tb);
  ct_tensor_free(t3);
}

}  // namespace

int main(int argc, char **argv) {
  return run_main(argc, argv, "call", [] { group_call(); });
}
