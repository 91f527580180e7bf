/* Tensors: library info, errors, dtypes, factories, from_blob, release
 * queue, handles, conversions, metadata, printing and comparison. */
#include <pthread.h>

#include "test_util.h"

static const int64_t SZ23[2] = {2, 3};

static void test_versions(void **state) {
  (void)state;
  assert_string_equal(ct_version(), CTORCH_VERSION_STRING);
  assert_int_equal(ct_abi_version(), CTORCH_ABI_VERSION);
  assert_non_null(strstr(ct_torch_version(), "."));
  assert_int_equal(ct_cuda_is_available() == 0 || ct_cuda_is_compiled() == 1, 1);
}

static void test_threads_and_seed(void **state) {
  (void)state;
  int32_t n = ct_num_threads();
  assert_true(n >= 1);
  CT_OK_OR_FAIL(ct_set_num_threads(1));
  assert_int_equal(ct_num_threads(), 1);
  CT_OK_OR_FAIL(ct_set_num_threads(n));
  CT_EXPECT_ERROR(ct_set_num_threads(0), CT_ERR_INVALID_ARGUMENT, "n must be between 1 and");
  assert_true(ct_num_interop_threads() >= 1);
  CT_EXPECT_ERROR(ct_set_num_interop_threads(-3), CT_ERR_INVALID_ARGUMENT,
                  "n must be between 1 and");
  /* Same seed, same numbers. */
  ct_tensor *a = NULL, *b = NULL;
  int32_t eq = 0;
  CT_OK_OR_FAIL(ct_manual_seed(42));
  CT_OK_OR_FAIL(ct_tensor_rand(&a, SZ23, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_manual_seed(42));
  CT_OK_OR_FAIL(ct_tensor_rand(&b, SZ23, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_tensor_equal(&eq, a, b));
  assert_int_equal(eq, 1);
  ct_tensor_free(a);
  ct_tensor_free(b);
}

static void test_errors(void **state) {
  (void)state;
  ct_clear_error();
  assert_string_equal(ct_last_error(), "");
  assert_int_equal(ct_last_error_code(), CT_OK);
  assert_int_equal(ct_set_error(CT_ERR_CALLBACK, "from a callback"), CT_ERR_CALLBACK);
  assert_string_equal(ct_last_error(), "from a callback");
  assert_int_equal(ct_last_error_code(), CT_ERR_CALLBACK);
  assert_int_equal(ct_set_error(CT_ERR_IO, NULL), CT_ERR_IO);
  assert_string_equal(ct_last_error(), "");
  /* An error raised inside LibTorch: a short first line naming the call. */
  ct_tensor *a = NULL, *b = NULL;
  int64_t s3[1] = {3}, s4[1] = {4};
  CT_OK_OR_FAIL(ct_tensor_zeros(&a, s3, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_tensor_zeros(&b, s4, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_EXPECT_ERROR(ct_tensor_copy_(a, b, 0), CT_ERR_TORCH, "ct_tensor_copy_: ");
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_free(NULL);
  ct_load_library("/nonexistent/libnothing.so");
  CT_EXPECT_ERROR(ct_load_library("/nonexistent/libnothing.so"), CT_ERR_IO, "cannot load");
  CT_EXPECT_ERROR(ct_load_library(NULL), CT_ERR_INVALID_ARGUMENT, "'path' is NULL");
}

static void *error_thread(void *arg) {
  (void)arg;
  ct_set_error(CT_ERR_INDEX, "other thread");
  return NULL;
}

static void test_error_is_thread_local(void **state) {
  (void)state;
  ct_set_error(CT_ERR_IO, "this thread");
  pthread_t th;
  pthread_create(&th, NULL, error_thread, NULL);
  pthread_join(th, NULL);
  assert_string_equal(ct_last_error(), "this thread");
  assert_int_equal(ct_last_error_code(), CT_ERR_IO);
}

static void test_dtypes(void **state) {
  (void)state;
  const size_t sizes[13] = {0, 1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};
  for (int32_t d = 1; d <= 12; ++d) {
    assert_int_equal(ct_dtype_element_size(d), sizes[d]);
    ct_tensor *t = NULL;
    int64_t s[1] = {5};
    CT_OK_OR_FAIL(ct_tensor_zeros(&t, s, 1, d, CT_DEVICE_CPU, -1, 0));
    assert_int_equal(ct_tensor_dtype(t), d);
    assert_int_equal(ct_tensor_element_size(t), sizes[d]);
    assert_int_equal(ct_tensor_nbytes(t), 5 * sizes[d]);
    ct_tensor_free(t);
  }
  assert_int_equal(ct_dtype_element_size(0), 0);
  assert_int_equal(ct_dtype_element_size(9999), 0);
  assert_string_equal(ct_dtype_name(CT_BFLOAT16), "bfloat16");
  assert_string_equal(ct_dtype_name(77), "unknown");
  assert_string_equal(ct_device_type_name(CT_DEVICE_CPU), "cpu");
  assert_string_equal(ct_device_type_name(CT_DEVICE_CUDA), "cuda");
  assert_string_equal(ct_device_type_name(42), "unknown");
}

static void test_factories(void **state) {
  (void)state;
  ct_tensor *t = NULL;
  int32_t eq = 0;
  CT_OK_OR_FAIL(ct_tensor_empty(&t, SZ23, 2, CT_FLOAT64, CT_DEVICE_CPU, -1, 1));
  assert_int_equal(ct_tensor_ndim(t), 2);
  assert_int_equal(ct_tensor_sizes(t)[0], 2);
  assert_int_equal(ct_tensor_sizes(t)[1], 3);
  assert_int_equal(ct_tensor_strides(t)[0], 3);
  assert_int_equal(ct_tensor_strides(t)[1], 1);
  assert_int_equal(ct_tensor_requires_grad(t), 1);
  assert_int_equal(ct_tensor_numel(t), 6);
  ct_tensor_free(t);

  CT_OK_OR_FAIL(ct_tensor_ones(&t, SZ23, 2, CT_INT32, CT_DEVICE_CPU, -1, 0));
  for (int i = 0; i < 6; ++i) assert_int_equal(((int32_t *)ct_tensor_data_ptr(t))[i], 1);
  ct_tensor_free(t);

  CT_OK_OR_FAIL(ct_tensor_full(&t, SZ23, 2, 2.5, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  for (int i = 0; i < 6; ++i) assert_true(((float *)ct_tensor_data_ptr(t))[i] == 2.5f);
  ct_tensor_free(t);

  CT_OK_OR_FAIL(ct_tensor_arange(&t, 0, 5, 1, CT_INT64, CT_DEVICE_CPU, -1, 0));
  assert_int_equal(ct_tensor_numel(t), 5);
  assert_int_equal(((int64_t *)ct_tensor_data_ptr(t))[4], 4);
  ct_tensor_free(t);

  CT_OK_OR_FAIL(ct_tensor_eye(&t, 3, -1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  float *e = ct_tensor_data_ptr(t);
  assert_true(e[0] == 1 && e[1] == 0 && e[4] == 1 && e[8] == 1);
  ct_tensor_free(t);

  CT_OK_OR_FAIL(ct_tensor_randn(&t, SZ23, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  ct_tensor_free(t);

  /* empty_like: t's sizes and device, contiguous, not requiring grad. */
  double buf[6] = {0};
  const int64_t tr_sizes[2] = {3, 2}, tr_strides[2] = {1, 3}; /* a transposed 2x3 */
  ct_tensor *tr = NULL, *like = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_blob(&tr, buf, tr_sizes, 2, tr_strides, CT_FLOAT64, CT_DEVICE_CPU,
                                    -1, NULL, NULL));
  CT_OK_OR_FAIL(ct_tensor_set_requires_grad(tr, 1));
  CT_OK_OR_FAIL(ct_tensor_empty_like(&like, tr, CT_DTYPE_KEEP));
  assert_int_equal(ct_tensor_dtype(like), CT_FLOAT64);
  assert_int_equal(ct_tensor_sizes(like)[0], 3);
  assert_int_equal(ct_tensor_sizes(like)[1], 2);
  assert_int_equal(ct_tensor_strides(like)[0], 2);
  assert_int_equal(ct_tensor_requires_grad(like), 0);
  assert_true(ct_tensor_data_ptr(like) != (void *)buf);
  ct_tensor_free(like);
  CT_OK_OR_FAIL(ct_tensor_empty_like(&like, tr, CT_INT32));
  assert_int_equal(ct_tensor_dtype(like), CT_INT32);
  assert_int_equal(ct_tensor_numel(like), 6);
  ct_tensor_free(like);
  like = (ct_tensor *)0x1;
  CT_EXPECT_ERROR(ct_tensor_empty_like(&like, tr, 9999), CT_ERR_TYPE, "unknown dtype code 9999");
  CT_EXPECT_ERROR(ct_tensor_empty_like(&like, NULL, CT_DTYPE_KEEP), CT_ERR_INVALID_ARGUMENT,
                  "'t' is NULL");
  CT_EXPECT_ERROR(ct_tensor_empty_like(NULL, tr, CT_DTYPE_KEEP), CT_ERR_INVALID_ARGUMENT,
                  "'out' is NULL");
  assert_ptr_equal(like, (ct_tensor *)0x1); /* out untouched on failure */
  ct_tensor_free(tr);

  /* Scalar (0-d) tensors: sizes may be NULL. */
  CT_OK_OR_FAIL(ct_tensor_zeros(&t, NULL, 0, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  assert_int_equal(ct_tensor_ndim(t), 0);
  assert_int_equal(ct_tensor_numel(t), 1);
  ct_tensor *z = NULL;
  CT_OK_OR_FAIL(ct_tensor_full(&z, NULL, 0, 0.0, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_tensor_equal(&eq, t, z));
  assert_int_equal(eq, 1);
  ct_tensor_free(t);
  ct_tensor_free(z);
}

static void test_factory_errors(void **state) {
  (void)state;
  ct_tensor *t = (ct_tensor *)0x1;
  int64_t neg[2] = {2, -1};
  CT_EXPECT_ERROR(ct_tensor_zeros(NULL, SZ23, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0),
                  CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_tensor_zeros(&t, neg, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0),
                  CT_ERR_INVALID_ARGUMENT, "negative size -1 in dimension 1");
  int64_t huge[3] = {INT64_C(1) << 40, INT64_C(1) << 40, 1}, big[1] = {INT64_C(1) << 50};
  CT_EXPECT_ERROR(ct_tensor_empty(&t, big, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0),
                  CT_ERR_OUT_OF_MEMORY, "ct_tensor_empty: ");
  CT_EXPECT_ERROR(ct_tensor_empty(&t, huge, 3, CT_FLOAT32, CT_DEVICE_CPU, -1, 0),
                  CT_ERR_INVALID_ARGUMENT, "number of elements overflows");
  CT_EXPECT_ERROR(ct_tensor_from_blob(&t, (void *)SZ23, huge, 3, NULL, CT_FLOAT32, CT_DEVICE_CPU,
                                      -1, NULL, NULL),
                  CT_ERR_INVALID_ARGUMENT, "number of elements overflows");
  CT_EXPECT_ERROR(ct_tensor_zeros(&t, NULL, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0),
                  CT_ERR_INVALID_ARGUMENT, "sizes is NULL");
  CT_EXPECT_ERROR(ct_tensor_ones(&t, SZ23, 2, 9999, CT_DEVICE_CPU, -1, 0), CT_ERR_TYPE,
                  "unknown dtype code 9999");
  CT_EXPECT_ERROR(ct_tensor_ones(&t, SZ23, 2, 0, CT_DEVICE_CPU, -1, 0), CT_ERR_TYPE,
                  "unknown dtype code 0");
  CT_EXPECT_ERROR(ct_tensor_empty(&t, SZ23, 2, CT_FLOAT32, 77, -1, 0), CT_ERR_INVALID_ARGUMENT,
                  "unknown device type 77");
  CT_EXPECT_ERROR(ct_tensor_empty(&t, SZ23, 2, CT_FLOAT32, CT_DEVICE_CPU, -9, 0),
                  CT_ERR_INVALID_ARGUMENT, "invalid device index -9");
  if (!ct_cuda_is_available())
    CT_EXPECT_ERROR(ct_tensor_empty(&t, SZ23, 2, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0),
                    CT_ERR_NOT_SUPPORTED, "CUDA");
  CT_EXPECT_ERROR(ct_tensor_zeros(&t, SZ23, 2, CT_INT64, CT_DEVICE_CPU, -1, 1), CT_ERR_TYPE,
                  "requires_grad needs a floating");
  CT_EXPECT_ERROR(ct_tensor_rand(&t, SZ23, 2, CT_INT32, CT_DEVICE_CPU, -1, 0), CT_ERR_TYPE,
                  "needs a floating dtype");
  CT_EXPECT_ERROR(ct_tensor_randn(&t, SZ23, 2, CT_BOOL, CT_DEVICE_CPU, -1, 0), CT_ERR_TYPE,
                  "needs a floating dtype");
  CT_EXPECT_ERROR(ct_tensor_arange(&t, 0, 5, 0, CT_FLOAT32, CT_DEVICE_CPU, -1, 0),
                  CT_ERR_INVALID_ARGUMENT, "step 0");
  CT_EXPECT_ERROR(ct_tensor_arange(&t, 0, 5, -1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0),
                  CT_ERR_INVALID_ARGUMENT, "does not lead");
  CT_EXPECT_ERROR(ct_tensor_eye(&t, -2, -1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0),
                  CT_ERR_INVALID_ARGUMENT, "n must be >= 0");
  CT_EXPECT_ERROR(ct_tensor_full(NULL, SZ23, 2, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0),
                  CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_tensor_from_data(&t, NULL, SZ23, 2, CT_FLOAT32, CT_DEVICE_CPU, -1),
                  CT_ERR_INVALID_ARGUMENT, "'data' is NULL");
  CT_EXPECT_ERROR(ct_tensor_from_data(NULL, SZ23, SZ23, 2, CT_FLOAT32, CT_DEVICE_CPU, -1),
                  CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_tensor_from_data(&t, SZ23, SZ23, 2, 99, CT_DEVICE_CPU, -1), CT_ERR_TYPE,
                  "unknown dtype");
  assert_ptr_equal(t, (ct_tensor *)0x1); /* out untouched on failure */
}

static void test_from_data_copies(void **state) {
  (void)state;
  float data[6] = {1, 2, 3, 4, 5, 6};
  ct_tensor *t = test_tensor_f32(data, SZ23, 2);
  assert_ptr_not_equal(ct_tensor_data_ptr(t), data);
  data[0] = 100;
  assert_true(((float *)ct_tensor_data_ptr(t))[0] == 1.0f);
  ct_tensor_free(t);
}

static int deleter_calls = 0;
static void *deleter_last_data = NULL;
static void *deleter_last_ctx = NULL;
static void count_deleter(void *data, void *ctx) {
  deleter_calls++;
  deleter_last_data = data;
  deleter_last_ctx = ctx;
}

static void test_from_blob_zero_copy(void **state) {
  (void)state;
  float data[6] = {1, 2, 3, 4, 5, 6};
  int tag = 0;
  deleter_calls = 0;
  ct_tensor *t = NULL, *t2 = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_blob(&t, data, SZ23, 2, NULL, CT_FLOAT32, CT_DEVICE_CPU, -1,
                                    count_deleter, &tag));
  assert_ptr_equal(ct_tensor_data_ptr(t), data);
  /* torch writes, C sees it. */
  CT_OK_OR_FAIL(ct_tensor_fill_(t, 7.0));
  assert_true(data[5] == 7.0f);
  /* C writes, torch sees it. */
  data[2] = -1;
  char *s = NULL;
  CT_OK_OR_FAIL(ct_tensor_to_string(&s, t));
  assert_non_null(strstr(s, "-1"));
  ct_free(s);
  /* Another handle keeps the memory alive. */
  CT_OK_OR_FAIL(ct_tensor_ref(&t2, t));
  ct_tensor_free(t);
  assert_int_equal(deleter_calls, 0);
  assert_ptr_equal(ct_tensor_data_ptr(t2), data);
  ct_tensor_free(t2);
  assert_int_equal(deleter_calls, 1);
  assert_ptr_equal(deleter_last_data, data);
  assert_ptr_equal(deleter_last_ctx, &tag);
}

static void test_from_blob_strides_and_views(void **state) {
  (void)state;
  /* A transposed view of a 3x2 buffer: sizes (2,3), strides (1,2). */
  float data[6] = {0, 1, 2, 3, 4, 5};
  int64_t strides[2] = {1, 2};
  deleter_calls = 0;
  ct_tensor *t = NULL, *c = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_blob(&t, data, SZ23, 2, strides, CT_FLOAT32, CT_DEVICE_CPU, -1,
                                    count_deleter, NULL));
  assert_int_equal(ct_tensor_is_contiguous(t), 0);
  assert_int_equal(ct_tensor_strides(t)[0], 1);
  CT_OK_OR_FAIL(ct_tensor_contiguous(&c, t));
  assert_int_equal(ct_tensor_is_contiguous(c), 1);
  float *cd = ct_tensor_data_ptr(c);
  /* Row 0 of the view is data[0], data[2], data[4]. */
  assert_true(cd[0] == 0 && cd[1] == 2 && cd[2] == 4 && cd[3] == 1);
  ct_tensor_free(t);
  assert_int_equal(deleter_calls, 1); /* the copy does not hold the blob */
  ct_tensor_free(c);
}

static void test_from_blob_errors(void **state) {
  (void)state;
  float data[6] = {0};
  int64_t neg[2] = {-1, 1}, zero_strides[2] = {-3, 1};
  ct_tensor *t = NULL;
  deleter_calls = 0;
  CT_EXPECT_ERROR(ct_tensor_from_blob(NULL, data, SZ23, 2, NULL, CT_FLOAT32, CT_DEVICE_CPU, -1,
                                      count_deleter, NULL),
                  CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_tensor_from_blob(&t, NULL, SZ23, 2, NULL, CT_FLOAT32, CT_DEVICE_CPU, -1,
                                      count_deleter, NULL),
                  CT_ERR_INVALID_ARGUMENT, "'data' is NULL");
  CT_EXPECT_ERROR(ct_tensor_from_blob(&t, data, neg, 2, NULL, CT_FLOAT32, CT_DEVICE_CPU, -1,
                                      count_deleter, NULL),
                  CT_ERR_INVALID_ARGUMENT, "negative size");
  CT_EXPECT_ERROR(ct_tensor_from_blob(&t, data, SZ23, 2, zero_strides, CT_FLOAT32, CT_DEVICE_CPU,
                                      -1, count_deleter, NULL),
                  CT_ERR_INVALID_ARGUMENT, "negative stride");
  CT_EXPECT_ERROR(
      ct_tensor_from_blob(&t, data, SZ23, 2, NULL, 1234, CT_DEVICE_CPU, -1, count_deleter, NULL),
      CT_ERR_TYPE, "unknown dtype code 1234");
  CT_EXPECT_ERROR(
      ct_tensor_from_blob(&t, data, SZ23, 2, NULL, CT_FLOAT32, 55, -1, count_deleter, NULL),
      CT_ERR_INVALID_ARGUMENT, "unknown device type");
  /* On failure the deleter is not called: the caller still owns the memory. */
  assert_int_equal(deleter_calls, 0);
  assert_null(t);
  /* Zero-element tensors may have NULL data. */
  int64_t empty[1] = {0};
  CT_OK_OR_FAIL(
      ct_tensor_from_blob(&t, NULL, empty, 1, NULL, CT_FLOAT32, CT_DEVICE_CPU, -1, NULL, NULL));
  assert_null(ct_tensor_data_ptr(t));
  ct_tensor_free(t);
}

/* ---- Release queue ------------------------------------------------------ */

static void drain_queue(void) {
  void *buf[16];
  size_t n = 0;
  do {
    CT_OK_OR_FAIL(ct_release_queue_poll(buf, 16, &n));
  } while (n > 0);
}

static void test_release_queue(void **state) {
  (void)state;
  drain_queue();
  float a[4] = {0}, b[4] = {0};
  int64_t s[1] = {4};
  ct_tensor *ta = NULL, *tb = NULL, *view = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_blob_queued(&ta, a, s, 1, NULL, CT_FLOAT32, CT_DEVICE_CPU, -1,
                                           (void *)(intptr_t)11));
  CT_OK_OR_FAIL(ct_tensor_from_blob_queued(&tb, b, s, 1, NULL, CT_FLOAT32, CT_DEVICE_CPU, -1,
                                           (void *)(intptr_t)22));
  assert_ptr_equal(ct_tensor_data_ptr(ta), a);
  CT_OK_OR_FAIL(ct_tensor_detach(&view, tb)); /* shares tb's memory */
  assert_int_equal(ct_release_queue_length(), 0);
  ct_tensor_free(ta);
  ct_tensor_free(tb);
  assert_int_equal(ct_release_queue_length(), 1);
  ct_tensor_free(view);
  assert_int_equal(ct_release_queue_length(), 2);
  void *out[1] = {NULL};
  size_t n = 0;
  CT_OK_OR_FAIL(ct_release_queue_poll(out, 1, &n)); /* oldest first, one at a time */
  assert_int_equal(n, 1);
  assert_int_equal((intptr_t)out[0], 11);
  CT_OK_OR_FAIL(ct_release_queue_poll(out, 1, &n));
  assert_int_equal((intptr_t)out[0], 22);
  CT_OK_OR_FAIL(ct_release_queue_poll(out, 1, &n));
  assert_int_equal(n, 0);
  CT_OK_OR_FAIL(ct_release_queue_poll(NULL, 0, &n));
  CT_EXPECT_ERROR(ct_release_queue_poll(out, 1, NULL), CT_ERR_INVALID_ARGUMENT, "'n' is NULL");
  CT_EXPECT_ERROR(ct_release_queue_poll(NULL, 3, &n), CT_ERR_INVALID_ARGUMENT, "'ctxs' is NULL");
  /* A failing call queues nothing. */
  CT_EXPECT_ERROR(
      ct_tensor_from_blob_queued(&ta, a, s, 1, NULL, 999, CT_DEVICE_CPU, -1, (void *)(intptr_t)33),
      CT_ERR_TYPE, "unknown dtype");
  assert_int_equal(ct_release_queue_length(), 0);
}

#define QTHREADS 4
#define QPER 250
static ct_tensor *queued[QTHREADS][QPER];

static void *release_worker(void *arg) {
  intptr_t k = (intptr_t)arg;
  for (int i = 0; i < QPER; ++i) ct_tensor_free(queued[k][i]);
  return NULL;
}

static void test_release_queue_threads(void **state) {
  (void)state;
  drain_queue();
  static float buf[QTHREADS * QPER];
  int64_t s[1] = {1};
  for (int k = 0; k < QTHREADS; ++k)
    for (int i = 0; i < QPER; ++i)
      CT_OK_OR_FAIL(ct_tensor_from_blob_queued(&queued[k][i], &buf[k * QPER + i], s, 1, NULL,
                                               CT_FLOAT32, CT_DEVICE_CPU, -1,
                                               (void *)(intptr_t)(k * QPER + i + 1)));
  pthread_t th[QTHREADS];
  for (intptr_t k = 0; k < QTHREADS; ++k) pthread_create(&th[k], NULL, release_worker, (void *)k);
  /* Poll concurrently while other threads release. */
  static int seen[QTHREADS * QPER + 1];
  memset(seen, 0, sizeof seen);
  size_t total = 0;
  void *out[64];
  for (int iter = 0; iter < 1000000 && total < QTHREADS * QPER; ++iter) {
    size_t n = 0;
    CT_OK_OR_FAIL(ct_release_queue_poll(out, 64, &n));
    for (size_t j = 0; j < n; ++j) seen[(intptr_t)out[j]]++;
    total += n;
  }
  for (int k = 0; k < QTHREADS; ++k) pthread_join(th[k], NULL);
  size_t n = 0;
  do {
    CT_OK_OR_FAIL(ct_release_queue_poll(out, 64, &n));
    for (size_t j = 0; j < n; ++j) seen[(intptr_t)out[j]]++;
    total += n;
  } while (n > 0);
  assert_int_equal(total, QTHREADS * QPER);
  for (int i = 1; i <= QTHREADS * QPER; ++i) assert_int_equal(seen[i], 1);
}

/* ---- Handles and conversions ------------------------------------------- */

static void test_handles_and_conversions(void **state) {
  (void)state;
  float data[6] = {1, 2, 3, 4, 5, 6};
  ct_tensor *t = test_tensor_f32(data, SZ23, 2);
  ct_tensor *r = NULL, *c = NULL, *d = NULL, *i64 = NULL, *same = NULL, *copy = NULL;
  int32_t eq = 0;
  CT_OK_OR_FAIL(ct_tensor_ref(&r, t));
  assert_ptr_equal(ct_tensor_data_ptr(r), ct_tensor_data_ptr(t));
  CT_OK_OR_FAIL(ct_tensor_clone(&c, t));
  assert_ptr_not_equal(ct_tensor_data_ptr(c), ct_tensor_data_ptr(t));
  CT_OK_OR_FAIL(ct_tensor_equal(&eq, c, t));
  assert_int_equal(eq, 1);
  CT_OK_OR_FAIL(ct_tensor_detach(&d, t));
  assert_ptr_equal(ct_tensor_data_ptr(d), ct_tensor_data_ptr(t));
  CT_OK_OR_FAIL(ct_tensor_to(&i64, t, CT_DEVICE_KEEP, -1, CT_INT64, 0, 0));
  assert_int_equal(ct_tensor_dtype(i64), CT_INT64);
  assert_int_equal(((int64_t *)ct_tensor_data_ptr(i64))[5], 6);
  CT_OK_OR_FAIL(ct_tensor_to(&same, t, CT_DEVICE_CPU, -1, CT_DTYPE_KEEP, 0, 0));
  assert_ptr_equal(ct_tensor_data_ptr(same), ct_tensor_data_ptr(t));
  CT_OK_OR_FAIL(ct_tensor_to(&copy, t, CT_DEVICE_CPU, -1, CT_FLOAT32, 0, 1));
  assert_ptr_not_equal(ct_tensor_data_ptr(copy), ct_tensor_data_ptr(t));
  /* copy_ converts dtype; fill_ writes through every handle. */
  CT_OK_OR_FAIL(ct_tensor_fill_(i64, 9));
  CT_OK_OR_FAIL(ct_tensor_copy_(t, i64, 0));
  assert_true(((float *)ct_tensor_data_ptr(r))[3] == 9.0f);
  ct_tensor_free(t); /* r still valid */
  assert_int_equal(ct_tensor_numel(r), 6);
  ct_tensor *ts[] = {r, c, d, i64, same, copy};
  for (size_t k = 0; k < 6; ++k) ct_tensor_free(ts[k]);
  ct_tensor_free(NULL);
}

static void test_handle_errors(void **state) {
  (void)state;
  ct_tensor *t = NULL, *o = NULL;
  CT_OK_OR_FAIL(ct_tensor_zeros(&t, SZ23, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_EXPECT_ERROR(ct_tensor_ref(&o, NULL), CT_ERR_INVALID_ARGUMENT,
                  "ct_tensor_ref: argument 't' is NULL");
  CT_EXPECT_ERROR(ct_tensor_clone(NULL, t), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_tensor_detach(&o, NULL), CT_ERR_INVALID_ARGUMENT, "'t' is NULL");
  CT_EXPECT_ERROR(ct_tensor_contiguous(&o, NULL), CT_ERR_INVALID_ARGUMENT, "'t' is NULL");
  CT_EXPECT_ERROR(ct_tensor_to(&o, NULL, CT_DEVICE_CPU, -1, CT_FLOAT32, 0, 0),
                  CT_ERR_INVALID_ARGUMENT, "'t' is NULL");
  CT_EXPECT_ERROR(ct_tensor_to(&o, t, CT_DEVICE_CPU, -1, 4242, 0, 0), CT_ERR_TYPE,
                  "unknown dtype code 4242");
  CT_EXPECT_ERROR(ct_tensor_to(&o, t, 99, -1, CT_FLOAT32, 0, 0), CT_ERR_INVALID_ARGUMENT,
                  "unknown device type 99");
  CT_EXPECT_ERROR(ct_tensor_copy_(NULL, t, 0), CT_ERR_INVALID_ARGUMENT, "'dst' is NULL");
  CT_EXPECT_ERROR(ct_tensor_copy_(t, NULL, 0), CT_ERR_INVALID_ARGUMENT, "'src' is NULL");
  CT_EXPECT_ERROR(ct_tensor_fill_(NULL, 1), CT_ERR_INVALID_ARGUMENT, "'t' is NULL");
  assert_null(o);
  ct_tensor_free(t);
}

static void test_metadata(void **state) {
  (void)state;
  ct_tensor *t = NULL;
  int64_t v = 0;
  int64_t s3[3] = {2, 3, 4};
  CT_OK_OR_FAIL(ct_tensor_zeros(&t, s3, 3, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_tensor_size(&v, t, -1));
  assert_int_equal(v, 4);
  CT_OK_OR_FAIL(ct_tensor_stride(&v, t, 0));
  assert_int_equal(v, 12);
  CT_EXPECT_ERROR(ct_tensor_size(&v, t, 3), CT_ERR_INDEX, "dimension 3 out of range for a 3-d");
  CT_EXPECT_ERROR(ct_tensor_stride(&v, t, -4), CT_ERR_INDEX, "out of range");
  CT_EXPECT_ERROR(ct_tensor_size(NULL, t, 0), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_tensor_size(&v, NULL, 0), CT_ERR_INVALID_ARGUMENT, "'t' is NULL");
  CT_EXPECT_ERROR(ct_tensor_stride(&v, NULL, 0), CT_ERR_INVALID_ARGUMENT, "'t' is NULL");
  assert_int_equal(ct_tensor_storage_offset(t), 0);
  assert_int_equal(ct_tensor_device_type(t), CT_DEVICE_CPU);
  assert_int_equal(ct_tensor_device_index(t), -1);
  assert_int_equal(ct_tensor_is_defined(t), 1);
  assert_int_equal(ct_tensor_is_pinned(t), 0);
  /* NULL handles give the documented values. */
  assert_int_equal(ct_tensor_ndim(NULL), -1);
  assert_null(ct_tensor_sizes(NULL));
  assert_null(ct_tensor_strides(NULL));
  assert_int_equal(ct_tensor_numel(NULL), -1);
  assert_int_equal(ct_tensor_storage_offset(NULL), -1);
  assert_int_equal(ct_tensor_element_size(NULL), 0);
  assert_int_equal(ct_tensor_nbytes(NULL), 0);
  assert_int_equal(ct_tensor_dtype(NULL), 0);
  assert_int_equal(ct_tensor_device_type(NULL), 0);
  assert_int_equal(ct_tensor_device_index(NULL), -1);
  assert_null(ct_tensor_data_ptr(NULL));
  assert_int_equal(ct_tensor_is_contiguous(NULL), 0);
  assert_int_equal(ct_tensor_requires_grad(NULL), 0);
  assert_int_equal(ct_tensor_is_defined(NULL), 0);
  assert_int_equal(ct_tensor_is_pinned(NULL), 0);
  ct_tensor_free(t);
}

static void test_data_ptr_applies_storage_offset(void **state) {
  (void)state;
  /* x[2:6] is a view with storage offset 2: data_ptr points at x[2]. */
  ct_tensor *x = NULL, *v = NULL;
  ct_value *xv = NULL, *dim = NULL, *start = NULL, *end = NULL, *r = NULL;
  CT_OK_OR_FAIL(ct_tensor_arange(&x, 0, 8, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_value_from_tensor(&xv, x));
  CT_OK_OR_FAIL(ct_value_from_int(&dim, 0));
  CT_OK_OR_FAIL(ct_value_from_int(&start, 2));
  CT_OK_OR_FAIL(ct_value_from_int(&end, 6));
  const ct_value *args[4] = {xv, dim, start, end};
  CT_OK_OR_FAIL(ct_op_call_name(&r, "aten::slice.Tensor", args, 4, NULL, NULL, 0));
  CT_OK_OR_FAIL(ct_value_to_tensor(&v, r));
  assert_int_equal(ct_tensor_storage_offset(v), 2);
  assert_ptr_equal(ct_tensor_data_ptr(v), (float *)ct_tensor_data_ptr(x) + 2);
  assert_true(*(float *)ct_tensor_data_ptr(v) == 2.0f);
  /* Empty tensors have no data pointer. */
  ct_tensor *e = NULL;
  int64_t zero[1] = {0};
  CT_OK_OR_FAIL(ct_tensor_empty(&e, zero, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  assert_null(ct_tensor_data_ptr(e));
  ct_value *vals[] = {xv, dim, start, end, r};
  for (size_t i = 0; i < 5; ++i) ct_value_free(vals[i]);
  ct_tensor_free(x);
  ct_tensor_free(v);
  ct_tensor_free(e);
}

static void test_string_equal_allclose(void **state) {
  (void)state;
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 2, 3, 4, 5, 6.000001f}, c[2] = {1, 2};
  int64_t s3[1] = {2}; /* does not broadcast against (2,3) */
  ct_tensor *ta = test_tensor_f32(a, SZ23, 2), *tb = test_tensor_f32(b, SZ23, 2);
  ct_tensor *tc = test_tensor_f32(c, s3, 1);
  int32_t r = -1;
  char *s = NULL;
  CT_OK_OR_FAIL(ct_tensor_to_string(&s, ta));
  assert_non_null(strstr(s, "[ CPUFloatType{2,3} ]"));
  ct_free(s);
  CT_OK_OR_FAIL(ct_tensor_equal(&r, ta, tb));
  assert_int_equal(r, 0);
  CT_OK_OR_FAIL(ct_tensor_allclose(&r, ta, tb, 1e-5, 1e-8, 0));
  assert_int_equal(r, 1);
  CT_OK_OR_FAIL(ct_tensor_equal(&r, ta, tc));
  assert_int_equal(r, 0);
  CT_EXPECT_ERROR(ct_tensor_allclose(&r, ta, tc, 1e-5, 1e-8, 0), CT_ERR_TORCH,
                  "ct_tensor_allclose: ");
  CT_EXPECT_ERROR(ct_tensor_allclose(&r, ta, tb, -1, 0, 0), CT_ERR_INVALID_ARGUMENT,
                  "rtol and atol");
  CT_EXPECT_ERROR(ct_tensor_equal(NULL, ta, tb), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_tensor_equal(&r, NULL, tb), CT_ERR_INVALID_ARGUMENT, "'a' is NULL");
  CT_EXPECT_ERROR(ct_tensor_allclose(&r, ta, NULL, 0, 0, 0), CT_ERR_INVALID_ARGUMENT,
                  "'b' is NULL");
  CT_EXPECT_ERROR(ct_tensor_to_string(NULL, ta), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_tensor_to_string(&s, NULL), CT_ERR_INVALID_ARGUMENT, "'t' is NULL");
  ct_tensor_free(ta);
  ct_tensor_free(tb);
  ct_tensor_free(tc);
}

static void test_grad_and_inference_mode(void **state) {
  (void)state;
  assert_int_equal(ct_grad_mode_is_enabled(), 1);
  ct_grad_mode_set_enabled(0);
  assert_int_equal(ct_grad_mode_is_enabled(), 0);
  ct_grad_mode_set_enabled(1);
  assert_int_equal(ct_inference_mode_is_enabled(), 0);
  CT_OK_OR_FAIL(ct_inference_mode_push(1));
  assert_int_equal(ct_inference_mode_is_enabled(), 1);
  CT_OK_OR_FAIL(ct_inference_mode_push(0));
  assert_int_equal(ct_inference_mode_is_enabled(), 0);
  CT_OK_OR_FAIL(ct_inference_mode_pop());
  assert_int_equal(ct_inference_mode_is_enabled(), 1);
  CT_OK_OR_FAIL(ct_inference_mode_pop());
  assert_int_equal(ct_inference_mode_is_enabled(), 0);
  CT_EXPECT_ERROR(ct_inference_mode_pop(), CT_ERR_INVALID_ARGUMENT, "no inference mode");
}

static void test_pin_memory_without_cuda(void **state) {
  (void)state;
  if (ct_cuda_is_available()) skip();
  ct_tensor *t = NULL, *p = NULL;
  CT_OK_OR_FAIL(ct_tensor_zeros(&t, SZ23, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  assert_int_not_equal(ct_tensor_pin_memory(&p, t), CT_OK);
  assert_null(p);
  ct_tensor_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_versions),
      cmocka_unit_test(test_threads_and_seed),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_error_is_thread_local),
      cmocka_unit_test(test_dtypes),
      cmocka_unit_test(test_factories),
      cmocka_unit_test(test_factory_errors),
      cmocka_unit_test(test_from_data_copies),
      cmocka_unit_test(test_from_blob_zero_copy),
      cmocka_unit_test(test_from_blob_strides_and_views),
      cmocka_unit_test(test_from_blob_errors),
      cmocka_unit_test(test_release_queue),
      cmocka_unit_test(test_release_queue_threads),
      cmocka_unit_test(test_handles_and_conversions),
      cmocka_unit_test(test_handle_errors),
      cmocka_unit_test(test_metadata),
      cmocka_unit_test(test_data_ptr_applies_storage_offset),
      cmocka_unit_test(test_string_equal_allclose),
      cmocka_unit_test(test_grad_and_inference_mode),
      cmocka_unit_test(test_pin_memory_without_cuda),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
