/* ct_tensor_metadata: all metadata in one call, the same as the accessors
 * one by one; borrowed arrays; layouts without strides; errors. Wrapped
 * numbers (ct_tensor_wrapped_number): torch's promotion of Python scalars. */
#include "test_util.h"

#include <math.h>

static ct_tensor_info new_info(void) {
  ct_tensor_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  return info;
}

static ct_tensor *call1(const char *op, const ct_value *const *args, size_t n) {
  ct_value *out = NULL;
  CT_OK_OR_FAIL(ct_op_call_name(&out, op, args, n, NULL, NULL, 0));
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, out));
  ct_value_free(out);
  return t;
}

/* Every field agrees with the one-by-one accessors. */
static void expect_matches_accessors(const ct_tensor *t) {
  ct_tensor_info info;
  memset(&info, 0xAB, sizeof info);
  info.size = sizeof info;
  CT_OK_OR_FAIL(ct_tensor_metadata(&info, t));
  assert_int_equal(info.size, sizeof info);
  assert_int_equal(info.dtype, ct_tensor_dtype(t));
  assert_int_equal(info.device_type, ct_tensor_device_type(t));
  assert_int_equal(info.device_index, ct_tensor_device_index(t));
  assert_int_equal(info.ndim, ct_tensor_ndim(t));
  assert_int_equal(info.requires_grad, ct_tensor_requires_grad(t));
  assert_int_equal(info.is_contiguous, ct_tensor_is_contiguous(t));
  assert_int_equal(info.numel, ct_tensor_numel(t));
  assert_int_equal(info.storage_offset, ct_tensor_storage_offset(t));
  assert_ptr_equal(info.data, ct_tensor_data_ptr(t));
  assert_ptr_equal(info.sizes, ct_tensor_sizes(t)); /* the same borrowed array */
  assert_ptr_equal(info.strides, ct_tensor_strides(t));
}

static void test_info_matches_accessors(void **state) {
  (void)state;
  float d[6] = {0, 1, 2, 3, 4, 5};
  int64_t s23[2] = {2, 3};
  ct_tensor *x = test_tensor_f32(d, s23, 2);
  ct_tensor_info info = new_info();
  CT_OK_OR_FAIL(ct_tensor_metadata(&info, x));
  assert_int_equal(info.dtype, CT_FLOAT32);
  assert_int_equal(info.device_type, CT_DEVICE_CPU);
  assert_int_equal(info.device_index, -1);
  assert_int_equal(info.ndim, 2);
  assert_int_equal(info.requires_grad, 0);
  assert_int_equal(info.is_contiguous, 1);
  assert_int_equal(info.numel, 6);
  assert_int_equal(info.storage_offset, 0);
  assert_int_equal(info.sizes[0], 2);
  assert_int_equal(info.sizes[1], 3);
  assert_int_equal(info.strides[0], 3);
  assert_int_equal(info.strides[1], 1);
  assert_true(((const float *)info.data)[4] == 4);
  expect_matches_accessors(x);

  /* A view: offset, strides, not contiguous; data shared with x. */
  ct_value *xv = NULL, *dim = NULL, *start = NULL, *len = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&xv, x));
  CT_OK_OR_FAIL(ct_value_from_int(&dim, 1));
  CT_OK_OR_FAIL(ct_value_from_int(&start, 1));
  CT_OK_OR_FAIL(ct_value_from_int(&len, 2));
  const ct_value *nargs[4] = {xv, dim, start, len};
  ct_tensor *v = call1("aten::narrow", nargs, 4);
  CT_OK_OR_FAIL(ct_tensor_metadata(&info, v));
  assert_int_equal(info.storage_offset, 1);
  assert_int_equal(info.is_contiguous, 0);
  assert_int_equal(info.sizes[1], 2);
  assert_int_equal(info.strides[0], 3);
  assert_ptr_equal(info.data, (const float *)ct_tensor_data_ptr(x) + 1);
  expect_matches_accessors(v);

  /* requires_grad, int64, 0-dim, empty. */
  CT_OK_OR_FAIL(ct_tensor_set_requires_grad(x, 1));
  CT_OK_OR_FAIL(ct_tensor_metadata(&info, x));
  assert_int_equal(info.requires_grad, 1);
  expect_matches_accessors(x);
  ct_tensor *i0 = NULL, *e = NULL;
  CT_OK_OR_FAIL(ct_tensor_zeros(&i0, NULL, 0, CT_INT64, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_tensor_metadata(&info, i0));
  assert_int_equal(info.dtype, CT_INT64);
  assert_int_equal(info.ndim, 0);
  assert_int_equal(info.numel, 1);
  expect_matches_accessors(i0);
  int64_t s0[1] = {0};
  CT_OK_OR_FAIL(ct_tensor_empty(&e, s0, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_tensor_metadata(&info, e));
  assert_int_equal(info.numel, 0);
  assert_null(info.data);
  expect_matches_accessors(e);

  ct_value_free(xv);
  ct_value_free(dim);
  ct_value_free(start);
  ct_value_free(len);
  ct_tensor_free(v);
  ct_tensor_free(i0);
  ct_tensor_free(e);
  ct_tensor_free(x);
}

/* After an in-place op that changes metadata, a new call sees the change. */
static void test_info_after_inplace(void **state) {
  (void)state;
  float d[6] = {0, 1, 2, 3, 4, 5};
  int64_t s23[2] = {2, 3};
  ct_tensor *x = test_tensor_f32(d, s23, 2);
  ct_tensor_info info = new_info();
  CT_OK_OR_FAIL(ct_tensor_metadata(&info, x));
  assert_int_equal(info.ndim, 2);
  ct_value *xv = NULL, *dim = NULL, *r = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&xv, x));
  CT_OK_OR_FAIL(ct_value_from_int(&dim, 0));
  const ct_value *args[2] = {xv, dim};
  CT_OK_OR_FAIL(ct_op_call_name(&r, "aten::unsqueeze_", args, 2, NULL, NULL, 0));
  CT_OK_OR_FAIL(ct_tensor_metadata(&info, x));
  assert_int_equal(info.ndim, 3);
  assert_int_equal(info.sizes[0], 1);
  assert_int_equal(info.sizes[1], 2);
  assert_int_equal(info.sizes[2], 3);
  expect_matches_accessors(x);
  ct_value_free(r);
  ct_value_free(xv);
  ct_value_free(dim);
  ct_tensor_free(x);
}

