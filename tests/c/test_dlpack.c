/* DLPack in both directions, legacy and versioned: zero copy, deleters
 * counted on success and failure, byte_offset, NULL strides, flags, dtypes. */
#include "test_util.h"

static const int64_t SZ23[2] = {2, 3};

/* ---- A foreign producer with a counted deleter (test_util.h) ------------ */
#define producer_deletes (*test_dl_deletes())
#define make_versioned test_dl_versioned
#define make_legacy(data, ndim, shape) test_dl_legacy((data), (ndim), (shape), NULL)

/* ---- Import ------------------------------------------------------------------ */

static void test_import_versioned_zero_copy(void **state) {
  (void)state;
  float data[6] = {1, 2, 3, 4, 5, 6};
  producer_deletes = 0;
  ct_tensor *t = NULL, *t2 = NULL;
  CT_OK_OR_FAIL(
      ct_tensor_from_dlpack_versioned(&t, make_versioned(data, kDLFloat, 32, 2, SZ23, NULL, 0, 0)));
  assert_ptr_equal(ct_tensor_data_ptr(t), data);
  assert_int_equal(ct_tensor_dtype(t), CT_FLOAT32);
  assert_int_equal(ct_tensor_sizes(t)[1], 3);
  CT_OK_OR_FAIL(ct_tensor_fill_(t, 3.0)); /* torch writes, producer sees it */
  assert_true(data[4] == 3.0f);
  data[0] = -5; /* producer writes, torch sees it */
  assert_true(((float *)ct_tensor_data_ptr(t))[0] == -5.0f);
  CT_OK_OR_FAIL(ct_tensor_ref(&t2, t));
  ct_tensor_free(t);
  assert_int_equal(producer_deletes, 0);
  ct_tensor_free(t2);
  assert_int_equal(producer_deletes, 1);
}

static void test_import_legacy_null_strides(void **state) {
  (void)state;
  float data[6] = {0, 1, 2, 3, 4, 5};
  producer_deletes = 0;
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_dlpack(&t, make_legacy(data, 2, SZ23)));
  assert_ptr_equal(ct_tensor_data_ptr(t), data);
  assert_int_equal(ct_tensor_strides(t)[0], 3);
  assert_int_equal(ct_tensor_is_contiguous(t), 1);
  ct_tensor_free(t);
  assert_int_equal(producer_deletes, 1);
}

static void test_import_byte_offset_and_strides(void **state) {
  (void)state;
  double data[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  int64_t shape[2] = {2, 2}, strides[2] = {1, 2}; /* transposed 2x2 */
  producer_deletes = 0;
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_dlpack_versioned(
      &t, make_versioned(data, kDLFloat, 64, 2, shape, strides, 4 * sizeof(double), 0)));
  assert_ptr_equal(ct_tensor_data_ptr(t), data + 4);
  assert_int_equal(ct_tensor_strides(t)[0], 1);
  assert_int_equal(ct_tensor_strides(t)[1], 2);
  ct_tensor *c = NULL;
  CT_OK_OR_FAIL(ct_tensor_contiguous(&c, t));
  double *cd = ct_tensor_data_ptr(c);
  assert_true(cd[0] == 4 && cd[1] == 6 && cd[2] == 5 && cd[3] == 7);
  ct_tensor_free(c);
  ct_tensor_free(t);
  assert_int_equal(producer_deletes, 1);
}

static void test_import_dtypes(void **state) {
  (void)state;
  struct {
    uint8_t code, bits;
    int32_t dtype;
  } cases[] = {
      {kDLBool, 8, CT_BOOL},      {kDLUInt, 8, CT_UINT8},         {kDLInt, 8, CT_INT8},
      {kDLInt, 16, CT_INT16},     {kDLInt, 32, CT_INT32},         {kDLInt, 64, CT_INT64},
      {kDLFloat, 16, CT_FLOAT16}, {kDLBfloat, 16, CT_BFLOAT16},   {kDLFloat, 32, CT_FLOAT32},
      {kDLFloat, 64, CT_FLOAT64}, {kDLComplex, 64, CT_COMPLEX64}, {kDLComplex, 128, CT_COMPLEX128}};
  static uint8_t buf[64];
  int64_t shape[1] = {2};
  producer_deletes = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    ct_tensor *t = NULL;
    CT_OK_OR_FAIL(ct_tensor_from_dlpack_versioned(
        &t, make_versioned(buf, cases[i].code, cases[i].bits, 1, shape, NULL, 0, 0)));
    assert_int_equal(ct_tensor_dtype(t), cases[i].dtype);
    /* And back out: the same code and bits. */
    DLManagedTensorVersioned *out = NULL;
    CT_OK_OR_FAIL(ct_tensor_to_dlpack_versioned(&out, t, 0, -1));
    assert_int_equal(out->dl_tensor.dtype.code, cases[i].code);
    assert_int_equal(out->dl_tensor.dtype.bits, cases[i].bits);
    assert_ptr_equal(out->dl_tensor.data, buf);
    ct_tensor_free(t);
    out->deleter(out);
  }
  assert_int_equal(producer_deletes, 12);
}

