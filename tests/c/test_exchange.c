/* One-call exchanges: ct_tensor_wrap (memory + deleter or release
 * queue in one struct, handle + metadata out) and ct_tensor_ref_info (a new
 * handle + metadata); ct_tensor_free_slot. Zero copy by pointer equality and a write seen on the
 * other side; deleters counted; NULL and bad inputs give status + message
 * and leave the outputs and the memory's owner untouched. */
#include "test_util.h"

static int deleted;
static void *deleted_ctx;
static void count_deleter(void *data, void *ctx) {
  (void)data;
  deleted++;
  deleted_ctx = ctx;
}

static ct_tensor_info new_info(void) {
  ct_tensor_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  return info;
}

static ct_blob new_blob(void *data, const int64_t *sizes, int64_t ndim, int32_t dtype) {
  ct_blob b;
  memset(&b, 0, sizeof b);
  b.size = sizeof b;
  b.data = data;
  b.sizes = sizes;
  b.ndim = ndim;
  b.dtype = dtype;
  b.device_type = CT_DEVICE_CPU;
  b.device_index = -1;
  return b;
}

static void test_wrap_zero_copy_and_info(void **state) {
  (void)state;
  float d[6] = {0, 1, 2, 3, 4, 5};
  int64_t sizes[2] = {2, 3};
  ct_blob b = new_blob(d, sizes, 2, CT_FLOAT32);
  b.deleter = count_deleter;
  b.ctx = &b;
  deleted = 0;
  ct_tensor *t = NULL;
  ct_tensor_info info = new_info();
  CT_OK_OR_FAIL(ct_tensor_wrap(&t, &info, &b));
  assert_ptr_equal(ct_tensor_data_ptr(t), d);
  assert_ptr_equal(info.data, d);
  assert_int_equal(info.dtype, CT_FLOAT32);
  assert_int_equal(info.device_type, CT_DEVICE_CPU);
  assert_int_equal(info.ndim, 2);
  assert_int_equal(info.numel, 6);
  assert_int_equal(info.is_contiguous, 1);
  assert_int_equal(info.requires_grad, 0);
  assert_int_equal(info.sizes[1], 3);
  assert_int_equal(info.strides[0], 3);
  assert_ptr_equal(info.sizes, ct_tensor_sizes(t)); /* borrowed from the new handle */
  sizes[1] = 99;                                    /* copied: the tensor keeps 3 */
  assert_int_equal(ct_tensor_sizes(t)[1], 3);
  CT_OK_OR_FAIL(ct_tensor_fill_(t, 7.0)); /* a write through torch is seen in d */
  assert_true(d[5] == 7.0f);
  d[0] = -1; /* and a write to d is seen by torch */
  assert_true(((const float *)ct_tensor_data_ptr(t))[0] == -1.0f);
  assert_int_equal(deleted, 0);
  ct_tensor_free(t);
  assert_int_equal(deleted, 1);
  assert_ptr_equal(deleted_ctx, &b);
}

static void test_wrap_byte_strides_grad_null_info(void **state) {
  (void)state;
  double d[6] = {0, 1, 2, 3, 4, 5};
  int64_t sizes[2] = {3, 2};
  int64_t bstrides[2] = {8, 24}; /* a transposed 2x3 (numpy's a.T strides, in bytes) */
  ct_blob b = new_blob(d, sizes, 2, CT_FLOAT64);
  b.strides = bstrides;
  b.flags = CT_BLOB_BYTE_STRIDES | CT_BLOB_REQUIRES_GRAD;
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_tensor_wrap(&t, NULL, &b)); /* info may be NULL */
  assert_int_equal(ct_tensor_strides(t)[0], 1);
  assert_int_equal(ct_tensor_strides(t)[1], 3);
  assert_int_equal(ct_tensor_requires_grad(t), 1);
  assert_int_equal(ct_tensor_is_contiguous(t), 0);
  ct_tensor_free(t); /* no deleter: nothing to call */

  /* A 0-d tensor: sizes NULL with ndim 0. */
  float one = 3;
  ct_blob s = new_blob(&one, NULL, 0, CT_FLOAT32);
  ct_tensor_info info = new_info();
  CT_OK_OR_FAIL(ct_tensor_wrap(&t, &info, &s));
  assert_int_equal(info.ndim, 0);
  assert_int_equal(info.numel, 1);
  ct_tensor_free(t);
}

