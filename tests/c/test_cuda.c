/* CUDA API: feature queries, devices, allocator statistics, streams,
 * zero-copy device pointers, pinned memory and non-blocking copies.
 *
 * In a CPU-only build (or a CUDA build on a machine without a GPU) every
 * CUDA call must fail with CT_ERR_NOT_SUPPORTED and a clear message; the GPU
 * tests then report themselves as SKIPPED (cmocka skip()), never as passed.
 * The test links only ctorch: the one raw CUDA runtime call it needs
 * (creating an external stream) is looked up with dlsym in the libcudart that
 * torch already loaded, and that part is skipped if it cannot be found. */
#define _GNU_SOURCE 1 /* RTLD_DEFAULT, RTLD_NOLOAD */
#include "test_util.h"

#include <dlfcn.h>

#define N_ELEMS 1024

/* Every GPU test starts with this: a visible skip, with the reason. */
#define REQUIRE_GPU()                                                              \
  do {                                                                             \
    if (!ct_cuda_is_available()) {                                                 \
      print_message("skipped: no usable CUDA device (ct_cuda_is_compiled()=%d)\n", \
                    (int)ct_cuda_is_compiled());                                   \
      skip();                                                                      \
    }                                                                              \
  } while (0)

/* ---- Feature queries: every build --------------------------------------- */

static void test_feature_queries_consistent(void **state) {
  (void)state;
  int32_t compiled = ct_cuda_is_compiled();
  int32_t available = ct_cuda_is_available();
  int32_t count = ct_cuda_device_count();
  assert_true(compiled == 0 || compiled == 1);
  assert_true(available == 0 || available == 1);
  assert_true(count >= 0);
  if (!compiled) {
    assert_int_equal(available, 0);
    assert_int_equal(count, 0);
  }
  assert_int_equal(available, count > 0 ? 1 : 0);
  /* NULL and CPU tensors are never pinned. */
  assert_int_equal(ct_tensor_is_pinned(NULL), 0);
  float v[4] = {1, 2, 3, 4};
  int64_t sizes[1] = {4};
  ct_tensor *t = test_tensor_f32(v, sizes, 1);
  assert_int_equal(ct_tensor_is_pinned(t), 0);
  ct_tensor_free(t);
}

/* ---- Without a usable GPU: every call says so ---------------------------- */

/* The message names the function; in a CPU-only build it also says that
 * this build has no CUDA. */