static void test_import_failures_delete_once(void **state) {
  (void)state;
  float data[6] = {0};
  int64_t neg[1] = {-2};
  ct_tensor *t = NULL;
  producer_deletes = 0;
  CT_EXPECT_ERROR(
      ct_tensor_from_dlpack_versioned(&t, make_versioned(data, kDLFloat, 24, 2, SZ23, NULL, 0, 0)),
      CT_ERR_TYPE, "unsupported DLPack dtype (code 2, bits 24");
  assert_int_equal(producer_deletes, 1);
  CT_EXPECT_ERROR(ct_tensor_from_dlpack_versioned(
                      &t, make_versioned(data, kDLOpaqueHandle, 8, 2, SZ23, NULL, 0, 0)),
                  CT_ERR_TYPE, "unsupported DLPack dtype");
  assert_int_equal(producer_deletes, 2);
  CT_EXPECT_ERROR(
      ct_tensor_from_dlpack_versioned(&t, make_versioned(data, kDLFloat, 32, 1, neg, NULL, 0, 0)),
      CT_ERR_INVALID_ARGUMENT, "negative size");
  assert_int_equal(producer_deletes, 3);
  DLManagedTensorVersioned *m = make_versioned(data, kDLFloat, 32, 2, SZ23, NULL, 0, 0);
  m->version.major = 2;
  CT_EXPECT_ERROR(ct_tensor_from_dlpack_versioned(&t, m), CT_ERR_NOT_SUPPORTED,
                  "DLPack version 2.0 is not supported");
  assert_int_equal(producer_deletes, 4);
  m = make_versioned(data, kDLFloat, 32, 2, SZ23, NULL, 0, 0);
  m->dl_tensor.device.device_type = kDLVulkan;
  CT_EXPECT_ERROR(ct_tensor_from_dlpack_versioned(&t, m), CT_ERR_NOT_SUPPORTED,
                  "unsupported DLPack device type 7");
  assert_int_equal(producer_deletes, 5);
  if (!ct_cuda_is_available()) {
    m = make_versioned(data, kDLFloat, 32, 2, SZ23, NULL, 0, 0);
    m->dl_tensor.device.device_type = kDLCUDA;
    CT_EXPECT_ERROR(ct_tensor_from_dlpack_versioned(&t, m), CT_ERR_NOT_SUPPORTED, "CUDA");
    assert_int_equal(producer_deletes, 6);
  } else {
    producer_deletes++;
  }
  CT_EXPECT_ERROR(ct_tensor_from_dlpack_versioned(
                      NULL, make_versioned(data, kDLFloat, 32, 2, SZ23, NULL, 0, 0)),
                  CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  assert_int_equal(producer_deletes, 7);
  CT_EXPECT_ERROR(ct_tensor_from_dlpack(NULL, make_legacy(data, 2, SZ23)), CT_ERR_INVALID_ARGUMENT,
                  "'out' is NULL");
  assert_int_equal(producer_deletes, 8);
  m = make_versioned(NULL, kDLFloat, 32, 2, SZ23, NULL, 0, 0);
  CT_EXPECT_ERROR(ct_tensor_from_dlpack_versioned(&t, m), CT_ERR_INVALID_ARGUMENT, "data is NULL");
  assert_int_equal(producer_deletes, 9);
  CT_EXPECT_ERROR(ct_tensor_from_dlpack_versioned(&t, NULL), CT_ERR_INVALID_ARGUMENT,
                  "'src' is NULL");
  CT_EXPECT_ERROR(ct_tensor_from_dlpack(&t, NULL), CT_ERR_INVALID_ARGUMENT, "'src' is NULL");
  assert_null(t);
}

static void test_import_read_only_copies(void **state) {
  (void)state;
  float data[6] = {1, 2, 3, 4, 5, 6};
  producer_deletes = 0;
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_dlpack_versioned(
      &t, make_versioned(data, kDLFloat, 32, 2, SZ23, NULL, 0, DLPACK_FLAG_BITMASK_READ_ONLY)));
  assert_int_equal(producer_deletes, 1); /* copied, producer released at once */
  assert_ptr_not_equal(ct_tensor_data_ptr(t), data);
  assert_true(((float *)ct_tensor_data_ptr(t))[5] == 6.0f);
  CT_OK_OR_FAIL(ct_tensor_fill_(t, 0));
  assert_true(data[5] == 6.0f); /* the read-only memory was never written */
  ct_tensor_free(t);
  assert_int_equal(producer_deletes, 1);
}