static void test_wrap_queued(void **state) {
  (void)state;
  int32_t d[4] = {1, 2, 3, 4};
  int64_t n = 4;
  void *drained[16];
  size_t k = 0;
  CT_OK_OR_FAIL(ct_release_queue_poll(drained, 16, &k)); /* start empty */
  ct_blob b = new_blob(d, &n, 1, CT_INT32);
  b.flags = CT_BLOB_QUEUED;
  b.ctx = (void *)(uintptr_t)0x5151;
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_tensor_wrap(&t, NULL, &b));
  ct_tensor *r = NULL;
  CT_OK_OR_FAIL(ct_tensor_ref(&r, t));
  ct_tensor_free(t);
  assert_int_equal(ct_release_queue_length(), 0); /* r still uses the memory */
  ct_tensor_free(r);
  CT_OK_OR_FAIL(ct_release_queue_poll(drained, 16, &k));
  assert_int_equal(k, 1);
  assert_ptr_equal(drained[0], (void *)(uintptr_t)0x5151);
}

static void test_wrap_errors(void **state) {
  (void)state;
  float d[4] = {0};
  int64_t sizes[1] = {4};
  int64_t neg[1] = {-1};
  int64_t odd_bytes[1] = {6};
  ct_tensor *const sentinel = (ct_tensor *)(uintptr_t)0x1;
  ct_tensor *t = sentinel;
  ct_tensor_info info = new_info();
  info.ndim = 1234; /* untouched on failure */
  ct_blob b = new_blob(d, sizes, 1, CT_FLOAT32);
  b.deleter = count_deleter;
  deleted = 0;

  CT_EXPECT_ERROR(ct_tensor_wrap(NULL, &info, &b), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_tensor_wrap(&t, &info, NULL), CT_ERR_INVALID_ARGUMENT, "'blob' is NULL");
  ct_blob bad = b;
  bad.size = 8;
  CT_EXPECT_ERROR(ct_tensor_wrap(&t, &info, &bad), CT_ERR_INVALID_ARGUMENT, "blob->size is 8");
  ct_tensor_info small = new_info();
  small.size = 4;
  CT_EXPECT_ERROR(ct_tensor_wrap(&t, &small, &b), CT_ERR_INVALID_ARGUMENT, "info->size is 4");
  bad = b;
  bad.flags = 64;
  CT_EXPECT_ERROR(ct_tensor_wrap(&t, &info, &bad), CT_ERR_INVALID_ARGUMENT, "unknown bits");
  bad = b;
  bad.flags = CT_BLOB_QUEUED;
  CT_EXPECT_ERROR(ct_tensor_wrap(&t, &info, &bad), CT_ERR_INVALID_ARGUMENT,
                  "must be NULL with CT_BLOB_QUEUED");
  bad = b;
  bad.ndim = -1;
  CT_EXPECT_ERROR(ct_tensor_wrap(&t, &info, &bad), CT_ERR_INVALID_ARGUMENT, "ndim is negative");
  bad = b;
  bad.dtype = 9999;
  CT_EXPECT_ERROR(ct_tensor_wrap(&t, &info, &bad), CT_ERR_TYPE, "dtype");
  bad = b;
  bad.dtype = CT_INT64;
  bad.flags = CT_BLOB_REQUIRES_GRAD;
  CT_EXPECT_ERROR(ct_tensor_wrap(&t, &info, &bad), CT_ERR_TYPE, "floating or complex");
  bad = b;
  bad.sizes = neg;
  CT_EXPECT_ERROR(ct_tensor_wrap(&t, &info, &bad), CT_ERR_INVALID_ARGUMENT, "negative");
  bad = b;
  bad.data = NULL;
  CT_EXPECT_ERROR(ct_tensor_wrap(&t, &info, &bad), CT_ERR_INVALID_ARGUMENT, "'data' is NULL");
  bad = b;
  bad.strides = odd_bytes;
  bad.flags = CT_BLOB_BYTE_STRIDES;
  CT_EXPECT_ERROR(ct_tensor_wrap(&t, &info, &bad), CT_ERR_INVALID_ARGUMENT,
                  "not a multiple of the element size");
  bad = b;
  bad.strides = neg;
  CT_EXPECT_ERROR(ct_tensor_wrap(&t, &info, &bad), CT_ERR_INVALID_ARGUMENT, "negative");
  /* Outputs untouched, the deleter never called: the caller still owns d. */
  assert_ptr_equal(t, sentinel);
  assert_int_equal(info.ndim, 1234);
  assert_int_equal(deleted, 0);
}