#define EXPECT_NO_CUDA(call, fname)                                                          \
  do {                                                                                       \
    CT_EXPECT_ERROR(call, CT_ERR_NOT_SUPPORTED, fname);                                      \
    if (!ct_cuda_is_compiled() &&                                                            \
        strstr(ct_last_error(), "CUDA is not supported in this build of ctorch") == NULL)    \
      fail_msg("%s: unexpected message '%s'", #call, ct_last_error());                       \
    if (!ct_cuda_is_compiled() && strstr(ct_last_error(), "has no CUDA)") == NULL)           \
      fail_msg("%s: message lacks the LibTorch version note: '%s'", #call, ct_last_error()); \
  } while (0)

static void test_not_supported_without_gpu(void **state) {
  (void)state;
  if (ct_cuda_is_available()) {
    print_message("skipped: a CUDA device is available, so CUDA calls do not fail here\n");
    skip();
  }
  int32_t dev = 42;
  size_t bytes = 4242;
  void *stream = (void *)0x1234;
  void *prev = (void *)0x5678;

  EXPECT_NO_CUDA(ct_cuda_current_device(&dev), "ct_cuda_current_device");
  assert_int_equal(dev, 42); /* out-parameter untouched on failure */
  EXPECT_NO_CUDA(ct_cuda_set_device(0), "ct_cuda_set_device");
  EXPECT_NO_CUDA(ct_cuda_synchronize(-1), "ct_cuda_synchronize");
  EXPECT_NO_CUDA(ct_cuda_memory_allocated(&bytes, -1), "ct_cuda_memory_allocated");
  EXPECT_NO_CUDA(ct_cuda_memory_reserved(&bytes, 0), "ct_cuda_memory_reserved");
  assert_int_equal(bytes, 4242);
  EXPECT_NO_CUDA(ct_cuda_empty_cache(), "ct_cuda_empty_cache");
  EXPECT_NO_CUDA(ct_cuda_manual_seed_all(7), "ct_cuda_manual_seed_all");
  EXPECT_NO_CUDA(ct_cuda_current_stream(&stream, -1), "ct_cuda_current_stream");
  assert_ptr_equal(stream, (void *)0x1234);
  EXPECT_NO_CUDA(ct_cuda_set_stream(&prev, -1, NULL), "ct_cuda_set_stream");
  assert_ptr_equal(prev, (void *)0x5678);
  EXPECT_NO_CUDA(ct_cuda_stream_synchronize(-1, NULL), "ct_cuda_stream_synchronize");
  EXPECT_NO_CUDA(ct_cuda_stream_wait_stream(-1, NULL, NULL), "ct_cuda_stream_wait_stream");
  EXPECT_NO_CUDA(ct_cuda_max_memory_allocated(&bytes, -1), "ct_cuda_max_memory_allocated");
  EXPECT_NO_CUDA(ct_cuda_max_memory_reserved(&bytes, 0), "ct_cuda_max_memory_reserved");
  assert_int_equal(bytes, 4242);
  EXPECT_NO_CUDA(ct_cuda_reset_peak_memory_stats(-1), "ct_cuda_reset_peak_memory_stats");
  ct_value *stats = (ct_value *)0x1;
  EXPECT_NO_CUDA(ct_cuda_memory_stats(&stats, -1), "ct_cuda_memory_stats");
  assert_ptr_equal(stats, (ct_value *)0x1);
  EXPECT_NO_CUDA(ct_cuda_set_memory_fraction(-1, 0.5), "ct_cuda_set_memory_fraction");
  EXPECT_NO_CUDA(ct_cuda_stream_from_pool(&stream, -1, 0), "ct_cuda_stream_from_pool");
  assert_ptr_equal(stream, (void *)0x1234);
  ct_cuda_event *ev = (ct_cuda_event *)0x1;
  EXPECT_NO_CUDA(ct_cuda_event_new(&ev, 1), "ct_cuda_event_new");
  assert_ptr_equal(ev, (ct_cuda_event *)0x1);
  ct_cuda_graph *graph = (ct_cuda_graph *)0x1;
  EXPECT_NO_CUDA(ct_cuda_graph_new(&graph), "ct_cuda_graph_new");
  assert_ptr_equal(graph, (ct_cuda_graph *)0x1);
  ct_cuda_event_free(NULL);
  ct_cuda_graph_free(NULL);
  ct_generator *gen = (ct_generator *)0x1;
  EXPECT_NO_CUDA(ct_generator_default(&gen, CT_DEVICE_CUDA, -1), "ct_generator_default");
  EXPECT_NO_CUDA(ct_generator_new(&gen, CT_DEVICE_CUDA, 0), "ct_generator_new");
  assert_ptr_equal(gen, (ct_generator *)0x1);

  float v[2] = {1, 2};
  int64_t sizes[1] = {2};
  ct_tensor *t = test_tensor_f32(v, sizes, 1);
  ct_tensor *pinned = (ct_tensor *)0x1;
  EXPECT_NO_CUDA(ct_tensor_pin_memory(&pinned, t), "ct_tensor_pin_memory");
  assert_ptr_equal(pinned, (ct_tensor *)0x1);
  ct_tensor_free(t);

  /* Creating a CUDA tensor fails cleanly too. */
  ct_tensor *g = NULL;
  ct_status st = ct_tensor_empty(&g, sizes, 1, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0);
  assert_int_not_equal(st, CT_OK);
  assert_null(g);
  assert_true(strlen(ct_last_error()) > 0);
  ct_clear_error();
}

/* ---- GPU tests -------------------------------------------------------- */

/* A float32 CPU copy of any tensor (new handle). */
static ct_tensor *to_cpu(const ct_tensor *t) {
  ct_tensor *c = NULL;
  CT_OK_OR_FAIL(ct_tensor_to(&c, t, CT_DEVICE_CPU, -1, CT_FLOAT32, 0, 0));
  return c;
}

static void test_devices(void **state) {
  (void)state;
  REQUIRE_GPU();
  int32_t n = ct_cuda_device_count();
  assert_true(n >= 1);
  int32_t cur = -5;
  CT_OK_OR_FAIL(ct_cuda_current_device(&cur));
  assert_true(cur >= 0 && cur < n);
  CT_OK_OR_FAIL(ct_cuda_set_device(0));
  CT_OK_OR_FAIL(ct_cuda_current_device(&cur));
  assert_int_equal(cur, 0);
  CT_EXPECT_ERROR(ct_cuda_set_device(n), CT_ERR_INDEX, "out of range");
  CT_EXPECT_ERROR(ct_cuda_set_device(-1), CT_ERR_INDEX, "ct_cuda_set_device");
  CT_EXPECT_ERROR(ct_cuda_set_device(-7), CT_ERR_INDEX, "ct_cuda_set_device");
  CT_EXPECT_ERROR(ct_cuda_current_device(NULL), CT_ERR_INVALID_ARGUMENT, "ct_cuda_current_device");
  CT_OK_OR_FAIL(ct_cuda_synchronize(-1));
  CT_OK_OR_FAIL(ct_cuda_synchronize(0));
  CT_EXPECT_ERROR(ct_cuda_synchronize(n), CT_ERR_INDEX, "ct_cuda_synchronize");
}

static void test_memory_stats(void **state) {
  (void)state;
  REQUIRE_GPU();
  size_t before = 0, after = 0, reserved = 0, freed = 0;
  CT_OK_OR_FAIL(ct_cuda_memory_allocated(&before, 0));
  int64_t sizes[1] = {1 << 20}; /* 4 MiB of float32 */
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_tensor_empty(&t, sizes, 1, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0));
  CT_OK_OR_FAIL(ct_cuda_memory_allocated(&after, 0));
  CT_OK_OR_FAIL(ct_cuda_memory_reserved(&reserved, -1));
  assert_true(after >= before + ((size_t)4 << 20));
  assert_true(reserved >= after);
  ct_tensor_free(t);
  CT_OK_OR_FAIL(ct_cuda_memory_allocated(&freed, 0));
  assert_true(freed <= after - ((size_t)4 << 20));
  CT_OK_OR_FAIL(ct_cuda_empty_cache());
  size_t reserved_after = 0;
  CT_OK_OR_FAIL(ct_cuda_memory_reserved(&reserved_after, 0));
  assert_true(reserved_after <= reserved);
  CT_EXPECT_ERROR(ct_cuda_memory_allocated(NULL, 0), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_cuda_memory_reserved(&after, ct_cuda_device_count()), CT_ERR_INDEX,
                  "ct_cuda_memory_reserved");
}

/* Peaks, reset, the stats dict (torch's keys) and the memory fraction. */
static void test_memory_peaks_and_stats(void **state) {
  (void)state;
  REQUIRE_GPU();
  CT_OK_OR_FAIL(ct_cuda_empty_cache());
  CT_OK_OR_FAIL(ct_cuda_reset_peak_memory_stats(0));
  size_t peak0 = 0, now = 0;
  CT_OK_OR_FAIL(ct_cuda_memory_allocated(&now, 0));
  int64_t sizes[1] = {4 << 20}; /* 16 MiB of float32 */
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_tensor_empty(&t, sizes, 1, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0));
  ct_tensor_free(t);
  size_t peak = 0, peak_reserved = 0;
  CT_OK_OR_FAIL(ct_cuda_max_memory_allocated(&peak, 0));
  CT_OK_OR_FAIL(ct_cuda_max_memory_reserved(&peak_reserved, -1));
  assert_true(peak >= now + ((size_t)16 << 20));
  assert_true(peak_reserved >= peak);
  ct_value *stats = NULL, *v = NULL;
  CT_OK_OR_FAIL(ct_cuda_memory_stats(&stats, 0));
  CT_OK_OR_FAIL(ct_value_dict_get_str(&v, stats, "allocated_bytes.all.peak"));
  int64_t from_dict = 0;
  CT_OK_OR_FAIL(ct_value_to_int(&from_dict, v));
  assert_int_equal((size_t)from_dict, peak);
  ct_value_free(v);
  CT_OK_OR_FAIL(ct_value_dict_get_str(&v, stats, "num_ooms"));
  ct_value_free(v);
  ct_value_free(stats);
  CT_OK_OR_FAIL(ct_cuda_reset_peak_memory_stats(0));
  CT_OK_OR_FAIL(ct_cuda_max_memory_allocated(&peak0, 0));
  assert_true(peak0 < peak);
  /* A fraction too small for 16 MiB: the allocation fails cleanly. */
  CT_OK_OR_FAIL(ct_cuda_empty_cache());
  CT_OK_OR_FAIL(ct_cuda_set_memory_fraction(0, 1e-6));
  ct_status st = ct_tensor_empty(&t, sizes, 1, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0);
  CT_OK_OR_FAIL(ct_cuda_set_memory_fraction(0, 1.0));
  if (st != CT_ERR_OUT_OF_MEMORY) fail_msg("expected CT_ERR_OUT_OF_MEMORY, got %d", st);
  CT_EXPECT_ERROR(ct_cuda_set_memory_fraction(0, 1.5), CT_ERR_INVALID_ARGUMENT,
                  "fraction must be between 0 and 1");
  void *s1 = NULL, *s2 = NULL;
  CT_OK_OR_FAIL(ct_cuda_stream_from_pool(&s1, 0, 0));
  CT_OK_OR_FAIL(ct_cuda_stream_from_pool(&s2, 0, 1));
  assert_non_null(s1);
  assert_non_null(s2);
}