/* ---- Export -------------------------------------------------------------------- */

static void test_export_versioned_zero_copy(void **state) {
  (void)state;
  float data[6] = {1, 2, 3, 4, 5, 6};
  ct_tensor *t = test_tensor_f32(data, SZ23, 2);
  DLManagedTensorVersioned *m = NULL;
  CT_OK_OR_FAIL(ct_tensor_to_dlpack_versioned(&m, t, 0, -1));
  assert_int_equal(m->version.major, 1);
  assert_int_equal(m->flags, 0);
  assert_ptr_equal(m->dl_tensor.data, ct_tensor_data_ptr(t));
  assert_int_equal(m->dl_tensor.ndim, 2);
  assert_int_equal(m->dl_tensor.shape[0], 2);
  assert_int_equal(m->dl_tensor.strides[0], 3);
  assert_int_equal(m->dl_tensor.device.device_type, kDLCPU);
  assert_int_equal(m->dl_tensor.byte_offset, 0);
  /* The export keeps the memory alive after the handle is gone. */
  float *p = m->dl_tensor.data;
  ct_tensor_free(t);
  p[0] = 42;
  /* Round trip: importing our own export is zero-copy too. */
  ct_tensor *back = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_dlpack_versioned(&back, m));
  assert_ptr_equal(ct_tensor_data_ptr(back), p);
  assert_true(((float *)ct_tensor_data_ptr(back))[0] == 42.0f);
  ct_tensor_free(back);
}

static void test_export_legacy_and_copy(void **state) {
  (void)state;
  float data[6] = {1, 2, 3, 4, 5, 6};
  ct_tensor *t = test_tensor_f32(data, SZ23, 2);
  DLManagedTensor *l = NULL;
  CT_OK_OR_FAIL(ct_tensor_to_dlpack(&l, t, 0, -1));
  assert_ptr_equal(l->dl_tensor.data, ct_tensor_data_ptr(t));
  l->deleter(l);
  DLManagedTensorVersioned *c = NULL;
  CT_OK_OR_FAIL(ct_tensor_to_dlpack_versioned(&c, t, 1, -1));
  assert_ptr_not_equal(c->dl_tensor.data, ct_tensor_data_ptr(t));
  assert_int_equal(c->flags & DLPACK_FLAG_BITMASK_IS_COPIED, DLPACK_FLAG_BITMASK_IS_COPIED);
  assert_true(((float *)c->dl_tensor.data)[5] == 6.0f);
  c->deleter(c);
  ct_tensor_free(t);
}

static void test_export_errors(void **state) {
  (void)state;
  ct_tensor *t = NULL;
  DLManagedTensorVersioned *m = NULL;
  DLManagedTensor *l = NULL;
  CT_OK_OR_FAIL(ct_tensor_zeros(&t, SZ23, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 1));
  CT_EXPECT_ERROR(ct_tensor_to_dlpack_versioned(&m, t, 0, -1), CT_ERR_NOT_SUPPORTED,
                  "requires grad; detach it first");
  CT_EXPECT_ERROR(ct_tensor_to_dlpack(&l, t, 0, -1), CT_ERR_NOT_SUPPORTED, "requires grad");
  CT_EXPECT_ERROR(ct_tensor_to_dlpack_versioned(NULL, t, 0, -1), CT_ERR_INVALID_ARGUMENT,
                  "'out' is NULL");
  CT_EXPECT_ERROR(ct_tensor_to_dlpack_versioned(&m, NULL, 0, -1), CT_ERR_INVALID_ARGUMENT,
                  "'t' is NULL");
  CT_EXPECT_ERROR(ct_tensor_to_dlpack(&l, NULL, 0, -1), CT_ERR_INVALID_ARGUMENT, "'t' is NULL");
  assert_null(m);
  assert_null(l);
  ct_tensor_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_import_versioned_zero_copy),
      cmocka_unit_test(test_import_legacy_null_strides),
      cmocka_unit_test(test_import_byte_offset_and_strides),
      cmocka_unit_test(test_import_dtypes),
      cmocka_unit_test(test_import_failures_delete_once),
      cmocka_unit_test(test_import_read_only_copies),
      cmocka_unit_test(test_export_versioned_zero_copy),
      cmocka_unit_test(test_export_legacy_and_copy),
      cmocka_unit_test(test_export_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
