// What every distributed call (ct_store_*, ct_process_group_*, collectives,
// ct_work_*, ct_ddp_*) returns where ctorch is built without c10d (no Gloo or
// NCCL headers for this LibTorch, or CTORCH_WITH_DISTRIBUTED=OFF; CMake
// compiles this file instead of the distributed ones): CT_ERR_NOT_SUPPORTED.
#include "internal.h"

#define CT_NO_C10D(...)                                                            \
  return ct::set_error(CT_ERR_NOT_SUPPORTED,                                       \
                       "%s: this ctorch was built against a LibTorch without its " \
                       "distributed engine (c10d)",                                \
                       __func__)
extern "C" {
int32_t ct_distributed_is_compiled(void) { return 0; }
int32_t ct_distributed_has_backend(const char *) { return 0; }
ct_status ct_store_new_tcp(ct_store **out, const char *, int32_t, int32_t, int32_t, double) {
  if (out) *out = nullptr;
  CT_NO_C10D();
}
ct_status ct_store_new_file(ct_store **out, const char *, int32_t, double) {
  if (out) *out = nullptr;
  CT_NO_C10D();
}
ct_status ct_store_new_prefix(ct_store **out, ct_store *, const char *) {
  if (out) *out = nullptr;
  CT_NO_C10D();
}
ct_status ct_store_port(int32_t *, const ct_store *) { CT_NO_C10D(); }
ct_status ct_store_set(ct_store *, const char *, const void *, size_t) { CT_NO_C10D(); }
ct_status ct_store_get(void **, size_t *, ct_store *, const char *) { CT_NO_C10D(); }
ct_status ct_store_add(int64_t *, ct_store *, const char *, int64_t) { CT_NO_C10D(); }
void ct_store_free(ct_store *) {}
ct_status ct_process_group_new(ct_process_group **out, ct_store *, const char *, int32_t, int32_t,
                               double) {
  if (out) *out = nullptr;
  CT_NO_C10D();
}
ct_status ct_process_group_new_from_env(ct_process_group **out, const char *, double) {
  if (out) *out = nullptr;
  CT_NO_C10D();
}
ct_status ct_process_group_new_from_url(ct_process_group **out, const char *, const char *, int32_t,
                                        int32_t, double) {
  if (out) *out = nullptr;
  CT_NO_C10D();
}
ct_status ct_process_group_new_subgroup(ct_process_group **out, ct_process_group *, const int32_t *,
                                        size_t, double) {
  if (out) *out = nullptr;
  CT_NO_C10D();
}
int32_t ct_process_group_rank(const ct_process_group *) { return -1; }
int32_t ct_process_group_size(const ct_process_group *) { return -1; }
void ct_process_group_free(ct_process_group *) {}
ct_status ct_process_group_all_reduce(ct_work **, ct_process_group *, ct_tensor *, int32_t) { CT_NO_C10D(); }
ct_status ct_process_group_broadcast(ct_work **, ct_process_group *, ct_tensor *, int32_t) { CT_NO_C10D(); }
ct_status ct_process_group_all_gather(ct_work **, ct_process_group *, ct_tensor *const *, const ct_tensor *) {
  CT_NO_C10D();
}
ct_status ct_process_group_all_to_all(ct_work **, ct_process_group *, ct_tensor *const *,
                                      const ct_tensor *const *) {
  CT_NO_C10D();
}
ct_status ct_process_group_reduce_scatter(ct_work **, ct_process_group *, ct_tensor *,
                                          const ct_tensor *const *, int32_t) {
  CT_NO_C10D();
}
ct_status ct_process_group_barrier(ct_work **, ct_process_group *) { CT_NO_C10D(); }
ct_status ct_process_group_send(ct_work **, ct_process_group *, const ct_tensor *, int32_t, int32_t) { CT_NO_C10D(); }
ct_status ct_process_group_recv(ct_work **, ct_process_group *, ct_tensor *, int32_t, int32_t) { CT_NO_C10D(); }
ct_status ct_work_wait(ct_work *, double) { CT_NO_C10D(); }
ct_status ct_work_is_completed(int32_t *, ct_work *) { CT_NO_C10D(); }
ct_status ct_work_source_rank(int32_t *, ct_work *) { CT_NO_C10D(); }
void ct_work_free(ct_work *) {}
}  // extern "C"

extern "C" {
ct_status ct_ddp_new(ct_ddp **out, ct_process_group *, const ct_tensor *const *, size_t,
                     const ct_tensor *const *, size_t, double, int32_t) {
  if (out) *out = nullptr;
  return ct::set_error(CT_ERR_NOT_SUPPORTED, "ct_ddp_new: this ctorch has no c10d");
}
ct_status ct_ddp_new_module(ct_ddp **out, ct_process_group *, ct_module *, double, int32_t) {
  if (out) *out = nullptr;
  return ct::set_error(CT_ERR_NOT_SUPPORTED, "ct_ddp_new_module: this ctorch has no c10d");
}
ct_status ct_ddp_prepare_backward(ct_ddp *, const ct_tensor *const *, size_t) {
  return ct::set_error(CT_ERR_NOT_SUPPORTED, "ct_ddp_prepare_backward: this ctorch has no c10d");
}
void ct_ddp_free(ct_ddp *) {}
}