/* Events time a kernel; a graph replays captured ops with new inputs. */
static void test_events_and_graphs(void **state) {
  (void)state;
  REQUIRE_GPU();
  ct_cuda_event *a = NULL, *b = NULL, *untimed = NULL;
  CT_OK_OR_FAIL(ct_cuda_event_new(&a, 1));
  CT_OK_OR_FAIL(ct_cuda_event_new(&b, 1));
  CT_OK_OR_FAIL(ct_cuda_event_new(&untimed, 0));
  double ms = -1;
  CT_EXPECT_ERROR(ct_cuda_event_elapsed_ms(&ms, a, b), CT_ERR_INVALID_ARGUMENT,
                  "never recorded");
  int64_t sizes[2] = {1024, 1024};
  ct_tensor *x = NULL, *y = NULL;
  CT_OK_OR_FAIL(ct_tensor_ones(&x, sizes, 2, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0));
  CT_OK_OR_FAIL(ct_cuda_event_record(a, NULL));
  ct_value *xv = NULL, *r = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&xv, x));
  const ct_value *mm_args[2] = {xv, xv};
  CT_OK_OR_FAIL(ct_op_call_name(&r, "aten::mm", mm_args, 2, NULL, NULL, 0));
  CT_OK_OR_FAIL(ct_cuda_event_record(b, NULL));
  CT_OK_OR_FAIL(ct_cuda_event_synchronize(b));
  int32_t done = 0;
  CT_OK_OR_FAIL(ct_cuda_event_query(&done, b));
  assert_int_equal(done, 1);
  CT_OK_OR_FAIL(ct_cuda_event_elapsed_ms(&ms, a, b));
  assert_true(ms > 0.0 && ms < 10000.0);
  CT_OK_OR_FAIL(ct_cuda_event_record(untimed, NULL));
  CT_EXPECT_ERROR(ct_cuda_event_elapsed_ms(&ms, a, untimed), CT_ERR_INVALID_ARGUMENT,
                  "without timing");
  ct_value_free(r);
  /* Graph: y = x * 2 + 1 captured, then x changed in place and replayed. */
  ct_cuda_graph *g = NULL;
  CT_OK_OR_FAIL(ct_cuda_graph_new(&g));
  CT_EXPECT_ERROR(ct_cuda_graph_replay(g), CT_ERR_INVALID_ARGUMENT, "nothing captured");
  CT_EXPECT_ERROR(ct_cuda_graph_capture_end(g), CT_ERR_INVALID_ARGUMENT, "not capturing");
  void *before = NULL, *after = NULL;
  CT_OK_OR_FAIL(ct_cuda_current_stream(&before, 0));
  CT_OK_OR_FAIL(ct_cuda_graph_capture_begin(g, 0));
  CT_EXPECT_ERROR(ct_cuda_graph_capture_begin(g, 0), CT_ERR_INVALID_ARGUMENT, "already");
  ct_value *two = NULL, *one = NULL, *m = NULL;
  CT_OK_OR_FAIL(ct_value_from_double(&two, 2.0));
  CT_OK_OR_FAIL(ct_value_from_double(&one, 1.0));
  const ct_value *mul_args[2] = {xv, two};
  CT_OK_OR_FAIL(ct_op_call_name(&m, "aten::mul.Scalar", mul_args, 2, NULL, NULL, 0));
  const ct_value *add_args[3] = {m, one, one};
  CT_OK_OR_FAIL(ct_op_call_name(&r, "aten::add.Scalar", add_args, 3, NULL, NULL, 0));
  CT_OK_OR_FAIL(ct_cuda_graph_capture_end(g));
  CT_OK_OR_FAIL(ct_cuda_current_stream(&after, 0));
  assert_ptr_equal(before, after); /* the stream before the capture is back */
  CT_OK_OR_FAIL(ct_value_to_tensor(&y, r));
  CT_OK_OR_FAIL(ct_tensor_fill_(x, 5.0));
  CT_OK_OR_FAIL(ct_cuda_graph_replay(g));
  CT_OK_OR_FAIL(ct_cuda_synchronize(0));
  ct_tensor *yc = to_cpu(y);
  const float *p = (const float *)ct_tensor_data_ptr(yc);
  assert_true(p[0] == 11.0f && p[1024 * 1024 - 1] == 11.0f); /* eager: 5 * 2 + 1 */
  ct_tensor_free(yc);
  CT_OK_OR_FAIL(ct_cuda_graph_reset(g));
  CT_EXPECT_ERROR(ct_cuda_graph_replay(g), CT_ERR_INVALID_ARGUMENT, "nothing captured");
  ct_cuda_graph_free(g);
  ct_value_free(m);
  ct_value_free(r);
  ct_value_free(two);
  ct_value_free(one);
  ct_value_free(xv);
  ct_tensor_free(y);
  ct_tensor_free(x);
  ct_cuda_event_free(a);
  ct_cuda_event_free(b);
  ct_cuda_event_free(untimed);
}