static void test_ref_info(void **state) {
  (void)state;
  float d[6] = {0, 1, 2, 3, 4, 5};
  int64_t sizes[2] = {2, 3};
  ct_tensor *x = test_tensor_f32(d, sizes, 2);
  ct_tensor *r = NULL;
  ct_tensor_info info = new_info();
  CT_OK_OR_FAIL(ct_tensor_ref_info(&r, &info, x));
  assert_ptr_not_equal(r, x);
  assert_ptr_equal(info.data, ct_tensor_data_ptr(x)); /* the same memory */
  assert_int_equal(info.numel, 6);
  assert_int_equal(info.ndim, 2);
  assert_int_equal(info.dtype, CT_FLOAT32);
  assert_int_equal(info.is_contiguous, 1);
  assert_ptr_equal(info.sizes, ct_tensor_sizes(r));
  ct_tensor_free(x); /* the new handle keeps the memory alive */
  ((float *)info.data)[2] = 42;
  assert_true(((const float *)ct_tensor_data_ptr(r))[2] == 42.0f);
  assert_int_equal(ct_tensor_sizes(r)[1], 3);

  ct_tensor *const sentinel = (ct_tensor *)(uintptr_t)0x1;
  ct_tensor *o = sentinel;
  CT_EXPECT_ERROR(ct_tensor_ref_info(NULL, &info, r), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_tensor_ref_info(&o, NULL, r), CT_ERR_INVALID_ARGUMENT, "'info' is NULL");
  CT_EXPECT_ERROR(ct_tensor_ref_info(&o, &info, NULL), CT_ERR_INVALID_ARGUMENT, "'t' is NULL");
  ct_tensor_info small = new_info();
  small.size = 3;
  CT_EXPECT_ERROR(ct_tensor_ref_info(&o, &small, r), CT_ERR_INVALID_ARGUMENT, "info->size is 3");
  assert_ptr_equal(o, sentinel);
  ct_tensor_free(r);
}

static void test_free_slot(void **state) {
  (void)state;
  float d[2] = {1, 2};
  int64_t n = 2;
  ct_blob b = new_blob(d, &n, 1, CT_FLOAT32);
  b.deleter = count_deleter;
  deleted = 0;
  /* A host object whose first field is the handle, as Julia's Tensor. */
  struct host_object {
    ct_tensor *handle;
    int other;
  } obj = {NULL, 7};
  CT_OK_OR_FAIL(ct_tensor_wrap(&obj.handle, NULL, &b));
  ct_tensor_free_slot(&obj.handle);
  assert_null(obj.handle);
  assert_int_equal(obj.other, 7);
  assert_int_equal(deleted, 1); /* the last handle: the memory was released */
  ct_tensor_free_slot(&obj.handle); /* freed already (NULL): nothing happens */
  ct_tensor_free_slot(NULL);
  assert_int_equal(deleted, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wrap_zero_copy_and_info),
      cmocka_unit_test(test_wrap_byte_strides_grad_null_info),
      cmocka_unit_test(test_wrap_queued),
      cmocka_unit_test(test_wrap_errors),
      cmocka_unit_test(test_ref_info),
      cmocka_unit_test(test_free_slot),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