/* A sparse tensor has no strides and no strided data. */
static void test_info_sparse(void **state) {
  (void)state;
  float d[4] = {0, 1, 0, 2};
  int64_t s[2] = {2, 2};
  ct_tensor *x = test_tensor_f32(d, s, 2);
  ct_value *xv = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&xv, x));
  const ct_value *args[1] = {xv};
  ct_tensor *sp = call1("aten::to_sparse", args, 1);
  ct_tensor_info info = new_info();
  CT_OK_OR_FAIL(ct_tensor_metadata(&info, sp));
  assert_int_equal(info.ndim, 2);
  assert_int_equal(info.numel, 4);
  assert_int_equal(info.sizes[1], 2);
  assert_null(info.strides);
  assert_null(info.data);
  assert_int_equal(info.is_contiguous, 0);
  assert_int_equal(info.storage_offset, 0);
  assert_int_equal(info.dtype, CT_FLOAT32);
  ct_value_free(xv);
  ct_tensor_free(sp);
  ct_tensor_free(x);
}

static void test_info_errors_and_size(void **state) {
  (void)state;
  float d[2] = {1, 2};
  int64_t s[1] = {2};
  ct_tensor *x = test_tensor_f32(d, s, 1);
  ct_tensor_info info = new_info();
  CT_EXPECT_ERROR(ct_tensor_metadata(NULL, x), CT_ERR_INVALID_ARGUMENT,
                  "ct_tensor_metadata: argument 'out' is NULL");
  CT_EXPECT_ERROR(ct_tensor_metadata(&info, NULL), CT_ERR_INVALID_ARGUMENT,
                  "ct_tensor_metadata: argument 't' is NULL");
  /* size not set: refused, nothing written. */
  memset(&info, 0, sizeof info);
  CT_EXPECT_ERROR(ct_tensor_metadata(&info, x), CT_ERR_INVALID_ARGUMENT,
                  "out->size is 0, expected at least");
  assert_int_equal(info.ndim, 0);
  assert_null(info.sizes);
  /* A caller with a bigger (newer) struct: known fields filled, the rest untouched. */
  union {
    ct_tensor_info info;
    unsigned char bytes[sizeof(ct_tensor_info) + 16];
  } big;
  memset(&big, 0x5A, sizeof big);
  big.info.size = sizeof big;
  CT_OK_OR_FAIL(ct_tensor_metadata(&big.info, x));
  assert_int_equal(big.info.numel, 2);
  for (size_t i = sizeof(ct_tensor_info); i < sizeof big; ++i) assert_int_equal(big.bytes[i], 0x5A);
  ct_tensor_free(x);
}