static void test_manual_seed_all(void **state) {
  (void)state;
  REQUIRE_GPU();
  int64_t sizes[1] = {64};
  ct_tensor *a = NULL, *b = NULL;
  CT_OK_OR_FAIL(ct_cuda_manual_seed_all(1234));
  CT_OK_OR_FAIL(ct_tensor_randn(&a, sizes, 1, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0));
  CT_OK_OR_FAIL(ct_cuda_manual_seed_all(1234));
  CT_OK_OR_FAIL(ct_tensor_randn(&b, sizes, 1, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0));
  int32_t eq = 0;
  CT_OK_OR_FAIL(ct_tensor_equal(&eq, a, b));
  assert_int_equal(eq, 1);
  ct_tensor_free(a);
  ct_tensor_free(b);
}

/* cudaStreamCreate/Destroy from the libcudart torch already loaded. */
typedef int (*stream_create_fn)(void **);
typedef int (*stream_destroy_fn)(void *);
static void *cudart_symbol(const char *name) {
  static const char *const sonames[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                                        "libcudart.so"};
  void *sym = dlsym(RTLD_DEFAULT, name);
  for (size_t i = 0; sym == NULL && i < sizeof sonames / sizeof sonames[0]; i++) {
    void *h = dlopen(sonames[i], RTLD_NOW | RTLD_NOLOAD);
    if (h) sym = dlsym(h, name);
  }
  return sym;
}