/* dtype of a (0-dim, `dtype`) op b through aten::<op>.Tensor. */
static int32_t result_dtype(const char *op, int32_t dtype, const ct_tensor *b) {
  ct_tensor *a = NULL, *r = NULL;
  ct_op *h = NULL;
  CT_OK_OR_FAIL(ct_tensor_ones(&a, NULL, 0, dtype, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_op_find(&h, op, "Tensor"));
  const ct_tensor *ins[2] = {a, b};
  CT_OK_OR_FAIL(ct_op_call_tensors(&r, 1, h, ins, 2));
  int32_t d = ct_tensor_dtype(r);
  ct_tensor_free(r);
  ct_tensor_free(a);
  ct_op_free(h);
  return d;
}

static void test_wrapped_number(void **state) {
  (void)state;
  ct_tensor *n = NULL, *plain = NULL, *f = NULL, *b = NULL;
  CT_OK_OR_FAIL(ct_tensor_wrapped_number(&n, 3, CT_INT64));
  assert_int_equal(ct_tensor_ndim(n), 0);
  assert_int_equal(ct_tensor_dtype(n), CT_INT64);
  assert_int_equal(*(const int64_t *)ct_tensor_data_ptr(n), 3);
  CT_OK_OR_FAIL(ct_tensor_full(&plain, NULL, 0, 3, CT_INT64, CT_DEVICE_CPU, -1, 0));
  /* A 0-dim int32 tensor and a number stay int32 (torch: tensor(1, int32) + 3);
   * with a plain 0-dim int64 tensor the result is int64. */
  assert_int_equal(result_dtype("aten::add", CT_INT32, n), CT_INT32);
  assert_int_equal(result_dtype("aten::add", CT_INT32, plain), CT_INT64);
  CT_OK_OR_FAIL(ct_tensor_wrapped_number(&f, 2.5, CT_FLOAT64));
  assert_int_equal(result_dtype("aten::mul", CT_FLOAT16, f), CT_FLOAT16);
  assert_int_equal(result_dtype("aten::mul", CT_INT32, f), CT_FLOAT32);  /* the default dtype */
  CT_OK_OR_FAIL(ct_tensor_wrapped_number(&b, 7, CT_BOOL));
  assert_int_equal(*(const uint8_t *)ct_tensor_data_ptr(b), 1);
  ct_tensor *t = NULL;
  CT_EXPECT_ERROR(ct_tensor_wrapped_number(NULL, 1, CT_INT64), CT_ERR_INVALID_ARGUMENT,
                  "'out' is NULL");
  CT_EXPECT_ERROR(ct_tensor_wrapped_number(&t, 1, CT_FLOAT32), CT_ERR_TYPE,
                  "dtype must be CT_BOOL, CT_INT64 or CT_FLOAT64");
  CT_EXPECT_ERROR(ct_tensor_wrapped_number(&t, 1.5, CT_INT64), CT_ERR_INVALID_ARGUMENT,
                  "is not an integer that a double holds exactly");
  CT_EXPECT_ERROR(ct_tensor_wrapped_number(&t, 1e300, CT_INT64), CT_ERR_INVALID_ARGUMENT,
                  "is not an integer");
  CT_EXPECT_ERROR(ct_tensor_wrapped_number(&t, NAN, CT_INT64), CT_ERR_INVALID_ARGUMENT,
                  "is not an integer");
  assert_null(t);
  ct_tensor_free(n);
  ct_tensor_free(plain);
  ct_tensor_free(f);
  ct_tensor_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_info_matches_accessors),
      cmocka_unit_test(test_info_after_inplace),
      cmocka_unit_test(test_info_sparse),
      cmocka_unit_test(test_info_errors_and_size),
      cmocka_unit_test(test_wrapped_number),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