static void test_streams(void **state) {
  (void)state;
  REQUIRE_GPU();
  void *s0 = (void *)0xdead;
  CT_OK_OR_FAIL(ct_cuda_current_stream(&s0, -1));
  assert_ptr_not_equal(s0, (void *)0xdead);
  void *s0_dev0 = (void *)0xdead;
  CT_OK_OR_FAIL(ct_cuda_current_stream(&s0_dev0, 0));
  CT_EXPECT_ERROR(ct_cuda_current_stream(NULL, -1), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_cuda_current_stream(&s0, ct_cuda_device_count()), CT_ERR_INDEX,
                  "out of range");
  /* The per-thread default stream cannot be torch's current stream. */
  CT_EXPECT_ERROR(ct_cuda_set_stream(NULL, 0, (void *)2), CT_ERR_INVALID_ARGUMENT, "per-thread");
  /* Default-stream round trip and stream-to-stream waits on pseudo-handles. */
  void *prev = (void *)0xdead;
  CT_OK_OR_FAIL(ct_cuda_set_device(0));
  CT_OK_OR_FAIL(ct_cuda_set_stream(&prev, 0, NULL));
  CT_OK_OR_FAIL(ct_cuda_set_stream(NULL, 0, prev));
  CT_OK_OR_FAIL(ct_cuda_stream_wait_stream(0, (void *)2, NULL));
  CT_OK_OR_FAIL(ct_cuda_stream_synchronize(0, NULL));

  stream_create_fn create = (stream_create_fn)cudart_symbol("cudaStreamCreate");
  stream_destroy_fn destroy = (stream_destroy_fn)cudart_symbol("cudaStreamDestroy");
  if (!create || !destroy) {
    print_message("skipped: libcudart not found in the process; external streams untested\n");
    skip();
  }
  void *ext = NULL;
  assert_int_equal(create(&ext), 0);
  assert_non_null(ext);

  CT_OK_OR_FAIL(ct_cuda_set_stream(&prev, 0, ext));
  void *cur = NULL;
  CT_OK_OR_FAIL(ct_cuda_current_stream(&cur, 0));
  assert_ptr_equal(cur, ext);
  /* Torch work now runs on `ext`. */
  int64_t sizes[1] = {N_ELEMS};
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_tensor_full(&t, sizes, 1, 3.0, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0));
  CT_OK_OR_FAIL(ct_tensor_fill_(t, 5.0));
  /* The old stream waits for ext on the device; then wait on the host. */
  CT_OK_OR_FAIL(ct_cuda_stream_wait_stream(0, prev, ext));
  CT_OK_OR_FAIL(ct_cuda_stream_synchronize(0, ext));
  void *back = NULL;
  CT_OK_OR_FAIL(ct_cuda_set_stream(&back, 0, prev));
  assert_ptr_equal(back, ext);
  CT_OK_OR_FAIL(ct_cuda_current_stream(&cur, 0));
  assert_ptr_equal(cur, prev);
  ct_tensor *c = to_cpu(t);
  const float *p = (const float *)ct_tensor_data_ptr(c);
  for (int i = 0; i < N_ELEMS; i++) assert_true(p[i] == 5.0f);
  ct_tensor_free(c);
  ct_tensor_free(t);
  CT_OK_OR_FAIL(ct_cuda_synchronize(0));
  assert_int_equal(destroy(ext), 0);
}

static void count_deleter(void *data, void *ctx) {
  (void)data;
  (*(int *)ctx)++;
}

static void test_from_blob_device_pointer(void **state) {
  (void)state;
  REQUIRE_GPU();
  ct_tensor *x = NULL;
  CT_OK_OR_FAIL(ct_tensor_arange(&x, 0, N_ELEMS, 1, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0));
  void *dptr = ct_tensor_data_ptr(x);
  assert_non_null(dptr);
  int calls = 0;
  int64_t sizes[2] = {N_ELEMS / 4, 4};
  ct_tensor *y = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_blob(&y, dptr, sizes, 2, NULL, CT_FLOAT32, CT_DEVICE_CUDA, 0,
                                    count_deleter, &calls));
  assert_int_equal(ct_tensor_device_type(y), CT_DEVICE_CUDA);
  assert_int_equal(ct_tensor_device_index(y), 0);
  assert_ptr_equal(ct_tensor_data_ptr(y), dptr);
  /* Writing through the view changes x. */
  CT_OK_OR_FAIL(ct_tensor_fill_(y, 7.0));
  ct_tensor_free(y);
  assert_int_equal(calls, 1);
  ct_tensor *c = to_cpu(x);
  const float *p = (const float *)ct_tensor_data_ptr(c);
  for (int i = 0; i < N_ELEMS; i++) assert_true(p[i] == 7.0f);
  ct_tensor_free(c);
  ct_tensor_free(x);
}

static void test_pinned_and_non_blocking(void **state) {
  (void)state;
  REQUIRE_GPU();
  float v[N_ELEMS];
  for (int i = 0; i < N_ELEMS; i++) v[i] = (float)i * 0.5f;
  int64_t sizes[1] = {N_ELEMS};
  ct_tensor *h = test_tensor_f32(v, sizes, 1);
  ct_tensor *pinned = NULL;
  CT_OK_OR_FAIL(ct_tensor_pin_memory(&pinned, h));
  assert_int_equal(ct_tensor_is_pinned(pinned), 1);
  assert_int_equal(ct_tensor_is_pinned(h), 0);
  assert_int_equal(ct_tensor_device_type(pinned), CT_DEVICE_CPU);

  /* Host -> device, non-blocking from pinned memory; the copy is ordered on
   * torch's current stream, so synchronise that stream before reading. */
  void *s = NULL;
  CT_OK_OR_FAIL(ct_cuda_current_stream(&s, 0));
  ct_tensor *g = NULL;
  CT_OK_OR_FAIL(ct_tensor_to(&g, pinned, CT_DEVICE_CUDA, 0, CT_DTYPE_KEEP, 1, 0));
  assert_int_equal(ct_tensor_device_type(g), CT_DEVICE_CUDA);
  assert_int_equal(ct_tensor_is_pinned(g), 0);
  CT_OK_OR_FAIL(ct_cuda_stream_synchronize(0, s));
  ct_tensor *back = to_cpu(g);
  int32_t eq = 0;
  CT_OK_OR_FAIL(ct_tensor_equal(&eq, back, h));
  assert_int_equal(eq, 1);
  ct_tensor_free(back);

  /* Only CPU tensors can be pinned; out-parameter untouched on failure. */
  ct_tensor *bad = (ct_tensor *)0x1;
  CT_EXPECT_ERROR(ct_tensor_pin_memory(&bad, g), CT_ERR_INVALID_ARGUMENT, "CPU");
  assert_ptr_equal(bad, (ct_tensor *)0x1);
  CT_EXPECT_ERROR(ct_tensor_pin_memory(NULL, h), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_tensor_pin_memory(&bad, NULL), CT_ERR_INVALID_ARGUMENT, "NULL");

  /* Device -> pinned host, non-blocking, then synchronise the stream. */
  CT_OK_OR_FAIL(ct_tensor_fill_(g, 2.5));
  ct_tensor *dst = NULL;
  CT_OK_OR_FAIL(ct_tensor_pin_memory(&dst, h));
  CT_OK_OR_FAIL(ct_tensor_fill_(dst, 0.0));
  CT_OK_OR_FAIL(ct_tensor_copy_(dst, g, 1));
  CT_OK_OR_FAIL(ct_cuda_stream_synchronize(0, s));
  const float *p = (const float *)ct_tensor_data_ptr(dst);
  for (int i = 0; i < N_ELEMS; i++) assert_true(p[i] == 2.5f);
  ct_tensor_free(dst);
  ct_tensor_free(g);
  ct_tensor_free(pinned);
  ct_tensor_free(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_feature_queries_consistent),
      cmocka_unit_test(test_not_supported_without_gpu),
      cmocka_unit_test(test_devices),
      cmocka_unit_test(test_memory_stats),
      cmocka_unit_test(test_memory_peaks_and_stats),
      cmocka_unit_test(test_events_and_graphs),
      cmocka_unit_test(test_manual_seed_all),
      cmocka_unit_test(test_streams),
      cmocka_unit_test(test_from_blob_device_pointer),
      cmocka_unit_test(test_pinned_and_non_blocking),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
